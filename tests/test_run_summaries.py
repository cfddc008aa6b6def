"""Run summaries: every run of a stream in one line each, in start order.

A trace a cell appended to, a debugger that saw many runs, a sweep: each holds several
runs, and a list of them reads ``runview.summaries``, which folds each run with
``RunView`` (the one fold), so a summary says what every other view says.
"""

from __future__ import annotations

import asyncio
import dataclasses
from decimal import Decimal

import pytest
from browser.streams import Stream, ToolSpec
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import LLMAgent, RunSummary, RunView, ScriptedChatModel, echo_tool
from toolloop_lab._runview import MAX_SPANS, RunBook, summaries
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import Event, LoopFinished


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
        return str((await helper.arun(question, name="helper")).finished.final_text)

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
    assert summaries(outer.events) == (RunSummary.of(RunView.from_events(outer.events)),)


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


def boss_with_helper(seen: list[Event], helper_model: str = MODEL) -> tuple[LLMAgent, list[Event]]:
    """A boss whose ``research`` tool awaits a helper agent (two rounds of its own)."""
    helper = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("echo", {"text": "1+1"}, "h1"), tokens=(30, 3)), final("two")],
            model_name=helper_model,
        ),
        [echo_tool()],
        observers=[seen.append],
    )

    @tool
    async def research(question: str) -> str:
        """Ask the helper agent."""
        return str((await helper.arun(question, name="helper")).finished.final_text)

    boss = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("research", {"question": "1+1"}, "o1")), final("It is two.")],
            model_name=MODEL,
        ),
        [research],
        observers=[seen.append],
    )
    return boss, seen


def test_a_nested_run_names_its_parents_tool_and_the_parent_adds_up_its_spend() -> None:
    boss, seen = boss_with_helper([])
    outer = boss.run("What is 1+1?", name="boss")
    parent, nested = summaries(seen)
    dispatched = [e for e in outer.events if e.kind == "tool_dispatch"]
    assert [(e.name, e.status, e.content) for e in dispatched] == [("research", "success", "two")]
    assert (parent.parent_tool_name, nested.parent_tool_name) == (None, "research")
    assert (parent.source, nested.source) == ("loop", "loop")
    # the parent's own spend is its own; with its nested run, both
    assert parent.cost_usd == outer.cost_usd == reference_cost([(10, 5), (10, 5)])
    assert parent.total_cost_usd == reference_cost([(10, 5), (10, 5), (30, 3), (10, 5)])
    assert parent.total_input_tokens == parent.input_tokens + nested.input_tokens == 60
    assert parent.total_output_tokens == parent.output_tokens + nested.output_tokens == 18
    assert (nested.total_input_tokens, nested.total_cost_usd) == (40, nested.cost_usd)
    # the nested run started while the parent's first round ran its tool
    first_round_ended = next(e.t for e in outer.events if e.kind == "tool_dispatch")
    assert parent.offset_s == 0.0
    assert 0.0 < nested.offset_s < first_round_ended + 0.5
    # a nested run carries its spans (a lane of the parent's timeline); a top-level one not
    assert parent.spans == ()
    assert parent.spans_left_out == 0
    assert [s.kind for s in nested.spans] == ["model", "tool", "model"]
    assert all(0.0 <= s.t0 <= s.t1 <= nested.duration_s + 1e-6 for s in nested.spans)
    assert not any(s.failed for s in nested.spans)


def test_one_unpriced_nested_run_makes_the_total_unpriced() -> None:
    boss, seen = boss_with_helper([], helper_model="a-model-nobody-prices")
    boss.run("What is 1+1?")
    parent, nested = summaries(seen)
    assert parent.cost_usd is not None
    assert nested.cost_usd is None
    assert parent.total_cost_usd is None
    assert parent.total_input_tokens == 60  # tokens still add up


def test_a_run_book_keeps_a_summary_that_did_not_change_and_folds_only_new_events() -> None:
    boss, seen = boss_with_helper([])
    boss.run("What is 1+1?")
    book = RunBook()
    for event in seen[:-1]:  # the parent's end not yet seen
        book.record(event)
    parent, nested = book.summaries()
    assert parent.status == "running"
    assert book.summaries()[1] is nested  # nothing changed: the same objects
    book.record(seen[-1])
    ended, same = book.summaries()
    assert ended.status == "finished"
    assert ended.outcome == "final_answer"
    assert same is nested
    assert book.summaries() == summaries(seen)
    assert book.newest_top_level() == parent.run_id
    book.drop(nested.run_id)
    (alone,) = book.summaries()

    # its nested run is let go, and what it spent stays in its parent's totals
    def totals(s: RunSummary) -> tuple[object, ...]:
        return s.total_input_tokens, s.total_output_tokens, s.total_cost_usd

    assert totals(alone) == totals(ended)
    assert alone.total_input_tokens > alone.input_tokens


def test_many_spans_keep_the_failed_and_the_longest_and_count_the_rest() -> None:
    s = Stream(run_id="sub").start("go", parent_run_id="boss", parent_tool_call_id="c0")
    for n in range(1, 401):
        bad = n == 7
        spec = ToolSpec(f"c{n}", "echo", {"n": n}, "x", 0.5 if bad else 0.001 * n)
        if bad:
            spec = dataclasses.replace(spec, status="error", reason="tool_error")
        s.full_round(n, "", [spec], latency=0.002)
    (summary,) = summaries(s.finish("done", 400).events)
    assert len(summary.spans) == MAX_SPANS
    assert summary.spans_left_out == 800 - MAX_SPANS
    assert [x.t0 for x in summary.spans] == sorted(x.t0 for x in summary.spans)
    failed = [x for x in summary.spans if x.failed]
    assert [(x.kind, round(x.t1 - x.t0, 3)) for x in failed] == [("tool", 0.5)]
    shortest_kept = min(x.t1 - x.t0 for x in summary.spans)
    assert shortest_kept > 0.002  # the 2 ms model calls were left out first


def test_a_nested_run_without_wall_clock_starts_is_placed_by_its_parents_call() -> None:
    parent = Stream(run_id="boss").start("go", started_at="not a time")
    spec = ToolSpec("c1", "research", {}, "ok", 2.0)
    parent.round_start(1)
    parent.call_start(1)
    parent.t += 1.5
    parent.call_end(1, "", [spec])
    parent.tool_begin(1, spec)
    head = len(parent.events)
    child = Stream(run_id="kid").start(
        "sub", started_at="", parent_run_id="boss", parent_tool_call_id="c1"
    )
    child.full_round(1, "", [ToolSpec("k1", "echo", {}, "x", 0.1)])
    child.finish("ok", 1)
    parent.t += 2.0
    parent.tool_end(1, spec)
    parent.finish("done", 1)
    events = [*parent.events[:head], *child.events, *parent.events[head:]]
    boss, kid = summaries(events)
    assert (kid.parent_tool_name, kid.offset_s) == ("research", 1.5)
    assert boss.total_input_tokens == 2_000


def test_a_usd_stop_reads_as_the_limit_reached_never_as_failed() -> None:
    from jskit import usd_stop_mid_run

    from toolloop_lab._support.words import STATUS

    (stopped,) = summaries(usd_stop_mid_run())
    assert (stopped.status, stopped.outcome) == ("failed", "usd_budget_exhausted")
    assert stopped.shown_status == "usd_budget_exhausted"
    assert STATUS[stopped.shown_status] == "USD limit reached"
    broken = ScriptedChatModel([RuntimeError("provider down")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        LLMAgent(broken).run("go")
    (failed,) = summaries(info.value.events)
    assert failed.shown_status == "failed"
