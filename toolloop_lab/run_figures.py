"""``RunFigures``: one run's outcome and spend, and the table that puts two side by side.

What-if (a recording against its re-run) and fork (a run against the same run forked at a
round) compare runs the same way; both read this module, so their tables agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from toolloop_lab.config import AgentConfig
from toolloop_lab.errors import ExecutionError, ToolLoopError
from toolloop_lab.events import LoopFailed, Outcome
from toolloop_lab.pricing import PriceTable
from toolloop_lab.recording_format import Recording, ReplayExhaustedError
from toolloop_lab.result import ToolLoopResult
from toolloop_lab.usage import Usage

__all__ = ["Detail", "RunFigures", "comparison_lines", "config_text"]

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
        return cls(
            outcome=outcome,
            rounds=rounds,
            calls=usage.requests,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cost_usd=usage.cost_usd,
            estimated=usage.estimated,
            **extra,
        )

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
        failed = next((e for e in reversed(error.events) if isinstance(e, LoopFailed)), None)
        if failed is not None:
            return cls._of(failed.usage, failed.outcome, error.rounds, detail=detail)
        usage = Usage(error.accumulated_prompt, error.accumulated_completion, cost_usd=None)
        return cls._of(usage, "failed", error.rounds, detail=detail)


def config_text(config: AgentConfig) -> str:
    """The fields that differ from ``AgentConfig()``, as ``name=value`` (prompts left out)."""
    prompts = ("pruning_prompt", "synthesis_prompt", "system_prompt")
    changed = [f"{k}={v!r}" for k, v in config.changed().items() if k not in prompts]
    return ", ".join(changed) or "the default config"


def comparison_lines(labels: tuple[str, str], a: RunFigures, b: RunFigures) -> list[str]:
    """Two runs side by side: outcome, rounds, calls, tokens and cost, with the change."""

    def outcome(f: RunFigures) -> str:
        why = f.synthesis_reason or f.detail
        return f"{f.outcome} ({why})" if why else f.outcome

    def cost(value: Decimal | None) -> str:
        return "unpriced" if value is None else f"${value:f}"

    def count(label: str, x: int, y: int, fmt: str = ",") -> tuple[str, str, str, str]:
        return (label, f"{x:{fmt}}", f"{y:{fmt}}", f"{y - x:+,}")

    change = None if a.cost_usd is None or b.cost_usd is None else b.cost_usd - a.cost_usd
    cost_change = "" if change is None else f"{change:+f}"
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
