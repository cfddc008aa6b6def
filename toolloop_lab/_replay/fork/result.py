"""A fork next to its original: each round's figures, the rounds side by side, the result.

:class:`RoundFigures` is one round of a run (or its synthesis call), read from the run's
events (:func:`rows_of_view`) or from a recording; :class:`RoundComparison` puts the same
round of the original and the fork side by side; :class:`ForkResult` is what a fork hands
back: both runs' figures (:class:`~toolloop_lab._replay.figures.RunFigures`), every round of
either, the summary table and the pandas comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from langchain_core.messages import BaseMessage

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.figures import (
    ComparedRuns,
    RunFigures,
    comparison_lines,
    config_text,
    usd_change,
)
from toolloop_lab._replay.rerun import stop_notes
from toolloop_lab._runview import RunView
from toolloop_lab._spend.usage import Usage
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import Event, Outcome

if TYPE_CHECKING:
    import pandas as pd


SourceKind: TypeAlias = Literal["result", "events", "trace", "recording"]
"""What a fork was taken from."""

RoundOutcome: TypeAlias = Literal["tools"] | Outcome
"""How a round ended: ``tools`` when the run went on after it (its calls were answered),
else the run's outcome on its last round."""
_SOURCE_TEXT: Final[Mapping[SourceKind, str]] = {
    "result": "a result",
    "events": "an event stream",
    "trace": "a trace",
    "recording": "a recording",
}


@dataclass(frozen=True, slots=True)
class RoundFigures:
    """One round of a run (or its synthesis call): what it spent and how it ended."""

    round: int
    purpose: Literal["round", "synthesis"]
    usage: Usage
    """The round's model call and its pruning calls."""
    tool_calls: int
    tool_errors: int
    outcome: RoundOutcome
    taken: bool = False
    """A fork's round taken from the source (not run again)."""

    @property
    def total_tokens(self) -> int:
        return self.usage.total_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        return self.usage.cost_usd


@dataclass(frozen=True, slots=True)
class RoundComparison:
    """One round of the original next to the same round of the fork (either may be
    missing: the fork may end sooner or later)."""

    round: int
    original: RoundFigures | None
    fork: RoundFigures | None

    @property
    def taken(self) -> bool:
        """The fork took this round from the source."""
        return self.fork is not None and self.fork.taken

    @property
    def tokens_delta(self) -> int:
        """Fork tokens minus original tokens (a missing round counts as none spent), so the
        deltas of all rounds add up to the runs' difference."""
        return _tokens(self.fork) - _tokens(self.original)

    @property
    def cost_delta(self) -> Decimal | None:
        """Fork cost minus original cost; ``None`` when either is unpriced."""
        return usd_change(_cost(self.original), _cost(self.fork))


def _tokens(row: RoundFigures | None) -> int:
    return 0 if row is None else row.total_tokens


def _cost(row: RoundFigures | None) -> Decimal | None:
    return Decimal(0) if row is None else row.cost_usd


COMPARISON_DTYPES: Final[dict[str, str]] = {
    "round": "int64",
    "taken": "bool",
    "original_purpose": "string",
    "fork_purpose": "string",
    "original_tokens": "Int64",
    "fork_tokens": "Int64",
    "tokens_delta": "int64",
    "original_cost_usd": "float64",
    "fork_cost_usd": "float64",
    "cost_delta_usd": "float64",
    "original_tool_calls": "Int64",
    "fork_tool_calls": "Int64",
    "original_outcome": "string",
    "fork_outcome": "string",
}
"""Columns of :meth:`ForkResult.comparison`: a round either run lacks has ``<NA>`` (costs:
NaN) on that side, and counts as nothing spent in the deltas; an unpriced cost is NaN."""


