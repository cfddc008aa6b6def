"""The recording file and the errors of record and replay.

A recording is JSONL, one line per model call, written by
:class:`~toolloop_lab.recording.RecordingChatModel` and read by :meth:`Recording.from_file`.
Messages use langchain-core's own serialisation (``messages_to_dict`` /
``messages_from_dict``): plain JSON, never pickle, so a recording is safe to read and easy to
diff. Line format, version 1::

    {"format": "toolloop_lab.recording", "version": 1, "call": 0,
     "model_name": "gpt-4o-mini",            # the wrapped model's own name
     "profile": {...} | null,                # its profile (context window), for replay
     "tools": ["add", "search"] | null,      # tool names bound to the call; null: no tools
     "request": [<message dict>, ...],       # every message the model was sent
     "fingerprint": "9f2c...",               # of the request; see request_signature()
     "response": <message dict> | null,      # the AIMessage: tool_calls, invalid_tool_calls,
                                             #   usage_metadata, response_metadata
     "error": {"type": "openai.RateLimitError", "message": "...", "status_code": 429} | null}

Each line holds the full request, so a line is readable on its own (at the price of size
growing with the square of the rounds).

Errors, all :class:`~toolloop_lab.errors.ToolLoopLabError`::

    RecordingError                  base of everything record/replay raises
    ├── RecordingFormatError        the file is missing or not a recording (path, line)
    ├── ReplayDivergedError         the conversation differs from the recording
    │                               (call_index, field, message_index, expected, received)
    ├── ReplayExhaustedError        a call the recording has no reply for
    │                               (call_index, recorded_calls, needed)
    └── RecordedCallError           the recorded call itself failed; replay raises this
                                    in its place (call_index, error_type, status_code)
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.jsonsafe import json_safe
from toolloop_lab.pricing import PriceTable, cost_of, model_name_of
from toolloop_lab.usage import Usage

__all__ = [
    "FORMAT",
    "VERSION",
    "DivergedField",
    "RecordedCall",
    "RecordedCallError",
    "RecordedError",
    "Recording",
    "RecordingError",
    "RecordingFormatError",
    "ReplayDivergedError",
    "ReplayExhaustedError",
    "append_call",
    "describe_message",
    "message_signature",
    "request_fingerprint",
    "request_signature",
    "tool_names",
]

FORMAT: Final = "toolloop_lab.recording"
VERSION: Final = 1

DivergedField = Literal["messages", "tools", "task"]
"""What differed: the request messages, the bound tool names, or (relaxed replay) the task."""


# -- errors ---------------------------------------------------------------------------


class RecordingError(ToolLoopLabError):
    """Base of every record/replay error; fields are attributes, never only message text."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), str(self), dict(self.__dict__)))


