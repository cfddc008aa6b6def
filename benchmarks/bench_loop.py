"""Per-round overhead of LLMAgent against the bare langchain-core loop (the floor).

Run: ``python benchmarks/bench_loop.py`` (about 5 minutes on a busy 2-core machine; add
``--quick`` for a short smoke run). Every loop variant drives the same instant chat model,
``benchkit.InstantChatModel`` (written in the benchmark, not the package, so no model of
ours can move the floor; its script stays out of its ``repr``, which langchain-core takes
once per model and which no provider's model fills with a whole run's replies), making one
``echo`` tool call per round, in one process and one
event loop, with the variants interleaved repeat by repeat so drift and other processes'
load hit all of them alike. For 10, 100 and 1,000 rounds it prints µs per round (wall-clock
median and min-max, plus the median CPU time of this process, which other processes' load
barely moves), the ratio to the floor, the ratio of the 1,000-round to the 10-round figure
against the floor's own growth, and the tracemalloc peak per round. Then two throughputs:
events per second a headless ``LoopDebugger`` absorbs from a pre-recorded stream, and
scenarios per second of ``run_scenarios`` (the workload of ``bench_lab.py``, smaller). It
ends with the goals of issue 29, met or missed, judged on the CPU-time medians (the loops do
no I/O, so on a shared machine CPU time is what wall time would be on an idle one; the
wall/CPU line shows how much other processes' load inflated the wall figures), and the load
average. Not part of the test suite: timing targets live here, never in tests.

The debugger variant attaches one ``LoopDebugger`` (built once, as in a notebook, where it
is displayed once and watches run after run); building one costs ~60 ipywidgets and is
reported on its own line, as a one-off cost, not per round.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import itertools
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchkit import RUNNER, Cell, InstantChatModel, load, peak_per_round, script, time_once
from langchain_core.messages import BaseMessage, HumanMessage

from toolloop_lab import AgentConfig, LLMAgent, echo_tool
from toolloop_lab.events import Event, LoopFinished, LoopStarted, RoundStarted

Variant = Callable[[int], Coroutine[Any, Any, None]]

SIZES = (10, 100, 1000)
REPEATS = {10: 41, 100: 15, 1000: 9}
"""Interleaved repeats per size (``--quick`` takes a quarter, at least 3)."""
BUDGET_S = 480.0
"""Loop timings stop adding repeats (keeping at least 3 per size) past this many seconds, so
the whole benchmark stays under 10 minutes however loaded the machine is."""


def _model(rounds: int) -> InstantChatModel:
    return InstantChatModel(replies=script(rounds, "done"))


async def floor(rounds: int) -> None:
    """The bare loop over langchain-core ``ainvoke`` (model and tool)."""
    tool = echo_tool()
    bound = _model(rounds).bind_tools([tool])
    messages: list[BaseMessage] = [HumanMessage("go")]
    while True:
        reply = await bound.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            messages.append(await tool.ainvoke({**call, "type": "tool_call"}))


def _agent(rounds: int, observers: tuple[Any, ...] = ()) -> LLMAgent:
    config = AgentConfig(tool_max_rounds=rounds + 1)
    return LLMAgent(_model(rounds), [echo_tool()], config, observers=observers)


async def agent_events(rounds: int) -> None:
    """LLMAgent with events on and no observers."""
    await _agent(rounds).arun("go")


_TRACE_DIR = tempfile.TemporaryDirectory(prefix="bench_loop_")
_TRACES = itertools.count()


async def agent_trace(rounds: int) -> None:
    """LLMAgent writing a JSONL trace (``TraceWriter`` defaults: no fsync)."""
    from toolloop_lab import TraceWriter

    path = Path(_TRACE_DIR.name) / f"trace{next(_TRACES)}.jsonl"
    writer = TraceWriter(path)
    try:
        await _agent(rounds, (writer,)).arun("go")
    finally:
        writer.close()
        path.unlink()


_DEBUGGER: list[Any] = []
"""The one debugger the widget variant attaches to every run (built on first use)."""


def _debugger() -> Any:
    from toolloop_lab._widget.debugger import LoopDebugger

    if not _DEBUGGER:
        _DEBUGGER.append(LoopDebugger())
    return _DEBUGGER[0]


async def agent_widget(rounds: int) -> None:
    """LLMAgent with a LoopDebugger attached (observer and pause hook), headless."""
    agent = _agent(rounds)
    detach = agent.subscribe(_debugger())  # connects it: observer and pause hook
    try:
        await agent.arun("go")
    finally:
        detach()


async def create_agent_loop(rounds: int) -> None:
    """langchain's ``create_agent`` on the same model and tool."""
    from langchain.agents import create_agent

    graph = create_agent(_model(rounds), [echo_tool()])
    await graph.ainvoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 2 * rounds + 10})


