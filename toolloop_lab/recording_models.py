"""``RecordingChatModel`` and ``ReplayChatModel``: record a paid session once, replay it free.

Both are real ``BaseChatModel`` subclasses, so ``LLMAgent`` (and anything else built on
langchain-core) drives them exactly like the model they stand for.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field, PrivateAttr

from toolloop_lab.pricing import model_name_of
from toolloop_lab.recording_format import (
    RecordedCall,
    RecordedCallError,
    RecordedError,
    Recording,
    ReplayDivergedError,
    ReplayExhaustedError,
    append_call,
    describe_message,
    request_signature,
    tool_names,
)

__all__ = ["RecordingChatModel", "ReplayChatModel", "ReplayMode", "ServedReply"]

_BINDING: Final = "toolloop_binding"
"""Bind kwarg naming which inner ``bind_tools`` result a recording call goes through."""
_TOOLS: Final = "toolloop_tools"
"""Bind kwarg carrying the tool names bound to a replay model."""

ReplayMode = Literal["strict", "relaxed"]
"""How requests are matched to the recording (see :class:`ReplayChatModel`)."""


def _count_lines(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except FileNotFoundError:
        return 0


class RecordingChatModel(BaseChatModel):
    """Wraps any chat model and appends every call (request + reply) to a JSONL file.

    ``bind_tools`` delegates to the wrapped model's own ``bind_tools``, so the provider
    sees exactly the tool schemas it would see unwrapped. Each call, successful or not,
    becomes one line (see :mod:`toolloop_lab.recording_format`); failures are recorded and
    re-raised unchanged. A file that already has lines is appended to, and replay serves
    its calls in file order. Lines are written as calls complete: a model called
    concurrently (a pruning model, say) is recorded in completion order, which strict
    replay then expects.
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

    @property
    def recorded_calls(self) -> int:
        """Lines in the file so far (earlier sessions included)."""
        return self._next_index

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind through the wrapped model's ``bind_tools``; calls still get recorded."""
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        inner = self.model.bind_tools(tools, **kwargs)
        with self._lock:
            self._bindings.append((inner, tool_names(tools)))
            key = len(self._bindings) - 1
        return self.bind(**{_BINDING: key})

    def _target(self, kwargs: dict[str, Any]) -> tuple[Runnable[Any, Any], tuple[str, ...] | None]:
        key = kwargs.pop(_BINDING, None)
        if key is None:
            return self.model, None
        with self._lock:
            binding: tuple[Runnable[Any, Any], tuple[str, ...]] = self._bindings[key]
        return binding

    def _record(
        self,
        messages: list[BaseMessage],
        tools: tuple[str, ...] | None,
        reply: AIMessage | None,
        exc: BaseException | None,
    ) -> None:
        with self._lock:
            call = RecordedCall(
                index=self._next_index,
                request=tuple(messages),
                response=reply,
                error=RecordedError.of(exc) if exc is not None else None,
                tools=tools,
                model_name=self.model_name,
                profile=self.profile,
            )
            append_call(self.path, call)
            self._next_index += 1

    @staticmethod
    def _checked(reply: Any) -> AIMessage:
        if not isinstance(reply, AIMessage):
            raise TypeError(f"wrapped model returned {type(reply).__name__}, not an AIMessage")
        return reply

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        target, tools = self._target(kwargs)
        if stop is not None:
            kwargs["stop"] = stop
        try:
            reply = self._checked(target.invoke(messages, **kwargs))
        except Exception as exc:
            self._record(messages, tools, None, exc)
            raise
        self._record(messages, tools, reply, None)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        target, tools = self._target(kwargs)
        if stop is not None:
            kwargs["stop"] = stop
        try:
            reply = self._checked(await target.ainvoke(messages, **kwargs))
        except Exception as exc:
            self._record(messages, tools, None, exc)
            raise
        self._record(messages, tools, reply, None)
        return ChatResult(generations=[ChatGeneration(message=reply)])


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


class ReplayChatModel(BaseChatModel):
    """Plays a recording back offline: no network, no key, same replies, usage and names.

    ``mode="strict"`` (the default) serves the recorded calls in order and checks each
    request against the recorded one: the bound tool names and every message's
    :func:`~toolloop_lab.recording_format.message_signature` (role, content, tool call ids,
    names and arguments, tool results and their status). The first difference raises
    :class:`~toolloop_lab.recording_format.ReplayDivergedError`; a call past the end raises
    :class:`~toolloop_lab.recording_format.ReplayExhaustedError`; a call that failed when
    recorded raises :class:`~toolloop_lab.recording_format.RecordedCallError`.

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
    _next: int = PrivateAttr(default=0)
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
        """Load a JSONL recording (see :class:`~toolloop_lab.recording_format.Recording`)."""
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
            return len(self._recording.calls) - self._next

    def reset(self) -> None:
        """Start again from the first recorded call (to replay the session once more)."""
        with self._lock:
            self._served.clear()
            self._next = self._next_round = self._next_synthesis = 0

    # -- langchain-core interface -----------------------------------------------------
    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remember the tool names (strict replay checks them against the recording)."""
        return self.bind(**{_TOOLS: list(tool_names(tools))})

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, kwargs))])

    # -- matching ---------------------------------------------------------------------
    def _reply(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        raw = kwargs.get(_TOOLS)
        tools = tuple(raw) if raw is not None else None
        with self._lock:
            call = len(self._served)
            if self.mode == "strict":
                recorded, served = self._strict(call, messages, tools)
            else:
                recorded, served = self._relaxed(call, messages, tools)
            self._served.append(served)
        if recorded.error is not None:
            err = recorded.error
            raise RecordedCallError(
                f"recorded call {recorded.index} failed: {err.type}: {err.message}",
                call_index=recorded.index,
                error_type=err.type,
                error_message=err.message,
                status_code=err.status_code,
            )
        assert recorded.response is not None
        reply = recorded.response.model_copy(deep=True)
        if served.stand_in:
            meta = {**reply.response_metadata, "toolloop_stand_in": True}
            return reply.model_copy(update={"usage_metadata": None, "response_metadata": meta})
        if not served.exact:
            return _adjusted(reply, recorded.request, messages)
        return reply

    def _strict(
        self, call: int, messages: list[BaseMessage], tools: tuple[str, ...] | None
    ) -> tuple[RecordedCall, ServedReply]:
        calls = self._recording.calls
        if self._next >= len(calls):
            raise ReplayExhaustedError(
                f"replay call {call} has no recorded reply: the recording has {len(calls)} "
                "calls and all were used",
                call_index=call,
                recorded_calls=len(calls),
                needed="call",
            )
        recorded = calls[self._next]
        if tools != recorded.tools:
            raise ReplayDivergedError(
                f"replay call {call} diverged: tools {_names(tools)} are bound, the recording "
                f"had {_names(recorded.tools)}",
                call_index=call,
                field="tools",
                expected=_names(recorded.tools),
                received=_names(tools),
            )
        _check_messages(call, recorded.request, messages, field="messages")
        self._next += 1
        purpose: Literal["round", "synthesis"] = "round" if tools is not None else "synthesis"
        return recorded, ServedReply(call, recorded.index, purpose, exact=True)

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
