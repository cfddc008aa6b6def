"""One HTML file that shows runs as the debugger does, to keep or to send: no kernel, no
package, no network.

``LoopDebugger.export_html`` and ``toolloop-lab view TRACE --html OUT`` write it: the
widget's module and stylesheet, the run list's rows and each run's events (clipped as the
page gets them) are inside the file (:func:`~.page.runs_slot`), its one script allowed by
hash in its Content-Security-Policy, which lets nothing be fetched. Every text in it is
data in JSON blocks the module renders as DOM text, so a hostile reply stays inert.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from toolloop_lab._runview import RunSummary
from toolloop_lab._widget.page import page, runs_slot
from toolloop_lab._widget.runs import row_payload
from toolloop_lab.errors import ConfigurationError, UnknownRunError
from toolloop_lab.events import Event

EXPORT_NOTE: Final = (
    "Exported {when}: a file, with no kernel, so these runs cannot be paused, changed, "
    "forked or compared here."
)


def chosen(
    summaries: Sequence[RunSummary], runs: Iterable[str] | None, *, where: str
) -> list[RunSummary]:
    """The summaries of ``runs`` (every one for ``None``), in start order; a run id that is
    not among them raises :class:`~toolloop_lab.errors.UnknownRunError`."""
    if runs is None:
        return list(summaries)
    if isinstance(runs, str):
        raise ConfigurationError(
            f"runs={runs!r}: pass a list of run ids (runs=[{runs!r}]), not one string",
            field="runs",
        )
    held = {s.run_id: s for s in summaries}
    wanted: dict[str, None] = {}
    for run_id in runs:
        if run_id not in held:
            raise UnknownRunError(str(run_id), tuple(held), where=where)
        wanted[run_id] = None
    return [s for s in summaries if s.run_id in wanted]


def write_runs_html(
    path: str | os.PathLike[str],
    summaries: Sequence[RunSummary],
    events_of: Mapping[str, Sequence[Event]],
    *,
    title: str,
    shown: str | None = None,
    left_out: int = 0,
    let_go: str | None = None,
    note: str | None = None,
    max_chars: int = 20_000,
) -> Path:
    """Write the page of ``summaries`` (their rows) and their events to ``path``; returns it."""
    rows = [row_payload(s, max_chars) for s in summaries]
    events = {s.run_id: events_of.get(s.run_id, ()) for s in summaries}
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    said = EXPORT_NOTE.format(when=when) + (f" {note}" if note else "")
    body = runs_slot(
        rows,
        events,
        shown=shown if shown in events else None,
        note=said,
        left_out=left_out,
        let_go=let_go,
        max_chars=max_chars,
    )
    target = Path(path)
    target.write_text(page(body, title=title), encoding="utf-8")
    return target
