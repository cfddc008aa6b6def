"""The debugger's "Fork from here": what a fork needs, the fork's debugger, the comparison.

A fork re-runs a finished run from one of its rounds
(:func:`toolloop_lab._replay.fork.prepare_fork`), so it needs the model, tools and config
to run with. A debugger that ran or watched an
:class:`~toolloop_lab._engine.agent.LLMAgent` has them; a fork's own debugger has the fork's
agent; a debugger opened from a trace has none unless it is given one (``fork_with=``).
:func:`fork_parts` reads them off whichever it has, or says there are none.

:func:`fork_comparison` is what the fork's debugger shows once the fork ends: the
original from the fork's round on next to the fork, round by round
(:func:`toolloop_lab.compare`, the fork's rounds lined up with the original's), with both
whole runs' figures, as any two runs are shown (:mod:`.comparison`), numbered as the person
saw the original.

:class:`Forking` is a debugger's side of it: it makes a fork of the run shown
(:meth:`LoopDebugger.fork`, or the browser's button), starts it in a new debugger that
numbers rounds as this one does, keeps the forks made, and shows the comparison on a fork's
debugger when the fork ends.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._replay.compare import RunComparison, compare
from toolloop_lab._replay.fork import Fork, prepare_fork
from toolloop_lab._replay.fork.result import ForkResult
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._support.errortext import describe
from toolloop_lab._widget.comparison import comparison_payload
from toolloop_lab._widget.control import DebuggableAgent
from toolloop_lab._widget.frontend import in_marimo, with_inline_loader
from toolloop_lab._widget.requests import Answer, ForkHere
from toolloop_lab._widget.steps import PauseMode
from toolloop_lab.errors import ConfigurationError, ToolLoopLabError
from toolloop_lab.events import Event

if TYPE_CHECKING:
    import ipywidgets

    from toolloop_lab._widget.debugger import LoopDebugger


@dataclass(frozen=True, slots=True)
class ForkParts:
    """What a fork of a run is made with."""

    model: BaseChatModel
    tools: tuple[BaseTool, ...]
    config: AgentConfig
    pruning_model: BaseChatModel | None
    prices: Mapping[str, TokenPrice] | None


def fork_parts(agent: object) -> ForkParts | None:
    """The model, tools and config of ``agent`` (an ``LLMAgent``, a ``Fork``, or a
    ``ToolLoopMiddleware`` after a run); ``None`` for anything else (a test player, a
    foreign agent): then no fork can be made."""
    config: AgentConfig | None = None
    if isinstance(agent, Fork):
        config = agent.config  # what the fork was asked for, not what remained of it
        agent = agent.agent
    if not isinstance(agent, LLMAgent):
        # a driver of another framework's agent (ToolLoopMiddleware) says what its run ran
        # with: the fork runs as an LLMAgent on it
        method = getattr(type(agent), "_fork_parts", None)
        found = method(agent) if callable(method) else None
        return None if found is None else ForkParts(*found)
    return ForkParts(
        agent.model,
        agent.tools,
        config if config is not None else agent.config,
        agent.pruning_model,
        agent.prices,
    )


def fork_comparison(
    result: ForkResult,
    original: Sequence[Event],
    *,
    offset: int,
    max_chars: int,
    budget_bytes: int,
) -> dict[str, Any]:
    """The fork next to its ``original`` (its events), from the fork's round on, as the
    page draws a comparison; rounds are numbered as in the original plus ``offset`` (the
    original's own label offset). The totals are both whole runs' (the fork's rounds taken
    from the original included), as the fork's summary says them."""
    try:
        compared = compare(original, result)  # lined up, the fork's figures its whole run's
    except ConfigurationError:  # the fork stopped before its first event: totals only
        compared = RunComparison(result.original, result.forked, None, None, ())
    whole = dataclasses.replace(compared, a=result.original)
    return comparison_payload(
        whole,
        max_chars=max_chars,
        budget_bytes=budget_bytes,
        kind="fork",
        labels=("original", "fork"),
        offset=offset,
        from_round=result.at_round + offset,
    )


class Forking:
    """The forks of one debugger's run, and, on a fork's debugger, its comparison."""

    def __init__(self, fork_with: DebuggableAgent[Any] | None) -> None:
        self.fork_with = fork_with
        """The agent forks run with, when given; else the agent last run or watched."""
        self.source: str | os.PathLike[str] | None = None
        """The trace file the run shown was read from (a fork reads it again, whole)."""
        self.forks: list[LoopDebugger] = []
        self.offset = 0
        """The original's own round offset: the comparison numbers rounds as it did."""
        self.summary: str | None = None
        """The comparison as text, once the fork shown here ended."""
        self.original: tuple[Event, ...] = ()
        """On a fork's debugger: the events of the run it was forked from."""

    def parts(self, agent: object | None) -> ForkParts | None:
        """What a fork runs with: ``fork_with``'s, else ``agent``'s (last run or watched)."""
        return fork_parts(self.fork_with if self.fork_with is not None else agent)

    def fork(
        self,
        dbg: LoopDebugger,
        agent: object | None,
        at_round: int,
        config: AgentConfig | None,
        pause_on: PauseMode | None,
    ) -> LoopDebugger:
        """Fork the run ``dbg`` shows and start the fork (see :meth:`LoopDebugger.fork`)."""
        view = dbg.view
        if not view.done:
            raise ConfigurationError(
                "only a finished (or replayed) run can be forked", field="source"
            )
        parts = self.parts(agent)
        if parts is None:
            raise ConfigurationError(
                "this debugger knows no agent to fork with: give one, as in "
                "LoopDebugger.from_trace(path, fork_with=agent)",
                field="fork_with",
            )
        own = at_round - dbg.round_offset if type(at_round) is int else at_round
        source: Any = self.source if self.source is not None else dbg.events
        prepared = prepare_fork(
            source,
            own,
            model=parts.model,
            tools=parts.tools,
            config=config if config is not None else parts.config,
            pruning_model=parts.pruning_model,
            prices=parts.prices,
            run_id=view.run_id,
        )
        child = self._child(dbg, prepared, pause_on)
        child.start(prepared, ())
        self.forks.append(child)
        return child

    def _child(self, dbg: LoopDebugger, prepared: Fork, pause_on: PauseMode | None) -> LoopDebugger:
        """The debugger a fork runs in: it numbers rounds as ``dbg`` does, and pauses
        where ``dbg`` pauses (before every model call when ``dbg`` never pauses)."""
        mode: PauseMode = pause_on or (dbg.pause_on if dbg.pause_on != "off" else "model")
        kind = type(dbg)
        if in_marimo():  # made by a click, outside any cell: its module must need no cell
            kind = with_inline_loader(kind)
        child = kind(
            max_text_chars=dbg.max_text_chars,
            saved_state_bytes=dbg.saved_state_bytes,
            pause_on=mode,
            fork_with=self.fork_with,
        )
        child.round_offset = dbg.round_offset + prepared.at_round - 1
        child.fork_info = {
            "at_round": prepared.at_round + dbg.round_offset,
            "source": prepared.source,
        }
        child._forking.offset = dbg.round_offset  # the fork's own record, kept by its maker
        child._forking.original = dbg.events
        return child

    def show_comparison(self, dbg: LoopDebugger, result: ForkResult) -> None:
        """Show on ``dbg`` (a fork's debugger) the fork next to its original."""
        self.summary = result.summary
        dbg.comparison = fork_comparison(
            result,
            self.original,
            offset=self.offset,
            max_chars=dbg.max_text_chars,
            budget_bytes=dbg.saved_state_bytes,
        )

    def from_browser(
        self,
        dbg: LoopDebugger,
        request: ForkHere,
        agent: object | None,
        area: ipywidgets.Output | None,
    ) -> Answer:
        """ "Fork from here", clicked on ``dbg``: the fork is shown in ``area`` (below
        ``dbg``); a fork that cannot be made is a refusal naming why."""
        try:
            child = self.fork(dbg, agent, request.round + dbg.round_offset, None, None)
        except ToolLoopLabError as exc:  # a ConfigurationError names its field
            reason = getattr(exc, "field", None) or type(exc).__name__
            return Answer(request.request, "fork", False, str(reason), describe(exc))
        except RuntimeError as exc:  # no running event loop: start() says why
            return Answer(request.request, "fork", False, "no_event_loop", describe(exc))
        if area is None:  # shown some other way (marimo, inside a box): a cell shows the fork
            where = f"the fork runs; show it in a cell with dbg.forks[{len(self.forks) - 1}]"
            return Answer(request.request, "fork", True, message=where)
        from IPython import display

        show: Any = display.display
        with area:  # the click's own output would go nowhere a person looks
            show(child)
        return Answer(
            request.request, "fork", True, message="the fork runs in a new debugger below this one"
        )
