"""A real pydantic-ai ``Agent`` on its ``FunctionModel``, instrumented by pydantic-ai itself,
read back through :class:`SpanSource`: tool calls, a tool that asks for a retry, one that
fails, a failing model call retried, streaming, a sub-agent, and the events arriving while
the run is still in flight. Offline: the model is a Python function."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

from toolloop_lab import RunView, TokenPrice, Usage, read_trace
from toolloop_lab._runview import nested_run_ids
from toolloop_lab._spend.pricing import price_of
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    ToolDispatched,
    ToolStarted,
    by_run,
    transcript,
)
from toolloop_lab.otel import SpanSource, export_events, watch_spans

MODEL = "gpt-4o-mini"


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    provider = TracerProvider()
    yield provider
    provider.shutdown()


def _instrument(agent: Agent[None, str], provider: TracerProvider) -> None:
    agent.instrument = InstrumentationSettings(tracer_provider=provider)


def _calculator(provider: TracerProvider, *, fail_tool: bool = False) -> Agent[None, str]:
    """Round 1 asks for ``add`` and ``check`` (which asks for a retry once), round 2 for
    ``check`` again, round 3 answers; with ``fail_tool`` ``check`` raises instead."""
    replies = iter(
        [
            ModelResponse(
                parts=[
                    ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="c1"),
                    ToolCallPart("check", {"n": 3}, tool_call_id="c2"),
                ],
                usage=RequestUsage(input_tokens=11, output_tokens=7),
            ),
            ModelResponse(
                parts=[ToolCallPart("check", {"n": 3}, tool_call_id="c3")],
                usage=RequestUsage(input_tokens=23, output_tokens=5),
            ),
            ModelResponse(
                parts=[TextPart("1 + 2 = 3")], usage=RequestUsage(input_tokens=31, output_tokens=4)
            ),
        ]
    )

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return next(replies)

    agent: Agent[None, str] = Agent(FunctionModel(model, model_name=MODEL), name="calc")
    checked: list[int] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @agent.tool_plain
    def check(n: int) -> str:
        """Check a result."""
        if fail_tool:
            raise ValueError("the checker is broken")
        checked.append(n)
        if len(checked) == 1:
            raise ModelRetry("check it once more")
        return "ok"

    _instrument(agent, provider)
    return agent


def test_a_pydantic_ai_run_reads_as_our_events(provider: TracerProvider) -> None:
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    result = _calculator(provider).run_sync("What is 1 + 2?")

    start, end = events[0], events[-1]
    assert isinstance(start, LoopStarted)
    assert isinstance(end, LoopFinished)
    assert (start.source, start.name, start.model_name) == ("otel", "calc", MODEL)
    assert (end.outcome, end.final_text, end.rounds) == ("final_answer", "1 + 2 = 3", 3)
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert [(c.usage.input_tokens, c.usage.output_tokens) for c in called] == [
        (11, 7),
        (23, 5),
        (31, 4),
    ]
    assert not any(c.usage.estimated for c in called)
    usage = result.usage
    assert (end.usage.input_tokens, end.usage.output_tokens) == (
        usage.input_tokens,
        usage.output_tokens,
    )
    assert end.usage.requests == usage.requests == 3
    priced = price_of(Usage(input_tokens=65, output_tokens=16, requests=3), MODEL)
    assert priced is not None
    assert end.usage.cost_usd == priced.total
    # pydantic-ai runs a reply's tools at once, and each tool_dispatch comes as its call
    # ends: within a round the order is the order they finished, so compare by call id
    dispatched = sorted(
        (e for e in events if isinstance(e, ToolDispatched)), key=lambda d: d.tool_call_id
    )
    assert [(d.tool_call_id, d.name, d.status, d.round) for d in dispatched] == [
        ("c1", "add", "success", 1),
        ("c2", "check", "error", 1),
        ("c3", "check", "success", 2),
    ]
    assert dispatched[0].content == "3"
    assert dispatched[1].content == "check it once more"
    assert [e.tool_call_id for e in events if isinstance(e, ToolStarted)] == ["c1", "c2", "c3"]
    # pydantic-ai records a call's prompt at its end: a round shows the results it was sent
    sent = [[m["type"] for m in e.messages] for e in events if isinstance(e, ModelCallStarted)]
    assert sent == [[], ["human", "ai", "tool", "tool"], ["ai", "tool"]]
    said = [(m.type, m.text) for m in transcript(events)]
    # round 1's two results come in the order pydantic-ai sent them, the order they ended
    assert said[:2] + sorted(said[2:4]) + said[4:] == [
        ("human", "What is 1 + 2?"),
        ("ai", ""),
        ("tool", "3"),
        ("tool", "check it once more"),
        ("ai", ""),
        ("tool", "ok"),
        ("ai", "1 + 2 = 3"),
    ]
    view = RunView.from_events(events)
    assert (view.status, len(view.rounds), view.usage) == ("finished", 3, end.usage)


def test_prices_override_and_an_unknown_model_stays_unpriced(provider: TracerProvider) -> None:
    events: list[Event] = []
    mine = TokenPrice(input_mtok=Decimal(1), output_mtok=Decimal(2))
    provider.add_span_processor(SpanSource(events.append, prices={MODEL: mine}))
    _calculator(provider).run_sync("What is 1 + 2?")
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.usage.cost_usd == Decimal(65 * 1 + 16 * 2) / Decimal(1_000_000)

    other: list[Event] = []
    agent: Agent[None, str] = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("hi")]), model_name="no-such"),
    )
    fresh = TracerProvider()
    fresh.add_span_processor(SpanSource(other.append))
    _instrument(agent, fresh)
    agent.run_sync("hello")
    (called,) = [e for e in other if isinstance(e, ModelCalled)]
    assert called.usage.cost_usd is None
    assert called.usage.input_tokens > 0


def test_a_failing_tool_is_its_dispatch_error_and_the_run_fails(provider: TracerProvider) -> None:
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    with pytest.raises(ValueError, match="broken"):
        _calculator(provider, fail_tool=True).run_sync("What is 1 + 2?")
    # the two calls run at once: their dispatches come in the order they ended
    dispatched = sorted(
        (e for e in events if isinstance(e, ToolDispatched)), key=lambda d: d.tool_call_id
    )
    assert [(d.tool_call_id, d.status, d.error_type) for d in dispatched] == [
        ("c1", "success", None),
        ("c2", "error", "ValueError"),
    ]
    assert "the checker is broken" in dispatched[1].content
    end = events[-1]
    assert isinstance(end, LoopFailed)
    assert (end.outcome, end.error_type, end.rounds) == ("failed", "ValueError", 1)
    assert end.usage.input_tokens == 11


def test_a_failed_model_call_fails_its_run_and_the_next_run_is_its_own(
    provider: TracerProvider,
) -> None:
    calls = iter([RuntimeError("overloaded"), ModelResponse(parts=[TextPart("fine")])])

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = next(calls)
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, ModelResponse)
        return step

    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    agent: Agent[None, str] = Agent(FunctionModel(model, model_name=MODEL))
    _instrument(agent, provider)
    with pytest.raises(RuntimeError):
        agent.run_sync("hi")
    agent.run_sync("hi")  # a second run: the retry a person makes
    runs = by_run(events)
    first, second = runs.values()
    assert [e.kind for e in first][-2:] == ["model_call_failed", "loop_failure"]
    failed = first[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.message) == ("RuntimeError", "overloaded")
    assert [e.kind for e in second][-2:] == ["model_call", "loop_finish"]


def test_a_streamed_run_counts_what_pydantic_ai_counted(provider: TracerProvider) -> None:
    turns = iter([0, 1])

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        if next(turns) == 0:
            yield {0: DeltaToolCall(name="add", json_args='{"a": 2, ', tool_call_id="s1")}
            yield {0: DeltaToolCall(json_args='"b": 5}')}
        else:
            for piece in ("2 + 5 ", "= 7"):
                yield piece

    agent: Agent[None, str] = Agent(FunctionModel(stream_function=stream, model_name=MODEL))

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    _instrument(agent, provider)
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))

    async def go() -> tuple[str, int, int]:
        async with agent.run_stream("2 + 5?") as run:
            text = await run.get_output()
            usage = run.usage
        return text, usage.input_tokens, usage.output_tokens

    text, tokens_in, tokens_out = asyncio.run(go())
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert text == "2 + 5 = 7"
    assert (end.usage.input_tokens, end.usage.output_tokens) == (tokens_in, tokens_out)
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (dispatch.tool_call_id, dispatch.args, dispatch.content) == ("s1", {"a": 2, "b": 5}, "7")


def test_a_sub_agent_nests_under_the_tool_call_that_ran_it(provider: TracerProvider) -> None:
    inner: Agent[None, str] = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("42")]), model_name=MODEL),
        name="oracle",
    )
    replies = iter(
        [
            ModelResponse(parts=[ToolCallPart("ask", {"q": "meaning"}, tool_call_id="k1")]),
            ModelResponse(parts=[TextPart("It is 42.")]),
        ]
    )
    outer: Agent[None, str] = Agent(
        FunctionModel(lambda m, i: next(replies), model_name=MODEL), name="asker"
    )

    @outer.tool_plain
    async def ask(q: str) -> str:
        """Ask the oracle."""
        return (await inner.run(q)).output

    _instrument(outer, provider)
    _instrument(inner, provider)
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    outer.run_sync("What is the meaning?")

    starts = [e for e in events if isinstance(e, LoopStarted)]
    assert [s.name for s in starts] == ["asker", "oracle"]
    parent, child = starts
    assert (child.parent_run_id, child.parent_tool_call_id) == (parent.run_id, "k1")
    assert nested_run_ids(events, parent.run_id) == (child.run_id,)
    ends = {e.run_id: e for e in events if isinstance(e, LoopFinished)}
    assert ends[child.run_id].final_text == "42"
    assert ends[parent.run_id].final_text == "It is 42."
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert dispatch.run_id == parent.run_id
    assert dispatch.content == "42"


def test_events_arrive_while_the_run_is_in_flight(provider: TracerProvider) -> None:
    events: list[Event] = []
    seen_in_tool: list[str] = []
    replies = iter(
        [
            ModelResponse(parts=[ToolCallPart("look", {}, tool_call_id="l1")]),
            ModelResponse(parts=[TextPart("done")]),
        ]
    )
    agent: Agent[None, str] = Agent(FunctionModel(lambda m, i: next(replies), model_name=MODEL))

    @agent.tool_plain
    def look() -> str:
        """Look at what the debugger has seen so far."""
        seen_in_tool.extend(e.kind for e in events)
        return "seen"

    _instrument(agent, provider)
    provider.add_span_processor(SpanSource(events.append))
    agent.run_sync("go")
    assert seen_in_tool == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
    ]
    assert events[-1].kind == "loop_finish"


def test_watch_spans_takes_no_new_runs_after_its_block(provider: TracerProvider) -> None:
    events: list[Event] = []
    agent: Agent[None, str] = Agent(
        FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("hi")]), model_name=MODEL)
    )
    _instrument(agent, provider)
    with watch_spans(provider, events.append) as source:
        agent.run_sync("one")
        assert source.open_runs == ()
    agent.run_sync("two")
    assert [e.kind for e in events].count("loop_start") == 1
    assert next(e for e in events if isinstance(e, ModelCallStarted)).model_name == MODEL


def test_the_debugger_shows_a_span_run_and_says_it_cannot_drive_it(
    provider: TracerProvider,
) -> None:
    dbg = LoopDebugger()
    with watch_spans(provider, dbg):
        _calculator(provider).run_sync("What is 1 + 2?")
    assert dbg.view.status == "finished"
    assert dbg.view.usage.input_tokens == 65
    assert (dbg.reach.code, dbg.reach.pause, dbg.reach.stop) == ("spans", False, False)
    assert "OpenTelemetry spans" in (dbg.reach.why or "")
    assert not dbg.can_fork
    dbg.close()


def test_a_span_run_is_a_trace_a_replay_and_an_export_like_any_other(
    provider: TracerProvider, tmp_path: Path
) -> None:
    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    _calculator(provider).run_sync("What is 1 + 2?")

    path = write_trace(tmp_path / "run.jsonl", events)
    read = read_trace(path)
    assert read.skipped == ()
    assert list(read.events) == events  # the strict parser takes every event back
    replay = LoopDebugger.from_trace(path)
    assert replay.view.status == "finished"
    assert replay.view.usage == events[-1].usage  # type: ignore[union-attr]
    replay.close()

    exporter = InMemorySpanExporter()
    again = TracerProvider()
    again.add_span_processor(SimpleSpanProcessor(exporter))
    export_events(events, again)
    operations = [
        (s.attributes or {}).get("gen_ai.operation.name") for s in exporter.get_finished_spans()
    ]
    assert sorted(operations, key=str) == sorted(
        ["chat"] * 3 + ["execute_tool"] * 3 + ["invoke_agent"], key=str
    )


def test_the_lab_frames_read_a_span_run(provider: TracerProvider) -> None:
    pytest.importorskip("pandas")
    from toolloop_lab.lab import ScenarioRun
    from toolloop_lab.lab._frames import runs_frame, tools_frame

    events: list[Event] = []
    provider.add_span_processor(SpanSource(events.append))
    _calculator(provider).run_sync("What is 1 + 2?")
    record = ScenarioRun(
        scenario="calc",
        index=0,
        tags=(),
        description="a pydantic-ai agent read from its spans",
        model_name=MODEL,
        outcome="final_answer",
        error_kind=None,
        error_reason=None,
        error_message=None,
        duration_s=0.0,
        events=tuple(events),
    )
    (run,) = runs_frame([record]).to_dict("records")
    assert (run["rounds"], run["model_calls"], run["prompt_tokens"], run["completion_tokens"]) == (
        3,
        3,
        65,
        16,
    )
    assert (run["tool_calls"], run["tool_errors"], run["cost_known"]) == (3, 1, True)
    assert not run["usage_estimated"]
    tools = tools_frame([record])
    assert tools["status"].tolist() == ["success", "error", "success"]
