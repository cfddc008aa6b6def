"""Nothing the package emits is refused by its own reader, whichever producer emitted it.

Every producer turns numbers it does not control into events: our loop and its pruning
calls (a provider's usage), the LangChain callback bridge (a framework's model's usage),
and ``SpanSource`` (a span's counts and times). The event schema bounds each number
(``_support/fields.py``: a count is an int from 0 to 2**53, a time finite and >= 0) and the
trace reader (``events.parse_event``) applies those bounds; a producer must apply the same
ones, so that a count no event can hold is unknown (estimated, and flagged so), never a
number shown live and refused once saved. Each producer below meets such counts and every
event it emits must read back unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostilekit import check_events
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call, usage
from opentelemetry.sdk.trace import TracerProvider

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    RunView,
    ScriptedChatModel,
    TraceWriter,
    Usage,
    read_trace,
    watch,
)
from toolloop_lab._support.fields import MAX_INT
from toolloop_lab.events import Event, LoopFinished
from toolloop_lab.otel import SpanSource

HUGE = 2**62
"""A count past the schema's bound (``MAX_INT``), as a hostile provider or span says."""


def _huge_reply(text: str = "done") -> AIMessage:
    reply = final(text)
    return reply.model_copy(
        update={"usage_metadata": usage(HUGE, HUGE, cache_read=HUGE // 2, cache_write=HUGE // 4)}
    )


@tool
def fetch(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


def _loop(streaming: bool) -> list[Event]:
    events: list[Event] = []
    model = ScriptedChatModel(
        [calls(tool_call("fetch", {"size": 500}, "f1")), _huge_reply()], model_name=MODEL
    )
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100, streaming=streaming)
    pruner = ScriptedChatModel([_huge_reply("short")], model_name=MODEL)
    LLMAgent(model, [fetch], config, pruning_model=pruner, observers=[events.append]).run("go")
    return events


def _bridge() -> list[Event]:
    events: list[Event] = []
    model = ScriptedChatModel(
        [calls(tool_call("fetch", {"size": 5}, "f1")), _huge_reply()], model_name=MODEL
    )
    with watch(events.append):
        create_agent(model, [fetch]).invoke({"messages": [("user", "go")]})
    return events


def _spans() -> list[Event]:
    events: list[Event] = []
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("test")
    counts = {
        "gen_ai.usage.input_tokens": HUGE,
        "gen_ai.usage.output_tokens": HUGE,
        "gen_ai.usage.cache_read.input_tokens": HUGE,
    }
    agent = {"gen_ai.operation.name": "invoke_agent", "toolloop.rounds": 2**60}
    with tracer.start_as_current_span("invoke_agent", attributes=agent):
        for purpose in ("round", "pruning"):
            chat = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": MODEL,
                "toolloop.call.purpose": purpose,
                "toolloop.pruning.tokens_before": HUGE,
                **counts,
            }
            with tracer.start_as_current_span("chat", attributes=chat):
                pass
    provider.shutdown()
    return events


PRODUCERS: dict[str, Any] = {
    "loop": lambda: _loop(streaming=False),
    "loop_streamed": lambda: _loop(streaming=True),
    "bridge": _bridge,
    "spans": _spans,
}


@pytest.fixture(params=sorted(PRODUCERS))
def produced(request: pytest.FixtureRequest) -> list[Event]:
    events: list[Event] = PRODUCERS[request.param]()
    return events


def test_a_count_no_event_can_hold_is_unknown_and_every_event_reads_back(
    produced: list[Event], tmp_path: Path
) -> None:
    end = check_events(produced)  # every event read back by parse_event, unchanged
    assert isinstance(end, LoopFinished)
    assert end.usage.estimated  # the counts were not known: estimated, and said so
    for count in (end.usage.input_tokens, end.usage.output_tokens, end.rounds):
        assert count <= MAX_INT
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        for event in produced:
            writer(event)
    read = read_trace(path)
    assert read.skipped == ()
    live, saved = RunView.from_events(produced), RunView.from_events(read.events)
    assert (saved.status, saved.usage) == (live.status, live.usage)


def test_counts_each_within_the_schema_add_up_to_a_total_it_holds() -> None:
    at_bound = Usage(MAX_INT, MAX_INT, MAX_INT, 0, MAX_INT, cost_usd=None)
    total = at_bound + at_bound
    for count in (total.input_tokens, total.output_tokens, total.requests):
        assert count <= MAX_INT
    assert total.estimated  # a total past what an event holds is not exact: said so
    events: list[Event] = []
    replies = [
        final("a").model_copy(update={"usage_metadata": usage(MAX_INT, MAX_INT)}),
    ]
    model = ScriptedChatModel(
        [calls(tool_call("fetch", {"size": 1}, "f1"), tokens=(MAX_INT, MAX_INT)), *replies],
        model_name=MODEL,
    )
    LLMAgent(model, [fetch], observers=[events.append]).run("go")
    end = check_events(events)
    assert end.usage.estimated
