"""``ScriptedChatModel``: a real langchain-core chat model that plays back a script of replies.

It plugs in at the lowest layer (the chat model), so the code under test is the real loop
and langchain-core's real ``ainvoke``/``astream``/``bind_tools`` machinery. A script item
is an ``AIMessage``, a plain string (a final answer), an exception to raise, or a callable
``(messages, bound_tools) -> AIMessage`` for replies that depend on the conversation.

Its call bodies come from :class:`~toolloop_lab._models.base.ChatModelBase`: ``invoke`` and
``stream`` play the same item, and a stream is the reply split the way a provider streams
it (:func:`~toolloop_lab._models.base.chunks_of`). A per-call ``model=`` keyword (as provider
models take it) is reported as the reply's ``model_name``, unless the item names its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from toolloop_lab._models.base import ChatCall, ChatModelBase
from toolloop_lab._spend.usage import estimate_tokens
from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ScriptError

ScriptItem = (
    AIMessage | str | BaseException | Callable[[list[BaseMessage], list[dict[str, Any]]], AIMessage]
)
"""One scripted reply (see module doc)."""


_ITEMS: Final = (
    "a script item is an AIMessage, a str (a final answer), an exception to raise, or a "
    "callable (messages, tools) -> AIMessage"
)


def _unplayable(index: int, item: Any) -> str | None:
    """Why ``item`` (at ``script[index]``) cannot be played (``None`` when it can)."""
    where = f"script[{index}]"
    if isinstance(item, type):
        return f"{where} is {shown(item)}: pass an instance, {item.__name__}(...)"
    if isinstance(item, (AIMessage, str, BaseException)) or callable(item):
        return None
    return f"{where} is {shown(item)}, which cannot be played"


def playable(script: Any) -> list[Any]:
    """``script`` as the list of items a model plays, each one it can play; a
    :class:`ScriptError` names the first that it cannot, when the model is built (it used
    to fail at the call that reached it, and a string was played as one reply per
    character)."""
    if isinstance(script, (str, bytes, Mapping)) or not isinstance(script, Iterable):
        fix = (
            f": pass [{clip(repr(script), NAME_CHARS)}] for one reply"
            if isinstance(script, str)
            else ""
        )
        raise ScriptError(f"script takes a list of replies, got {shown(script)}{fix}; {_ITEMS}")
    items = list(script)
    for index, item in enumerate(items):
        why = _unplayable(index, item)
        if why is not None:
            raise ScriptError(f"{why}; {_ITEMS}")
    return items


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """What one model call received: the prompt and the tools bound to it."""

    messages: tuple[BaseMessage, ...]
    tool_names: tuple[str, ...]
    tool_choice: Any


class ScriptedChatModel(ChatModelBase):
    """Replays ``script`` one item per call; raises :class:`ScriptError` when it runs out."""

    __test__ = False  # keep pytest from collecting this as a test class

    script: list[Any] = Field(repr=False)
    """The replies, in order (kept out of the repr, which langchain-core serialises per run)."""
    model_name: str = "scripted"
    """Reported as ``response_metadata["model_name"]``; a real name makes it priceable."""

    _index: int = PrivateAttr(default=0)
    _calls: list[ScriptedCall] = PrivateAttr(default_factory=list)
    _bindings: list[tuple[tuple[str, ...], Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, script: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(script=playable(script), **kwargs)

    @property
    def _llm_type(self) -> str:
        return "toolloop-scripted"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    # -- inspection -------------------------------------------------------------------
    @property
    def calls(self) -> tuple[ScriptedCall, ...]:
        """Every call made so far, in order."""
        return tuple(self._calls)

    @property
    def bindings(self) -> tuple[tuple[tuple[str, ...], Any], ...]:
        """Every ``bind_tools`` call: (tool names, tool_choice)."""
        return tuple(self._bindings)

    @property
    def remaining(self) -> int:
        """Script items not played yet."""
        return len(self.script) - self._index

    def answering_from(self, index: int) -> ScriptedChatModel:
        """A new model with this one's name and settings that plays the script from item
        ``index`` on (0 is the first), none of it played yet: the replies this model gave
        from its call ``index + 1`` on, again. A fork of a run this model made answers so
        from the fork's round (:mod:`toolloop_lab._replay.fork`); this model is unchanged."""
        if isinstance(index, bool) or not isinstance(index, int):
            raise ScriptError(f"answering_from takes a script index, got {index!r}")
        if not 0 <= index <= len(self.script):
            raise ScriptError(
                f"answering_from({index}): the script has items 0 to {len(self.script) - 1}"
            )
        copy = self.model_copy(update={"script": list(self.script[index:])})
        copy._index = 0
        copy._calls = []
        copy._bindings = []
        copy._lock = threading.Lock()
        return copy

    def assert_complete(self) -> None:
        """Raise :class:`ScriptError` unless every script item was played."""
        if self.remaining:
            raise ScriptError(
                f"{self.remaining} of {len(self.script)} scripted replies were never requested"
            )

    # -- langchain-core interface -----------------------------------------------------
    def bind_tools(
        self,
        tools: Sequence[Any],
        *,
        tool_choice: Any = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        """Bind tools the way provider models do (OpenAI tool schema), and record it."""
        formatted = [convert_to_openai_tool(t) for t in tools]
        names = tuple(t["function"]["name"] for t in formatted)
        with self._lock:
            self._bindings.append((names, tool_choice))
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def _next(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        tools: list[dict[str, Any]] = list(kwargs.get("tools") or [])
        names = tuple(t.get("function", {}).get("name", "") for t in tools)
        with self._lock:
            if self._index >= len(self.script):
                raise ScriptError(
                    f"script exhausted: all {len(self.script)} scripted replies were used "
                    f"and call {self._index + 1} was made"
                )
            item = self.script[self._index]
            self._index += 1
            self._calls.append(ScriptedCall(tuple(messages), names, kwargs.get("tool_choice")))
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, str):
            reply: Any = AIMessage(content=item)
        elif isinstance(item, AIMessage):
            reply = item
        elif callable(item):
            reply = item(list(messages), tools)
            if isinstance(reply, str):
                reply = AIMessage(content=reply)
        else:
            raise ScriptError(f"cannot play script item of type {type(item).__name__}")
        if not isinstance(reply, AIMessage):
            raise ScriptError(f"scripted callable returned {type(reply).__name__}, not AIMessage")
        return self._finish(reply, messages, kwargs)

    def _finish(
        self, reply: AIMessage, messages: list[BaseMessage], kwargs: dict[str, Any]
    ) -> AIMessage:
        meta = dict(reply.response_metadata)
        override = kwargs.get("model")
        meta.setdefault("model_name", override if isinstance(override, str) else self.model_name)
        update: dict[str, Any] = {"response_metadata": meta}
        if reply.usage_metadata is None:
            in_tok = count_tokens_approximately(messages)
            out_tok = estimate_tokens(reply)
            update["usage_metadata"] = {
                "input_tokens": in_tok,
                "output_tokens": out_tok,
                "total_tokens": in_tok + out_tok,
            }
            meta["usage_estimated"] = True
        return reply.model_copy(update=update, deep=True)

    def _start_call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        return _Played(self._next(messages, kwargs))


class _Played(ChatCall):
    """A scripted reply: already known, so ``invoke`` is all it needs."""

    def __init__(self, reply: AIMessage) -> None:
        self._reply = reply

    def invoke(self) -> AIMessage:
        return self._reply
