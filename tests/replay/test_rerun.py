"""The re-run core fork and what-if share: one error policy, one way to read how it ended."""

from __future__ import annotations

from decimal import Decimal

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from loopkit import MODEL, calls, changed_config, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, usd_budget
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._replay.rerun import Rerun, rerun, stop_notes
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def agent(*replies: object, config: AgentConfig | None = None) -> LLMAgent:
    model = ScriptedChatModel(list(replies), model_name=MODEL)
    return LLMAgent(model, [echo], config)


ASK = [HumanMessage("say hi")]
CALL = calls(tool_call("echo", {"text": "hi"}, "c1"), tokens=(100, 10))


async def test_a_finished_rerun_reads_its_result() -> None:
    run = await rerun(agent(CALL, final("hi", tokens=(200, 20))), ASK)

    assert run.error is None
    assert run.result is not None
    assert run.figures == RunFigures.of_result(run.result)
    assert run.spent == run.result.usage
    assert run.spent.total_tokens == 330
    assert run.events == run.result.events
    assert stop_notes("fork", "its recording", run.figures, run.error) == []


async def test_a_stopped_rerun_is_a_result_with_its_partial_figures() -> None:
    run = await rerun(agent(CALL), ASK)  # the script runs out at the second call

    assert run.result is None
    assert isinstance(run.error, ToolLoopError)
    assert run.figures.outcome == "failed"
    assert run.figures.input_tokens == 100
    assert run.spent.input_tokens == 100
    assert run.events[-1].kind == "loop_failure"
    [note] = stop_notes("what-if run", "the recording", run.figures, run.error)
    assert note.startswith("* The what-if run stopped: ToolLoopError: ")


async def test_a_budget_stop_is_a_result_too() -> None:
    with usd_budget(Decimal("0.0000001")):
        run = await rerun(agent(CALL, final("hi")), ASK)

    assert isinstance(run.error, ExecutionError)
    assert run == Rerun.stopped(run.error)


async def test_a_bad_config_raises_there_is_nothing_to_compare() -> None:
    with pytest.raises(ToolLoopError) as info:
        await rerun(agent(final("hi"), config=changed_config(tool_max_rounds=0)), ASK)
    assert isinstance(info.value.cause, ConfigurationError)


def test_a_rerun_beyond_its_recording_says_so() -> None:
    figures = RunFigures("failed", 1, 1, 10, 5, 0, None, False, detail="beyond_recording")
    assert stop_notes("fork", "its recording", figures, None) == [
        "* The fork needed a reply beyond its recording; figures are up to there."
    ]
