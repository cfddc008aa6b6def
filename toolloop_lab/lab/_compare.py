"""Two sweeps of the same scenarios lined up: :func:`compare_sweeps` and
:class:`SweepComparison`.

Runs are paired by (scenario, variant, repeat), so a run is only ever compared with the run
that had the same task under the same setting. Each pair says how its checks moved
(``regressed``: passed before and fails now; ``fixed``: the reverse; ``still passing``,
``still failing``; ``unchecked`` when either run had no checks; ``only in a`` / ``only in
b`` for a run the other sweep lacks) and what its cost and tokens did. The change in pass
rate is tested with McNemar's exact test on the discordant pairs (the regressions and the
fixes), the standard paired test for pass/fail. The text and the HTML put regressions
first.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pandas as pd

from toolloop_lab._spend.usage import format_usd
from toolloop_lab._support.escape import NAME_CHARS, TEXT_CHARS, clip, esc, plain
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab._results import LabResults
from toolloop_lab.lab._stats import mcnemar_exact

CHANGES: Final = (
    "regressed",
    "fixed",
    "still failing",
    "still passing",
    "unchecked",
    "only in a",
    "only in b",
)
"""What a pair's checks did, in the order a comparison lists them (regressions first)."""

PAIR_DTYPES: Final[dict[str, Any]] = {
    "scenario": "string",
    "variant": "string",
    "repeat": "int64",
    "change": pd.CategoricalDtype(list(CHANGES), ordered=True),
    "passed_a": "boolean",
    "passed_b": "boolean",
    "failed_checks_b": "object",
    "outcome_a": "string",
    "outcome_b": "string",
    "cost_usd_a": "float64",
    "cost_usd_b": "float64",
    "cost_change_usd": "float64",
    "total_tokens_a": "Int64",
    "total_tokens_b": "Int64",
    "token_change": "Int64",
}
"""Columns of :attr:`SweepComparison.pairs`: one row per (scenario, variant, repeat) of
either sweep, regressions first; a side a run is missing from has ``<NA>`` / NaN."""

_KEY: Final = ["scenario", "variant", "repeat"]


def _sweep(value: Any, side: str) -> LabResults:
    if isinstance(value, LabResults):
        return value
    if isinstance(value, str | os.PathLike):
        return LabResults.load(value)
    raise ConfigurationError(
        f"compare_sweeps takes two LabResults or two paths of saved sweeps; {side} is "
        f"{shown(value)}",
        field=side,
    )


def _change(a: Any, b: Any, in_a: bool, in_b: bool) -> str:
    if not in_a:
        return "only in b"
    if not in_b:
        return "only in a"
    if pd.isna(a) or pd.isna(b):
        return "unchecked"
    if bool(a) and not bool(b):
        return "regressed"
    if bool(b) and not bool(a):
        return "fixed"
    return "still passing" if bool(a) else "still failing"


