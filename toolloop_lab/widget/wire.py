"""What the widget sends to the browser: events as JSON, clipped, in batches.

The browser folds events itself (``static/debugger.js``), so Python sends each event once,
as ``event.to_dict()`` with every string longer than ``max_chars`` cut (a tool that returns
megabytes must not stall the page). The messages, both ways, are small dicts told apart by
``type``:

Python to browser
    ``{"type": "events", "epoch", "first", "reset", "events", "now", "control"}``: the
    events from index ``first`` of run ``epoch`` on; ``reset`` starts the fold over (a new
    run, or a replay a front end asked for); ``now`` is the run's clock when sent (the
    browser ticks timers from it), ``None`` once the run is over; ``control`` is the step
    state (where the loop waits, whether a task runs, a note).

Browser to Python
    ``{"type": "hello"}`` (a front end wants everything from the start),
    ``{"type": "control", "action": "continue" | "step" | "stop"}``. Interventions at a
    pause (issue 16) will be ``{"type": "intervene", ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from toolloop_lab.escape import scrub
from toolloop_lab.events import Event, LoopFailed, LoopFinished, LoopStarted
from toolloop_lab.jsonsafe import thaw

__all__ = ["MAX_BATCH_EVENTS", "clip", "compact_messages", "event_payload", "saved_tail"]

MAX_BATCH_EVENTS: Final = 4_000
"""Events in one message at most; a long replay goes out as several paced messages."""


def clip(value: Any, max_chars: int) -> Any:
    """``value`` with every string longer than ``max_chars`` cut, saying how much was cut,
    and lone surrogates replaced (U+FFFD)."""
    if isinstance(value, str):
        value = scrub(value)  # a lone surrogate (half an emoji) cannot be sent as UTF-8
        if len(value) <= max_chars:
            return value
        return f"{value[:max_chars]}… [{len(value) - max_chars:,} more characters not shown]"
    if isinstance(value, dict):
        return {k: clip(v, max_chars) for k, v in value.items()}
    if isinstance(value, list):
        return [clip(v, max_chars) for v in value]
    return value


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
    """One event as the browser gets it: JSON-safe, long strings clipped, the message
    dicts it carries without their empty fields."""
    data: dict[str, Any] = clip(event.to_dict(), max_chars)
    if data.get("messages"):
        data["messages"] = [_compact(m) for m in data["messages"]]
    return data


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
