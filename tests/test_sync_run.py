"""``agent.run`` is synchronous outside and inside a running event loop (the notebook case),
and keeps the caller's USD budget either way."""

from __future__ import annotations

import asyncio
import threading
from decimal import Decimal

import pytest
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import ExecutionError, LLMAgent, ScriptedChatModel, usd_budget
from toolloop_lab.events import LoopStarted


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "hi"}, "c1"), tokens=(100, 10)),
            final("sync ok", (200, 20)),
        ],
        model_name=MODEL,
    )


def test_run_without_an_event_loop(echo_tool: BaseTool) -> None:
    result = LLMAgent(_model(), [echo_tool]).run("go")
    assert result.final_response.text == "sync ok"
    assert (result.accumulated_prompt, result.accumulated_completion) == (300, 30)
    assert result.cost_usd == reference_cost([(100, 10), (200, 20)])


async def test_run_inside_a_running_event_loop() -> None:
    # what a notebook cell does: a loop is already running when run() is called
    caller = threading.get_ident()
    threads: list[int] = []

    @tool
    def echo(text: str) -> str:
        """Echo, remembering which thread the loop ran on."""
        threads.append(threading.get_ident())
        return text

    asyncio.get_running_loop()  # precondition: we are inside a loop
    result = LLMAgent(_model(), [echo]).run("go")
    assert result.final_response.text == "sync ok"
    assert result.accumulated_prompt == 300
    assert len(threads) == 1
    assert threads[0] != caller


@pytest.mark.parametrize("inside_loop", [False, True])
def test_run_keeps_the_callers_usd_budget(inside_loop: bool, echo_tool: BaseTool) -> None:
    limit = reference_cost([(100, 10)]) / 2

    def call_run() -> ExecutionError:
        with usd_budget(limit), pytest.raises(ExecutionError) as info:
            LLMAgent(_model(), [echo_tool]).run("go")
        return info.value

    if inside_loop:

        async def notebook_cell() -> ExecutionError:
            return call_run()

        err = asyncio.run(notebook_cell())
    else:
        err = call_run()
    assert (err.kind, err.reason) == ("cost", "budget_exhausted")
    assert err.cost_usd == reference_cost([(100, 10)])
    started = err.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit == limit


async def test_run_inside_a_loop_sees_a_generous_budget_as_a_limit() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    with usd_budget(Decimal(3)):
        result = LLMAgent(_model(), [echo]).run("go")
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit == Decimal(3)
