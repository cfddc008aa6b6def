"""``RecordingChatModel`` and ``ReplayChatModel``: record a paid session once, replay it free.

Both are real langchain-core chat models on :class:`~toolloop_lab._models.base.ChatModelBase`,
so ``LLMAgent`` (and anything else built on langchain-core) drives them exactly like the
model they stand for: ``invoke``, ``ainvoke``, ``stream`` and ``astream`` all work, and a
streamed call is recorded as the chunks the provider sent and replayed as those chunks.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.base import LangSmithParams
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

from toolloop_lab._models.base import ChatCall, ChatModelBase, chunks_of
from toolloop_lab._replay.recording_file import (
    RecordedCall,
    RecordedError,
    Recording,
    append_call,
    describe_message,
    request_signature,
    tool_names,
)
from toolloop_lab._spend.pricing import model_name_of
from toolloop_lab._support.detached import (
    aiter_detached,
    arun_detached,
    iter_detached,
    run_detached,
)
from toolloop_lab._support.errortext import explain
from toolloop_lab.errors import (
    RecordedCallError,
    RecordingWriteError,
    ReplayDivergedError,
    ReplayExhaustedError,
)

_BINDING: Final = "toolloop_binding"
"""Bind kwarg naming which inner ``bind_tools`` result a recording call goes through."""
_TOOLS: Final = "toolloop_tools"
"""Bind kwarg carrying the tool names bound to a replay model."""
_REPORTED: Final = ("ls_structured_output_format",)
"""``bind_tools`` keywords the recorder binds on itself too: langchain-core hands them to
the run's callbacks (and never to the call), so the recorder's run reports them."""

ReplayMode = Literal["strict", "relaxed"]
"""How requests are matched to the recording (see :class:`ReplayChatModel`)."""


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except FileNotFoundError:
        return 0


class RecordingChatModel(ChatModelBase):
    """Wraps any chat model and appends every call (request + reply) to a JSONL file.

    ``bind_tools`` delegates to the wrapped model's own ``bind_tools``, so the provider
    sees exactly the tool schemas it would see unwrapped. Each call, successful or not,
    becomes one line (see :mod:`toolloop_lab._replay.recording_file`); failures are recorded and
    re-raised unchanged. ``stream``/``astream`` stream through the wrapped model's own
    streaming path and record the chunks it sent. A file that already has lines is
    appended to, and replay serves its calls in file order. Lines are written as calls
    complete: calls made concurrently (``batch``, say) are recorded in completion order,
    and strict replay matches each request to its own line whatever the order.

    Inside a chain, a LangGraph node or a usage callback, a recorded call is reported once:
    by this model's own run. The wrapped model's call runs detached from the caller's
    callbacks and tracing (:mod:`toolloop_lab._support.detached`). A reply whose line cannot be
    written raises :class:`~toolloop_lab.errors.RecordingWriteError`, a
    ``PaidCallError`` carrying the reply. A stream its consumer abandons is not recorded.
    """

    model: BaseChatModel = Field(repr=False)
    """The wrapped model; every call goes to it."""
    path: Path
    """The JSONL file calls are appended to."""
    model_name: str | None = None
    """The wrapped model's name, so pricing and budgets see the real model."""

    _bindings: list[tuple[Runnable[Any, Any], tuple[str, ...]]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _next_index: int = PrivateAttr(default=0)

    def __init__(self, model: BaseChatModel, path: str | os.PathLike[str], **kwargs: Any) -> None:
        kwargs.setdefault("model_name", model_name_of(model))
        kwargs.setdefault("profile", model.profile)
        super().__init__(model=model, path=Path(path), **kwargs)
        self._next_index = _count_lines(self.path)

    @property
    def _llm_type(self) -> str:
        return "toolloop-recording"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "path": str(self.path)}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """The wrapped model's tracing parameters: a recorded call is the provider's call."""
        kwargs.pop(_BINDING, None)
        return self.model._get_ls_params(stop=stop, **kwargs)

    @property
    def recorded_calls(self) -> int:
        """Lines in the file so far (earlier sessions included)."""
        return self._next_index

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind through the wrapped model's ``bind_tools``; calls still get recorded.

        A structured-output format is also bound here, so this model's own run reports it
        to callbacks as the wrapped model's run would have.
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        inner = self.model.bind_tools(tools, **kwargs)
        with self._lock:
            self._bindings.append((inner, tool_names(tools)))
            key = len(self._bindings) - 1
        own = {name: kwargs[name] for name in _REPORTED if name in kwargs}
        return self.bind(**{_BINDING: key}, **own)

    def _target(self, kwargs: dict[str, Any]) -> tuple[Runnable[Any, Any], tuple[str, ...] | None]:
        key = kwargs.pop(_BINDING, None)
        if key is None:
            return self.model, None
        with self._lock:
            binding: tuple[Runnable[Any, Any], tuple[str, ...]] = self._bindings[key]
        return binding

    def _start_call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        target, tools = self._target(kwargs)
        if stop is not None:
            kwargs["stop"] = stop
        return _RecordedCall(self, target, tools, list(messages), kwargs)

    def _append(
        self,
        call: _RecordedCall,
        reply: AIMessage | None,
        exc: BaseException | None,
        chunks: Sequence[AIMessageChunk] | None,
    ) -> int:
        """Write one line; returns its call number. Raises whatever writing raised."""
        with self._lock:
            index = self._next_index
            line = RecordedCall(
                index=index,
                request=tuple(call.messages),
                response=reply,
                error=RecordedError.of(exc) if exc is not None else None,
                tools=call.tools,
                model_name=self.model_name,
                profile=self.profile,
                chunks=tuple(chunks) if chunks is not None else None,
            )
            append_call(self.path, line)
            self._next_index += 1
            return index

    def _record_reply(
        self, call: _RecordedCall, reply: AIMessage, chunks: Sequence[AIMessageChunk] | None
    ) -> None:
        try:
            self._append(call, reply, None, chunks)
        except Exception as exc:
            index = self._next_index
            raise RecordingWriteError(
                f"the reply to call {index} came back but could not be recorded to "
                f"{self.path}: {explain(exc)}",
                path=str(self.path),
                call_index=index,
                reply=reply,
            ) from exc

    def _record_failure(
        self, call: _RecordedCall, exc: Exception, chunks: Sequence[AIMessageChunk] | None
    ) -> None:
        try:
            self._append(call, None, exc, chunks)
        except Exception as write_exc:  # noqa: BLE001 - the call's own error matters more
            exc.add_note(
                f"toolloop_lab: recording this failure to {self.path} failed too: "
                f"{explain(write_exc)}"
            )


