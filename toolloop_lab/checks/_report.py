"""Judging a run: :func:`evaluate` (a report, never raising) and :func:`verify` (raising
:class:`~toolloop_lab.errors.ChecksFailed` when a check fails)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from toolloop_lab._spend.usage import Usage, format_tokens, format_usd
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.escape import ID_CHARS, TEXT_CHARS, clip, plain
from toolloop_lab._support.fields import shown
from toolloop_lab.checks._base import Check, CheckResult, result
from toolloop_lab.checks._run import CheckedRun, read_run
from toolloop_lab.errors import ChecksFailed, ConfigurationError

if TYPE_CHECKING:
    import pandas as pd

REPORT_DTYPES: Final[dict[str, str]] = {
    "check": "string",
    "passed": "bool",
    "expected": "string",
    "seen": "string",
    "round": "Int64",
    "tool_call_id": "string",
    "tool": "string",
    "judging_tokens": "Int64",
    "judging_cost_usd": "float64",
}
"""Columns of :meth:`CheckReport.to_frame`, one row per check: what it is (as code reads),
whether it passed, its evidence (``round`` and the call: ``<NA>`` for the run as a whole),
and what judging it cost when it asked a model (``<NA>`` / NaN otherwise)."""


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Every check's result on one run, in the order the checks were given."""

    run: CheckedRun = field(repr=False)
    results: tuple[CheckResult, ...]

    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def passed(self) -> bool:
        """Every check passed."""
        return all(r.passed for r in self.results)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        """The results of the checks that failed."""
        return tuple(r for r in self.results if not r.passed)

    @property
    def judging_usage(self) -> Usage:
        """What judging the checks cost (a model asked by ``llm_judge``): counted apart
        from the run, whose own totals never include it."""
        total = Usage()
        for r in self.results:
            if r.usage is not None:
                total = total + r.usage
        return total

    def headline(self) -> str:
        """``2 of 5 checks failed on run 3f2a… (Answered: 3 tool rounds, …)``."""
        failed = len(self.failures)
        said = (
            f"{failed} of {len(self.results)} checks failed"
            if failed
            else (f"all {len(self.results)} checks passed")
        )
        return (
            f"{said} on run {plain(self.run.run_id, ID_CHARS)} from {plain(self.run.source)} "
            f"({plain(self.run.said)})"
        )

    def text(self, *, failures_only: bool = False) -> str:
        """The report as plain text: its headline, then each check's result (or the
        failed ones only)."""
        shown_ = self.failures if failures_only else self.results
        lines = [self.headline()]
        for r in shown_:
            lines += ["", *r.lines()]
        judging = self.judging_usage
        if judging.requests:
            lines += [
                "",
                f"judging cost {format_tokens(judging.total_tokens)} tokens, "
                f"{format_usd(judging.cost_usd)}, apart from the run's totals",
            ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.text()

    def to_frame(self) -> pd.DataFrame:
        """One row per check (see :data:`REPORT_DTYPES`); pandas is imported here only."""
        import pandas as pd

        cols: dict[str, list[Any]] = {name: [] for name in REPORT_DTYPES}
        for r in self.results:
            usage = r.usage
            cost = None if usage is None else usage.cost_usd
            row = {
                "check": r.description,
                "passed": r.passed,
                "expected": r.expected,
                "seen": r.seen,
                "round": r.round,
                "tool_call_id": r.tool_call_id,
                "tool": None if r.call is None else r.call.name,
                "judging_tokens": None if usage is None else usage.total_tokens,
                "judging_cost_usd": float("nan") if cost is None else float(cost),
            }
            for name, value in row.items():
                cols[name].append(value)
        return pd.DataFrame(
            {name: pd.Series(cols[name], dtype=dtype) for name, dtype in REPORT_DTYPES.items()}
        )


def checks_of(checks: Any, field: str = "checks") -> tuple[Check, ...]:
    """``checks`` (one check, or a collection of them) as a tuple; anything else, or
    none at all, is a ``ConfigurationError`` naming ``field``."""
    if isinstance(checks, Check):
        return (checks,)
    if isinstance(checks, (str, bytes)) or not isinstance(checks, Iterable):
        raise ConfigurationError(
            f"{field} takes checks (a list of called(...), max_tool_rounds(...), ...), got "
            f"{shown(checks)}",
            field=field,
        )
    items = tuple(checks)
    for index, item in enumerate(items):
        if not isinstance(item, Check):
            raise ConfigurationError(
                f"{field}[{index}] is {shown(item)}, not a check: make one with the "
                "constructors of toolloop_lab.checks (called, outcome, max_tokens, ...)",
                field=field,
            )
    if not items:
        raise ConfigurationError(
            f"{field} is empty: give at least one check to judge the run by", field=field
        )
    return items


def _judged(check: Check, run: CheckedRun) -> CheckResult:
    """``check``'s result; a check that raises (one of your own) fails, saying so, and the
    others are still judged."""
    try:
        judged = check.judge(run)
    except Exception as exc:  # noqa: BLE001 - one broken check loses no other result
        seen = clip(f"the check raised {explain(exc)}", TEXT_CHARS)
        return result(check, False, check.describe(), seen)
    if not isinstance(judged, CheckResult):
        return result(check, False, check.describe(), f"judge() returned {shown(judged)}")
    return judged


def evaluate(run: Any, checks: Any, *, run_id: str | None = None) -> CheckReport:
    """Judge ``run`` by ``checks`` and return the report, whatever it says (see
    :func:`verify` for what a run may be). A check that raises fails, saying so."""
    items = checks_of(checks)
    read = read_run(run, run_id)
    return CheckReport(read, tuple(_judged(check, read) for check in items))


def failed_error(report: CheckReport, *, diff: str | None = None) -> ChecksFailed:
    """The error :func:`verify` raises for ``report`` (``diff``: the run compared round by
    round with the run it replays, when a test has one)."""
    message = report.text(failures_only=True)
    if diff:
        message += "\n\nThe run, round by round, against the recorded run (a: recorded):\n" + diff
    return ChecksFailed(message, failures=report.failures, report=report, diff=diff)


def verify(run: Any, checks: Any, *, run_id: str | None = None) -> CheckReport:
    """Judge ``run`` by ``checks``; raise :class:`~toolloop_lab.errors.ChecksFailed` when
    one fails (its message: each failed check's expected, seen and where), else return the
    report.

    ``run`` is anything the package reads as a run: a ``ToolLoopResult``, the error a
    failed run raised (its partial events), a list of events (a bridged or spans-in
    run's), a trace (a path or a ``TraceRead``), or a recording (a path or a
    ``Recording``), which is played back through the loop with its recorded replies and
    tool results. Of several runs, ``run_id`` picks one (by default the newest top-level
    run, as every reader of events does).
    """
    report = evaluate(run, checks, run_id=run_id)
    if not report.passed:
        raise failed_error(report)
    return report
