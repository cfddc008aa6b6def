"""``ScenarioRun``: what one scenario left behind — its outcome and its whole event stream.

This is the unit a sweep collects, saves and ships back from a remote worker, so it is a
frozen, picklable value holding only the outcome label, the error fields, the wall time,
the turns' user messages and the events. Every figure in the lab's frames, plots and report
is derived from the events through :class:`~toolloop_lab._runview.RunView`, never stored
twice.

A scenario of several turns runs the loop once per turn, each run with its own run id; its
events are the turns' streams one after the other, so :meth:`ScenarioRun.turn_events` splits
them again by run. A sub-agent a tool starts is a nested run whose events come in between
its parent's: it is no turn, and :meth:`ScenarioRun.nested_views` gives each turn's.
A failed turn ends the scenario (the turns after it never run), so the scenario's outcome
and error are those of its last turn that ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from toolloop_lab._runview import RunView, nested_run_ids
from toolloop_lab._support.pickling import quick_pickle
from toolloop_lab._support.words import OUTCOME, word
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError
from toolloop_lab.events import (
    FAILED_OUTCOMES,
    Event,
    LoopFailed,
    LoopFinished,
    Outcome,
    by_run,
    top_level_run_ids,
)

ANSWERED: Final[frozenset[str]] = frozenset({"final_answer", "synthesis", "token_budget_exhausted"})
"""Outcomes of a run that answered (a tool round's reply, or a final-answer call's)."""

_TALLY_ORDER: Final = ("answered", "usd_budget_exhausted", "cancelled", "interrupted", "failed")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def error_text(outcome: str, kind: str | None, reason: str | None) -> str:
    """What a run's ``error`` column says: a USD stop in its outcome's words (the limit did
    its job; no failure), any other error as ``kind: reason``, nothing without one."""
    if outcome == "usd_budget_exhausted":
        return word(OUTCOME, outcome)
    if kind is None:
        return ""
    return f"{kind}: {reason}"


def tally(outcomes: Iterable[str]) -> str:
    """How runs ended, counted in the outcomes' words: ``7 answered, 2 stopped by the USD
    limit, 2 failed``. Answers of every kind count together; a USD stop never counts as
    a failure."""
    counts = Counter("answered" if o in ANSWERED else str(o) for o in outcomes)
    known = [k for k in _TALLY_ORDER if counts[k]]
    ordered = known + sorted(k for k in counts if k not in _TALLY_ORDER)
    said = {"answered": word(OUTCOME, "final_answer")}
    return ", ".join(
        f"{counts[k]} {_lower_first(said.get(k) or word(OUTCOME, k))}" for k in ordered
    )


def outcome_of_events(events: tuple[Event, ...]) -> Outcome:
    """The outcome the loop set on its last closing event (the last turn that ran);
    ``failed`` when there is none (the scenario could not even be built, or its worker was
    lost). A nested run's end is not the scenario's."""
    top = set(top_level_run_ids(events))
    for event in reversed(events):
        if isinstance(event, (LoopFinished, LoopFailed)) and event.run_id in top:
            return event.outcome
    return "failed"


def error_fields(exc: BaseException, *, building: bool = False) -> tuple[str, str]:
    """``(error_kind, error_reason)`` of an exception, from its structured fields.

    Kinds: ``cost`` (a USD budget error; reason as the loop gives it), ``config`` (a bad
    ``AgentConfig``; reason is the field), ``loop`` (anything else inside the loop; reason
    is the cause's type) and ``scenario`` (the scenario could not be built).
    """
    if building:
        field = exc.field if isinstance(exc, ConfigurationError) else None
        return "scenario", field or type(exc).__name__
    if isinstance(exc, ExecutionError):
        return exc.kind, exc.reason
    if isinstance(exc, ToolLoopError):
        cause = exc.cause
        if isinstance(cause, ConfigurationError):
            return "config", cause.field or "ConfigurationError"
        return "loop", type(cause).__name__
    return "loop", type(exc).__name__


@quick_pickle
@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """One scenario's outcome and events; rows of every lab frame are folded from these."""

    scenario: str
    index: int
    """Position in the sweep, so results keep the caller's order however they arrive."""
    tags: tuple[str, ...]
    description: str
    model_name: str | None
    outcome: Outcome
    error_kind: str | None
    error_reason: str | None
    error_message: str | None
    duration_s: float
    """Wall time of the run, building the agent and every turn included."""
    events: tuple[Event, ...]
    """Every turn's events, turn after turn."""
    turns: tuple[str, ...] = ()
    """The user message of each planned turn (empty in saves written before turns)."""
    variant: str | None = None
    """The variant of the sweep it ran under (``None``: the scenario as written)."""
    repeat: int = 1
    """Which run of its (scenario, variant) pair it is, from 1."""
    passed: bool | None = None
    """Every one of the scenario's checks passed (``None``: it had none)."""
    failed_checks: tuple[str, ...] = ()
    """Each failed check as code reads it, with what it saw: ``outcome('final_answer'):
    seen Failed``."""

    @property
    def failed(self) -> bool:
        """The run raised instead of returning a result (see ``FAILED_OUTCOMES``)."""
        return self.outcome in FAILED_OUTCOMES

    def turn_events(self) -> tuple[tuple[Event, ...], ...]:
        """The events of each turn that ran, in order: one top-level run each (the runs
        its tools started are not turns; see :meth:`nested_views`)."""
        runs = by_run(self.events)
        return tuple(runs[run_id] for run_id in top_level_run_ids(self.events))

    def nested_views(self) -> tuple[tuple[RunView, ...], ...]:
        """For each turn that ran, the folds of the runs its tools started (sub-agents, and
        theirs), in the order they started."""
        runs = by_run(self.events)
        return tuple(
            tuple(RunView.from_events(runs[n]) for n in nested_run_ids(self.events, run_id))
            for run_id in top_level_run_ids(self.events)
        )

    def views(self) -> tuple[RunView, ...]:
        """The shared fold (the same one the widget shows) of each turn that ran."""
        return tuple(RunView.from_events(events) for events in self.turn_events())

    def view(self) -> RunView:
        """The fold of the first turn: the whole run of a one-turn scenario (see
        :meth:`views` for every turn)."""
        return RunView.from_events(self.events)

    @property
    def planned_turns(self) -> int:
        """Turns the scenario holds, whether or not they ran."""
        return max(len(self.turns), len(self.turn_events()), 1)

    @property
    def failed_turn(self) -> int | None:
        """The turn (from 1) a failed scenario's error belongs to: its last turn that ran
        when that turn's loop failed, else the turn it was about to run (the scenario could
        not be built, its worker was lost, or it failed outside the loop); ``None`` when
        nothing failed."""
        if self.error_kind is None and not self.failed:
            return None
        runs = self.turn_events()
        if runs and any(isinstance(e, LoopFailed) for e in runs[-1]):
            return len(runs)
        return min(len(runs) + 1, self.planned_turns)

    @property
    def final_text(self) -> str | None:
        """The last turn's answer, when its loop returned one."""
        top = set(top_level_run_ids(self.events))
        end = next(
            (
                e
                for e in reversed(self.events)
                if isinstance(e, LoopFinished | LoopFailed) and e.run_id in top
            ),
            None,
        )
        return end.final_text if isinstance(end, LoopFinished) else None

    def header(self) -> dict[str, Any]:
        """Everything but the events, JSON-safe (one JSONL line of a saved lab)."""
        return {
            "scenario": self.scenario,
            "index": self.index,
            "tags": list(self.tags),
            "description": self.description,
            "model_name": self.model_name,
            "outcome": self.outcome,
            "error_kind": self.error_kind,
            "error_reason": self.error_reason,
            "error_message": self.error_message,
            "duration_s": self.duration_s,
            "events": len(self.events),
            "turns": list(self.turns),
            "variant": self.variant,
            "repeat": self.repeat,
            "passed": self.passed,
            "failed_checks": list(self.failed_checks),
        }
