"""The checks every hostile case makes, whatever it threw at the loop.

A run ends in one of three ways: a final answer, an error ``ToolMessage`` the model reads,
or a typed error that keeps its partial counts. Whichever it is, these hold:

* the events are complete: ``LoopStarted`` first (unless the run failed before it could
  start), exactly one ``LoopFinished``/``LoopFailed`` and it is last, one run id, a clock
  that never goes back, one ``ToolDispatched`` per tool-call id the model asked for;
* every tool-call id in the transcript is answered by exactly one ``ToolMessage``, after
  the ``AIMessage`` that asked for it, and the event says what the message says;
* the final event's usage is the sum of every model call's (pruning included, and what a
  failed call's provider reported), and an error's partial counts are that same sum;
* every event survives its trip through a trace line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab import LLMAgent, ToolLoopResult, Usage
from toolloop_lab._stream import message_dicts, message_from_dict
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._trace import encode_event
from toolloop_lab.errors import PartialRun
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallFailed,
    ModelCallStarted,
    ModelDelta,
    Pruned,
    ToolDispatched,
    ToolStarted,
    parse_event,
    transcript,
)

__all__ = [
    "SAFETY_S",
    "asked_ids",
    "call_usage",
    "cancel_when",
    "cancelled_failure",
    "check_events",
    "check_messages",
    "check_partial",
    "check_result",
    "dispatched",
    "dumped",
    "kinds",
    "only",
    "stubborn_tool",
    "tool_messages",
]


def asked_ids(events: Iterable[Event]) -> list[str]:
    """Every tool-call id the model asked for, in order (ModelCalled events)."""
    return [c.id for e in events if isinstance(e, ModelCalled) for c in e.tool_calls]


def dispatched(events: Iterable[Event]) -> dict[str, ToolDispatched]:
    """The ToolDispatched event of each tool-call id."""
    return {e.tool_call_id: e for e in events if isinstance(e, ToolDispatched)}


def tool_messages(messages: Iterable[BaseMessage]) -> dict[str, ToolMessage]:
    """The ToolMessage answering each tool-call id."""
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def dumped(events: Iterable[Event], messages: Iterable[BaseMessage] = ()) -> str:
    """Everything the run produced as text: to search it for what must not be there."""
    parts = [encode_event(e).decode("ascii") for e in events]
    parts += [json.dumps(m.model_dump(), default=str) for m in messages]
    text = "\n".join(parts)
    # the trace escapes non-ASCII; search the decoded form too
    return text + "\n" + text.encode("ascii").decode("unicode_escape", "replace")


def check_events(events: Sequence[Event], *, started: bool = True) -> LoopFinished | LoopFailed:
    """Assert the stream is complete (see the module doc); return its final event."""
    assert events, "no events at all"
    assert len({e.run_id for e in events}) == 1
    if started:
        assert isinstance(events[0], LoopStarted), events[0]
    else:
        assert [e.kind for e in events] == ["loop_failure"]
    final = events[-1]
    assert isinstance(final, (LoopFinished, LoopFailed)), final
    assert [e for e in events if isinstance(e, (LoopFinished, LoopFailed))] == [final]
    times = [e.t for e in events]
    assert times == sorted(times)
    asked = asked_ids(events)
    assert len(asked) == len(set(asked)), f"repeated tool-call ids: {asked}"
    answered = [e.tool_call_id for e in events if isinstance(e, ToolDispatched)]
    assert Counter(answered) == Counter(asked), (answered, asked)
    spent = sum((u for u in map(call_usage, events) if u is not None), start=Usage())
    assert final.usage == spent
    check_starts(events, final)
    for event in events:
        back = parse_event(encode_event(event))  # the project's own reader
        assert back == event
    return final


def call_usage(event: Event) -> Usage | None:
    """What one event says a model call spent: a reply's usage, a pruning call's, or what a
    failed call's provider had reported before it failed (``None``: no spend here)."""
    if isinstance(event, (ModelCalled, Pruned)):
        return event.usage
    return event.usage if isinstance(event, ModelCallFailed) else None


def check_starts(events: Sequence[Event], final: LoopFinished | LoopFailed) -> None:
    """Every start event has its end: a tool that began has one result, after it; a model
    call that was sent has one reply (or the run failed during it), after it."""
    started = [e.tool_call_id for e in events if isinstance(e, ToolStarted)]
    assert len(started) == len(set(started)), started
    ends = {e.tool_call_id: i for i, e in enumerate(events) if isinstance(e, ToolDispatched)}
    for i, event in enumerate(events):
        if isinstance(event, ToolStarted):
            assert ends[event.tool_call_id] > i, event
    sent = [e.call for e in events if isinstance(e, ModelCallStarted)]
    assert sent == list(range(1, len(sent) + 1)), sent  # numbered in order, none skipped
    ended = [e.call for e in events if isinstance(e, (ModelCalled, Pruned, ModelCallFailed))]
    assert sorted(ended) == sent, (sent, ended)  # every call sent ends exactly once
    failed = [e for e in events if isinstance(e, ModelCallFailed)]
    assert not failed or isinstance(final, LoopFailed), failed
    for event in events:
        if isinstance(event, ModelDelta):
            assert event.call in sent