def compare_sweeps(a: Any, b: Any) -> SweepComparison:
    """Line two sweeps up run by run (paired by scenario, variant and repeat): ``a`` is the
    sweep before, ``b`` after; each a :class:`LabResults` or the path of a saved one."""
    left, right = _sweep(a, "a"), _sweep(b, "b")
    cols = ["scenario", "variant", "repeat", "passed", "failed_checks", "outcome"]
    cols += ["cost_usd", "cost_known", "total_tokens"]
    ra = left.runs[cols].assign(variant=lambda f: f["variant"].astype("object"))
    rb = right.runs[cols].assign(variant=lambda f: f["variant"].astype("object"))
    ra["variant"] = ra["variant"].where(ra["variant"].notna(), "")
    rb["variant"] = rb["variant"].where(rb["variant"].notna(), "")
    merged = ra.merge(rb, on=_KEY, how="outer", suffixes=("_a", "_b"), indicator=True, sort=False)
    rows: list[dict[str, Any]] = []
    for row in merged.to_dict("records"):
        in_a, in_b = row["_merge"] in ("both", "left_only"), row["_merge"] in ("both", "right_only")
        cost_a = row["cost_usd_a"] if in_a and row["cost_known_a"] else float("nan")
        cost_b = row["cost_usd_b"] if in_b and row["cost_known_b"] else float("nan")
        tok_a = row["total_tokens_a"] if in_a else None
        tok_b = row["total_tokens_b"] if in_b else None
        rows.append(
            {
                "scenario": row["scenario"],
                "variant": row["variant"] or None,
                "repeat": row["repeat"],
                "change": _change(row["passed_a"], row["passed_b"], in_a, in_b),
                "passed_a": row["passed_a"] if in_a else None,
                "passed_b": row["passed_b"] if in_b else None,
                "failed_checks_b": row["failed_checks_b"] if in_b else (),
                "outcome_a": str(row["outcome_a"]) if in_a else None,
                "outcome_b": str(row["outcome_b"]) if in_b else None,
                "cost_usd_a": cost_a,
                "cost_usd_b": cost_b,
                "cost_change_usd": cost_b - cost_a,
                "total_tokens_a": None if tok_a is None or pd.isna(tok_a) else int(tok_a),
                "total_tokens_b": None if tok_b is None or pd.isna(tok_b) else int(tok_b),
                "token_change": (
                    None
                    if tok_a is None or tok_b is None or pd.isna(tok_a) or pd.isna(tok_b)
                    else int(tok_b) - int(tok_a)
                ),
            }
        )
    frame = pd.DataFrame(
        {
            name: pd.Series([r[name] for r in rows], dtype=dtype)
            for name, dtype in PAIR_DTYPES.items()
        }
    )
    frame = frame.sort_values("change", kind="stable").reset_index(drop=True)
    return SweepComparison(frame)


