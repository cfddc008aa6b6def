"""pandas frames of a sweep: one row per scenario, per turn, per round, per tool call, per
event.

Every row is folded from a run's events by :class:`~toolloop_lab._runview.RunView` — the
same fold the live widget and the HTML report read — so the numbers here can never
disagree with what a person saw. Token columns split the spend without overlap:
``prompt_tokens`` and ``completion_tokens`` are the agent model's calls (rounds and
synthesis), ``pruning_tokens`` is everything the pruning calls used (input and output);
the three add up to ``total_tokens``. Three counts of calls, each named for what it counts:
``rounds`` (rounds run, the one whose reply answered included: ``ToolLoopResult.rounds``),
``tool_rounds`` (rounds that ended in tool calls) and ``model_calls`` (every model
call paid for, the final-answer call's and the pruning model's included); the catalog's
``single_round`` is one tool round and two model calls. Costs are float USD with a separate
``cost_known`` flag: an unpriced run has ``cost_usd`` NaN, never a silent zero.

A scenario of several turns runs the loop once per turn. Its ``runs`` row adds its turns
up (tokens, cost, rounds, tool calls, times) and shows how the conversation ended: the
outcome, error and answer of the last turn that ran, which is the failed one when a turn
failed (a failed turn ends the scenario). The ``turns`` frame has one row per turn the
scenario holds, turns that never ran included (outcome ``<NA>``, nothing spent), and every
other frame has a ``turn`` column (numbered from 1).

Times are seconds: ``elapsed_s`` is the loop's own clock (its last event), ``paused_s`` the
part of it pauses held the loop (a person at step mode: never part of any other time),
``latency_s`` and ``model_latency_s`` the model calls, ``first_token_s`` a streamed call's
first text, ``duration_s`` of a round its own time (pauses left out) and of a tool call its
run. They differ from run to run, as run ids do: :func:`drop_volatile` removes every such
column before two sweeps are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any, Final

import pandas as pd

from toolloop_lab._carried import Carried, carried_costs
from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._spend.usage import Usage, format_usd
from toolloop_lab._support.escape import plain
from toolloop_lab._support.words import estimated
from toolloop_lab.events import EVENT_TYPES, OUTCOMES, BudgetGate, tool_rounds_of
from toolloop_lab.lab._record import ScenarioRun, error_text, tally

_GATE_STATES: Final = pd.CategoricalDtype(["off", "passed", "tripped"])
_OUTCOME: Final = pd.CategoricalDtype(list(OUTCOMES))

VOLATILE_COLUMNS: Final = (
    "run_id",
    "duration_s",
    "elapsed_s",
    "paused_s",
    "model_latency_s",
    "latency_s",
    "first_token_s",
    "tool_time_s",
    "started_s",
    "t",
    "event",
)
"""Columns that differ between two runs of the same sweep: random run ids, wall times and
the events themselves (they carry both)."""

_SPEND: Final[dict[str, Any]] = {
    "rounds": "int64",
    "tool_rounds": "int64",
    "model_calls": "int64",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "pruning_tokens": "int64",
    "total_tokens": "int64",
    "tokens_saved_by_pruning": "int64",
    "net_tokens_saved": "int64",
    "tool_calls": "int64",
    "tool_errors": "int64",
    "retried_calls": "int64",
    "rate_limit_wait_s": "float64",
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
}
"""What a scenario row and a turn row share: spend, tools, synthesis, error, answer.
``retried_calls`` counts the model calls a provider refused for a rate limit and the loop
sent again (``AgentConfig.rate_limit_retries``), ``rate_limit_wait_s`` the seconds it
waited for them, as the providers asked."""

RUN_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "name": "string",
    "tags": "object",
    "model": "string",
    "outcome": _OUTCOME,
    "passed": "boolean",
    "failed_checks": "object",
    "turns": "int64",
    "turns_run": "int64",
    **_SPEND,
    "nested_runs": "int64",
    "total_tokens_with_nested": "int64",
    "cost_usd_with_nested": "float64",
    "elapsed_s": "float64",
    "paused_s": "float64",
    "model_latency_s": "float64",
    "duration_s": "float64",
    "run_id": "string",
}
"""Columns of :attr:`LabResults.runs`, in order, with their dtypes. ``name`` is what the
first turn's run was called (``run(..., name=)``, a bridged agent's name), ``<NA>`` when
nobody named it; ``turns`` is how many the scenario holds, ``turns_run`` how many ran;
``run_id`` is the last turn's. The spend columns are the scenario's own runs'; the
``*_with_nested`` ones add the ``nested_runs`` its tools started (sub-agents), whose
spend the agent pays too (``cost_usd_with_nested`` is NaN when any of it is unpriced).
``variant`` is the variant of the sweep the row ran under (``<NA>``: the scenario as
written) and ``repeat`` which run of that pair it is (from 1); every frame has both.
``passed`` says whether every one of the scenario's checks passed (``<NA>`` without
checks), and ``failed_checks`` lists each failed one with what it saw."""

TURN_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "turn": "int64",
    "name": "string",
    "message": "string",
    "outcome": _OUTCOME,
    **_SPEND,
    "nested_runs": "int64",
    "total_tokens_with_nested": "int64",
    "cost_usd_with_nested": "float64",
    "context_tokens": "int64",
    "elapsed_s": "float64",
    "paused_s": "float64",
    "model_latency_s": "float64",
    "run_id": "string",
}
"""Columns of :attr:`LabResults.turns`: one row per turn per scenario (``name``: what its
run was called, as in :data:`RUN_DTYPES`). ``context_tokens`` is
the input of the turn's last model call (how much of the conversation it carried)."""