@dataclass(frozen=True, slots=True)
class ForkResult(ComparedRuns):
    """A run forked at ``at_round``, next to the original it was taken from
    (``token_delta`` and ``cost_delta`` are the fork's figures minus the original's)."""

    at_round: int
    source: SourceKind
    config: AgentConfig
    """The fork's config, as given (or as the source recorded it)."""
    run_config: AgentConfig
    """What the fork's own run was given: the config with what remains at ``at_round``
    of its round cap and token budget."""
    prefix: tuple[BaseMessage, ...] = field(repr=False)
    """The conversation the fork's own run started from."""
    taken: Usage
    """What the rounds before ``at_round`` spent, from the source."""
    original: RunFigures
    forked: RunFigures
    """The whole forked run: the rounds taken plus the fork's own run."""
    original_rounds: tuple[RoundFigures, ...] = field(repr=False)
    fork_rounds: tuple[RoundFigures, ...] = field(repr=False)
    """The rounds taken (``taken=True``), then the fork's own, numbered as in the original."""
    result: ToolLoopResult | None = field(default=None, repr=False)
    """The fork's own run, when it finished."""
    error: ToolLoopLabError | None = field(default=None, repr=False)
    """The typed error, when it did not (see ``forked.outcome``)."""

    @property
    def events(self) -> tuple[Event, ...]:
        """The fork's own run's events (its rounds numbered from 1)."""
        if self.result is not None:
            return self.result.events
        return tuple(getattr(self.error, "events", ()))

    @property
    def rounds(self) -> tuple[RoundComparison, ...]:
        """Every round of either run, in order, side by side."""
        original = {r.round: r for r in self.original_rounds}
        forked = {r.round: r for r in self.fork_rounds}
        return tuple(
            RoundComparison(n, original.get(n), forked.get(n))
            for n in sorted(original.keys() | forked.keys())
        )

    def _runs(self) -> tuple[RunFigures, RunFigures]:
        return self.original, self.forked

    def comparison(self) -> pd.DataFrame:
        """One row per round of either run (see :data:`COMPARISON_DTYPES`)."""
        import pandas as pd

        def side(row: RoundFigures | None) -> tuple[Any, ...]:
            if row is None:
                return None, None, float("nan"), None, None
            cost = float("nan") if row.cost_usd is None else float(row.cost_usd)
            return row.purpose, row.total_tokens, cost, row.tool_calls, row.outcome

        cols: dict[str, list[Any]] = {name: [] for name in COMPARISON_DTYPES}
        for pair in self.rounds:
            o_purpose, o_tokens, o_cost, o_calls, o_outcome = side(pair.original)
            f_purpose, f_tokens, f_cost, f_calls, f_outcome = side(pair.fork)
            delta = pair.cost_delta
            values = {
                "round": pair.round,
                "taken": pair.taken,
                "original_purpose": o_purpose,
                "fork_purpose": f_purpose,
                "original_tokens": o_tokens,
                "fork_tokens": f_tokens,
                "tokens_delta": pair.tokens_delta,
                "original_cost_usd": o_cost,
                "fork_cost_usd": f_cost,
                "cost_delta_usd": float("nan") if delta is None else float(delta),
                "original_tool_calls": o_calls,
                "fork_tool_calls": f_calls,
                "original_outcome": o_outcome,
                "fork_outcome": f_outcome,
            }
            for name, value in values.items():
                cols[name].append(value)
        return pd.DataFrame(
            {name: pd.Series(cols[name], dtype=dtype) for name, dtype in COMPARISON_DTYPES.items()}
        )

    @property
    def summary(self) -> str:
        """A plain-text table: the original and the fork, with the change."""
        taken = self.at_round - 1
        head = f"Fork at round {self.at_round} of {_SOURCE_TEXT[self.source]}"
        head += f" ({taken} round{'s' if taken != 1 else ''} taken), {config_text(self.config)}:"
        lines = [head, *comparison_lines(("original", "fork"), self.original, self.forked)]
        lines += stop_notes("fork", "its recording", self.forked, self.error)
        return "\n".join(lines)


def rows_of_view(
    view: RunView, outcome: Outcome, *, offset: int = 0, taken: bool = False
) -> tuple[RoundFigures, ...]:
    """The rounds of a run's fold, each with how it ended (``outcome`` on the last one);
    numbered ``offset`` on (a fork's own rounds read as the original's)."""
    rows = [r for r in view.rounds if r.number > 0]
    out = []
    for i, row in enumerate(rows):
        last = i == len(rows) - 1
        out.append(
            RoundFigures(
                round=row.number + offset,
                purpose=row.purpose,
                usage=row.usage + row.pruning_usage,
                tool_calls=len(row.tools),
                tool_errors=sum(1 for t in row.tools if t.status == "error"),
                outcome=outcome if last else "tools",
                taken=taken,
            )
        )
    return tuple(out)
