"""Hostile spans read by :class:`SpanSource`: what an outside fault probe sent it.

Content nested too deep to parse, counts and times no event can hold, spans that start
after their run ended, span ids repeated across traces, child spans that never end, and
attributes of the wrong type. The rule they share: what a view shows, a trace stores and
the reader reads back are the same, nothing is added to a run that ended, and what the
source lets go is reported (logged, and counted on the source), never silently.
"""

from __future__ import annotations

import gc
import json
import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Span, Tracer, set_span_in_context

from toolloop_lab import RunView, TraceWriter, Usage, read_trace
from toolloop_lab._spend.pricing import price_of
from toolloop_lab.events import (
    Event,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    by_run,
    parse_event,
)
from toolloop_lab.otel import SpanSource
from toolloop_lab.otel._span_run import SpanRun

AGENT = {"gen_ai.operation.name": "invoke_agent"}
PRICED = "gpt-4o"


def _chat(**more: object) -> dict[str, object]:
    """A chat span's attributes: a priced model, 20 input and 4 output tokens."""
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": PRICED,
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 4,
        **more,
    }


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def source(events: list[Event]) -> SpanSource:
    return SpanSource(events.append)


@pytest.fixture
def tracer(source: SpanSource) -> Iterator[Tracer]:
    provider = TracerProvider()
    provider.add_span_processor(source)
    yield provider.get_tracer("test")
    provider.shutdown()