FLOOR = "floor (bare langchain-core loop)"
EVENTS = "LLMAgent, events on"
TRACE = "LLMAgent + JSONL trace"
WIDGET = "LLMAgent + LoopDebugger"
CREATE_AGENT = "langchain create_agent"

VARIANTS: dict[str, Variant] = {
    FLOOR: floor,
    EVENTS: agent_events,
    TRACE: agent_trace,
    WIDGET: agent_widget,
    CREATE_AGENT: create_agent_loop,
}


def _available(name: str, variant: Variant) -> bool:
    try:
        RUNNER.run(variant(2))
    except ImportError as exc:
        print(f"skipping {name}: {exc}", file=sys.stderr)
        return False
    return True


def measure_loops(
    variants: dict[str, Variant], sizes: Sequence[int], quick: bool, budget_s: float
) -> tuple[dict[tuple[str, int], Cell], list[str]]:
    """Interleaved timings, then one tracemalloc pass, per size."""
    cells: dict[tuple[str, int], Cell] = {(n, r): Cell() for n in variants for r in sizes}
    notes: list[str] = []
    started = time.perf_counter()
    for index, rounds in enumerate(sizes):
        wanted = REPEATS.get(rounds, 3)
        if quick:
            wanted = max(3, wanted // 4)
        # Later sizes get what is left of the budget, shared by what they still need.
        left = budget_s - (time.perf_counter() - started)
        weights = [(r + 100) * REPEATS.get(r, 3) for r in sizes[index:]]  # ~fixed cost per run
        deadline = time.perf_counter() + left * weights[0] / sum(weights)
        done = 0
        names = list(variants)
        for done in range(1, wanted + 1):
            shift = done % len(names)  # rotate the order too, so no variant always runs first
            for name in names[shift:] + names[:shift]:
                variant = variants[name]
                wall, cpu = time_once(partial(variant, rounds), rounds)
                cells[(name, rounds)].wall.append(wall)
                cells[(name, rounds)].cpu.append(cpu)
            if done >= 3 and time.perf_counter() > deadline:
                break
        if done < wanted:
            notes.append(f"{rounds} rounds: {done} of {wanted} repeats (time budget)")
        for name, variant in variants.items():
            cells[(name, rounds)].peak = peak_per_round(partial(variant, rounds), rounds)
        print(
            f"  {rounds:>5} rounds: {done} interleaved repeats, "
            f"{time.perf_counter() - started:.0f} s so far",
            file=sys.stderr,
        )
    return cells, notes


# -- widget throughput ---------------------------------------------------------------------
def _stream(events: Sequence[Event], rounds: int) -> list[Event]:
    """A run of ``rounds`` rounds, built from one recorded round of ``events``."""
    start = next(e for e in events if isinstance(e, LoopStarted))
    end = next(e for e in events if isinstance(e, LoopFinished))
    first = next(e.round for e in events if isinstance(e, RoundStarted))
    one_round = [e for e in events if e.round == first]
    out: list[Event] = [dataclasses.replace(start, max_rounds=rounds + 1)]
    for n in range(1, rounds + 1):
        out.extend(dataclasses.replace(e, round=n, t=n * 1e-3) for e in one_round)
    out.append(dataclasses.replace(end, round=rounds + 1, rounds=rounds))
    return out


def measure_widget(events_wanted: int, repeats: int) -> dict[str, float]:
    """Events per second a fresh headless LoopDebugger (and a bare RunView) fold in."""
    from toolloop_lab import RunView
    from toolloop_lab._widget.debugger import LoopDebugger

    recorded = RUNNER.run(_agent(3).arun("go")).events
    per_round = sum(1 for e in recorded if e.round == 1)
    stream = _stream(recorded, max(1, events_wanted // per_round))
    widget_rates, view_rates, draws = [], [], 0
    built: list[float] = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        debugger = LoopDebugger()
        built.append(time.perf_counter() - t)
        t = time.perf_counter()
        for event in stream:
            debugger(event)
        widget_rates.append(len(stream) / (time.perf_counter() - t))
        draws = debugger.draws
        assert debugger.view.status == "finished"
        assert debugger.redraw_requests >= len(stream)
        debugger.close()
        gc.collect()
        t = time.perf_counter()
        RunView.from_events(stream)
        view_rates.append(len(stream) / (time.perf_counter() - t))
    tracemalloc.start()
    try:
        LoopDebugger().close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {
        "events": len(stream),
        "widget": statistics.median(widget_rates),
        "widget_min": min(widget_rates),
        "widget_max": max(widget_rates),
        "view": statistics.median(view_rates),
        "draws": draws,
        "build_ms": statistics.median(built) * 1e3,
        "build_kib": peak / 1024,
    }


# -- scenario lab throughput ---------------------------------------------------------------
def measure_lab(scenarios: int, rounds: int, concurrency: int, repeats: int) -> dict[str, float]:
    """Scenarios per second of ``run_scenarios`` (the workload of ``bench_lab.py``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_lab import run, sweep

    batch = sweep(scenarios, rounds)
    run(batch[:20], concurrency)  # warm caches (imports, price lookups)
    swept, total = [], []
    for _ in range(repeats):
        results, s, f = run(batch, concurrency)
        assert (results.runs["rounds"] == rounds).all()
        swept.append(scenarios / s)
        total.append(scenarios / (s + f))
    return {
        "sweep": statistics.median(swept),
        "sweep_min": min(swept),
        "sweep_max": max(swept),
        "end_to_end": statistics.median(total),
    }


# -- report --------------------------------------------------------------------------------
def _goals(cells: dict[tuple[str, int], Cell], sizes: Sequence[int]) -> list[tuple[str, str, bool]]:
    """Each goal of issue 29 on the CPU-time medians (see ``main`` for why)."""

    def cpu(name: str, rounds: int) -> float:
        return cells[(name, rounds)].cpu_median

    def ratio(name: str, rounds: int) -> float:
        return cpu(name, rounds) / cpu(FLOOR, rounds)

    goals: list[tuple[str, str, bool]] = []
    have = {n for n, _r in cells}
    for name, limit in ((EVENTS, 1.15), (TRACE, 1.25), (WIDGET, 1.20)):
        if name in have:
            worst = max(ratio(name, r) for r in sizes)
            goals.append((f"{name} <= {limit}x floor", f"worst {worst:.2f}x", worst <= limit))
    lo, hi = min(sizes), max(sizes)
    if lo != hi:
        base = cpu(FLOOR, hi) / cpu(FLOOR, lo)
        for name in (EVENTS, TRACE, WIDGET):
            if name in have:
                g = cpu(name, hi) / cpu(name, lo) / base
                goals.append(
                    (f"growth {hi} vs {lo} rounds <= 1.2x floor's: {name}", f"{g:.2f}", g <= 1.2)
                )
    if EVENTS in have and CREATE_AGENT in have:
        worst = min(cpu(CREATE_AGENT, r) / cpu(EVENTS, r) for r in sizes)
        goals.append(("create_agent / LLMAgent >= 2x", f"worst {worst:.2f}x", worst >= 2))
    for name in (EVENTS, TRACE, WIDGET):
        if name in have:
            worst = max(cells[(name, r)].peak / cells[(FLOOR, r)].peak for r in sizes)
            goals.append(
                (f"memory per round <= 2x floor: {name}", f"worst {worst:.2f}x", worst <= 2)
            )
    return goals


def report(
    cells: dict[tuple[str, int], Cell], variants: Sequence[str], sizes: Sequence[int]
) -> None:
    header = (
        f"{'loop':34} {'rounds':>6} {'median µs/round':>15} {'min-max':>13} {'x floor':>7} "
        f"{'cpu µs/round':>12} {'x floor':>7} {'peak B/round':>12}"
    )
    print(header)
    print("-" * len(header))
    for name in variants:
        for rounds in sizes:
            cell, base = cells[(name, rounds)], cells[(FLOOR, rounds)]
            spread = f"{min(cell.wall):.0f}-{max(cell.wall):.0f}"
            print(
                f"{name:34} {rounds:>6} {cell.median:>15.0f} {spread:>13} "
                f"{cell.median / base.median:>7.2f} {cell.cpu_median:>12.0f} "
                f"{cell.cpu_median / base.cpu_median:>7.2f} {cell.peak:>12.0f}"
            )
    lo, hi = min(sizes), max(sizes)
    if lo != hi:
        print(f"\ngrowth of µs/round, {hi} vs {lo} rounds (wall; cpu), relative to the floor's:")
        own = cells[(FLOOR, hi)].median / cells[(FLOOR, lo)].median
        own_cpu = cells[(FLOOR, hi)].cpu_median / cells[(FLOOR, lo)].cpu_median
        for name in variants:
            g = cells[(name, hi)].median / cells[(name, lo)].median
            g_cpu = cells[(name, hi)].cpu_median / cells[(name, lo)].cpu_median
            extra = f"   (floor itself: {g:.2f}x; cpu {g_cpu:.2f}x)" if name == FLOOR else ""
            print(f"  {name:34} {g / own:.2f}; {g_cpu / own_cpu:.2f}{extra}")


def _throughputs(widget: dict[str, float], lab: dict[str, float], scenarios: int) -> None:
    print(
        f"\nLoopDebugger, headless: {widget['widget']:,.0f} events/s "
        f"(min-max {widget['widget_min']:,.0f}-{widget['widget_max']:,.0f}; "
        f"{widget['events']:,.0f}-event stream, {widget['draws']:.0f} coalesced draws); "
        f"RunView fold alone {widget['view']:,.0f} events/s"
    )
    print(
        f"LoopDebugger() construction, once per debugger: {widget['build_ms']:.1f} ms, "
        f"{widget['build_kib']:.0f} KiB"
    )
    print(
        f"run_scenarios: {lab['sweep']:,.0f} scenarios/s (min-max {lab['sweep_min']:,.0f}-"
        f"{lab['sweep_max']:,.0f}; {scenarios} scenarios x 5 rounds, concurrency 4), "
        f"{lab['end_to_end']:,.0f} scenarios/s with the runs and rounds frames"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--rounds", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for the loops")
    parser.add_argument("--widget-events", type=int, default=100_000)
    parser.add_argument("--lab-scenarios", type=int, default=300)
    parser.add_argument(
        "--loops-only", action="store_true", help="skip the debugger and lab throughputs"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = load()
    sizes = sorted(set(args.rounds))
    variants = {n: v for n, v in VARIANTS.items() if _available(n, v)}
    if FLOOR not in variants:
        raise SystemExit("the floor variant must run")
    cells, notes = measure_loops(variants, sizes, args.quick, args.budget)
    widget = lab = None
    if not args.loops_only:
        widget = measure_widget(args.widget_events, 3 if args.quick else 5)
        lab = measure_lab(args.lab_scenarios, 5, 4, 2 if args.quick else 3)
    elapsed = time.perf_counter() - started

    repeats = ", ".join(f"{r} rounds x{len(cells[(FLOOR, r)].wall)}" for r in sizes)
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, one process, one event loop, "
        f"interleaved repeats ({repeats})"
    )
    print("benchkit.InstantChatModel (the benchmark's own), one echo tool call per round\n")
    report(cells, list(variants), sizes)
    if widget is not None and lab is not None:
        _throughputs(widget, lab, args.lab_scenarios)

    def wall_over_cpu(rounds: int) -> float:
        return statistics.median(
            cells[(n, rounds)].median / cells[(n, rounds)].cpu_median for n in variants
        )

    contention = ", ".join(f"{r} rounds {wall_over_cpu(r):.2f}" for r in sizes)
    print(f"\nwall / CPU time, median over the variants: {contention}")
    # Other processes share this machine: while they hold a core, wall time grows but this
    # process's CPU time does not. The loops do no I/O (the trace's writes are CPU time in
    # this process), so CPU time is what the wall time would be on an idle machine, and the
    # goals are judged on it. Well above 1.0 above means the wall figures overstate.
    print("goals (ratios of CPU-time medians):")
    for label, value, ok in _goals(cells, sizes):
        print(f"  [{'met' if ok else 'MISSED'}] {label}: {value}")
    for note in notes:
        print(f"note: {note}")
    print(f"\nload average before {load_before}, after {load()}; total {elapsed:.0f} s")


if __name__ == "__main__":
    main()
