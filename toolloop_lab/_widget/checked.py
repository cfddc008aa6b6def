"""The checks a person gave a debugger, judged on each run that ends.

``LoopDebugger(checks=[...])`` or ``dbg.checks = [...]``: each top-level run that ends is
judged (:func:`toolloop_lab.checks.evaluate`, on the run's events as the session keeps
them), its :class:`~toolloop_lab.checks.CheckReport` kept by run id
(:meth:`LoopDebugger.check_report`). The run list's rows carry a small mark
(:func:`mark_of`: passed, how many failed, the rounds a failed check's evidence names);
the page draws it beside the run's outcome and on those rounds. Setting the checks again
judges every run kept again, so the marks always say what the checks given now say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from toolloop_lab._support.escape import clip
from toolloop_lab.events import Event

if TYPE_CHECKING:
    from toolloop_lab.checks import Check, CheckReport

MARK_TEXT_CHARS: Final = 300
"""The longest expected or seen text a mark carries to the page."""
MARK_FAILURES: Final = 20
"""Failed checks a mark carries at most (a run with more says how many)."""


def mark_of(report: CheckReport) -> dict[str, Any]:
    """A report as a run row's ``checks`` field: small, JSON, every string clipped."""
    failures = report.failures
    return {
        "passed": report.passed,
        "total": len(report.results),
        "failed": len(failures),
        "failures": [
            {
                "check": clip(f.check.describe(), MARK_TEXT_CHARS),
                "round": f.round,
                "expected": clip(f.expected, MARK_TEXT_CHARS),
                "seen": clip(f.seen, MARK_TEXT_CHARS),
            }
            for f in failures[:MARK_FAILURES]
        ],
    }


class RunChecks:
    """The checks given, and each judged run's report and mark."""

    def __init__(self) -> None:
        self.checks: tuple[Check, ...] = ()
        self.reports: dict[str, CheckReport] = {}
        self.marks: dict[str, dict[str, Any]] = {}
        self.version = 0
        """Grows whenever the marks change as a whole (the page gets every row again)."""

    def give(self, checks: Any) -> None:
        """Take new checks (refused as :func:`~toolloop_lab.checks.verify` refuses them)."""
        from toolloop_lab.checks._report import checks_of

        self.checks = checks_of(checks) if checks is not None else ()
        self.reports.clear()
        self.marks.clear()
        self.version += 1

    def judge(self, run_id: str, events: list[Event] | tuple[Event, ...]) -> None:
        """Judge one ended run (nothing when no checks are given)."""
        if not self.checks or not events:
            return
        from toolloop_lab.checks._report import evaluate

        report = evaluate(list(events), self.checks, run_id=run_id)
        self.reports[run_id] = report
        self.marks[run_id] = mark_of(report)

    def forget(self, kept: set[str]) -> None:
        """Drop what is kept of runs the session no longer keeps (bounded memory)."""
        for run_id in [r for r in self.reports if r not in kept]:
            del self.reports[run_id]
            self.marks.pop(run_id, None)