class _RecordedCall(ChatCall):
    """One call through the wrapped model, detached from the caller's callbacks."""

    def __init__(
        self,
        recorder: RecordingChatModel,
        target: Runnable[Any, Any],
        tools: tuple[str, ...] | None,
        messages: list[BaseMessage],
        kwargs: dict[str, Any],
    ) -> None:
        self._recorder = recorder
        self._target = target
        self.tools = tools
        self.messages = messages
        self._kwargs = kwargs

    def invoke(self) -> AIMessage:
        reply: AIMessage = run_detached(self._target.invoke, self.messages, **self._kwargs)
        return reply

    async def ainvoke(self) -> AIMessage:
        reply: AIMessage = await arun_detached(
            lambda: self._target.ainvoke(self.messages, **self._kwargs)
        )
        return reply

    def stream(self) -> Iterator[AIMessageChunk]:
        yield from iter_detached(lambda: self._target.stream(self.messages, **self._kwargs))

    async def astream(self) -> AsyncIterator[AIMessageChunk]:
        chunks = aiter_detached(lambda: self._target.astream(self.messages, **self._kwargs))
        async for chunk in chunks:
            yield chunk

    def finish(self, reply: AIMessage, chunks: Sequence[AIMessageChunk] | None) -> None:
        self._recorder._record_reply(self, reply, chunks)

    def fail(self, exc: Exception, chunks: Sequence[AIMessageChunk] | None) -> None:
        self._recorder._record_failure(self, exc, chunks)


