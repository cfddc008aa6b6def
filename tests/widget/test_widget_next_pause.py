"""Step mode from Python: ``dbg.start(agent, prompt, pause_on=...)`` and
``await dbg.next_pause(timeout=...)``, and a fork's pause numbered as its debugger numbers
its rounds."""

from __future__ import annotations

import asyncio
from typing import Any

import comm
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MockComm, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel
from toolloop_lab.errors import ConfigurationError, NoPauseError, PauseTimeoutError
from toolloop_lab.events import RoundStarted


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


TOOLS: list[BaseTool] = [lookup]


def three_rounds() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            AIMessage(
                "a",
                tool_calls=[tool_call("lookup", {"key": "a"}, "c1")],
                usage_metadata=usage(10, 5),
            ),
            AIMessage(
                "b",
                tool_calls=[tool_call("lookup", {"key": "b"}, "c2")],
                usage_metadata=usage(20, 5),
            ),
            AIMessage("done", usage_metadata=usage(30, 5)),
        ],
        model_name="gpt-4o-mini",
    )


async def test_start_takes_the_pause_mode_and_next_pause_walks_the_run() -> None:
    dbg = LoopDebugger()
    task = dbg.start(LLMAgent(three_rounds(), TOOLS), "go", pause_on="tools")
    assert dbg.pause_on == "tools"
    first = await dbg.next_pause(timeout=5)
    assert (first.stage, first.round, first.detail) == ("tool_dispatch", 1, ("lookup",))
    # still waiting there: at once, the same point
    assert await dbg.next_pause(timeout=0.01) is not None
    assert dbg.step()
    second = await dbg.next_pause(timeout=5)  # never the pause just stepped past
    assert (second.stage, second.round) == ("tool_dispatch", 2)
    assert dbg.step()
    with pytest.raises(NoPauseError, match="ended without pausing again"):
        await dbg.next_pause(timeout=5)
    assert (await task).final_response.text == "done"
    dbg.close()


async def test_no_pause_can_come_says_why_and_what_to_do() -> None:
    dbg = LoopDebugger()
    with pytest.raises(NoPauseError, match=r"dbg.start\(agent, prompt, pause_on="):
        await dbg.next_pause()
    task = dbg.start(LLMAgent(three_rounds(), TOOLS), "go")  # pause_on stays "off"
    with pytest.raises(NoPauseError, match="pause_on is 'off'"):
        await dbg.next_pause()
    await task
    task = dbg.start(LLMAgent(three_rounds(), TOOLS), "go", pause_on="model")
    await dbg.next_pause(timeout=5)
    dbg.continue_()
    with pytest.raises(NoPauseError, match="Continue let this run go on"):
        await dbg.next_pause()
    await task
    dbg.close()


async def test_a_pause_that_does_not_come_in_time_is_a_typed_timeout() -> None:
    gate = asyncio.Event()

    @tool
    async def slow(key: str) -> str:
        """Wait for the test."""
        await gate.wait()
        return key

    model = ScriptedChatModel(
        [
            AIMessage(
                "", tool_calls=[tool_call("slow", {"key": "k"}, "c1")], usage_metadata=usage(5, 5)
            ),
            AIMessage("done", usage_metadata=usage(5, 5)),
        ],
        model_name="gpt-4o-mini",
    )
    dbg = LoopDebugger()
    task = dbg.start(LLMAgent(model, [slow]), "go", pause_on="tools")
    await dbg.next_pause(timeout=5)
    dbg.pause_on = "model"
    dbg.step()  # the tool now waits for the gate: no model call comes
    with pytest.raises(PauseTimeoutError, match=r"no pause within 0.05 s.*dbg.stop\(\)") as caught:
        await dbg.next_pause(timeout=0.05)
    assert isinstance(caught.value, TimeoutError)
    gate.set()
    point = await dbg.next_pause(timeout=5)  # the wait that timed out left nothing behind
    assert (point.stage, point.round) == ("model_call", 2)
    dbg.continue_()
    await task
    dbg.close()


@pytest.mark.parametrize("bad", ["tool", "", 3])
async def test_start_refuses_a_bad_pause_mode_before_the_run(bad: Any) -> None:
    model = three_rounds()
    dbg = LoopDebugger(pause_on="model")
    with pytest.raises(ConfigurationError, match=r"dbg.start\(\.\.\., pause_on="):
        dbg.start(LLMAgent(model, TOOLS), "go", pause_on=bad)
    assert (dbg.pause_on, dbg.task, model.calls) == ("model", None, ())
    dbg.close()


@pytest.mark.parametrize("timeout", [0, -1, "5", True])
async def test_next_pause_refuses_a_timeout_that_is_not_seconds(timeout: Any) -> None:
    dbg = LoopDebugger()
    with pytest.raises(ConfigurationError, match="timeout"):
        await dbg.next_pause(timeout=timeout)
    dbg.close()


async def test_a_forks_pause_says_the_round_its_debugger_and_summary_say() -> None:
    source = await LLMAgent(three_rounds(), TOOLS).arun("go")
    dbg = LoopDebugger.from_trace(source.events, fork_with=LLMAgent(three_rounds(), TOOLS))
    child = dbg.fork(2, pause_on="model")
    point = await child.next_pause(timeout=5)
    assert point.round == 2
    assert child.paused_at is not None
    assert child.paused_at.round == 2
    assert "paused in round 2 before" in child.summary()
    # the loop's own numbering is the fork's run's: its events say round 1
    assert [e.round for e in child.events if isinstance(e, RoundStarted)] == [1]
    # a change made through the renumbered point is the run's
    point.append("Answer briefly.")
    child.continue_()
    result = await child.task  # type: ignore[misc]
    assert result.forked.rounds == 4  # one taken, three of its own
    dbg.close()
    child.close()


async def test_a_fork_started_in_a_plain_debugger_is_numbered_as_its_source() -> None:
    from toolloop_lab import prepare_fork

    source = await LLMAgent(three_rounds(), TOOLS).arun("go")
    prepared = prepare_fork(source, 2, model=three_rounds(), tools=TOOLS, config=AgentConfig())
    dbg = LoopDebugger()
    task = dbg.start(prepared, (), pause_on="model")
    point = await dbg.next_pause(timeout=5)
    assert (point.round, dbg.round_offset) == (2, 1)
    assert "paused in round 2 before" in dbg.summary()
    dbg.continue_()
    await task
    dbg.close()
