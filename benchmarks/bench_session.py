"""A debugger's session of a thousand runs, one of them 10,000 rounds long: the bounds.

Run: ``python benchmarks/bench_session.py`` (about a minute; ``--quick``, 100 runs and a
1,000-round one, a few seconds; ``--browser`` adds the real chromium figures, about two
more minutes, and needs Debian's chromium, Playwright and JupyterLab). The session is
``tests/browser/streams.py``'s ``session_runs(1_000, 10_000)``: 999 short named runs (every
25th calls a nested agent from its ``research`` tool) and last a run of 10,000 rounds,
60,385 events in all, fed to a ``LoopDebugger`` at the pace of an instant scripted model
(0.5 ms of run time an event, on a fake clock, so the pacing figures are exact and the
timings are this process's).

Kernel side, it prints:

* the observer's cost: µs per event of ``dbg(event)`` (the session's append, the shown
  run's fold, a send request), with a page connected (the messages built, rows included);
* what reaches the page: messages, the most in any one-second window, the bytes sent, and
  the run list's rows sent (only changed rows travel);
* ``LoopDebugger.runs`` over the whole session (every run folded, nested totals linked);
* the saved widget state (what the notebook file keeps: the newest rounds of the run shown
  and the newest rows of the run list), and how many runs it leaves out.

With ``--browser`` it runs ``tests/browser/test_runs_browser.py::
test_a_thousand_runs_stay_fast_small_and_paced`` (JupyterLab in chromium) in a process of
its own and prints its figures: long tasks, DOM nodes in the widget, kernel-to-browser
messages and the saved widget state. Long tasks move with the machine's load: ``load``
says how busy it was.

It ends with the bounds, the browser test's: at most ten messages a second (in the page:
any eleven in a row span at least 0.8 s), widget state under 1,000,000 bytes, and in the
browser no long task (over 50 ms), the debugger's own script under 50 ms in any frame, at
most 3,000 DOM nodes in the widget. Not part of the test
suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import comm  # noqa: E402
from benchkit import Goal, browser_figures, goal, print_goals  # noqa: E402
from browser.streams import session_runs  # noqa: E402
from loopkit import FakeTime, MockComm, channel  # noqa: E402

from toolloop_lab._runview import summaries  # noqa: E402
from toolloop_lab._widget.debugger import LoopDebugger  # noqa: E402
from toolloop_lab._widget.runs import RowFeed, Session  # noqa: E402

RUNS = 1_000
LONG = 10_000
STEP = 0.0005
"""Run time an event takes (an instant scripted model's pace)."""
MESSAGES_A_SECOND = 10
"""The most messages the page gets in any one second."""
SAVED_BYTES = 1_000_000
"""The saved widget state stays under this many bytes."""
ELEVEN_S = 0.8
"""In the page, any eleven messages in a row span at least this long: ten a second, with room
for the jitter of their arrival (trait updates included)."""
MODULE_MS = 50
"""The debugger's own script time in one frame stays under this."""
DOM_NODES = 3_000
"""The most DOM nodes in the widget, the newest run shown or an old one."""


def under_saved(what: str, size: int) -> Goal:
    """The saved widget state against its bound (strictly under)."""
    return Goal(what, f"{size:,} bytes", f"under {SAVED_BYTES:,} bytes", size < SAVED_BYTES)


def kernel_goals(k: dict[str, Any]) -> list[Goal]:
    return [
        goal(
            "kernel side: messages to the page in the busiest second",
            k["busiest_second"],
            at_most=MESSAGES_A_SECOND,
            unit="",
            digits=0,
        ),
        under_saved("kernel side: saved widget state", k["saved_state_bytes"]),
    ]


def browser_goals(b: dict[str, Any]) -> list[Goal]:
    def count(what: str, value: float, most: int) -> Goal:
        return goal(f"browser: {what}", value, at_most=most, unit="", digits=0)

    module = b["module_ms_max"]
    return [
        Goal(
            "browser: long tasks (over 50 ms)",
            f"{b['long_tasks']} (longest {b['longest_task_ms']:.0f} ms)",
            "none",
            b["long_tasks"] == 0,
        ),
        Goal(
            "browser: the debugger's longest script time in one frame",
            f"{module:.0f} ms",
            f"under {MODULE_MS} ms",
            module < MODULE_MS,
        ),
        count("DOM nodes in the widget", b["dom_nodes"], DOM_NODES),
        count("DOM nodes in the widget, an old run shown", b["dom_nodes_old_run_shown"], DOM_NODES),
        goal(
            "browser: the tightest eleven messages in a row span",
            b["tightest_eleven_s"],
            at_least=ELEVEN_S,
            unit=" s",
        ),
        under_saved("browser: saved widget state", b["saved_widget_state_bytes"]),
    ]


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} / {five:.1f} on {os.cpu_count()} CPUs"


def busiest(stamps: list[float]) -> int:
    """The most messages in any one-second window."""
    return max((sum(1 for t in stamps if s <= t < s + 1.0 - 1e-9) for s in stamps), default=0)


def run_list_side(events: list[Any], per_message: int) -> dict[str, float]:
    """What the run list itself costs: recording each event in the session, and at each
    message the summaries folded and the changed rows found (``per_message`` events apart)."""
    session, rows = Session(), RowFeed(20_000)
    record = fold = 0.0
    messages = 0
    for n, event in enumerate(events, 1):
        began = time.perf_counter()
        session.record(event)
        record += time.perf_counter() - began
        if n % per_message == 0 or n == len(events):
            began = time.perf_counter()
            rows.next(session.summaries(), session.left_out, None)
            fold += time.perf_counter() - began
            messages += 1
    return {"record_us": record * 1e6 / len(events), "message_ms": fold * 1e3 / messages}