ROUND_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "turn": "int64",
    "round": "int64",
    "purpose": pd.CategoricalDtype(["round", "synthesis"]),
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "pruning_tokens": "int64",
    "total_tokens": "int64",
    "cost_usd": "float64",
    "cost_known": "bool",
    "usage_estimated": "bool",
    "cumulative_tokens": "int64",
    "cumulative_cost_usd": "float64",
    "tool_calls": "int64",
    "tool_errors": "int64",
    "tokens_saved_by_pruning": "int64",
    "net_tokens_saved": "int64",
    "stuck": "bool",
    "failed_calls": "int64",
    "duration_s": "float64",
    "paused_s": "float64",
    "latency_s": "float64",
    "first_token_s": "float64",
    "tool_time_s": "float64",
    "token_gate": _GATE_STATES,
    "token_spent": "Int64",
    "token_limit": "Int64",
    "usd_gate": _GATE_STATES,
    "usd_spent": "float64",
    "usd_limit": "float64",
    "synthesis_reason": "string",
}
"""Columns of :attr:`LabResults.rounds`: one row per round (or synthesis) per turn per
scenario. ``usage_estimated`` is true when a count of the round's calls (its model call,
its pruning calls) was estimated, as in :data:`RUN_DTYPES`. Gate columns hold the last
check of that gate in the round; ``off`` means none ran. ``cumulative_*`` run over the
whole scenario, turns included. ``failed_calls`` counts the round's model calls that
raised (``latency_s`` is then the time until the failure).
``duration_s`` is the round's own time, from its first event to its last less ``paused_s``,
the time pauses held it (a person's, drawn as its own segment by the debugger).
``first_token_s`` is NaN unless the call streamed; ``tool_time_s`` is the wall time from the
round's first tool start to its last tool end (NaN when no tool ran)."""

