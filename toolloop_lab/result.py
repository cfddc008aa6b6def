"""``ToolLoopResult``: what a finished run hands back.

It holds the answer, the transcript and the events; every figure is read from the run's
closing ``LoopFinished`` event, never copied, so the result and the events cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from langchain_core.messages import AIMessage, BaseMessage

from toolloop_lab.events import Event, LoopFinished, Outcome, SynthesisReason
from toolloop_lab.usage import Usage

__all__ = ["ToolLoopResult"]


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """What a finished loop returns: the answer, the transcript and the events; every
    figure is read from the run's closing ``LoopFinished`` event, never copied."""

    final_response: AIMessage
    messages: tuple[BaseMessage, ...]
    """The whole transcript, input messages included."""
    events: tuple[Event, ...]

    @property
    def finished(self) -> LoopFinished:
        """The run's closing event."""
        last = self.events[-1]
        assert isinstance(last, LoopFinished)
        return last

    @property
    def usage(self) -> Usage:
        """Every model call of the loop, synthesis and pruning included."""
        return self.finished.usage

    @property
    def rounds(self) -> int:
        """Tool rounds run (synthesis not counted)."""
        return self.finished.rounds

    @property
    def outcome(self) -> Outcome:
        """How the run ended (see :data:`toolloop_lab.events.Outcome`)."""
        return self.finished.outcome

    @property
    def budget_exhausted(self) -> bool:
        """The token budget was spent (synthesis then answered)."""
        return self.finished.budget_exhausted

    @property
    def synthesis_was_run(self) -> bool:
        return self.finished.synthesis_was_run

    @property
    def synthesis_reason(self) -> SynthesisReason | None:
        return self.finished.synthesis_reason

    @property
    def run_id(self) -> str:
        return self.finished.run_id

    @property
    def final_empty(self) -> bool:
        """The final answer has no text (an empty or thinking-only reply)."""
        return self.finished.final_empty

    @property
    def final_truncated(self) -> bool:
        """The final answer was cut off by the provider's output-token limit."""
        return self.finished.final_truncated

    @property
    def accumulated_prompt(self) -> int:
        """Sum of input tokens over every model call of the loop."""
        return self.usage.input_tokens

    @property
    def accumulated_completion(self) -> int:
        """Sum of output tokens over every model call of the loop."""
        return self.usage.output_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        """Total USD cost, or ``None`` when any call was unpriced."""
        return self.usage.cost_usd

    @property
    def usage_estimated(self) -> bool:
        """True when some provider reported no usage and counts were estimated."""
        return self.usage.estimated
