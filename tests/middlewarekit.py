"""Running the same agent two ways: as an ``LLMAgent`` and as LangChain's ``create_agent``
with :class:`~toolloop_lab.ToolLoopMiddleware` (its model, tools, config, pruning model and
prices taken from the ``LLMAgent``), each under the same USD limit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

from toolloop_lab import LLMAgent, ToolLoopMiddleware, usd_budget
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import Event


@dataclass
class Ran:
    """What one run left: its events (as an observer heard them), the error it raised."""

    events: list[Event]
    error: BaseException | None
    output: Any = None


def middleware_for(agent: LLMAgent, *observers: Callable[[Any], object]) -> ToolLoopMiddleware:
    """The middleware that drives ``agent``'s loop inside ``create_agent``."""
    return ToolLoopMiddleware(
        agent.config,
        pruning_model=agent.pruning_model,
        prices=agent.prices,
        observers=observers,
    )


def graph_for(agent: LLMAgent, middleware: Sequence[Any]) -> Any:
    """``create_agent`` on ``agent``'s model and tools, with ``middleware``."""
    return create_agent(agent.model, list(agent.tools), middleware=list(middleware))


def run_llm_agent(agent: LLMAgent, prompt: str, usd_limit: Decimal | None = None) -> Ran:
    events: list[Event] = []
    agent.subscribe(events.append)
    try:
        with usd_budget(usd_limit):
            agent.run(prompt)
    except ToolLoopLabError as exc:  # ToolLoopError, ExecutionError, RunStopped
        return Ran(events, exc)
    return Ran(events, None)


def run_create_agent(
    agent: LLMAgent,
    prompt: str,
    usd_limit: Decimal | None = None,
    *,
    extra: Sequence[Any] = (),
    first: Sequence[Any] = (),
) -> Ran:
    """Run ``agent``'s model and tools through ``create_agent`` with the middleware (after
    ``first``, before ``extra``)."""
    events: list[Event] = []
    middleware = middleware_for(agent, events.append)
    graph = graph_for(agent, [*first, middleware, *extra])

    async def go() -> Any:
        with usd_budget(usd_limit):
            return await graph.ainvoke({"messages": [HumanMessage(prompt)]})

    try:
        output = asyncio.run(go())
    except ToolLoopLabError as exc:  # ToolLoopError, ExecutionError, RunStopped
        return Ran(events, exc)
    return Ran(events, None, output)