TOOL_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "turn": "int64",
    "round": "int64",
    "call": "int64",
    "tool_call_id": "string",
    "name": "string",
    "server": "string",
    "status": "string",
    "error_reason": "string",
    "ran": "bool",
    "started_s": "float64",
    "duration_s": "float64",
    "output_chars": "int64",
    "pruned": "bool",
    "tokens_saved_by_pruning": "int64",
    "output_tokens": "int64",
    "times_sent": "int64",
    "carried_tokens": "int64",
    "carried_cost_usd": "float64",
    "carried_estimated": "bool",
    "pruning_cost_usd": "float64",
    "pruning_saved_usd": "float64",
}
"""Columns of :attr:`LabResults.tools`: one row per tool call, in call order within its
round. ``server`` names the MCP server its tool came from (``<NA>`` for other tools);
``started_s`` is the run time it began (NaN for a call answered without running);
``duration_s`` how long it took. What its output really cost (see
:mod:`toolloop_lab._carried`): ``output_tokens`` as the model was sent it (after pruning),
``times_sent`` the later model calls of its run that were sent it, ``carried_tokens`` and
``carried_cost_usd`` what those sends cost (each at that call's input price; NaN when one
was unpriced), ``carried_estimated`` true when the output's tokens are an estimate (a
provider reports a request's total, never one message's); for a pruned output,
``pruning_cost_usd`` what the pruning call cost and ``pruning_saved_usd`` what the tokens
it kept out would have cost in those same sends."""

BY_TOOL_DTYPES: Final[dict[str, Any]] = {
    "name": "string",
    "calls": "int64",
    "errors": "int64",
    "output_tokens": "int64",
    "carried_tokens": "int64",
    "carried_cost_usd": "float64",
    "mean_carried_cost_usd": "float64",
    "carried_estimated": "bool",
    "pruned": "int64",
    "tokens_saved_by_pruning": "int64",
    "pruning_cost_usd": "float64",
    "pruning_saved_usd": "float64",
}
"""Columns of :meth:`LabResults.by_tool`: the tool calls of the sweep summed per tool
name, dearest carried cost first."""

EVENT_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "turn": "int64",
    "seq": "int64",
    "run_id": "string",
    "kind": pd.CategoricalDtype(list(EVENT_TYPES)),
    "round": "int64",
    "t": "float64",
    "event": "object",
}
"""Columns of :attr:`LabResults.events`; ``seq`` counts the scenario's events (all turns);
``event`` holds the frozen event itself."""


