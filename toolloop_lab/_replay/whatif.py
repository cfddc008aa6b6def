"""What if: re-run a recorded session under another ``AgentConfig`` and compare the spend.

The recorded replies are served by a relaxed :class:`~toolloop_lab.ReplayChatModel`
(see it for exactly what is matched), the tools run again, and the loop is the real one,
so a lower round cap, a token budget or pruning act exactly as they would live. The
result puts both runs' outcome, rounds, tokens and cost side by side. The re-run's error
policy and how its end is read are the core a fork shares (:mod:`toolloop_lab._replay.rerun`).

Limits, by construction:

* rounds beyond the recording have no replies. A what-if run that needs one (a higher
  round cap, or a run that no longer finishes where the recording did) ends ``failed``
  with detail ``"beyond_recording"`` and the partial figures; ``error`` holds the
  ``ToolLoopError`` whose cause is a
  :class:`~toolloop_lab.errors.ReplayExhaustedError`;
* a synthesis call the recording never made is answered by the recorded final answer
  (``stand_ins`` counts them) with estimated tokens;
* a recorded reply served for a request that changed (pruned outputs, for instance) keeps
  its recorded output tokens and gets its input tokens shifted by the approximate size
  change of the request; such runs report ``estimated=True``;
* the recording holds the main model's calls only: pruning calls of the recorded run are
  not in it, and a what-if's pruning model really runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.chat_models import ReplayChatModel
from toolloop_lab._replay.figures import (
    ComparedRuns,
    RunFigures,
    comparison_lines,
    config_text,
)
from toolloop_lab._replay.recording_file import Recording
from toolloop_lab._replay.rerun import Rerun, rerun, stop_notes
from toolloop_lab._spend.budget import current_usd_budget
from toolloop_lab._support.sync_runner import parameters_of, run_sync
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import Observer, Pruned


@dataclass(frozen=True, slots=True)
class WhatIfResult(ComparedRuns):
    """A recorded run next to the same session re-run under ``config`` (``token_delta``
    and ``cost_delta`` are the what-if's figures minus the recorded ones)."""

    config: AgentConfig
    recorded: RunFigures
    replayed: RunFigures
    stand_ins: int
    """Synthesis calls answered by the recorded final answer (their tokens are estimated)."""
    adjusted: int
    """Recorded replies served for a changed request (input tokens estimated)."""
    pruned: int
    """Tool outputs the what-if run pruned."""
    result: ToolLoopResult | None = field(default=None, repr=False)
    """The what-if loop's result, when it finished."""
    error: ToolLoopLabError | None = field(default=None, repr=False)
    """The typed error, when it did not (see ``replayed.outcome``)."""

    def _runs(self) -> tuple[RunFigures, RunFigures]:
        return self.recorded, self.replayed

    @property
    def summary(self) -> str:
        """A plain-text comparison table with notes on every estimate."""
        lines = [f"What if {config_text(self.config)}:"]
        lines += comparison_lines(("recorded", "what-if"), self.recorded, self.replayed)
        return "\n".join(lines + self._notes())

    def _notes(self) -> list[str]:
        notes = []
        if self.pruned:
            notes.append(f"* {self.pruned} tool output(s) pruned (pruning calls included above).")
        if self.adjusted:
            notes.append(
                f"* {self.adjusted} recorded repl(ies) served for a changed request: input "
                "tokens estimated from the size change."
            )
        if self.stand_ins:
            notes.append(
                f"* {self.stand_ins} synthesis call(s) answered by the recorded final answer, "
                "tokens estimated."
            )
        notes += stop_notes("what-if run", "the recording", self.replayed, self.error)
        return notes


def _prepare(
    recording: Recording | str | os.PathLike[str],
    config: AgentConfig,
    tools: Iterable[BaseTool],
    pruning_model: BaseChatModel | None,
    stand_in_final: bool,
    observers: Iterable[Observer],
) -> tuple[Recording, ReplayChatModel, LLMAgent]:
    rec = recording if isinstance(recording, Recording) else Recording.from_file(recording)
    replay = ReplayChatModel(rec, mode="relaxed", stand_in_final=stand_in_final)
    agent = LLMAgent(replay, tools, config, pruning_model=pruning_model, observers=observers)
    return rec, replay, agent


def _finish(
    rec: Recording, replay: ReplayChatModel, config: AgentConfig, run: Rerun
) -> WhatIfResult:
    budget = current_usd_budget()
    served = replay.served
    return WhatIfResult(
        config=config,
        recorded=RunFigures.of_recording(rec, budget.prices if budget else None),
        replayed=run.figures,
        stand_ins=sum(1 for s in served if s.stand_in),
        adjusted=sum(1 for s in served if not s.exact and not s.stand_in),
        pruned=sum(1 for e in run.events if isinstance(e, Pruned)),
        result=run.result,
        error=run.error,
    )


async def awhat_if(
    recording: Recording | str | os.PathLike[str],
    config: AgentConfig,
    *,
    tools: Iterable[BaseTool],
    pruning_model: BaseChatModel | None = None,
    stand_in_final: bool = True,
    observers: Iterable[Observer] = (),
) -> WhatIfResult:
    """Re-run a recorded session under ``config`` (see :func:`what_if`, its sync form)."""
    rec, replay, agent = _prepare(
        recording, config, tools, pruning_model, stand_in_final, observers
    )
    return _finish(rec, replay, config, await rerun(agent, rec.task))


@parameters_of(awhat_if)
def what_if(*args: Any, **kwargs: Any) -> WhatIfResult:
    """Re-run a recorded session under ``config`` on the recorded replies; compare spend.

    ``recording`` is a path or a :class:`Recording` of one loop run. ``tools`` run again
    (pass the session's tools). The run's input is the recording's task (its first
    request up to the first AI message). Works in a notebook cell too (the synchronous form
    of :func:`awhat_if`, on the loop's one sync bridge); wrap it in ``usd_budget(...)`` to
    test a USD cap, and pass ``observers`` (e.g. a live view) to watch the what-if run. A
    bad ``config`` raises as it would for ``LLMAgent``; every other stop is reported in the
    result's ``replayed.outcome``.
    """
    return run_sync(lambda: awhat_if(*args, **kwargs))
