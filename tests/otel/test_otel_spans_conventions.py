"""Spans built with the SDK's own tracer, in each convention :class:`SpanSource` reads:
OpenInference (what the OpenAI Agents SDK and smolagents instrumentations send), the older
GenAI names, a bare client call with no agent around it; and what spans leave out
(usage, an unknown model) marked unknown, never zero. Spans from many threads at once keep
each run's events whole and in order."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, Status, StatusCode, Tracer, set_span_in_context

from toolloop_lab import RunView, Usage
from toolloop_lab._spend.pricing import price_of
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    ToolDispatched,
    by_run,
    transcript,
)
from toolloop_lab.otel import SpanSource


@pytest.fixture
def events() -> list[Event]:
    return []


@pytest.fixture
def tracer(events: list[Event]) -> Iterator[Tracer]:
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(events.append))
    yield provider.get_tracer("test")
    provider.shutdown()


@contextmanager
def _span(tracer: Tracer, name: str, **attributes: object) -> Iterator[Span]:
    with tracer.start_as_current_span(name, attributes=attributes) as span:  # type: ignore[arg-type]
        yield span


def _oi_llm(
    tracer: Tracer,
    prompt: str,
    reply: dict[str, object],
    tokens: tuple[int, int],
    *,
    then: dict[str, object] | None = None,
) -> None:
    """An OpenInference LLM span; ``then``: more of its input messages (flattened)."""
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": prompt,
        "llm.token_count.prompt": tokens[0],
        "llm.token_count.completion": tokens[1],
    }
    attributes.update({f"llm.output_messages.0.message.{k}": v for k, v in reply.items()})
    attributes.update(then or {})
    with _span(tracer, "response", **attributes):
        pass


def test_openinference_spans_read_as_a_run(tracer: Tracer, events: list[Event]) -> None:
    with _span(tracer, "Agent workflow", **{"openinference.span.kind": "AGENT"}):
        with _span(tracer, "turn", **{"openinference.span.kind": "CHAIN"}):
            _oi_llm(
                tracer,
                "Weather in Oslo?",
                {
                    "role": "assistant",
                    "tool_calls.0.tool_call.id": "w1",
                    "tool_calls.0.tool_call.function.name": "weather",
                    "tool_calls.0.tool_call.function.arguments": '{"city": "Oslo"}',
                },
                (40, 12),
            )
            with _span(
                tracer,
                "weather",
                **{
                    "openinference.span.kind": "TOOL",
                    "tool.name": "weather",
                    "input.value": json.dumps({"city": "Oslo"}),
                    "output.value": "rain",
                },
            ):
                pass
        _oi_llm(
            tracer,
            "Weather in Oslo?",
            {"role": "assistant", "content": "Rain."},
            (60, 3),
            then={
                "llm.input_messages.1.message.role": "assistant",
                "llm.input_messages.1.message.tool_calls.0.tool_call.id": "w1",
                "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "weather",
                "llm.input_messages.1.message.tool_calls.0.tool_call.function.arguments": (
                    '{"city": "Oslo"}'
                ),
                "llm.input_messages.2.message.role": "tool",
                "llm.input_messages.2.message.tool_call_id": "w1",
                "llm.input_messages.2.message.content": "rain",
            },
        )

    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert (end.usage.input_tokens, end.usage.output_tokens, end.usage.estimated) == (
        100,
        15,
        False,
    )
    priced = price_of(Usage(input_tokens=100, output_tokens=15, requests=2), "gpt-4o")
    assert priced is not None
    assert end.usage.cost_usd == priced.total
    assert (end.final_text, end.rounds) == ("Rain.", 2)
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (dispatch.name, dispatch.args, dispatch.status, dispatch.content, dispatch.round) == (
        "weather",
        {"city": "Oslo"},
        "success",
        "rain",
        1,
    )
    assert dispatch.tool_call_id == "w1"  # the span names no call: matched by tool and args
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert [c.tool_calls[0].id for c in called if c.tool_calls] == ["w1"]
    said = [(m.type, m.text) for m in transcript(events)]
    assert said == [("human", "Weather in Oslo?"), ("ai", ""), ("tool", "rain"), ("ai", "Rain.")]


def test_the_older_genai_names_and_an_error_status(tracer: Tracer, events: list[Event]) -> None:
    with _span(tracer, "invoke_agent helper", **{"gen_ai.operation.name": "invoke_agent"}) as agent:
        with _span(
            tracer,
            "chat gpt-4o-mini",
            **{
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.prompt_tokens": 21,
                "gen_ai.usage.completion_tokens": 8,
                "gen_ai.response.finish_reasons": ("tool_calls",),
            },
        ):
            pass
        with _span(
            tracer, "execute_tool lookup", **{"gen_ai.operation.name": "execute_tool"}
        ) as tool:
            tool.set_status(Status(StatusCode.ERROR, "KeyError: 'x'"))
            tool.set_attribute("error.type", "KeyError")
        agent.set_status(Status(StatusCode.ERROR, "gave up"))

    start, end = events[0], events[-1]
    assert isinstance(start, LoopStarted)
    assert (start.name, start.source) == ("helper", "otel")
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert (called.usage.input_tokens, called.usage.output_tokens) == (21, 8)
    assert (called.model_name, called.finish_reason) == ("gpt-4o-mini", "tool_calls")
    assert called.usage.cost_usd is not None
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (dispatch.name, dispatch.status, dispatch.error_type) == ("lookup", "error", "KeyError")
    assert isinstance(end, LoopFailed)
    assert (end.outcome, end.message, end.usage.input_tokens) == ("failed", "gave up", 21)


def test_missing_usage_is_estimated_and_an_unknown_model_unpriced(
    tracer: Tracer, events: list[Event]
) -> None:
    with (
        _span(tracer, "invoke_agent", **{"gen_ai.operation.name": "invoke_agent"}),
        _span(
            tracer,
            "chat house-model",
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "house-model",
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": "Say hello " * 20}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}]
                ),
            },
        ),
    ):
        pass
    (called,) = [e for e in events if isinstance(e, ModelCalled)]
    assert called.usage.estimated
    assert called.usage.output_tokens == 5  # what the span gave is kept
    assert called.usage.input_tokens > 0  # estimated from the recorded prompt, never zero
    assert called.usage.cost_usd is None
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.usage.cost_usd is None
    assert RunView.from_events(events).usage.cost_usd is None


def test_a_bare_client_call_is_a_run_of_its_own(tracer: Tracer, events: list[Event]) -> None:
    with _span(
        tracer,
        "chat gpt-4o",
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.usage.input_tokens": 9,
            "gen_ai.usage.output_tokens": 2,
        },
    ):
        pass
    assert [e.kind for e in events] == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "loop_finish",
    ]
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.usage.input_tokens == 9


def test_a_call_inside_a_call_is_counted_once(tracer: Tracer, events: list[Event]) -> None:
    usage = {"gen_ai.usage.input_tokens": 9, "gen_ai.usage.output_tokens": 2}
    chat = {"gen_ai.operation.name": "chat", **usage}
    with (
        _span(tracer, "invoke_agent", **{"gen_ai.operation.name": "invoke_agent"}),
        _span(tracer, "chat outer", **chat),
        _span(tracer, "chat inner", **chat),
    ):
        pass
    assert sum(isinstance(e, ModelCallStarted) for e in events) == 1
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.usage.input_tokens == 9


def test_spans_from_many_threads_keep_each_run_whole(tracer: Tracer, events: list[Event]) -> None:
    def one_run(n: int) -> None:
        with _span(tracer, f"invoke_agent a{n}", **{"gen_ai.operation.name": "invoke_agent"}):
            for round_ in range(5):
                with _span(
                    tracer,
                    "chat",
                    **{
                        "gen_ai.operation.name": "chat",
                        "gen_ai.usage.input_tokens": n + 1,
                        "gen_ai.usage.output_tokens": round_ + 1,
                    },
                ):
                    pass
                with _span(
                    tracer,
                    "execute_tool t",
                    **{
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.call.id": f"{n}-{round_}",
                    },
                ):
                    pass

    threads = [threading.Thread(target=one_run, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    runs = by_run(events)
    assert len(runs) == 8
    for stream in runs.values():
        start = stream[0]
        assert isinstance(start, LoopStarted)
        n = int((start.name or "")[1:])
        end = stream[-1]
        assert isinstance(end, LoopFinished)
        assert (end.rounds, end.usage.input_tokens, end.usage.output_tokens) == (
            5,
            5 * (n + 1),
            15,
        )
        assert sum(isinstance(e, ToolDispatched) for e in stream) == 5
        assert [e.t for e in stream] == sorted(e.t for e in stream)


def test_a_run_ending_before_its_tool_closes_the_tool_as_stopped(
    tracer: Tracer, events: list[Event]
) -> None:
    agent = tracer.start_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"})
    context = set_span_in_context(agent)
    tool = tracer.start_span(
        "execute_tool slow", context=context, attributes={"gen_ai.operation.name": "execute_tool"}
    )
    agent.end()
    tool.end()  # too late: its run has ended
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (dispatch.name, dispatch.status, dispatch.error_reason) == (
        "slow",
        "cancelled",
        "cancelled",
    )
    assert events[-1].kind == "loop_finish"
    assert sum(isinstance(e, ToolDispatched) for e in events) == 1


def test_a_run_whose_spans_never_end_fails_as_incomplete_at_shutdown() -> None:
    events: list[Event] = []
    provider = TracerProvider()
    source = SpanSource(events.append)
    provider.add_span_processor(source)
    tracer = provider.get_tracer("test")
    tracer.start_span("invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"})
    assert len(source.open_runs) == 1
    provider.shutdown()
    end = events[-1]
    assert isinstance(end, LoopFailed)
    assert (end.error_type, end.outcome) == ("incomplete", "failed")
    assert source.open_runs == ()
