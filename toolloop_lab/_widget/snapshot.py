"""A static HTML picture of a run, for places where no widget front end runs.

A notebook rendered on GitHub, or by nbviewer without widget state, shows the ``text/html``
of an output instead of the live widget; this is that HTML. It is plain, escaped markup
(no script, no style block: renderers strip them anyway) and bounded whatever the run's
length: the newest :data:`SNAPSHOT_ROUNDS` rounds (each with its first tool calls, the rest
counted), the totals and the outcome.
"""

from __future__ import annotations

from typing import Final

from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._support.escape import esc, esc_clip
from toolloop_lab._support.words import (
    GATE_NAME,
    ROUND_KIND,
    STATUS,
    estimated,
    shown_status,
    tool_outcome,
    word,
)
from toolloop_lab._widget import figures as fig
from toolloop_lab.events import LoopFailed

SNAPSHOT_ROUNDS: Final = 20
"""Rounds the snapshot lists (the newest)."""
SNAPSHOT_SERVERS: Final = 10
"""MCP servers the snapshot lists."""
SNAPSHOT_LOG_LINES: Final = 20
"""Lines of each server's log the snapshot shows (the newest)."""
_PREVIEW: Final = 160


def _tool(tool: ToolRow) -> str:
    """A call that never ran reads "not run (why)" or "answered by you" (as in the text
    view); an error says what happened ("raised ValueError"); one stopped while it ran
    says so, and for how long it ran."""
    ran = tool.ran and tool.status != "pending"
    said = tool_outcome(tool.status, tool.error_reason, ran=ran, error_type=tool.error_type)
    if tool.status == "cancelled":
        state = esc(fig.cut_short(tool.error_reason, tool.duration_s))
    elif not ran:
        state = esc_clip(said, 60)
    elif tool.status == "error" and (tool.error_reason or tool.error_type):
        state = f"error ({esc_clip(said, 60)})"
    else:
        state = esc(tool.status)
    name = esc_clip(tool.name, 60)
    if tool.server:
        name += f" [{esc_clip(tool.server, 60)}]"
    left = fig.undrawn(tool)
    return f"{name}: {state}" + (f" <i>({esc_clip(left, 300)})</i>" if left else "")


def _servers(view: RunView) -> list[str]:
    """Each MCP server of the run, with the newest lines of its log (escaped, clipped)."""
    parts: list[str] = []
    for server in list(view.servers.values())[:SNAPSHOT_SERVERS]:
        parts.append(f"<br>{esc_clip(fig.server_said(server), 300)}")
        tail = server.log[-SNAPSHOT_LOG_LINES:]
        if tail:
            text = "\n".join(f"{n}: {esc_clip(line, 300)}" for n, line in tail)
            parts.append(f"<pre>{text}</pre>")
    return parts


def _row(row: RoundRow, offset: int) -> str:
    label = (
        word(ROUND_KIND, "synthesis") if row.purpose == "synthesis" else f"{row.number + offset:,}"
    )
    text = esc_clip(row.text, _PREVIEW)
    reply = text or "<i>(no text)</i>"
    shown, more = fig.tools_shown(row.tools)
    tools = ", ".join([*(_tool(t) for t in shown), *([esc(more)] if more else [])])
    if row.interventions:
        tools += ("; " if tools else "") + "<i>changed by you</i>"
    held = fig.held(row.duration_s, row.paused_s if row.pauses else None)
    if held:  # a person's time at a pause, beside the round's own
        tools += ("; " if tools else "") + f"<i>{esc(held)}</i>"
    usage = row.usage
    cells = [
        label,
        reply,
        tools,
        f"{fig.tokens(usage.input_tokens)} / {fig.tokens(usage.output_tokens)}",
        fig.usd(row.cost_usd),
        fig.seconds(row.latency_s),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def snapshot_html(view: RunView, *, note: str | None = None, round_offset: int = 0) -> str:
    """The run as static, escaped HTML (bounded size); ``round_offset`` is added to every
    round number (a fork's rounds read as the original's)."""
    parts = ["<div>", _head(view, round_offset)]
    if view.started is not None:
        parts.extend(_spend(view))
    outcome = fig.outcome(view, round_offset)
    if outcome is not None:
        parts.append(f"<br>outcome: {esc(outcome)}")
    rows = view.rounds[-SNAPSHOT_ROUNDS:]
    if rows:
        if len(view.rounds) > len(rows):
            parts.append(f"<br><i>the newest {len(rows)} of {len(view.rounds):,} rounds</i>")
        parts.append(
            "<table><tr><th>round</th><th>reply</th><th>tools</th><th>tokens in / out</th>"
            "<th>cost</th><th>model call</th></tr>"
        )
        parts.extend(_row(r, round_offset) for r in rows)
        parts.append("</table>")
    parts.extend(_servers(view))
    if view.final_text is not None:
        final = esc_clip(view.final_text, 2_000)
        label = fig.final_label(view).capitalize()
        parts.append(f"<b>{esc(label)}:</b> {final or '<i>(no text)</i>'}")
    if view.failure is not None:
        parts.append(_failure(view.failure))
    if note:
        parts.append(f"<br><i>{esc_clip(note, 300)}</i>")
    parts.append("</div>")
    return "\n".join(parts)


def _head(view: RunView, offset: int) -> str:
    """Status (a USD stop in its own word: it is no failure), model and round of the cap."""
    end = view.failure or view.finished
    status = shown_status(view.status, end.outcome if end else None)
    head = [f"<b>Agent loop debugger: {esc(word(STATUS, status))}</b>"]
    if view.started is not None and view.started.model_name:
        head.append(esc_clip(view.started.model_name, 80))
    rounds = fig.rounds_said(view, offset)
    if rounds is not None:
        head.append(esc(rounds))
    return " · ".join(head)


def _spend(view: RunView) -> list[str]:
    """Tokens and cost (some estimated, when they were), the USD limit when there is one,
    and why spend passed it."""
    usage = view.usage
    parts = [
        "<br>tokens: "
        f"{fig.tokens(usage.input_tokens)} input ({fig.tokens(usage.cache_read_tokens)} "
        f"from cache), {fig.tokens(usage.output_tokens)} output · "
        f"cost {fig.usd(usage.cost_usd)}"
    ]
    said = estimated(usage.estimated)
    if said is not None:  # where the browser's header says it: beside the totals
        parts.append(f" · <i>{esc(said)}</i>")
    if view.usd_limit is not None:
        parts.append(f" of the {esc(GATE_NAME['usd'])} {fig.usd(view.usd_limit)}")
        over = fig.overshoot(usage.cost_usd, view.usd_limit)
        if over is not None:
            parts.append(f"<br><i>{esc(over)}</i>")
    return parts


def _failure(f: LoopFailed) -> str:
    """What ended a run that raised (a USD stop's outcome line says how far it got)."""
    budget = f.outcome == "usd_budget_exhausted"
    stopped = f.cancelled or budget
    what = esc(word(STATUS, "cancelled" if stopped else "failed"))
    what += "" if stopped else f": {esc_clip(f.error_type, 80)}"
    message = "" if f.cancelled or not f.message else f" · {esc_clip(f.message, 500)}"
    after = "" if budget else f" after {f.rounds:,} rounds"
    return f"<br><b>{what}</b>{after}{message}"