def check_messages(messages: Sequence[BaseMessage], events: Sequence[Event] = ()) -> None:
    """Every tool-call id is answered exactly once, after its request; the events agree."""
    asked: list[str] = []
    answered: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            asked += [str(c.get("id")) for c in message.tool_calls]
            asked += [str(c.get("id")) for c in message.invalid_tool_calls]
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in asked, f"{message.tool_call_id} answered unasked"
            answered.append(message.tool_call_id)
    assert len(asked) == len(set(asked)), f"repeated tool-call ids: {asked}"
    assert Counter(answered) == Counter(asked), (answered, asked)
    if events:
        pruned = {e.tool_call_id for e in events if isinstance(e, Pruned)}
        by_id = dispatched(events)
        assert set(by_id) == set(answered)
        for call_id, message in tool_messages(messages).items():
            event = by_id[call_id]
            # a call stopped while it ran reads to the model as a failed call
            assert message.status == ("error" if event.status == "cancelled" else event.status)
            assert (event.error_reason is None) == (message.status == "success")
            if call_id not in pruned:
                assert event.content == message.content


def check_result(result: ToolLoopResult) -> LoopFinished:
    """A finished run: complete events, every call answered, counts that add up."""
    final = check_events(result.events)
    assert isinstance(final, LoopFinished), final
    check_messages(result.messages, result.events)
    assert result.usage == final.usage
    assert result.rounds == final.rounds
    assert result.final_response.text == final.final_text
    assert (result.final_empty, result.final_truncated) == (
        final.final_empty,
        final.final_truncated,
    )
    check_transcript(result.events, result.messages)
    return final


def check_transcript(events: Sequence[Event], messages: Sequence[BaseMessage]) -> None:
    """The events alone rebuild the conversation: exactly, or (for messages holding
    values JSON cannot spell, like a NaN count) exactly as their JSON form."""
    rebuilt = transcript(events)
    if rebuilt == list(messages):
        return
    as_json = [message_from_dict(thaw(d)) for d in message_dicts(messages)]
    assert as_json != list(messages), "the transcript differs from JSON-safe messages"
    assert rebuilt == as_json


def check_partial(err: PartialRun, *, started: bool = True) -> LoopFailed:
    """A typed error: its partial counts, messages and events are those of the run."""
    final = check_events(err.events, started=started)
    assert isinstance(final, LoopFailed), final
    check_messages(err.messages, err.events)
    usage = final.usage
    assert (err.accumulated_prompt, err.accumulated_completion) == (
        usage.input_tokens,
        usage.output_tokens,
    )
    assert err.cost_usd == usage.cost_usd
    assert err.rounds == final.rounds
    assert err.any_invocation_made == final.any_invocation_made
    assert err.run_id == final.run_id
    if started:
        check_transcript(err.events, err.messages)
    return final


def kinds(events: Iterable[Event]) -> list[str]:
    """The kinds of ``events``, in order (for exact sequence assertions)."""
    return [e.kind for e in events]


def only(items: Iterable[Any]) -> Any:
    """The single item of ``items``."""
    (item,) = list(items)
    return item


# -- cancelling a run -----------------------------------------------------------------------
SAFETY_S = 60.0
"""Only a deadlock guard: how long a hostile case waits for anything before it calls the
run stuck (turns a hang into a failure, never a timing assertion)."""


async def cancel_when(
    agent: LLMAgent, ready: Callable[[], Awaitable[Any]], prompt: str = "go"
) -> None:
    """Start the run, wait until ``ready`` says it is where it should be, cancel it."""
    task = asyncio.create_task(agent.arun(prompt))
    waiter = asyncio.create_task(ready())
    done, _ = await asyncio.wait({task, waiter}, timeout=SAFETY_S, return_when="FIRST_COMPLETED")
    assert waiter in done, f"the run never got there: {task}"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY_S)
    assert task.cancelled()


def cancelled_failure(events: Sequence[Event]) -> LoopFailed:
    """The checked events of a cancelled run end in a ``LoopFailed`` that says so."""
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert (failed.cancelled, failed.error_type) == (True, "CancelledError")
    return failed


def stubborn_tool() -> tuple[BaseTool, asyncio.Event, asyncio.Event]:
    """A ``stubborn`` tool that swallows every cancellation until ``release`` is set; also
    its ``started`` event (set when a call begins) and ``release``."""
    started = asyncio.Event()
    release = asyncio.Event()

    async def stubborn() -> str:
        started.set()
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):  # ignores the stop
                await release.wait()
        return "done anyway"

    tool_ = StructuredTool.from_function(coroutine=stubborn, name="stubborn", description="S.")
    return tool_, started, release
