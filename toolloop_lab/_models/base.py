"""One base for the project's own chat models: scripted, recording and replay.

langchain-core asks a chat model for four bodies: ``_generate``, ``_agenerate``, ``_stream``
and ``_astream``. Written per model they drift apart (a recorder that records ``invoke`` but
not ``stream``, a replay that cannot stream at all), so they are written once, here. A model
says how one call goes by returning a :class:`ChatCall` from ``_start_call``:

* ``invoke`` / ``ainvoke`` get the reply whole; ``stream`` / ``astream`` get it as chunks;
* ``finish`` runs once the reply is complete (the recorder writes its line there) and may
  raise; ``fail`` runs when getting the reply failed.

A call with no I/O of its own (a scripted or a replayed reply) writes ``invoke`` only: the
async forms run it directly, and its chunks come from :func:`chunks_of`, split the way a
provider streams (text in pieces, tool calls as argument text, usage on the last chunk).

The base also holds a stream's last chunk back until ``finish`` has run, so a stream whose
recording failed ends with that error instead of looking complete (a stream that fails
midway passes on every chunk that arrived, then the error), and it hands langchain-core
deep copies of the chunks (which it annotates in place, content blocks included), so a
call's own chunks stay as sent.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from functools import reduce
from operator import add
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.tool import ToolCallChunk, tool_call_chunk
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

_PIECE = 16
"""Characters of text per streamed chunk (small, so streaming is visibly in pieces)."""


class ChatCall:
    """One model call in flight; subclasses override what their call needs (module doc)."""

    def invoke(self) -> AIMessage:
        """The whole reply."""
        raise NotImplementedError

    async def ainvoke(self) -> AIMessage:
        """The whole reply, async; by default :meth:`invoke`, for calls that do no I/O."""
        return self.invoke()

    def stream(self) -> Iterator[AIMessageChunk]:
        """The reply in chunks; by default :func:`chunks_of` of :meth:`invoke`."""
        yield from chunks_of(self.invoke())

    async def astream(self) -> AsyncIterator[AIMessageChunk]:
        """The reply in chunks, async; by default :meth:`stream`."""
        for chunk in self.stream():
            yield chunk

    def finish(self, reply: AIMessage, chunks: Sequence[AIMessageChunk] | None) -> None:
        """The reply is complete (``chunks`` is ``None`` for a call made whole); may raise."""

    def fail(self, exc: Exception, chunks: Sequence[AIMessageChunk] | None) -> None:
        """Getting the reply raised ``exc``; ``chunks`` are those that arrived first (``None``
        for a call made whole). ``exc`` propagates after this returns."""


class ChatModelBase(BaseChatModel):
    """A langchain-core chat model whose four call bodies are written once (module doc)."""

    @abstractmethod
    def _start_call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        """Begin one call (matching, bookkeeping); raising here means nothing was sent."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._start_call(messages, stop, kwargs)
        with _failures(call):
            reply = _checked(call.invoke())
        return _finished(call, reply)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._start_call(messages, stop, kwargs)
        with _failures(call):
            reply = _checked(await call.ainvoke())
        return _finished(call, reply)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        tap = _Tap(self._start_call(messages, stop, kwargs))
        try:
            for chunk in tap.call.stream():
                yield from tap.take(chunk)
            tap.check_complete()
        except Exception as exc:
            yield from tap.failed(exc)
            raise
        yield tap.finish()

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        tap = _Tap(self._start_call(messages, stop, kwargs))
        try:
            async for chunk in tap.call.astream():
                for ready in tap.take(chunk):
                    yield ready
            tap.check_complete()
        except Exception as exc:
            for held in tap.failed(exc):
                yield held
            raise
        yield tap.finish()


@contextmanager
def _failures(call: ChatCall) -> Iterator[None]:
    """Tell ``call`` about an ``Exception`` getting its whole reply, then let it propagate."""
    try:
        yield
    except Exception as exc:
        call.fail(exc, None)
        raise


