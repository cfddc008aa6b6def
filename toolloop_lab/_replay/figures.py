"""``RunFigures``: one run's outcome and spend, and the table that puts two side by side.

What-if (a recording against its re-run) and fork (a run against the same run forked at a
round) compare runs the same way: both results are :class:`ComparedRuns` and read this
module, so their tables and deltas agree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.recording_file import Recording
from toolloop_lab._runview import RunView
from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._spend.usage import Usage, format_usd
from toolloop_lab._support.words import TABLES, outcome_text, word
from toolloop_lab.errors import ExecutionError, ReplayExhaustedError, ToolLoopError
from toolloop_lab.events import LoopFailed, Outcome

Detail: TypeAlias = Literal["beyond_recording", "incomplete"]
"""What only record and replay can say about a ``failed`` run: it needed a reply the
recording does not have, or (a recording) it stopped with tool calls still open."""


@dataclass(frozen=True, slots=True)
class RunFigures:
    """One run's outcome and spend, recorded or replayed."""

    outcome: Outcome
    rounds: int
    calls: int
    """Model calls, pruning calls included."""
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cost_usd: Decimal | None
    """``None`` when some call could not be priced."""
    estimated: bool
    """True when some token count is an estimate rather than a provider's figure."""
    synthesis_reason: str | None = None
    final_text: str | None = None
    detail: Detail | None = None
    """Why a ``failed`` run failed, where record and replay know more than the loop."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @classmethod
    def _of(cls, usage: Usage, outcome: Outcome, rounds: int, **extra: Any) -> RunFigures:
        return cls(outcome=outcome, rounds=rounds, **_spend(usage), **extra)

    def with_spend(self, usage: Usage, rounds: int) -> RunFigures:
        """These figures with ``usage`` spent over ``rounds`` rounds (a fork's whole run:
        the rounds taken plus its own)."""
        return dataclasses.replace(self, rounds=rounds, **_spend(usage))

    @classmethod
    def of_recording(cls, recording: Recording, prices: PriceTable | None = None) -> RunFigures:
        """Figures of what was recorded, read the way the loop reads them.

        ``rounds`` counts the answered calls that had tools bound, less an unfinished last
        round (a reply whose tool calls nothing followed).
        """
        last = recording.calls[-1]
        rounds = sum(1 for c in recording.calls if c.tools_bound and c.response is not None)
        usage = recording.usage(prices)
        if last.error is not None:
            return cls._of(usage, "failed", rounds)
        if last.response is not None and (
            last.response.tool_calls or last.response.invalid_tool_calls
        ):
            return cls._of(usage, "failed", rounds - 1, detail="incomplete")
        final_text = last.response.text if last.response is not None else None
        outcome: Outcome = "final_answer" if last.tools_bound else "synthesis"
        return cls._of(usage, outcome, rounds, final_text=final_text)

    @classmethod
    def of_result(cls, result: ToolLoopResult) -> RunFigures:
        """Figures of a finished loop."""
        return cls._of(
            result.usage,
            result.outcome,
            result.rounds,
            synthesis_reason=result.synthesis_reason,
            final_text=result.final_response.text,
        )

    @classmethod
    def of_error(cls, error: ToolLoopError | ExecutionError) -> RunFigures:
        """Figures of a loop that raised, from its partial state and closing event."""
        beyond = isinstance(error, ToolLoopError) and isinstance(error.cause, ReplayExhaustedError)
        detail: Detail | None = "beyond_recording" if beyond else None
        failed = _closing_failure(error)
        outcome: Outcome = failed.outcome if failed is not None else "failed"
        return cls._of(error_spend(error), outcome, error.rounds, detail=detail)

    @classmethod
    def of_view(cls, view: RunView) -> RunFigures:
        """A run's figures from its events (the same figures :meth:`of_result` and
        :meth:`of_error` read); a trace cut short ends ``failed``, detail ``incomplete``."""
        if view.finished is not None:
            done = view.finished
            return cls._of(
                done.usage,
                done.outcome,
                done.rounds,
                synthesis_reason=done.synthesis_reason,
                final_text=done.final_text,
            )
        if view.failure is not None:
            failed = view.failure
            beyond = failed.cause_type == ReplayExhaustedError.__name__
            detail: Detail | None = "beyond_recording" if beyond else None
            return cls._of(failed.usage, failed.outcome, failed.rounds, detail=detail)
        return cls._of(view.usage, "failed", view.rounds_run, detail="incomplete")


def _spend(usage: Usage) -> dict[str, Any]:
    """The fields of :class:`RunFigures` that ``usage`` gives."""
    return {
        "calls": usage.requests,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cost_usd": usage.cost_usd,
        "estimated": usage.estimated,
    }


def _closing_failure(error: ToolLoopError | ExecutionError) -> LoopFailed | None:
    return next((e for e in reversed(error.events) if isinstance(e, LoopFailed)), None)


def error_spend(error: ToolLoopError | ExecutionError) -> Usage:
    """What a run that raised spent: its closing event's usage, else (it never got that
    far) its partial counts, cost unknown."""
    failed = _closing_failure(error)
    if failed is not None:
        return failed.usage
    return Usage(error.accumulated_prompt, error.accumulated_completion, cost_usd=None)


def usd_change(before: Decimal | None, after: Decimal | None) -> Decimal | None:
    """``after - before``; ``None`` when either is unpriced (unknown is never zero)."""
    if before is None or after is None:
        return None
    return after - before


class ComparedRuns:
    """A result that puts two runs side by side (a what-if, a fork): the changes in tokens
    and cost from the first run to the second, and its :attr:`summary` as its text."""

    __slots__ = ()

    def _runs(self) -> tuple[RunFigures, RunFigures]:
        """The first run and the second."""
        raise NotImplementedError

    @property
    def summary(self) -> str:
        """The comparison as a plain-text table."""
        raise NotImplementedError

    @property
    def token_delta(self) -> int:
        """The second run's total tokens minus the first's."""
        first, second = self._runs()
        return second.total_tokens - first.total_tokens

    @property
    def cost_delta(self) -> Decimal | None:
        """The second run's cost minus the first's; ``None`` when either is unpriced."""
        first, second = self._runs()
        return usd_change(first.cost_usd, second.cost_usd)

    def __str__(self) -> str:
        return self.summary

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython and Jupyter show the comparison table, not the fields."""
        printer.text(self.summary)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """IPython takes the first class in the MRO that defines ``_repr_pretty_`` *or*
        ``__repr__``; a dataclass subclass defines its own ``__repr__``, which would win over
        the table, so every subclass gets the table printer in its own namespace too."""
        super().__init_subclass__(**kwargs)
        cls._repr_pretty_ = ComparedRuns._repr_pretty_  # type: ignore[method-assign]


