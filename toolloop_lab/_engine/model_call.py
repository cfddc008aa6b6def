"""One model call, invoked or streamed, and what the loop reads off its reply.

Streaming goes through langchain-core's own ``astream``: chunks are merged with ``+`` and
turned into the same ``AIMessage`` an invoke returns (usage from the provider's final
chunk). While chunks arrive, :class:`DeltaBuffer` hands the new text and tool-argument
fragments to the loop at most every 50 ms, so a view sees the reply grow without one
event per token.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    InvalidToolCall,
    ToolCall,
)
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.messages.utils import message_chunk_to_message

from toolloop_lab._support.jsonsafe import frozen_json, is_mapping
from toolloop_lab._support.words import time_limit_text
from toolloop_lab.errors import TimeLimitError
from toolloop_lab.events import ToolCallDelta, ToolCallView

DELTA_INTERVAL_S: Final = 0.05
"""Least time between two ``model_delta`` events of one call (about 20 a second)."""

_FINISH_KEYS: Final = ("finish_reason", "stop_reason", "stopReason", "done_reason")
"""Where providers put why a reply ended (OpenAI, Anthropic, Bedrock, Ollama)."""
LENGTH_STOPS: Final = frozenset({"length", "max_tokens", "max_output_tokens"})
"""Finish reasons meaning "cut off by the output-token limit", lower-cased."""

DeltaSink = Callable[[str, tuple[ToolCallDelta, ...]], None]


def should_stream(setting: bool, model: BaseChatModel, *, tools_bound: bool) -> bool:
    """Whether to read this call as a stream: asked for, and the model implements streaming
    itself and does not turn it off (otherwise ``astream`` would only yield the whole reply
    at the end, through a slower path)."""
    if not setting:
        return False
    kind = type(model)
    native = (
        kind._astream is not BaseChatModel._astream or kind._stream is not BaseChatModel._stream
    )
    disabled = model.disable_streaming
    return native and not (disabled is True or (disabled == "tool_calling" and tools_bound))


def stream_kwargs(model: BaseChatModel) -> dict[str, Any]:
    """Ask for usage in the final chunk where the client needs asking (OpenAI-style
    ``stream_usage``); others send it anyway."""
    return {"stream_usage": True} if "stream_usage" in type(model).model_fields else {}


@dataclass(slots=True)
class DeltaBuffer:
    """Collects a stream's fragments and passes them on, coalesced, to ``sink``.

    Each tool-call fragment goes out under its call's position in the reply (0, 1, ... in
    the order the calls first appear), never under the provider's own index, which may be
    any number at all (negative, huge): a position is always a valid event field, and a
    view can keep one slot per call. Fragments are grouped the way langchain-core adds the
    chunks up, so the positions are the order of the reply's calls."""

    sink: DeltaSink
    clock: Callable[[], float] = time.perf_counter
    interval_s: float = DELTA_INTERVAL_S
    text: list[str] = field(default_factory=list)
    """Every text fragment so far (what a failed stream leaves behind)."""
    reply: AIMessageChunk | None = None
    """The stream's chunks added up, as :func:`invoke` leaves them however the stream
    ended: the whole reply, or what a failed stream leaves behind (its usage, if the
    provider had reported it)."""
    _pending: list[str] = field(default_factory=list)
    _calls: dict[int, list[Any]] = field(default_factory=dict)
    _positions: dict[int | str, int] = field(default_factory=dict)
    _count: int = 0
    _last: float | None = None

    def feed(self, chunk: AIMessageChunk) -> None:
        """Take one chunk; pass the fragments on if the last delta is old enough."""
        piece = chunk.text
        if piece:
            self.text.append(piece)
            self._pending.append(piece)
        for part in chunk.tool_call_chunks:
            slot = self._calls.setdefault(self._position(part.get("index")), [None, None, []])
            slot[0] = slot[0] or _text_or_none(part.get("id"))
            slot[1] = slot[1] or _text_or_none(part.get("name"))
            if part.get("args"):
                slot[2].append(str(part.get("args")))
        if (self._pending or self._calls) and (
            self._last is None or self.clock() - self._last >= self.interval_s
        ):
            self.flush()

    def _position(self, index: Any) -> int:
        """The position of the call a fragment with ``index`` belongs to. Like
        langchain-core, fragments with the same int (or ``lc_`` string) index belong to
        one call; a fragment with no such index starts a call of its own."""
        keyed = isinstance(index, int) or (isinstance(index, str) and index.startswith("lc_"))
        position = self._positions.get(index) if keyed else None
        if position is None:
            position, self._count = self._count, self._count + 1
            if keyed:
                self._positions[index] = position
        return position

    def flush(self) -> None:
        """Pass on whatever is pending now."""
        if not self._pending and not self._calls:
            return
        calls = tuple(
            ToolCallDelta(index=i, id=s[0], name=s[1], args="".join(s[2]))
            for i, s in sorted(self._calls.items())
        )
        text = "".join(self._pending)
        self._pending, self._calls = [], {}
        self._last = self.clock()
        self.sink(text, calls)

    @property
    def partial_text(self) -> str:
        return "".join(self.text)

    @property
    def billed(self) -> AIMessageChunk | None:
        """What arrived, if the provider reported usage in it: a stream cut after its usage
        chunk was paid for, so a failed call still counts those tokens."""
        reply = self.reply
        return reply if reply is not None and reply.usage_metadata is not None else None


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class CallTiming:
    """How long a call took: to the whole reply, and (streams) to the first fragment."""

    latency_s: float
    first_token_s: float | None = None


