"""Token and cost usage as one value type, so sums are written once (``__add__``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from toolloop_lab._support.fields import MAX_INT, Count, FiniteDecimal, Flag, reported_count
from toolloop_lab._support.jsonsafe import is_mapping
from toolloop_lab._support.pickling import quick_pickle

_SIGNIFICANT: Final = 4
"""Significant digits a shown amount keeps (at least cents)."""


def format_usd(amount: Decimal | float | int | None, *, exact: bool = False) -> str:
    """The one way an amount of USD reads: ``$0.0002187``, ``$0.00722``, ``$1,234.57``.

    Model calls cost fractions of a cent, so a fixed number of decimals would read as
    ``$0.00``: four significant digits (half up), at least cents, trailing zeros dropped,
    never an exponent. ``exact`` keeps every digit (an error comparing spend to a limit
    must not round them equal). ``unpriced`` for ``None`` or a non-finite value: unknown
    is never shown as zero. The widget's ``usd`` (_widget/src) gives the same strings.
    """
    try:
        value = amount if isinstance(amount, Decimal) else Decimal(str(amount))
    except (InvalidOperation, ValueError):
        return "unpriced"
    if amount is None or not value.is_finite():
        return "unpriced"
    if value.is_zero():
        return "$0"
    if not exact:
        places = max(2, _SIGNIFICANT - 1 - value.adjusted())
        value = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    text = f"{abs(value):,f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"-${text}" if value < 0 and text != "0" else f"${text}"


def format_tokens(n: int | Decimal | None) -> str:
    """``12,345``; ``—`` when unknown."""
    return "—" if n is None else f"{int(n):,}"


def format_bytes(n: int) -> str:
    """A size as a person reads it: ``900 bytes``, ``12 KB``, ``3.4 MB`` (a KB is 1,024
    bytes; an image a tool returned reads as ``[image: image/png, 12 KB]``)."""
    if n < 1024:
        return f"{n:,} byte" if n == 1 else f"{n:,} bytes"
    if n < 1024 * 1024:
        return f"{round(n / 1024):,} KB"
    return f"{n / (1024 * 1024):,.1f} MB"


@dataclass(frozen=True, slots=True)
class Cost:
    """The USD cost of priced usage: the total and its input part (cached input and cache
    writes included), so a view can split it without knowing the price."""

    total: Decimal
    input: Decimal

    @property
    def output(self) -> Decimal:
        """The output part (reasoning included)."""
        return self.total - self.input


@quick_pickle
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more model calls."""

    input_tokens: Count = 0
    """Prompt tokens, cached ones included (as langchain-core and genai-prices count them)."""
    output_tokens: Count = 0
    """Completion tokens, reasoning included."""
    cache_read_tokens: Count = 0
    """Part of ``input_tokens`` served from the provider's prompt cache."""
    cache_write_tokens: Count = 0
    """Part of ``input_tokens`` written to the provider's prompt cache."""
    requests: Count = 0
    """Model calls counted here."""
    estimated: Flag = False
    """True when any count here was estimated or corrected because the provider reported
    none, reported counts that cannot all be true, or counts no event can hold (past
    ``MAX_INT``: unknown, never shown as the number given)."""
    cost_usd: FiniteDecimal | None = Decimal(0)
    """Cost in USD; ``None`` means unknown (unpriced), never zero."""
    input_cost_usd: FiniteDecimal | None = None
    """The input part of ``cost_usd`` (cached input and cache writes included); ``None``
    when the split is not known (usage priced before it was recorded, or unpriced)."""

    @property
    def output_cost_usd(self) -> Decimal | None:
        """The output part of ``cost_usd`` (derived, so it never goes stale)."""
        split = self._input_part()
        if self.cost_usd is None or split is None:
            return None
        return self.cost_usd - split

    def _input_part(self) -> Decimal | None:
        """The input part; an empty usage has a known part of zero."""
        if self.input_cost_usd is None and self.requests == 0 and self.cost_usd == 0:
            return Decimal(0)
        return self.input_cost_usd

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens, derived so it never goes stale."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        """The sum; a total past what an event can hold (``MAX_INT``) is held at it and
        marked estimated, so a run's totals always read back from its trace."""
        if not isinstance(other, Usage):
            return NotImplemented
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        a, b = self._input_part(), other._input_part()
        split = None if cost is None or a is None or b is None else a + b
        counts = [
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.requests + other.requests,
        ]
        estimated = self.estimated or other.estimated
        if max(counts) > MAX_INT:  # no event holds it: the most one can, and not exact
            counts, estimated = [min(c, MAX_INT) for c in counts], True
        inp, out, read, write, requests = counts
        return Usage(inp, out, read, write, requests, estimated, cost, split)

    def with_cost(self, cost: Cost | Decimal | None) -> Usage:
        """The same counts with a cost attached (split into input and output when ``cost``
        is a :class:`~toolloop_lab._spend.pricing.Cost`)."""
        total = cost.total if isinstance(cost, Cost) else cost
        split = cost.input if isinstance(cost, Cost) else None
        return Usage(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
            self.requests,
            self.estimated,
            total,
            split,
        )

    @classmethod
    def from_ai_message(
        cls, message: AIMessage, *, prompt: Sequence[BaseMessage] | None = None
    ) -> Usage:
        """Read ``usage_metadata``; estimate what is missing or invalid, and say so.

        Counts are never silently zero: a reply without usable usage is estimated from the
        prompt that produced it (``prompt``) and the reply itself, with langchain-core's
        approximate counter. A reported 0 for a non-empty prompt or reply is not usable
        either (some providers and proxies send zeros when they did not count), nor is one
        no event can hold (:func:`~toolloop_lab._support.fields.reported_count`). Cache counts
        are parts of the input: one that is not a count, or does not fit in the input next
        to the others (reads first), is dropped and the usage is marked estimated, so a
        negative uncached share is never priced. ``total_tokens`` is not read: the total is
        always input plus output.
        """
        meta: Mapping[str, Any] | None = message.usage_metadata
        estimated = bool(message.response_metadata.get("usage_estimated", False))
        raw_in = reported_count(meta.get("input_tokens")) if meta else None
        raw_out = reported_count(meta.get("output_tokens")) if meta else None
        in_tok: int
        out_tok: int
        if raw_in is not None and (raw_in > 0 or not prompt):
            in_tok = raw_in
        else:
            in_tok = count_tokens_approximately(prompt) if prompt else 0
            estimated = True
        if raw_out is not None and (raw_out > 0 or _is_empty(message)):
            out_tok = raw_out
        else:
            out_tok = estimate_tokens(message)
            estimated = True
        details = meta.get("input_token_details") if meta else None
        if details is None or not is_mapping(details):
            details = {}
        cache_read, cache_write, fixed = _cache_counts(
            details.get("cache_read"), details.get("cache_creation"), in_tok
        )
        estimated = estimated or fixed
        return cls(
            input_tokens=in_tok,
            output_tokens=out_tok,
            cache_read_tokens=cache_read,
            cache_write_tokens=cache_write,
            requests=1,
            estimated=estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: cost as a string so no precision is lost."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "requests": self.requests,
            "estimated": self.estimated,
            "cost_usd": None if self.cost_usd is None else str(self.cost_usd),
            "input_cost_usd": None if self.input_cost_usd is None else str(self.input_cost_usd),
        }


def _cache_counts(raw_read: Any, raw_write: Any, input_tokens: int) -> tuple[int, int, bool]:
    """Cache reads and writes that fit inside ``input_tokens``, and whether any was dropped.

    A count that does not fit in what is left of the input is dropped: those tokens are
    then priced as plain input, the figure a consistent report would most likely give.
    """
    if raw_read is None and raw_write is None:
        return 0, 0, False  # none reported: nothing to fit (the common case)
    fixed = False
    counts = []
    room = input_tokens
    for raw in (raw_read, raw_write):
        count = 0 if raw is None else reported_count(raw)
        if count is None:
            count, fixed = 0, True
        if count > room:
            count, fixed = 0, True
        room -= count
        counts.append(count)
    return counts[0], counts[1], fixed


def _is_empty(message: AIMessage) -> bool:
    return not message.content and not message.tool_calls and not message.invalid_tool_calls


def estimate_tokens(message: BaseMessage) -> int:
    """Approximate tokens of one message (content and tool calls), at least 1."""
    return max(
        1, count_tokens_approximately([message], extra_tokens_per_message=0, count_name=False)
    )
