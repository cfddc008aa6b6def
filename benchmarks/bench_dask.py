"""Sweep throughput here and on a Dask LocalCluster: 1,000 scenarios of 5 rounds each.

Run: ``python benchmarks/bench_dask.py`` (needs the ``toolloop-lab[dask]`` extra; it starts
its own ``LocalCluster``; about 2 minutes, ``--cluster-only`` about 1, ``--quick`` 200
scenarios and one pair, about 30 seconds; ``--scenarios``, ``--rounds``, ``--workers``,
``--concurrency`` vary it). The workload is
``bench_lab.sweep``: scripted models priced as gpt-4o-mini, one ``echo`` call per round.
``--cpu-ms N`` makes each scenario's model factory burn N ms of CPU first, a stand-in for a
local model that needs real compute; ``--tool-cpu-ms N`` makes every ``echo`` call spend N
ms of pure-Python CPU (one process runs either on one core, whatever the concurrency: the
GIL; a cluster spreads it over its workers). ``--batch-size`` overrides the Dask sweep's
automatic batch size.

Four timed sweeps of the same scenarios, each after a 20-scenario warm-up (imports, price
tables and tool caches on every worker):

- local: ``run_scenarios(concurrency=4)`` in this process;
- process pool: ``run_scenarios(executor=ProcessPoolExecutor(workers))``;
- cluster: ``run_scenarios_on_dask`` on a ``LocalCluster`` of ``workers`` processes (its
  scenarios sent in batches, the size printed);
- cluster executor: ``run_scenarios(executor=client.get_executor())`` on the same cluster.

Every remote result is checked against the local frames, and the cluster's speed is given
as a ratio to the local sweep's. Cluster start-up is timed separately and not counted. The
CPU each side spent per scenario is printed too (here: the client and, on a LocalCluster,
the scheduler; the workers; the local sweep), with the ceiling it sets on the ratio: on a
machine with as many cores as workers, the caller's CPU comes out of the workers' share.

It ends with the goals the workload has: the local sweep at least 360 five-round scenarios a
second (the default workload); a two-worker cluster never slower than the local sweep with
cheap scenarios (no ``--cpu-ms`` or ``--tool-cpu-ms``), and at least 1.6x faster with tools
that spend 10 ms of CPU a call (``--tool-cpu-ms 10``). Not part of the test suite: timing
figures live here only.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
from bench_lab import sweep, sweep_goal
from benchkit import Goal, goal, load, print_goals
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab.lab import (
    LabResults,
    Scenario,
    ScriptedModel,
    drop_volatile,
    run_scenarios,
    run_scenarios_on_dask,
)
from toolloop_lab.lab._dask import batch_size_for

CHEAP_GOAL = 1.0
"""With cheap scenarios, a two-worker cluster is never slower than the local sweep."""
TOOL_CPU_GOAL = (10.0, 1.6)
"""With tools that spend this many ms of CPU a call, a two-worker cluster is at least this
many times as fast as the local sweep."""


@dataclass(frozen=True)
class BusyModel:
    """A model factory that burns ``ms`` of CPU before building its scripted model."""

    script: ScriptedModel
    ms: float

    def __call__(self) -> BaseChatModel:
        spin(self.ms)
        return self.script()


def spin(ms: float) -> None:
    """Spend ``ms`` of pure-Python CPU (the GIL held throughout)."""
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


@dataclass(frozen=True)
class BusyTools:
    """A tools factory: ``echo``, spending ``ms`` of pure-Python CPU on every call."""

    ms: float

    def __call__(self) -> list[BaseTool]:
        def echo(text: str) -> str:
            """Echo the text back."""
            spin(self.ms)
            return text

        return [StructuredTool.from_function(echo, name="echo")]


def workload(scenarios: int, rounds: int, cpu_ms: float, tool_ms: float = 0.0) -> list[Scenario]:
    """``bench_lab.sweep``, its models wrapped in :class:`BusyModel` when ``cpu_ms`` > 0 and
    its ``echo`` spending ``tool_ms`` a call when that is > 0."""
    out = sweep(scenarios, rounds)
    if cpu_ms > 0:
        out = [replace(s, model=BusyModel(s.model, cpu_ms)) for s in out]
    if tool_ms > 0:
        out = [replace(s, tools=(), tools_factory=BusyTools(tool_ms)) for s in out]
    return out


def timed(
    label: str, run: Callable[[list[Scenario]], LabResults], scenarios: list[Scenario]
) -> tuple[LabResults, float]:
    """Warm up on 20 scenarios, then time the whole sweep; prints scenarios per second."""
    run(scenarios[:20])
    gc.collect()
    started = time.perf_counter()
    results = run(scenarios)
    elapsed = time.perf_counter() - started
    n = len(scenarios)
    print(f"{label:<18}: {elapsed:6.2f} s  ->  {n / elapsed:7,.0f} scenarios/s", flush=True)
    return results, elapsed


def same(a: LabResults, b: LabResults) -> None:
    """Fail loudly if a remote sweep's frame differs from the local one."""
    pd.testing.assert_frame_equal(drop_volatile(a.runs), drop_volatile(b.runs))


