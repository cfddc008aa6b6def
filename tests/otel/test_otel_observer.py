"""The event stream as OpenTelemetry GenAI spans, read back from the SDK's in-memory exporter.

Each test builds a stream with the loop's own event types (see ``test_otel_builder``),
feeds it to :class:`OTelObserver` and checks the finished spans a backend would receive:
the tree (parents, names, kinds), the conventions' attributes, sums that must equal the
run's own totals, the original timestamps, and what leaves the process with content
capture off and on.
"""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from otelkit import (
    STARTED_NS,
    RunBuilder,
    echo_call,
    shape,
    two_round_run,
    usage,
)

from toolloop_lab import Usage
from toolloop_lab._trace import write_trace
from toolloop_lab.errors import ConfigurationError, TraceError
from toolloop_lab.events import (
    LoopFinished,
    ModelCalled,
    ToolCallView,
    ToolDispatched,
    parse_event,
)
from toolloop_lab.otel import OTelObserver, export_events, export_trace
from toolloop_lab.otel._observer import provider_for_model

NS = 1_000_000_000

pytest_plugins = ("otelkit",)  # the exporter and provider fixtures


def feed(provider: TracerProvider, builder: RunBuilder, **options: object) -> OTelObserver:
    observer = OTelObserver(provider, use_current_context=False, **options)  # type: ignore[arg-type]
    for event in builder.events:
        observer(event)
    return observer


def by_op(spans: tuple[ReadableSpan, ...], operation: str) -> list[ReadableSpan]:
    return [s for s in spans if (s.attributes or {}).get("gen_ai.operation.name") == operation]


def attrs(span: ReadableSpan) -> dict[str, object]:
    return dict(span.attributes or {})


def the_agent(spans: tuple[ReadableSpan, ...]) -> ReadableSpan:
    (agent,) = by_op(spans, "invoke_agent")
    return agent


# -- the tree ---------------------------------------------------------------------------------


def test_one_run_is_one_trace_with_agent_chat_and_tool_spans(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    observer = feed(provider, two_round_run())
    spans = exporter.get_finished_spans()

    agent = the_agent(spans)
    chats, tools = by_op(spans, "chat"), by_op(spans, "execute_tool")
    assert (len(chats), len(tools), len(spans)) == (3, 2, 6)
    assert observer.spans_started == len(spans)
    assert observer.open_runs == ()
    assert agent.parent is None
    assert agent.name == "invoke_agent"
    assert agent.kind is SpanKind.INTERNAL
    assert {s.context.trace_id for s in spans} == {agent.context.trace_id}
    for span in (*chats, *tools):
        assert span.parent is not None
        assert span.parent.span_id == agent.context.span_id
    assert {s.name for s in chats} == {"chat gpt-4o-mini"}
    assert all(s.kind is SpanKind.CLIENT for s in chats)
    assert [s.name for s in tools] == ["execute_tool echo"] * 2
    assert all(s.kind is SpanKind.INTERNAL for s in tools)
    assert [attrs(s)["gen_ai.tool.call.id"] for s in tools] == ["c1", "c2"]
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)
    assert spans[0].instrumentation_scope is not None
    assert spans[0].instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.41.0"


