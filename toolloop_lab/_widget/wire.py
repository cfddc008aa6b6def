"""What the widget sends to the browser: events as JSON, clipped, in batches.

The browser folds events itself (``src/fold.js``, bundled from ``src/`` into
``static/debugger.js``), so Python sends each event once,
as ``event.to_dict()`` with every model-controlled string clipped (a tool that returns
megabytes, or a model that sends a megabyte tool name, must not stall the page). Clipping
follows :mod:`toolloop_lab._support.escape`: a cut string ends in ``… (N chars)``, N being its whole
length; ids are cut to :data:`~toolloop_lab._support.escape.ID_CHARS`, names and short labels (tool
and model names, finish and error reasons, type names, dict keys) to
:data:`~toolloop_lab._support.escape.NAME_CHARS`, and content (text, tool output, arguments,
messages) to the widget's ``max_chars``. The messages, both ways, are small dicts told
apart by ``type``:

Python to browser
    ``{"type": "events", "epoch", "first", "reset", "events", "now", "control"}``: the
    events from index ``first`` of run ``epoch`` on; ``reset`` starts the fold over (a new
    run, or a replay a front end asked for); ``now`` is the run's clock when sent (the
    browser ticks timers from it), ``None`` once the run is over; ``control`` is the step
    state (where the loop waits and what it is about to send or run, whether a task runs,
    a note, and the answer to the browser's last request, see :mod:`.requests`). A
    message may also carry ``runs``, the run list's rows that changed (see
    :mod:`.runs`).

Browser to Python
    ``{"type": "hello"}`` (a front end wants everything from the start),
    ``{"type": "control", "action": "continue" | "step" | "stop"}``,
    ``{"type": "intervene", "request", "pause", "action", ...}`` (a change at a pause),
    ``{"type": "fork", "request", "round"}`` ("Fork from here"),
    ``{"type": "show_run", "request", "run_id"}`` (show that run; ``None``: follow the
    newest again) and ``{"type": "compare", "request", "a", "b"}`` (two runs side by side,
    :mod:`.comparison`; ``"action": "close"`` closes it). Everything the browser
    sends is untrusted: :mod:`.requests` checks it before anything acts on it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS
from toolloop_lab._support.escape import clip as clip_text
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._tools.content import (
    DATA_BLOCK_TYPES,
    block_text,
    drawable_image,
    is_data_block,
)
from toolloop_lab.events import Event, LoopFailed, LoopFinished, LoopStarted, ModelCallStarted

MAX_BATCH_EVENTS: Final = 4_000
"""Events in one message at most; a long replay goes out as several paced messages."""

_ID_KEYS: Final = frozenset(
    {
        "run_id",
        "tool_call_id",
        "id",
        "parent_run_id",
        "parent_tool_call_id",
        "call_id",
        "session_id",
    }
)
"""Keys whose string values are ids: cut to ``ID_CHARS``."""
_NAME_KEYS: Final = frozenset(
    {
        "name",
        "tags",
        "model_name",
        "model",
        "tool_name",
        "tools",
        "prune_tools",
        "detail",
        "finish_reason",
        "stop_reason",
        "error_reason",
        "error_type",
        "error_kind",
        "reason",
        "cause_type",
        "started_at",
        "type",
        "parent_tool_name",
        "source",
        "status",
        "outcome",
        "server",
        "transport",
    }
)
"""Keys whose string values (or lists of strings) are names or labels: cut to
``NAME_CHARS``."""
_CONTENT_KEYS: Final = frozenset(
    {
        "args",
        "before",
        "after",
        "content",
        "input",
        "arguments",
        "artifact",
        "text",
        "original",
        "metadata",
        "structured",
        "lines",
    }
)
"""Keys holding content: below them, every string is content, whatever its key."""


def _clip(value: Any, max_chars: int, limit: int, structural: bool) -> Any:
    if isinstance(value, str):
        return clip_text(value, limit)
    if isinstance(value, dict):
        if value.get("type") in DATA_BLOCK_TYPES and is_data_block(value):
            value = _said(value)
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = clip_text(key, NAME_CHARS)  # a key is a name, whoever chose it
            if not structural or key in _CONTENT_KEYS:
                out[name] = _clip(item, max_chars, max_chars, False)
            elif key in _ID_KEYS:
                out[name] = _clip(item, max_chars, min(ID_CHARS, max_chars), True)
            elif key in _NAME_KEYS:
                out[name] = _clip(item, max_chars, min(NAME_CHARS, max_chars), True)
            else:
                out[name] = _clip(item, max_chars, max_chars, True)
        return out
    if isinstance(value, (list, tuple)):
        return [_clip(v, max_chars, limit, structural) for v in value]
    return value


def _said(block: dict[str, Any]) -> dict[str, Any]:
    """A data block (an image a tool returned, say) as the page gets it: its type, its
    MIME type and its words (``text``, which the page shows as a text block's), never
    its bytes, which the page has no use for and would only cut."""
    said = {"type": block["type"], "text": block_text(block)}
    if isinstance(block.get("mime_type"), str):
        said["mime_type"] = block["mime_type"]
    return said


def clip(value: Any, max_chars: int) -> Any:
    """``value`` (JSON data) with every string cut as its key says (ids, names, content;
    see the module doc), each cut saying how long the string was, and lone surrogates
    replaced (U+FFFD, so the message can be sent as UTF-8); a data block (an image, a
    file: ``{"type": "image", "base64": ...}``) becomes its words, as the text views say
    it (``{"type": "image", "mime_type": "image/png", "text": "[image: image/png, 12 KB]"}``)."""
    return _clip(value, max_chars, max_chars, True)


def _compact(value: Any) -> Any:
    """A message dict without its empty fields (``None``, ``""``, ``{}``, ``[]``): langchain
    writes a dozen per message, and a long run sends tens of thousands of messages."""
    if isinstance(value, dict):
        out = {k: _compact(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", {}, [])}
    if isinstance(value, list):
        return [_compact(v) for v in value]
    return value


def event_payload(event: Event, max_chars: int) -> dict[str, Any]:
    """One event as the browser gets it: JSON-safe, clipped, the message dicts it carries
    without their empty fields, a data block (an image) said in words (see ``clip``). A
    tool result's ``blocks`` go along only when they hold more than text (the page reads
    its ``content``, their words, otherwise): an image the page may draw keeps its data
    (:func:`page_blocks`)."""
    raw = event.to_dict()
    blocks = raw.pop("blocks", None)
    data: dict[str, Any] = clip(raw, max_chars)
    if data.get("messages"):
        data["messages"] = [_compact(m) for m in data["messages"]]
    if blocks and any(is_data_block(b) for b in blocks):
        data["blocks"] = page_blocks(blocks, max_chars)
    return data


IMAGE_CHARS: Final = 2_000_000
"""Base64 characters of one image the page is sent to draw (about 1.5 MB); a bigger one
is said in words."""


def page_blocks(blocks: Sequence[Any], max_chars: int) -> list[dict[str, Any]]:
    """A result's content blocks as the page gets them: text clipped, an image of a type
    the page draws (:data:`~toolloop_lab._tools.content.DRAWN_IMAGE_TYPES`, never SVG) with
    its base64 data whole, up to :data:`IMAGE_CHARS`, any other data block in words."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        data = drawable_image(block)
        if data is not None and len(data[1]) <= IMAGE_CHARS:
            mime, b64 = data
            out.append(
                {"type": "image", "mime_type": mime, "base64": b64, "text": block_text(block)}
            )
        elif is_data_block(block):
            out.append(clip(_said(block), max_chars))
        else:
            out.append(clip(block, max_chars))
    return out


