"""What a fork takes from its source: the conversation its first call is sent, and the
figures of the rounds before it.

A source is a finished run (a :class:`~toolloop_lab._engine.agent.ToolLoopResult`), its events,
a trace (path or :class:`~toolloop_lab._trace.TraceRead`) or a recording (path or
:class:`~toolloop_lab._replay.recording_file.Recording`). Of events and traces, the run is picked
by the one rule (:func:`~toolloop_lab.events.select_run`); a trace whose rounds taken touch
a line the reader had to skip is refused (the fork would start from a conversation that
lacks it).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._replay.fork.result import RoundFigures, SourceKind, rows_of_view
from toolloop_lab._replay.recording_file import Recording, looks_like_recording
from toolloop_lab._runview import RunView
from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import message_from_dict
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._trace import TraceRead, read_trace
from toolloop_lab.errors import ConfigurationError, TraceError
from toolloop_lab.events import (
    EVENT_TYPES,
    Event,
    Intervention,
    LoopStarted,
    ModelCallStarted,
    select_run,
)

ForkSource: TypeAlias = (
    "ToolLoopResult | Sequence[Event] | TraceRead | Recording | str | os.PathLike[str]"
)
"""What :func:`fork` accepts: a finished run, its events (a failed run's ``error.events``
too), a trace (path or :class:`~toolloop_lab._trace.TraceRead`) or a recording (path or
:class:`~toolloop_lab._replay.recording_file.Recording`)."""

_SYNTHESIS: Final = "synthesis"
_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())
ASKED: Final = 3
"""Requests of the original kept from the fork's call on, per model (enough to tell apart
runs that sent the same first request)."""


@dataclass(frozen=True, slots=True)
class Taken:
    """What a source says about itself and about the rounds before ``at_round``."""

    kind: SourceKind
    prefix: tuple[BaseMessage, ...]
    taken: Usage
    rounds: tuple[RoundFigures, ...]
    figures: RunFigures
    started: LoopStarted | None = None
    at: ModelCallStarted | None = None
    """The event of the call the fork makes again (events and traces only)."""
    asked: tuple[tuple[BaseMessage, ...], ...] = ()
    """What the original sent its model from the fork's call on (the first few requests,
    whole): a model that made the run is found where it answered them."""
    pruned: tuple[tuple[BaseMessage, ...], ...] = ()
    """What the original sent its pruning model from the fork's round on (the first few)."""


def _bad_round(at_round: int, available: int) -> ConfigurationError:
    where = f"rounds 1 to {available}" if available else "no round"
    return ConfigurationError(
        f"cannot fork at round {at_round}: the source has {where}", field="at_round"
    )


def read_source(source: Any, at_round: int, run_id: str | None, prices: PriceTable | None) -> Taken:
    """What ``source`` (see :data:`ForkSource`) says about the rounds before ``at_round``;
    a round it lacks, or a source of another kind, raises a ``ConfigurationError``."""
    if isinstance(at_round, bool) or not isinstance(at_round, int) or at_round < 1:
        raise ConfigurationError(
            f"at_round must be a round number (1, 2, ...), got {at_round!r}", field="at_round"
        )
    if isinstance(source, ToolLoopResult):
        return _from_events(source.events, at_round, "result", run_id, source.messages)
    if isinstance(source, Recording):
        return _from_recording(source, at_round, prices)
    if isinstance(source, TraceRead):
        return _from_trace(source, at_round, run_id)
    if isinstance(source, (str, os.PathLike)):
        if looks_like_recording(source):
            return _from_recording(Recording.from_file(source), at_round, prices)
        return _from_trace(read_trace(source), at_round, run_id)
    if isinstance(source, Sequence) and all(isinstance(e, _EVENT_CLASSES) for e in source):
        return _from_events(tuple(source), at_round, "events", run_id)
    raise ConfigurationError(
        "fork needs a ToolLoopResult, its events, a trace or a recording (a path or the "
        f"loaded object), not {type(source).__name__}",
        field="source",
    )


def _run_events(
    events: Sequence[Event], run_id: str | None, where: str = "the source"
) -> tuple[Event, ...]:
    """The events of one run, by the one rule (:func:`~toolloop_lab.events.select_run`):
    ``run_id``'s, else the newest top-level run."""
    if not events:
        raise ConfigurationError("the source holds no events", field="source")
    return select_run(events, run_id, where=where)


def _from_events(
    events: Sequence[Event],
    at_round: int,
    kind: SourceKind,
    run_id: str | None,
    messages: Sequence[BaseMessage] | None = None,
) -> Taken:
    run = _run_events(events, run_id)
    carried: list[Any] = []
    appended = 0
    target: ModelCallStarted | None = None
    available = 0
    for event in run:
        if (
            isinstance(event, Intervention)
            and event.round == at_round
            and event.stage == "model_call"
            and event.action == "append_message"
        ):
            appended += 1
        if not isinstance(event, ModelCallStarted) or event.purpose == "pruning":
            continue
        available = max(available, event.round)
        if event.round == at_round:
            target = event
            break
        carried.extend(event.messages)
    if target is None:
        raise _bad_round(at_round, available)
    own = list(target.messages)
    if target.purpose == _SYNTHESIS:  # the synthesis prompt, and what was added after it
        own = own[: len(own) - appended - 1]
    carried.extend(own)
    if messages is not None:
        prefix = tuple(messages[: len(carried)])
    else:
        prefix = tuple(message_from_dict(d) for d in thaw(carried))
    view = RunView.from_events(run)
    figures = RunFigures.of_view(view)
    rows = rows_of_view(view, figures.outcome)
    taken = Usage()
    for row in rows:
        if row.round < at_round:
            taken = taken + row.usage
    started = view.started
    asked, pruned = _requests_from(run, at_round)
    return Taken(kind, prefix, taken, rows, figures, started, target, asked, pruned)