def _rebuild(cls: type[RecordingError], message: str, state: dict[str, Any]) -> RecordingError:
    err = Exception.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class RecordingFormatError(RecordingError):
    """The file is missing, unreadable or not a toolloop_lab recording."""

    def __init__(self, message: str, *, path: str, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        """1-based line number of the bad line, ``None`` for the file as a whole."""


class ReplayDivergedError(RecordingError):
    """The replayed conversation is not the recorded one at ``call_index``.

    ``expected`` and ``received`` describe the first differing message (or the tool
    names), as recorded and as received; ``message_index`` is its position in the request.
    """

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        field: DivergedField,
        expected: str,
        received: str,
        message_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.field: DivergedField = field
        self.message_index = message_index
        self.expected = expected
        self.received = received


class ReplayExhaustedError(RecordingError):
    """A call needed a reply the recording does not have (it ran past the recording).

    ``needed`` is ``"call"`` in strict replay; relaxed replay says which kind was missing:
    ``"round"`` (a call with tools bound) or ``"synthesis"`` (a call without tools).
    """

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        recorded_calls: int,
        needed: Literal["call", "round", "synthesis"],
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.recorded_calls = recorded_calls
        self.needed: Literal["call", "round", "synthesis"] = needed


class RecordedCallError(RecordingError):
    """The recorded call failed (e.g. an HTTP 429); replay raises this in its place."""

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        error_type: str,
        error_message: str,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.error_type = error_type
        """Dotted name of the original exception class, e.g. ``openai.RateLimitError``."""
        self.error_message = error_message
        self.status_code = status_code


# -- values ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedError:
    """What a failed call raised, in a form that survives JSON."""

    type: str
    message: str
    status_code: int | None = None

    @classmethod
    def of(cls, exc: BaseException) -> RecordedError:
        """Describe ``exc`` (class path, message and HTTP status when it has one)."""
        kind = type(exc)
        status = getattr(exc, "status_code", None)
        return cls(
            f"{kind.__module__}.{kind.__qualname__}",
            str(exc),
            status if isinstance(status, int) and not isinstance(status, bool) else None,
        )


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """One model call: what was sent, and the reply or the error that came back."""

    index: int
    request: tuple[BaseMessage, ...]
    response: AIMessage | None
    error: RecordedError | None = None
    tools: tuple[str, ...] | None = None
    """Names of the tools bound to the call; ``None`` when it had no tools (synthesis)."""
    model_name: str | None = None
    profile: Mapping[str, Any] | None = None

    @property
    def tools_bound(self) -> bool:
        """True for a tool round's call, False for a call without tools."""
        return self.tools is not None

    @property
    def model_name_reported(self) -> str | None:
        """The name the reply reports (what it is priced by), else the model's own name."""
        if self.response is None:
            return self.model_name
        return model_name_of(None, self.response.response_metadata) or self.model_name

    def usage(self, prices: PriceTable | None = None) -> Usage:
        """This call's tokens and cost, read exactly as the loop reads them."""
        if self.response is None:
            return Usage()
        usage = Usage.from_ai_message(self.response, prompt=list(self.request))
        return usage.with_cost(cost_of(usage, self.model_name_reported, prices))

    def to_json(self) -> dict[str, Any]:
        """The JSONL line (see the module doc)."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "call": self.index,
            "model_name": self.model_name,
            "profile": json_safe(dict(self.profile)) if self.profile is not None else None,
            "tools": list(self.tools) if self.tools is not None else None,
            "request": [json_safe(message_to_dict(m)) for m in self.request],
            "fingerprint": request_fingerprint(self.request),
            "response": json_safe(message_to_dict(self.response)) if self.response else None,
            "error": (
                {
                    "type": self.error.type,
                    "message": self.error.message,
                    "status_code": self.error.status_code,
                }
                if self.error
                else None
            ),
        }

    @classmethod
    def from_json(cls, data: Any, *, path: str = "", line: int | None = None) -> RecordedCall:
        """Parse one line; raises :class:`RecordingFormatError` naming the line."""

        def bad(why: str) -> RecordingFormatError:
            where = f"{path}:{line}" if line is not None else path
            return RecordingFormatError(f"{where}: {why}", path=path, line=line)

        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise bad("not a toolloop_lab recording line")
        if data.get("version") != VERSION:
            raise bad(f"unsupported recording version {data.get('version')!r}")
        try:
            request = tuple(messages_from_dict(data["request"]))
            raw_response = data.get("response")
            response = messages_from_dict([raw_response])[0] if raw_response else None
            raw_error = data.get("error")
            error = (
                RecordedError(
                    str(raw_error["type"]), str(raw_error["message"]), raw_error.get("status_code")
                )
                if raw_error
                else None
            )
            tools = data.get("tools")
            profile = data.get("profile")
            index = int(data.get("call", 0))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise bad(f"malformed line ({type(exc).__name__}: {exc})") from exc
        if response is not None and not isinstance(response, AIMessage):
            raise bad(f"response is a {type(response).__name__}, not an AIMessage")
        if response is None and error is None:
            raise bad("a line needs a response or an error")
        return cls(
            index=index,
            request=request,
            response=response,
            error=error,
            tools=tuple(str(t) for t in tools) if tools is not None else None,
            model_name=data.get("model_name"),
            profile=profile if isinstance(profile, dict) else None,
        )


@dataclass(frozen=True, slots=True)
class Recording:
    """The calls of a recording file, in order (one loop run per file is the usual case)."""

    calls: tuple[RecordedCall, ...] = field(repr=False)
    path: str | None = None

    def __repr__(self) -> str:
        return f"Recording({len(self.calls)} calls, model={self.model_name!r}, path={self.path!r})"

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Recording:
        """Read a JSONL recording; raises :class:`RecordingFormatError` on any bad line."""
        name = os.fspath(path)
        try:
            text = Path(name).read_text(encoding="utf-8")
        except OSError as exc:
            raise RecordingFormatError(f"cannot read {name}: {exc}", path=name) from exc
        calls: list[RecordedCall] = []
        for number, raw in enumerate(text.splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise RecordingFormatError(
                    f"{name}:{number}: not JSON ({exc.msg})", path=name, line=number
                ) from exc
            calls.append(RecordedCall.from_json(data, path=name, line=number))
        if not calls:
            raise RecordingFormatError(f"{name}: no calls recorded", path=name)
        return cls(tuple(calls), name)

    def __len__(self) -> int:
        return len(self.calls)

    @property
    def model_name(self) -> str | None:
        """The recorded model's own name (as the first call saw it)."""
        return self.calls[0].model_name

    @property
    def profile(self) -> Mapping[str, Any] | None:
        """The recorded model's profile, so a replay resolves the same context window."""
        return self.calls[0].profile

    @property
    def task(self) -> tuple[BaseMessage, ...]:
        """The run's input: the first request's messages before its first AI message."""
        first = self.calls[0].request
        for i, message in enumerate(first):
            if isinstance(message, AIMessage):
                return first[:i]
        return first

    @property
    def final_answer(self) -> RecordedCall | None:
        """The last call whose reply has no tool calls (the run's answer), if any."""
        for call in reversed(self.calls):
            r = call.response
            if r is not None and not r.tool_calls and not r.invalid_tool_calls:
                return call
        return None

    def usage(self, prices: PriceTable | None = None) -> Usage:
        """Every recorded call's tokens and cost, summed (cost ``None`` if any is unpriced)."""
        total = Usage()
        for call in self.calls:
            total = total + call.usage(prices)
        return total

    def cost_usd(self, prices: PriceTable | None = None) -> Decimal | None:
        """Shorthand for ``usage(prices).cost_usd``."""
        return self.usage(prices).cost_usd


def append_call(path: str | os.PathLike[str], call: RecordedCall) -> None:
    """Append one line; the caller serialises writers (RecordingChatModel holds a lock)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(call.to_json(), ensure_ascii=False, allow_nan=False, sort_keys=True)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(line + "\n")


# -- fingerprints ---------------------------------------------------------------------


def _call_sig(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": c.get("id"), "name": c.get("name"), "args": json_safe(c.get("args"))} for c in calls
    ]


def message_signature(message: BaseMessage) -> dict[str, Any]:
    """What must match for two messages to count as the same in replay.

    Role, content, tool calls (id, name, arguments, invalid ones included) and, for tool
    results, the call id and status. Not compared: message ids, usage, response metadata,
    artifacts and other provider extras, which legitimately change between runs.
    """
    role = message.role if isinstance(message, ChatMessage) else message.type
    sig: dict[str, Any] = {"role": role, "content": json_safe(message.content)}
    if isinstance(message, AIMessage):
        sig["tool_calls"] = _call_sig(message.tool_calls)
        sig["invalid_tool_calls"] = _call_sig(message.invalid_tool_calls)
    if isinstance(message, ToolMessage):
        sig["tool_call_id"] = message.tool_call_id
        sig["status"] = message.status
    return sig


def request_signature(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """:func:`message_signature` of every message of a request."""
    return [message_signature(m) for m in messages]


def request_fingerprint(messages: Sequence[BaseMessage]) -> str:
    """A short stable hash of :func:`request_signature` (for humans and quick diffs)."""
    text = json.dumps(
        request_signature(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def describe_message(sig: Mapping[str, Any] | None, *, limit: int = 160) -> str:
    """One line for an error message: role, ids, names and the start of the content."""
    if sig is None:
        return "(no message)"
    parts = [str(sig["role"])]
    if sig.get("tool_call_id"):
        parts.append(f"[{sig['tool_call_id']}, {sig.get('status')}]")
    calls = [*sig.get("tool_calls", ()), *sig.get("invalid_tool_calls", ())]
    if calls:
        parts.append(
            "calls " + ", ".join(f"{c['name']}#{c['id']}({_short(c['args'], 40)})" for c in calls)
        )
    parts.append(_short(sig.get("content"), limit))
    return " ".join(parts)


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def tool_names(tools: Sequence[Any]) -> tuple[str, ...]:
    """Names of tools as ``bind_tools`` receives them (tools, functions or schema dicts)."""
    names: list[str] = []
    for t in tools:
        if isinstance(t, BaseTool):
            names.append(t.name)
        elif isinstance(t, Mapping) and isinstance(t.get("name"), str):
            names.append(t["name"])
        elif isinstance(t, Mapping) and isinstance(t.get("function"), Mapping):
            names.append(str(t["function"].get("name")))
        else:
            try:
                names.append(str(convert_to_openai_tool(t)["function"]["name"]))
            except Exception:  # noqa: BLE001 - an exotic tool spec still gets a name
                names.append(getattr(t, "__name__", type(t).__name__))
    return tuple(names)
