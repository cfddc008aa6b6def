"""Runs back to back, as a notebook or a sweep makes them: what the garbage collector costs.

Run: ``python benchmarks/bench_collector.py`` (about a minute), or with ``--against DIR``
(another checkout) to put its figures beside this checkout's, the two alternated in fresh
interpreters ``--repeats`` times. ``bench_loop.py`` collects the heap before every timed run,
so what a run leaves for the collector never reaches the next one; here nothing is
collected between runs. Each interpreter makes ``--runs`` runs of ``--rounds`` rounds of
one ``bench_loop.py`` variant (the floor, or ``LLMAgent`` with events on), each dropped
when it ends, and prints: CPU µs per round; the collector's time per round and its
collections, by generation (``gc.callbacks``); the objects it found unreachable per run
(a run held by a reference cycle is freed only by the collector, after surviving its young
generations); and the objects it tracks after the last run (flat when runs are freed).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VARIANTS = ("floor", "events")


def inner(root: Path, variant: str, runs: int, rounds: int) -> dict[str, Any]:
    """In a fresh interpreter: the figures of ``runs`` back-to-back runs of ``variant``."""
    sys.path[:0] = [str(root), str(root / "benchmarks")]  # that checkout, not the install
    import bench_loop
    from benchkit import RUNNER

    make = {"floor": bench_loop.floor, "events": bench_loop.agent_events}[variant]
    RUNNER.run(make(10))  # first-use costs: lazy imports, caches
    gc.collect()
    tracked_before = len(gc.get_objects())
    spent = [0.0, 0.0, 0.0]
    counts = [0, 0, 0]
    found = [0]
    began = [0.0]

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
            return
        generation = info["generation"]
        spent[generation] += time.perf_counter() - began[0]
        counts[generation] += 1
        found[0] += info["collected"]

    gc.callbacks.append(watch)
    cpu = time.process_time()
    for _ in range(runs):
        RUNNER.run(make(rounds))
    cpu = time.process_time() - cpu
    gc.callbacks.remove(watch)
    total = runs * rounds
    return {
        "cpu_us_per_round": cpu / total * 1e6,
        "gc_us_per_round": [s / total * 1e6 for s in spent],
        "collections": counts,
        "unreachable_per_run": found[0] / runs,
        "tracked_growth": len(gc.get_objects()) - tracked_before,
    }


def measure(root: Path, variant: str, runs: int, rounds: int) -> dict[str, Any]:
    """One fresh interpreter's figures for the checkout at ``root``."""
    args = [sys.executable, __file__, "--inner", str(root), variant, str(runs), str(rounds)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    figures: dict[str, Any] = json.loads(out.stdout)
    return figures


def report(label: str, variant: str, rows: list[dict[str, Any]]) -> None:
    def med(key: str, index: int | None = None) -> float:
        values = [r[key] if index is None else r[key][index] for r in rows]
        return statistics.median(values)

    print(
        f"{label:8s} {variant:7s} {med('cpu_us_per_round'):8.1f} "
        f"{med('gc_us_per_round', 0):6.2f} {med('gc_us_per_round', 1):6.2f} "
        f"{med('gc_us_per_round', 2):6.2f}   "
        f"{med('collections', 0):5.0f} {med('collections', 1):4.0f} {med('collections', 2):3.0f}"
        f"  {med('unreachable_per_run'):9.0f} {med('tracked_growth'):10.0f}"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        root, variant, runs, rounds = sys.argv[2:6]
        print(json.dumps(inner(Path(root), variant, int(runs), int(rounds))))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--against", type=Path, help="another checkout, measured alongside")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from benchkit import load  # here, not above: --inner must import the measured checkout's

    roots = {"this": HERE.parent}
    if args.against is not None:
        roots = {"against": args.against.resolve(), **roots}
    results: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.repeats):  # alternated, so drift and load hit every column alike
        for label, root in roots.items():
            for variant in VARIANTS:
                figures = measure(root, variant, args.runs, args.rounds)
                results.setdefault((label, variant), []).append(figures)
    print(
        f"{args.runs} runs of {args.rounds} rounds back to back, no collection between them; "
        f"medians of {args.repeats} fresh interpreters each (load {load()})\n"
    )
    print(
        f"{'checkout':8s} {'variant':7s} {'CPU µs':>8s} {'collector µs/round':>20s}   "
        f"{'collections':>14s}  {'unreachable':>9s} {'tracked':>10s}"
    )
    print(
        f"{'':8s} {'':7s} {'a round':>8s} {'gen 0':>6s} {'gen 1':>6s} {'gen 2':>6s}   "
        f"{'0':>5s} {'1':>4s} {'2':>3s}  {'a run':>9s} {'growth':>10s}"
    )
    for (label, variant), rows in results.items():
        report(label, variant, rows)


if __name__ == "__main__":
    main()
