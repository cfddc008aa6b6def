"""Run summaries: every run of a stream in one line each, in start order.

A trace a cell appended to, a debugger that saw many runs, a sweep: each holds several
runs, and a list of them reads ``runview.summaries``, which folds each run with
``RunView`` (the one fold), so a summary says what every other view says.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel, ToolLoopError
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.events import Event, LoopFinished
from toolloop_lab.runview import RunSummary, RunView, summaries


def test_a_summary_per_run_in_start_order_with_the_runs_figures() -> None:
    seen: list[Event] = []
    helper = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("echo", {"text": "1+1"}, "h1"), tokens=(30, 3)), final("two")],
            model_name=MODEL,
        ),
        [echo_tool()],
        observers=[seen.append],
    )

    @tool
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return str((await helper.arun(question, name="helper")).final_text)

    boss = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("ask_helper", {"question": "1+1"}, "o1")), final("It is two.")],
            model_name=MODEL,
        ),
        [ask_helper],
        observers=[seen.append],
    )
    outer = boss.run("What is 1+1?", name="boss", tags=("demo",))
    outer_id = outer.events[0].run_id
    first, nested = summaries(seen)
    assert (first.run_id, first.name, first.tags, first.parent_run_id) == (
        outer_id,
        "boss",
        ("demo",),
        None,
    )
    assert (nested.name, nested.parent_run_id, nested.parent_tool_call_id) == (
        "helper",
        outer_id,
        "o1",
    )
    assert (first.status, first.outcome, first.rounds) == ("finished", "final_answer", 2)
    assert (first.input_tokens, first.output_tokens) == (
        outer.accumulated_prompt,
        outer.accumulated_completion,
    )
    assert first.cost_usd == outer.cost_usd == reference_cost([(10, 5), (10, 5)])
    assert nested.cost_usd == reference_cost([(30, 3), (10, 5)])
    assert str(first.started_at) <= str(nested.started_at)
    assert first.duration_s >= nested.duration_s > 0
    assert first == RunSummary.of(RunView.from_events(outer.events))


def test_a_run_still_going_has_no_outcome_yet() -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "x"}, "c1")), final("done")], model_name=MODEL
    )
    events = LLMAgent(model, [echo_tool()]).run("go").events
    going = tuple(e for e in events if not isinstance(e, LoopFinished))
    (summary,) = summaries(going)
    assert (summary.status, summary.outcome, summary.rounds) == ("running", None, 2)
    assert summaries(()) == ()


def test_a_failed_run_and_an_unpriced_one_say_so() -> None:
    broken = ScriptedChatModel([RuntimeError("provider down")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        LLMAgent(broken).run("go", name="broken")
    unpriced = ScriptedChatModel([final("hi")], model_name="a-model-nobody-prices")
    priceless = asyncio.run(LLMAgent(unpriced).arun("go"))
    failed, free = summaries((*info.value.events, *priceless.events))
    assert (failed.name, failed.status, failed.outcome) == ("broken", "failed", "failed")
    assert failed.cost_usd == Decimal(0)
    assert (free.outcome, free.cost_usd) == ("final_answer", None)
