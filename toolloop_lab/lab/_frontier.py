"""The frontier of a sweep: one row per variant, its pass rate (with a Wilson interval)
against what it cost, and the variants no other beats on both.

A variant is *on the frontier* when no other variant costs no more per run and passes at
least as often, and does better on one of the two (Pareto). Only variants whose pass rate
and cost are both known compete: a variant with no checked run, or with an unpriced call,
is never marked (and marks no other off), because a frontier drawn from a guess is untrue.
"""

from __future__ import annotations

from typing import Any, Final

import pandas as pd

from toolloop_lab.lab._stats import wilson_interval

AS_WRITTEN: Final = "as written"
"""The frontier's name for the runs of a sweep without variants."""

FRONTIER_DTYPES: Final[dict[str, Any]] = {
    "variant": "string",
    "runs": "int64",
    "checked": "int64",
    "passed": "int64",
    "pass_rate": "float64",
    "pass_rate_low": "float64",
    "pass_rate_high": "float64",
    "mean_cost_usd": "float64",
    "total_cost_usd": "float64",
    "cost_known": "bool",
    "mean_tokens": "float64",
    "total_tokens": "int64",
    "mean_tool_rounds": "float64",
    "mean_model_calls": "float64",
    "on_frontier": "bool",
}
"""Columns of :meth:`LabResults.frontier`: per variant, its runs (every repeat), how many
had checks and passed them all, the pass rate with its 95% Wilson interval (NaN without
checks), cost (NaN when some call was unpriced), tokens and rounds per run, and whether it
is on the frontier."""


def pass_counts(passed: pd.Series) -> tuple[int, int]:
    """``(passed, checked)`` of a ``passed`` column (runs without checks left out)."""
    judged = passed.dropna()
    return int(judged.astype(bool).sum()), len(judged)


def frontier_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per variant, in the order the sweep first ran them (see
    :data:`FRONTIER_DTYPES`)."""
    keys = runs["variant"].astype("object").where(runs["variant"].notna(), AS_WRITTEN)
    rows: list[dict[str, Any]] = []
    for name in dict.fromkeys(keys):
        group = runs[keys == name]
        good, checked = pass_counts(group["passed"])
        low, high = wilson_interval(good, checked)
        known = bool(group["cost_known"].all())
        total = float(group["cost_usd"].sum()) if known else float("nan")
        rows.append(
            {
                "variant": name,
                "runs": len(group),
                "checked": checked,
                "passed": good,
                "pass_rate": good / checked if checked else float("nan"),
                "pass_rate_low": low,
                "pass_rate_high": high,
                "mean_cost_usd": total / len(group),
                "total_cost_usd": total,
                "cost_known": known,
                "mean_tokens": float(group["total_tokens"].mean()),
                "total_tokens": int(group["total_tokens"].sum()),
                "mean_tool_rounds": float(group["tool_rounds"].mean()),
                "mean_model_calls": float(group["model_calls"].mean()),
            }
        )
    marks = pareto([(r["mean_cost_usd"], r["pass_rate"]) for r in rows])
    for row, mark in zip(rows, marks, strict=True):
        row["on_frontier"] = mark
    return pd.DataFrame(
        {
            name: pd.Series([r[name] for r in rows], dtype=dtype)
            for name, dtype in FRONTIER_DTYPES.items()
        }
    )


def pareto(points: list[tuple[float, float]]) -> list[bool]:
    """For each ``(cost, pass rate)``, whether no other point is at most as costly and at
    least as good, and strictly better on one; a point with a NaN is never on it."""

    def known(p: tuple[float, float]) -> bool:
        return not (pd.isna(p[0]) or pd.isna(p[1]))

    marks: list[bool] = []
    for i, (cost, rate) in enumerate(points):
        if not known(points[i]):
            marks.append(False)
            continue
        beaten = any(
            j != i
            and known(other)
            and other[0] <= cost
            and other[1] >= rate
            and (other[0] < cost or other[1] > rate)
            for j, other in enumerate(points)
        )
        marks.append(not beaten)
    return marks


def pass_rate_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """The pass rate per scenario (every variant and repeat of it) and overall, with the
    spend beside it: what the report's "Pass rates" table shows."""
    out: list[dict[str, Any]] = []
    groups = [(str(n), runs[runs["scenario"] == n]) for n in dict.fromkeys(runs["scenario"])]
    for name, group in [*groups, ("TOTAL", runs)]:
        good, checked = pass_counts(group["passed"])
        low, high = wilson_interval(good, checked)
        known = bool(group["cost_known"].all())
        out.append(
            {
                "scenario": name,
                "runs": len(group),
                "checked": checked,
                "passed": good,
                "pass_rate": good / checked if checked else float("nan"),
                "pass_rate_low": low,
                "pass_rate_high": high,
                "total_tokens": int(group["total_tokens"].sum()),
                "cost_usd": float(group["cost_usd"].sum()) if known else float("nan"),
            }
        )
    return pd.DataFrame(out)
