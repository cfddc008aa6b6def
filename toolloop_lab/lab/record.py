"""``ScenarioRun``: what one scenario left behind — its outcome and its whole event stream.

This is the unit a sweep collects, saves and (later) ships back from a remote worker, so it
is a frozen, picklable value holding only the outcome label, the error fields, the wall
time and the events. Every figure in the lab's frames, plots and report is derived from the
events through :class:`~toolloop_lab.runview.RunView`, never stored twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, get_args

from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError, TraceError
from toolloop_lab.events import Event, LoopFinished
from toolloop_lab.runview import RunView

__all__ = ["OUTCOMES", "Outcome", "ScenarioRun", "classify_error", "outcome_of_result"]

Outcome: TypeAlias = Literal["final", "synthesis", "budget_exhausted", "cost_exhausted", "error"]
"""How a scenario ended: a plain answer, a synthesis call, a spent token budget (then
synthesis), a spent USD budget (an error in the loop, its own outcome here), or any other
failure."""

OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)


def outcome_of_result(*, budget_exhausted: bool, synthesis_was_run: bool) -> Outcome:
    """The outcome of a loop that returned a result (from its two flags)."""
    if budget_exhausted:
        return "budget_exhausted"
    if synthesis_was_run:
        return "synthesis"
    return "final"


def classify_error(exc: BaseException, *, building: bool = False) -> tuple[Outcome, str, str]:
    """``(outcome, error_kind, error_reason)`` of an exception, from its structured fields.

    error kinds: ``cost`` (a USD budget error; reason as the loop gives it), ``config``
    (a bad ``AgentConfig``; reason is the field), ``loop`` (anything else inside the loop;
    reason is the cause's type) and ``scenario`` (the scenario could not be built).
    """
    if building:
        field = exc.field if isinstance(exc, ConfigurationError) else None
        return "error", "scenario", field or type(exc).__name__
    if isinstance(exc, ExecutionError):
        outcome: Outcome = (
            "cost_exhausted" if (exc.kind, exc.reason) == ("cost", "budget_exhausted") else "error"
        )
        return outcome, exc.kind, exc.reason
    if isinstance(exc, ToolLoopError):
        cause = exc.cause
        if isinstance(cause, ConfigurationError):
            return "error", "config", cause.field or "ConfigurationError"
        return "error", "loop", type(cause).__name__
    return "error", "loop", type(exc).__name__


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

    @classmethod
    def from_header(cls, data: Mapping[str, Any], events: tuple[Event, ...]) -> ScenarioRun:
        """Inverse of :meth:`header`, given the run's events back."""
        outcome = data.get("outcome")
        if outcome not in OUTCOMES:
            raise TraceError(f"unknown scenario outcome {outcome!r}")
        if len(events) != data.get("events"):
            raise TraceError(
                f"scenario {data.get('scenario')!r}: expected {data.get('events')} events, "
                f"found {len(events)}"
            )
        return cls(
            scenario=str(data["scenario"]),
            index=int(data["index"]),
            tags=tuple(str(t) for t in data.get("tags", ())),
            description=str(data.get("description", "")),
            model_name=_opt_str(data.get("model_name")),
            outcome=outcome,
            error_kind=_opt_str(data.get("error_kind")),
            error_reason=_opt_str(data.get("error_reason")),
            error_message=_opt_str(data.get("error_message")),
            duration_s=float(data["duration_s"]),
            events=events,
        )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
