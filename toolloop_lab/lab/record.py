"""``ScenarioRun``: what one scenario left behind — its outcome and its whole event stream.

This is the unit a sweep collects, saves and (later) ships back from a remote worker, so it
is a frozen, picklable value holding only the outcome label, the error fields, the wall
time and the events. Every figure in the lab's frames, plots and report is derived from the
events through :class:`~toolloop_lab.runview.RunView`, never stored twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError
from toolloop_lab.events import (
    FAILED_OUTCOMES,
    OUTCOMES,
    Event,
    LoopFailed,
    LoopFinished,
    Outcome,
)
from toolloop_lab.runview import RunView

__all__ = ["OUTCOMES", "Outcome", "ScenarioRun", "error_fields", "outcome_of_events"]


def outcome_of_events(events: tuple[Event, ...]) -> Outcome:
    """The outcome the loop set on its closing event; ``failed`` when there is none (the
    scenario could not even be built, or its worker was lost)."""
    for event in reversed(events):
        if isinstance(event, (LoopFinished, LoopFailed)):
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
    """Wall time of the run, building the agent included."""
    events: tuple[Event, ...]

    @property
    def failed(self) -> bool:
        """The run raised instead of returning a result (see ``FAILED_OUTCOMES``)."""
        return self.outcome in FAILED_OUTCOMES

    def view(self) -> RunView:
        """The shared fold of this run's events (the same one the widget shows)."""
        return RunView.from_events(self.events)

    @property
    def final_text(self) -> str | None:
        """The answer, when the loop returned one."""
        ends = (e for e in reversed(self.events) if isinstance(e, LoopFinished))
        return next((e.final_text for e in ends), None)

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
        }