@dataclass(frozen=True, slots=True)
class ServedReply:
    """How one replay call was answered."""

    call: int
    """This replay's call number (0-based)."""
    recorded_call: int
    """Index of the recorded call whose reply was served."""
    purpose: Literal["round", "synthesis"]
    """Whether the call had tools bound (a round) or not (synthesis)."""
    exact: bool
    """True when the request matched the recorded one, so the recorded usage is exact."""
    stand_in: bool = False
    """Relaxed replay only: a synthesis call answered with the recorded final answer."""


class ReplayChatModel(ChatModelBase):
    """Plays a recording back offline: no network, no key, same replies, usage and names.

    ``mode="strict"`` (the default) answers each request with the first recorded call not
    served yet whose request is the same: the same bound tool names and every message's
    :func:`~toolloop_lab._replay.recording_file.message_signature` (role, content, tool call ids,
    names and arguments, tool results and their status). A sequential run is served in
    file order; calls made concurrently (recorded in completion order) are served whatever
    order they come in. A request no unserved call has raises
    :class:`~toolloop_lab.errors.ReplayDivergedError`, describing the first
    difference from the next recorded call in file order; a call past the end raises
    :class:`~toolloop_lab.errors.ReplayExhaustedError`; a call that failed when
    recorded raises :class:`~toolloop_lab.errors.RecordedCallError`.

    ``mode="relaxed"`` is for what-if runs, where the conversation legitimately changes.
    Exactly this is matched:

    * the task: each request must start with the recording's input messages (the messages
      before the first AI message of the first recorded request);
    * the call kind: a call with tools bound gets the next recorded call that had tools
      bound; a call without tools (synthesis) gets the next recorded call without tools.
      When no such call is left and ``stand_in_final`` is true, the recording's final answer
      stands in, served *without* usage so the loop estimates its tokens from the actual
      prompt (and marks the run's usage as estimated).

    Nothing else is compared. When a request differs from the recorded one, the served
    reply's input tokens are adjusted by the approximate token difference between the two
    requests (langchain-core's counter) and flagged ``usage_estimated``; identical requests
    keep the exact recorded figures.
    """

    model_name: str | None = None
    """The recorded model's name, so budgets and pricing see the real model."""
    mode: ReplayMode = "strict"
    stand_in_final: bool = True
    """Relaxed mode: answer a synthesis call with the recorded final answer if needed."""

    _recording: Recording = PrivateAttr()
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _served: list[ServedReply] = PrivateAttr(default_factory=list)
    _used: set[int] = PrivateAttr(default_factory=set)
    _next_round: int = PrivateAttr(default=0)
    _next_synthesis: int = PrivateAttr(default=0)

    def __init__(
        self,
        recording: Recording,
        *,
        mode: ReplayMode = "strict",
        stand_in_final: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("model_name", recording.model_name)
        if recording.profile is not None:
            kwargs.setdefault("profile", dict(recording.profile))
        super().__init__(mode=mode, stand_in_final=stand_in_final, **kwargs)
        self._recording = recording

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        mode: ReplayMode = "strict",
        stand_in_final: bool = True,
        **kwargs: Any,
    ) -> ReplayChatModel:
        """Load a JSONL recording (see :class:`~toolloop_lab._replay.recording_file.Recording`)."""
        return cls(Recording.from_file(path), mode=mode, stand_in_final=stand_in_final, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "toolloop-replay"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name, "mode": self.mode}

    # -- inspection -------------------------------------------------------------------
    @property
    def recording(self) -> Recording:
        return self._recording

    @property
    def served(self) -> tuple[ServedReply, ...]:
        """Every call answered so far, in order."""
        with self._lock:
            return tuple(self._served)

    @property
    def remaining(self) -> int:
        """Strict mode: recorded calls not served yet."""
        with self._lock:
            return len(self._recording.calls) - len(self._used)

    def answering_from(self, index: int = 0) -> ReplayChatModel:
        """A new replay of the same recording, nothing served yet, whose relaxed matching
        starts at recorded call ``index`` (strict mode finds each request wherever it is):
        a fork of a run this model replayed answers so (:mod:`toolloop_lab._replay.fork`);
        this model is unchanged."""
        copy = self.model_copy()
        copy._recording = self._recording
        copy._lock = threading.Lock()
        copy._served = []
        copy._used = set()
        copy._next_round = copy._next_synthesis = index
        return copy

    def reset(self) -> None:
        """Start again from the first recorded call (to replay the session once more)."""
        with self._lock:
            self._served.clear()
            self._used.clear()
            self._next_round = self._next_synthesis = 0

    # -- langchain-core interface -----------------------------------------------------
    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools the way a provider model does, and remember their names.

        The tools are bound as OpenAI tool schemas, with ``tool_choice`` and every other
        keyword (``ls_structured_output_format``, ``parallel_tool_calls``, ...) kept, so
        callbacks and tracing see what they would see live. Strict replay checks the
        names against the recording.
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        schemas = [_tool_schema(t) for t in tools]
        return self.bind(tools=schemas, **kwargs, **{_TOOLS: list(tool_names(tools))})

    def _start_call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> ChatCall:
        raw = kwargs.get(_TOOLS)
        tools = tuple(raw) if raw is not None else None
        with self._lock:
            call = len(self._served)
            if self.mode == "strict":
                recorded, served = self._strict(call, messages, tools)
            else:
                recorded, served = self._relaxed(call, messages, tools)
            self._served.append(served)
        return _ReplayedCall(recorded, served, messages)

    # -- matching ---------------------------------------------------------------------
    def _strict(
        self, call: int, messages: list[BaseMessage], tools: tuple[str, ...] | None
    ) -> tuple[RecordedCall, ServedReply]:
        calls = self._recording.calls
        unserved = [i for i in range(len(calls)) if i not in self._used]
        if not unserved:
            raise ReplayExhaustedError(
                f"replay call {call} has no recorded reply: the recording has {len(calls)} "
                "calls and all were used",
                call_index=call,
                recorded_calls=len(calls),
                needed="call",
            )
        signature = request_signature(messages)
        found = next(
            (
                i
                for i in unserved
                if calls[i].tools == tools and request_signature(calls[i].request) == signature
            ),
            None,
        )
        if found is None:  # diverged: report it against the next recorded call, in order
            recorded = calls[unserved[0]]
            if tools != recorded.tools:
                raise ReplayDivergedError(
                    f"replay call {call} diverged: tools {_names(tools)} are bound, the "
                    f"recording had {_names(recorded.tools)}",
                    call_index=call,
                    field="tools",
                    expected=_names(recorded.tools),
                    received=_names(tools),
                )
            _check_messages(call, recorded.request, messages, field="messages")
            raise AssertionError("unreachable: a request that matches was not found")
        self._used.add(found)
        purpose: Literal["round", "synthesis"] = "round" if tools is not None else "synthesis"
        return calls[found], ServedReply(call, calls[found].index, purpose, exact=True)

    def _relaxed(
        self, call: int, messages: list[BaseMessage], tools: tuple[str, ...] | None
    ) -> tuple[RecordedCall, ServedReply]:
        task = self._recording.task
        _check_messages(call, task, messages[: len(task)], field="task")
        calls = self._recording.calls
        want_tools = tools is not None
        start = self._next_round if want_tools else self._next_synthesis
        found = next(
            (i for i in range(start, len(calls)) if calls[i].tools_bound == want_tools), None
        )
        if found is not None:
            if want_tools:
                self._next_round = found + 1
            else:
                self._next_synthesis = found + 1
            recorded = calls[found]
            exact = request_signature(recorded.request) == request_signature(messages)
            purpose: Literal["round", "synthesis"] = "round" if want_tools else "synthesis"
            return recorded, ServedReply(call, recorded.index, purpose, exact=exact)
        final = self._recording.final_answer
        if not want_tools and self.stand_in_final and final is not None:
            return final, ServedReply(call, final.index, "synthesis", exact=False, stand_in=True)
        kind: Literal["round", "synthesis"] = "round" if want_tools else "synthesis"
        what = "a call with tools bound" if want_tools else "a call without tools (synthesis)"
        raise ReplayExhaustedError(
            f"replay call {call} is {what}, and the recording has no such call left: "
            "rounds beyond the recording have no replies",
            call_index=call,
            recorded_calls=len(calls),
            needed=kind,
        )


