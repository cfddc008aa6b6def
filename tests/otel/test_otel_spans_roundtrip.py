"""Our own ``LLMAgent`` exported by ``OTelObserver`` and read back by ``SpanSource`` on the
same provider, on every catalog run: the conversation, the usage, the cost, the tool
statuses and the outcome read back equal the run's own events, for everything spans carry
(content only with ``capture_content=True``)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from opentelemetry.sdk.trace import TracerProvider

from toolloop_lab import usd_budget
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ToolDispatched,
    transcript,
)
from toolloop_lab.lab import Scenario, catalog
from toolloop_lab.otel import OTelObserver, SpanSource


def _said(messages: list[BaseMessage]) -> list[tuple[Any, ...]]:
    """What a message says, as spans can carry it (no ids, no provider metadata)."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        calls = [(c["id"], c["name"], c["args"]) for c in getattr(m, "tool_calls", ())]
        call_id = m.tool_call_id if isinstance(m, ToolMessage) else None
        out.append((m.type, m.text, calls if isinstance(m, AIMessage) else None, call_id))
    return out


async def _both(scenario: Scenario) -> tuple[list[Event], list[Event]]:
    provider = TracerProvider()
    back: list[Event] = []
    provider.add_span_processor(SpanSource(back.append, prices=scenario.prices))
    observer = OTelObserver(provider, capture_content=True, use_current_context=False)
    events: list[Event] = []
    agent = scenario.build_agent([observer, events.append])
    try:
        with usd_budget(scenario.usd_limit, prices=scenario.prices):
            await agent.arun(scenario.messages[0])
    except ToolLoopLabError:
        pass  # failing scenarios fail on purpose
    provider.shutdown()
    return events, back


@pytest.mark.parametrize("scenario", catalog(), ids=lambda s: s.name)
async def test_a_catalog_run_reads_back_as_itself(scenario: Scenario) -> None:
    events, back = await _both(scenario)
    end, read = events[-1], back[-1]
    assert isinstance(end, (LoopFinished, LoopFailed))
    assert isinstance(read, type(end))
    assert read.run_id == end.run_id
    assert read.outcome == end.outcome
    assert read.usage == end.usage
    assert read.rounds == end.rounds
    statuses = [
        (e.tool_call_id, e.name, e.status, e.error_reason, e.ran)
        for e in events
        if isinstance(e, ToolDispatched)
    ]
    assert statuses == [
        (e.tool_call_id, e.name, e.status, e.error_reason, e.ran)
        for e in back
        if isinstance(e, ToolDispatched)
    ]
    if any(isinstance(e, LoopStarted) for e in events):  # a refused run has no conversation
        assert _said(transcript(back)) == _said(transcript(events))
    if isinstance(end, LoopFinished):
        assert isinstance(read, LoopFinished)
        assert read.final_text == end.final_text


def test_a_summarization_call_exports_and_reads_back_as_one() -> None:
    """A create_agent run with LangChain's SummarizationMiddleware: its summarization call
    is a chat span with its purpose, and reads back as a summarization call, not a round."""
    from browser.streams import summarized_run

    from toolloop_lab.events import ModelCalled

    events = summarized_run()
    provider = TracerProvider()
    back: list[Event] = []
    provider.add_span_processor(SpanSource(back.append))
    observer = OTelObserver(provider, capture_content=True, use_current_context=False)
    for event in events:
        observer(event)
    provider.shutdown()

    def calls(stream: list[Event]) -> list[tuple[str, int, int]]:
        return [
            (e.purpose, e.usage.input_tokens, e.usage.output_tokens)
            for e in stream
            if isinstance(e, ModelCalled)
        ]

    assert calls(back) == calls(events)
    assert [p for p, _i, _o in calls(events)] == ["round", "round", "summarization", "round"]
    end, read = events[-1], back[-1]
    assert isinstance(read, LoopFinished)
    assert isinstance(end, LoopFinished)
    assert (read.usage, read.rounds) == (end.usage, end.rounds)