def _no_news() -> None:
    """What :func:`silence_limit` hands a call without a limit: nothing to push back."""


class _Watch:
    """The silence a model keeps, watched lazily: a chunk only notes the time it came
    (:meth:`heard`, a clock read and a store), and the one timer looks again when the
    silence since the last chunk could have run out, re-arming itself for the new end if
    a chunk came meanwhile. Moving an ``asyncio.timeout`` on every chunk instead cost a
    streamed round a tenth of its time (a timer cancelled and pushed on the heap per chunk)."""

    __slots__ = ("clock", "handle", "last", "limit_s", "loop", "timer")

    def __init__(self, limit_s: float, timer: asyncio.Timeout) -> None:
        self.loop = asyncio.get_running_loop()
        self.clock = self.loop.time
        self.limit_s = limit_s
        self.timer = timer
        self.last = self.clock()
        self.handle = self.loop.call_at(self.last + limit_s, self.look)

    def heard(self) -> None:
        """A chunk came: the model has ``limit_s`` again from now."""
        self.last = self.clock()

    def look(self) -> None:
        """The silence may have run out: expire the timeout now, or look again later."""
        until = self.last + self.limit_s
        if self.clock() >= until:
            self.timer.reschedule(self.clock())  # asyncio's timeout cancels and says so
        else:
            self.handle = self.loop.call_at(until, self.look)


@asynccontextmanager
async def silence_limit(
    limit_s: float | None, *, streamed: bool = False
) -> AsyncIterator[Callable[[], None]]:
    """The most a model may keep silent in the block (``AgentConfig.model_timeout_s``):
    past ``limit_s`` seconds with no news the wait is cancelled and
    :class:`TimeLimitError` (``kind="model"``) raised in its place. Yields the function a
    stream calls on each chunk to give the model ``limit_s`` again; ``None`` is no limit."""
    if limit_s is None:
        yield _no_news
        return
    timer = asyncio.timeout(None)
    watch = _Watch(limit_s, timer)
    try:
        async with timer:
            yield watch.heard
    except TimeoutError:
        if not timer.expired():  # the model's own TimeoutError: its failure, as it is
            raise
        said = time_limit_text("model_stream" if streamed else "model", limit_s)
        raise TimeLimitError(said, kind="model", limit_s=limit_s) from None
    finally:
        watch.handle.cancel()


async def invoke(
    runnable: Any,
    prompt: list[BaseMessage],
    *,
    stream: bool,
    kwargs: Mapping[str, Any],
    deltas: DeltaBuffer | None,
    limit_s: float | None = None,
) -> tuple[Any, CallTiming]:
    """Call ``runnable`` once (``ainvoke``, or ``astream`` merged into one message), giving
    it up once the model keeps silent ``limit_s`` seconds (:func:`silence_limit`).

    ``prompt`` is the caller's own copy of the transcript: it is sent as it is, so a long
    run does not copy its whole transcript twice per call."""
    started = time.perf_counter()
    if not stream or deltas is None:
        async with silence_limit(limit_s):
            reply = await runnable.ainvoke(prompt)
        return reply, CallTiming(time.perf_counter() - started)
    merged: AIMessageChunk | None = None
    first: float | None = None
    try:
        async with silence_limit(limit_s, streamed=True) as heard:
            async for chunk in runnable.astream(prompt, **kwargs):
                heard()
                if first is None:
                    first = time.perf_counter() - started
                if not isinstance(chunk, AIMessageChunk):
                    raise TypeError(f"model streamed {type(chunk).__name__}, not an AIMessageChunk")
                deltas.feed(chunk)
                merged = chunk if merged is None else merged + chunk
    finally:  # what arrived is kept and shown, however the stream ended
        deltas.reply = merged
        deltas.flush()
    latency = time.perf_counter() - started
    if merged is None:
        return AIMessage(content=""), CallTiming(latency, first)
    return _strict(merged), CallTiming(latency, first)


