"""The debugger's panels as HTML strings, derived from a :class:`RunView` only.

ipywidgets' ``HTML`` widget sets ``innerHTML`` unsanitised, so every string that came from
a model, a tool, a tool argument or an exception goes through :mod:`toolloop_lab.escape`
here, and the markup around it is ours: a fixed set of tags with inline styles, no links,
no ``<style>`` blocks, no event attributes. Nothing here imports ipywidgets, so the panels
are plain functions that tests (and any other HTML consumer) can call directly.

Every such string is clipped too (:func:`~toolloop_lab.escape.clip`): names and ids to a
few hundred characters, other free text to a few thousand, always; message content to the
preview length unless "show all" is ticked. A model that sends a 1 MB tool name gets a
panel of a few kilobytes that says how long the name was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from toolloop_lab.escape import ID_CHARS, NAME_CHARS, TEXT_CHARS, clip, esc, esc_clip, json_text
from toolloop_lab.events import BudgetGate, Pruned
from toolloop_lab.runview import GateState, RoundRow, RunView, ToolRow
from toolloop_lab.widget import figures as fig

__all__ = [
    "PRUNING_PREVIEW",
    "RECENT_PRUNINGS",
    "failure_html",
    "gauges_html",
    "header_html",
    "inspector_html",
    "pruning_html",
    "round_label",
    "timeline_html",
]

PRUNING_PREVIEW: Final = 300
"""Characters of each original/pruned output the pruning panel shows (unless show all)."""
RECENT_PRUNINGS: Final = 3
"""Prunings the pruning panel lists (the newest); the inspector shows any round's."""
PAUSED_TOOLS: Final = 10
"""Tool names the header lists when the loop is paused before a tool dispatch."""

_STATUS_COLOURS: Final = {
    "idle": "#777",
    "running": "#1f6feb",
    "paused": "#b36b00",
    "finished": "#1a7f37",
    "failed": "#cf222e",
    "cancelled": "#6e7781",
}
_PRE: Final = (
    "white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:2px 0 6px;"
    "padding:4px 6px;background:var(--jp-layout-color2,#f6f8fa);"
    "font-family:var(--jp-code-font-family,monospace);font-size:12px"
)
_TD: Final = (
    "padding:2px 6px;border-bottom:1px solid var(--jp-border-color2,#ddd);vertical-align:top"
)
_TH: Final = f"{_TD};text-align:left;font-weight:600"
_MUTED: Final = "color:var(--jp-ui-font-color2,#666)"
_BOX: Final = "font-size:13px;line-height:1.4"


def _pre(escaped: str) -> str:
    return f'<pre style="{_PRE}">{escaped}</pre>'


def _block(text: str | None, limit: int | None) -> str:
    """Message content, cut to the preview ``limit`` (the cut says how long it was)."""
    block = _pre(esc_clip(text, limit))
    if limit is not None and text is not None and len(text) > limit:
        block += f'<div style="{_MUTED}">tick “show all” to see the rest</div>'
    return block


def _name(value: str | None) -> str:
    """A tool, model or error-type name, or a short label such as a finish reason."""
    return esc_clip(value, NAME_CHARS)


def _id(value: str | None) -> str:
    return esc_clip(value, ID_CHARS)


def _tool_names(names: Sequence[str]) -> str:
    shown = ", ".join(clip(n, NAME_CHARS) for n in names[:PAUSED_TOOLS])
    more = len(names) - PAUSED_TOOLS
    return esc(shown + (f" and {more:,} more" if more > 0 else ""))


def _gate_badge(state: GateState | str) -> str:
    colour = {"tripped": "#cf222e", "passed": "#1a7f37"}.get(state, "#6e7781")
    return f'<b style="color:{colour}">{fig.gate_label(state)}</b>'


def round_label(row: RoundRow) -> str:
    """``round 3`` or ``synthesis`` (plain text: numbers and our own words only)."""
    return "synthesis" if row.purpose == "synthesis" else f"round {esc(row.number)}"


