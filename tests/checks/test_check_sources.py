"""Checks judge every run the package can read the same way: a result, the error a failed
run raised, a list of events, a trace (path or ``TraceRead``), a recording (path or
``Recording``, played back through the loop), a run seen through the LangChain bridge and a
run read back from OpenTelemetry spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from checkkit import TICKET_FIGURES, TICKET_TOOLS, ticket_run, ticket_script
from loopkit import MODEL

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    Recording,
    ScriptedChatModel,
    TraceWriter,
    read_trace,
    usd_budget,
    watch,
)
from toolloop_lab.checks import (
    CheckedRun,
    called,
    called_in_order,
    evaluate,
    max_cost_usd,
    max_tokens,
    max_tool_rounds,
    no_tool_errors,
    outcome,
    verify,
)
from toolloop_lab.errors import ChecksFailed, ConfigurationError, ExecutionError, UnknownRunError
from toolloop_lab.events import Event, LoopStarted

CHECKS = [
    called("lookup_ticket", ticket="T-7"),
    called_in_order("lookup_ticket", "search_docs", "reply"),
    max_tool_rounds(3),
    max_tokens(TICKET_FIGURES.tokens),
    max_cost_usd(TICKET_FIGURES.cost),
    outcome("final_answer"),
    no_tool_errors(),  # fails: T-9 does not exist
]
VERDICTS = [True, True, True, True, True, True, False]


def verdicts(run: Any, **kw: Any) -> list[bool]:
    return [r.passed for r in evaluate(run, CHECKS, **kw).results]


def test_a_result_its_events_and_its_trace_are_judged_alike(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    with TraceWriter(trace) as writer:
        agent = LLMAgent(
            ScriptedChatModel(ticket_script(), model_name=MODEL),
            TICKET_TOOLS,
            AgentConfig(tool_max_rounds=6),
            observers=[writer],
        )
        result = agent.run("My API key leaked, ticket T-7. What now?")
    assert verdicts(result) == VERDICTS
    assert verdicts(list(result.events)) == VERDICTS
    assert verdicts(trace) == VERDICTS
    assert verdicts(str(trace)) == VERDICTS
    assert verdicts(read_trace(trace)) == VERDICTS
    report = evaluate(trace, CHECKS)
    assert report.run.source == f"trace {str(trace)!r}"


def test_a_recording_is_played_back_through_the_loop_and_judged_as_its_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ticket.jsonl"
    original = ticket_run(path)
    assert verdicts(path) == VERDICTS
    report = evaluate(Recording.from_file(path), CHECKS)
    assert [r.passed for r in report.results] == VERDICTS
    assert report.run.source == f"recording {str(path)!r}, played back"
    played = report.run.view
    assert played.usage == original.usage  # the recorded figures, exactly
    evidence = [(r.round, r.tool_call_id) for r in report.results]
    assert evidence == [(r.round, r.tool_call_id) for r in evaluate(original, CHECKS).results]
    # a recording keeps the text a tool's error read as, not the exception's class
    assert report.results[-1].seen.endswith("[c_bad]: the tool failed")


def test_a_recording_of_a_run_that_hit_its_round_cap_plays_back_with_its_final_answer_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "capped.jsonl"
    capped = ticket_run(path, config=AgentConfig(tool_max_rounds=2))
    assert capped.outcome == "synthesis"
    report = evaluate(path, [outcome("synthesis"), max_tool_rounds(2)])
    assert report.passed, report.text()
    assert report.run.view.usage == capped.usage


def test_a_recording_of_two_runs_is_refused_naming_the_calls_left(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    ticket_run(path)
    ticket_run(path)
    with pytest.raises(ConfigurationError, match="holds 4 more model call"):
        evaluate(path, CHECKS)


def test_the_error_a_failed_run_raised_is_judged_on_its_partial_events() -> None:
    with pytest.raises(ExecutionError) as caught, usd_budget(0.00001):
        ticket_run()
    report = evaluate(caught.value, [outcome("usd_budget_exhausted"), max_tool_rounds(0)])
    assert [r.passed for r in report.results] == [True, True]
    assert report.run.source == "the ExecutionError the run raised"


def test_a_run_seen_through_the_langchain_bridge_is_judged_alike() -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import StructuredTool, ToolException

    def lookup(ticket: str) -> str:
        if ticket != "T-7":
            raise ToolException(f"no ticket {ticket}")  # a ToolNode passes it to the model
        return "T-7: open"

    handled = StructuredTool.from_function(
        lookup, name="lookup_ticket", description="Look a ticket up.", handle_tool_error=True
    )
    events: list[Event] = []
    model = ScriptedChatModel(ticket_script(), model_name=MODEL)
    graph = create_agent(model, [handled, *TICKET_TOOLS[1:]])
    with watch(events.append):
        graph.invoke({"messages": [("user", "My API key leaked, ticket T-7. What now?")]})
    start = next(e for e in events if isinstance(e, LoopStarted))
    assert start.source == "langchain"
    assert verdicts(events) == VERDICTS


def test_a_run_read_back_from_opentelemetry_spans_is_judged_alike() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from toolloop_lab.otel import OTelObserver, SpanSource

    provider = TracerProvider()
    back: list[Event] = []
    provider.add_span_processor(SpanSource(back.append))
    observer = OTelObserver(provider, capture_content=True, use_current_context=False)
    agent = LLMAgent(
        ScriptedChatModel(ticket_script(), model_name=MODEL),
        TICKET_TOOLS,
        AgentConfig(tool_max_rounds=6),
        observers=[observer],
    )
    agent.run("My API key leaked, ticket T-7. What now?")
    provider.shutdown()
    assert next(e for e in back if isinstance(e, LoopStarted)).source == "otel"
    assert verdicts(back) == VERDICTS


def test_of_several_runs_the_newest_is_judged_unless_one_is_named() -> None:
    first = ticket_run()
    second = LLMAgent(ScriptedChatModel(["no tools today"], model_name=MODEL), []).run("hi")
    both = [*first.events, *second.events]
    assert evaluate(both, [max_tool_rounds(0)]).passed
    assert not evaluate(both, [max_tool_rounds(0)], run_id=first.run_id).passed
    with pytest.raises(UnknownRunError):
        evaluate(both, CHECKS, run_id="nope")


def test_a_checked_run_is_read_once_and_judged_again() -> None:
    read = evaluate(ticket_run(), CHECKS).run
    assert isinstance(read, CheckedRun)
    assert evaluate(read, CHECKS).run is read


@pytest.mark.parametrize(
    "source",
    [42, "no such file.jsonl", [1, 2], b"bytes", [], None],
    ids=["int", "missing path", "not events", "bytes", "no events", "none"],
)
def test_what_is_no_run_is_refused(source: Any) -> None:
    from toolloop_lab.errors import TraceError

    with pytest.raises((ConfigurationError, TraceError)):
        evaluate(source, CHECKS)


@pytest.mark.parametrize("checks", [[], "called", [called("x"), "y"], 3], ids=repr)
def test_what_is_no_list_of_checks_is_refused(checks: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        verify(ticket_run(), checks)
    assert caught.value.field == "checks"


def test_verify_returns_the_report_when_every_check_passes_and_raises_when_one_fails() -> None:
    run = ticket_run()
    assert verify(run, CHECKS[:-1]).passed
    with pytest.raises(ChecksFailed) as caught:
        verify(run, CHECKS)
    assert [f.description for f in caught.value.failures] == ["no_tool_errors()"]
