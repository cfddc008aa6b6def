"""The debugger as a few lines of plain text, for frontends without widgets.

nbconvert, terminals and plain IPython show this instead of the widget. It is derived from
the same :class:`RunView` as the static snapshot; untrusted text goes through
:func:`toolloop_lab._support.escape.plain`, so a tool output cannot drive a terminal, and every
field of it is clipped (with a ``… (N chars)`` marker), the newest rounds only and a round's
first tool calls only (the rest counted), to keep the summary a few lines.
"""

from __future__ import annotations

from typing import Final

from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._support.escape import plain
from toolloop_lab._support.words import (
    GATE,
    INTERVENTION_SUMMARY,
    ROUND_KIND,
    STATUS,
    SYNTHESIS_REASON,
    estimated,
    shown_status,
    tool_outcome,
    word,
)
from toolloop_lab._widget import figures as fig
from toolloop_lab.events import LoopFailed

RECENT_ROUNDS: Final = 5
"""Rounds the text repr lists (the newest)."""
TEXT_PREVIEW: Final = 200
"""Characters of the final answer and the error message the text repr shows."""
NAME_PREVIEW: Final = 60
"""Characters of a tool or model name, a reason or an error type the text repr shows."""
ID_PREVIEW: Final = 40
"""Characters of the run id the text repr shows."""
SERVERS_SHOWN: Final = 5
"""MCP servers the text repr lists (the rest are counted)."""
LOG_SHOWN: Final = 5
"""Lines of each server's log the text repr shows (the newest)."""
LOG_PREVIEW: Final = 160
"""Characters of one log line the text repr shows."""


def _tool_status(tool: ToolRow, done: bool) -> str:
    """A call that never ran reads "not run (why)" (or "answered by you"), never as a
    failure; an error says what happened ("raised ValueError", "unknown tool"), in the
    words of the browser's tooltip on its chip; one stopped while it ran says so, and for
    how long it ran."""
    if tool.status == "cancelled":
        return fig.cut_short(tool.error_reason, tool.duration_s)
    ran = tool.ran and not (tool.status == "pending" and done)
    said = tool_outcome(tool.status, tool.error_reason, ran=ran, error_type=tool.error_type)
    if not ran:
        return plain(said, NAME_PREVIEW)
    if tool.status == "error" and (tool.error_reason or tool.error_type):
        return f"error ({plain(said, NAME_PREVIEW)})"
    return tool.status


def _tool_name(tool: ToolRow) -> str:
    """A call's tool, and its MCP server (``count [inventory]``)."""
    name = plain(tool.name, NAME_PREVIEW)
    return f"{name} [{plain(tool.server, NAME_PREVIEW)}]" if tool.server else name


def _servers(view: RunView) -> list[str]:
    """Each MCP server of the run in a line, its newest log lines under it."""
    lines: list[str] = []
    for server in list(view.servers.values())[:SERVERS_SHOWN]:
        lines.append(f"  {plain(fig.server_said(server), TEXT_PREVIEW)}")
        lines.extend(f"    {n}: {plain(text, LOG_PREVIEW)}" for n, text in server.log[-LOG_SHOWN:])
    if len(view.servers) > SERVERS_SHOWN:
        lines.append(f"  … and {len(view.servers) - SERVERS_SHOWN:,} more servers")
    return ["servers:", *lines] if lines else []


def _round_line(row: RoundRow, done: bool, offset: int) -> str:
    label = (
        word(ROUND_KIND, "synthesis")
        if row.purpose == "synthesis"
        else f"round {row.number + offset}"
    )
    usage = row.usage
    bits = [f"{fig.tokens(usage.input_tokens)} in / {fig.tokens(usage.output_tokens)} out"]
    bits.append(fig.usd(row.cost_usd))
    held = fig.held(row.duration_s, row.paused_s if row.pauses else None)
    if held:
        bits.append(held)
    shown, more = fig.tools_shown(row.tools)
    tools = [f"{_tool_name(t)}: {_tool_status(t, done)}" for t in shown]
    if more:
        tools.append(more)
    if tools:
        bits.append(", ".join(tools))
    bits.extend(plain(said, TEXT_PREVIEW) for t in shown if (said := fig.undrawn(t)))
    if row.tokens_saved or any(t.pruning for t in row.tools):
        bits.append(
            f"pruning saved {fig.tokens(row.tokens_saved)} (net {fig.tokens(row.net_saved)})"
        )
    if row.summarizations:
        spent = row.summarization_usage
        bits.append(
            f"{len(row.summarizations)} {word(ROUND_KIND, 'summarization')}"
            f"{'s' if len(row.summarizations) > 1 else ''} after its tools: "
            f"{fig.tokens(spent.input_tokens)} in / {fig.tokens(spent.output_tokens)} out"
        )
    if row.purpose == "synthesis" and row.synthesis_reason:
        why = word(SYNTHESIS_REASON, row.synthesis_reason)
        bits.append(f"because of the {plain(why, NAME_PREVIEW)}")
    if row.interventions:
        changes = dict.fromkeys(word(INTERVENTION_SUMMARY, i.action) for i in row.interventions)
        bits.append(f"changed by you: {', '.join(changes)}")
    for kind in ("token", "usd"):
        if row.gate(kind) == "tripped":
            bits.append(f"{GATE[kind]} gate {fig.gate_label('tripped')}")
    return f"  {label}: " + " · ".join(bits)


