"""Tool dispatch: every tool call ends as exactly one ``ToolMessage``, success or error.

Unknown tools, invalid JSON arguments, wrong argument names, tools that raise and tools
that time out all become ``ToolMessage(status="error")`` that the model can read and
react to; the loop goes on. Only ``KeyboardInterrupt``, ``SystemExit`` and the loop's own
cancellation propagate.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import ValidationError

from toolloop_lab.errors import ExecutionError
from toolloop_lab.jsonsafe import dumps

__all__ = [
    "DispatchOutcome",
    "dispatch",
    "normalize_tool_call_ids",
    "not_available_error",
    "serialize_output",
    "skipped_outcomes",
]


@dataclass(frozen=True, slots=True)
class DispatchOutcome:
    """One tool call's ``ToolMessage`` and how it came about."""

    message: ToolMessage
    name: str
    args: Mapping[str, Any]
    status: Literal["success", "error"]
    error_reason: str | None
    duration_s: float


def serialize_output(value: Any) -> str:
    """Text for the model: strings as they are, anything else as deterministic JSON."""
    if isinstance(value, str):
        return value
    return dumps(value, ascii_only=False)


def not_available_error(name: str, available: Sequence[str]) -> ExecutionError:
    """The error for a call to a tool the agent does not have."""
    listing = ", ".join(sorted(available)) or "(none)"
    return ExecutionError(
        f"Tool {name!r} is not available. Available tools: {listing}.",
        kind="tool",
        reason="not_available",
    )


def _error_outcome(
    call_id: str, name: str, args: Mapping[str, Any], reason: str, text: str, started: float
) -> DispatchOutcome:
    msg = ToolMessage(content=f"Error: {text}", tool_call_id=call_id, name=name, status="error")
    return DispatchOutcome(msg, name, args, "error", reason, time.perf_counter() - started)


def normalize_tool_call_ids(message: AIMessage, used: Collection[str] = ()) -> AIMessage:
    """Give every tool call a unique, non-empty id so each gets exactly one ToolMessage.

    Providers occasionally send missing, empty or repeated ids; a transcript with those
    cannot be answered one-to-one. An id is kept at its first occurrence unless ``used``
    (ids already in the transcript) holds it; every other one is replaced by a fresh
    ``call_<n>`` that appears nowhere else. Content blocks that carry the same ids
    (Anthropic ``tool_use``, standard ``tool_call``, OpenAI Responses ``function_call``)
    are renamed alike, in order, so a provider converter never pairs a block with the
    wrong call. The reply is returned unchanged when all ids are fine.
    """
    calls = list(message.tool_calls)
    invalid = list(message.invalid_tool_calls)
    raw_ids = [c.get("id") for c in calls] + [c.get("id") for c in invalid]
    seen = set(used)
    keep: list[bool] = []
    for cid in raw_ids:
        ok = isinstance(cid, str) and bool(cid) and cid not in seen
        keep.append(ok)
        if ok:
            seen.add(cast(str, cid))
    if all(keep):
        return message
    taken = seen | {cid for cid in raw_ids if isinstance(cid, str)}
    counter = 0
    ids: list[str] = []
    for cid, ok in zip(raw_ids, keep, strict=True):
        if ok:
            ids.append(cast(str, cid))
            continue
        counter += 1
        while f"call_{counter}" in taken:
            counter += 1
        ids.append(f"call_{counter}")
        taken.add(ids[-1])
    fixed_calls: list[ToolCall] = [
        call if call.get("id") == cid else {**call, "id": cid}
        for call, cid in zip(calls, ids, strict=False)
    ]
    fixed_invalid: list[InvalidToolCall] = [
        bad if bad.get("id") == cid else {**bad, "id": cid}
        for bad, cid in zip(invalid, ids[len(calls) :], strict=True)
    ]
    renames: dict[str, list[str]] = {}
    for cid, new in zip(raw_ids, ids, strict=True):
        if isinstance(cid, str) and cid:
            renames.setdefault(cid, []).append(new)
    update: dict[str, Any] = {"tool_calls": fixed_calls, "invalid_tool_calls": fixed_invalid}
    if isinstance(message.content, list) and any(
        len(news) > 1 or news[0] != old for old, news in renames.items()
    ):
        update["content"] = _rename_blocks(message.content, renames)
    return message.model_copy(update=update)


_ID_KEYS: dict[str, str] = {"tool_use": "id", "tool_call": "id", "function_call": "call_id"}
"""Content-block types that carry a tool-call id, and the key that holds it."""


