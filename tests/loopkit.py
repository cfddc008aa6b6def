"""Script builders and reference prices shared by the tool-loop tests.

Prices are computed here straight from genai-prices' public ``calc_price``, never through
toolloop_lab's pricing module, so a cost assertion compares two independent sums.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any

import genai_prices
from langchain_core.messages import AIMessage, ToolCall
from langchain_core.messages.ai import UsageMetadata

__all__ = ["MODEL", "calls", "final", "reference_cost", "tool_call", "usage"]

MODEL = "gpt-4o-mini"
"""A model genai-prices knows, so runs are priced."""


def usage(
    input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0
) -> UsageMetadata:
    """``usage_metadata`` as a provider reports it."""
    meta: UsageMetadata = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
    if cache_read or cache_write:
        meta["input_token_details"] = {"cache_read": cache_read, "cache_creation": cache_write}
    return meta


def tool_call(name: str, args: dict[str, Any], call_id: str) -> ToolCall:
    """One well-formed tool call."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def calls(*tool_calls: ToolCall, text: str = "", tokens: tuple[int, int] = (10, 5)) -> AIMessage:
    """A reply that asks for ``tool_calls`` (empty ``text`` makes it a stuck reply)."""
    return AIMessage(content=text, tool_calls=list(tool_calls), usage_metadata=usage(*tokens))


def final(text: str, tokens: tuple[int, int] = (10, 5)) -> AIMessage:
    """A final answer: text and no tool calls."""
    return AIMessage(content=text, usage_metadata=usage(*tokens))


def reference_cost(
    per_call: Iterable[tuple[int, int]] | Iterable[tuple[int, int, int, int]], model: str = MODEL
) -> Decimal:
    """Sum of genai-prices' price for each call's (input, output[, cache_read, cache_write])."""
    total = Decimal(0)
    for counts in per_call:
        inp, out, *cache = counts
        read, write = [*cache, 0, 0][:2]
        calc = genai_prices.calc_price(
            genai_prices.Usage(
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_tokens=write,
            ),
            model_ref=model,
        )
        total += Decimal(calc.total_price)
    return total
