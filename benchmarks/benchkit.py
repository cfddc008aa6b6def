"""The harness every benchmark shares.

One event loop for every run (``RUNNER``), so loop start-up is not counted as per-round
cost; a run timed once for wall-clock and process-CPU µs per round, or once under
tracemalloc for its peak bytes per round; the cell a variant's samples at one size gather
in; the scripted model reply list the loop benchmarks drive their loops with, and
:class:`InstantChatModel`, the chat model the loop benchmark measures every loop on: it is
defined here, not in the package, so no change to the package's own models can move the
yardstick. :func:`goal` and :func:`print_goals` write the lines every benchmark ends with,
one per goal: ``[met]`` or ``[missed]``, the figure, the goal.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

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


class InstantChatModel(BaseChatModel):
    """A chat model that answers at once with the next of ``replies`` (a provider's shape:
    tools bound as OpenAI tool schemas, the model's name in each reply's metadata), written
    here so the floor is not one of the package's models. Async calls stay on the event
    loop (langchain-core's default ``_agenerate`` would hop to a thread per call)."""

    replies: list[AIMessage] = Field(repr=False)
    """Kept out of the model's repr: langchain-core serialises a chat model it cannot
    serialise by its repr, once per model, on its first call (``_serialized``). With the
    script in it, that took 190-330 µs per round of the run (each reply's repr asks
    pydantic for every field's default), in every loop alike: a cost no provider's model
    has, which made the floor slower and every ratio look better than it is."""
    model_name: str = "gpt-4o-mini"
    _next: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "bench-instant"

    def _reply(self) -> ChatResult:
        reply = self.replies[self._next]
        self._next += 1
        reply.response_metadata = {"model_name": self.model_name, "finish_reason": "stop"}
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._reply()

    def bind_tools(self, tools: Any, **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


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


def browser_figures(test: str, figures: Path) -> dict[str, Any] | None:
    """Run one browser test (a pytest node id) in its own process and read the figures it
    wrote to ``figures``; ``None``, with the test's output printed, when it could not run."""
    root = Path(__file__).resolve().parents[1]
    figures.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-s", test],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=1_200,
        check=False,
    )
    if done.returncode != 0 or not figures.exists():
        print(done.stdout[-3000:], done.stderr[-2000:])
        return None
    data: dict[str, Any] = json.loads(figures.read_text())
    return data


@dataclasses.dataclass(frozen=True)
class Goal:
    """One goal judged on today's figure: what is measured, the figure, the goal, met or not
    (``None`` where the project set no goal: the figure is printed as it is)."""

    what: str
    figure: str
    goal: str | None
    met: bool | None

    def line(self) -> str:
        """``[met] events on / floor at 100 rounds: 1.24x (goal <= 1.30x)``."""
        if self.met is None or self.goal is None:
            return f"[no goal] {self.what}: {self.figure}"
        return f"[{'met' if self.met else 'missed'}] {self.what}: {self.figure} (goal {self.goal})"


def goal(
    what: str,
    value: float,
    *,
    at_most: float | None = None,
    at_least: float | None = None,
    unit: str = "x",
    digits: int = 2,
    note: str = "",
) -> Goal:
    """``value`` judged against one bound (``at_most`` or ``at_least``, both inclusive),
    both written with ``digits`` decimals and ``unit``; ``note`` follows the goal."""
    if (at_most is None) == (at_least is None):
        raise ValueError("goal() takes exactly one of at_most= and at_least=")

    def show(x: float) -> str:
        return f"{x:,.{digits}f}{unit}"

    bound = at_most if at_most is not None else at_least
    assert bound is not None
    met = value <= bound if at_most is not None else value >= bound
    sign = "<=" if at_most is not None else ">="
    return Goal(what, show(value), f"{sign} {show(bound)}{note}", met)


def no_goal(what: str, figure: str) -> Goal:
    """A headline figure the project set no goal for."""
    return Goal(what, figure, None, None)


def print_goals(goals: list[Goal], heading: str = "goals") -> None:
    """The closing lines: a heading, then one line per goal."""
    print(f"\n{heading}:")
    for judged in goals:
        print(judged.line())
