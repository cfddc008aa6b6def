"""Message content in the GenAI conventions' JSON shapes, for ``capture_content=True`` only.

Events carry messages as langchain-core dicts (``{"type": "human", "data": {...}}``); the
conventions want ``{"role": ..., "parts": [...]}`` (input messages) and the same plus a
``finish_reason`` (output messages), recorded on spans as JSON strings because span
attributes cannot hold nested data. Every text that came from a model, a tool or a person
is clipped to a bounded length first (``escape.clip``: the one ``… (N chars)`` marker every
view writes), so one huge tool output cannot make an unexportable span; the JSON stays
valid because clipping happens before encoding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from toolloop_lab._support.escape import clip
from toolloop_lab._tools.content import content_text
from toolloop_lab.events import ToolCallView

DEFAULT_CONTENT_LIMIT: Final = 16_384
"""Characters kept of one text (a message part, a tool result, arguments as JSON)."""

_ROLES: Final = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def to_json(value: Any) -> str:
    """Compact JSON text for an attribute (non-JSON values as their ``str``)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _text_parts(content: Any, limit: int) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": clip(content, limit)}] if content else []
    parts: list[dict[str, Any]] = []
    if not isinstance(content, Sequence):
        return [{"type": "text", "content": clip(str(content), limit)}]
    for block in content:
        if isinstance(block, str):
            parts.append({"type": "text", "content": clip(block, limit)})
        elif isinstance(block, Mapping):
            kind = str(block.get("type", "unknown"))
            if kind == "text":
                parts.append({"type": "text", "content": clip(str(block.get("text", "")), limit)})
            elif kind in {"reasoning", "thinking"}:
                text = block.get("reasoning", block.get("thinking", ""))
                parts.append({"type": "reasoning", "content": clip(str(text), limit)})
            else:  # images, files, provider blocks: say what was there, not the payload
                parts.append({"type": kind})
    return parts


def _tool_call_part(call: Mapping[str, Any], limit: int) -> dict[str, Any]:
    args = call.get("args", {})
    encoded = to_json(args)
    arguments: Any = args if len(encoded) <= limit else clip(encoded, limit)
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": call.get("name"),
        "arguments": arguments,
    }


def _message(data: Mapping[str, Any], kind: str, limit: int) -> dict[str, Any]:
    role = _ROLES.get(kind, kind)
    if role == "tool":
        result = clip(content_text(data.get("content", "")), limit)  # blocks in words
        part = {"type": "tool_call_response", "id": data.get("tool_call_id"), "response": result}
        return {"role": "tool", "parts": [part]}
    parts = _text_parts(data.get("content", ""), limit)
    for call in data.get("tool_calls") or ():
        if isinstance(call, Mapping):
            parts.append(_tool_call_part(call, limit))
    message: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(data.get("name"), str):
        message["name"] = data["name"]
    return message


def input_messages(dicts: Iterable[Mapping[str, Any]], limit: int) -> list[dict[str, Any]]:
    """langchain-core message dicts as the conventions' input messages."""
    messages = []
    for item in dicts:
        data = item.get("data")
        if isinstance(data, Mapping):
            messages.append(_message(data, str(item.get("type", "")), limit))
    return messages


def finish_reason_of(
    finish_reason: str | None, *, truncated: bool, tool_calls: bool, failed: bool = False
) -> str:
    """The provider's finish reason; when it gave none, the one the reply shows."""
    if finish_reason:
        return finish_reason
    if failed:
        return "error"
    if truncated:
        return "length"
    return "tool_call" if tool_calls else "stop"


def output_message(
    text: str, tool_calls: Sequence[ToolCallView], finish_reason: str, limit: int
) -> dict[str, Any]:
    """One assistant reply as the conventions' output message."""
    parts: list[dict[str, Any]] = [{"type": "text", "content": clip(text, limit)}] if text else []
    for call in tool_calls:
        parts.append(_tool_call_part({"id": call.id, "name": call.name, "args": call.args}, limit))
    return {"role": "assistant", "parts": parts, "finish_reason": finish_reason}


def tool_definitions(names: Iterable[str]) -> list[dict[str, str]]:
    """The tools bound to a call (events hold their names only)."""
    return [{"type": "function", "name": name} for name in names]
