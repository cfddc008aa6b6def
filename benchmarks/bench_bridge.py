"""Overhead of the LangChain bridge on a ``create_agent`` run.

Run: ``python benchmarks/bench_bridge.py`` (about three minutes on a busy 2-core machine;
``--quick`` for a short smoke run). Every variant runs langchain's ``create_agent`` on the
same instant scripted model, one ``echo`` tool call per round, in one process and one event
loop, the variants interleaved repeat by repeat (order rotated) so drift and other
processes' load hit all of them alike. Per size it prints µs per round (wall-clock median
and min-max, and the median CPU time of this process, which other processes' load barely
moves), the ratio of each to the bare ``create_agent`` run, and the tracemalloc peak per
round. The agent (model, tools, compiled graph) is built before each timed run, so only the
run itself is measured.

The variants separate what the bridge costs from what any callback handler costs:

* ``create_agent`` alone (the baseline);
* ``+ no-op callback handler``: a handler that does nothing, attached the same way, so
  langchain-core's own callback dispatch (run managers, tracing copies of the prompt) is
  measured on its own: any callback-based tool pays it;
* ``+ watch(), no observer``: the bridge building every event, nobody reading them;
* ``+ watch(RunView)``: the fold every view reads;
* ``+ watch(TraceWriter)``: a JSONL line per event;
* ``+ watch(LoopDebugger)``: the live debugger, headless (built once, as in a notebook);
* the same ``create_agent`` streamed (``astream(stream_mode="messages")``) bare and with
  ``watch(RunView)``, where the bridge also coalesces the streamed fragments.

On a shared machine other processes' load blurs the end-to-end ratios (even CPU time moves
with cache and frequency contention), so the minimum CPU time (the least disturbed run) is
printed next to the median, and a last table times the bridge directly: the µs per round
spent inside its callbacks, observers included.

Not part of the test suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchkit import RUNNER, Cell, Run, load, peak_per_round, script, time_once
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage

from toolloop_lab import RunView, ScriptedChatModel, echo_tool, watch
from toolloop_lab.events import Event, LoopFinished

Variant = Callable[[Any, int], Coroutine[Any, Any, None]]
"""One run of an already built agent: ``variant(agent, rounds)``."""

SIZES = (10, 100, 300)
REPEATS = {10: 31, 100: 11, 300: 7}
"""Interleaved repeats per size (``--quick`` takes a quarter, at least 3)."""


def _agent(rounds: int) -> Any:
    return create_agent(
        ScriptedChatModel(
            script(rounds, "done, and this answer streams in a few pieces"),
            model_name="gpt-4o-mini",
        ),
        [echo_tool()],
    )


def _config(rounds: int, callbacks: list[Any] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"recursion_limit": 2 * rounds + 10}
    if callbacks:
        config["callbacks"] = callbacks
    return config


_INPUT = {"messages": [HumanMessage("go")]}


class NoOp(BaseCallbackHandler):
    """A callback handler that does nothing (langchain-core's dispatch cost alone).

    It must define ``on_chat_model_start``: a handler without it makes langchain-core fall
    back to ``on_llm_start`` with every prompt turned into text, a cost that grows with the
    conversation and would not be the dispatch cost at all."""

    run_inline = True

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        return None


async def bare(agent: Any, rounds: int) -> None:
    await agent.ainvoke(_INPUT, _config(rounds))


async def noop_handler(agent: Any, rounds: int) -> None:
    await agent.ainvoke(_INPUT, _config(rounds, [NoOp()]))


async def _watched(agent: Any, rounds: int, observer: Any, *, stream: bool = False) -> None:
    observers = () if observer is None else (observer,)
    with watch(*observers):
        if stream:
            async for _ in agent.astream(_INPUT, _config(rounds), stream_mode="messages"):
                pass
        else:
            await agent.ainvoke(_INPUT, _config(rounds))


async def bridge_only(agent: Any, rounds: int) -> None:
    await _watched(agent, rounds, None)


async def bridge_runview(agent: Any, rounds: int) -> None:
    view = RunView()
    await _watched(agent, rounds, view.apply)
    assert view.status == "finished"


_TRACE_DIR = tempfile.TemporaryDirectory(prefix="bench_bridge_")
_TRACES = itertools.count()


async def bridge_trace(agent: Any, rounds: int) -> None:
    from toolloop_lab import TraceWriter

    path = Path(_TRACE_DIR.name) / f"trace{next(_TRACES)}.jsonl"
    writer = TraceWriter(path)
    try:
        await _watched(agent, rounds, writer)
    finally:
        writer.close()
        path.unlink()


_DEBUGGER: list[Any] = []


async def bridge_debugger(agent: Any, rounds: int) -> None:
    from toolloop_lab._widget.debugger import LoopDebugger

    if not _DEBUGGER:
        _DEBUGGER.append(LoopDebugger())
    await _watched(agent, rounds, _DEBUGGER[0])


async def stream_bare(agent: Any, rounds: int) -> None:
    async for _ in agent.astream(_INPUT, _config(rounds), stream_mode="messages"):
        pass


async def stream_runview(agent: Any, rounds: int) -> None:
    view = RunView()
    await _watched(agent, rounds, view.apply, stream=True)
    assert view.status == "finished"


BASE = "create_agent"
STREAM_BASE = "create_agent, streamed"
VARIANTS: dict[str, Variant] = {
    BASE: bare,
    "+ no-op callback handler": noop_handler,
    "+ watch(), no observer": bridge_only,
    "+ watch(RunView)": bridge_runview,
    "+ watch(TraceWriter)": bridge_trace,
    "+ watch(LoopDebugger)": bridge_debugger,
    STREAM_BASE: stream_bare,
    "streamed + watch(RunView)": stream_runview,
}
BASELINE = {name: (STREAM_BASE if name.startswith("streamed") else BASE) for name in VARIANTS}
BASELINE[STREAM_BASE] = STREAM_BASE


def _check() -> None:
    """Every bridged variant sees the whole run (a benchmark of a broken bridge is no use)."""
    events: list[Event] = []

    async def run() -> None:
        with watch(events.append):
            await _agent(3).ainvoke(_INPUT, _config(3))

    RUNNER.run(run())
    [end] = [e for e in events if isinstance(e, LoopFinished)]
    assert end.rounds == 4
    assert end.usage.requests == 4


def _timed(variant: Variant, rounds: int) -> Run:
    """The run to time: the agent is built here, outside the timed run (its cost is the same
    everywhere)."""
    return partial(variant, _agent(rounds), rounds)


def measure(sizes: Sequence[int], quick: bool) -> dict[tuple[str, int], Cell]:
    cells = {(name, size): Cell() for name in VARIANTS for size in sizes}
    names = list(VARIANTS)
    started = time.perf_counter()
    for rounds in sizes:
        repeats = REPEATS.get(rounds, 3)
        if quick:
            repeats = max(3, repeats // 4)
        for done in range(repeats):
            shift = done % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = time_once(_timed(VARIANTS[name], rounds), rounds)
                cells[(name, rounds)].wall.append(wall)
                cells[(name, rounds)].cpu.append(cpu)
        for name in names:
            cells[(name, rounds)].peak = peak_per_round(_timed(VARIANTS[name], rounds), rounds)
        print(
            f"  {rounds:>5} rounds: {repeats} interleaved repeats, "
            f"{time.perf_counter() - started:.0f} s so far",
            file=sys.stderr,
        )
    return cells


def report(cells: dict[tuple[str, int], Cell], sizes: Sequence[int]) -> None:
    header = (
        f"{'variant':28} {'rounds':>6} {'wall µs/round':>13} {'min-max':>13} {'x base':>6} "
        f"{'cpu µs/round':>12} {'x base':>6} {'cpu min':>8} {'x base':>6} {'peak KiB/round':>14}"
    )
    print(header)
    print("-" * len(header))
    for name in VARIANTS:
        for rounds in sizes:
            cell, base = cells[(name, rounds)], cells[(BASELINE[name], rounds)]
            wall, cpu = statistics.median(cell.wall), statistics.median(cell.cpu)
            spread = f"{min(cell.wall):.0f}-{max(cell.wall):.0f}"
            print(
                f"{name:28} {rounds:>6} {wall:>13.0f} {spread:>13} "
                f"{wall / statistics.median(base.wall):>6.2f} {cpu:>12.0f} "
                f"{cpu / statistics.median(base.cpu):>6.2f} {min(cell.cpu):>8.0f} "
                f"{min(cell.cpu) / min(base.cpu):>6.2f} {cell.peak / 1024:>14.1f}"
            )


# -- time spent inside the bridge ----------------------------------------------------------
_CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_new_token",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
)
INSIDE: dict[str, Variant] = {
    "watch(), no observer": bridge_only,
    "watch(RunView)": bridge_runview,
    "watch(TraceWriter)": bridge_trace,
    "watch(LoopDebugger)": bridge_debugger,
    "streamed + watch(RunView)": stream_runview,
}


def measure_inside(sizes: Sequence[int], repeats: int) -> dict[tuple[str, int], float]:
    """µs per round spent inside the bridge's callbacks (its observers included), timed
    around each callback: a direct figure, unlike the end-to-end ratios, which other
    processes' load blurs on a shared machine. Median of ``repeats`` runs."""
    from toolloop_lab import EventBridge

    spent = [0.0]
    originals = {name: getattr(EventBridge, name) for name in _CALLBACKS}

    def timed(method: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return wrapper

    for name, method in originals.items():
        setattr(EventBridge, name, timed(method))
    found: dict[tuple[str, int], float] = {}
    try:
        for rounds in sizes:
            for label, variant in INSIDE.items():
                samples = []
                for _ in range(repeats):
                    agent = _agent(rounds)
                    spent[0] = 0.0
                    RUNNER.run(variant(agent, rounds))
                    samples.append(spent[0] * 1e6 / rounds)
                found[(label, rounds)] = statistics.median(samples)
    finally:
        for name, method in originals.items():
            setattr(EventBridge, name, method)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--rounds", type=int, nargs="*", default=list(SIZES))
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = load()
    _check()
    for variant in VARIANTS.values():  # warm imports and caches
        RUNNER.run(variant(_agent(2), 2))
    sizes = sorted(set(args.rounds))
    cells = measure(sizes, args.quick)
    print(
        f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, one process, one event loop; "
        "instant scripted model, one echo tool call per round\n"
    )
    report(cells, sizes)
    print("\noverhead on create_agent, CPU time, x base - 1 (median / min, the least disturbed):")
    for rounds in sizes:

        def over(name: str, pick: Callable[[list[float]], float], n: int = rounds) -> str:
            return f"{pick(cells[(name, n)].cpu) / pick(cells[(BASE, n)].cpu) - 1:+.0%}"

        noop, view = "+ no-op callback handler", "+ watch(RunView)"
        print(
            f"  {rounds:>5} rounds: no-op handler {over(noop, statistics.median)} / "
            f"{over(noop, min)}, bridge + RunView {over(view, statistics.median)} / "
            f"{over(view, min)}"
        )
    inside = measure_inside(sizes, 3 if args.quick else 7)
    print("\ntime inside the bridge's callbacks (observers included), µs per round:")
    print(f"  {'':28}" + "".join(f"{f'{r} rounds':>12}" for r in sizes))
    for label in INSIDE:
        print(f"  {label:28}" + "".join(f"{inside[(label, r)]:>12.0f}" for r in sizes))
    print(
        f"\nload average before {load_before}, after {load()}; total "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
