"""Per-round overhead of LLMAgent against the bare langchain-core loop (the floor).

Run: ``python benchmarks/bench_loop.py`` (add ``--quick`` for a short run). Every variant
drives the same instant scripted model, making one ``echo`` tool call per round, in one
process, with the variants interleaved repeat by repeat so drift hits all of them alike.
Prints µs per round (median, min-max), the ratio to the floor, the ratio of the 1,000-round
to the 10-round figure against the floor's own growth, and the tracemalloc peak per round.
Not part of the test suite: timing targets live here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab.builtin_tools import echo_tool

Variant = Callable[[int], Awaitable[None]]


def _script(rounds: int) -> list[AIMessage]:
    usage = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    calls = [
        AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": f"r{n}"}, "id": f"c{n}"}],
            usage_metadata=usage,
        )
        for n in range(rounds)
    ]
    return [*calls, AIMessage("done", usage_metadata=usage)]


def _model(rounds: int) -> ScriptedChatModel:
    return ScriptedChatModel(_script(rounds), model_name="gpt-4o-mini")


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


async def agent_trace(rounds: int) -> None:
    """LLMAgent writing a JSONL trace."""
    from toolloop_lab.trace import TraceWriter

    with tempfile.TemporaryDirectory() as tmp:
        writer = TraceWriter(Path(tmp) / "trace.jsonl")
        try:
            await _agent(rounds, (writer,)).arun("go")
        finally:
            writer.close()


async def agent_widget(rounds: int) -> None:
    """LLMAgent with a LoopDebugger attached, headless (no frontend)."""
    from toolloop_lab.widget import LoopDebugger

    debugger = LoopDebugger()
    await _agent(rounds, (debugger,)).arun("go")


async def create_agent_loop(rounds: int) -> None:
    """langchain's ``create_agent`` on the same model and tool."""
    from langchain.agents import create_agent

    graph = create_agent(_model(rounds), [echo_tool()])
    await graph.ainvoke({"messages": [HumanMessage("go")]}, {"recursion_limit": 2 * rounds + 10})


VARIANTS: dict[str, Variant] = {
    "floor (bare langchain-core loop)": floor,
    "LLMAgent, events on": agent_events,
    "LLMAgent + JSONL trace": agent_trace,
    "LLMAgent + LoopDebugger": agent_widget,
    "langchain create_agent": create_agent_loop,
}


_RUNNER = asyncio.Runner()
"""One event loop for every run, so loop start-up is not counted as per-round cost."""


def _available(name: str, variant: Variant) -> bool:
    try:
        _RUNNER.run(variant(2))
    except ImportError as exc:
        print(f"skipping {name}: {exc}", file=sys.stderr)
        return False
    return True


def _time_once(variant: Variant, rounds: int) -> float:
    gc.collect()
    started = time.perf_counter()
    _RUNNER.run(variant(rounds))
    return (time.perf_counter() - started) * 1e6 / rounds


def _peak_per_round(variant: Variant, rounds: int) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        _RUNNER.run(variant(rounds))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--rounds", type=int, nargs="*", default=[10, 100, 1000])
    args = parser.parse_args()
    variants = {n: v for n, v in VARIANTS.items() if _available(n, v)}
    repeats = {10: 41, 100: 11, 1000: 3}
    results: dict[tuple[str, int], list[float]] = {}
    memory: dict[tuple[str, int], float] = {}
    for rounds in args.rounds:
        n = repeats.get(rounds, 3)
        if args.quick:
            n = max(3, n // 4)
        for _ in range(n):
            for name, variant in variants.items():
                results.setdefault((name, rounds), []).append(_time_once(variant, rounds))
        for name, variant in variants.items():
            memory[(name, rounds)] = _peak_per_round(variant, rounds)

    floor_name = next(iter(variants))
    print(f"python {sys.version.split()[0]}, {len(args.rounds)} sizes, interleaved repeats\n")
    header = (
        f"{'loop':34} {'rounds':>6} {'median µs/round':>16} {'min-max':>17} "
        f"{'vs floor':>8} {'peak B/round':>13}"
    )
    print(header)
    print("-" * len(header))
    medians: dict[tuple[str, int], float] = {}
    for name in variants:
        for rounds in args.rounds:
            samples = results[(name, rounds)]
            med = statistics.median(samples)
            medians[(name, rounds)] = med
            ratio = med / statistics.median(results[(floor_name, rounds)])
            spread = f"{min(samples):.0f}-{max(samples):.0f}"
            print(
                f"{name:34} {rounds:>6} {med:>16.0f} {spread:>17} {ratio:>8.2f} "
                f"{memory[(name, rounds)]:>13.0f}"
            )
    lo, hi = min(args.rounds), max(args.rounds)
    if lo != hi:
        print(f"\ngrowth {hi} vs {lo} rounds, relative to the floor's own growth:")
        floor_growth = medians[(floor_name, hi)] / medians[(floor_name, lo)]
        for name in variants:
            growth = medians[(name, hi)] / medians[(name, lo)]
            print(f"  {name:34} {growth / floor_growth:.2f}")


if __name__ == "__main__":
    main()
