"""Scenario-lab throughput: 1,000 scenarios of 5 rounds each, then their frames; and the
multi-turn ``files`` workload.

Run: ``python benchmarks/bench_lab.py`` (about 30 seconds; ``--quick``, 200 scenarios and
5 copies of the files sweep, about 10 seconds; ``--scenarios``, ``--rounds``,
``--concurrency`` to vary it). Each scenario is a scripted model priced as gpt-4o-mini that
makes one ``echo`` call per round and answers in the last round, so every run has exactly
``--rounds`` rounds. Two passes: a timed one (no tracing, so the figure is not slowed by
it) and one under tracemalloc for the peak memory of the sweep plus its ``runs`` and
``rounds`` frames. Prints scenarios per second and the peak; the goal (at least 360
five-round scenarios a second at concurrency 4, the sweep alone) is judged on the
default workload.

Then ``--files`` copies of the ``files`` workload's sweep (6 conversations of 2-3 turns
each, tools built from JSON-schema docs around a fresh backend per run, calls in order):
conversations, turns and tool calls per second, and the time to build the ``turns`` and
``tools`` frames (no goal). Not part of the test suite: timing figures live here, never in
tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import time
import tracemalloc

from benchkit import Goal, goal, load, print_goals

from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios
from toolloop_lab.workloads import files_sweep

GOAL_PER_S = 360
"""The fewest five-round scenarios a second the local sweep may run at concurrency 4."""


def sweep_goal(scenarios_per_s: float, rounds: int, concurrency: int) -> list[Goal]:
    """The sweep's goal, where the workload is the one it is set for (else none)."""
    if rounds != 5 or concurrency != 4:
        return []
    what = "local sweep, five-round scenarios at concurrency 4"
    return [goal(what, scenarios_per_s, at_least=GOAL_PER_S, unit=" a second", digits=0)]


def sweep(scenarios: int, rounds: int) -> list[Scenario]:
    """``scenarios`` scenarios with ``rounds`` rounds each (tool calls, then an answer)."""
    out = []
    for i in range(scenarios):
        calls = [
            Reply.call("echo", {"text": f"s{i} r{n}"}, input_tokens=50 + 10 * n, output_tokens=10)
            for n in range(1, rounds)
        ]
        final = Reply.final(f"answer {i}", input_tokens=50 + 10 * rounds, output_tokens=20)
        out.append(Scenario.scripted(f"bench_{i:05d}", [*calls, final]))
    return out


def files(copies: int) -> list[Scenario]:
    """``copies`` copies of the files workload's sweep, each scenario renamed apart."""
    return [
        dataclasses.replace(s, name=f"{s.name}#{k}") for k in range(copies) for s in files_sweep()
    ]


def bench_files(copies: int, concurrency: int) -> None:
    scenarios = files(copies)
    run_scenarios(scenarios[:12], concurrency=concurrency, progress=False)  # warm up
    gc.collect()
    started = time.perf_counter()
    results = run_scenarios(scenarios, concurrency=concurrency, progress=False)
    swept = time.perf_counter() - started
    started = time.perf_counter()
    turns, tools = results.turns, results.tools
    framed = time.perf_counter() - started
    assert turns["outcome"].notna().all()
    n = len(scenarios)
    print(
        f"files workload   : {n:,} conversations, {len(turns):,} turns, "
        f"{len(tools):,} tool calls in {swept:.2f} s  ->  {n / swept:,.0f} conversations/s, "
        f"{len(turns) / swept:,.0f} turns/s, {len(tools) / swept:,.0f} tool calls/s"
    )
    print(f"turns+tools frames: {framed:.2f} s")


def run(scenarios: list[Scenario], concurrency: int) -> tuple[LabResults, float, float]:
    """The sweep's results, its wall time and the time to build its frames."""
    gc.collect()
    started = time.perf_counter()
    results = run_scenarios(scenarios, concurrency=concurrency, progress=False)
    swept = time.perf_counter() - started
    started = time.perf_counter()
    _ = results.runs, results.rounds
    framed = time.perf_counter() - started
    return results, swept, framed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--files", type=int, default=50, help="copies of the files sweep")
    parser.add_argument("--quick", action="store_true", help="200 scenarios, 5 files copies")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.files = min(args.scenarios, 200), min(args.files, 5)
    scenarios = sweep(args.scenarios, args.rounds)
    run(scenarios[:20], args.concurrency)  # warm caches (imports, price lookups)

    results, swept, framed = run(scenarios, args.concurrency)
    runs = results.runs
    assert (runs["outcome"] == "final_answer").all()
    assert (runs["rounds"] == args.rounds).all()
    assert len(results.rounds) == args.scenarios * args.rounds

    gc.collect()
    tracemalloc.start()
    try:
        run(scenarios, args.concurrency)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    n = args.scenarios
    print(
        f"python {sys.version.split()[0]}; {n:,} scenarios x {args.rounds} rounds, "
        f"concurrency {args.concurrency}; load {load()}"
    )
    print(
        f"sweep            : {swept:.2f} s  ->  {n / swept:,.0f} scenarios/s "
        f"({n * args.rounds / swept:,.0f} rounds/s)"
    )
    print(f"runs+rounds frames: {framed:.2f} s")
    print(f"end to end       : {n / (swept + framed):,.0f} scenarios/s")
    print(
        f"peak memory      : {peak / 2**20:.1f} MiB (tracemalloc, sweep + frames), "
        f"{peak / n / 1024:.1f} KiB per scenario"
    )
    print(f"events kept      : {sum(len(r.events) for r in results.records):,}")
    if args.files:
        bench_files(args.files, args.concurrency)
    judged = sweep_goal(n / swept, args.rounds, args.concurrency)
    if judged:
        print_goals(judged)


if __name__ == "__main__":
    main()