class _ReplayedCall(ChatCall):
    """One served recorded call: its reply (or recorded failure), whole or as chunks."""

    def __init__(
        self, recorded: RecordedCall, served: ServedReply, messages: Sequence[BaseMessage]
    ) -> None:
        self._recorded = recorded
        self._served = served
        self._messages = messages

    def _failure(self) -> RecordedCallError:
        err = self._recorded.error
        assert err is not None
        return RecordedCallError(
            f"recorded call {self._recorded.index} failed: {err.type}: {err.message}",
            call_index=self._recorded.index,
            error_type=err.type,
            error_message=err.message,
            status_code=err.status_code,
        )

    def invoke(self) -> AIMessage:
        recorded, served = self._recorded, self._served
        if recorded.error is not None:
            raise self._failure()
        assert recorded.response is not None
        reply = recorded.response.model_copy(deep=True)
        if served.stand_in:
            meta = {**reply.response_metadata, "toolloop_stand_in": True}
            return reply.model_copy(update={"usage_metadata": None, "response_metadata": meta})
        if not served.exact:
            return _adjusted(reply, recorded.request, self._messages)
        return reply

    def stream(self) -> Iterator[AIMessageChunk]:
        """The recorded chunks when the call was streamed and is served as recorded (a
        failed stream's chunks, then its error); else the served reply in chunks."""
        chunks = self._recorded.chunks
        if chunks is not None and (self._recorded.error is not None or self._served.exact):
            for chunk in chunks:
                yield chunk.model_copy(deep=True)
            if self._recorded.error is not None:
                raise self._failure()
            return
        yield from chunks_of(self.invoke())


