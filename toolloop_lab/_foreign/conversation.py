"""The conversation of a run seen from outside, carried by its events one message at a time.

A chat-model callback, and a call span that records its prompt, see the *whole* prompt of
every call; events carry only what is new since the previous call
(``ModelCallStarted.messages``), so :func:`events.transcript` rebuilds the conversation from
them. :class:`Conversation` finds the new messages: in the common case (the framework
appends to its history) it compares two positions and slices, O(new messages) per call;
when a framework rewrote the history (trimmed, summarised, reordered) it falls back to a
multiset difference, so a message is carried once, when the model first saw it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Sequence

from langchain_core.messages import BaseMessage

from toolloop_lab._support.jsonsafe import json_safe


def message_key(message: BaseMessage) -> Hashable:
    """What makes two prompt messages the same message: the type and the id when the message
    has one (LangGraph gives every stored message an id), else its type and content. A
    streamed reply kept as its merged chunk is the reply it makes (``AIMessageChunk`` is an
    ``ai`` message)."""
    kind = _whole(message.type)
    if message.id:
        return (kind, message.id)
    content = message.content
    text = content if isinstance(content, str) else json.dumps(json_safe(content), sort_keys=True)
    call_ids = tuple(str(c.get("id")) for c in getattr(message, "tool_calls", ()) or ())
    return (kind, text, getattr(message, "tool_call_id", None), call_ids)


def _whole(kind: str) -> str:
    """A message type without its chunk form: ``AIMessageChunk`` is ``ai``."""
    return kind.removesuffix("MessageChunk").lower() if kind.endswith("MessageChunk") else kind


class Conversation:
    """The messages of one run that events have carried so far (see module doc)."""

    __slots__ = ("_carried", "_last")

    def __init__(self) -> None:
        self._last: list[Hashable] = []
        """Keys of the previous prompt, in order."""
        self._carried: Counter[Hashable] = Counter()
        """Every key carried so far, with how many times."""

    def new(self, prompt: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The messages of ``prompt`` no earlier prompt carried, in prompt order."""
        last = self._last
        n = len(last)
        if (
            n
            and len(prompt) >= n
            and message_key(prompt[0]) == last[0]
            and message_key(prompt[n - 1]) == last[-1]
        ):
            fresh = list(prompt[n:])
            keys = [message_key(m) for m in fresh]
            last.extend(keys)
            self._carried.update(keys)
            return fresh
        left = self._carried.copy()
        fresh = []
        keys = []
        for message in prompt:
            key = message_key(message)
            keys.append(key)
            if left[key] > 0:
                left[key] -= 1
            else:
                fresh.append(message)
                self._carried[key] += 1
        self._last = keys
        return fresh
