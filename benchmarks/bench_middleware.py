"""What driving ``create_agent`` with ``ToolLoopMiddleware`` costs per round, side by side with
``create_agent`` alone and with the callback bridge (``watch``), which only watches.

Run: ``python benchmarks/bench_middleware.py`` (about 2 minutes on a 2-core machine;
``--quick`` for a smoke run). LangChain's ``create_agent`` on an instant scripted model, one
``echo`` tool call per round, 10 and 100 rounds; the agent is built before each timed run,
so only the run is measured. The variants run interleaved repeat by repeat (order rotated)
in one process, so drift and other processes' load hit them alike:

* ``create_agent`` alone (the baseline);
* ``+ watch(), no observer`` and ``+ watch(RunView)``: the callback bridge today;
* ``+ no-op wrap middleware``: a middleware whose ``awrap_model_call`` and
  ``awrap_tool_call`` only call the handler: what LangChain charges any middleware that
  wraps the calls (it wraps each such hook in langsmith's ``traceable``, which hands work
  to a thread several times per call, tracing on or off);
* ``+ ToolLoopMiddleware, no observer`` and ``+ ToolLoopMiddleware(RunView)``: the middleware,
  which also enforces the loop's rules (budgets, round cap, pause points) and makes the
  events from its own hooks.

It prints µs per round (median wall, median and least process CPU), each as a ratio to the
baseline, and ends with the goals: the middleware costs no more per round than the bridge
does (median CPU µs per round added over ``create_agent`` alone, with a ``RunView`` folding
the events in both), judged twice: all it adds, and what it adds over the no-op wrap
middleware (its own work, LangChain's charge for wrapping taken out).

Not part of the test suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import Any

from benchkit import RUNNER, Cell, goal, load, no_goal, print_goals, script, time_once
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import HumanMessage

from toolloop_lab import RunView, ScriptedChatModel, ToolLoopMiddleware, echo_tool, watch
from toolloop_lab.events import Event, LoopFinished

Variant = Callable[[int], Coroutine[Any, Any, None]]
"""One run of ``rounds`` tool rounds (the agent is built by :func:`_timed`, untimed)."""

SIZES = (10, 100)
REPEATS = {10: 41, 100: 15}
_INPUT = {"messages": [HumanMessage("go")]}


def _model(rounds: int) -> ScriptedChatModel:
    return ScriptedChatModel(script(rounds, "done"), model_name="gpt-4o-mini")


def _config(rounds: int) -> dict[str, Any]:
    return {"recursion_limit": 4 * rounds + 10}


def _plain(rounds: int) -> Any:
    return create_agent(_model(rounds), [echo_tool()])


class NoOpWrap(AgentMiddleware):  # type: ignore[type-arg]
    """Wraps every model call and tool call, and does nothing else."""

    async def awrap_model_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)

    async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
        return await handler(request)


def _driven(rounds: int, *observers: Any) -> Any:
    middleware = ToolLoopMiddleware({"tool_max_rounds": rounds + 5}, observers=observers)
    return create_agent(_model(rounds), [echo_tool()], middleware=[middleware])


async def bare(agent: Any, rounds: int) -> None:
    await agent.ainvoke(_INPUT, _config(rounds))


async def bridged(agent: Any, rounds: int, *, view: bool) -> None:
    seen = RunView()
    with watch(*((seen.apply,) if view else ())):
        await agent.ainvoke(_INPUT, _config(rounds))
    if view:
        assert seen.status == "finished"


async def driven(agent: tuple[Any, RunView | None], rounds: int) -> None:
    graph, seen = agent
    await graph.ainvoke(_INPUT, _config(rounds))
    if seen is not None:
        assert seen.status == "finished"


BASE = "create_agent"
BRIDGE = "+ watch(RunView)"
DRIVEN = "+ ToolLoopMiddleware(RunView)"
NOOP = "+ no-op wrap middleware"


def _timed(name: str, rounds: int) -> Callable[[], Coroutine[Any, Any, None]]:
    """The run to time, its agent built here (outside the timed run)."""
    if name == BASE:
        return partial(bare, _plain(rounds), rounds)
    if name == NOOP:
        wrapped = create_agent(_model(rounds), [echo_tool()], middleware=[NoOpWrap()])
        return partial(bare, wrapped, rounds)
    if name.startswith("+ watch"):
        return partial(bridged, _plain(rounds), rounds, view=name == BRIDGE)
    seen = RunView() if name == DRIVEN else None
    graph = _driven(rounds, *((seen.apply,) if seen is not None else ()))
    return partial(driven, (graph, seen), rounds)


NAMES = (
    BASE,
    "+ watch(), no observer",
    BRIDGE,
    NOOP,
    "+ ToolLoopMiddleware, no observer",
    DRIVEN,
)


def _check() -> None:
    """The middleware drives the whole run (a benchmark of a broken run is no use)."""
    events: list[Event] = []
    RUNNER.run(_driven(3, events.append).ainvoke(_INPUT, _config(3)))
    [end] = [e for e in events if isinstance(e, LoopFinished)]
    assert end.rounds == 4
    assert end.usage.requests == 4


def measure(sizes: Sequence[int], quick: bool) -> dict[tuple[str, int], Cell]:
    cells = {(name, size): Cell() for name in NAMES for size in sizes}
    names = list(NAMES)
    started = time.perf_counter()
    for rounds in sizes:
        repeats = REPEATS.get(rounds, 3)
        if quick:
            repeats = max(3, repeats // 4)
        for done in range(repeats):
            shift = done % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = time_once(_timed(name, rounds), rounds)
                cells[(name, rounds)].wall.append(wall)
                cells[(name, rounds)].cpu.append(cpu)
        print(
            f"  {rounds:>5} rounds: {repeats} interleaved repeats, "
            f"{time.perf_counter() - started:.0f} s so far",
            file=sys.stderr,
        )
    return cells


def report(cells: dict[tuple[str, int], Cell], sizes: Sequence[int]) -> None:
    header = (
        f"{'variant':34} {'rounds':>6} {'wall µs/round':>13} {'x base':>6} "
        f"{'cpu µs/round':>12} {'x base':>6} {'cpu min':>8} {'+ over base':>11}"
    )
    print(header)
    print("-" * len(header))
    for name in NAMES:
        for rounds in sizes:
            cell, base = cells[(name, rounds)], cells[(BASE, rounds)]
            print(
                f"{name:34} {rounds:>6} {cell.median:>13.0f} "
                f"{cell.median / base.median:>6.2f} {cell.cpu_median:>12.0f} "
                f"{cell.cpu_median / base.cpu_median:>6.2f} {min(cell.cpu):>8.0f} "
                f"{cell.cpu_median - base.cpu_median:>11.0f}"
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (fewer repeats)")
    args = parser.parse_args(argv)
    _check()
    print(f"load averages before: {load()}")
    cells = measure(SIZES, args.quick)
    print(f"load averages after: {load()}\n")
    report(cells, SIZES)
    goals = []
    for rounds in SIZES:
        base = cells[(BASE, rounds)].cpu_median
        bridge = cells[(BRIDGE, rounds)].cpu_median - base
        mw = cells[(DRIVEN, rounds)].cpu_median - base
        goals.append(
            goal(
                f"middleware / bridge, CPU µs per round added over create_agent, {rounds} rounds",
                mw / bridge if bridge > 0 else float("inf"),
                at_most=1.0,
                note=" (no more than the bridge)",
            )
        )
        own = cells[(DRIVEN, rounds)].cpu_median - cells[(NOOP, rounds)].cpu_median
        goals.append(
            goal(
                f"middleware's own work / bridge, CPU µs per round (the no-op wrap's "
                f"charge taken out), {rounds} rounds",
                own / bridge if bridge > 0 else float("inf"),
                at_most=1.0,
                note=" (no more than the bridge)",
            )
        )
        goals.append(
            no_goal(
                f"create_agent alone, {rounds} rounds",
                f"{statistics.median(cells[(BASE, rounds)].cpu):.0f} CPU µs per round",
            )
        )
    print_goals(goals)


if __name__ == "__main__":
    main()