def test_named_agents_and_their_model_and_provider(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder(model="claude-sonnet-4-5")
    b.start(name="Support bot")
    b.round()
    b.reply(b.call_start(), usage(10, 2), text="hi")
    b.finish("hi")
    feed(provider, b)
    agent = the_agent(exporter.get_finished_spans())
    (chat,) = by_op(exporter.get_finished_spans(), "chat")

    assert agent.name == "invoke_agent Support bot"
    assert attrs(agent)["gen_ai.agent.name"] == "Support bot"
    assert attrs(agent)["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert attrs(chat)["gen_ai.provider.name"] == "anthropic"
    assert chat.name == "chat claude-sonnet-4-5"


def test_an_observer_level_agent_and_provider_name(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    feed(provider, two_round_run(), agent_name="helper", provider_name="my-proxy")
    spans = exporter.get_finished_spans()
    assert the_agent(spans).name == "invoke_agent helper"
    assert {attrs(s)["gen_ai.provider.name"] for s in spans if s.name.startswith("chat")} == {
        "my-proxy"
    }


@pytest.mark.parametrize(
    ("model", "provider_name"),
    [
        ("gpt-4o-mini", "openai"),
        ("openai/gpt-4.1", "openai"),
        ("o3-mini", "openai"),
        ("claude-3-5-haiku-latest", "anthropic"),
        ("gemini-2.5-pro", "gcp.gen_ai"),
        ("mistral-large", "mistral_ai"),
        ("my-local-llama", "_OTHER"),
        (None, "_OTHER"),
    ],
)
def test_provider_from_the_model_name(model: str | None, provider_name: str) -> None:
    assert provider_for_model(model) == provider_name


# -- sums and the loop's facts ------------------------------------------------------------------


def test_span_attributes_add_up_to_the_runs_counts_and_cost(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = two_round_run()
    feed(provider, b)
    spans = exporter.get_finished_spans()
    chats = by_op(spans, "chat")
    finish = b.events[-1]
    assert isinstance(finish, LoopFinished)
    total = finish.usage
    assert total.cost_usd is not None

    assert sum(attrs(s)["gen_ai.usage.input_tokens"] for s in chats) == total.input_tokens  # type: ignore[misc]
    assert sum(attrs(s)["gen_ai.usage.output_tokens"] for s in chats) == total.output_tokens  # type: ignore[misc]
    cost = sum(Decimal(str(attrs(s)["toolloop.cost_usd"])) for s in chats)
    assert cost == total.cost_usd
    agent = attrs(the_agent(spans))
    assert agent["toolloop.usage.input_tokens"] == total.input_tokens
    assert agent["toolloop.usage.output_tokens"] == total.output_tokens
    assert agent["toolloop.usage.requests"] == 3
    assert Decimal(str(agent["toolloop.cost_usd"])) == total.cost_usd
    assert agent["toolloop.outcome"] == "final_answer"
    assert agent["toolloop.rounds"] == 3
    # the run's totals are not gen_ai.usage.* on the agent span: backends that add a span's
    # counts to its children's would count the run twice
    assert "gen_ai.usage.input_tokens" not in agent
    assert [attrs(s)["toolloop.round"] for s in chats] == [1, 2, 3]
    assert [attrs(s)["toolloop.call.number"] for s in chats] == [1, 2, 3]
    assert attrs(chats[-1])["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(chats[0])["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert attrs(chats[0])["gen_ai.response.model"] == "gpt-4o-mini"


def test_cache_counts_streaming_and_an_unpriced_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    call = b.call_start(streaming=True)
    spend = usage(1_000, 10, cost=None, cache_read_tokens=600, cache_write_tokens=300)
    b.reply(call, spend, text="ok", first_token_s=0.125)
    b.finish("ok")
    feed(provider, b)
    (chat,) = by_op(exporter.get_finished_spans(), "chat")
    agent = attrs(the_agent(exporter.get_finished_spans()))

    assert attrs(chat)["gen_ai.usage.cache_read.input_tokens"] == 600
    assert attrs(chat)["gen_ai.usage.cache_creation.input_tokens"] == 300
    assert attrs(chat)["gen_ai.request.stream"] is True
    assert attrs(chat)["gen_ai.response.time_to_first_chunk"] == 0.125
    assert attrs(chat)["toolloop.cost_known"] is False
    assert "toolloop.cost_usd" not in attrs(chat)
    assert agent["toolloop.cost_known"] is False
    assert "toolloop.cost_usd" not in agent
    assert agent["toolloop.usage.cache_read.input_tokens"] == 600


def test_original_timestamps_from_started_at_and_t(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = two_round_run()
    feed(provider, b)
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    first_call = by_op(spans, "chat")[0]
    starts = [e for e in b.events if e.kind == "model_call_start"]
    replies = [e for e in b.events if isinstance(e, ModelCalled)]

    assert agent.start_time == STARTED_NS
    assert agent.end_time == STARTED_NS + round(b.events[-1].t * NS)
    assert first_call.start_time == STARTED_NS + round(starts[0].t * NS)
    assert first_call.end_time == STARTED_NS + round(replies[0].t * NS)
    for span in spans:
        assert span.start_time is not None
        assert span.end_time is not None
        assert agent.start_time <= span.start_time <= span.end_time <= agent.end_time


def test_pruning_call_is_named_linked_and_counted(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start(prune_tools=("file_read",))
    b.round()
    b.reply(b.call_start(), usage(50, 10), tool_calls=[echo_call("f1")])
    b.tool_start("f1", "file_read", path="report.txt")
    b.tool_done("f1", "file_read", content="x" * 400)
    prune_call = b.call_start("pruning", tool_call_id="f1", messages=[])
    b.prune(prune_call, "f1", usage(120, 15), before=100, after=10)
    b.round()
    b.reply(b.call_start(), usage(60, 5), text="done")
    b.finish("done")
    feed(provider, b)
    spans = exporter.get_finished_spans()
    (tool,) = by_op(spans, "execute_tool")
    (pruning,) = [s for s in spans if attrs(s).get("toolloop.call.purpose") == "pruning"]
    agent = attrs(the_agent(spans))

    assert pruning.name == "chat gpt-4o-mini pruning"
    assert attrs(pruning)["gen_ai.operation.name"] == "chat"
    assert attrs(pruning)["gen_ai.response.model"] == "pruner-1"
    assert attrs(pruning)["gen_ai.usage.input_tokens"] == 120
    assert attrs(pruning)["toolloop.pruning.tool_call_id"] == "f1"
    assert attrs(pruning)["toolloop.pruning.tokens_saved"] == 90
    assert attrs(pruning)["toolloop.pruning.net_saved"] == 90 - 135
    assert [link.context.span_id for link in pruning.links] == [tool.context.span_id]
    assert agent["toolloop.pruning.calls"] == 1
    assert agent["toolloop.pruning.tokens_saved"] == 90
    chats = by_op(spans, "chat")
    assert sum(attrs(s)["gen_ai.usage.input_tokens"] for s in chats) == 50 + 120 + 60  # type: ignore[misc]
    assert agent["toolloop.usage.input_tokens"] == 50 + 120 + 60


def test_token_gated_run_records_gates_and_the_synthesis_call(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start(token_budget=100)
    b.round()
    b.reply(b.call_start(), usage(5_000, 200), tool_calls=[echo_call("c1")])
    b.gate("token", "100", "5200", passed=False)
    b.tool_done(
        "c1", content="token budget spent", status="error", error_reason="token_budget", ran=False
    )
    b.synthesis("token_budget")
    call = b.call_start("synthesis", tools=())
    b.reply(call, usage(5_300, 30), text="best effort", purpose="synthesis")
    b.finish("best effort", outcome="token_budget_exhausted", synthesis_reason="token_budget")
    feed(provider, b)
    spans = exporter.get_finished_spans()
    agent_span = the_agent(spans)
    agent = attrs(agent_span)
    (synthesis,) = [s for s in spans if attrs(s).get("toolloop.call.purpose") == "synthesis"]
    (tool,) = by_op(spans, "execute_tool")

    assert synthesis.name == "chat gpt-4o-mini synthesis"
    assert attrs(synthesis)["toolloop.synthesis.reason"] == "token_budget"
    assert agent["toolloop.outcome"] == "token_budget_exhausted"
    assert agent["toolloop.synthesis.reason"] == "token_budget"
    assert agent["toolloop.budget_exhausted"] is True
    assert agent["toolloop.gate.token.passed"] is False
    assert agent["toolloop.gate.token.limit"] == 100.0
    assert agent["toolloop.gate.token.spent"] == 5200.0
    assert "toolloop.gate.usd.passed" not in agent
    names = [e.name for e in agent_span.events]
    assert names.count("toolloop.budget_gate") == 1
    assert names.count("toolloop.synthesis") == 1
    assert names.count("toolloop.round_start") == 1
    # a call answered without running still gets its span: zero length, an error
    assert tool.start_time == tool.end_time
    assert attrs(tool)["toolloop.tool.ran"] is False
    assert attrs(tool)["error.type"] == "token_budget"
    assert tool.status.status_code is StatusCode.ERROR
    assert agent_span.status.status_code is StatusCode.UNSET


def test_tool_failure_sets_error_status_and_type(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    b.reply(b.call_start(), usage(10, 2), tool_calls=[echo_call("c1"), echo_call("c2")])
    b.tool_start("c1")
    b.tool_start("c2")
    b.tool_done("c2", content="boom", status="error", error_reason="tool_error")
    b.tool_done("c1", content="fine")
    b.tool_done(
        "c3",
        "nope",
        content="no such tool",
        status="error",
        error_reason="not_available",
        duration=0.0,
    )
    b.round()
    b.reply(b.call_start(), usage(10, 2), text="done")
    b.finish("done")
    feed(provider, b)
    tools = {
        attrs(s)["gen_ai.tool.call.id"]: s
        for s in by_op(exporter.get_finished_spans(), "execute_tool")
    }

    assert tools["c1"].status.status_code is StatusCode.UNSET
    assert "error.type" not in attrs(tools["c1"])
    assert tools["c2"].status.status_code is StatusCode.ERROR
    assert attrs(tools["c2"])["error.type"] == "tool_error"
    assert attrs(tools["c3"])["error.type"] == "not_available"
    assert tools["c3"].name == "execute_tool nope"


# -- failed, cancelled, incomplete --------------------------------------------------------------


def test_a_failed_model_call_ends_every_span_as_an_error(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    b.reply(b.call_start(), usage(10, 2), tool_calls=[echo_call("c1")])
    b.tool_start("c1")
    b.tool_done("c1")
    b.round()
    b.call_start()  # this call never answers
    b.fail("APIConnectionError", "connection reset", error_kind=None)
    observer = feed(provider, b)
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    open_call = by_op(spans, "chat")[-1]

    assert observer.spans_started == len(spans) == 4
    assert observer.open_runs == ()
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.status.description == "connection reset"
    assert attrs(agent)["error.type"] == "APIConnectionError"
    assert attrs(agent)["toolloop.outcome"] == "failed"
    assert open_call.status.status_code is StatusCode.ERROR
    assert attrs(open_call)["error.type"] == "APIConnectionError"
    assert open_call.end_time == agent.end_time
    assert "gen_ai.usage.input_tokens" not in attrs(open_call)


def test_a_cancelled_run_ends_the_running_tool_and_keeps_partial_counts(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    b.reply(b.call_start(), usage(40, 4, cost="0.002"), tool_calls=[echo_call("c1")])
    b.tool_start("c1")  # still running when the person presses Stop
    b.fail("CancelledError", "", cancelled=True)
    feed(provider, b)
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    (tool,) = by_op(spans, "execute_tool")

    assert len(spans) == 3
    assert attrs(agent)["toolloop.outcome"] == "cancelled"
    assert attrs(agent)["error.type"] == "CancelledError"
    assert attrs(agent)["toolloop.usage.input_tokens"] == 40
    assert Decimal(str(attrs(agent)["toolloop.cost_usd"])) == Decimal("0.002")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "CancelledError"
    assert tool.end_time == agent.end_time


def test_a_pause_is_a_span_event_and_a_tool_stopped_while_running_ran(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    held = b.pause("model_call", "round", 6.2)  # a person read the pause for 6.2 s
    b.reply(b.call_start(), usage(40, 4, cost="0.002"), tool_calls=[echo_call("c1")])
    b.tool_start("c1")
    b.tool_done("c1", "Error: stopped", status="cancelled", error_reason="cancelled", duration=1.5)
    b.fail("CancelledError", "", cancelled=True)
    feed(provider, b)
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    (tool,) = by_op(spans, "execute_tool")

    (pause,) = [e for e in agent.events if e.name == "toolloop.pause"]
    assert dict(pause.attributes or {}) == {
        "toolloop.pause.stage": "model_call",
        "toolloop.pause.purpose": "round",
        "toolloop.pause.seconds": 6.2,
        "toolloop.round": 1,
    }
    assert pause.timestamp == STARTED_NS + round((held.t - 6.2) * NS)  # when it began
    assert attrs(agent)["toolloop.paused_s"] == 6.2
    # it ran until the stop: a span of its own length, an error that says why
    assert (attrs(tool)["toolloop.tool.ran"], attrs(tool)["toolloop.tool.status"]) == (
        True,
        "cancelled",
    )
    assert attrs(tool)["error.type"] == "cancelled"
    assert tool.status.status_code is StatusCode.ERROR


def test_close_ends_runs_whose_events_stopped_early(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start()
    b.round()
    b.reply(b.call_start(), usage(10, 2), tool_calls=[echo_call("c1")])
    b.tool_start("c1")  # the kernel died here
    observer = feed(provider, b)
    assert exporter.get_finished_spans()[0].name == "chat gpt-4o-mini"
    assert observer.open_runs == ("run-1",)

    observer.close()
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    assert len(spans) == observer.spans_started == 3
    assert observer.open_runs == ()
    assert attrs(agent)["toolloop.incomplete"] is True
    assert attrs(agent)["error.type"] == "incomplete"
    assert agent.end_time == STARTED_NS + round(b.events[-1].t * NS)
    assert all(s.end_time is not None for s in spans)


def test_old_traces_without_start_events_export_sensibly(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = two_round_run()
    old = [e for e in b.events if e.kind not in {"model_call_start", "tool_start"}]
    old = [
        e.__class__(**{**_fields(e), "call": 0}) if isinstance(e, ModelCalled) else e for e in old
    ]
    b.events = old
    feed(provider, b)
    spans = exporter.get_finished_spans()
    chats, tools = by_op(spans, "chat"), by_op(spans, "execute_tool")
    replies = [e for e in old if isinstance(e, ModelCalled)]
    dispatches = [e for e in old if isinstance(e, ToolDispatched)]

    assert (len(chats), len(tools)) == (3, 2)
    for span, reply in zip(chats, replies, strict=True):
        assert span.end_time == STARTED_NS + round(reply.t * NS)
        assert span.start_time == span.end_time - round(reply.latency_s * NS)
    for span, done in zip(tools, dispatches, strict=True):
        assert span.start_time == span.end_time - round(done.duration_s * NS)
    assert sum(attrs(s)["gen_ai.usage.input_tokens"] for s in chats) == 100 + 150 + 210  # type: ignore[misc]


def _fields(event: object) -> dict[str, object]:
    import dataclasses

    return {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}  # type: ignore[arg-type]


# -- several runs -------------------------------------------------------------------------------


def test_interleaved_runs_stay_in_their_own_traces(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    a, b = two_round_run(RunBuilder("run-a")), two_round_run(RunBuilder("run-b"))
    mixed = [e for pair in zip(a.events, b.events, strict=True) for e in pair]
    export_events(mixed, provider)
    spans = exporter.get_finished_spans()
    traces = {s.context.trace_id for s in spans}

    assert len(traces) == 2
    for run_id in ("run-a", "run-b"):
        (agent,) = [
            s for s in by_op(spans, "invoke_agent") if attrs(s)["toolloop.run_id"] == run_id
        ]
        members = [s for s in spans if s.context.trace_id == agent.context.trace_id]
        assert len(members) == 6


def test_a_sub_agent_nests_under_the_tool_call_that_ran_it(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    parent = RunBuilder("parent")
    parent.start()
    parent.round()
    parent.reply(parent.call_start(), usage(10, 2), tool_calls=[echo_call("ask")])
    parent.tool_start("ask", "ask_expert", question="?")
    child = RunBuilder("child", t=parent.t)
    child.start(parent_run_id="parent", parent_tool_call_id="ask", name="expert")
    child.round()
    child.reply(child.call_start(), usage(5, 1), text="42")
    child.finish("42")
    parent.t = child.t
    parent.tool_done("ask", "ask_expert", content="42")
    parent.round()
    parent.reply(parent.call_start(), usage(10, 2), text="42")
    parent.finish("42")
    export = export_events([*parent.events[:5], *child.events, *parent.events[5:]], provider)
    spans = exporter.get_finished_spans()
    agents = {attrs(s)["toolloop.run_id"]: s for s in by_op(spans, "invoke_agent")}
    (tool,) = by_op(spans, "execute_tool")

    assert export.spans == len(spans) == 6
    assert list(export.runs) == ["parent", "child"]
    assert len(set(export.runs.values())) == 1
    assert agents["child"].parent is not None
    assert agents["child"].parent.span_id == tool.context.span_id
    assert attrs(agents["child"])["toolloop.parent_run_id"] == "parent"
    assert agents["child"].name == "invoke_agent expert"


def test_a_live_run_nests_under_the_callers_current_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    observer = OTelObserver(provider)
    with provider.get_tracer("app").start_as_current_span("handle request") as request:
        for event in two_round_run().events:
            observer(event)
    agent = the_agent(exporter.get_finished_spans())
    assert agent.parent is not None
    assert agent.parent.span_id == request.get_span_context().span_id


# -- content ------------------------------------------------------------------------------------

SECRET_PROMPT = "my password is hunter2"
SECRET_TOOL = "internal-salary-table"
SECRET_ANSWER = "the answer is sealed"


def _content_run() -> RunBuilder:
    b = RunBuilder()
    b.start(SECRET_PROMPT)
    b.round()
    b.reply(b.call_start(), usage(10, 2), text="looking", tool_calls=[echo_call("c1", SECRET_TOOL)])
    b.intervene("c1")
    b.tool_start("c1", text=SECRET_TOOL)
    b.tool_done("c1", content=SECRET_TOOL + " result", args={"text": SECRET_TOOL})
    b.round()
    b.reply(b.call_start(), usage(20, 4), text=SECRET_ANSWER, finish_reason="stop")
    b.finish(SECRET_ANSWER)
    return b


def _everything_exported(spans: tuple[ReadableSpan, ...]) -> str:
    values: list[str] = []
    for span in spans:
        values += [span.name, json.dumps(list((span.attributes or {}).values()), default=str)]
        for event in span.events:
            values += [event.name, json.dumps(list((event.attributes or {}).values()), default=str)]
        values.append(span.status.description or "")
    return "\n".join(values)


def test_content_is_not_captured_by_default(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    feed(provider, _content_run())
    spans = exporter.get_finished_spans()
    everything = _everything_exported(spans)

    assert len(spans) == 4
    for secret in (SECRET_PROMPT, SECRET_TOOL, SECRET_ANSWER, "secret-before", "looking"):
        assert secret not in everything
    for span in spans:
        assert not {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        } & set(attrs(span))


def test_content_capture_records_the_conventions_message_shapes(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    feed(provider, _content_run(), capture_content=True)
    spans = exporter.get_finished_spans()
    first, second = by_op(spans, "chat")
    (tool,) = by_op(spans, "execute_tool")
    agent = the_agent(spans)

    sent = json.loads(str(attrs(first)["gen_ai.input.messages"]))
    assert sent == [{"role": "user", "parts": [{"type": "text", "content": SECRET_PROMPT}]}]
    reply = json.loads(str(attrs(first)["gen_ai.output.messages"]))
    assert reply == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "looking"},
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "echo",
                    "arguments": {"text": SECRET_TOOL},
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    history = json.loads(str(attrs(second)["gen_ai.input.messages"]))
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"] == [
        {"type": "tool_call_response", "id": "c1", "response": SECRET_TOOL + " result"}
    ]
    assert json.loads(str(attrs(first)["gen_ai.tool.definitions"])) == [
        {"type": "function", "name": "echo"}
    ]
    assert json.loads(str(attrs(tool)["gen_ai.tool.call.arguments"])) == {"text": SECRET_TOOL}
    assert attrs(tool)["gen_ai.tool.call.result"] == SECRET_TOOL + " result"
    final = json.loads(str(attrs(agent)["gen_ai.output.messages"]))
    assert final[0]["parts"] == [{"type": "text", "content": SECRET_ANSWER}]
    assert json.loads(str(attrs(agent)["gen_ai.input.messages"])) == sent
    (intervention,) = [e for e in agent.events if e.name == "toolloop.intervention"]
    assert json.loads(str((intervention.attributes or {})["toolloop.intervention.after"])) == {
        "text": "secret-after"
    }


def test_captured_content_is_clipped_and_stays_valid_json(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = RunBuilder()
    b.start("q" * 5_000)
    b.round()
    b.reply(b.call_start(), usage(10, 2), text="a" * 5_000)
    b.finish("a" * 5_000)
    feed(provider, b, capture_content=True, content_limit=100)
    (chat,) = by_op(exporter.get_finished_spans(), "chat")

    sent = json.loads(str(attrs(chat)["gen_ai.input.messages"]))
    text = sent[0]["parts"][0]["content"]
    assert text.startswith("q" * 100)
    assert "q" * 101 not in text
    assert text.endswith("… (5,000 chars)")  # escape.clip's marker, as in every view
    reply = json.loads(str(attrs(chat)["gen_ai.output.messages"]))
    assert len(reply[0]["parts"][0]["content"]) < 200


def test_partial_text_of_a_stopped_stream_is_kept_only_with_capture(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    for capture in (False, True):
        exporter.clear()
        b = RunBuilder()
        b.start()
        b.round()
        b.call_start(streaming=True)
        b.fail("CancelledError", "", cancelled=True, partial_text="half an answ")
        feed(provider, b, capture_content=capture)
        (chat,) = by_op(exporter.get_finished_spans(), "chat")
        if capture:
            out = json.loads(str(attrs(chat)["gen_ai.output.messages"]))
            assert out == [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "half an answ"}],
                    "finish_reason": "error",
                }
            ]
        else:
            assert "gen_ai.output.messages" not in attrs(chat)


HALF = "\ud800"
"""A lone surrogate: a model or a tool may emit one; UTF-8 (and so protobuf) cannot carry it."""


def _halves_run() -> RunBuilder:
    """Lone surrogates everywhere a model, a tool or a person puts text, names included."""
    b = RunBuilder()
    b.start(f"prompt {HALF}", name=f"agent {HALF}", tools=(f"echo{HALF}",))
    b.round()
    call = ToolCallView(id=f"c{HALF}", name=f"echo{HALF}", args={f"k{HALF}": f"v{HALF}"})
    b.reply(
        b.call_start(tools=(f"echo{HALF}",)), usage(10, 2), text=f"look {HALF}", tool_calls=[call]
    )
    b.tool_start(f"c{HALF}", name=f"echo{HALF}", text=f"v{HALF}")
    b.tool_done(f"c{HALF}", name=f"echo{HALF}", content=f"result {HALF}", args={"k": f"v{HALF}"})
    b.round()
    b.call_start()
    b.fail(f"Error{HALF}", f"it broke {HALF}", partial_text=f"half {HALF}", reason=f"why{HALF}")
    return b


def _otlp_spans(spans: tuple[ReadableSpan, ...]) -> dict[str, tuple[str, dict[str, object]]]:
    """The spans as the OTLP protobuf exporter encodes and sends them, read back from the
    bytes: span id -> (name, attributes)."""
    sent = ExportTraceServiceRequest.FromString(encode_spans(spans).SerializeToString())
    out: dict[str, tuple[str, dict[str, object]]] = {}
    for resource in sent.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                values = {kv.key: _any_value(kv.value) for kv in span.attributes}
                out[span.span_id.hex()] = (span.name, values)
    return out


def _any_value(value: AnyValue) -> object:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_any_value(v) for v in value.array_value.values)
    return getattr(value, kind) if kind else None


def test_lone_surrogates_reach_the_otlp_protobuf_encoder_as_replacement_characters(
    provider: TracerProvider, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    feed(provider, _halves_run(), capture_content=True)
    spans = exporter.get_finished_spans()

    with caplog.at_level(logging.WARNING):
        sent = _otlp_spans(spans)

    assert not [r for r in caplog.records if "encode" in r.getMessage()]
    assert len(sent) == len(spans) == 4
    for span in spans:
        name, values = sent[format(span.context.span_id, "016x")]
        assert (name, values) == (span.name, attrs(span))  # every attribute, unchanged
        assert span.status.description is None or HALF not in span.status.description
    (tool,) = by_op(spans, "execute_tool")
    assert attrs(tool)["gen_ai.tool.call.result"] == "result \ufffd"
    assert tool.name == "execute_tool echo\ufffd"
    first, second = by_op(spans, "chat")
    history = json.loads(str(attrs(second)["gen_ai.input.messages"]))
    assert history[-1]["parts"][0]["response"] == "result \ufffd"
    assert json.loads(str(attrs(first)["gen_ai.input.messages"]))[0]["parts"][0] == {
        "type": "text",
        "content": "prompt \ufffd",
    }
    assert the_agent(spans).status.description == "it broke \ufffd"


def test_bad_content_limit_is_refused() -> None:
    with pytest.raises(ConfigurationError) as caught:
        OTelObserver(content_limit=0)
    assert caught.value.field == "content_limit"


# -- from a trace file --------------------------------------------------------------------------


def test_a_trace_file_exports_the_spans_the_live_observer_made(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    b = two_round_run()
    feed(provider, b)
    live = exporter.get_finished_spans()
    exporter.clear()
    path = write_trace(tmp_path / "run.jsonl", b.events)
    with path.open("ab") as handle:
        handle.write(b'{"kind": "round_st')  # a writer killed mid-line

    exported = export_trace(path, provider)
    replayed = exporter.get_finished_spans()

    assert shape(replayed) == shape(live)
    assert exported.spans == len(replayed) == 6
    assert list(exported.runs) == ["run-1"]
    assert exported.runs["run-1"] == format(replayed[0].context.trace_id, "032x")
    assert [line.reason for line in exported.skipped] == ["partial last line"]


def test_a_file_that_is_not_a_trace_is_a_typed_error(
    provider: TracerProvider, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(TraceError):
        export_trace(path, provider)


def test_a_stray_event_after_the_end_does_not_reopen_the_run(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = two_round_run()
    observer = feed(provider, b)
    b.tool_done("late")  # an event of run-1 that arrives after its loop_finish
    observer(b.events[-1])
    observer.close()
    assert observer.open_runs == ()
    assert len(exporter.get_finished_spans()) == observer.spans_started == 6


def test_a_run_seen_without_its_start_still_gets_a_root_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    b = two_round_run()
    observer = feed(provider, RunBuilder(events=b.events[1:]))  # attached after loop_start
    spans = exporter.get_finished_spans()
    agent = the_agent(spans)
    assert observer.open_runs == ()
    assert len(spans) == 6
    assert attrs(agent)["toolloop.incomplete"] is True
    assert attrs(agent)["toolloop.outcome"] == "final_answer"
    assert all(s.parent is not None for s in spans if s is not agent)


def test_any_tracer_provider_works_even_one_that_records_nothing() -> None:
    from opentelemetry.trace import NoOpTracerProvider

    observer = OTelObserver(NoOpTracerProvider())
    for event in two_round_run().events:
        observer(event)
    assert observer.open_runs == ()
    assert observer.spans_started == 6


# -- the event builder the tests use --------------------------------------------------


def test_built_events_survive_the_strict_trace_parser() -> None:
    events = two_round_run().events
    for event in events:
        assert parse_event(json.dumps(event.to_dict())) == event


def test_built_finish_totals_are_the_sum_of_the_calls() -> None:
    events = two_round_run().events
    calls = [e for e in events if isinstance(e, ModelCalled)]
    finish = events[-1]
    assert isinstance(finish, LoopFinished)
    total = sum((c.usage for c in calls), Usage(cost_usd=Decimal(0)))
    assert finish.usage == total
    assert finish.usage.input_tokens == 100 + 150 + 210
