"""``toolloop-lab`` command. ``demo`` runs the built-in scenario catalog on scripted models
(no API key), prints the spend table and writes a self-contained HTML report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_REPORT", "main"]

DEFAULT_REPORT: Final = "toolloop-lab-report.html"
"""Where ``demo`` writes its report unless ``--out`` says otherwise (in the cwd)."""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _demo(args: argparse.Namespace) -> int:
    # Plots are drawn on bare matplotlib Figures (no pyplot), so this runs headless.
    from toolloop_lab.lab import catalog, run_scenarios

    results = run_scenarios(catalog(), concurrency=args.concurrency, progress=args.progress)
    print(results.spend_table())
    runs = results.runs
    print()
    counts = runs["outcome"].value_counts(sort=False)
    print("outcomes: " + ", ".join(f"{name} {int(n)}" for name, n in counts.items() if n))
    if args.save is not None:
        print(f"sweep saved: {results.save(args.save)}")
    report = results.write_report(args.out, title="toolloop_lab demo: the scenario catalog")
    print(f"report: {report}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolloop-lab`` command."""
    parser = argparse.ArgumentParser(prog="toolloop-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="run the built-in scenario catalog, print its spend and write an HTML report",
        description="Run every catalog scenario on scripted models priced as gpt-4o-mini, "
        "print the spend per scenario and write a self-contained HTML report.",
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
        "--concurrency", type=_positive_int, default=4, help="scenarios run at once (default: 4)"
    )
    demo.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="hide the progress bar (it goes to stderr)",
    )
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
