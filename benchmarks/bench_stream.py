"""Streaming overhead: ``LLMAgent(streaming=True)`` against a bare ``astream`` loop.

Run: ``python benchmarks/bench_stream.py`` (about a minute; ``--quick``, about 15 seconds,
for a smoke run).
Both loops drive the same instant scripted model, whose every reply streams as 1,000 chunks
(16,000 characters of text in 16-character pieces, then one tool call), for 10 rounds; the
floor merges the chunks with ``+`` as langchain-core's own ``astream`` users do, runs the tool
and goes on, while ``LLMAgent`` also coalesces ``model_delta`` events (about 20 a second per
call) and emits every other event. Variants are interleaved repeat by repeat in one event
loop. It prints µs per chunk (CPU and wall) and the ratio to the floor, and ends with the
goal (at most 1.05x the floor's CPU time a chunk), judged on the median CPU time of this
process, which other processes' load barely moves. The loop without streaming is measured
by ``bench_loop.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from collections.abc import Callable, Coroutine
from typing import Any

from benchkit import goal, load, print_goals
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, echo_tool
from toolloop_lab.events import Event

ROUNDS = 10
CHUNKS = 1_000
PIECE = 16
"""ScriptedChatModel streams text in 16-character pieces: 16,000 characters, 1,000 chunks."""
GOAL = 1.05
"""The most ``LLMAgent`` may take a chunk, as a multiple of the bare loop's CPU time."""


def _script() -> list[AIMessage]:
    usage = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    text = ("x" * (PIECE - 1) + " ") * CHUNKS
    calls = [
        AIMessage(
            text,
            tool_calls=[{"name": "echo", "args": {"text": f"r{n}"}, "id": f"c{n}"}],
            usage_metadata=usage,
        )
        for n in range(ROUNDS)
    ]
    return [*calls, AIMessage("done", usage_metadata=usage)]


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(_script(), model_name="gpt-4o-mini")


async def floor() -> int:
    """The bare loop over ``astream``: merge the chunks, run the tool, go on."""
    tool = echo_tool()
    bound = _model().bind_tools([tool])
    messages: list[BaseMessage] = [HumanMessage("go")]
    chunks = 0
    while True:
        merged: Any = None
        async for chunk in bound.astream(messages):
            chunks += 1
            merged = chunk if merged is None else merged + chunk
        messages.append(merged)
        if not merged.tool_calls:
            return chunks
        for call in merged.tool_calls:
            messages.append(await tool.ainvoke({**call, "type": "tool_call"}))


async def agent() -> int:
    """``LLMAgent(streaming=True)``, events on (counted by one observer)."""
    seen: list[Event] = []
    config = AgentConfig(tool_max_rounds=ROUNDS + 1, streaming=True)
    result = await LLMAgent(_model(), [echo_tool()], config, observers=[seen.append]).arun("go")
    assert result.rounds == ROUNDS + 1  # the final answer comes in a round of its own
    return sum(1 for e in seen if e.kind == "model_delta")


VARIANTS: dict[str, Callable[[], Coroutine[Any, Any, int]]] = {
    "floor (bare astream loop)": floor,
    "LLMAgent, streaming=True": agent,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 15")
    repeats = 3 if parser.parse_args().quick else 15
    runner = asyncio.Runner()
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    wall: dict[str, list[float]] = {name: [] for name in VARIANTS}
    counts: dict[str, int] = {}
    for fn in VARIANTS.values():
        runner.run(fn())  # warm up
    for _ in range(repeats):
        for name, fn in VARIANTS.items():
            gc.collect()
            c, w = time.process_time(), time.perf_counter()
            counts[name] = runner.run(fn())
            cpu[name].append((time.process_time() - c) * 1e6 / (ROUNDS * CHUNKS))
            wall[name].append((time.perf_counter() - w) * 1e6 / (ROUNDS * CHUNKS))
    base = statistics.median(cpu["floor (bare astream loop)"])
    print(
        f"{ROUNDS} rounds x {CHUNKS:,} chunks per reply, {repeats} interleaved repeats; "
        f"load {load()}"
    )
    print(f"{'variant':32s} {'µs/chunk cpu':>13s} {'wall':>8s} {'ratio':>6s}  note")
    for name in VARIANTS:
        med = statistics.median(cpu[name])
        note = (
            f"{counts[name]:,} chunks merged"
            if name.startswith("floor")
            else f"{counts[name]:,} model_delta events for {ROUNDS * CHUNKS:,} chunks"
        )
        print(
            f"{name:32s} {med:13.2f} {statistics.median(wall[name]):8.2f} {med / base:6.2f}  {note}"
        )
    ratio = statistics.median(cpu["LLMAgent, streaming=True"]) / base
    what = "LLMAgent streaming / bare astream loop, CPU a chunk"
    print_goals([goal(what, ratio, at_most=GOAL)])


if __name__ == "__main__":
    main()
