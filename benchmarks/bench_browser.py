"""The debugger's page on a slow computer: chromium's CPU throttled four times.

Run: ``python benchmarks/bench_browser.py`` (about two minutes; needs Debian's chromium,
Playwright and JupyterLab, as the browser tests do). It runs
``tests/browser/test_throttled_browser.py``: JupyterLab in chromium, the page's CPU slowed
four times by the DevTools protocol (``Emulation.setCPUThrottlingRate`` on the page's CDP
session; the kernel runs at full speed), two runs each in a notebook of its own:

* a live 4-round run of a real ``LLMAgent`` whose replies stream in a word every 40 ms;
* a 10,000-round run fed at the pace of an instant scripted model (60,000 events in ~20 s).

For each it prints the long tasks seen while the run streamed in (the goal: none over
100 ms) and how long after the run's end the page read "Finished" (the goal: within 1 s).
The run's end is the kernel's ``time.time()`` in an observer that runs right after the
debugger's, when the run's last event was handled; the page's moment is
``performance.timeOrigin + performance.now()`` in the first animation frame after the badge's
text became "Finished". Both read this machine's wall clock, so no offset is needed. Long
tasks and the end-to-"Finished" time move with the machine's load: ``load`` says how busy it
was (the test itself asserts them only under ``TOOLLOOP_STRICT_TIMING=1``).

Measured on a shared 2-core machine (other jobs kept its load at 2-5 throughout; it never
fell under 1.5 in the hour this was measured), the bundle before the page's work was sliced
and after, minutes apart; ``load`` is ``uptime``'s one-minute figure when the run began:

=====================  ==================  ===================  ========================
run (4x throttled)     load                long tasks, longest  "Finished" after the end
=====================  ==================  ===================  ========================
4 rounds, before       3.4 (07:15)         17, 303 ms           1,003 ms
4 rounds, after        2.6 (07:18)         14, 93 ms            339 ms
10,000 rounds, before  3.2 (07:16)         89, 594 ms           5,333 ms
10,000 rounds, after   2.2 (07:18)         111, 252 ms          522 ms
4 rounds, before       2.0 (07:07)         16, 282 ms           301 ms
4 rounds, after        3.6 (07:08)         20, 170 ms           443 ms
10,000 rounds, before  2.7 (07:07)         97, 557 ms           7,793 ms
10,000 rounds, after   4.7 (07:09)         112, 358 ms          659 ms
=====================  ==================  ===================  ========================

"Finished" now comes within the second (before, the 10,000-round run's fold fell 5-8 s
behind: its slices were chained with ``setTimeout(0)``, which waits 4 ms a link after the
fifth, and each draw's canvas text made the page work out its styles mid-draw). The longest
task halved but is still over the 100 ms goal under this load: what remains is mostly the
page laying out and painting what a draw wrote (thirteen new rows and the newest round's
detail several times a second, in JupyterLab's stylesheet), garbage collection, and
JupyterLab's own handling of each message.

Not part of the test suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TEST = "tests/browser/test_throttled_browser.py"
RUNS = {"live_4_rounds": "live 4-round run", "long_10000_rounds": "10,000-round run"}


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs"


def measure(run: str) -> dict[str, Any] | None:
    """The figures of one run of the throttled test (``None`` when it could not run)."""
    figures = ROOT / "test-artifacts" / f"figures_throttled_{run}.json"
    figures.unlink(missing_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-s",
            f"{TEST}::test_a_run_on_a_four_times_slower_cpu_finishes_on_screen[{run}]",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=1_200,
        check=False,
    )
    if done.returncode != 0 or not figures.exists():
        print(done.stdout[-3000:], done.stderr[-2000:])
        return None
    data: dict[str, Any] = json.loads(figures.read_text())
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--run", choices=list(RUNS), action="append", help="only this run")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; chromium's CPU throttled 4x")
    for run in args.run or list(RUNS):
        before = load()
        f = measure(run)
        if f is None:
            print(f"\n{RUNS[run]}: the chromium test did not run (see above)")
            continue
        print(
            f"\n{RUNS[run]} ({before} before, {load()} after):\n"
            f"  long tasks:            {f['long_tasks']} over {f['watched_s']:.1f} s, longest "
            f"{f['longest_task_ms']:.0f} ms (goal: none over 100 ms)\n"
            f"  'Finished' after end:  {f['finished_after_end_ms']:.0f} ms (goal: 1,000 ms)"
        )


if __name__ == "__main__":
    main()