def compact_messages(messages: Any, max_chars: int) -> list[Any]:
    """Message dicts as the browser gets them: thawed, clipped, without empty fields."""
    return [_compact(m) for m in clip(thaw(list(messages)), max_chars)]


def saved_tail(
    events: Sequence[Event], max_chars: int, budget_bytes: int
) -> tuple[list[dict[str, Any]], int]:
    """The events to keep in the notebook file: the start, the newest rounds that fit in
    ``budget_bytes`` of JSON, and the end; returns them and how many rounds were left out.

    Saved widget state is what a notebook reopened without a kernel shows, so it must stay
    small whatever the run's length; whole rounds are kept, never half of one.
    """
    head = [e for e in events[:1] if isinstance(e, LoopStarted)]
    tail = [e for e in events[-1:] if isinstance(e, (LoopFinished, LoopFailed))]
    body = events[len(head) : len(events) - len(tail)]
    kept: list[dict[str, Any]] = []
    used = 0
    fixed = [event_payload(e, max_chars) for e in (*head, *tail)]
    used = sum(len(json.dumps(d)) for d in fixed)
    rounds = {e.round for e in body}
    cut_round: int | None = None
    for event in reversed(body):
        payload = event_payload(event, max_chars)
        size = len(json.dumps(payload))
        if used + size > budget_bytes:
            cut_round = event.round
            break
        kept.append(payload)
        used += size
    if cut_round is not None:  # drop the partly kept round, so each round is whole
        kept = [d for d in kept if d["round"] != cut_round]
    kept.reverse()
    kept_rounds = {d["round"] for d in kept}
    omitted = len(rounds - kept_rounds)
    return [*fixed[: len(head)], *kept, *fixed[len(head) :]], omitted


def messages_left_out(events: Sequence[Event], saved: Sequence[dict[str, Any]]) -> int:
    """How many conversation messages the rounds :func:`saved_tail` left out brought in:
    a saved view adds them to what each kept call was sent, so its counts stay the run's."""
    kept = {d.get("round") for d in saved if d.get("kind") == "model_call_start"}
    return sum(
        len(e.messages)
        for e in events
        if isinstance(e, ModelCallStarted) and e.purpose != "pruning" and e.round not in kept
    )
