"""Per-round cost of LLMAgent against the bare langchain-core loop (the floor).

Run: ``python benchmarks/bench_loop.py`` (about 2 minutes on a quiet 2-core machine, longer
on a busy one; ``--quick``, about a minute, for a smoke run; ``--loops-only`` skips the
debugger's throughput). Every
loop drives the same instant chat model, ``benchkit.InstantChatModel`` (written in the
benchmark, not the package, so no model of ours can move the floor), making one ``echo``
tool call per round, in one process and one event loop, the variants interleaved repeat by
repeat (order rotated) so drift and other processes' load hit all of them alike.

For 10, 100 and 1,000 rounds it prints µs per round (wall-clock median and min-max, and the
median CPU time of this process, which other processes' load barely moves), the ratio to
the floor, and the tracemalloc peak per round. Then how many events a second a headless
``LoopDebugger`` (and ``RunView`` alone) folds from a recorded stream, and what building one
costs (once per debugger, not per round). It ends with one line per goal, judged on the
CPU-time medians: the loops do no I/O, so on a shared machine CPU time is what wall time
would be on an idle one (the wall/CPU line shows how much other load inflated the wall
figures). ``bench_parts.py`` measures the floor under these goals: what the loop's required
parts cost on their own. Not part of the test suite: timing goals live here, never in tests.

The debugger variant attaches one ``LoopDebugger`` (built once, as in a notebook, where it
is displayed once and watches run after run).
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

from benchkit import (
    RUNNER,
    Cell,
    Goal,
    InstantChatModel,
    goal,
    load,
    peak_per_round,
    print_goals,
    script,
    time_once,
)
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
    from toolloop_lab import LoopDebugger

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
    from toolloop_lab import LoopDebugger, RunView

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


# -- report --------------------------------------------------------------------------------
LOOP_GOALS = ((EVENTS, 1.15), (TRACE, 1.25), (WIDGET, 1.20))
"""Each LLMAgent variant's bound on its CPU time a round, as a multiple of the floor's."""
CREATE_AGENT_GOAL = 2.0
"""langchain's ``create_agent`` takes at least this many times LLMAgent's (events on)."""


def goals(cells: dict[tuple[str, int], Cell], sizes: Sequence[int]) -> list[Goal]:
    """Each goal at each size, on the CPU-time medians (see ``main`` for why); memory per
    round stays flat: the peak per round of the longest run is no more than the shortest's."""

    def cpu(name: str, rounds: int) -> float:
        return cells[(name, rounds)].cpu_median

    have = {n for n, _r in cells}
    out: list[Goal] = []
    for name, limit in LOOP_GOALS:
        if name in have:
            out += [
                goal(f"{name} / floor at {r:,} rounds", cpu(name, r) / cpu(FLOOR, r), at_most=limit)
                for r in sizes
            ]
    if EVENTS in have and CREATE_AGENT in have:
        out += [
            goal(
                f"{CREATE_AGENT} / {EVENTS} at {r:,} rounds",
                cpu(CREATE_AGENT, r) / cpu(EVENTS, r),
                at_least=CREATE_AGENT_GOAL,
            )
            for r in sizes
        ]
    lo, hi = min(sizes), max(sizes)
    if lo != hi:
        for name, _limit in LOOP_GOALS:
            if name in have:
                grown = cells[(name, hi)].peak / cells[(name, lo)].peak
                what = f"{name}: peak memory a round, {hi:,} rounds / {lo:,} rounds"
                out.append(goal(what, grown, at_most=1.0))
    return out


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


def _throughput(widget: dict[str, float]) -> None:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--rounds", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds for the loops")
    parser.add_argument("--widget-events", type=int, default=100_000)
    parser.add_argument("--loops-only", action="store_true", help="skip the debugger's throughput")
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = load()
    sizes = sorted(set(args.rounds))
    variants = {n: v for n, v in VARIANTS.items() if _available(n, v)}
    if FLOOR not in variants:
        raise SystemExit("the floor variant must run")
    cells, notes = measure_loops(variants, sizes, args.quick, args.budget)
    widget = None
    if not args.loops_only:
        widget = measure_widget(args.widget_events, 3 if args.quick else 5)
    elapsed = time.perf_counter() - started

    repeats = ", ".join(f"{r} rounds x{len(cells[(FLOOR, r)].wall)}" for r in sizes)
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, one process, one event loop, "
        f"interleaved repeats ({repeats})"
    )
    print("benchkit.InstantChatModel (the benchmark's own), one echo tool call per round\n")
    report(cells, list(variants), sizes)
    if widget is not None:
        _throughput(widget)

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
    for note in notes:
        print(f"note: {note}")
    print(f"load average before {load_before}, after {load()}; total {elapsed:.0f} s")
    print_goals(goals(cells, sizes), "goals (ratios of CPU-time medians)")


if __name__ == "__main__":
    main()