def config_text(config: AgentConfig) -> str:
    """The fields that differ from ``AgentConfig()``, as ``name=value`` (prompts left out)."""
    prompts = ("pruning_prompt", "synthesis_prompt", "system_prompt")
    changed = [f"{k}={v!r}" for k, v in config.changed().items() if k not in prompts]
    return ", ".join(changed) or "the default config"


def comparison_lines(labels: tuple[str, str], a: RunFigures, b: RunFigures) -> list[str]:
    """Two runs side by side: outcome, rounds, calls, tokens and cost, with the change."""

    def outcome(f: RunFigures) -> str:  # in the words every other view uses
        said = outcome_text(f.outcome, f.synthesis_reason)
        return f"{said} ({word(TABLES['run_detail'], f.detail)})" if f.detail else said

    def cost(value: Decimal | None) -> str:
        return format_usd(value)

    def count(label: str, x: int, y: int, fmt: str = ",") -> tuple[str, str, str, str]:
        return (label, f"{x:{fmt}}", f"{y:{fmt}}", f"{y - x:+,}")

    change = usd_change(a.cost_usd, b.cost_usd)
    cost_change = "" if change is None else ("+" if change >= 0 else "") + format_usd(change)
    rows: Sequence[tuple[str, str, str, str]] = [
        ("", *labels, "change"),
        ("outcome", outcome(a), outcome(b), ""),
        count("rounds", a.rounds, b.rounds, ""),
        count("model calls", a.calls, b.calls, ""),
        count("input tokens", a.input_tokens, b.input_tokens),
        count("output tokens", a.output_tokens, b.output_tokens),
        ("cost (USD)", cost(a.cost_usd), cost(b.cost_usd), cost_change),
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
