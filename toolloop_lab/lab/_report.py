"""The self-contained HTML report of a sweep: summary table, plots, one timeline per scenario.

A scenario of several turns shows each turn in order: the user's message, the turn's
outcome, and the turn's own run (each turn is a run with its own events); turns after a
failed one are listed as not run, and the "Tokens per turn" plot is added.

Model text, tool names, arguments and outputs, error messages, scenario names and tags are
untrusted: every interpolated value goes through :mod:`toolloop_lab._support.escape`, and each is
clipped there first, with a ``… (N chars)`` marker (so an entity is never split): names
and ids to a few hundred characters, free text and content to the limits below. A saved
sweep is a file anyone can edit, so this holds for a loaded one too. Numbers go through
``esc`` as well, so there is one rule with no exceptions. Plots are embedded as base64
PNG ``data:`` images, and a Content-Security-Policy allows nothing else: no scripts, no
remote fetches, no frames — a second line of defence should an escape ever be missed.
Timelines are drawn from the same :class:`~toolloop_lab._runview.RunView` fold as the
widget and the frames.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Hashable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from toolloop_lab._carried import Carried, carried_costs, sent_again
from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._spend.usage import format_usd
from toolloop_lab._support.escape import NAME_CHARS, TEXT_CHARS, clip, esc, esc_clip
from toolloop_lab._support.jsonsafe import dumps
from toolloop_lab._support.words import (
    ROUND_KIND,
    SYNTHESIS_REASON,
    estimated,
    reason_words,
    word,
)
from toolloop_lab._widget.figures import budget_stop, overshoot
from toolloop_lab._widget.page import LOADER_CSP, view_assets, view_slot
from toolloop_lab.events import BudgetGate, Event
from toolloop_lab.lab._frames import pass_rate_text
from toolloop_lab.lab._frontier import frontier_frame, pass_rate_frame
from toolloop_lab.lab._record import ScenarioRun, error_text, tally

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

CSP: Final = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src {LOADER_CSP}; base-uri 'none'"
)
"""The report's Content-Security-Policy: inline CSS, data: images, and one script (by its
hash) that mounts the debugger's module on each run's embedded events."""

TEXT_LIMIT: Final = 600
"""Characters of model text, tool output, pruned text or an error message shown."""
ARGS_LIMIT: Final = 300
"""Characters of a tool call's arguments (as JSON) shown."""

