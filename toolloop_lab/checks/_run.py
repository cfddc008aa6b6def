"""One run as checks read it, from anything the package can read as a run.

A finished run (its result), the error a failed run raised (its partial events), a list of
events, a trace (a path or a ``TraceRead``), a recording (a path or a ``Recording``: played
back through the loop, :mod:`toolloop_lab._replay.recorded_run`), a bridged or a spans-in
run's events: each comes down to one run's events, picked by the one rule
(:func:`~toolloop_lab.events.select_run`), and folded once by
:class:`~toolloop_lab._runview.RunView`. Every check reads that fold, never a fold of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.recording_file import Recording, looks_like_recording
from toolloop_lab._runview import RunView
from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, clip
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._support.words import estimated, outcome_text, tool_outcome
from toolloop_lab._trace import TraceRead, read_trace
from toolloop_lab.errors import ConfigurationError, PartialRun
from toolloop_lab.events import (
    EVENT_TYPES,
    Event,
    LoopFailed,
    LoopFinished,
    Outcome,
    select_run,
)

_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())
ARGS_CHARS: Final = 120
"""Characters of a call's arguments a check's evidence shows."""
TAKES: Final = (
    "a ToolLoopResult, the error a failed run raised, a list of events, a trace (a path or "
    "a TraceRead) or a recording (a path or a Recording)"
)
"""What checks take as a run, as their refusal says it."""


@dataclass(frozen=True, slots=True)
class CallSeen:
    """One tool call of the run, as the model asked for it and as it ended."""

    round: int
    id: str
    name: str
    args: Mapping[str, Any]
    """The arguments it ran with (a person's edit at a pause included), as plain data."""
    status: str
    """``success``, ``error``, ``cancelled``, or ``pending`` (no result in the events)."""
    error_reason: str | None = None
    ran: bool = True
    content: str = ""
    """The result the model read."""
    error_type: str | None = None

    @property
    def text(self) -> str:
        """``lookup(ticket=7)``: the call as a person reads it, clipped."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{clip(self.name, NAME_CHARS)}({clip(args, ARGS_CHARS)})"

    @property
    def where(self) -> str:
        """``lookup(ticket=7) in round 2 [call_x1]``: the call and where it was made."""
        return f"{self.text} in round {self.round} [{clip(self.id, ID_CHARS)}]"

    @property
    def ended(self) -> str:
        """How it ended, in the words every view uses (``ok``, ``raised ValueError``)."""
        return tool_outcome(
            self.status, self.error_reason, ran=self.ran, error_type=self.error_type
        )


@dataclass(frozen=True, slots=True)
class CheckedRun:
    """One run, read once for every check: its events, its fold, its tool calls."""

    events: tuple[Event, ...] = field(repr=False)
    """The run's own events, in order (one run, picked by ``select_run``)."""
    source: str
    """What the run was read from, as a report names it (``result``, ``trace 'x.jsonl'``)."""
    view: RunView = field(repr=False, compare=False)
    """The one fold of the events: what every view of the run reads."""
    calls: tuple[CallSeen, ...] = field(repr=False)
    """Every tool call of the run, in order: round by round, in the order the model asked."""

    @classmethod
    def of(cls, events: Sequence[Event], source: str) -> CheckedRun:
        """``events`` (one run's) read for checks."""
        stream = tuple(events)
        view = RunView.from_events(stream)
        seen: list[CallSeen] = []
        for row in view.rounds:
            for tool in row.tools:
                seen.append(
                    CallSeen(
                        round=row.number,
                        id=tool.id,
                        name=tool.name,
                        args=thaw(tool.args),
                        status=tool.status,
                        error_reason=tool.error_reason,
                        ran=tool.ran,
                        content=tool.content,
                        error_type=tool.error_type,
                    )
                )
        return cls(stream, source, view, tuple(seen))

    @property
    def run_id(self) -> str:
        """The id every event of the run carries."""
        return self.events[0].run_id

    @property
    def end(self) -> LoopFinished | LoopFailed | None:
        """The run's closing event (``None`` when its events stop before it)."""
        return self.view.finished or self.view.failure

    @property
    def outcome(self) -> Outcome | None:
        """How the run ended (``None`` when its events stop before its end)."""
        end = self.end
        return None if end is None else end.outcome

    @property
    def answer(self) -> str | None:
        """The final answer; ``None`` for a run that gave none (it failed, was stopped,
        or a LangGraph run waits at ``interrupt()``)."""
        end = self.view.finished
        if end is None or end.outcome == "interrupted":
            return None
        return end.final_text

    @property
    def last_round(self) -> int | None:
        """The number of the run's last round (the final-answer call's included)."""
        numbers = [row.number for row in self.view.rounds if row.number > 0]
        return numbers[-1] if numbers else None

    @property
    def said(self) -> str:
        """How the run ended and what it spent, in a line (``Answered: 2 tool rounds, 3
        model calls, 1,234 tokens, $0.00038``)."""
        view = self.view
        end = self.end
        how = "still running (its events stop before its end)"
        if end is not None:
            reason = end.synthesis_reason if isinstance(end, LoopFinished) else None
            how = outcome_text(end.outcome, reason)
        usage = view.usage
        note = estimated(usage.estimated)
        return (
            f"{how}: {view.tool_rounds} tool round{'s' * (view.tool_rounds != 1)}, "
            f"{view.model_calls} model call{'s' * (view.model_calls != 1)}, "
            f"{format_tokens(usage.total_tokens)} tokens, {format_usd(usage.cost_usd)}"
            + (f" ({note})" if note else "")
        )


def _sequence_events(source: Sequence[Any]) -> tuple[Event, ...]:
    events = tuple(source)
    stray = next((i for i, e in enumerate(events) if not isinstance(e, _EVENT_CLASSES)), -1)
    if stray >= 0:
        raise ConfigurationError(
            f"checks take {TAKES}; got a {type(source).__name__} whose item {stray} is a "
            f"{type(events[stray]).__name__}, not an event",
            field="run",
        )
    return events


def _source_events(source: Any) -> tuple[tuple[Event, ...], str]:
    """The events ``source`` holds and how a report names it."""
    if isinstance(source, ToolLoopResult):
        return source.events, "result"
    if isinstance(source, PartialRun) and isinstance(source, BaseException):
        return tuple(source.events), f"the {type(source).__name__} the run raised"
    if isinstance(source, TraceRead):
        return source.events, f"trace {clip(str(source.path), NAME_CHARS)!r}"
    if isinstance(source, Recording):
        return _played(source, None, source.path)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if looks_like_recording(path):
            from toolloop_lab.checks._saved import saved_settings

            return _played(Recording.from_file(path), saved_settings(path), str(path))
        read = read_trace(path)
        return read.events, f"trace {clip(str(read.path), NAME_CHARS)!r}"
    if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        return _sequence_events(source), "events"
    raise ConfigurationError(f"checks take {TAKES}, not {type(source).__name__}", field="run")


def _played(recording: Recording, settings: Any, path: str | None) -> tuple[tuple[Event, ...], str]:
    """A recording played back through the loop (its recorded replies and tool results),
    refused when it holds more than one run's calls."""
    from toolloop_lab._replay.recorded_run import replay_recording
    from toolloop_lab._support.sync_runner import run_sync

    played = run_sync(lambda: replay_recording(recording, settings))
    where = f"recording {clip(path, NAME_CHARS)!r}" if path else "a recording"
    if played.unused and played.run.result is not None:
        raise ConfigurationError(
            f"{where} holds {played.unused} more model call(s) than its run made: a "
            "recording of several runs cannot be played back as one (record each run to a "
            "file of its own, or replay it in a test that makes the same runs)",
            field="run",
        )
    return played.run.events, f"{where}, played back"


def read_run(source: Any, run_id: str | None = None) -> CheckedRun:
    """The run ``source`` holds, read for checks (see the module's docs); of several runs,
    ``run_id``'s, else the newest top-level run."""
    if isinstance(source, CheckedRun) and run_id in (None, source.run_id):
        return source
    if isinstance(source, CheckedRun):
        events, where = source.events, source.source
    else:
        events, where = _source_events(source)
    if not events:
        raise ConfigurationError(f"{where} holds no events: there is no run to check", field="run")
    return CheckedRun.of(select_run(events, run_id, where=where), where)