def kernel_side(runs: int, long: int) -> dict[str, Any]:
    events = session_runs(runs, long)
    comm.create_comm = MockComm
    fake = FakeTime()
    dbg = LoopDebugger(clock=fake.clock, schedule=fake.schedule)
    mock = channel(dbg)
    stamps: list[float] = []
    publish = mock.publish_msg

    def stamped(msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        stamps.append(fake.now)
        publish(msg_type, data, *args, **kwargs)

    mock.publish_msg = stamped  # type: ignore[method-assign]
    mock.from_browser({"type": "hello"})
    spent = 0.0
    for event in events:
        began = time.perf_counter()
        dbg(event)
        fake.advance(STEP)  # the paced sends happen here, counted with the event
        spent += time.perf_counter() - began
    fake.advance(2.0)
    messages = mock.custom()
    began = time.perf_counter()
    every = dbg.runs
    runs_s = time.perf_counter() - began
    began = time.perf_counter()
    again = summaries(events)
    trace_s = time.perf_counter() - began
    assert [s.run_id for s in again][-len(every) :] == [s.run_id for s in every]
    saved = json.dumps(
        {
            "saved_events": dbg.saved_events,
            "saved_omitted": dbg.saved_omitted,
            "saved_runs": dbg.saved_runs,
            "saved_runs_left_out": dbg.saved_runs_left_out,
        }
    )
    dbg.close()
    alone = run_list_side(events, max(1, len(events) // max(1, len(messages))))
    return {
        **alone,
        "events": len(events),
        "us_per_event": spent * 1e6 / len(events),
        "run_seconds": len(events) * STEP,
        "messages": len(messages),
        "published": len(stamps),
        "busiest_second": busiest(stamps),
        "bytes_sent": sum(len(json.dumps(m)) for m in messages),
        "rows_sent": sum(len(m.get("runs", {}).get("rows", [])) for m in messages),
        "runs_kept": len(every),
        "runs_left_out": dbg.runs_left_out,
        "runs_ms": runs_s * 1e3,
        "trace_summaries_ms": trace_s * 1e3,
        "saved_state_bytes": len(saved),
        "saved_rows": len(dbg.saved_runs),
        "saved_rows_left_out": dbg.saved_runs_left_out,
    }


def browser_side() -> dict[str, Any] | None:
    """The browser test's figures (``None`` when it could not run)."""
    data = browser_figures(
        "tests/browser/test_runs_browser.py::test_a_thousand_runs_stay_fast_small_and_paced",
        ROOT / "test-artifacts" / "figures_1000_runs.json",
    )
    if data is None:
        return None
    return {k: v for k, v in data.items() if k not in ("long_task_list", "long_frames")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--long", type=int, default=LONG, help="rounds of the long run")
    parser.add_argument("--browser", action="store_true", help="also run the chromium test")
    parser.add_argument("--quick", action="store_true", help="100 runs, one of 1,000 rounds")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.long = min(args.runs, 100), min(args.long, 1_000)
    print(f"python {sys.version.split()[0]}, {load()}")
    k = kernel_side(args.runs, args.long)
    print(
        f"\nkernel side: {k['events']:,} events, {args.runs:,} runs (one of {args.long:,} rounds)"
        f" over {k['run_seconds']:.0f} s of run time\n"
        f"  observer, page connected:   {k['us_per_event']:.1f} µs per event (the run list's "
        f"part: {k['record_us']:.2f} µs to record it, {k['message_ms']:.2f} ms a message to "
        f"fold the summaries and find the changed rows)\n"
        f"  messages to the page:       {k['messages']:,} ({k['published']:,} with the trait "
        f"updates), busiest second {k['busiest_second']}\n"
        f"  bytes sent:                 {k['bytes_sent']:,}; run list rows sent "
        f"{k['rows_sent']:,} (changed rows only)\n"
        f"  LoopDebugger.runs:          {k['runs_kept']:,} runs kept, {k['runs_left_out']} "
        f"left out, {k['runs_ms']:.1f} ms (summaries of the whole stream: "
        f"{k['trace_summaries_ms']:.0f} ms)\n"
        f"  saved widget state:         {k['saved_state_bytes']:,} bytes; "
        f"{k['saved_rows']} rows kept, {k['saved_rows_left_out']} runs left out"
    )
    goals = kernel_goals(k)
    if args.browser:
        b = browser_side()
        if b is None:
            print("\nbrowser side: the chromium test did not run (see above)")
            print_goals(goals)
            raise SystemExit(1)
        print(
            f"\nbrowser side (JupyterLab, chromium; {load()}):\n"
            f"  long tasks:                 {b['long_tasks']} (longest {b['longest_task_ms']:.0f} "
            f"ms; this module's longest script time in one frame {b['module_ms_max']:.0f} ms)\n"
            f"  DOM nodes in the widget:    {b['dom_nodes']} (an old run shown: "
            f"{b['dom_nodes_old_run_shown']})\n"
            f"  kernel-to-browser messages: {b['messages']} over {b['seconds']:.0f} s, busiest "
            f"second {b['busiest_second']}, tightest eleven in a row "
            f"{b['tightest_eleven_s']:.2f} s\n"
            f"  saved widget state:         {b['saved_widget_state_bytes']:,} bytes "
            f"(notebook {b['notebook_bytes']:,})"
        )
        goals += browser_goals(b)
    print_goals(goals)


if __name__ == "__main__":
    main()
