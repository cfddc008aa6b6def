"""pandas frames of a sweep: one row per scenario, per round, per event.

Every row is folded from a run's events by :class:`~toolloop_lab.runview.RunView` — the
same fold the live widget and the HTML report read — so the numbers here can never
disagree with what a person saw. Token columns split the spend without overlap:
``prompt_tokens`` and ``completion_tokens`` are the agent model's calls (rounds and
synthesis), ``pruning_tokens`` is everything the pruning calls used (input and output);
the three add up to ``total_tokens``. Costs are float USD with a separate ``cost_known``
flag: an unpriced run has ``cost_usd`` NaN, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Final

import pandas as pd

from toolloop_lab.events import EVENT_TYPES, BudgetGate
from toolloop_lab.lab.record import OUTCOMES, ScenarioRun
from toolloop_lab.runview import RoundRow, RunView
from toolloop_lab.usage import Usage

__all__ = [
    "EVENT_DTYPES",
    "ROUND_DTYPES",
    "RUN_DTYPES",
    "events_frame",
    "rounds_frame",
    "runs_frame",
    "spend_table",
]

_GATE_STATES: Final = pd.CategoricalDtype(["off", "passed", "tripped"])

RUN_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "tags": "object",
    "model": "string",
    "outcome": pd.CategoricalDtype(list(OUTCOMES)),
    "rounds": "int64",
    "model_calls": "int64",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "pruning_tokens": "int64",
    "total_tokens": "int64",
    "tokens_saved_by_pruning": "int64",
    "net_tokens_saved": "int64",
    "tool_calls": "int64",
    "tool_errors": "int64",
    "cost_usd": "float64",
    "cost_known": "bool",
    "usage_estimated": "bool",
    "budget_exhausted": "bool",
    "synthesis_was_run": "bool",
    "synthesis_reason": "string",
    "error_kind": "string",
    "error_reason": "string",
    "error": "string",
    "final_text": "string",
    "duration_s": "float64",
    "run_id": "string",
}
"""Columns of :attr:`LabResults.runs`, in order, with their dtypes."""

ROUND_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "round": "int64",
    "purpose": pd.CategoricalDtype(["round", "synthesis"]),
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "pruning_tokens": "int64",
    "total_tokens": "int64",
    "cost_usd": "float64",
    "cost_known": "bool",
    "cumulative_tokens": "int64",
    "cumulative_cost_usd": "float64",
    "tool_calls": "int64",
    "tool_errors": "int64",
    "tokens_saved_by_pruning": "int64",
    "net_tokens_saved": "int64",
    "stuck": "bool",
    "latency_s": "float64",
    "token_gate": _GATE_STATES,
    "token_spent": "Int64",
    "token_limit": "Int64",
    "usd_gate": _GATE_STATES,
    "usd_spent": "float64",
    "usd_limit": "float64",
    "synthesis_reason": "string",
}
"""Columns of :attr:`LabResults.rounds`: one row per round (or synthesis) per scenario.
Gate columns hold the last check of that gate in the round; ``off`` means none ran."""

EVENT_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "seq": "int64",
    "run_id": "string",
    "kind": pd.CategoricalDtype(list(EVENT_TYPES)),
    "round": "int64",
    "t": "float64",
    "event": "object",
}
"""Columns of :attr:`LabResults.events`; ``event`` holds the frozen event itself."""


def _usd(value: Decimal | None) -> float:
    return float("nan") if value is None else float(value)


def _frame(rows: dict[str, list[Any]], dtypes: dict[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series(rows[name], dtype=dt) for name, dt in dtypes.items()})
    return frame.reset_index(drop=True)


def _columns(dtypes: dict[str, Any]) -> dict[str, list[Any]]:
    return {name: [] for name in dtypes}


def _pruning_usage(view: RunView) -> Usage:
    total = Usage()
    for row in view.rounds:
        total = total + row.pruning_usage
    return total


def runs_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per scenario, in sweep order (see :data:`RUN_DTYPES`)."""
    cols = _columns(RUN_DTYPES)
    for rec in records:
        view = rec.view()
        pruning = _pruning_usage(view)
        usage = view.usage
        tools = [t for r in view.rounds for t in r.tools]
        end = view.finished or view.failure
        synthesis = next((r for r in view.rounds if r.purpose == "synthesis"), None)
        values: dict[str, Any] = {
            "scenario": rec.scenario,
            "tags": rec.tags,
            "model": rec.model_name,
            "outcome": rec.outcome,
            "rounds": end.rounds if end is not None else 0,
            "model_calls": usage.requests,
            "prompt_tokens": usage.input_tokens - pruning.input_tokens,
            "completion_tokens": usage.output_tokens - pruning.output_tokens,
            "pruning_tokens": pruning.total_tokens,
            "total_tokens": usage.total_tokens,
            "tokens_saved_by_pruning": view.tokens_saved,
            "net_tokens_saved": view.net_saved,
            "tool_calls": len(tools),
            "tool_errors": sum(1 for t in tools if t.status == "error"),
            "cost_usd": _usd(usage.cost_usd),
            "cost_known": usage.cost_usd is not None,
            "usage_estimated": usage.estimated,
            "budget_exhausted": "tripped" in (view.token_gate, view.usd_gate),
            "synthesis_was_run": synthesis is not None,
            "synthesis_reason": synthesis.synthesis_reason if synthesis else None,
            "error_kind": rec.error_kind,
            "error_reason": rec.error_reason,
            "error": rec.error_message,
            "final_text": rec.final_text,
            "duration_s": rec.duration_s,
            "run_id": view.run_id,
        }
        for name, value in values.items():
            cols[name].append(value)
    return _frame(cols, RUN_DTYPES)