def _rename_blocks(content: list[Any], renames: Mapping[str, list[str]]) -> list[Any]:
    """``content`` with the n-th block carrying id X given the n-th new id for X."""
    queues = {old: list(news) for old, news in renames.items()}
    out: list[Any] = []
    for block in content:
        key = _ID_KEYS.get(block.get("type", "")) if isinstance(block, dict) else None
        old = block.get(key) if key else None
        if key and isinstance(old, str) and queues.get(old):
            block = {**block, key: queues[old].pop(0)}
        out.append(block)
    return out


async def _run_tool(tool: BaseTool, call: ToolCall) -> tuple[str, Any]:
    if tool.response_format == "content_and_artifact":
        msg = await tool.ainvoke({**call, "type": "tool_call"})
        return serialize_output(msg.content), getattr(msg, "artifact", None)
    raw = await tool.ainvoke(dict(call["args"]))
    if isinstance(raw, ToolMessage):
        return serialize_output(raw.content), raw.artifact
    return serialize_output(raw), None


async def _dispatch_one(
    call: ToolCall, tools: Mapping[str, BaseTool], timeout_s: float | None
) -> DispatchOutcome:
    started = time.perf_counter()
    call_id = call["id"] or ""
    name = call["name"]
    args = call["args"]
    tool = tools.get(name)
    if tool is None:
        err = not_available_error(name, list(tools))
        return _error_outcome(call_id, name, args, err.reason, str(err), started)
    if not isinstance(args, Mapping):
        text = f"arguments for tool {name!r} must be a JSON object, got {type(args).__name__}"
        return _error_outcome(call_id, name, {}, "invalid_arguments", text, started)
    deadline = asyncio.timeout(timeout_s)  # None: no deadline
    try:
        async with deadline:
            content, artifact = await _run_tool(tool, call)
    except TimeoutError as exc:
        if not deadline.expired():  # the tool's own timeout, not ours
            text = f"tool {name!r} raised {type(exc).__name__}: {exc}"
            return _error_outcome(call_id, name, args, "tool_error", text, started)
        text = f"tool {name!r} timed out after {timeout_s} s"
        return _error_outcome(call_id, name, args, "timeout", text, started)
    except ValidationError as exc:
        text = f"invalid arguments for tool {name!r}: {_validation_summary(exc)}"
        return _error_outcome(call_id, name, args, "invalid_arguments", text, started)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        text = f"tool {name!r} was cancelled from inside"
        return _error_outcome(call_id, name, args, "tool_cancelled", text, started)
    except Exception as exc:  # noqa: BLE001 - every tool failure goes back to the model
        text = f"tool {name!r} raised {type(exc).__name__}: {exc}"
        return _error_outcome(call_id, name, args, "tool_error", text, started)
    msg = ToolMessage(
        content=content, tool_call_id=call_id, name=name, status="success", artifact=artifact
    )
    return DispatchOutcome(msg, name, args, "success", None, time.perf_counter() - started)


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _invalid_outcome(call: InvalidToolCall) -> DispatchOutcome:
    name = call.get("name") or "(unnamed)"
    raw = call.get("args")
    detail = call.get("error") or "arguments are not valid JSON"
    text = f"could not parse the call to {name!r}: {detail}. Raw arguments: {dumps(raw)}"
    return _error_outcome(call.get("id") or "", name, {}, "invalid_call", text, time.perf_counter())


async def dispatch(
    message: AIMessage, tools: Mapping[str, BaseTool], *, timeout_s: float | None = None
) -> list[DispatchOutcome]:
    """Run every tool call of ``message`` concurrently; outcomes come back in call order.

    Invalid calls (``invalid_tool_calls``) get their error messages after the valid ones,
    in their own order. A task group cancels the siblings if the loop is cancelled, so no
    task outlives the dispatch.
    """
    calls = message.tool_calls
    if len(calls) == 1:
        outcomes = [await _dispatch_one(calls[0], tools, timeout_s)]
    elif calls:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_dispatch_one(c, tools, timeout_s)) for c in calls]
        outcomes = [t.result() for t in tasks]
    else:
        outcomes = []
    outcomes.extend(_invalid_outcome(c) for c in message.invalid_tool_calls)
    return outcomes


def skipped_outcomes(message: AIMessage, reason: str, text: str) -> list[DispatchOutcome]:
    """Error outcomes for calls the loop will not run (budget spent, loop stopped)."""
    now = time.perf_counter()
    out = [
        _error_outcome(c["id"] or "", c["name"], c["args"], reason, text, now)
        for c in message.tool_calls
    ]
    out.extend(
        _error_outcome(c.get("id") or "", c.get("name") or "(unnamed)", {}, reason, text, now)
        for c in message.invalid_tool_calls
    )
    return out
