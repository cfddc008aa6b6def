"""What a fork's own run is given: the config the source recorded, less what the rounds
taken used.

A fork at round *k* runs the rest of the run, so its own run gets what the whole run would
have left at round *k*: the round cap less the rounds taken, and the token budget less the
tokens taken (as a ``token_budget_percent`` of the same window). A fork the whole run could
never have reached is refused, naming the field to raise.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from langchain_core.language_models import BaseChatModel

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._spend.budget import resolve_context_window, resolve_token_budget
from toolloop_lab._spend.usage import Usage
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import LoopStarted


def _percent_for(limit: int, window: int) -> float:
    """The ``token_budget_percent`` whose budget over ``window`` is exactly ``limit``
    (the plain quotient when it rounds right, else the middle of the limit's interval)."""
    for percent in (limit * 100 / window, min(100.0, (limit + 0.5) * 100 / window)):
        if 0 < percent <= 100 and int(window * percent / 100) == limit:
            return percent
    raise ConfigurationError(  # pragma: no cover - float arithmetic guard
        f"no percent gives a token budget of {limit} in a {window}-token window",
        field="token_budget_percent",
    )


def derived_config(started: LoopStarted | None) -> AgentConfig:
    """The config a source recorded, as far as it recorded one (events only)."""
    if started is None:
        return AgentConfig()
    base = AgentConfig()
    fields: dict[str, Any] = {"prune_tools": tuple(started.prune_tools)}
    if started.max_rounds is not None:
        fields["tool_max_rounds"] = started.max_rounds
    if started.context_window is not None:
        fields["context_window"] = started.context_window
        if started.token_budget is not None:
            fields["token_budget_percent"] = _percent_for(
                started.token_budget, started.context_window
            )
    return dataclasses.replace(base, **fields)


def remaining(
    config: AgentConfig, model: BaseChatModel, at_round: int, taken: Usage
) -> AgentConfig:
    """``config`` with what remains of its round cap and token budget after the rounds
    taken; refuses a fork the whole run could never have reached."""
    done = at_round - 1
    if done == 0:
        return config
    left = config.tool_max_rounds - done
    if left < 1:
        raise ConfigurationError(
            f"the round cap is {config.tool_max_rounds}, so a run never reaches a tool round "
            f"{at_round}: raise tool_max_rounds to fork there",
            field="tool_max_rounds",
        )
    changes: dict[str, Any] = {"tool_max_rounds": left}
    budget = resolve_token_budget(config.token_budget_percent, config.context_window, model)
    if budget is not None and taken.total_tokens > 0:
        tokens = budget.limit - taken.total_tokens
        if tokens < 0:  # the budget tripped before at_round: the run synthesised there
            raise ConfigurationError(
                f"the rounds before round {at_round} spent {taken.total_tokens:,} tokens of a "
                f"{budget.limit:,}-token budget: raise token_budget_percent to fork there",
                field="token_budget_percent",
            )
        window, _source = resolve_context_window(config.context_window, model)
        changes["context_window"] = window
        changes["token_budget_percent"] = _percent_for(tokens, window)
    return dataclasses.replace(config, **changes)