def _tool_schema(tool: Any) -> Any:
    """A tool as a provider binds it (an OpenAI tool schema); a spec no converter knows
    (a provider's built-in tool, say) is bound as given, as its provider would."""
    try:
        return convert_to_openai_tool(tool)
    except Exception:  # noqa: BLE001 - any spec the converter refuses is kept as it is
        return tool


def _names(tools: tuple[str, ...] | None) -> str:
    return "(no tools)" if tools is None else "[" + ", ".join(tools) + "]"


def _check_messages(
    call: int,
    expected: Sequence[BaseMessage],
    received: Sequence[BaseMessage],
    *,
    field: Literal["messages", "task"],
) -> None:
    want = request_signature(expected)
    got = request_signature(received)
    if want == got:
        return
    index = next(
        (i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b),
        min(len(want), len(got)),
    )
    exp = describe_message(want[index] if index < len(want) else None)
    rec = describe_message(got[index] if index < len(got) else None)
    what = "the task (input messages)" if field == "task" else "the request"
    raise ReplayDivergedError(
        f"replay call {call} diverged from the recording in {what} at message {index}: "
        f"expected {exp}, received {rec}",
        call_index=call,
        field=field,
        message_index=index,
        expected=exp,
        received=rec,
    )


def _adjusted(
    reply: AIMessage, recorded: Sequence[BaseMessage], actual: Sequence[BaseMessage]
) -> AIMessage:
    """The reply with input tokens shifted by the approximate size change of the request."""
    meta = {**reply.response_metadata, "usage_estimated": True}
    usage = reply.usage_metadata
    if usage is None:
        return reply.model_copy(update={"response_metadata": meta})
    delta = count_tokens_approximately(list(actual)) - count_tokens_approximately(list(recorded))
    input_tokens = max(1, usage["input_tokens"] + delta)
    details = dict(usage.get("input_token_details") or {})
    for key in ("cache_read", "cache_creation"):
        value = details.get(key)
        if isinstance(value, int):
            details[key] = min(value, input_tokens)
    new_usage = {
        **usage,
        "input_tokens": input_tokens,
        "total_tokens": input_tokens + usage["output_tokens"],
        "input_token_details": details,
    }
    return reply.model_copy(update={"usage_metadata": new_usage, "response_metadata": meta})
