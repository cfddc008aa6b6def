"""How numbers read in the debugger: one formatter per kind of figure, and the words for
why a tool call is an error or never ran (a reason code is never shown as it is).

The static snapshot and the text repr share these, so a figure never reads two ways. They
return plain text made of digits and our own words only, never untrusted content.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Final

__all__ = [
    "CUT_SHORT",
    "FAILED",
    "NOT_RUN",
    "cut_short",
    "gate_label",
    "held",
    "pct",
    "reason_words",
    "seconds",
    "share",
    "tokens",
    "usd",
]

_SIGNIFICANT: Final = 4

NOT_RUN: Final[Mapping[str, str]] = {
    "token_budget": "token budget",
    "cancelled": "stopped",
    "truncated": "reply cut off",
    "skipped": "skipped by you",
    "synthesis": "a final answer was asked for",
    "unknown": "answered by the framework",
}
"""Why a call the loop answered without running it never ran, by its error reason."""

FAILED: Final[Mapping[str, str]] = {
    "not_available": "no such tool",
    "invalid_call": "invalid call",
    "invalid_arguments": "invalid arguments",
    "tool_error": "the tool failed",
    "timeout": "timed out",
    "tool_cancelled": "cancelled by the tool",
    "bad_output": "unusable output",
}
"""Why a call that was dispatched is an error, by its error reason."""


def reason_words(code: str | None) -> str | None:
    """A tool call's error reason in words; a code without words (a newer version's, an
    edited trace's) as it is, for the caller to clip and escape."""
    if code is None:
        return None
    return NOT_RUN.get(code) or FAILED.get(code) or CUT_SHORT.get(code) or code


CUT_SHORT: Final[Mapping[str, str]] = {
    "cancelled": "stopped while running",
    "unfinished": "cut short when the run ended",
}
"""A call whose tool had begun when the run stopped (status ``cancelled``), by its reason:
it ran, for as long as it did."""


def tokens(n: int | Decimal | None) -> str:
    """``12,345``; ``—`` when unknown."""
    if n is None:
        return "—"
    return f"{int(n):,}"


def usd(amount: Decimal | None) -> str:
    """``$0.0000117``, ``$0.00722``, ``$12.35``: four significant digits, at least cents.

    Model calls cost fractions of a cent, so a fixed number of decimals would read as
    ``$0.00``; ``unpriced`` for ``None`` (unknown is never shown as zero).
    """
    if amount is None:
        return "unpriced"
    if amount == 0:
        return "$0"
    places = max(2, _SIGNIFICANT - 1 - amount.adjusted())
    text = f"{amount.quantize(Decimal(1).scaleb(-places)):,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def seconds(value: float | None) -> str:
    """``850 ms`` below a second, ``2.31 s`` above; ``—`` when unknown."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def cut_short(reason: str | None, duration_s: float | None) -> str:
    """``stopped while running after 1.50 s``: a call whose tool the run's end cut short."""
    how = CUT_SHORT.get(reason or "", CUT_SHORT["cancelled"])
    return f"{how} after {seconds(duration_s)}"


def held(duration_s: float | None, paused_s: float | None) -> str | None:
    """``took 552 ms (+6.45 s paused)``: a round's own time and, beside it, the time pauses
    held it; ``None`` when no pause held it (``paused_s`` is ``None``). Any pause says so,
    however short: whether a round was held never depends on a clock."""
    if paused_s is None:
        return None
    return f"took {seconds(duration_s)} (+{seconds(paused_s)} paused)"


def pct(fraction: float | None) -> str:
    """``42.0%`` of a 0..1 share; ``—`` when unknown."""
    if fraction is None:
        return "—"
    return f"{fraction * 100:.1f}%"


def share(spent: Decimal | int, limit: Decimal | int | None) -> float | None:
    """``spent / limit`` as a float, or ``None`` without a (positive) limit."""
    if limit is None or limit <= 0:
        return None
    return float(Decimal(spent) / Decimal(limit))


def gate_label(state: str) -> str:
    """The word a gate state reads as: ``off``, ``passed`` or ``TRIPPED``."""
    return "TRIPPED" if state == "tripped" else state