def summary_text(view: RunView, *, note: str | None = None, round_offset: int = 0) -> str:
    """A concise, multi-line summary: status, spend against budgets, recent rounds, outcome.

    ``round_offset`` is added to every round number (a fork's rounds read as the
    original's)."""
    lines = [_head(view, round_offset)]
    if view.started is not None or view.rounds:
        lines.append(_spend(view))
        over = fig.overshoot(view.usage.cost_usd, view.usd_limit)
        if over is not None:
            lines.append(over)
        if view.paused_at is not None:
            point = view.paused_at
            where = "tool dispatch" if point.stage == "tool_dispatch" else f"{point.purpose} call"
            lines.append(f"paused in round {point.round + round_offset} before the {plain(where)}")
        lines.extend(_rounds(view, round_offset))
        lines.extend(_servers(view))
        if view.prunings:
            lines.append(
                f"pruning: saved {fig.tokens(view.tokens_saved)} tokens, net "
                f"{fig.tokens(view.net_saved)} after the pruning calls' own tokens"
            )
        outcome = fig.outcome(view, round_offset)
        if outcome is not None:
            lines.append(f"outcome: {outcome}")
        if view.final_text is not None:
            lines.append(f"{fig.final_label(view)}: {plain(view.final_text, TEXT_PREVIEW)}")
        if view.failure is not None:
            lines.append(_failure(view.failure))
    if note:
        lines.append(f"note: {plain(note, TEXT_PREVIEW)}")
    return "\n".join(lines)


def _head(view: RunView, offset: int) -> str:
    """Status (a USD stop in its own words: it is no failure), the rounds (the round of
    the cap while it runs; its tool rounds and model calls once it ended), model and run
    id."""
    end = view.failure or view.finished
    code = shown_status(view.status, end.outcome if end else None)
    head = [f"LoopDebugger: {word(STATUS, code)}"]  # the page's words, not the code
    rounds = fig.rounds_said(view, offset)
    if rounds is not None:
        head.append(rounds)
    if view.started is not None and view.started.model_name:
        head.append(f"model {plain(view.started.model_name, NAME_PREVIEW)}")
    if view.run_id:
        head.append(f"run {plain(view.run_id, ID_PREVIEW)}")
    return " · ".join(head)


def _spend(view: RunView) -> str:
    """Tokens and cost against their budgets, with the gates, the context filled, and
    whether some counts were estimated (as the browser's header says it)."""
    budget = view.token_budget
    spent = view.usage.total_tokens
    tok = f"tokens {fig.tokens(spent)}" + (f" / {fig.tokens(budget)}" if budget is not None else "")
    limit = view.usd_limit
    usd = f"cost {fig.usd(view.usage.cost_usd)}" + (f" / {fig.usd(limit)}" if limit else "")
    ctx = f"context {fig.pct(view.context_fill)} of {fig.tokens(view.context_window)}"
    said = estimated(view.usage.estimated)
    return (
        f"{tok} ({GATE['token']} gate {fig.gate_label(view.token_gate)}) · "
        f"{usd} ({GATE['usd']} gate {fig.gate_label(view.usd_gate)}) · {ctx}"
        + (f" · {said}" if said else "")
    )


def _rounds(view: RunView, offset: int) -> list[str]:
    """The newest rounds, one line each, under a heading."""
    shown = view.rounds[-RECENT_ROUNDS:]
    if len(view.rounds) > len(shown):
        lines = [f"rounds (newest {len(shown)} of {len(view.rounds)}):"]
    elif shown:
        lines = ["rounds:"]
    else:
        lines = []
    lines.extend(_round_line(row, view.done, offset) for row in shown)
    return lines


def _failure(failure: LoopFailed) -> str:
    """What ended a run that raised: its error, where, and its message (a USD stop says
    how far it got in the outcome line, from its calls: its rounds would undercount)."""
    budget = failure.outcome == "usd_budget_exhausted"
    kind = f" kind={plain(failure.error_kind, NAME_PREVIEW)}" if failure.error_kind else ""
    reason = f" reason={plain(failure.reason, NAME_PREVIEW)}" if failure.reason else ""
    cause = f" cause={plain(failure.cause_type, NAME_PREVIEW)}" if failure.cause_type else ""
    error = plain(failure.error_type, NAME_PREVIEW)
    what = word(STATUS, "cancelled" if budget or failure.cancelled else "failed")
    after = "" if budget else f" after {failure.rounds} rounds"
    said = "" if failure.cancelled else plain(failure.message, TEXT_PREVIEW)  # as the snapshot
    return f"{what}: {error}{kind}{reason}{cause}{after}" + (f": {said}" if said else "")
