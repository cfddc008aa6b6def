"""What the callbacks carry about the conversation, read the way the loop reads its own.

A chat-model callback sees the *whole* prompt of every call; events carry only what is new
since the previous call (``ModelCallStarted.messages``), so :func:`events.transcript`
rebuilds the conversation from them. :class:`Conversation` finds the new messages: in the
common case (the framework appends to its history) it compares two positions and slices,
O(new messages) per call; when a framework rewrote the history (trimmed, summarised,
reordered) it falls back to a multiset difference, so a message is carried once, when the
model first saw it.

The other helpers read facts off the callback arguments (bound tool names, the configured
model name, whether a call will stream) and find messages inside a chain's or a tool's
output (a list, a ``{"messages": [...]}`` state, a LangGraph ``Command``) without
importing LangGraph.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage

from toolloop_lab._support.jsonsafe import json_safe

_MAX_DEPTH: Final = 4
"""How deep :func:`messages_in` looks (a state holds messages one or two levels down)."""


def message_key(message: BaseMessage) -> Hashable:
    """What makes two prompt messages the same message: the type and the id when the message
    has one (LangGraph gives every stored message an id), else its type and content."""
    if message.id:
        return (message.type, message.id)
    content = message.content
    text = content if isinstance(content, str) else json.dumps(json_safe(content), sort_keys=True)
    call_ids = tuple(str(c.get("id")) for c in getattr(message, "tool_calls", ()) or ())
    return (message.type, text, getattr(message, "tool_call_id", None), call_ids)


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


def messages_in(value: Any, _depth: int = 0) -> Iterator[BaseMessage]:
    """Messages inside a chain or tool output: a message, a list of them, a state with a
    ``messages`` entry, or a LangGraph ``Command`` whose ``update`` holds them."""
    if _depth > _MAX_DEPTH:
        return
    if isinstance(value, BaseMessage):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from messages_in(item, _depth + 1)
    elif isinstance(value, Mapping):
        inner = value.get("messages")
        if inner is not None:
            yield from messages_in(inner, _depth + 1)
    else:
        update = getattr(value, "update", None)  # a Command (never a dict: handled above)
        if isinstance(update, (Mapping, list, tuple)):
            yield from messages_in(update, _depth + 1)


def bound_tool_names(invocation_params: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of the tools bound to a chat-model call, in any provider's tool format
    (OpenAI ``{"function": {"name"}}``, Anthropic ``{"name"}``, legacy ``functions``)."""
    if not invocation_params:
        return ()
    names: list[str] = []
    for key in ("tools", "functions"):
        tools = invocation_params.get(key)
        if not isinstance(tools, (list, tuple)):
            continue
        for tool in tools:
            name: Any = None
            if isinstance(tool, Mapping):
                inner = tool.get("function")
                name = inner.get("name") if isinstance(inner, Mapping) else tool.get("name")
            else:
                name = getattr(tool, "name", None)
            if isinstance(name, str) and name:
                names.append(name)
    return tuple(dict.fromkeys(names))


def configured_model_name(
    metadata: Mapping[str, Any] | None, invocation_params: Mapping[str, Any] | None
) -> str | None:
    """The model a call asks for: langchain-core's tracing name (``ls_model_name``, which
    every integration fills in), else the invocation parameters' own spelling."""
    for source, keys in (
        (metadata, ("ls_model_name",)),
        (invocation_params, ("model_name", "model", "model_id")),
    ):
        if not source:
            continue
        for key in keys:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def streaming_requested(invocation_params: Mapping[str, Any] | None) -> bool:
    """The call's parameters ask for a stream (``streaming=True`` / ``stream=True``).

    A framework may still decide to stream later (LangGraph's ``messages`` stream mode
    does): such a call reports ``False`` here and its ``model_delta`` events come anyway.
    """
    if not invocation_params:
        return False
    return invocation_params.get("stream") is True or invocation_params.get("streaming") is True