def _strict(chunk: AIMessageChunk) -> Any:
    """The merged stream as a message, its tool calls parsed strictly.

    langchain-core parses streamed arguments with a lenient partial-JSON parser, made for
    showing calls as they grow: on a whole stream it would turn ``{"path": "rep`` (a reply
    cut off) or ``{"a": 1} trailing`` into a call. Here the complete argument text must be
    one JSON object, exactly as an invoked reply's must; anything else is an invalid call,
    text nested past the parser's recursion limit included (the reply was paid for whole:
    its calls are answered with errors, the run goes on).
    """
    message = message_chunk_to_message(chunk)
    if not chunk.tool_call_chunks or not isinstance(message, AIMessage):
        return message
    calls: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for part in chunk.tool_call_chunks:
        raw = part.get("args") or ""
        name, call_id = part.get("name"), part.get("id")
        try:
            value = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):  # dispatch says why (too deep is one way)
            value = None
        if isinstance(value, dict) and isinstance(name, str) and name:
            calls.append(tool_call(name=name, args=value, id=call_id))
        else:
            invalid.append(invalid_tool_call(name=name, args=raw, id=call_id, error=None))
    return message.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


def finish_reason(meta: Mapping[str, Any]) -> str | None:
    """Why the provider says the reply ended, as it spells it."""
    for key in _FINISH_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    details = meta.get("incomplete_details")  # OpenAI Responses API
    reason = details.get("reason") if details is not None and is_mapping(details) else None
    return reason if isinstance(reason, str) and reason else None


def is_truncated(reply: AIMessage) -> bool:
    """The provider cut the reply off at its output-token limit."""
    return _cut_off(finish_reason(reply.response_metadata))


def _cut_off(reason: str | None) -> bool:
    """``reason`` (a finish reason) means the output-token limit cut the reply off."""
    return reason is not None and reason.lower() in LENGTH_STOPS


def is_empty(reply: AIMessage) -> bool:
    """No text a person can read and no tool call (a thinking-only reply is empty too)."""
    return _empty(reply, reply.text)


def _empty(reply: AIMessage, text: str) -> bool:
    """:func:`is_empty`, given ``reply.text`` already read."""
    return not text.strip() and not reply.tool_calls and not reply.invalid_tool_calls


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _frozen_args(args: Any) -> Any:
    """Arguments as frozen JSON data; anything that is not an object is kept under "raw"."""
    return frozen_json(args if is_mapping(args) else {"raw": args})


def call_view(call: ToolCall) -> ToolCallView:
    """A tool call as the model asked for it; odd names or arguments are shown, not trusted."""
    return ToolCallView(
        _text_or_empty(call.get("id")),
        _text_or_empty(call.get("name")),
        _frozen_args(call.get("args")),
    )


def call_views(reply: AIMessage) -> tuple[ToolCallView, ...]:
    """Every call of ``reply``, valid ones first, then the ones that could not be parsed."""
    valid = tuple(call_view(c) for c in reply.tool_calls)
    invalid = tuple(
        ToolCallView(
            _text_or_empty(c.get("id")),
            _text_or_empty(c.get("name")),
            _frozen_args({"raw": c.get("args")}),
            False,
            c.get("error") if isinstance(c.get("error"), str) else None,
        )
        for c in reply.invalid_tool_calls
    )
    return valid + invalid


class ReplyFields(TypedDict):
    """The fields of a ``ModelCalled`` event that the reply alone decides."""

    text: str
    tool_calls: tuple[ToolCallView, ...]
    finish_reason: str | None
    empty: bool
    truncated: bool


def reply_fields(reply: AIMessage) -> ReplyFields:
    """What ``reply`` says about itself, as its ``ModelCalled`` event carries it (the loop
    and the bridge both emit it, so it is read off the reply in one place)."""
    # A property that joins content blocks: read once, and kept as a plain ``str`` (it is
    # langchain-core's ``TextAccessor``, a str subclass the garbage collector tracks, one
    # more object a round for every event list that keeps it).
    text = str(reply.text)
    reason = finish_reason(reply.response_metadata)  # read once, for two fields
    return ReplyFields(
        text=text,
        tool_calls=call_views(reply),
        finish_reason=reason,
        empty=_empty(reply, text),
        truncated=_cut_off(reason),
    )


@dataclass(slots=True)
class RepeatedCalls:
    """Judges a stuck round: one that makes exactly the previous round's calls again, the
    same tools with the same arguments and validity (ids aside), in the same order."""

    count: int = 0
    """Rounds in a row that repeated the one before."""
    _last: tuple[tuple[str, Any, bool], ...] | None = None

    def see(self, views: tuple[ToolCallView, ...]) -> bool:
        """Note a round's calls; whether they repeat the previous round's."""
        calls = tuple((v.name, v.args, v.valid) for v in views)
        repeated = bool(calls) and calls == self._last
        self.count = self.count + 1 if repeated else 0
        self._last = calls
        return repeated
