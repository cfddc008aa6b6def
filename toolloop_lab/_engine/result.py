"""``ToolLoopResult``: what a finished run hands back.

It holds the answer, the transcript and the events; every figure is read from the run's
closing ``LoopFinished`` event, never copied, so the result and the events cannot disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, NoReturn, TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from toolloop_lab._spend.usage import format_usd
from toolloop_lab._support.derived import Derived
from toolloop_lab.events import Event, LoopFinished, tool_rounds_of

T = TypeVar("T")

_NOT_AWAITABLE: Final = (
    "agent.run(...) is synchronous: it has already run the loop to its end and returned "
    "this ToolLoopResult, which cannot be awaited. In async code call "
    "`await agent.arun(...)` instead: it does not block the event loop."
)


def _closing(read: Callable[[LoopFinished], T]) -> Derived[ToolLoopResult, T]:
    """A figure of the result, read from its closing event on every access."""
    return Derived(lambda result: read(result.finished))


@dataclass(frozen=True, slots=True, repr=False)
class ToolLoopResult:
    """What a finished loop returns: the answer, the transcript and the events; every
    figure is read from the run's closing ``LoopFinished`` event, never copied."""

    final_response: AIMessage
    messages: tuple[BaseMessage, ...]
    """The whole transcript, input messages included."""
    events: tuple[Event, ...]

    def __repr__(self) -> str:
        # a cell ending in a run would otherwise print every message and event in full
        # (tens of thousands of characters); they stay one attribute away
        end = self.finished
        text = self.final_response.text
        said = text if len(text) <= 60 else text[:57] + "..."
        return (
            f"ToolLoopResult(outcome={end.outcome!r}, tool_rounds={tool_rounds_of(end)}, "
            f"model_calls={end.usage.requests}, tokens={end.usage.input_tokens} in / "
            f"{end.usage.output_tokens} out, cost={format_usd(end.usage.cost_usd)}, "
            f"final={said!r}, messages={len(self.messages)}, events={len(self.events)})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def __await__(self) -> NoReturn:
        # `await agent.run(...)` gets this instead of Python's "can't be used in 'await'
        # expression", which names no fix
        raise TypeError(_NOT_AWAITABLE)

    @property
    def finished(self) -> LoopFinished:
        """The run's closing event."""
        last = self.events[-1]
        assert isinstance(last, LoopFinished)
        return last

    usage = _closing(lambda e: e.usage)
    """Every model call of the loop, synthesis and pruning included."""
    rounds = _closing(lambda e: e.rounds)
    """Rounds run: model calls with the tools bound, the one whose reply answered
    included (a final-answer call is not a round). Three tool rounds then an answer give
    ``rounds=4``; see :attr:`tool_rounds` and :attr:`model_calls`."""
    tool_rounds = _closing(tool_rounds_of)
    """Rounds that ended in tool calls, each answered (by its tools, or as not run when the
    token budget ran out first): :attr:`rounds` less the round whose reply answered."""
    model_calls = _closing(lambda e: e.usage.requests)
    """Model calls the run paid for: every round's (the answering one included), the
    final-answer call's and the pruning model's (``usage.requests``)."""
    outcome = _closing(lambda e: e.outcome)
    """How the run ended (see :data:`toolloop_lab.events.Outcome`)."""
    budget_exhausted = _closing(lambda e: e.budget_exhausted)
    """The token budget was spent (synthesis then answered)."""
    synthesis_was_run = _closing(lambda e: e.synthesis_was_run)
    """A synthesis call answered."""
    synthesis_reason = _closing(lambda e: e.synthesis_reason)
    """Why synthesis ran, if it did."""
    run_id = _closing(lambda e: e.run_id)
    """The id every event of the run carries."""
    final_empty = _closing(lambda e: e.final_empty)
    """The final answer has no text (an empty or thinking-only reply)."""
    final_truncated = _closing(lambda e: e.final_truncated)
    """The final answer was cut off by the provider's output-token limit."""
    accumulated_prompt = _closing(lambda e: e.usage.input_tokens)
    """Sum of input tokens over every model call of the loop."""
    accumulated_completion = _closing(lambda e: e.usage.output_tokens)
    """Sum of output tokens over every model call of the loop."""
    cost_usd = _closing(lambda e: e.usage.cost_usd)
    """Total USD cost, or ``None`` when any call was unpriced."""
    usage_estimated = _closing(lambda e: e.usage.estimated)
    """True when some provider reported no usage and counts were estimated."""