_CSS: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;
color:#222}
h1{font-size:1.5rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th:nth-child(-n+3),td:nth-child(-n+3),th:last-child,td:last-child{text-align:left}
tr.total td{font-weight:600;border-top:2px solid #999}
.o{padding:1px 6px;border-radius:8px;font-size:12px;white-space:nowrap}
.o-final_answer{background:#dff3e3}.o-synthesis{background:#e3ecfb}
.o-token_budget_exhausted{background:#fff1cc}.o-usd_budget_exhausted{background:#ffe2c6}
.o-failed{background:#fbdada}.o-cancelled{background:#eeeeee}.o-interrupted{background:#fdf0d8}
figure{margin:1rem 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
section.scenario{border:1px solid #ddd;border-radius:6px;padding:.6rem 1rem;margin:1rem 0}
ol.timeline{padding-left:1.2rem}ol.timeline>li{margin:.5rem 0}
.meta{color:#666;font-size:12px}.num{font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;padding:4px 6px;
margin:2px 0;font-size:12px}
.tool{margin:.3rem 0 .3rem 1rem}.error{color:#a00}.tripped{color:#8a4b00;font-weight:600}
.stopped{color:#8a4b00}
.passed{color:#286a36}
.o-not_run{background:#f3f3f3;color:#666}
h4.turn{margin:1rem 0 .3rem}p.turn{border-left:3px solid #bbb;padding-left:.6rem;margin:.2rem 0}
"""


def _cut(text: str | None, limit: int = TEXT_LIMIT) -> str:
    """Escaped content cut to ``limit`` characters, saying how long it was."""
    return esc_clip(text, limit)


def _name(value: str | None) -> str:
    """An escaped name or short label (scenario, tag, tool, model, error kind)."""
    return esc_clip(value, NAME_CHARS)


def _error(kind: str | None, reason: str | None) -> str:
    """``kind: reason`` of a failed scenario, each part clipped (not escaped)."""
    return f"{clip(kind, NAME_CHARS)}: {clip(reason, NAME_CHARS)}"


def _usd(value: Decimal | float | None) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "unknown"
    return format_usd(value)


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _cells(values: Iterable[Any], tag: str = "td") -> str:
    return "".join(f"<{tag}>{esc(v)}</{tag}>" for v in values)


_SUMMARY_COLUMNS: Final = (
    "scenario",
    "tags",
    "outcome",
    "tool rounds",
    "model calls",
    "prompt tokens",
    "completion tokens",
    "pruning tokens",
    "tokens saved",
    "cost (USD)",
    "error",
)


def _summary(records: Sequence[ScenarioRun], runs: pd.DataFrame) -> str:
    """One row per scenario (linked to its timeline), then the totals; a sweep with checks
    has a ``checks`` column beside the cost, the pass rate on the total line."""
    checked = bool(runs["passed"].notna().any())
    rows = [
        _summary_row(i, record, row, checked)
        for i, (record, row) in enumerate(zip(records, runs.to_dict("records"), strict=True))
    ]
    rows.append(_total_row(records, runs, checked))
    columns = list(_SUMMARY_COLUMNS)
    if checked:
        columns.insert(-1, "checks")
    return (
        "<h2>Summary</h2>\n<table>\n<thead><tr>"
        + _cells(columns, "th")
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def _run_key(record: ScenarioRun) -> str:
    """The variant and repeat under a row's name, when the sweep had them."""
    if record.variant is None and record.repeat == 1:
        return ""
    said = record.variant or ""
    if record.repeat > 1 or record.variant is not None:
        said = f"{said} · run {record.repeat}" if said else f"run {record.repeat}"
    return f'<div class="meta">{_cut(said)}</div>'


def _checks_cell(record: ScenarioRun) -> str:
    """``passed``, or each failed check with what it saw."""
    if record.passed is None:
        return ""
    if record.passed:
        return "passed"
    return "failed: " + "; ".join(record.failed_checks)


def _summary_row(
    i: int, record: ScenarioRun, row: Mapping[Hashable, Any], checked: bool = False
) -> str:
    error = (
        _error(record.error_kind, record.error_reason)
        if record.error_kind and record.outcome != "usd_budget_exhausted"
        else error_text(record.outcome, None, None)
    )
    return (
        "<tr>"
        f'<td><a href="#scenario-{i}">{_name(row["scenario"])}</a>{_run_key(record)}'
        f"{_estimated(bool(row['usage_estimated']))}</td>"
        f"<td>{esc(_tags(record.tags))}</td>"
        f'<td><span class="o o-{esc(row["outcome"])}">{esc(row["outcome"])}</span></td>'
        + _cells(
            (
                row["tool_rounds"],
                row["model_calls"],
                f"{row['prompt_tokens']:,}",
                f"{row['completion_tokens']:,}",
                f"{row['pruning_tokens']:,}",
                f"{row['tokens_saved_by_pruning']:,}",
                _usd(row["cost_usd"] if row["cost_known"] else None),
                *([clip(_checks_cell(record), TEXT_CHARS)] if checked else []),
                error,
            )
        )
        + "</tr>"
    )


def _total_row(records: Sequence[ScenarioRun], runs: pd.DataFrame, checked: bool = False) -> str:
    total_cost = _usd(float(runs["cost_usd"].fillna(0).sum())) + (
        "" if bool(runs["cost_known"].all()) else " + unknown"
    )
    return (
        '<tr class="total">'
        + f"<td>total{_estimated(bool(runs['usage_estimated'].any()))}</td>"
        + _cells(
            (
                "",
                f"{len(runs)} scenarios",
                f"{int(runs['tool_rounds'].sum()):,}",
                f"{int(runs['model_calls'].sum()):,}",
                f"{int(runs['prompt_tokens'].sum()):,}",
                f"{int(runs['completion_tokens'].sum()):,}",
                f"{int(runs['pruning_tokens'].sum()):,}",
                f"{int(runs['tokens_saved_by_pruning'].sum()):,}",
                total_cost,
                *([pass_rate_text(runs["passed"])] if checked else []),
                tally(r.outcome for r in records),
            )
        )
        + "</tr>"
    )


def _rate(row: Mapping[Hashable, Any]) -> str:
    """``2 of 3: 67% (21% to 94%)``: a pass rate and its 95% Wilson interval, or nothing."""
    if not row["checked"]:
        return "no checks"
    return (
        f"{row['passed']} of {row['checked']}: {row['pass_rate']:.0%} "
        f"({row['pass_rate_low']:.0%} to {row['pass_rate_high']:.0%})"
    )


def _pass_rates(runs: pd.DataFrame) -> str:
    """The pass rate beside the spend, per scenario and overall, and, for a sweep of
    variants, per variant with the frontier marked (nothing without checks)."""
    import pandas as pd

    if not bool(runs["passed"].notna().any()):
        return ""
    parts = ["<h2>Pass rates</h2>", "<table><thead><tr>"]
    parts.append(
        _cells(("scenario", "runs", "pass rate (95% interval)", "tokens", "cost (USD)"), "th")
    )
    parts.append("</tr></thead><tbody>")
    for row in pass_rate_frame(runs).to_dict("records"):
        cost = None if pd.isna(row["cost_usd"]) else row["cost_usd"]
        css = ' class="total"' if row["scenario"] == "TOTAL" else ""
        parts.append(
            f"<tr{css}>"
            + _cells(
                (
                    clip(row["scenario"], NAME_CHARS),
                    row["runs"],
                    _rate(row),
                    f"{row['total_tokens']:,}",
                    _usd(cost),
                )
            )
            + "</tr>"
        )
    parts.append("</tbody></table>")
    if runs["variant"].notna().any():
        parts += ["<h3>Variants</h3>", "<table><thead><tr>"]
        heads = (
            "variant",
            "runs",
            "pass rate (95% interval)",
            "mean cost (USD)",
            "mean tokens",
            "mean tool rounds",
            "on the frontier",
        )
        parts.append(_cells(heads, "th") + "</tr></thead><tbody>")
        for row in frontier_frame(runs).to_dict("records"):
            mean = None if pd.isna(row["mean_cost_usd"]) else row["mean_cost_usd"]
            parts.append(
                "<tr>"
                + _cells(
                    (
                        clip(row["variant"], NAME_CHARS),
                        row["runs"],
                        _rate(row),
                        _usd(mean),
                        f"{row['mean_tokens']:,.0f}",
                        f"{row['mean_tool_rounds']:.1f}",
                        "yes" if row["on_frontier"] else "",
                    )
                )
                + "</tr>"
            )
        parts.append("</tbody></table>")
    return "\n".join(parts)


def _estimated(flag: bool) -> str:
    """The words for estimated counts under a row's name when its counts are estimated
    (``usage_estimated``, the flag every view reads), as the debugger's header says it
    beside a run's totals."""
    said = estimated(flag)
    return f'<div class="meta">{esc(said)}</div>' if said else ""


def _plots(figures: Sequence[tuple[str, Figure]]) -> str:
    parts = ["<h2>Plots</h2>"]
    for caption, fig in figures:
        parts.append(
            f'<figure><img alt="{esc(caption)}" src="data:image/png;base64,{_png(fig)}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>"
        )
    return "\n".join(parts)


def _gate(gate: BudgetGate) -> str:
    if gate.gate == "usd":
        spent, limit = _usd(gate.spent), _usd(gate.limit)
    else:
        spent, limit = f"{int(gate.spent):,} tokens", f"{int(gate.limit):,} tokens"
    state = "passed" if gate.passed else "tripped"
    over = overshoot(gate.spent, gate.limit)
    why = f' <span class="meta">{esc(over)}</span>' if over else ""
    return (
        f"<li>{esc(gate.gate)} gate ({esc(gate.stage)}): {esc(spent)} of {esc(limit)} "
        f'<span class="{state}">{esc(state)}</span>{why}</li>'
    )


def _tags(tags: Iterable[str]) -> str:
    return ", ".join(clip(t, NAME_CHARS) for t in tags)


def _tool(tool: ToolRow, carried: Carried | None = None) -> str:
    if not tool.ran:  # answered without running it: no failure (the other views agree)
        status = "not run"
    elif tool.status == "error":
        status = f'<span class="error">{esc(tool.status)}</span>'
    else:
        status = esc(tool.status)
    said = tool.error_reason and tool.error_reason != tool.status  # "cancelled" once
    why = reason_words(tool.error_reason) if said else None
    reason = f" ({_name(why)})" if why else ""
    args = _cut(dumps(tool.args, ascii_only=False), ARGS_LIMIT)
    parts = [
        f'<div class="tool"><b>{_name(tool.name)}</b> {status}{reason}'
        f' <span class="meta">{esc(f"{tool.output_chars:,}")} chars</span>'
        f"<pre>args: {args}</pre>"
    ]
    if tool.content:
        parts.append(f"<pre>{_cut(tool.content)}</pre>")
    if carried is not None and carried.sent:
        parts.append(f'<div class="meta">{esc(sent_again(carried))}</div>')
    if tool.pruning is not None:
        p = tool.pruning
        parts.append(
            f'<div class="meta">pruned by {_name(p.model_name)}: {esc(f"{p.tokens_before:,}")} → '
            f"{esc(f'{p.tokens_after:,}')} tokens (saved {esc(f'{p.tokens_saved:,}')}, "
            f"pruning spent {esc(f'{p.usage.total_tokens:,}')} tokens, "
            f"{esc(_usd(p.usage.cost_usd))})</div>"
            f"<pre>{_cut(p.pruned)}</pre>"
        )
    parts.append("</div>")
    return "".join(parts)


def _round(row: RoundRow, carried: Mapping[str, Carried] | None = None) -> str:
    if row.purpose == "synthesis":
        said = word(ROUND_KIND, "synthesis")
        why = word(SYNTHESIS_REASON, row.synthesis_reason) if row.synthesis_reason else None
        label = f"{said[0].upper()}{said[1:]}" + (f" ({clip(why, NAME_CHARS)})" if why else "")
    else:
        label = f"Round {row.number}"
    if row.usage.requests == 0:
        figures = "no model reply"
    else:
        figures = (
            f"{row.usage.input_tokens:,} in / {row.usage.output_tokens:,} out"
            + (
                f" + {row.pruning_usage.total_tokens:,} pruning"
                if row.pruning_usage.requests
                else ""
            )
            + f" · {_usd(row.cost_usd)}"
            + (f" · {row.latency_s * 1000:.1f} ms" if row.latency_s is not None else "")
            + (" · stuck" if row.stuck else "")
        )
    parts = [f'<li><b>{esc(label)}</b> <span class="meta num">{esc(figures)}</span>']
    if row.text:
        parts.append(f"<pre>{_cut(row.text)}</pre>")
    parts.extend(_tool(t, (carried or {}).get(t.id)) for t in row.tools)
    if row.gates:
        parts.append("<ul>" + "".join(_gate(g) for g in row.gates) + "</ul>")
    parts.append("</li>")
    return "".join(parts)


def _timeline(i: int, record: ScenarioRun) -> str:
    view = record.view()
    tags = _tags(record.tags)
    meta = " · ".join(
        part
        for part in (
            f"model {clip(record.model_name, NAME_CHARS)}" if record.model_name else "",
            f"tags {tags}" if tags else "",
            f"{record.duration_s * 1000:.1f} ms",
            f"{len(record.events)} event{'s' if len(record.events) != 1 else ''}",
            estimated(any(v.usage.estimated for v in record.views())) or "",
        )
        if part
    )
    parts = [
        f'<section class="scenario" id="scenario-{i}">',
        f'<h3>{_name(record.scenario)} <span class="o o-{esc(record.outcome)}">'
        f"{esc(record.outcome)}</span></h3>",
        f'<p class="meta">{esc(meta)}</p>',
    ]
    if record.description:
        parts.append(f"<p>{esc_clip(record.description, TEXT_CHARS)}</p>")
    if record.planned_turns > 1:
        parts.extend(_turns(record))
    else:
        parts.extend(_run(record.events, view))
    if record.error_kind is not None:
        parts.append(_ending(record))
    parts.append("</section>")
    return "\n".join(parts)


def _ending(record: ScenarioRun) -> str:
    """Why a scenario stopped short: a USD stop says how far it got and what never ran
    (a budget doing its job, not a failure); anything else failed, with its error."""
    views = record.views()
    said = budget_stop(views[-1]) if views else None
    if said is not None:
        return f'<p class="stopped"><b>{esc(said)}</b></p><pre>{_cut(record.error_message)}</pre>'
    kind = _error(record.error_kind, record.error_reason)
    return (
        f'<p class="error"><b>Failed</b> ({esc(kind)})</p><pre>{_cut(record.error_message)}</pre>'
    )


def _run(events: tuple[Event, ...], view: RunView) -> list[str]:
    """The debugger's own view of one run (the widget's module), and the same run as plain
    HTML for readers without scripts."""
    parts = [view_slot(events, max_chars=TEXT_LIMIT), "<noscript>"]
    if view.rounds:
        carried = carried_costs(view, events)
        rows = "".join(_round(r, carried) for r in view.rounds)
        parts.append(f'<ol class="timeline">{rows}</ol>')
    if view.finished is not None:
        parts.append(f"<p><b>Final answer</b></p><pre>{_cut(view.finished.final_text)}</pre>")
    parts.append("</noscript>")
    return parts


def _turns(record: ScenarioRun) -> list[str]:
    """Each turn in order: its number and outcome, the user's message, and its run."""
    runs = record.turn_events()
    parts: list[str] = []
    for number in range(1, record.planned_turns + 1):
        events = runs[number - 1] if number <= len(runs) else None
        view = RunView.from_events(events) if events is not None else None
        end = None if view is None else view.finished or view.failure
        if end is not None:
            outcome = str(end.outcome)
        elif number == record.failed_turn:
            outcome = str(record.outcome)
        else:
            outcome = "not_run"
        label = outcome.replace("_", " ") if outcome == "not_run" else outcome
        parts.append(
            f'<h4 class="turn">Turn {esc(number)} '
            f'<span class="o o-{esc(outcome)}">{esc(label)}</span></h4>'
        )
        if number <= len(record.turns):
            parts.append(f'<p class="turn">{_cut(record.turns[number - 1])}</p>')
        if events is not None and view is not None:
            parts.extend(_run(events, view))
    return parts


def render_report(
    records: Sequence[ScenarioRun],
    runs: pd.DataFrame,
    figures: Sequence[tuple[str, Figure]],
    *,
    title: str = "toolloop_lab scenario report",
) -> str:
    """The whole report as one HTML string (no external resources): ``records`` with their
    ``runs`` frame, and the captioned ``figures`` (what ``LabResults.report_html`` passes)."""
    created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="meta">{esc(f"{len(records)} scenarios · generated {created}")}</p>',
        _summary(records, runs),
        _pass_rates(runs),
        _plots(figures),
        "<h2>Timelines</h2>",
        *(_timeline(i, r) for i, r in enumerate(records)),
        view_assets(),
        "</body></html>",
    ]
    return "\n".join(body) + "\n"