# -- header -----------------------------------------------------------------------------
def header_html(view: RunView, *, limit: int | None, note: str | None = None) -> str:
    """Status, round n of max, model, where the loop is paused, and the final answer."""
    colour = _STATUS_COLOURS.get(view.status, "#777")
    parts = [f'<b style="color:{colour}">● {view.status.upper()}</b>']
    if view.max_rounds is not None:
        parts.append(f"round {esc(view.tool_rounds)} of {esc(view.max_rounds)}")
    synthesis = next((r for r in view.rounds if r.purpose == "synthesis"), None)
    if synthesis is not None:
        parts.append(f"synthesis ({_name(synthesis.synthesis_reason)})")
    if view.started is not None and view.started.model_name:
        parts.append(f"model {_name(view.started.model_name)}")
    parts.append(f"{fig.tokens(view.events)} events")
    if view.run_id:
        parts.append(f'<span style="{_MUTED}">run {_id(view.run_id)}</span>')
    out = [f'<div style="{_BOX}"><div><b>Tool loop</b> · {" · ".join(parts)}</div>']
    point = view.paused_at
    if point is not None:
        if point.stage == "tool_dispatch":
            where = f"tool dispatch ({_tool_names(point.detail) or 'no tools'})"
        else:
            where = f"the {esc(point.purpose)} model call"
        out.append(
            f'<div style="color:#b36b00">⏸ paused in round {point.round} before {where}: '
            "Continue, Step or Stop</div>"
        )
    if note:
        out.append(f'<div style="color:#cf222e">{esc_clip(note, TEXT_CHARS)}</div>')
    if view.final_text is not None:
        out.append(f"<div><b>Final answer</b></div>{_block(view.final_text, limit)}")
    out.append("</div>")
    return "".join(out)


# -- gauges -----------------------------------------------------------------------------
def _bar(fraction: float | None, tripped: bool) -> str:
    width = 0.0 if fraction is None else max(0.0, min(1.0, fraction)) * 100
    colour = "#cf222e" if tripped or (fraction or 0) > 1 else "#1f6feb"
    return (
        '<span style="display:inline-block;width:10em;height:.7em;vertical-align:middle;'
        'background:var(--jp-layout-color3,#e5e5e5);border-radius:3px;overflow:hidden">'
        f'<span style="display:block;height:100%;width:{width:.1f}%;background:{colour}">'
        "</span></span>"
    )


def _gauge_row(label: str, bar: str, figures: str, state: str) -> str:
    return (
        f'<tr><td style="{_TD}"><b>{label}</b></td><td style="{_TD}">{bar}</td>'
        f'<td style="{_TD}">{figures}</td><td style="{_TD}">{state}</td></tr>'
    )


def gauges_html(view: RunView) -> str:
    """Tokens vs the token budget, USD vs the limit, context-window fill; each with a state."""
    spent = view.usage.total_tokens
    budget = view.token_budget
    share = fig.share(spent, budget)
    if budget is None:
        tok = f"{fig.tokens(spent)} tokens · no token budget"
    else:
        tok = f"{fig.tokens(spent)} / {fig.tokens(budget)} tokens ({fig.pct(share)})"
    rows = [
        _gauge_row(
            "Tokens",
            _bar(share, view.token_gate == "tripped"),
            tok,
            f"token gate {_gate_badge(view.token_gate)}",
        )
    ]
    cost = view.usage.cost_usd
    limit = view.usd_limit
    usd_share = None if cost is None else fig.share(cost, limit)
    if limit is None:
        money = f"{fig.usd(cost)} · no USD limit"
    else:
        money = f"{fig.usd(cost)} / {fig.usd(limit)} ({fig.pct(usd_share)})"
    rows.append(
        _gauge_row(
            "USD",
            _bar(usd_share, view.usd_gate == "tripped"),
            money,
            f"USD gate {_gate_badge(view.usd_gate)}",
        )
    )
    fill = view.context_fill
    window = view.context_window
    if window:
        ctx = f"{fig.tokens(view.last_context_tokens)} / {fig.tokens(window)} ({fig.pct(fill)})"
    else:
        ctx = "window unknown"
    over = fill is not None and fill > 1
    state = '<b style="color:#cf222e">OVER the window</b>' if over else "within the window"
    rows.append(_gauge_row("Context (last call)", _bar(fill, over), ctx, state))
    return f'<table style="border-collapse:collapse;{_BOX}">{"".join(rows)}</table>'


# -- timeline ---------------------------------------------------------------------------
def _tool_status(tool: ToolRow, done: bool) -> str:
    if tool.status == "success":
        return '<span style="color:#1a7f37">✓ success</span>'
    if tool.status == "error":
        return f'<span style="color:#cf222e">✗ error: {_name(tool.error_reason)}</span>'
    return "not run" if done else "pending"


def _gates_cell(gates: Sequence[BudgetGate]) -> str:
    last: dict[str, BudgetGate] = {}
    for gate in gates:
        last[gate.gate] = gate
    names = {"token": "tokens", "usd": "USD"}
    cells = []
    for g in last.values():
        state = "passed" if g.passed else "tripped"
        cells.append(f"{names[g.gate]} {'✓' if g.passed else '✗'} {_gate_badge(state)}")
    return " · ".join(cells)