def _requests_from(
    run: Sequence[Event], at_round: int
) -> tuple[tuple[tuple[BaseMessage, ...], ...], tuple[tuple[BaseMessage, ...], ...]]:
    """The first :data:`ASKED` requests the run sent its model, and its pruning model,
    from round ``at_round`` on, whole (a call's event holds only what is new to it)."""
    carried: list[Any] = []
    asked: list[tuple[Any, ...]] = []
    pruned: list[tuple[Any, ...]] = []
    for event in run:
        if not isinstance(event, ModelCallStarted):
            continue
        if event.purpose == "pruning":
            if event.round >= at_round and len(pruned) < ASKED:
                pruned.append(tuple(event.messages))
        else:
            carried.extend(event.messages)
            if event.round >= at_round and len(asked) < ASKED:
                asked.append(tuple(carried))
        if len(asked) == len(pruned) == ASKED:
            break

    def rebuilt(requests: list[tuple[Any, ...]]) -> tuple[tuple[BaseMessage, ...], ...]:
        return tuple(tuple(message_from_dict(d) for d in thaw(r)) for r in requests)

    return rebuilt(asked), rebuilt(pruned)


def _from_trace(trace: TraceRead, at_round: int, run_id: str | None) -> Taken:
    """A trace's run, refused when the rounds taken touch a line the reader skipped: the
    fork would start from a conversation that lacks what that line held."""
    run = _run_events(trace.events, run_id, repr(str(trace.path)))
    try:
        taken = _from_events(run, at_round, "trace", run[0].run_id)
    except ConfigurationError as exc:
        lines = _skipped_lines(trace, run, None) if exc.field == "at_round" else ()
        if lines:  # the round asked for may be on one of them
            raise _damaged(trace, at_round, lines) from exc
        raise
    lines = _skipped_lines(trace, run, taken.at)
    if lines:
        raise _damaged(trace, at_round, lines)
    return taken


def _skipped_lines(
    trace: TraceRead, run: Sequence[Event], target: ModelCallStarted | None
) -> tuple[int, ...]:
    """The skipped lines from the run's start to the fork's call (to the end without
    one) that may be the run's: those naming it, and those naming no run at all."""
    if not trace.skipped:
        return ()
    known = len(trace.lines) == len(trace.events)
    where = {id(e): n for e, n in zip(trace.events, trace.lines, strict=True)} if known else {}
    start = next((where.get(id(e), 0) for e in run if isinstance(e, LoopStarted)), 0)
    end = where.get(id(target), math.inf) if target is not None else math.inf
    wanted = run[0].run_id
    return tuple(
        s.number for s in trace.skipped if start < s.number < end and s.run_id in (None, wanted)
    )


def _damaged(trace: TraceRead, at_round: int, lines: Sequence[int]) -> TraceError:
    named = ", ".join(str(n) for n in lines)
    reasons = {s.number: s.reason for s in trace.skipped}
    return TraceError(
        f"cannot fork at round {at_round} of {str(trace.path)!r}: the rounds taken need "
        f"line{'s' if len(lines) > 1 else ''} {named}, which could not be read "
        f"({reasons[lines[0]]}); a fork from there would start from a conversation that "
        "lacks them",
        lines=lines,
    )


def _from_recording(rec: Recording, at_round: int, prices: PriceTable | None) -> Taken:
    figures = RunFigures.of_recording(rec, prices)
    status = {  # every tool result the recorded requests carried, by call id
        m.tool_call_id: m.status
        for call in rec.calls
        for m in call.request
        if isinstance(m, ToolMessage)
    }
    rows: list[RoundFigures] = []
    target: int | None = None
    number = 0
    for index, call in enumerate(rec.calls):
        purpose: Literal["round", "synthesis"] = "round" if call.tools_bound else "synthesis"
        number += 1
        if number == at_round and target is None:
            target = index
        reply = call.response
        ids = [c.get("id") for c in (*reply.tool_calls, *reply.invalid_tool_calls)] if reply else []
        last = index == len(rec.calls) - 1
        rows.append(
            RoundFigures(
                round=number,
                purpose=purpose,
                usage=call.usage(prices),
                tool_calls=len(ids),
                tool_errors=sum(1 for i in ids if status.get(str(i)) == "error"),
                outcome=figures.outcome if last else "tools",
            )
        )
    if target is None:
        raise _bad_round(at_round, number)
    request = list(rec.calls[target].request)
    if not rec.calls[target].tools_bound:  # synthesis: drop its prompt and what followed it
        while request and isinstance(request[-1], HumanMessage):
            request.pop()
    taken = Usage()
    for call in rec.calls[:target]:
        taken = taken + call.usage(prices)
    asked = tuple(tuple(call.request) for call in rec.calls[target : target + ASKED])
    return Taken("recording", tuple(request), taken, tuple(rows), figures, asked=asked)
