"""The recording file: its line format, reader and writer.

A recording is JSONL, one line per model call, written by
:class:`~toolloop_lab.RecordingChatModel` and read by :meth:`Recording.from_file`.
Messages use langchain-core's own serialisation (``message_to_dict``): plain JSON, never
pickle, so a recording is safe to read and easy to diff. Line format, version 1::

    {"format": "toolloop_lab.recording", "version": 1, "call": 0,
     "model_name": "gpt-4o-mini",            # the wrapped model's own name
     "profile": {...} | null,                # its profile (context window), for replay
     "tools": ["add", "search"] | null,      # tool names bound to the call; null: no tools
     "request": [<message dict>, ...],       # every message the model was sent
     "fingerprint": "9f2c...",               # of the request; see request_signature()
     "response": <message dict> | null,      # the AIMessage: tool_calls, invalid_tool_calls,
                                             #   usage_metadata, response_metadata
     "error": {"type": "openai.RateLimitError", "message": "...", "status_code": 429} | null,
     "chunks": [<AIMessageChunk dict>, ...]} # streamed calls only: the chunks as sent (a
                                             #   failed stream keeps those that arrived)

``chunks`` is the one addition since the first files: a line without it is a call made
whole, so older recordings load unchanged, and older readers ignore it and replay the
aggregated ``response``. Each line holds the full request, so a line is readable on its own
(at the price of size growing with the square of the rounds).

Lines are written as ASCII JSON (everything past ASCII escaped, as traces are), so a tool
result holding a lone surrogate or U+2028 is stored safely, and surrogate halves written as
two code points are kept apart, so they do not come back joined (a line marked
``"surrogate_halves": 1``; see :mod:`toolloop_lab._support.jsonl`); lines are split on ``\\n`` only
(:func:`toolloop_lab._support.jsonl.read_lines`), so files holding such characters raw still load.
A file is untrusted input: each line is checked by a strict pydantic model, each message
by its own langchain-core class and the profile as langchain-core types it (both in strict
mode, token limits positive), and anything wrong is a
:class:`RecordingFormatError` naming the line, the field and the reason.

Its errors (:class:`~toolloop_lab.errors.RecordingError` and its subclasses) live in
:mod:`toolloop_lab.errors`, where the whole exception tree is drawn.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    message_to_dict,
)
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.utils.json import parse_partial_json
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from toolloop_lab._spend.pricing import PriceTable, model_name_of, price_of
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.errortext import describe, unwrap
from toolloop_lab._support.escape import clip, plain
from toolloop_lab._support.fields import dotted, where_message
from toolloop_lab._support.jsonl import Line, dump_line, load_line, read_lines
from toolloop_lab._support.jsonsafe import json_safe
from toolloop_lab._tools.content import without_made_ids
from toolloop_lab.errors import (
    FormatProblem,
    RecordingFormatError,
)

FORMAT: Final = "toolloop_lab.recording"
VERSION: Final = 1

# -- values ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedError:
    """What a failed call raised, in a form that survives JSON."""

    type: str
    message: str
    status_code: int | None = None

    @classmethod
    def of(cls, exc: BaseException) -> RecordedError:
        """Describe ``exc`` (class path, message and HTTP status when it has one): a group
        of one as the exception it holds, whose message is never empty (see
        :func:`~toolloop_lab.errors.describe`)."""
        exc = unwrap(exc)
        kind = type(exc)
        status = getattr(exc, "status_code", None)
        return cls(
            f"{kind.__module__}.{kind.__qualname__}",
            describe(exc),
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
    chunks: tuple[AIMessageChunk, ...] | None = None
    """A streamed call's chunks as the provider sent them (for a failed stream, those that
    arrived before the error); ``None`` for a call made whole."""

    @property
    def tools_bound(self) -> bool:
        """True for a tool round's call, False for a call without tools."""
        return self.tools is not None

    @property
    def streamed(self) -> bool:
        """True when the call was streamed (and replay can stream the same chunks)."""
        return self.chunks is not None

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
        return usage.with_cost(price_of(usage, self.model_name_reported, prices))

    def to_json(self) -> dict[str, Any]:
        """The JSONL line (see the module doc)."""
        line: dict[str, Any] = {
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
        if self.chunks is not None:
            line["chunks"] = [json_safe(message_to_dict(c)) for c in self.chunks]
        return line

    @classmethod
    def from_json(cls, data: Any, *, path: str = "", line: int | None = None) -> RecordedCall:
        """Parse one decoded line; raises :class:`RecordingFormatError` naming the line,
        the field and the reason."""
        where = f"{path}:{line}" if line is not None else path

        def bad(why: str, reason: FormatProblem, at: str | None = None) -> RecordingFormatError:
            return RecordingFormatError(
                f"{where}: {why}", path=path, line=line, field=at, reason=reason
            )

        if not isinstance(data, dict):
            raise bad("not a toolloop_lab recording line (not a JSON object)", "not_a_recording")
        try:
            parsed = _LineModel.model_validate(data)
        except ValidationError as exc:
            why, reason, at = _line_problem(exc, data)
            raise bad(why, reason, at) from exc
        try:
            request: tuple[BaseMessage, ...] = tuple(
                _message(m, f"request.{i}") for i, m in enumerate(parsed.request)
            )
            response = _message(parsed.response, "response", AIMessage) if parsed.response else None
            chunks = (
                tuple(
                    _message(c, f"chunks.{i}", AIMessageChunk) for i, c in enumerate(parsed.chunks)
                )
                if parsed.chunks is not None
                else None
            )
            profile = _profile(parsed.profile)
        except _BadField as exc:
            why = f"malformed field {where_message(exc.field, exc.why)}"
            raise bad(why, "invalid_field", exc.field) from exc
        if response is None and parsed.error is None:
            raise bad("a line needs a response or an error", "invalid_field", "response")
        error = parsed.error
        return cls(
            index=parsed.call,
            request=request,
            response=response,
            error=RecordedError(error.type, error.message, error.status_code) if error else None,
            tools=tuple(parsed.tools) if parsed.tools is not None else None,
            model_name=parsed.model_name,
            profile=profile,
            chunks=chunks,
        )

    @classmethod
    def from_line(cls, line: Line, *, path: str = "") -> RecordedCall:
        """Parse one raw line of a file (bytes): UTF-8, then JSON, then :meth:`from_json`."""
        try:
            text = line.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = _bad_bytes_field(line.data)
            raise RecordingFormatError(
                f"{path}:{line.number}: not UTF-8 ({exc.reason} at byte {exc.start})"
                + (f" in field {at}" if at else ""),
                path=path,
                line=line.number,
                field=at,
                reason="not_utf8",
            ) from exc
        try:
            data = load_line(text)
        except json.JSONDecodeError as exc:
            raise RecordingFormatError(
                f"{path}:{line.number}: not JSON ({exc.msg})",
                path=path,
                line=line.number,
                reason="not_json",
            ) from exc
        return cls.from_json(data, path=path, line=line.number)


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
            lines = read_lines(name).lines
        except OSError as exc:
            raise RecordingFormatError(
                f"cannot read {name}: {exc}", path=name, reason="unreadable"
            ) from exc
        calls = tuple(RecordedCall.from_line(line, path=name) for line in lines)
        if not calls:
            raise RecordingFormatError(f"{name}: no calls recorded", path=name, reason="empty")
        return cls(calls, name)

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


def looks_like_recording(path: str | os.PathLike[str]) -> bool:
    """True when the file's first line names the recording format (a trace's lines are
    events); a file that cannot be read is left to the reader that reports it."""
    try:
        with Path(path).open("rb") as handle:
            first = handle.readline()
    except OSError:
        return False
    try:
        data = load_line(first)
    except ValueError:  # not JSON, or nested too deep: the reader reports it
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def append_call(path: str | os.PathLike[str], call: RecordedCall) -> None:
    """Append one line as ASCII JSON; the caller serialises writers (RecordingChatModel
    holds a lock). Any failure (``OSError`` and the like) propagates to the caller."""
    target = Path(path)
    line = dump_line(call.to_json())
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a", encoding="ascii") as handle:
        handle.write(line + "\n")


# -- the line, as pydantic checks it ----------------------------------------------------

_STRICT: Final = ConfigDict(strict=True, frozen=True, extra="ignore")


class _MessageModel(BaseModel):
    """A message as ``message_to_dict`` writes it; ``data`` is checked by its own class."""

    model_config = _STRICT
    type: str
    data: dict[str, Any]


class _ErrorModel(BaseModel):
    model_config = _STRICT
    type: str
    message: str
    status_code: int | None = None


class _LineModel(BaseModel):
    """One line, strict (a file is untrusted): ``"call": "0"`` or ``"tools": 5`` is refused,
    never coerced. Keys other than these are ignored, so a later minor addition still
    loads; a missing optional key reads as ``null`` (hand-written lines)."""

    model_config = _STRICT
    format: Literal["toolloop_lab.recording"]
    version: int
    call: int = Field(default=0, ge=0)
    model_name: str | None = None
    profile: dict[str, Any] | None = None
    tools: list[str] | None = None
    request: list[_MessageModel]
    fingerprint: str | None = None
    response: _MessageModel | None = None
    error: _ErrorModel | None = None
    chunks: list[_MessageModel] | None = None

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if value != VERSION:
            raise ValueError(f"unsupported recording version {value}")
        return value


_MESSAGE_TYPES: Final[Mapping[str, type[BaseMessage]]] = {
    "human": HumanMessage,
    "ai": AIMessage,
    "system": SystemMessage,
    "chat": ChatMessage,
    "function": FunctionMessage,
    "tool": ToolMessage,
    "remove": RemoveMessage,
    "AIMessageChunk": AIMessageChunk,
    "HumanMessageChunk": HumanMessageChunk,
    "FunctionMessageChunk": FunctionMessageChunk,
    "ToolMessageChunk": ToolMessageChunk,
    "SystemMessageChunk": SystemMessageChunk,
    "ChatMessageChunk": ChatMessageChunk,
}
"""langchain-core's message types by their ``message_to_dict`` name (``messages_from_dict``
knows the same set, but builds them leniently)."""
_M = TypeVar("_M", bound=BaseMessage)


class _BadField(Exception):
    def __init__(self, field: str, why: str) -> None:
        super().__init__(why)
        self.field = field
        self.why = why


def _message(raw: _MessageModel, at: str, kind: type[_M] | None = None) -> _M:
    """Build one message with its own class in strict mode, naming the field that is wrong;
    ``kind`` is the one class allowed there (a reply must be an ``AIMessage``)."""
    cls = _MESSAGE_TYPES.get(raw.type)
    if cls is None or (kind is not None and cls is not kind):
        names = [n for n, c in _MESSAGE_TYPES.items() if kind is None or c is kind]
        raise _BadField(f"{at}.type", f"{raw.type!r} is not one of {', '.join(names)}")
    try:
        return cast("_M", cls.model_validate(raw.data, strict=True))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise _BadField(dotted((at, "data", *first["loc"])), first["msg"]) from exc
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # a class's own checks
        key = _first_bad_key(cls, raw.data)
        where = f"{at}.data.{key}" if key else f"{at}.data"
        raise _BadField(where, f"{type(exc).__name__}: {exc}") from exc


_PROFILE_TYPE: Any = BaseChatModel.model_fields["profile"].annotation
_PROFILE: Final[TypeAdapter[Any]] = TypeAdapter(_PROFILE_TYPE)
"""A model profile as langchain-core's chat models declare it (its keys typed, newer keys
allowed): what a replay model is given, so a bad one is refused where it is read."""
_TOKEN_LIMITS: Final = ("max_input_tokens", "max_output_tokens")


def _profile(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """The recorded profile, checked strictly (``"128000"`` is refused, never coerced);
    its token limits, which set a replay's context window, must be positive."""
    if raw is None:
        return None
    try:
        _PROFILE.validate_python(raw, strict=True)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise _BadField(dotted(("profile", *first["loc"])), first["msg"]) from exc
    for key in _TOKEN_LIMITS:
        value = raw.get(key)
        if isinstance(value, int) and value < 1:
            raise _BadField(f"profile.{key}", f"should be a positive number of tokens, not {value}")
    return raw


def _first_bad_key(cls: type[BaseModel], data: Mapping[str, Any]) -> str | None:
    """The first field of ``data`` its type refuses, checked alone: for the failures a
    class's own validators raise before pydantic could say where."""
    for name, info in cls.model_fields.items():
        if name in data:
            try:
                kind: Any = info.annotation
                TypeAdapter(kind).validate_python(data[name], strict=True)
            except ValidationError:
                return name
    return None


def _bad_bytes_field(data: bytes) -> str | None:
    """Where in the line the bytes that are not UTF-8 sit: a broken editor's byte inside a
    field, or a line cut in the middle of a character (read as far as it goes, with
    langchain-core's partial-JSON parser); ``None`` when no field holds them."""
    text = data.decode("utf-8", "surrogateescape")
    try:
        try:
            parsed = load_line(text)
        except json.JSONDecodeError:
            parsed = parse_partial_json(text)
        return _find_text(parsed, (), lambda s: any("\udc80" <= ch <= "\udcff" for ch in s))
    except (json.JSONDecodeError, RecursionError):  # no field to name in what cannot be read
        return None


def _find_text(value: Any, at: tuple[int | str, ...], hit: Callable[[str], bool]) -> str | None:
    if isinstance(value, str):
        return dotted(at) if hit(value) else None
    items: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        if isinstance(key, str) and hit(key):
            return dotted((*at, key))
        found = _find_text(item, (*at, key), hit)
        if found is not None:
            return found
    return None


# -- fingerprints ---------------------------------------------------------------------


def _call_sig(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": c.get("id"), "name": c.get("name"), "args": json_safe(c.get("args"))} for c in calls
    ]


def message_signature(message: BaseMessage) -> dict[str, Any]:
    """What must match for two messages to count as the same in replay.

    Role, content, tool calls (id, name, arguments, invalid ones included) and, for tool
    results, the call id and status. Not compared: message ids, usage, response metadata,
    artifacts and other provider extras, which legitimately change between runs, nor the
    ids langchain-core makes up for content blocks (a new one on every run: a LangGraph
    ``ToolNode`` keeps them on an MCP tool's result).
    """
    role = message.role if isinstance(message, ChatMessage) else message.type
    sig: dict[str, Any] = {"role": role, "content": json_safe(without_made_ids(message.content))}
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
    # surrogatepass: a lone surrogate (from a tool, say) hashes instead of raising; any
    # other text hashes exactly as before, so fingerprints of old lines still match
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def describe_message(sig: Mapping[str, Any] | None, *, limit: int = 160) -> str:
    """One line for an error message: role, ids, names and the start of the content (the
    content quoted with ``repr``; the rest :func:`plain`, as every text view shows it)."""
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
    return plain(" ".join(parts))


def _short(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return repr(clip(text, limit))


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


def _line_problem(exc: ValidationError, data: dict[str, Any]) -> tuple[str, FormatProblem, str]:
    """What is wrong with a line pydantic refused: the words, the reason and the field.
    A wrong ``format`` or ``version`` says the file is no (supported) recording at all."""
    problems = exc.errors(include_url=False)
    if any(p["loc"][:1] == ("format",) for p in problems):
        return "not a toolloop_lab recording line", "not_a_recording", "format"
    if any(p["loc"][:1] == ("version",) for p in problems):
        why = f"unsupported recording version {data.get('version')!r}"
        return why, "unsupported_version", "version"
    at = dotted(problems[0]["loc"])
    return f"malformed field {where_message(at, problems[0]['msg'])}", "invalid_field", at
