"""Run a session again and read how it ended: the core fork and what-if share.

A fork (:mod:`toolloop_lab._replay.fork`) re-runs a run from one of its rounds; a what-if
(:mod:`toolloop_lab._replay.whatif`) re-runs a recorded session under another config.
Both run an ordinary :class:`~toolloop_lab._engine.agent.LLMAgent` and then put the re-run next to
the run it came from, so both need the same two things, written here once:

* **the error policy** (:func:`rerun`): a bad config raises as ``LLMAgent`` does (there is
  no run to compare); every other stop (a budget, a tool-loop failure, a replay that ran
  out of replies) is a result, with the typed error and the partial figures; cancellation
  propagates;
* **the result** (:class:`Rerun`): the re-run's events, its figures
  (:class:`~toolloop_lab._replay.figures.RunFigures`) and its spend, whether it finished or
  raised; and the note a comparison prints when it did not finish (:func:`stop_notes`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.figures import RunFigures, error_spend
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.escape import TEXT_CHARS, plain
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError, ToolLoopLabError
from toolloop_lab.events import Event


@dataclass(frozen=True, slots=True)
class Rerun:
    """How a re-run ended: its figures, spend and events, whether it finished or raised."""

    figures: RunFigures
    """The re-run's outcome and spend (a ``failed`` one's partial figures)."""
    spent: Usage
    """What the re-run spent, as far as it got."""
    events: tuple[Event, ...]
    """The re-run's events, as far as it got."""
    result: ToolLoopResult | None = None
    """The re-run's result, when it finished."""
    error: ToolLoopError | ExecutionError | None = None
    """The typed error that stopped it, when it did not."""

    @classmethod
    def finished(cls, result: ToolLoopResult) -> Rerun:
        """A re-run that finished."""
        return cls(RunFigures.of_result(result), result.usage, result.events, result=result)

    @classmethod
    def stopped(cls, error: ToolLoopError | ExecutionError) -> Rerun:
        """A re-run that raised ``error`` (its partial figures, from its closing event)."""
        return cls(RunFigures.of_error(error), error_spend(error), error.events, error=error)


def stop_notes(
    run: str, recording: str, figures: RunFigures, error: ToolLoopLabError | None
) -> list[str]:
    """The note a comparison prints under its table when the re-run (``run``, with these
    ``figures``) did not finish: it needed a reply beyond ``recording``, or ``error``
    stopped it (its first line, untrusted: :func:`plain`, as every text view)."""
    if figures.detail == "beyond_recording":
        return [f"* The {run} needed a reply beyond {recording}; figures are up to there."]
    if error is None:
        return []
    first_line = describe(error).splitlines()[0]
    return [f"* The {run} stopped: {type(error).__name__}: {plain(first_line, TEXT_CHARS)}"]


async def rerun(agent: LLMAgent, messages: Sequence[BaseMessage]) -> Rerun:
    """Run ``agent`` on ``messages``; a bad config raises, every other stop is reported."""
    try:
        return Rerun.finished(await agent.arun(list(messages)))
    except ToolLoopError as exc:
        if isinstance(exc.cause, ConfigurationError):
            raise
        return Rerun.stopped(exc)
    except ExecutionError as exc:
        return Rerun.stopped(exc)
