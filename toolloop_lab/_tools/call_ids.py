"""A reply's tool-call ids, made unique before the calls run: each call gets exactly one
``ToolMessage``, and the content blocks that carry the same ids keep pairing with them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, cast

from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall


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
    if _ids_fine(message, used):
        return message
    calls = list(message.tool_calls)
    invalid = list(message.invalid_tool_calls)
    raw_ids = [c.get("id") for c in calls] + [c.get("id") for c in invalid]
    ids = _unique_ids(raw_ids, used)
    if ids is None:
        return message
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


def _ids_fine(message: AIMessage, used: Collection[str]) -> bool:
    """Every call id of ``message`` is a non-empty string, unique in it and not in ``used``
    (the common case, checked without building the lists a renaming needs)."""
    seen: set[str] = set()
    for calls in (message.tool_calls, message.invalid_tool_calls):
        for call in calls:
            cid = call.get("id")
            if not isinstance(cid, str) or not cid or cid in seen or cid in used:
                return False
            seen.add(cid)
    return True


def _unique_ids(raw_ids: list[Any], used: Collection[str]) -> list[str] | None:
    """A unique, non-empty id per call (first occurrences kept), or ``None`` when the ids
    are all fine already."""
    seen: set[str] = set()  # ids kept in this reply; ``used`` is only read, never copied
    keep: list[bool] = []
    for cid in raw_ids:
        ok = isinstance(cid, str) and bool(cid) and cid not in seen and cid not in used
        keep.append(ok)
        if ok:
            seen.add(cast(str, cid))
    if all(keep):
        return None
    taken = set(used) | seen | {cid for cid in raw_ids if isinstance(cid, str)}
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
    return ids


_ID_KEYS: dict[str, str] = {"tool_use": "id", "tool_call": "id", "function_call": "call_id"}
"""Content-block types that carry a tool-call id, and the key that holds it."""


def block_calls(content: Any) -> list[tuple[str, str]]:
    """``(id, name)`` of each tool call a message's content blocks carry (Anthropic
    ``tool_use``, standard ``tool_call``, OpenAI Responses ``function_call``), in order;
    blocks without a usable id are left out. Content is untrusted: anything goes in."""
    if not isinstance(content, list):
        return []
    found: list[tuple[str, str]] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        key = _ID_KEYS.get(kind) if isinstance(kind, str) else None
        cid = block.get(key) if key else None
        if isinstance(cid, str) and cid:
            name = block.get("name")
            found.append((cid, name if isinstance(name, str) and name else "(unnamed)"))
    return found


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