def _checked(reply: Any) -> AIMessage:
    if not isinstance(reply, AIMessage):
        raise TypeError(f"the model returned {type(reply).__name__}, not an AIMessage")
    return reply


def _finished(call: ChatCall, reply: AIMessage) -> ChatResult:
    call.finish(reply, None)
    return ChatResult(generations=[ChatGeneration(message=reply)])


class _Tap:
    """A stream's before and after, for ``_stream`` and ``_astream`` alike: passes a call's
    chunks on one behind, keeping the originals; tells the call how the stream ended (the
    chunk held back goes on only after ``finish`` ran, or before the error it failed with)."""

    def __init__(self, call: ChatCall) -> None:
        self.call = call
        self.seen: list[AIMessageChunk] = []

    def take(self, chunk: AIMessageChunk) -> list[ChatGenerationChunk]:
        """Keep ``chunk``; what to pass on now (the chunk before it, if any)."""
        if not isinstance(chunk, AIMessageChunk):
            raise TypeError(f"the model streamed {type(chunk).__name__}, not an AIMessageChunk")
        self.seen.append(chunk)
        return [self._copy(-2)] if len(self.seen) > 1 else []

    def check_complete(self) -> None:
        if not self.seen:
            raise ValueError("the model's stream ended without a chunk")

    def failed(self, exc: Exception) -> Iterator[ChatGenerationChunk]:
        """Getting the reply raised ``exc``: tell the call, then yield the chunk held back
        (what arrived is passed on before the error, even if ``fail`` raised one of its own)."""
        try:
            self.call.fail(exc, tuple(self.seen))
        finally:
            if self.seen:
                yield self._copy(-1)

    def finish(self) -> ChatGenerationChunk:
        """The reply is complete: tell the call (which may raise), then the chunk held back."""
        self.call.finish(aggregate_chunks(self.seen), tuple(self.seen))
        return self._copy(-1)

    def _copy(self, index: int) -> ChatGenerationChunk:
        """A chunk to hand langchain-core, which annotates it in place: a deep copy."""
        return ChatGenerationChunk(message=self.seen[index].model_copy(deep=True))


def aggregate_chunks(chunks: Sequence[AIMessageChunk]) -> AIMessage:
    """The whole reply a stream adds up to, as langchain-core adds chunks."""
    whole = message_chunk_to_message(reduce(add, chunks))
    if not isinstance(whole, AIMessage):  # pragma: no cover - AIMessageChunk adds up to one
        raise TypeError(f"chunks added up to {type(whole).__name__}, not an AIMessage")
    return whole


def chunks_of(reply: AIMessage) -> list[AIMessageChunk]:
    """``reply`` as a provider streams it: text in pieces, then a last chunk with the tool
    calls (valid ones as JSON argument text, invalid ones with their raw text), the usage
    and the response metadata. The chunks add up to ``reply`` again, with one caveat that
    is langchain-core's, as for any provider's stream: adding chunks re-parses argument
    text with its partial-JSON parser, so an invalid call whose text that parser completes
    (a truncated ``{"a": 3,``) adds up to a valid call."""
    text = reply.content if isinstance(reply.content, str) else ""
    pieces = [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)] if text else []
    chunks = [AIMessageChunk(content=piece, id=reply.id) for piece in pieces[:-1]]
    last_text: Any = pieces[-1] if pieces else (reply.content if not text else "")
    chunks.append(
        AIMessageChunk(
            content=last_text,
            id=reply.id,
            tool_call_chunks=_call_chunks(reply),
            usage_metadata=reply.usage_metadata,
            response_metadata=reply.response_metadata,
            chunk_position="last",
        )
    )
    return chunks


def _call_chunks(reply: AIMessage) -> list[ToolCallChunk]:
    chunks: list[ToolCallChunk] = [
        tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
        for i, c in enumerate(reply.tool_calls)
    ]
    start = len(chunks)
    chunks.extend(
        tool_call_chunk(name=c.get("name"), args=c.get("args"), id=c.get("id"), index=start + i)
        for i, c in enumerate(reply.invalid_tool_calls)
    )
    return chunks
