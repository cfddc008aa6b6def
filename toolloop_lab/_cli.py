"""``toolloop-lab`` command. ``demo`` runs the built-in scenario catalog on scripted models
(no API key), prints the spend table and writes a self-contained HTML report;
``demo --workload files`` runs the multi-turn file-system and ticket workload under two
configurations instead, and prints the spend of every turn too. ``check PATH...`` replays
recordings with the checks saved beside them and exits 1 when one fails
(:mod:`toolloop_lab.checks._command`). ``view TRACE --html OUT`` writes the runs of a
JSONL trace as one HTML file that shows them as the debugger does, offline.

Output paths are checked before the sweep runs, so a typo costs no sweep: a path that
cannot be written is one line on stderr and exit status 2, argparse's usage-error status.
A write that still fails afterwards (a full disk) is one line too, and exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

from toolloop_lab._support.paths import resolved

if TYPE_CHECKING:
    from toolloop_lab.lab._scenario import Scenario

DEFAULT_REPORT: Final = "toolloop-lab-report.html"
"""Where ``demo`` writes its report unless ``--out`` says otherwise (in the cwd)."""

WORKLOADS: Final = ("catalog", "files")
"""What ``demo --workload`` runs: the built-in catalog (one turn per scenario), or the
``files`` workload (multi-turn scenarios on a file system and a ticket tracker, under the
``roomy`` and ``tight`` configurations)."""


def _workload(name: str) -> tuple[tuple[Scenario, ...], str]:
    """The scenarios of a workload and its report's title (imported only when run)."""
    if name == "files":
        from toolloop_lab.workloads import files_sweep

        return files_sweep(), "toolloop_lab demo: the files workload (roomy vs tight)"
    from toolloop_lab.lab import catalog

    return catalog(), "toolloop_lab demo: the scenario catalog"


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _unwritable(option: str, path: Path, *, replaced: bool) -> str | None:
    """Why ``path`` cannot be written, or ``None`` when it can.

    ``replaced``: the file is written beside the target and renamed over it (as
    ``LabResults.save`` does), so its directory must take new files and only a regular
    file may be replaced. Writability is tried, not read from permission bits, which
    root ignores while a read-only file system does not.
    """
    where = f"{option} {path}"
    try:
        target = resolved(path)  # a symlink into a missing directory: judged by its target
        if target is None:
            return f"{where}: cannot write there (a symlink loop)"
        if target.is_dir():
            return f"{where}: is a directory"
        parent = target.parent
        if not parent.exists():
            return f"{where}: no such directory: {parent}"
        if not parent.is_dir():
            return f"{where}: {parent} is not a directory"
        if replaced and target.exists() and not target.is_file():
            return f"{where}: not a regular file"
        if target.exists() and not replaced:
            with target.open("ab"):  # opening to append changes neither content nor mtime
                pass
        else:
            handle, probe = tempfile.mkstemp(prefix=".toolloop-lab-", suffix=".probe", dir=parent)
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        return f"{where}: cannot write there ({_reason(exc)})"
    return None


def _reason(exc: BaseException) -> str:
    """The OS's words for ``exc``, never the file name it carries (a temporary sibling)."""
    return (exc.strerror if isinstance(exc, OSError) else None) or type(exc).__name__


def _error(message: str) -> None:
    print(f"toolloop-lab demo: error: {message}", file=sys.stderr)


def _demo(args: argparse.Namespace) -> int:
    out: Path = args.out
    save: Path | None = args.save
    problem = _unwritable("--out", out, replaced=False)
    if problem is None and save is not None:
        problem = _unwritable("--save", save, replaced=True)
        if problem is None and save.resolve() == out.resolve():
            problem = f"--out and --save name the same file: {out.resolve()}"
    if problem is not None:
        _error(problem)
        return 2

    # Plots are drawn on bare matplotlib Figures (no pyplot), so this runs headless.
    from toolloop_lab.lab import run_scenarios

    scenarios, title = _workload(args.workload)
    results = run_scenarios(scenarios, concurrency=args.concurrency, progress=args.progress)
    print(results.spend_table())
    runs = results.runs
    if bool((runs["turns"] > 1).any()):
        print()
        print(results.turn_table())
    print()
    counts = runs["outcome"].value_counts(sort=False)
    print("outcomes: " + ", ".join(f"{name} {int(n)}" for name, n in counts.items() if n))
    status = 0
    if save is not None:
        try:
            print(f"sweep saved: {results.save(save)}")
        except OSError as exc:
            _error(f"--save {save}: cannot write it ({_reason(exc)})")
            status = 1
    try:
        report = results.write_report(out, title=title)
    except OSError as exc:
        _error(f"--out {out}: cannot write it ({_reason(exc)})")
        return 1
    print(f"report: {report}")
    return status


def _check(args: argparse.Namespace) -> int:
    junit: Path | None = args.junit_xml
    if junit is not None:
        problem = _unwritable("--junit-xml", junit, replaced=False)
        if problem is not None:
            print(f"toolloop-lab check: error: {problem}", file=sys.stderr)
            return 2
    from toolloop_lab.checks._command import run_command

    return run_command(args.paths, junit=junit, agent=args.agent)


