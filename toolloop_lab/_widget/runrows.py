"""The run list's rows on the wire: each run's summary as the page gets it, only the rows
that changed since the last message, and the newest rows that fit in the notebook file.

Every events message may carry ``runs: {reset, rows, left_out, dropped, pinned}``: the
rows (``RunRow``, see :func:`row_payload`) changed since the previous message, or all of
them with ``reset`` after a page's hello; ``dropped`` names the runs the session no longer
keeps since then, ``left_out`` counts every such run, and ``pinned`` is the run a person
picked to show (``None``: the view follows the newest top-level run). A session's
summaries keep the same object while a run does not change, so telling the changed rows
costs one identity check a run; a row's JSON is made once per change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from toolloop_lab._runview import RunSummary
from toolloop_lab._widget.wire import clip

MAX_TAGS: Final = 20
"""Tags a row carries at most (a run tagged with thousands must not bloat the list)."""

_UNSET: Final = object()


def _decimal(value: object) -> str | None:
    return None if value is None else str(value)


def _t(value: float) -> float:
    """A time as the page needs it: to the tenth of a millisecond (shorter JSON)."""
    return round(value, 4)


def row_payload(summary: RunSummary, max_chars: int) -> dict[str, Any]:
    """One run's row as the page gets it (a ``RunRow``): JSON, every string clipped as
    the events' are (ids, names, labels), money as decimal strings (``None``: unpriced)."""
    row = {
        "run_id": summary.run_id,
        "parent_run_id": summary.parent_run_id,
        "parent_tool_call_id": summary.parent_tool_call_id,
        "parent_tool_name": summary.parent_tool_name,
        "name": summary.name,
        "tags": list(summary.tags[:MAX_TAGS]),
        "source": summary.source,
        "status": summary.status,
        "outcome": summary.outcome,
        "rounds": summary.rounds,
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": _decimal(summary.cost_usd),
        "total_input_tokens": summary.total_input_tokens,
        "total_output_tokens": summary.total_output_tokens,
        "total_cost_usd": _decimal(summary.total_cost_usd),
        "started_at": summary.started_at,
        "duration_s": _t(summary.duration_s),
        "offset_s": _t(summary.offset_s),
        "spans": [[s.kind, _t(s.t0), _t(s.t1), s.failed] for s in summary.spans],
        "spans_left_out": summary.spans_left_out,
    }
    clipped: dict[str, Any] = clip(row, max_chars)
    return clipped


class RowFeed:
    """What the page holds of the run list, and what to send it next."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self._sent: dict[str, RunSummary] = {}
        self._reset = True
        self._left_out = -1
        self._pinned: object = _UNSET
        self._made: dict[str, tuple[RunSummary, dict[str, Any], int]] = {}

    def hello(self) -> None:
        """A page opened: the next message carries every row."""
        self._reset = True

    def _row(self, summary: RunSummary) -> tuple[dict[str, Any], int]:
        """The row of ``summary`` and its size as JSON, made once per summary."""
        made = self._made.get(summary.run_id)
        if made is None or made[0] is not summary:
            row = row_payload(summary, self.max_chars)
            made = (summary, row, len(json.dumps(row)))
            self._made[summary.run_id] = made
        return made[1], made[2]

    def _forget_gone(self, summaries: Sequence[RunSummary]) -> None:
        """Drop the rows made of runs the session no longer keeps (bounded memory)."""
        if len(self._made) > 2 * len(summaries) + 16:
            kept = {s.run_id for s in summaries}
            self._made = {i: made for i, made in self._made.items() if i in kept}

    def next(
        self, summaries: Sequence[RunSummary], left_out: int, pinned: str | None
    ) -> dict[str, Any] | None:
        """The ``runs`` part of the next message, or ``None`` when nothing changed."""
        sent = self._sent
        reset = self._reset
        changed = (
            list(summaries) if reset else [s for s in summaries if sent.get(s.run_id) is not s]
        )
        fresh = sum(1 for s in changed if s.run_id not in sent)
        dropped: list[str] = []
        if not reset and len(sent) + fresh != len(summaries):
            kept = {s.run_id for s in summaries}
            dropped = [run_id for run_id in sent if run_id not in kept]
        if not (
            reset or changed or dropped or left_out != self._left_out or pinned != self._pinned
        ):
            return None
        if reset:
            sent.clear()
        for run_id in dropped:
            del sent[run_id]
            self._made.pop(run_id, None)
        for summary in changed:
            sent[summary.run_id] = summary
        self._reset, self._left_out, self._pinned = False, left_out, pinned
        self._forget_gone(summaries)
        return {
            "reset": reset,
            "rows": [self._row(s)[0] for s in changed],
            "left_out": left_out,
            "dropped": dropped,
            "pinned": pinned,
        }

    def saved(
        self, summaries: Sequence[RunSummary], left_out: int, budget_bytes: int
    ) -> tuple[list[dict[str, Any]], int]:
        """The newest rows whose JSON fits in ``budget_bytes`` (in start order), for the
        notebook file, and how many runs that leaves out (``left_out`` included)."""
        self._forget_gone(summaries)
        rows: list[dict[str, Any]] = []
        used = 0
        for summary in reversed(summaries):
            row, size = self._row(summary)
            if used + size > budget_bytes:
                break
            rows.append(row)
            used += size
        rows.reverse()
        return rows, left_out + len(summaries) - len(rows)
