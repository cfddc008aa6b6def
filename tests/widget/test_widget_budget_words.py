"""A run the USD limit stopped reads right in every Python view: the text repr, the static
snapshot and the lab's report say how many calls were paid for and what never ran (from
the events, never from the round count, which undercounts), give the stop its own status
word (it is no failure), and say why the spend is over the limit.

The browser says the same from the same words file: ``tests/widget/test_widget_parity.py``
holds the two folds' words together, ``tests/js/budget.test.mjs`` the page.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import functools
import re

from jskit import usd_stop_mid_run
from loopkit import catalog_run

from toolloop_lab import RunView
from toolloop_lab._support.words import BUDGET_STOP, OUTCOME, STATUS, shown_status
from toolloop_lab._widget import figures
from toolloop_lab._widget.snapshot import snapshot_html
from toolloop_lab._widget.text import summary_text
from toolloop_lab.lab import catalog, run_scenarios

MID_RUN = "Stopped by the USD limit after 4 paid calls; round 4's 2 tool calls did not run"
OVER = "the budget is checked after each call, so the last call can overshoot it"


@functools.cache
def _mid_run() -> RunView:
    """Four paid calls, the fourth over the limit; round 4 asked for two tools."""
    return RunView.from_events(usd_stop_mid_run())


def test_a_usd_stop_says_its_paid_calls_and_what_never_ran() -> None:
    view = _mid_run()
    assert view.failure is not None
    assert view.failure.rounds == 3  # the rounds it finished: "after 3 rounds" was wrong
    assert figures.budget_stop(view) == MID_RUN
    assert figures.outcome(view) == MID_RUN
    assert figures.budget_stop(view, offset=10).endswith("round 14's 2 tool calls did not run")


def test_each_way_a_usd_stop_ends_reads_from_its_events() -> None:
    said = {
        name: figures.budget_stop(RunView.from_events(catalog_run(name).events))
        for name in ("usd_budget", "pruning_skipped_after_budget")
    }
    assert said == {
        # the second call answered, and the run stopped instead of returning it
        "usd_budget": "Stopped by the USD limit after 2 paid calls; round 2's reply was not used",
        # the first call asked for a tool; the limit was passed before it could run
        "pruning_skipped_after_budget": (
            "Stopped by the USD limit after 1 paid call; round 1's tool call did not run"
        ),
    }
    other = RunView.from_events(catalog_run("model_exception").events)
    assert figures.budget_stop(other) is None
    assert figures.outcome(other) == OUTCOME["failed"]


def test_a_usd_stop_has_its_own_status_word() -> None:
    assert shown_status("failed", "usd_budget_exhausted") == "usd_budget_exhausted"
    assert shown_status("failed", "failed") == "failed"
    assert shown_status("finished", "final_answer") == "finished"
    assert STATUS["usd_budget_exhausted"] != STATUS["failed"]


def test_the_text_view_of_a_usd_stop() -> None:
    text = summary_text(_mid_run())
    lines = text.splitlines()
    assert lines[0].startswith(f"LoopDebugger: {STATUS['usd_budget_exhausted']} · ")
    assert "failed" not in text
    assert "after 3 rounds" not in text
    assert f"outcome: {MID_RUN}" in lines
    over = next(line for line in lines if OVER in line)
    assert re.fullmatch(rf"over the limit by \d+\.\d%: {OVER}", over)
    assert "hostile: not run (USD limit reached), hostile: not run (USD limit reached)" in text
    assert lines[-1].startswith("stopped: ExecutionError kind=cost reason=budget_exhausted: ")


def test_the_snapshot_of_a_usd_stop() -> None:
    html = snapshot_html(_mid_run())
    assert f"Agent loop debugger: {STATUS['usd_budget_exhausted']}</b>" in html
    assert "Stopped by the USD limit after 4 paid calls; round 4&#x27;s 2 tool calls" in html
    assert " of the USD limit $" in html
    assert OVER in html
    assert "failed" not in html
    assert " rounds ·" not in html


def test_the_report_of_a_usd_stop_is_no_failure() -> None:
    sweep = [s for s in catalog() if s.name == "usd_budget"]
    html = run_scenarios(sweep, progress=False).report_html()
    assert (
        '<p class="stopped"><b>Stopped by the USD limit after 2 paid calls; '
        "round 2&#x27;s reply was not used</b></p>"
    ) in html
    assert "<b>Failed</b>" not in html
    assert f"over the limit by 36.8%: {OVER}" in html


def test_a_figure_over_its_limit_says_why() -> None:
    assert figures.overshoot(126, 100) == f"over the limit by 26.0%: {BUDGET_STOP['overshoot']}"
    assert figures.overshoot(100, 100) is None
    assert figures.overshoot(None, 100) is None
    assert figures.overshoot(5, None) is None
