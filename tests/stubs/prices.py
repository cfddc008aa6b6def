"""Expected costs computed straight from genai-prices, independently of toolloop_lab."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

import genai_prices

from .anthropic_stub import AnthropicStub, AnthropicUsage
from .openai_stub import OpenAIStub, OpenAIUsage

__all__ = ["anthropic_cost", "openai_cost", "price"]


def price(
    model: str, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
) -> Decimal:
    """genai-prices' own figure for one call (``input_tokens`` includes cached tokens)."""
    usage = genai_prices.Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    return Decimal(genai_prices.calc_price(usage, model_ref=model).total_price)


def openai_cost(usages: Iterable[OpenAIUsage], model: str = OpenAIStub.model) -> Decimal:
    """Sum of per-call prices of what an OpenAI stub reported."""
    return sum(
        (price(model, u.prompt_tokens, u.completion_tokens, u.cached_tokens) for u in usages),
        Decimal(0),
    )


def anthropic_cost(usages: Iterable[AnthropicUsage], model: str = AnthropicStub.model) -> Decimal:
    """Sum of per-call prices of what an Anthropic stub reported (all input figures)."""
    return sum(
        (
            price(
                model,
                u.total_input,
                u.output_tokens,
                u.cache_read_input_tokens,
                u.cache_creation_input_tokens,
            )
            for u in usages
        ),
        Decimal(0),
    )