def _note(view: RunView, row: RoundRow, last: bool) -> str:
    notes: list[str] = []
    if row.purpose == "synthesis":
        notes.append(f"synthesis: {_name(row.synthesis_reason)}")
    if row.stuck:
        notes.append("stuck (tool calls, no text)")
    if last and view.status == "finished":
        notes.append("final answer")
    if last and view.status in ("failed", "cancelled"):
        notes.append(f"stopped: {view.status}")
    return " · ".join(notes)


def timeline_html(view: RunView, rows: Sequence[RoundRow], *, selected: int | None = None) -> str:
    """The round timeline table for ``rows`` (one page of the run)."""
    heads = (
        "Round",
        "Tokens in",
        "Tokens out",
        "Cost (incl. pruning)",
        "Latency",
        "Tool calls",
        "Pruning saved",
        "Gates",
        "Note",
    )
    out = [
        f'<table style="border-collapse:collapse;width:100%;{_BOX}"><tr>',
        "".join(f'<th style="{_TH}">{h}</th>' for h in heads),
        "</tr>",
    ]
    if not rows:
        out.append(f'<tr><td style="{_TD};{_MUTED}" colspan="{len(heads)}">no rounds yet</td></tr>')
    last_number = view.rounds[-1].number if view.rounds else None
    for row in rows:
        tools = (
            "<br>".join(f"{_name(t.name)} {_tool_status(t, view.done)}" for t in row.tools)
            or f'<span style="{_MUTED}">none</span>'
        )
        saved = (
            f"saved {fig.tokens(row.tokens_saved)} · net {fig.tokens(row.net_saved)}"
            if any(t.pruning for t in row.tools)
            else ""
        )
        usage = row.usage
        has_call = usage.requests > 0
        mark = "background:var(--jp-layout-color2,#eef4ff);" if row.number == selected else ""
        cells = (
            f"<b>{round_label(row)}</b>",
            fig.tokens(usage.input_tokens) if has_call else "—",
            fig.tokens(usage.output_tokens) if has_call else "—",
            fig.usd(row.cost_usd) if has_call else "—",
            fig.seconds(row.latency_s),
            tools,
            saved,
            _gates_cell(row.gates),
            _note(view, row, row.number == last_number),
        )
        out.append(
            f'<tr style="{mark}">' + "".join(f'<td style="{_TD}">{c}</td>' for c in cells) + "</tr>"
        )
    out.append("</table>")
    return "".join(out)


# -- inspector --------------------------------------------------------------------------
def _pruning_detail(p: Pruned, limit: int | None) -> str:
    return (
        f"<div><b>pruned</b> by {_name(p.model_name or 'the pruning model')}: "
        f"{fig.tokens(p.tokens_before)} → {fig.tokens(p.tokens_after)} tokens, "
        f"saved {fig.tokens(p.tokens_saved)}, pruning call {fig.tokens(p.usage.total_tokens)} "
        f"tokens, net saving {fig.tokens(p.net_saved)}</div>"
        f"<div>original output</div>{_block(p.original, limit)}"
        f"<div>pruned output (what the model saw)</div>{_block(p.pruned, limit)}"
    )


def inspector_html(view: RunView, row: RoundRow | None, *, limit: int | None) -> str:
    """One round's messages: AI text, tool-call arguments as JSON, tool results, pruning."""
    if row is None:
        return f'<div style="{_BOX};{_MUTED}">no round to inspect yet</div>'
    usage = row.usage
    head = [f"<b>{round_label(row).capitalize()}</b>"]
    if row.purpose == "synthesis":
        head.append(f"reason {_name(row.synthesis_reason)}")
    if usage.requests:
        head.append(
            f"model call {fig.tokens(usage.input_tokens)} in / {fig.tokens(usage.output_tokens)} "
            f"out · {fig.usd(usage.cost_usd)} · {fig.seconds(row.latency_s)}"
        )
    if row.finish_reason:
        head.append(f"finish reason {_name(row.finish_reason)}")
    out = [f'<div style="{_BOX}"><div>{" · ".join(head)}</div>']
    if row.synthesis_prompt is not None:
        out.append(f"<div>synthesis prompt</div>{_block(row.synthesis_prompt, limit)}")
    if usage.requests:
        text = row.text if row.text else ""
        out.append("<div><b>AI text</b></div>")
        out.append(_block(text, limit) if text else f'<div style="{_MUTED}">(no text)</div>')
    views = {c.id: c for c in row.tool_calls}
    if row.tools:
        out.append(f"<div><b>Tool calls ({len(row.tools)})</b></div>")
    for i, tool in enumerate(row.tools, start=1):
        call = views.get(tool.id)
        line = [
            f"<b>{i}. {_name(tool.name)}</b>",
            f"id {_id(tool.id)}",
            _tool_status(tool, view.done),
        ]
        if tool.duration_s is not None:
            line.append(fig.seconds(tool.duration_s))
        if tool.status != "pending":
            line.append(f"{fig.tokens(tool.output_chars)} chars")
        out.append(f'<div style="margin-top:4px">{" · ".join(line)}</div>')
        if call is not None and not call.valid:
            error = esc_clip(call.error, TEXT_CHARS)
            out.append(f'<div style="color:#cf222e">invalid call: {error}</div>')
        out.append(f"<div>arguments</div>{_block(json_text(tool.args), limit)}")
        if tool.status != "pending":
            out.append(f"<div>result</div>{_block(tool.content, limit)}")
        if tool.pruning is not None:
            out.append(_pruning_detail(tool.pruning, limit))
    if row.gates:
        out.append("<div><b>Gates</b></div>")
        for gate in row.gates:
            amount = fig.usd if gate.gate == "usd" else fig.tokens
            out.append(
                f"<div>{'tokens' if gate.gate == 'token' else 'USD'} gate "
                f"{esc(gate.stage).replace('_', ' ')}: "
                f"{amount(gate.spent)} of {amount(gate.limit)} · "
                f"{_gate_badge('passed' if gate.passed else 'tripped')}</div>"
            )
    out.append("</div>")
    return "".join(out)


