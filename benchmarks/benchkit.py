"""The timing harness ``bench_loop.py`` and ``bench_bridge.py`` share.

One event loop for every run (``RUNNER``), so loop start-up is not counted as per-round
cost; a run timed once for wall-clock and process-CPU µs per round, or once under
tracemalloc for its peak bytes per round; the cell a variant's samples at one size gather
in; the scripted model reply list both benchmarks drive their loops with.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import os
import statistics
import time
import tracemalloc
from collections.abc import Callable, Coroutine
from typing import Any

from langchain_core.messages import AIMessage

RUNNER = asyncio.Runner()
"""One event loop for every run, so loop start-up is not counted as per-round cost."""

Run = Callable[[], Coroutine[Any, Any, Any]]
"""A run not yet started: the coroutine is made inside the timed stretch."""


def script(rounds: int, answer: str) -> list[AIMessage]:
    """``rounds`` replies that each call ``echo`` once, then ``answer``; each reports usage."""
    usage = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    calls = [
        AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": f"r{n}"}, "id": f"c{n}"}],
            usage_metadata=usage,
        )
        for n in range(rounds)
    ]
    return [*calls, AIMessage(answer, usage_metadata=usage)]


def time_once(run: Run, rounds: int) -> tuple[float, float]:
    """Wall-clock and process-CPU µs per round of one run."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    RUNNER.run(run())
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return wall * 1e6 / rounds, cpu * 1e6 / rounds


def peak_per_round(run: Run, rounds: int) -> float:
    """The tracemalloc peak of one run, in bytes per round."""
    gc.collect()
    tracemalloc.start()
    try:
        RUNNER.run(run())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / rounds


@dataclasses.dataclass
class Cell:
    """One variant at one size: µs per round of every repeat, and the peak bytes per round."""

    wall: list[float] = dataclasses.field(default_factory=list)
    cpu: list[float] = dataclasses.field(default_factory=list)
    peak: float = 0.0

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu)


def load() -> str:
    """The load averages, for the report (``n/a`` where the platform has none)."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"