@dataclass(frozen=True)
class SweepComparison:
    """Two sweeps lined up run by run: :attr:`pairs`, the regressions and fixes, the paired
    test of the change in pass rate, and the change in cost and tokens per scenario."""

    pairs: pd.DataFrame = field(repr=False)
    """One row per (scenario, variant, repeat), regressions first (see
    :data:`~toolloop_lab.lab._compare.PAIR_DTYPES`)."""

    def _count(self, change: str) -> int:
        return int((self.pairs["change"] == change).sum())

    @property
    def regressed(self) -> int:
        """Pairs that passed before and fail now."""
        return self._count("regressed")

    @property
    def fixed(self) -> int:
        """Pairs that failed before and pass now."""
        return self._count("fixed")

    @property
    def regressions(self) -> pd.DataFrame:
        """The pairs that regressed."""
        return self.pairs[self.pairs["change"] == "regressed"].reset_index(drop=True)

    @property
    def p_value(self) -> float:
        """McNemar's exact two-sided p-value of the change in pass rate over the paired
        runs both sweeps checked (1.0 when no pair changed)."""
        return mcnemar_exact(self.regressed, self.fixed)

    def pass_rates(self) -> tuple[float, float]:
        """The pass rates of ``a`` and ``b`` over the pairs both checked (NaN without)."""
        both = self.pairs[self.pairs["passed_a"].notna() & self.pairs["passed_b"].notna()]
        if both.empty:
            return float("nan"), float("nan")
        return float(both["passed_a"].astype(bool).mean()), float(
            both["passed_b"].astype(bool).mean()
        )

    def by_scenario(self) -> pd.DataFrame:
        """Per scenario: its pairs, regressions and fixes, and the change in cost (NaN when
        some side was unpriced) and tokens, regressions first."""
        paired = self.pairs[self.pairs["change"].isin(CHANGES[:5])]
        grouped = paired.groupby("scenario", sort=False, observed=True)
        frame = pd.DataFrame(
            {
                "pairs": grouped.size(),
                "regressed": grouped["change"].agg(lambda c: int((c == "regressed").sum())),
                "fixed": grouped["change"].agg(lambda c: int((c == "fixed").sum())),
                "cost_change_usd": grouped["cost_change_usd"].agg(lambda c: c.sum(min_count=1)),
                "token_change": grouped["token_change"].sum(),
            }
        )
        frame = frame.sort_values(["regressed", "fixed"], ascending=[False, True], kind="stable")
        return frame.reset_index()

    def headline(self) -> str:
        """``2 regressed, 1 fixed of 12 paired runs (pass rate 83% -> 75%, McNemar p = 0.62);
        cost +$0.0012, tokens +1,234``."""
        rate_a, rate_b = self.pass_rates()
        paired = self.pairs[self.pairs["change"].isin(CHANGES[:5])]
        rates = "" if pd.isna(rate_a) else f"pass rate {rate_a:.0%} -> {rate_b:.0%}, "
        cost = paired["cost_change_usd"].sum(min_count=1)
        cost_said = "unknown" if pd.isna(cost) else _signed_usd(float(cost))
        tokens = int(paired["token_change"].sum())
        return (
            f"{self.regressed} regressed, {self.fixed} fixed of {len(paired)} paired runs "
            f"({rates}McNemar exact p = {self.p_value:.3g}); cost {cost_said}, "
            f"tokens {tokens:+,}"
        )

    def text(self) -> str:
        """The comparison as plain text: the headline, then every pair whose checks
        changed (regressions first), each with its failed checks, then the change per
        scenario."""
        lines = [self.headline()]
        moved = self.pairs[
            self.pairs["change"].isin(["regressed", "fixed", "only in a", "only in b"])
        ]
        for row in moved.to_dict("records"):
            lines.append(f"{str(row['change']).upper()}: {_run_name(row)}")
            for failed in row["failed_checks_b"] if row["change"] == "regressed" else ():
                lines.append(f"  {plain(failed, TEXT_CHARS)}")
        lines.append("")
        lines.append("per scenario: regressed, fixed, cost change, token change")
        for row in self.by_scenario().to_dict("records"):
            cost = row["cost_change_usd"]
            lines.append(
                f"  {plain(row['scenario'], NAME_CHARS)}: {row['regressed']}, {row['fixed']}, "
                f"{'unknown' if pd.isna(cost) else _signed_usd(float(cost))}, "
                f"{int(row['token_change']):+,}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def html(self) -> str:
        """The comparison as an HTML fragment (every value escaped): the headline, the
        pairs that regressed first, then the change per scenario."""
        parts = [f"<p>{esc(self.headline())}</p>", "<table><thead><tr>"]
        heads = ("change", "scenario", "variant", "run", "failed checks now", "cost change")
        parts.append("".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr></thead><tbody>")
        for row in self.pairs.to_dict("records"):
            cost = row["cost_change_usd"]
            cells = (
                str(row["change"]),
                clip(row["scenario"], NAME_CHARS),
                clip(row["variant"] if not pd.isna(row["variant"]) else "", NAME_CHARS),
                str(row["repeat"]),
                clip("; ".join(row["failed_checks_b"]), TEXT_CHARS),
                "unknown" if pd.isna(cost) else _signed_usd(float(cost)),
            )
            css = f' class="{esc(str(row["change"]).replace(" ", "-"))}"'
            parts.append(f"<tr{css}>" + "".join(f"<td>{esc(c)}</td>" for c in cells) + "</tr>")
        parts.append("</tbody></table>")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        return self.html()

    def __repr__(self) -> str:
        return f"<SweepComparison: {self.headline()}>"


def _run_name(row: Mapping[Hashable, Any]) -> str:
    variant = row["variant"]
    said = plain(row["scenario"], NAME_CHARS)
    if not pd.isna(variant):
        said += f" [{plain(variant, NAME_CHARS)}]"
    return said + f" run {row['repeat']}"


def _signed_usd(value: float) -> str:
    return ("-" if value < 0 else "+") + format_usd(abs(value))