@contextmanager
def _span(tracer: Tracer, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        yield span


def _one_call_run(tracer: Tracer, chat: dict[str, object]) -> None:
    with _span(tracer, "invoke_agent", AGENT), _span(tracer, "chat", chat):
        pass


def _priced(inp: int, out: int) -> Usage:
    """What genai-prices says ``inp`` and ``out`` tokens of the priced model cost."""
    cost = price_of(Usage(input_tokens=inp, output_tokens=out, requests=1), PRICED)
    assert cost is not None
    return Usage(inp, out, requests=1, cost_usd=cost.total, input_cost_usd=cost.input)


def _reads_back(events: list[Event]) -> None:
    """Every event survives the strict reader unchanged."""
    for event in events:
        raw = event.to_json()
        assert raw is not None
        assert parse_event(raw) == event


# -- content nested too deep to parse -------------------------------------------------------

DEEP = "[" * 10_000 + "]" * 10_000


@pytest.mark.parametrize("name", ["gen_ai.input.messages", "gen_ai.output.messages"])
def test_content_nested_too_deep_is_no_content_and_the_call_still_counts(
    tracer: Tracer, events: list[Event], name: str
) -> None:
    _one_call_run(tracer, _chat(**{name: DEEP}))
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert called.usage == _priced(20, 4)
    view = RunView.from_events(events)
    assert (view.status, view.model_calls) == ("finished", 1)
    assert view.usage == _priced(20, 4)
    assert not any(row.calling for row in view.rounds)  # no call left open
    _reads_back(events)


def test_a_tool_call_argument_nested_too_deep_is_no_content(
    tracer: Tracer, events: list[Event]
) -> None:
    with (
        _span(tracer, "invoke_agent", AGENT),
        _span(
            tracer,
            "execute_tool t",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.arguments": DEEP},
        ),
    ):
        pass
    assert [e.kind for e in events] == ["loop_start", "tool_start", "tool_dispatch", "loop_finish"]
    _reads_back(events)


# -- counts no event can hold -----------------------------------------------------------------

PAST_THE_SCHEMA = {
    "gen_ai.usage.input_tokens": 2**62,
    "gen_ai.usage.output_tokens": 4,
    "gen_ai.usage.cache_read.input_tokens": 2**60,
}


def test_a_count_past_the_schema_is_unknown_live_and_saved_alike(
    events: list[Event], tmp_path: Path
) -> None:
    path = tmp_path / "spans.jsonl"
    with TraceWriter(path) as writer:  # the trace written beside the live view
        provider = TracerProvider()
        provider.add_span_processor(SpanSource(events.append, writer))
        tracer = provider.get_tracer("test")
        with (
            _span(tracer, "invoke_agent", {**AGENT, "toolloop.rounds": 2**60}),
            _span(tracer, "chat", _chat(**PAST_THE_SCHEMA)),
        ):
            pass
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert called.usage.estimated  # unknown: estimated and said so, never the number given
    assert called.usage.input_tokens < 2**53
    assert called.usage.output_tokens == 4  # what the span gave that an event can hold
    assert called.usage.cache_read_tokens == 0
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.rounds == 1  # the rounds seen, not the count no event can hold
    _reads_back(events)
    read = read_trace(path)
    assert read.skipped == ()
    assert list(read.events) == events
    live, saved = RunView.from_events(events), RunView.from_events(read.events)
    assert (saved.status, saved.usage) == (live.status, live.usage) == ("finished", end.usage)


@pytest.mark.parametrize(
    "name", ["toolloop.input_messages", "toolloop.pruning.tokens_before", "toolloop.rounds"]
)
def test_every_count_a_span_gives_is_held_to_the_schema(
    tracer: Tracer, events: list[Event], name: str
) -> None:
    with (
        _span(tracer, "invoke_agent", {**AGENT, name: 2**60}),
        _span(tracer, "chat", _chat(**{name: 2**60, "toolloop.call.purpose": "pruning"})),
    ):
        pass
    assert events[-1].kind == "loop_finish"
    _reads_back(events)


def test_a_span_time_no_event_can_hold_is_not_a_time(tracer: Tracer, events: list[Event]) -> None:
    agent = tracer.start_span("invoke_agent", attributes=AGENT)
    chat = tracer.start_span("chat", context=set_span_in_context(agent), attributes=_chat())
    chat.end(end_time=math.inf)  # type: ignore[arg-type]
    agent.end()
    assert [e.kind for e in events][-2:] == ["model_call", "loop_finish"]
    _reads_back(events)


# -- a span after its run ended ---------------------------------------------------------------


def test_a_span_that_starts_after_its_run_ended_adds_nothing(
    tracer: Tracer, events: list[Event], source: SpanSource, caplog: pytest.LogCaptureFixture
) -> None:
    agent = tracer.start_span("invoke_agent", attributes=AGENT)
    step = tracer.start_span("step", context=set_span_in_context(agent))  # of no kind we know
    chat = tracer.start_span("chat", context=set_span_in_context(step), attributes=_chat())
    chat.end()
    agent.end()  # before its step span: the run has ended
    ended = list(events)
    with caplog.at_level(logging.WARNING, logger="toolloop_lab"):
        for parent in (step, agent):  # under a span still open, and under the agent span
            late = tracer.start_span(
                "chat", context=set_span_in_context(parent), attributes=_chat()
            )
            late.end()
        step.end()
    assert events == ended  # nothing after the run's end
    assert len(by_run(events)) == 1  # nor a run of their own
    assert events[-1].kind == "loop_finish"
    view = RunView.from_events(events)
    assert (view.status, view.usage.input_tokens, view.model_calls) == ("finished", 20, 1)
    assert source.dropped.late == 2
    assert f"started after its run {events[0].run_id} ended" in caplog.text


def test_a_sub_agent_ends_with_the_run_that_called_it(
    tracer: Tracer, events: list[Event], source: SpanSource
) -> None:
    agent = tracer.start_span("invoke_agent outer", attributes=AGENT)
    tool = tracer.start_span(
        "execute_tool ask",
        context=set_span_in_context(agent),
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.call.id": "k1"},
    )
    inner = tracer.start_span(
        "invoke_agent inner", context=set_span_in_context(tool), attributes=AGENT
    )
    agent.end()  # before the tool and the sub-agent it runs
    ended = list(events)
    late = tracer.start_span("chat", context=set_span_in_context(inner), attributes=_chat())
    late.end()
    inner.end()
    tool.end()
    assert events == ended
    outer_id, inner_id = (e.run_id for e in events if isinstance(e, LoopStarted))
    assert [(e.run_id, e.kind) for e in events if e.kind.startswith("loop_")][1:] == [
        (inner_id, "loop_start"),
        (inner_id, "loop_failure"),  # ended first: its caller's end cannot precede it
        (outer_id, "loop_finish"),
    ]
    assert source.dropped.late == 1
    assert source.open_runs == ()


# -- span ids repeated across traces ----------------------------------------------------------


class _SameSpanIds(IdGenerator):
    """A deterministic generator: a new trace id each trace, span ids 1, 2, ... in each."""

    def __init__(self) -> None:
        self.trace = 0
        self.span = 0

    def generate_trace_id(self) -> int:
        self.trace += 1
        self.span = 0
        return self.trace

    def generate_span_id(self) -> int:
        self.span += 1
        return self.span


def test_span_ids_repeated_across_traces_are_two_runs(events: list[Event]) -> None:
    provider = TracerProvider(id_generator=_SameSpanIds())
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("test")
    a = tracer.start_span("invoke_agent a", attributes=AGENT)
    b = tracer.start_span("invoke_agent b", attributes=AGENT)
    assert a.get_span_context().span_id == b.get_span_context().span_id
    for agent, tokens in ((a, 20), (b, 7)):
        chat = tracer.start_span(
            "chat",
            context=set_span_in_context(agent),
            attributes=_chat(**{"gen_ai.usage.input_tokens": tokens}),
        )
        chat.end()
    a.end()
    b.end()
    runs = by_run(events)
    assert len(runs) == 2
    for stream, name, tokens in zip(runs.values(), ("a", "b"), (20, 7), strict=True):
        start, end = stream[0], stream[-1]
        assert isinstance(start, LoopStarted)
        assert isinstance(end, LoopFinished)
        assert start.name == name
        assert [e.kind for e in stream].count("loop_finish") == 1
        assert end.usage.input_tokens == tokens
    provider.shutdown()


# -- child spans that never end -----------------------------------------------------------------


def _runs_alive() -> int:
    gc.collect()
    return sum(isinstance(o, SpanRun) for o in gc.get_objects())


def test_child_spans_that_never_end_are_bounded_and_reported(
    tracer: Tracer, events: list[Event], source: SpanSource, caplog: pytest.LogCaptureFixture
) -> None:
    source.ended_spans_held = 50
    before = _runs_alive()
    with caplog.at_level(logging.WARNING, logger="toolloop_lab"):
        for _ in range(200):
            with _span(tracer, "invoke_agent", AGENT) as agent:
                tracer.start_span("step", context=set_span_in_context(agent))  # never ends
                with _span(tracer, "chat", _chat(**{"gen_ai.input.messages": "x" * 10_000})):
                    pass
    assert sum(e.kind == "loop_finish" for e in events) == 200
    assert _runs_alive() == before  # a finished run is not kept for its open spans
    assert source.dropped.never_ended >= 200 - source.ended_spans_held
    assert "never ended" in caplog.text


# -- times and names of the wrong type ----------------------------------------------------------


@pytest.mark.parametrize("said", [True, -5.0, math.inf, math.nan, "0.2"])
def test_a_time_to_first_chunk_that_is_no_time_is_unknown(
    tracer: Tracer, events: list[Event], said: object
) -> None:
    _one_call_run(tracer, _chat(**{"gen_ai.response.time_to_first_chunk": said}))
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert called.first_token_s is None
    _reads_back(events)


def test_a_time_to_first_chunk_is_kept(tracer: Tracer, events: list[Event]) -> None:
    _one_call_run(tracer, _chat(**{"gen_ai.response.time_to_first_chunk": 0.25}))
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert called.first_token_s == 0.25


def _tool_call_reply(part: dict[str, object]) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", **part}]}])


@pytest.mark.parametrize(
    "part",
    [
        {"id": "c1", "name": {"x": 1}, "arguments": {"a": 1}},
        {"id": "c1", "name": ["echo"], "arguments": {"a": 1}},
        {"id": "c1", "name": 5, "arguments": {"a": 1}},
        {"id": {"x": 1}, "name": "echo", "arguments": {"a": 1}},
    ],
)
def test_a_tool_call_name_or_id_of_the_wrong_type_is_never_made_text(
    tracer: Tracer, events: list[Event], part: dict[str, object]
) -> None:
    _one_call_run(tracer, _chat(**{"gen_ai.output.messages": _tool_call_reply(part)}))
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    (view,) = called.tool_calls
    for said in (part["name"], part["id"]):
        if not isinstance(said, str):
            assert str(said) not in (view.name, view.id)
    if isinstance(part["name"], str):  # an id that is no text is unknown
        assert (view.name, view.id, view.valid) == (part["name"], "", True)
    else:  # a call whose tool is named by no text can never run: an invalid call
        assert (view.name, view.valid) == ("", False)
        assert view.error
    _reads_back(events)


def test_an_openinference_tool_call_name_that_is_no_text_is_never_made_text(
    tracer: Tracer, events: list[Event]
) -> None:
    prefix = "llm.output_messages.0.message."
    call = f"{prefix}tool_calls.0.tool_call."
    with (
        _span(tracer, "agent", {"openinference.span.kind": "AGENT"}),
        _span(
            tracer,
            "llm",
            {
                "openinference.span.kind": "LLM",
                f"{prefix}role": "assistant",
                f"{call}id": 7,
                f"{call}function.name": 5,
                f"{call}function.arguments": "{}",
            },
        ),
    ):
        pass
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    (view,) = called.tool_calls
    assert (view.name, view.id, view.valid) == ("", "", False)


def test_tags_and_tools_of_the_wrong_type_are_left_out(tracer: Tracer, events: list[Event]) -> None:
    with _span(
        tracer, "invoke_agent", {**AGENT, "toolloop.tags": (1, 2), "toolloop.tools": ("echo",)}
    ):
        pass
    start = events[0]
    assert isinstance(start, LoopStarted)
    assert (start.tags, start.tools) == ((), ("echo",))
