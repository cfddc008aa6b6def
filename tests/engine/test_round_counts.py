"""What ``rounds``, ``tool_rounds`` and ``model_calls`` count, on a result and on an error.

``rounds`` keeps the meaning the behave features pin (the rounds run, the one whose reply
answered included); ``tool_rounds`` and ``model_calls`` say what they count in their
names: three tool rounds then an answer are ``rounds=4``, ``tool_rounds=3`` and
``model_calls=4``.
"""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, RunView, ScriptedChatModel, usd_budget
from toolloop_lab._runview import summaries
from toolloop_lab.errors import ExecutionError, ToolLoopError


def echoes(n: int, tokens: tuple[int, int] = (10, 5)) -> list[object]:
    return [calls(tool_call("echo", {"text": str(i)}, f"c{i}"), tokens=tokens) for i in range(n)]


async def test_three_tool_rounds_then_an_answer(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([*echoes(3), final("done")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool]).arun("go")
    assert (result.rounds, result.tool_rounds, result.model_calls) == (4, 3, 4)
    view = RunView.from_events(result.events)
    assert (view.tool_rounds, view.model_calls) == (3, 4)
    (summary,) = summaries(result.events)
    assert (summary.rounds, summary.tool_rounds, summary.model_calls) == (4, 3, 4)


async def test_a_round_cap_then_a_final_answer_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([*echoes(1), final("from what I have")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=1))
    result = await agent.arun("go")
    assert result.synthesis_was_run
    assert (result.rounds, result.tool_rounds, result.model_calls) == (1, 1, 2)


async def test_an_answer_without_tools_is_one_round_and_no_tool_round(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("hi")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool]).arun("x")
    assert (result.rounds, result.tool_rounds, result.model_calls) == (1, 0, 1)


async def test_a_failure_counts_what_ran(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([*echoes(1), RuntimeError("503")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    err = info.value
    assert (err.rounds, err.tool_rounds, err.model_calls) == (1, 1, 1)


async def test_a_usd_stop_counts_the_call_that_tripped_it(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([*echoes(2, tokens=(5000, 1000)), final("x")], model_name=MODEL)
    with usd_budget("0.0015"), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    err = info.value
    # round 2's call was paid and tripped the limit; its tools never ran
    assert (err.rounds, err.tool_rounds, err.model_calls) == (1, 1, 2)
    view = RunView.from_events(err.events)
    assert (view.tool_rounds, view.model_calls) == (1, 2)
