"""Step mode: pause before model calls and/or tool dispatch, then Continue, Step or Stop.

Runs go through ``LoopDebugger.start`` (a background task on the test's event loop), and the
tests press the widget's own buttons, as a person would.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

import pytest
from langchain_core.tools import BaseTool, StructuredTool
from test_widget_scenarios import (
    WINDOW,
    Scenario,
    call_reply,
    final_reply,
    no_widget_leaks,  # noqa: F401 - fixture
    table_rows,
    text_of,
    timeline,
)

from toolloop_lab import AgentConfig
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.events import Event
from toolloop_lab.widget import LoopDebugger

pytestmark = pytest.mark.usefixtures("no_widget_leaks")


async def until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop run until ``condition`` holds (bounded, so a bug cannot hang the suite)."""
    for _ in range(20_000):
        if condition():
            return
        await asyncio.sleep(0.0005)
    raise AssertionError(f"never happened: {what}")


class Counter:
    """A tool that counts its calls (so a test can tell whether dispatch happened)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def tool(self) -> BaseTool:
        async def count(text: str) -> str:
            self.calls.append(text)
            return f"counted {text}"

        return StructuredTool.from_function(
            coroutine=count, name="count", description="Count a call."
        )


def three_rounds(counter: Counter) -> Scenario:
    return Scenario(
        "three",
        [
            call_reply(1, "count", {"text": "a"}, text="first"),
            call_reply(2, "count", {"text": "b"}, text="second"),
            final_reply("all counted", 3),
        ],
        [counter.tool()],
        AgentConfig(context_window=WINDOW),
    )


@pytest.fixture
def dbg() -> Iterator[LoopDebugger]:
    debugger = LoopDebugger()
    yield debugger
    debugger.close()


def status(d: LoopDebugger) -> str:
    return d.view.status


async def test_pauses_before_each_model_call_and_steps(dbg: LoopDebugger) -> None:
    counter = Counter()
    scenario = three_rounds(counter)
    dbg._pause_on.value = "model"  # the toggle, as the frontend sets it
    assert dbg.pause_on == "model"
    task = dbg.start(scenario.agent(), "count twice")
    await until(lambda: dbg.paused_at is not None, "first pause")
    point = dbg.paused_at
    assert point is not None
    assert (point.stage, point.purpose, point.round) == ("model_call", "round", 1)
    assert scenario.model.calls == ()  # held before the call
    assert status(dbg) == "paused"
    head = text_of(dbg.panels["header"])
    assert "● PAUSED" in head
    assert "paused in round 1 before the round model call" in head
    assert not dbg._continue.disabled
    assert not dbg._step.disabled
    assert not dbg._stop.disabled

    dbg._step.click()
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.round == 2, "second pause")
    assert len(scenario.model.calls) == 1
    assert counter.calls == ["a"]  # tool dispatch is not a pause point in "model" mode
    assert [r["Round"] for r in timeline(dbg)] == ["round 1", "round 2"]

    dbg._continue.click()
    assert dbg.pause_on == "off"
    assert dbg._pause_on.value == "off"
    result = await task
    assert result.final_response.text == "all counted"
    assert counter.calls == ["a", "b"]
    assert status(dbg) == "finished"
    assert dbg._continue.disabled
    assert dbg._stop.disabled
    assert dbg._controller.pauses == 2


async def test_pauses_before_tool_dispatch(dbg: LoopDebugger) -> None:
    counter = Counter()
    scenario = three_rounds(counter)
    dbg.pause_on = "tools"
    task = dbg.start(scenario.agent(), "count twice")
    await until(lambda: dbg.paused_at is not None, "pause before dispatch")
    point = dbg.paused_at
    assert point is not None
    assert (point.stage, point.round, point.detail) == ("tool_dispatch", 1, ("count",))
    assert len(scenario.model.calls) == 1  # the model already asked for the tool
    assert counter.calls == []  # ...which has not run yet
    assert "before tool dispatch (count)" in text_of(dbg.panels["header"])
    assert timeline(dbg)[0]["Tool calls"] == "count pending"

    dbg.step()
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.round == 2, "round 2")
    assert counter.calls == ["a"]
    dbg.step()
    result = await task
    assert result.rounds == 3
    assert counter.calls == ["a", "b"]
    assert dbg._controller.pauses == 2


async def test_both_pauses_at_every_point(dbg: LoopDebugger) -> None:
    counter = Counter()
    scenario = three_rounds(counter)
    dbg.pause_on = "both"
    task = dbg.start(scenario.agent(), "count twice")
    seen = []
    while not task.done():
        await until(lambda: dbg.paused_at is not None or task.done(), "a pause or the end")
        if dbg.paused_at is not None:
            point = dbg.paused_at
            seen.append((point.round, point.stage))
            dbg.step()
            await until(lambda p=point: dbg.paused_at is not p, "the release")
    await task
    assert seen == [
        (1, "model_call"),
        (1, "tool_dispatch"),
        (2, "model_call"),
        (2, "tool_dispatch"),
        (3, "model_call"),
    ]


async def test_stop_while_paused_cancels_and_shows_the_partial_counts(dbg: LoopDebugger) -> None:
    counter = Counter()
    scenario = three_rounds(counter)
    dbg.pause_on = "tools"
    task = dbg.start(scenario.agent(), "count twice")
    await until(lambda: dbg.paused_at is not None, "pause")
    dbg.step()
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.round == 2, "round 2")

    dbg._stop.click()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert counter.calls == ["a"]  # round 2's tool never ran
    assert status(dbg) == "cancelled"
    assert dbg.view.failure is not None
    assert dbg.view.failure.cancelled
    assert "● CANCELLED" in text_of(dbg.panels["header"])
    failure = " ".join(text_of(dbg.panels["failure"]).split())
    # one completed round; two model calls of (12, 6) and (14, 7) tokens
    assert "Cancelled in round 2 · error CancelledError" in failure
    assert "Partial counts: rounds 1 · tokens 26 in / 13 out" in failure
    # the loop answers the open call when it stops, so the transcript stays resumable
    assert timeline(dbg)[1]["Tool calls"] == "count ✗ error: cancelled"
    assert timeline(dbg)[1]["Note"] == "stopped: cancelled"
    assert dbg._stop.disabled
    assert dbg._continue.disabled
    assert dbg.paused_at is None


async def test_stop_while_running_cancels_too(dbg: LoopDebugger) -> None:
    started = asyncio.Event()
    never = asyncio.Event()

    async def slow(text: str) -> str:
        started.set()
        await never.wait()
        return text

    tool = StructuredTool.from_function(coroutine=slow, name="slow", description="Never ends.")
    scenario = Scenario(
        "slow",
        [call_reply(1, "slow", {"text": "x"}), final_reply("unreachable", 2)],
        [tool],
        AgentConfig(context_window=WINDOW),
    )
    task = dbg.start(scenario.agent(), "wait")
    await started.wait()
    assert status(dbg) == "running"
    assert not dbg._stop.disabled
    assert dbg.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert status(dbg) == "cancelled"
    failure = " ".join(text_of(dbg.panels["failure"]).split())
    assert "Partial counts: rounds 0 · tokens 12 in / 6 out" in failure


async def test_step_mode_never_holds_a_run_it_did_not_start(dbg: LoopDebugger) -> None:
    """A run awaited in a cell keeps the kernel busy: a pause could never be released."""
    scenario = Scenario(
        "plain",
        [call_reply(1), final_reply("done", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    agent = scenario.agent()
    detach = dbg.attach(agent)
    dbg.pause_on = "both"
    result = await agent.arun("go")
    assert result.final_response.text == "done"
    assert dbg._controller.pauses == 0
    assert status(dbg) == "finished"
    assert dbg.attach(agent) is detach  # attaching twice is one attachment
    detach()
    assert agent.observers == ()


async def test_start_reuses_an_existing_observer_and_keeps_the_result(
    dbg: LoopDebugger,
) -> None:
    scenario = Scenario(
        "observed",
        [call_reply(1), final_reply("done", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    seen: list[Event] = []
    agent = scenario.agent([dbg, seen.append])
    task = dbg.start(agent, "go")
    with pytest.raises(RuntimeError, match="already in progress"):
        dbg.start(agent, "again")
    result = await task
    assert dbg.task is task
    assert result.final_response.text == "done"
    assert dbg.view.events == len(seen)  # not counted twice
    assert len(table_rows(dbg.panels["timeline"])) == 3
    assert len(agent.observers) == 2  # the temporary pause hook and nothing else stayed


def test_start_needs_a_running_loop(dbg: LoopDebugger) -> None:
    scenario = Scenario("x", ["done"], [], AgentConfig())
    with pytest.raises(RuntimeError, match="running event loop"):
        dbg.start(scenario.agent(), "go")


async def test_a_second_start_shows_the_new_run(dbg: LoopDebugger) -> None:
    first = Scenario("a", ["first answer"], [], AgentConfig(context_window=WINDOW))
    second = Scenario("b", ["second answer"], [], AgentConfig(context_window=WINDOW))
    one = await dbg.start(first.agent(), "one")
    assert "first answer" in text_of(dbg.panels["header"])
    two = await dbg.start(second.agent(), "two")
    head = text_of(dbg.panels["header"])
    assert "second answer" in head
    assert "first answer" not in head
    assert dbg.view.run_id == two.run_id != one.run_id
    assert dbg.view.events == len(two.events) == 5
