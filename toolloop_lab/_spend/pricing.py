"""Model name -> USD cost of a :class:`Usage`, from genai-prices' table plus user overrides.

genai-prices' lookup is slow next to one loop round (tens of µs), so lookups of a model's
price and repeated identical calculations are memoised; every figure still comes from
genai-prices or from the caller's own :class:`TokenPrice`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import genai_prices
from genai_prices.types import ModelPrice

from toolloop_lab._spend.usage import Cost, Usage
from toolloop_lab.errors import ConfigurationError

_MTOK = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class TokenPrice:
    """A user-supplied flat price in USD per million tokens (for models the table lacks)."""

    input_mtok: Decimal
    output_mtok: Decimal
    cache_read_mtok: Decimal | None = None
    """Price of cached input; ``None`` means cached input costs the same as input."""

    def __post_init__(self) -> None:
        # Floats go through str so 0.15 stays 0.15 and costs stay exact.
        for name in ("input_mtok", "output_mtok", "cache_read_mtok"):
            value = getattr(self, name)
            if value is None and name == "cache_read_mtok":
                continue
            object.__setattr__(self, name, to_decimal_usd(value, field=name))

    def cost(self, usage: Usage) -> Decimal:
        """Cost of ``usage`` at this price."""
        return self.price(usage).total

    def price(self, usage: Usage) -> Cost:
        """Cost of ``usage`` at this price, split into input and output."""
        cached = usage.cache_read_tokens if self.cache_read_mtok is not None else 0
        cache_rate = self.cache_read_mtok if self.cache_read_mtok is not None else Decimal(0)
        paid_in = (
            Decimal(usage.input_tokens - cached) * self.input_mtok + Decimal(cached) * cache_rate
        ) / _MTOK
        paid_out = Decimal(usage.output_tokens) * self.output_mtok / _MTOK
        return Cost(paid_in + paid_out, paid_in)


def to_decimal_usd(value: Any, *, field: str = "limit_usd") -> Decimal:
    """Exact Decimal of a USD amount; floats go through ``str`` so 0.1 stays 0.1.

    The one check for every amount a user gives (limits and prices): a bool, a non-number,
    a non-finite or a negative value raises ``ConfigurationError`` naming ``field``.
    """
    if isinstance(value, bool):
        raise ConfigurationError(f"{field} must be a number, not a bool", field=field)
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigurationError(f"{field} must be finite, got {value!r}", field=field)
    try:
        amount = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError, TypeError):
        raise ConfigurationError(
            f"{field} must be a number, got {type(value).__name__}", field=field
        ) from None
    if not amount.is_finite() or amount < 0:
        raise ConfigurationError(f"{field} must be finite and >= 0, got {amount}", field=field)
    return amount


PriceTable = Mapping[str, TokenPrice]
"""Overrides: model name -> price. Consulted before genai-prices."""


@lru_cache(maxsize=256)
def _model_price(model_name: str) -> ModelPrice | None:
    try:
        calc = genai_prices.calc_price(
            genai_prices.Usage(input_tokens=0, output_tokens=0), model_ref=model_name
        )
    except LookupError:
        return None
    return calc.model_price


@lru_cache(maxsize=8192)
def _table_cost(
    model_name: str, input_tokens: int, output_tokens: int, cache_read: int, cache_write: int
) -> Cost:
    price = _model_price(model_name)
    assert price is not None
    usage = genai_prices.Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    calc = price.calc_price(usage)
    return Cost(Decimal(calc["total_price"]), Decimal(calc["input_price"]))


def known_price(model_name: str | None, prices: PriceTable | None = None) -> bool:
    """True when ``model_name`` can be priced by ``prices`` or genai-prices."""
    if not model_name:
        return False
    if prices and model_name in prices:
        return True
    return _model_price(model_name) is not None


def price_of(usage: Usage, model_name: str | None, prices: PriceTable | None = None) -> Cost | None:
    """USD cost of ``usage`` on ``model_name``, split; ``None`` when it has no known price."""
    if not model_name:
        return None
    if prices and model_name in prices:
        return prices[model_name].price(usage)
    if _model_price(model_name) is None:
        return None
    return _table_cost(
        model_name,
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )


def cost_of(
    usage: Usage, model_name: str | None, prices: PriceTable | None = None
) -> Decimal | None:
    """USD cost of ``usage`` on ``model_name``; ``None`` when the model has no known price."""
    cost = price_of(usage, model_name, prices)
    return None if cost is None else cost.total


def call_price(
    usage: Usage, names: Sequence[str | None], prices: PriceTable | None = None
) -> Cost | None:
    """Cost of one call that answers to several names, most specific first (the name in the
    reply, e.g. ``gpt-4o-mini-2024-07-18``, then the configured ``gpt-4o-mini``).

    A caller's override under any of the names wins over genai-prices under any of them, so
    an override keyed by the configured name is never skipped because the provider reported
    a dated snapshot name.
    """
    candidates = [n for n in dict.fromkeys(names) if n]
    if prices:
        for name in candidates:
            if name in prices:
                return prices[name].price(usage)
    for name in candidates:
        cost = price_of(usage, name)
        if cost is not None:
            return cost
    return None


def call_cost(
    usage: Usage, names: Sequence[str | None], prices: PriceTable | None = None
) -> Decimal | None:
    """The total of :func:`call_price`."""
    cost = call_price(usage, names, prices)
    return None if cost is None else cost.total


def model_name_of(obj: Any, response_metadata: Mapping[str, Any] | None = None) -> str | None:
    """The model name a reply or a chat model reports, as providers spell it.

    A reply's metadata wins; then the model's ``model_name`` / ``model`` / ``model_id``
    attribute; then langchain-core's standard tracing parameters (``ls_model_name`` from
    ``_get_ls_params()``), which every provider integration fills in even where its name
    attribute is spelled differently.
    """
    if response_metadata:
        for key in ("model_name", "model", "model_id"):
            value = response_metadata.get(key)
            if isinstance(value, str) and value:
                return value
    for attr in ("model_name", "model", "model_id"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value:
            return value
    ls_params = getattr(obj, "_get_ls_params", None)
    if callable(ls_params):
        try:
            value = ls_params().get("ls_model_name")
        except Exception:  # noqa: BLE001 - a model whose tracing params fail has no name here
            return None
        if isinstance(value, str) and value:
            return value
    return None