def _last_gate(row: RoundRow, kind: str) -> BudgetGate | None:
    return next((g for g in reversed(row.gates) if g.gate == kind), None)


def rounds_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per round (synthesis included) per scenario (see :data:`ROUND_DTYPES`)."""
    cols = _columns(ROUND_DTYPES)
    for rec in records:
        tokens_so_far = 0
        cost_so_far: Decimal | None = Decimal(0)
        for row in rec.view().rounds:
            spent = row.usage + row.pruning_usage
            cost = row.cost_usd
            tokens_so_far += spent.total_tokens
            cost_so_far = None if cost is None or cost_so_far is None else cost_so_far + cost
            token = _last_gate(row, "token")
            usd = _last_gate(row, "usd")
            values: dict[str, Any] = {
                "scenario": rec.scenario,
                "round": row.number,
                "purpose": row.purpose,
                "prompt_tokens": row.usage.input_tokens,
                "completion_tokens": row.usage.output_tokens,
                "pruning_tokens": row.pruning_usage.total_tokens,
                "total_tokens": spent.total_tokens,
                "cost_usd": _usd(cost),
                "cost_known": cost is not None,
                "cumulative_tokens": tokens_so_far,
                "cumulative_cost_usd": _usd(cost_so_far),
                "tool_calls": len(row.tools),
                "tool_errors": sum(1 for t in row.tools if t.status == "error"),
                "tokens_saved_by_pruning": row.tokens_saved,
                "net_tokens_saved": row.net_saved,
                "stuck": row.stuck,
                "latency_s": float("nan") if row.latency_s is None else row.latency_s,
                "token_gate": row.gate("token"),
                "token_spent": None if token is None else int(token.spent),
                "token_limit": None if token is None else int(token.limit),
                "usd_gate": row.gate("usd"),
                "usd_spent": _usd(None if usd is None else usd.spent),
                "usd_limit": _usd(None if usd is None else usd.limit),
                "synthesis_reason": row.synthesis_reason,
            }
            for name, value in values.items():
                cols[name].append(value)
    return _frame(cols, ROUND_DTYPES)


def events_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """The raw event stream, one row per event, scenario by scenario, in emitted order."""
    cols = _columns(EVENT_DTYPES)
    for rec in records:
        for seq, event in enumerate(rec.events):
            cols["scenario"].append(rec.scenario)
            cols["seq"].append(seq)
            cols["run_id"].append(event.run_id)
            cols["kind"].append(event.kind)
            cols["round"].append(event.round)
            cols["t"].append(event.t)
            cols["event"].append(event)
    return _frame(cols, EVENT_DTYPES)


def _cost_text(cost: float, known: bool) -> str:
    return f"${cost:.6f}" if known else "unknown"


_TABLE: Final = {
    "scenario": "scenario",
    "outcome": "outcome",
    "rounds": "rounds",
    "prompt_tokens": "prompt",
    "completion_tokens": "completion",
    "pruning_tokens": "pruning",
    "tokens_saved_by_pruning": "saved",
    "cost_usd": "cost (USD)",
    "error": "error",
}


def spend_table(runs: pd.DataFrame) -> str:
    """The spend per scenario as fixed-width text, with a total line (what the CLI prints).

    Token columns are the agent model's prompt and completion tokens, the pruning calls'
    tokens and the tokens pruning saved; ``error`` is ``kind: reason``.
    """
    names = [str(n) for n in runs["scenario"]]
    errors = [
        "" if pd.isna(kind) else f"{kind}: {reason}"
        for kind, reason in zip(runs["error_kind"], runs["error_reason"], strict=True)
    ]
    costs = [_cost_text(c, k) for c, k in zip(runs["cost_usd"], runs["cost_known"], strict=True)]
    rows: list[list[Any]] = [
        [name, str(outcome), int(rounds), int(p), int(c), int(pr), int(sv), cost, err]
        for name, outcome, rounds, p, c, pr, sv, cost, err in zip(
            names,
            runs["outcome"],
            runs["rounds"],
            runs["prompt_tokens"],
            runs["completion_tokens"],
            runs["pruning_tokens"],
            runs["tokens_saved_by_pruning"],
            costs,
            errors,
            strict=True,
        )
    ]
    total_cost = _cost_text(float(runs["cost_usd"].fillna(0).sum()), True)
    if not bool(runs["cost_known"].all()):
        total_cost += " + unknown"
    rows.append(
        [
            "TOTAL",
            f"{len(names)} runs",
            "",
            int(runs["prompt_tokens"].sum()),
            int(runs["completion_tokens"].sum()),
            int(runs["pruning_tokens"].sum()),
            int(runs["tokens_saved_by_pruning"].sum()),
            total_cost,
            f"{sum(1 for e in errors if e)} failed" if any(errors) else "",
        ]
    )
    return _fixed_width(list(_TABLE.values()), rows, right={2, 3, 4, 5, 6, 7})


def _fixed_width(header: list[str], rows: list[list[Any]], right: set[int]) -> str:
    """Plain text table: numbers right-aligned, text left-aligned, a rule under the header."""
    cells = [[str(v) for v in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:-1]), rule, line(cells[-1])])
