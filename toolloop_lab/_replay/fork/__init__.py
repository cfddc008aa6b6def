"""Fork a run: keep its first rounds as they were, and run the rest again.

::

    from toolloop_lab import fork

    result = agent.run("Rotate the API keys.")       # or a trace path, or a recording path
    forked = fork(result, 2, model=model, tools=tools, config=AgentConfig(tool_max_rounds=3))
    print(forked.summary)       # original and fork side by side: outcome, rounds, tokens, cost
    forked.comparison()         # the same, round by round, as a pandas frame

**Where the fork starts.** The fork's round ``at_round`` is sent exactly what the
original's round ``at_round`` was sent, a person's edits and added messages included (when
that row was the synthesis call: the conversation before the synthesis prompt). The rounds
before it are *taken* from the source: no model call and no tool call is made for them,
and their tokens and cost are the source's own figures.

**How it runs.** The rest is an ordinary :class:`~toolloop_lab._engine.agent.LLMAgent` run on that
conversation, so its events, pauses and budgets are the real loop's, and what a person
changes at its pauses is recorded as usual. It runs on the model given: a scripted model or
a replay that made the run answers from where the original got its reply at that round (on
a copy), and one that cannot answer at all is refused before any call (:mod:`.answering`).
That run is given what the whole run would have left at round ``at_round``: the round cap
less the rounds taken, the token budget less the tokens taken, and the USD limit of the
``usd_budget`` in force less the cost taken. Each gate therefore trips exactly where it
would have in one uninterrupted run, and a fork at round *k* with the same replies
reproduces the original's rounds, tokens and cost exactly: the fork's figures are the taken
rounds' plus its own run's. The fork's own events number its rounds from 1 (its round 1 is
round ``at_round``); :class:`ForkResult` renumbers them.

**How it is built.** :mod:`.source` reads the source (the conversation the fork's first
call is sent, the figures of the rounds taken), :mod:`.remaining` works out what the fork's
own run is given, :mod:`.compare` holds the rounds side by side and :class:`ForkResult`, and
the run itself and its error policy are the core fork shares with what-if
(:mod:`toolloop_lab._replay.rerun`). This module puts them together: :func:`prepare_fork`,
:class:`Fork`, :func:`fork` and :func:`afork`.

**For a debugger** ("Fork from here"), :func:`prepare_fork` checks everything and returns a
:class:`Fork` without running it; a ``Fork`` has the agent API a debugger drives
(``observers``, ``subscribe``, ``add_pause_hook``, ``arun``), so
``LoopDebugger().start(prepared, ())`` runs it in step mode and the task's result is the
:class:`ForkResult`.

Limits, by construction:

* stuck detection (``max_stuck_rounds``) starts afresh at the fork: its first round is not
  compared with the round before it;
* a recording holds the main model's calls only: the rounds taken from one leave pruning
  out, as its recorded figures do; one run per recording file;
* to replay the original's own replies in the fork, use strict replay
  (``ReplayChatModel.from_file(path)``): it finds each request's line wherever it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_messages
from langchain_core.tools import BaseTool

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.hooks import PauseHook
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._replay.fork.answering import fork_model
from toolloop_lab._replay.fork.remaining import derived_config, remaining
from toolloop_lab._replay.fork.result import (
    ForkResult,
    RoundFigures,
    SourceKind,
    rows_of_view,
)
from toolloop_lab._replay.fork.source import ForkSource, Taken, read_source
from toolloop_lab._replay.rerun import Rerun, rerun
from toolloop_lab._runview import RunView
from toolloop_lab._spend.budget import (
    caller_context,
    current_prices,
    current_usd_budget,
    unpriced_error,
    usd_budget,
)
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.derived import Derived
from toolloop_lab._support.sync_runner import parameters_of, run_sync
from toolloop_lab.events import Observer

T = TypeVar("T")


def _from_agent(read: Callable[[LLMAgent], T]) -> Derived[Fork, T]:
    """What the agent of the fork's own run has, read on every access."""
    return Derived(lambda fork: read(fork.agent))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fork:
    """A fork checked and ready to run (see :func:`prepare_fork`).

    It has the agent API a debugger drives (``observers``, ``subscribe``,
    ``add_pause_hook``, ``arun``): observers and pause hooks go to the fork's own run.
    """

    at_round: int
    source: SourceKind
    """What the fork was taken from."""
    prefix: tuple[BaseMessage, ...]
    """The conversation the fork's own run starts from."""
    taken: Usage
    """What the rounds before ``at_round`` spent, from the source."""
    original: RunFigures
    """The source's own run, as its figures."""
    original_rounds: tuple[RoundFigures, ...]
    """The source's rounds."""
    config: AgentConfig
    """The fork's config, as given (or as the source recorded it)."""
    agent: LLMAgent
    """The agent of the fork's own run (its config is :attr:`run_config`)."""

    run_config = _from_agent(lambda agent: agent.config)
    """The config of the fork's own run: :attr:`config` less what the rounds taken used."""

    def __repr__(self) -> str:
        return (
            f"Fork(at_round={self.at_round}, source={self.source!r}, "
            f"prefix={len(self.prefix)} messages)"
        )

    # the agent API a debugger drives
    observers = _from_agent(lambda agent: agent.observers)
    """The observers of the fork's own run."""

    def subscribe(self, callback: Observer) -> Callable[[], None]:
        """Add an observer of the fork's own run; returns its remover."""
        return self.agent.subscribe(callback)

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]:
        """Add a pause hook to the fork's own run; returns its remover."""
        return self.agent.add_pause_hook(hook)

    async def arun(self, added: str | Sequence[Any] = ()) -> ForkResult:
        """Run the fork; ``added`` messages (a string is a user message) follow the
        prefix, before the fork's first call. A bad config raises as ``LLMAgent`` does,
        and so does a USD budget in force when the rounds taken are unpriced (what remains
        of it is unknown); every other stop is reported in the result (``forked.outcome``,
        ``error``); cancellation propagates."""
        extra = [added] if isinstance(added, str) else list(added)
        messages = [*self.prefix, *convert_to_messages(extra)]
        budget = current_usd_budget()
        if budget is None:
            return self._result(await rerun(self.agent, messages))
        if self.taken.cost_usd is None:
            raise unpriced_error(None)  # what the rounds taken cost is unknown: no cap holds
        left = max(budget.limit_usd - self.taken.cost_usd, Decimal(0))
        with usd_budget(left, prices=budget.prices):
            return self._result(await rerun(self.agent, messages))

    def run(self, added: str | Sequence[Any] = ()) -> ForkResult:
        """Synchronous :meth:`arun` (works in a notebook cell too)."""
        return run_sync(lambda: self.arun(added), caller_context())

    def _result(self, run: Rerun) -> ForkResult:
        """The fork's own run, put after the rounds taken and next to the original."""
        offset = self.at_round - 1
        own = run.figures
        before = tuple(
            dataclasses.replace(r, taken=True)
            for r in self.original_rounds
            if r.round < self.at_round
        )
        mine = rows_of_view(RunView.from_events(run.events), own.outcome, offset=offset)
        return ForkResult(
            at_round=self.at_round,
            source=self.source,
            config=self.config,
            run_config=self.run_config,
            prefix=self.prefix,
            taken=self.taken,
            original=self.original,
            forked=own.with_spend(self.taken + run.spent, offset + own.rounds),
            original_rounds=self.original_rounds,
            fork_rounds=before + mine,
            result=run.result,
            error=run.error,
        )