def _view(args: argparse.Namespace) -> int:
    """``view TRACE --html OUT``: the trace's runs as one self-contained HTML file."""
    out: Path = args.html
    problem = _unwritable("--html", out, replaced=False)
    if problem is not None:
        print(f"toolloop-lab view: error: {problem}", file=sys.stderr)
        return 2
    from toolloop_lab._runview import summaries
    from toolloop_lab._trace import read_trace
    from toolloop_lab._widget.export import chosen, write_runs_html
    from toolloop_lab.errors import ToolLoopLabError
    from toolloop_lab.events import by_run

    try:
        trace = read_trace(args.trace)
        picked = chosen(summaries(trace.events), args.run, where=f"the trace {args.trace}")
    except (ToolLoopLabError, OSError) as exc:
        print(f"toolloop-lab view: error: {exc}", file=sys.stderr)
        return 2
    skipped = len(trace.skipped)
    note = f"{skipped:,} unreadable lines of the trace were skipped." if skipped else None
    try:
        written = write_runs_html(
            out,
            picked,
            by_run(trace.events),
            title=f"Agent runs: {Path(args.trace).name}",
            note=note,
            max_chars=args.max_chars,
        )
    except OSError as exc:
        print(
            f"toolloop-lab view: error: --html {out}: cannot write it ({_reason(exc)})",
            file=sys.stderr,
        )
        return 1
    print(f"view: {written} ({len(picked):,} runs)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolloop-lab`` command."""
    parser = argparse.ArgumentParser(
        prog="toolloop-lab", description=(__doc__ or "").split("\n\n", 1)[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="run the built-in scenario catalog, print its spend and write an HTML report",
        description="Run every catalog scenario (or another workload) on scripted models "
        "priced as gpt-4o-mini, print the spend per scenario (and per turn, for "
        "conversations of several turns) and write a self-contained HTML report.",
        epilog="Exit status: 0 done; 1 the report or the save could not be written after "
        "the sweep; 2 bad arguments or an output path that cannot be written (checked "
        "before the sweep).",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_REPORT),
        metavar="PATH",
        help=f"where to write the HTML report (default: ./{DEFAULT_REPORT})",
    )
    demo.add_argument(
        "--save",
        type=Path,
        default=None,
        metavar="PATH",
        help="also save the sweep as JSONL (LabResults.load reads it back)",
    )
    demo.add_argument(
        "--workload",
        choices=WORKLOADS,
        default="catalog",
        help="catalog: one scenario per loop behaviour (the default); files: multi-turn "
        "chores on a file system and a ticket tracker, under two round caps",
    )
    demo.add_argument(
        "--concurrency", type=_positive_int, default=4, help="scenarios run at once (default: 4)"
    )
    demo.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="hide the progress bar (it goes to stderr)",
    )
    demo.set_defaults(func=_demo)
    check = sub.add_parser(
        "check",
        help="replay recordings with the checks saved beside them; exit 1 when one fails",
        description="Replay each recording (a .jsonl file with its checks in a .checks.json "
        "beside it, a checks file, or a folder searched for them) through the loop, with its "
        "recorded replies and tool results (or the agent its checks file names), and judge "
        "it by its checks. Prints PASS, FAIL with each failed check's expected, seen and "
        "where, or ERROR with why a recording could not be judged.",
        epilog="Exit status: 0 every check passed; 1 a check failed, a replay left its "
        "recording or a recording could not be judged; 2 bad arguments.",
    )
    check.add_argument(
        "paths", nargs="+", metavar="PATH", help="recordings, checks files or folders"
    )
    check.add_argument(
        "--junit-xml",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the results as JUnit XML (one test case per check)",
    )
    check.add_argument(
        "--agent",
        default=None,
        metavar="MODULE:FUNCTION",
        help="replay with the LLMAgent this function builds on the replay's model (your real "
        "tools) instead of the agent the checks file names, or the recorded tool results",
    )
    check.set_defaults(func=_check)
    view = sub.add_parser(
        "view",
        help="write a trace's runs as one HTML file that shows them offline",
        description="Write the runs of a JSONL trace as one self-contained HTML file: the "
        "debugger's view (the run list, every round, call and message), its code, styles and "
        "events inside, opened offline in any browser with no kernel, package or network.",
        epilog="Exit status: 0 written; 1 the file could not be written; 2 bad arguments, a "
        "trace that cannot be read, a run it does not hold or a path that cannot be written.",
    )
    view.add_argument("trace", type=Path, metavar="TRACE", help="a JSONL trace (TraceWriter's)")
    view.add_argument(
        "--html", type=Path, required=True, metavar="OUT", help="where to write the HTML file"
    )
    view.add_argument(
        "--run",
        action="append",
        default=None,
        metavar="RUN_ID",
        help="only this run (repeat for more; default: every run of the trace)",
    )
    view.add_argument(
        "--max-chars",
        type=_positive_int,
        default=20_000,
        help="the longest text kept of a message or result, as the debugger keeps it "
        "(default: 20000)",
    )
    view.set_defaults(func=_view)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
