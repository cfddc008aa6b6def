"""The debugger's page on a slow computer: chromium's CPU throttled four times.

Run: ``python benchmarks/bench_browser.py`` (about two minutes; ``--quick``, the live run
only, about one; needs Debian's chromium, Playwright and JupyterLab, as the browser tests
do). It runs ``tests/browser/test_throttled_browser.py`` in a process of its own: JupyterLab
in chromium, the page's CPU slowed four times by the DevTools protocol
(``Emulation.setCPUThrottlingRate``; the kernel runs at full speed), two runs each in a
notebook of its own:

* a live 4-round run of a real ``LLMAgent`` whose replies stream in a word every 40 ms;
* a 10,000-round run fed at the pace of an instant scripted model (60,000 events in ~20 s);
* a live 3,000-round run fed the same way, unthrottled (its goal: no long task over 100 ms).

Then (``--runs``, or by default) ``tests/browser/test_run_list_scale_browser.py``: a file of
10,000 runs (``toolloop-lab view --html``), the run list opened, sorted, filtered and the
shown run switched on the throttled page, five times each; the goal: each action (its
median) at most 100 ms from the action to the frame after it.

For each it prints the long tasks seen while the run streamed in, how long after the run's
end the page read "Finished", and the JavaScript heap after a full collection; then the
goals: no long task over 100 ms, "Finished" within 1 s of the run's end. The run's end is
the kernel's ``time.time()`` in an observer that runs right after the debugger's; the
page's moment is ``performance.timeOrigin + performance.now()`` in the first animation
frame after the badge read "Finished": both this machine's wall clock. Long tasks move with
the machine's load (the test itself asserts them only under ``TOOLLOOP_STRICT_TIMING=1``),
so the load is printed beside each run. Not part of the test suite: timing figures live
here, never in tests.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from benchkit import Goal, browser_figures, goal, print_goals

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/browser/test_throttled_browser.py"
RUNS = {
    "live_4_rounds": "live 4-round run",
    "long_10000_rounds": "10,000-round run",
    "long_3000_rounds_unthrottled": "live 3,000-round run, unthrottled",
}
SCALE_TEST = (
    "tests/browser/test_run_list_scale_browser.py::"
    "test_ten_thousand_runs_open_sort_filter_and_switch_on_a_slow_cpu"
)
ACTION_MS = 100
"""At 10,000 runs, on the throttled page, each action on the run list takes at most this."""
LONGEST_TASK_MS = 100
"""No task on the throttled page may take longer while a run streams in."""
FINISHED_MS = 1_000
"""The page reads "Finished" at most this long after the run's end."""


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs"


def measure(run: str) -> dict[str, Any] | None:
    """The figures of one run of the throttled test (``None`` when it could not run)."""
    return browser_figures(
        f"{TEST}::test_a_run_on_a_four_times_slower_cpu_finishes_on_screen[{run}]",
        ROOT / "test-artifacts" / f"figures_throttled_{run}.json",
    )


def run_list_goals() -> list[Goal]:
    """The 10,000-run list on the throttled page: each action's median against its goal."""
    before = load()
    f = browser_figures(SCALE_TEST, ROOT / "test-artifacts" / "figures_run_list_10000.json")
    if f is None:
        print("\n10,000 runs: the chromium test did not run (see above)")
        return [Goal("10,000 runs", "not measured", f"each action <= {ACTION_MS} ms", False)]
    print(
        f"\n10,000 runs in one file ({f['file_bytes'] / 1e6:.0f} MB), CPU throttled "
        f"{f['cpu_throttling_rate']}x ({before} before, {load()} after); ms from the action "
        f"to the frame after it, median / worst of five (the rows' JSON parse, the "
        f"transport's part: {f['rows_parse_ms']['median']:.0f} ms):"
    )
    goals = []
    for name, ms in f["actions_ms"].items():
        print(f"  {name + ':':40} {ms['median']:6.0f} / {ms['worst']:4.0f}   {ms['all']}")
        goals.append(
            goal(
                f"10,000 runs: {name} (median)",
                ms["median"],
                at_most=ACTION_MS,
                unit=" ms",
                digits=0,
            )
        )
    return goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", choices=list(RUNS), action="append", help="only this run")
    parser.add_argument("--quick", action="store_true", help="the live 4-round run only")
    parser.add_argument("--runs", action="store_true", help="only the 10,000-run list")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; chromium's CPU throttled 4x")
    goals: list[Goal] = []
    if args.runs or not (args.run or args.quick):
        goals += run_list_goals()
    if args.runs:
        print_goals(goals)
        if any(g.figure.startswith("not measured") for g in goals):
            raise SystemExit(1)
        return
    for run in args.run or (["live_4_rounds"] if args.quick else list(RUNS)):
        before = load()
        f = measure(run)
        if f is None:
            print(f"\n{RUNS[run]}: the chromium test did not run (see above)")
            unmeasured = Goal(
                RUNS[run],
                "not measured (the chromium test did not run)",
                f"no task over {LONGEST_TASK_MS} ms, 'Finished' within {FINISHED_MS:,} ms",
                False,
            )
            goals.append(unmeasured)
            continue
        print(
            f"\n{RUNS[run]} ({before} before, {load()} after):\n"
            f"  long tasks:            {f['long_tasks']} over {f['watched_s']:.1f} s, longest "
            f"{f['longest_task_ms']:.0f} ms\n"
            f"  'Finished' after end:  {f['finished_after_end_ms']:.0f} ms\n"
            f"  then a full collection: {f['full_collection_ms']:.0f} ms, leaving "
            f"{f['heap_used_mb']:.1f} MB of JavaScript heap"
        )
        goals += [
            goal(
                f"{RUNS[run]}: longest task",
                f["longest_task_ms"],
                at_most=LONGEST_TASK_MS,
                unit=" ms",
                digits=0,
            ),
            goal(
                f"{RUNS[run]}: 'Finished' after the run's end",
                f["finished_after_end_ms"],
                at_most=FINISHED_MS,
                unit=" ms",
                digits=0,
            ),
        ]
    print_goals(goals)
    if any(g.figure.startswith("not measured") for g in goals):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