def drop_volatile(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the :data:`VOLATILE_COLUMNS` it has: what two runs of one sweep
    must agree on."""
    return frame.drop(columns=[c for c in VOLATILE_COLUMNS if c in frame.columns])


def _usd(value: Decimal | None) -> float:
    return float("nan") if value is None else float(value)


def _seconds(value: float | None) -> float:
    return float("nan") if value is None else value


def _frame(rows: dict[str, list[Any]], dtypes: dict[str, Any]) -> pd.DataFrame:
    frame = pd.DataFrame({name: pd.Series(rows[name], dtype=dt) for name, dt in dtypes.items()})
    return frame.reset_index(drop=True)


def _columns(dtypes: dict[str, Any]) -> dict[str, list[Any]]:
    return {name: [] for name in dtypes}


def _add(cols: dict[str, list[Any]], values: dict[str, Any]) -> None:
    for name, value in values.items():
        cols[name].append(value)


def _keys(rec: ScenarioRun) -> dict[str, Any]:
    """What names a row's run in every frame: its scenario, variant and repeat."""
    return {"scenario": rec.scenario, "variant": rec.variant, "repeat": rec.repeat}


def _sum(usages: Iterable[Usage]) -> Usage:
    total = Usage()
    for usage in usages:
        total = total + usage
    return total


def _spend(views: Sequence[RunView]) -> dict[str, Any]:
    """The spend, tool and synthesis columns of one turn, or of a scenario's turns added
    up (``any`` for the flags, the first synthesis for its reason)."""
    usage = _sum(v.usage for v in views)
    pruning = _sum(r.pruning_usage for v in views for r in v.rounds)
    tools = [t for v in views for r in v.rounds for t in r.tools]
    ends = [v.finished or v.failure for v in views]
    synthesis = next((r for v in views for r in v.rounds if r.purpose == "synthesis"), None)
    retried = [
        f.retry_after_s
        for v in views
        for r in v.rounds
        for f in r.failed_calls
        if f.retry_after_s is not None
    ]
    return {
        "rounds": sum(e.rounds for e in ends if e is not None),
        "tool_rounds": sum(tool_rounds_of(e) for e in ends if e is not None),
        "model_calls": usage.requests,
        "prompt_tokens": usage.input_tokens - pruning.input_tokens,
        "completion_tokens": usage.output_tokens - pruning.output_tokens,
        "pruning_tokens": pruning.total_tokens,
        "total_tokens": usage.total_tokens,
        "tokens_saved_by_pruning": sum(v.tokens_saved for v in views),
        "net_tokens_saved": sum(v.net_saved for v in views),
        "tool_calls": len(tools),
        "tool_errors": sum(1 for t in tools if t.status == "error"),
        "retried_calls": len(retried),
        "rate_limit_wait_s": float(sum(retried)),
        "cost_usd": _usd(usage.cost_usd),
        "cost_known": usage.cost_usd is not None,
        "usage_estimated": usage.estimated,
        "budget_exhausted": any("tripped" in (v.token_gate, v.usd_gate) for v in views),
        "synthesis_was_run": synthesis is not None,
        "synthesis_reason": synthesis.synthesis_reason if synthesis else None,
    }


def _with_nested(views: Sequence[RunView], nested: Sequence[RunView]) -> dict[str, Any]:
    """The nested-run columns: how many runs the turns' tools started, and the spend of
    the turns with theirs added."""
    usage = _sum(v.usage for v in (*views, *nested))
    return {
        "nested_runs": len(nested),
        "total_tokens_with_nested": usage.total_tokens,
        "cost_usd_with_nested": _usd(usage.cost_usd),
    }


def _model_latency(views: Sequence[RunView]) -> float:
    return sum(r.latency_s for v in views for r in v.rounds if r.latency_s is not None)


def runs_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per scenario, in sweep order (see :data:`RUN_DTYPES`)."""
    cols = _columns(RUN_DTYPES)
    for rec in records:
        views = rec.views()
        nested = [n for turn in rec.nested_views() for n in turn]
        _add(
            cols,
            {
                **_keys(rec),
                "name": _name(views[:1]),
                "tags": rec.tags,
                "model": rec.model_name,
                "outcome": rec.outcome,
                "passed": rec.passed,
                "failed_checks": rec.failed_checks,
                "turns": rec.planned_turns,
                "turns_run": len(views),
                **_spend(views),
                **_with_nested(views, nested),
                "error_kind": rec.error_kind,
                "error_reason": rec.error_reason,
                "error": rec.error_message,
                "final_text": rec.final_text,
                "elapsed_s": sum(v.elapsed_s for v in views),
                "paused_s": sum(v.paused_s for v in views),
                "model_latency_s": _model_latency(views),
                "duration_s": rec.duration_s,
                "run_id": views[-1].run_id if views else None,
            },
        )
    return _frame(cols, RUN_DTYPES)


def turns_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per turn per scenario, turns that never ran included (see
    :data:`TURN_DTYPES`)."""
    cols = _columns(TURN_DTYPES)
    for rec in records:
        views, nested = rec.views(), rec.nested_views()
        failed = rec.failed_turn
        for number in range(1, rec.planned_turns + 1):
            view = views[number - 1] if number <= len(views) else None
            spent = _spend([view] if view is not None else [])
            below = nested[number - 1] if number <= len(nested) else ()
            spent.update(_with_nested([view] if view is not None else [], below))
            end = None if view is None else view.finished or view.failure
            outcome = end.outcome if end is not None else None
            error = number == failed
            _add(
                cols,
                {
                    **_keys(rec),
                    "turn": number,
                    "name": _name([view] if view is not None else []),
                    "message": rec.turns[number - 1] if number <= len(rec.turns) else None,
                    "outcome": rec.outcome if error and outcome is None else outcome,
                    **spent,
                    "error_kind": rec.error_kind if error else None,
                    "error_reason": rec.error_reason if error else None,
                    "error": rec.error_message if error else None,
                    "final_text": view.final_text if view is not None else None,
                    "context_tokens": view.last_context_tokens if view is not None else 0,
                    "elapsed_s": view.elapsed_s if view is not None else float("nan"),
                    "paused_s": view.paused_s if view is not None else float("nan"),
                    "model_latency_s": (
                        _model_latency([view]) if view is not None else float("nan")
                    ),
                    "run_id": view.run_id if view is not None else None,
                },
            )
    return _frame(cols, TURN_DTYPES)


def _name(views: Sequence[RunView]) -> str | None:
    """What the first of ``views`` was called (``run(..., name=)``), if anything."""
    start = views[0].started if views else None
    return start.name if start is not None else None


def _last_gate(row: RoundRow, kind: str) -> BudgetGate | None:
    return next((g for g in reversed(row.gates) if g.gate == kind), None)


def _tool_time(row: RoundRow) -> float:
    """From the round's first tool start to its last tool end; NaN when no tool ran."""
    ran = [
        (t.started_t, t.duration_s)
        for t in row.tools
        if t.started_t is not None and t.duration_s is not None
    ]
    if not ran:
        return float("nan")
    start = min(began for began, _ in ran)
    end = max(began + took for began, took in ran)
    return max(end - start, 0.0)


def rounds_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per round (synthesis included) per turn per scenario (see
    :data:`ROUND_DTYPES`)."""
    cols = _columns(ROUND_DTYPES)
    for rec in records:
        tokens_so_far = 0
        cost_so_far: Decimal | None = Decimal(0)
        for turn, view in enumerate(rec.views(), start=1):
            for row in view.rounds:
                cost = row.cost_usd
                tokens_so_far += (row.usage + row.pruning_usage).total_tokens
                cost_so_far = None if cost is None or cost_so_far is None else cost_so_far + cost
                cells = {**_keys(rec), "turn": turn, **_round_cells(row)}
                cells.update(cumulative_tokens=tokens_so_far, cumulative_cost_usd=_usd(cost_so_far))
                _add(cols, {**cells, **_gate_cells(row)})
    return _frame(cols, ROUND_DTYPES)


def _round_cells(row: RoundRow) -> dict[str, Any]:
    """What one round's row says of the round alone (its spend, calls and times)."""
    spent = row.usage + row.pruning_usage
    cost = row.cost_usd
    return {
        "round": row.number,
        "purpose": row.purpose,
        "prompt_tokens": row.usage.input_tokens,
        "completion_tokens": row.usage.output_tokens,
        "pruning_tokens": row.pruning_usage.total_tokens,
        "total_tokens": spent.total_tokens,
        "cost_usd": _usd(cost),
        "cost_known": cost is not None,
        "usage_estimated": spent.estimated,
        "tool_calls": len(row.tools),
        "tool_errors": sum(1 for t in row.tools if t.status == "error"),
        "tokens_saved_by_pruning": row.tokens_saved,
        "net_tokens_saved": row.net_saved,
        "stuck": row.stuck,
        "failed_calls": len(row.failed_calls),
        "duration_s": _seconds(row.duration_s),
        "paused_s": row.paused_s,
        "latency_s": _seconds(row.latency_s),
        "first_token_s": _seconds(row.first_token_s),
        "tool_time_s": _tool_time(row),
        "synthesis_reason": row.synthesis_reason,
    }


def _gate_cells(row: RoundRow) -> dict[str, Any]:
    """The round's budget gates: how each last ended, and what it had counted."""
    token = _last_gate(row, "token")
    usd = _last_gate(row, "usd")
    return {
        "token_gate": row.gate("token"),
        "token_spent": None if token is None else int(token.spent),
        "token_limit": None if token is None else int(token.limit),
        "usd_gate": row.gate("usd"),
        "usd_spent": _usd(None if usd is None else usd.spent),
        "usd_limit": _usd(None if usd is None else usd.limit),
    }


def _carried_cells(carried: Carried | None, tool: ToolRow) -> dict[str, Any]:
    """What a tool call's output cost in the later calls of its run (nothing for an output
    no later call was sent)."""
    pruning = tool.pruning
    pruning_cost = _usd(pruning.usage.cost_usd) if pruning is not None else 0.0
    if carried is None:
        return {
            "output_tokens": 0,
            "times_sent": 0,
            "carried_tokens": 0,
            "carried_cost_usd": 0.0,
            "carried_estimated": False,
            "pruning_cost_usd": pruning_cost,
            "pruning_saved_usd": 0.0,
        }
    return {
        "output_tokens": carried.tokens,
        "times_sent": carried.sent,
        "carried_tokens": carried.carried_tokens,
        "carried_cost_usd": _usd(carried.carried_cost_usd),
        "carried_estimated": carried.estimated,
        "pruning_cost_usd": pruning_cost,
        "pruning_saved_usd": _usd(carried.saved_cost_usd),
    }


def tools_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """One row per tool call per round per turn per scenario (see :data:`TOOL_DTYPES`)."""
    cols = _columns(TOOL_DTYPES)
    for rec in records:
        for turn, events in enumerate(rec.turn_events(), start=1):
            view = RunView.from_events(events)
            carried = carried_costs(view, events)
            for row in view.rounds:
                for call, tool in enumerate(row.tools, start=1):
                    _add(
                        cols,
                        {
                            **_keys(rec),
                            "turn": turn,
                            "round": row.number,
                            "call": call,
                            "tool_call_id": tool.id,
                            "name": tool.name,
                            "server": tool.server,
                            "status": tool.status,
                            "error_reason": tool.error_reason,
                            "ran": tool.ran,
                            "started_s": _seconds(tool.started_t),
                            "duration_s": _seconds(tool.duration_s),
                            "output_chars": tool.output_chars,
                            "pruned": tool.pruning is not None,
                            "tokens_saved_by_pruning": (
                                tool.pruning.tokens_saved if tool.pruning is not None else 0
                            ),
                            **_carried_cells(carried.get(tool.id), tool),
                        },
                    )
    return _frame(cols, TOOL_DTYPES)


def by_tool_frame(tools: pd.DataFrame) -> pd.DataFrame:
    """The tool calls summed per tool name (see :data:`BY_TOOL_DTYPES`): a cost NaN when
    some call's was unknown."""
    cols = _columns(BY_TOOL_DTYPES)
    for name in dict.fromkeys(tools["name"]):
        group = tools[tools["name"] == name]
        carried = float(group["carried_cost_usd"].sum(min_count=1))
        if group["carried_cost_usd"].isna().any():
            carried = float("nan")
        _add(
            cols,
            {
                "name": name,
                "calls": len(group),
                "errors": int((group["status"] == "error").sum()),
                "output_tokens": int(group["output_tokens"].sum()),
                "carried_tokens": int(group["carried_tokens"].sum()),
                "carried_cost_usd": carried,
                "mean_carried_cost_usd": carried / len(group),
                "carried_estimated": bool(group["carried_estimated"].any()),
                "pruned": int(group["pruned"].sum()),
                "tokens_saved_by_pruning": int(group["tokens_saved_by_pruning"].sum()),
                "pruning_cost_usd": float(group["pruning_cost_usd"].sum(min_count=1)),
                "pruning_saved_usd": float(group["pruning_saved_usd"].sum(min_count=1)),
            },
        )
    frame = _frame(cols, BY_TOOL_DTYPES)
    return frame.sort_values("carried_cost_usd", ascending=False, kind="stable").reset_index(
        drop=True
    )


def events_frame(records: Sequence[ScenarioRun]) -> pd.DataFrame:
    """The raw event stream, one row per event, scenario by scenario, in emitted order."""
    cols = _columns(EVENT_DTYPES)
    for rec in records:
        seq = 0
        for turn, events in enumerate(rec.turn_events(), start=1):
            for event in events:
                _add(
                    cols,
                    {
                        **_keys(rec),
                        "turn": turn,
                        "seq": seq,
                        "run_id": event.run_id,
                        "kind": event.kind,
                        "round": event.round,
                        "t": event.t,
                        "event": event,
                    },
                )
                seq += 1
    return _frame(cols, EVENT_DTYPES)


def _text(value: Any) -> str | None:
    """A frame's cell as text, ``None`` for a missing one."""
    return None if pd.isna(value) else str(value)


def _turn_error(row: dict[str, Any]) -> str:
    return error_text(str(row["outcome"]), _text(row["error_kind"]), _text(row["error_reason"]))


def _cost_text(cost: float, known: bool) -> str:
    return format_usd(cost) if known else "unknown"


_TABLE: Final = {
    "scenario": "scenario",
    "outcome": "outcome",
    "tool_rounds": "tool rounds",
    "model_calls": "model calls",
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
    tokens and the tokens pruning saved; ``error`` is ``kind: reason``, or for a run the
    USD limit stopped its outcome's words; the total line counts the runs that answered,
    that the USD limit stopped and that failed apart (:func:`~.record.tally`). When some
    run's counts were estimated, a last ``note`` column says so on its row. A sweep of
    variants gets a ``variant`` column (and ``repeat`` when pairs ran more than once), and
    a sweep with checks a ``checks`` column beside the spend (``passed``, or how many
    failed), its total line the pass rate.
    """
    names = [str(n) for n in runs["scenario"]]
    errors = [
        error_text(str(outcome), _text(kind), _text(reason))
        for outcome, kind, reason in zip(
            runs["outcome"], runs["error_kind"], runs["error_reason"], strict=True
        )
    ]
    costs = [_cost_text(c, k) for c, k in zip(runs["cost_usd"], runs["cost_known"], strict=True)]
    rows: list[list[Any]] = [
        [name, str(outcome), int(tr), int(mc), int(p), int(c), int(pr), int(sv), cost, err]
        for name, outcome, tr, mc, p, c, pr, sv, cost, err in zip(
            names,
            runs["outcome"],
            runs["tool_rounds"],
            runs["model_calls"],
            runs["prompt_tokens"],
            runs["completion_tokens"],
            runs["pruning_tokens"],
            runs["tokens_saved_by_pruning"],
            costs,
            errors,
            strict=True,
        )
    ]
    rows.append(
        [
            "TOTAL",
            f"{len(names)} runs",
            int(runs["tool_rounds"].sum()),
            int(runs["model_calls"].sum()),
            int(runs["prompt_tokens"].sum()),
            int(runs["completion_tokens"].sum()),
            int(runs["pruning_tokens"].sum()),
            int(runs["tokens_saved_by_pruning"].sum()),
            _total_cost(runs),
            tally(str(o) for o in runs["outcome"]),
        ]
    )
    header = list(_TABLE.values())
    right = {2, 3, 4, 5, 6, 7, 8}
    if runs["passed"].notna().any():  # beside the spend: column 9, before the error
        header.insert(9, "checks")
        said = [*map(_checks_text, runs["passed"], runs["failed_checks"])]
        for row, text in zip(rows, [*said, pass_rate_text(runs["passed"])], strict=True):
            row.insert(9, text)
    keys = []
    if runs["variant"].notna().any():
        keys.append(("variant", [_text(v) or "" for v in runs["variant"]]))
    if bool(runs["repeat"].gt(1).any()):
        keys.append(("repeat", [str(int(r)) for r in runs["repeat"]]))
    for offset, (title, values) in enumerate(keys, start=1):
        header.insert(offset, title)
        for row, value in zip(rows, [*values, ""], strict=True):
            row.insert(offset, value)
    right = {i + len(keys) for i in right}
    right |= {n for n, (title, _) in enumerate(keys, start=1) if title == "repeat"}
    header = _note_estimated(header, rows, runs["usage_estimated"])
    return _fixed_width(header, rows, right=right)


def _checks_text(passed: Any, failed: Any) -> str:
    """A row's checks in a word: ``passed``, ``failed 2``, or nothing without checks."""
    if pd.isna(passed):
        return ""
    return "passed" if bool(passed) else f"failed {len(failed)}"


def pass_rate_text(passed: pd.Series) -> str:
    """``7 of 9 passed (78%)``: the runs with checks that passed them all."""
    judged = passed.dropna()
    if judged.empty:
        return ""
    good = int(judged.astype(bool).sum())
    return f"{good} of {len(judged)} passed ({good / len(judged):.0%})"


_TURN_TABLE: Final = (
    "scenario",
    "turn",
    "outcome",
    "tool rounds",
    "model calls",
    "tools",
    "tool errors",
    "prompt",
    "completion",
    "cost (USD)",
    "error",
)


def turn_table(turns: pd.DataFrame) -> str:
    """The spend per turn as fixed-width text, with a total line: each scenario's turns in
    order, ``not run`` for turns after a failed one; ``error`` is ``kind: reason``."""
    rows: list[list[Any]] = []
    for row in turns.to_dict("records"):
        ran = not pd.isna(row["outcome"])
        rows.append(
            [
                str(row["scenario"]),
                int(row["turn"]),
                str(row["outcome"]) if ran else "not run",
                int(row["tool_rounds"]),
                int(row["model_calls"]),
                int(row["tool_calls"]),
                int(row["tool_errors"]),
                int(row["prompt_tokens"]),
                int(row["completion_tokens"]),
                _cost_text(row["cost_usd"], bool(row["cost_known"])),
                error_text(
                    str(row["outcome"]), _text(row["error_kind"]), _text(row["error_reason"])
                )
                if ran
                else "",
            ]
        )
    ran_count = int(turns["outcome"].notna().sum())
    rows.append(
        [
            "TOTAL",
            "",
            f"{ran_count} of {len(turns)} ran",
            int(turns["tool_rounds"].sum()),
            int(turns["model_calls"].sum()),
            int(turns["tool_calls"].sum()),
            int(turns["tool_errors"].sum()),
            int(turns["prompt_tokens"].sum()),
            int(turns["completion_tokens"].sum()),
            _total_cost(turns),
            "",
        ]
    )
    header = _note_estimated(list(_TURN_TABLE), rows, turns["usage_estimated"])
    return _fixed_width(header, rows, right={1, 3, 4, 5, 6, 7, 8, 9})


def _total_cost(frame: pd.DataFrame) -> str:
    """A table's total cost: its rows' priced costs, ``+ unknown`` when some are not."""
    total = _cost_text(float(frame["cost_usd"].fillna(0).sum()), True)
    return total if bool(frame["cost_known"].all()) else f"{total} + unknown"


def _note_estimated(header: list[str], rows: list[list[Any]], flags: pd.Series) -> list[str]:
    """``header`` with a ``note`` column added, and the words for estimated counts added to
    each row whose counts are estimated (and to the total line when any is), as the
    debugger's header says it beside a run's totals; a table whose counts are all a
    provider's gets no such column. ``rows`` ends in the total line, ``flags`` (the frame's
    ``usage_estimated``) has one per row before it."""
    marked = [bool(flag) for flag in flags]
    if not any(marked):
        return header
    for row, flag in zip(rows, [*marked, True], strict=True):
        row.append(estimated(flag) or "")
    return [*header, "note"]


def _fixed_width(header: list[str], rows: list[list[Any]], right: set[int]) -> str:
    """Plain text table: numbers right-aligned, text left-aligned, a rule under the header.
    Every cell is :func:`plain` text (a scenario's name or error is untrusted: no control
    character acts, no bidirectional one reorders a line), measured as shown."""
    cells = [[plain(v) for v in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: list[str]) -> str:
        parts = [
            v.rjust(w) if i in right else v.ljust(w)
            for i, (v, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:-1]), rule, line(cells[-1])])