def prepare_fork(
    source: ForkSource,
    at_round: int,
    *,
    model: BaseChatModel,
    tools: Iterable[BaseTool],
    config: AgentConfig | None = None,
    pruning_model: BaseChatModel | None = None,
    observers: Iterable[Observer] = (),
    pause_hooks: Iterable[PauseHook] = (),
    prices: Mapping[str, TokenPrice] | None = None,
    run_id: str | None = None,
) -> Fork:
    """Read ``source`` and check the fork, without running anything (see :func:`fork`).

    Raises :class:`~toolloop_lab.errors.ConfigurationError` naming the field for a round
    the source does not have (``at_round``), a config the run could never have reached
    that round under (``tool_max_rounds``, ``token_budget_percent``), a model that cannot
    answer the fork (``model``, ``pruning_model``: see :mod:`.answering`) or a bad config;
    a missing or unreadable file raises the trace's or the recording's own error, and so
    does a trace whose rounds taken touch lines :func:`read_trace` had to skip
    (:class:`~toolloop_lab.errors.TraceError`, its ``lines`` naming them).
    """
    merged = {**(prices or {}), **(current_prices() or {})} or None
    taken = read_source(source, at_round, run_id, merged)
    model, pruning_model = _answering(model, pruning_model, taken, at_round)
    chosen = (config if config is not None else derived_config(taken.started)).validated()
    run_config = remaining(chosen, model, at_round, taken.taken)
    agent = LLMAgent(
        model,
        tools,
        run_config,
        pruning_model=pruning_model,
        observers=observers,
        pause_hooks=pause_hooks,
        prices=prices,
    )
    return Fork(
        at_round,
        taken.kind,
        taken.prefix,
        taken.taken,
        taken.figures,
        taken.rounds,
        chosen,
        agent,
    )


def _answering(
    model: BaseChatModel, pruning_model: BaseChatModel | None, taken: Taken, at_round: int
) -> tuple[BaseChatModel, BaseChatModel | None]:
    """The models the fork's own run calls, in place of those given (:mod:`.answering`)."""
    main = fork_model(model, taken.asked, field="model", at_round=at_round)
    if pruning_model is None:
        return main, None
    return main, fork_model(pruning_model, taken.pruned, field="pruning_model", at_round=at_round)


@parameters_of(prepare_fork)
async def afork(*args: Any, **kwargs: Any) -> ForkResult:
    """Fork ``source`` at ``at_round`` (see :func:`fork`, its sync form)."""
    return await prepare_fork(*args, **kwargs).arun()


@parameters_of(prepare_fork)
def fork(*args: Any, **kwargs: Any) -> ForkResult:
    """Re-run ``source`` from round ``at_round`` on ``model``; compare with the original.

    ``source`` is a :class:`ToolLoopResult`, its events, a trace or a recording (a path
    or the loaded object); ``run_id`` picks one run of a trace holding several (default:
    the newest top-level run, as everywhere: :func:`~toolloop_lab.events.select_run`; a
    run the source lacks raises :class:`~toolloop_lab.errors.UnknownRunError`). Rounds
    before ``at_round`` are taken from the source without any model or tool call; from
    ``at_round`` on, ``model`` runs (live, scripted or a replay) with ``tools``, under
    ``config`` (default: the config the source recorded: round cap, context window, token
    budget, pruned tools; for a recording the default config). ``observers`` and
    ``pause_hooks`` watch and hold the fork's own run, so it can pause for edits. Works in
    a notebook cell too; :func:`afork` is the async form.
    """
    return prepare_fork(*args, **kwargs).run()
