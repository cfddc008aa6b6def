"""Pause points: where a debugger may hold the loop (step mode) before it goes on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = ["PauseHook", "PausePoint"]


@dataclass(frozen=True, slots=True)
class PausePoint:
    """The loop is about to make a model call or dispatch a round's tool calls."""

    run_id: str
    round: int
    stage: Literal["model_call", "tool_dispatch"]
    purpose: str
    """"round", "synthesis" or "pruning" for model calls; "tools" for dispatch."""
    detail: tuple[str, ...] = ()
    """Tool names about to run, for ``tool_dispatch``."""


PauseHook: TypeAlias = Callable[[PausePoint], Awaitable[None]]
"""Awaited at every pause point; cancelling the loop's task while it waits stops the loop."""
