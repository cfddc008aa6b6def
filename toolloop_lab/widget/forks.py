"""The debugger's "Fork from here": what a fork needs, and the comparison it shows.

A fork re-runs a finished run from one of its rounds (:func:`toolloop_lab.forking.prepare_fork`),
so it needs the model, tools and config to run with. A debugger that ran or watched an
:class:`~toolloop_lab.agent.LLMAgent` has them; a fork's own debugger has the fork's
agent; a debugger opened from a trace has none unless it is given one (``fork_with=``).
:func:`fork_parts` reads them off whichever it has, or says there are none.

:func:`comparison` is the side-by-side the fork's debugger shows once the fork ends: the
two runs' totals and each round of either, read from :class:`~toolloop_lab.forking.ForkResult`
(``rounds`` and the run figures; no pandas), numbered as the person saw the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from toolloop_lab.agent import AgentConfig, LLMAgent
from toolloop_lab.forking import Fork, ForkResult, RoundFigures
from toolloop_lab.pricing import TokenPrice
from toolloop_lab.recording_whatif import RunFigures

__all__ = ["ForkParts", "comparison", "fork_parts"]


@dataclass(frozen=True, slots=True)
class ForkParts:
    """What a fork of a run is made with."""

    model: BaseChatModel
    tools: tuple[BaseTool, ...]
    config: AgentConfig
    pruning_model: BaseChatModel | None
    prices: Mapping[str, TokenPrice] | None


def fork_parts(agent: object) -> ForkParts | None:
    """The model, tools and config of ``agent`` (an ``LLMAgent`` or a ``Fork``); ``None``
    for anything else (a test player, a foreign agent): then no fork can be made."""
    config: AgentConfig | None = None
    if isinstance(agent, Fork):
        config = agent.config  # what the fork was asked for, not what remained of it
        agent = agent.agent
    if not isinstance(agent, LLMAgent):
        return None
    return ForkParts(
        agent.model,
        agent.tools,
        config if config is not None else agent.config,
        agent.pruning_model,
        agent.prices,
    )


def _usd(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _round(row: RoundFigures | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "purpose": row.purpose,
        "tokens": row.total_tokens,
        "cost_usd": _usd(row.cost_usd),
        "tool_calls": row.tool_calls,
        "tool_errors": row.tool_errors,
        "outcome": row.outcome,
    }


def _run(figures: RunFigures) -> dict[str, Any]:
    return {
        "outcome": figures.outcome,
        "reason": figures.synthesis_reason or figures.detail,
        "rounds": figures.rounds,
        "calls": figures.calls,
        "input_tokens": figures.input_tokens,
        "output_tokens": figures.output_tokens,
        "cost_usd": _usd(figures.cost_usd),
    }


def comparison(result: ForkResult, offset: int = 0) -> dict[str, Any]:
    """The original and the fork, side by side, as JSON data for the view; rounds are
    numbered as in the original plus ``offset`` (the original's own label offset)."""
    delta = result.cost_delta
    return {
        "original": _run(result.original),
        "fork": _run(result.forked),
        "tokens_delta": result.token_delta,
        "cost_delta_usd": _usd(delta),
        "rounds": [
            {
                "round": pair.round + offset,
                "taken": pair.taken,
                "original": _round(pair.original),
                "fork": _round(pair.fork),
                "tokens_delta": pair.tokens_delta,
                "cost_delta_usd": _usd(pair.cost_delta),
            }
            for pair in result.rounds
        ],
        "summary": result.summary,
        "error": None if result.error is None else type(result.error).__name__,
    }