def ceiling(local_cpu: float, here: float, there: float, workers: int) -> str:
    """The most the cluster could gain given the CPU it spent: its workers run side by side,
    but this machine's cores also carry the caller and the scheduler (on a LocalCluster), so
    the speed-up is at most ``cores x local CPU / (workers' + caller's CPU)``, and at most
    ``workers x local CPU / workers' CPU``."""
    cores = os.cpu_count() or 1
    bound = min(cores * local_cpu / (here + there), workers * local_cpu / there)
    return f"ceiling from CPU: {bound:.2f}x the local sweep ({cores} cores, {workers} workers)"


def cluster_goal(ratio: float, workers: int, cpu_ms: float, tool_ms: float) -> list[Goal]:
    """The cluster's goal for this workload, if the project set one."""
    if workers != 2 or cpu_ms > 0:
        return []
    what = "two-worker LocalCluster / local sweep, speed"
    if tool_ms == 0:
        return [goal(f"{what}, cheap scenarios", ratio, at_least=CHEAP_GOAL)]
    if tool_ms == TOOL_CPU_GOAL[0]:
        return [goal(f"{what}, tools spending 10 ms a call", ratio, at_least=TOOL_CPU_GOAL[1])]
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--cpu-ms", type=float, default=0.0)
    parser.add_argument("--tool-cpu-ms", type=float, default=0.0)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument(
        "--repeats", type=int, default=3, help="local/cluster pairs, alternated (median ratio)"
    )
    parser.add_argument(
        "--cluster-only",
        action="store_true",
        help="only the local sweep and run_scenarios_on_dask (no process pool, no executor)",
    )
    parser.add_argument("--quick", action="store_true", help="200 scenarios, one pair")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.repeats = min(args.scenarios, 200), 1

    import dask
    import distributed

    scenarios = workload(args.scenarios, args.rounds, args.cpu_ms, args.tool_cpu_ms)
    print(
        f"python {sys.version.split()[0]}, dask {dask.__version__}, "
        f"{os.cpu_count()} CPUs; {args.scenarios:,} scenarios x {args.rounds} rounds, "
        f"{args.cpu_ms:g} ms of model CPU each, {args.tool_cpu_ms:g} ms of CPU per tool call; "
        f"load {load()}"
    )

    def local_sweep(s: list[Scenario]) -> LabResults:
        return run_scenarios(s, concurrency=args.concurrency, progress=False)

    local_sweep(scenarios[:20])
    local_cpu = time.process_time()
    local, local_s = timed(f"local (conc. {args.concurrency})", local_sweep, scenarios)
    local_cpu = time.process_time() - local_cpu
    assert (local.runs["outcome"] == "final_answer").all()
    goals: list[Goal] = []
    if args.cpu_ms == 0 and args.tool_cpu_ms == 0:
        goals += sweep_goal(len(scenarios) / local_s, args.rounds, args.concurrency)

    if not args.cluster_only:
        ctx: Any = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(args.workers, mp_context=ctx) as pool:
            pooled, _ = timed(
                f"process pool ({args.workers})",
                lambda s: run_scenarios(s, executor=pool, progress=False),
                scenarios,
            )
        same(pooled, local)

    started = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},  # its HTTP server: any free port
    )
    with cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(args.workers)
        print(f"{'cluster start':<18}: {time.perf_counter() - started:6.2f} s (not counted)")
        size = args.batch_size or batch_size_for(len(scenarios), args.workers)
        options = {} if args.batch_size is None else {"batch_size": args.batch_size}

        def on_cluster(s: list[Scenario]) -> LabResults:
            return run_scenarios_on_dask(s, client, progress=False, **options)

        def worker_cpu() -> float:
            return float(sum(client.run(time.process_time).values()))

        on_cluster(scenarios[:20])
        here, there = time.process_time(), worker_cpu()
        on_dask, dask_s = timed(f"cluster ({args.workers} procs)", on_cluster, scenarios)
        here, there = time.process_time() - here, worker_cpu() - there
        n = len(scenarios)
        print(
            f"{'':<18}  CPU per scenario: {here / n * 1e3:.2f} ms here (client and scheduler), "
            f"{there / n * 1e3:.2f} ms in the workers; locally {local_cpu / n * 1e3:.2f} ms"
        )
        print(f"{'':<18}  {ceiling(local_cpu, here, there, args.workers)}")
        same(on_dask, local)
        ratios = [local_s / dask_s]
        for _ in range(args.repeats - 1):  # alternate, so a busy spell hits both alike
            _, again_local = timed("local again", local_sweep, scenarios)
            _, again_dask = timed("cluster again", on_cluster, scenarios)
            ratios.append(again_local / again_dask)
        each = ", ".join(f"{r:.2f}" for r in ratios)
        print(
            f"cluster / local speed: {statistics.median(ratios):.2f}x median of {len(ratios)} "
            f"pairs ({each}); {size} scenarios a task",
            flush=True,
        )
        goals += cluster_goal(
            statistics.median(ratios), args.workers, args.cpu_ms, args.tool_cpu_ms
        )
        if not args.cluster_only:
            executor = client.get_executor(pure=False)
            via_executor, _ = timed(
                "cluster executor",
                lambda s: run_scenarios(s, executor=executor, progress=False),
                scenarios,
            )
            same(via_executor, local)
    print("frames: every remote sweep equals the local one (durations and run ids aside)")
    print(f"load {load()}")
    if goals:
        print_goals(goals)


if __name__ == "__main__":
    main()
