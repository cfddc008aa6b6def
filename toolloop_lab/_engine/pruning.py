"""Tool-output pruning: a second model shortens a large output before the main model sees it.

The pruned text replaces the ``ToolMessage`` content; the original stays in ``artifact`` so
nothing is lost. Savings are measured with langchain-core's approximate token counter on
both texts, the same yardstick before and after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from toolloop_lab._engine.model_call import silence_limit
from toolloop_lab._spend.usage import Usage

DEFAULT_PRUNING_PROMPT: Final = (
    "You shorten tool outputs for another assistant. Keep every fact, number, name and "
    "error that could matter for the user's request; drop boilerplate and repetition. "
    "Reply with the shortened output only."
)


def text_tokens(text: str) -> int:
    """Approximate tokens of a plain text (langchain-core's counter, no message overhead)."""
    return count_tokens_approximately(
        [HumanMessage(text)], extra_tokens_per_message=0, count_name=False
    )


@dataclass(frozen=True, slots=True)
class PruneResult:
    """The pruned text and the pruning call's own reply, usage and latency."""

    pruned: str
    reply: AIMessage
    usage: Usage
    tokens_before: int
    tokens_after: int
    latency_s: float


def pruning_prompt(
    tool_name: str, output: str, *, instruction: str, request: str
) -> list[BaseMessage]:
    """What the pruning model is sent for one output (its ``model_call_start`` shows it)."""
    return [
        SystemMessage(instruction),
        HumanMessage(f"User request:\n{request}\n\nOutput of tool {tool_name!r}:\n{output}"),
    ]


async def prune_output(
    model: BaseChatModel,
    prompt: list[BaseMessage],
    output: str,
    limit_s: float | None = None,
) -> PruneResult:
    """Ask ``model`` to shorten ``output`` (sent as ``prompt``, see :func:`pruning_prompt`),
    giving up after ``limit_s`` seconds of silence as any model call does
    (``TimeLimitError``); never returns a text longer than the original."""
    started = time.perf_counter()
    async with silence_limit(limit_s):
        reply: Any = await model.ainvoke(prompt)
    latency = time.perf_counter() - started
    if not isinstance(reply, AIMessage):
        raise TypeError(f"pruning model returned {type(reply).__name__}, not an AIMessage")
    usage = Usage.from_ai_message(reply, prompt=prompt)
    pruned = reply.text.strip()
    before = text_tokens(output)
    if not pruned or len(pruned) >= len(output):
        pruned = output
    return PruneResult(pruned, reply, usage, before, text_tokens(pruned), latency)