# -- pruning ----------------------------------------------------------------------------
def pruning_html(view: RunView, *, limit: int | None = PRUNING_PREVIEW) -> str:
    """Run totals of pruning and the newest prunings, original next to pruned."""
    prunings = view.prunings
    if not prunings:
        return ""
    saved = sum(p.tokens_saved for p in prunings)
    spent = sum(p.usage.total_tokens for p in prunings)
    net = saved - spent
    out = [
        f'<div style="{_BOX}"><div><b>Pruning</b> · {len(prunings)} output'
        f"{'s' if len(prunings) != 1 else ''} pruned · saved {fig.tokens(saved)} tokens · "
        f"pruning calls spent {fig.tokens(spent)} tokens · "
        f"<b>net saving {fig.tokens(net)} tokens</b></div>"
    ]
    shown = prunings[-RECENT_PRUNINGS:]
    if len(prunings) > len(shown):
        out.append(
            f'<div style="{_MUTED}">the newest {len(shown)} of {len(prunings)}; '
            "pick a round in the inspector for any other</div>"
        )
    for p in reversed(shown):
        out.append(
            f'<div style="margin-top:4px"><b>round {esc(p.round)} · {_name(p.tool_name)}</b> · '
            f"{fig.tokens(p.tokens_before)} → {fig.tokens(p.tokens_after)} tokens · saved "
            f"{fig.tokens(p.tokens_saved)} · pruning call {fig.tokens(p.usage.total_tokens)} · "
            f"net {fig.tokens(p.net_saved)}</div>"
            f'<table style="border-collapse:collapse;width:100%;table-layout:fixed"><tr>'
            f'<td style="{_TD};width:50%">original{_block(p.original, limit)}</td>'
            f'<td style="{_TD};width:50%">pruned{_block(p.pruned, limit)}</td></tr></table>'
        )
    out.append("</div>")
    return "".join(out)


# -- failure ----------------------------------------------------------------------------
def failure_html(view: RunView, *, limit: int | None) -> str:
    """Error type, kind, reason, message, cause and the partial counts of a failed run."""
    failure = view.failure
    if failure is None:
        return ""
    title = "Cancelled" if failure.cancelled else "Failed"
    facts = [f"error {_name(failure.error_type)}"]
    if failure.error_kind:
        facts.append(f"kind {_name(failure.error_kind)}")
    if failure.reason:
        facts.append(f"reason {_name(failure.reason)}")
    facts.append(f"cause {_name(failure.cause_type) if failure.cause_type else '—'}")
    usage = failure.usage
    partial = (
        f"rounds {esc(failure.rounds)} · tokens {fig.tokens(usage.input_tokens)} in / "
        f"{fig.tokens(usage.output_tokens)} out · cost {fig.usd(usage.cost_usd)} · "
        f"model invoked {'yes' if failure.any_invocation_made else 'no'}"
    )
    return (
        f'<div style="{_BOX};border-left:3px solid #cf222e;padding-left:6px">'
        f'<div><b style="color:#cf222e">{title}</b> in round {esc(failure.round)} · '
        f"{' · '.join(facts)}</div>"
        f"<div><b>Partial counts</b>: {partial}</div>"
        f"<div>message</div>{_block(failure.message, limit)}</div>"
    )
