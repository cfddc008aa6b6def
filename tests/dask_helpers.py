"""Importable pieces for the executor and Dask tests: generated sweeps, model factories
that kill or block the worker process running them, and a stateful tools factory.

They live in a module (not in the test file) because worker processes unpickle them by
reference: a spawned worker imports ``dask_helpers`` from the same ``sys.path`` the test
process has. Each factory records every attempt (the worker's pid, one line) in a log file,
so a test can tell how often a scenario was really started and which process to kill.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool

from toolloop_lab import AgentConfig, ScriptedChatModel, tools_from_schema
from toolloop_lab._support.words import time_limit_text
from toolloop_lab.events import LoopFailed, ModelCallFailed
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    ScenarioRun,
    ScriptedModel,
    ToolCallSpec,
    Turn,
)
from toolloop_lab.lab._builtin_scenarios import PRUNING_REPLY

__all__ = [
    "TALLY_FUNCTIONS",
    "AlwaysDie",
    "BlockOnce",
    "DieOnce",
    "HangsAfterOneRound",
    "Tally",
    "TallyBench",
    "assert_timed_out_row",
    "attempts",
    "generated",
    "plain",
    "tally_reads",
    "tally_scenario",
]


def generated(count: int) -> list[Scenario]:
    """``count`` scenarios varying rounds, tools, round caps, token and USD budgets, pruning
    and failures, deterministically from their position (same list on every call)."""
    out: list[Scenario] = []
    for i in range(count):
        rounds = 1 + i % 6
        tool = "file_read" if i % 4 == 1 else "echo"
        args = {"path": "report.txt"} if tool == "file_read" else {"text": f"g{i}"}
        text = "" if i % 3 == 0 else "checking"  # empty text on tool calls: a stuck model
        replies = [
            Reply.call(tool, args, text=text, input_tokens=40 + 7 * n + i % 11, output_tokens=5 + n)
            for n in range(1, rounds)
        ]
        replies.append(Reply.final(f"answer {i}", input_tokens=60 + i % 13, output_tokens=9))
        replies.append(Reply.final("synthesis", input_tokens=70, output_tokens=12))
        fields: dict[str, Any] = {"tools": (tool,), "tags": (f"rounds={rounds}", tool)}
        variant = i % 7
        if variant == 1:
            fields["config"] = AgentConfig(tool_max_rounds=max(1, rounds - 2))
        elif variant == 2:
            fields["config"] = AgentConfig(token_budget_percent=10.0, context_window=2_000)
        elif variant == 3:
            fields["usd_limit"] = Decimal(1 + i % 4) * Decimal("0.00001")
        elif variant == 4:
            replies[-2] = Reply.failure(f"provider down {i}")
        elif variant == 5 and tool == "file_read":
            fields["config"] = AgentConfig(prune_tools=("file_read",), prune_min_chars=1_000)
            fields["pruning_model"] = ScriptedModel((PRUNING_REPLY,) * rounds)
        elif variant == 6:
            replies.insert(0, Reply.call("no_such_tool", {}, input_tokens=30, output_tokens=3))
        out.append(Scenario.scripted(f"gen_{i:03d}", replies, **fields))
    return out


def plain(name: str) -> ScriptedModel:
    """The script every kill-test factory plays once it is allowed to answer."""
    return ScriptedModel(
        (
            Reply.call("echo", {"text": name}, input_tokens=21, output_tokens=4),
            Reply.final(f"{name} survived", input_tokens=33, output_tokens=6),
        )
    )


def attempts(log: str | Path) -> list[int]:
    """The pids of every attempt a factory recorded in ``log``, in order."""
    path = Path(log)
    if not path.exists():
        return []
    return [int(line) for line in path.read_text(encoding="utf-8").split()]


def _note_attempt(log: str) -> int:
    """Record this attempt (our pid) durably before anything can kill us; return its number."""
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"{os.getpid()}\n")
        out.flush()
        os.fsync(out.fileno())
    return len(attempts(log))


@dataclass(frozen=True)
class DieOnce:
    """A model factory whose first attempt kills its worker process; later ones answer."""

    log: str
    name: str

    def __call__(self) -> BaseChatModel:
        if _note_attempt(self.log) == 1:
            os._exit(17)
        return plain(self.name)()


@dataclass(frozen=True)
class AlwaysDie:
    """A model factory that kills its worker process on every attempt."""

    log: str

    def __call__(self) -> BaseChatModel:
        _note_attempt(self.log)
        os._exit(17)


@dataclass(frozen=True)
class BlockOnce:
    """A model factory whose first attempt blocks (so the test can kill its worker from
    outside); later attempts answer at once. It gives up blocking after ``seconds``."""

    log: str
    name: str
    seconds: float = 60.0

    def __call__(self) -> BaseChatModel:
        if _note_attempt(self.log) == 1:
            time.sleep(self.seconds)
        return plain(self.name)()


class _Unanswering(ScriptedChatModel):
    """Plays its script, then never answers (for at most ``hold_s``, then it fails)."""

    hold_s: float = 60.0

    async def _hold(self) -> None:
        await asyncio.sleep(self.hold_s)
        raise RuntimeError("nothing gave this call up")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if not self.remaining:
            await self._hold()
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if not self.remaining:
            await self._hold()
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk


@dataclass(frozen=True)
class HangsAfterOneRound:
    """A model factory: one paid round (an ``echo`` call, 21 and 4 tokens), then a model
    call that never answers (a sweep's time limit must end it)."""

    name: str

    def __call__(self) -> BaseChatModel:
        script = plain(self.name)()
        assert isinstance(script, ScriptedChatModel)
        return _Unanswering(list(script.script[:1]), model_name=script.model_name)


def assert_timed_out_row(results: LabResults, name: str, limit_s: float) -> None:
    """The row of a scenario the sweep's time limit ended: failed (scenario, timeout), in
    the words file's words, with its one paid round, and a run whose events end as timed
    out with every call answered."""
    row = results.runs.set_index("scenario").loc[name]
    assert (row["outcome"], row["error_kind"], row["error_reason"]) == (
        "failed",
        "scenario",
        "timeout",
    )
    assert row["error"] == time_limit_text("scenario", limit_s)
    assert (row["model_calls"], row["tool_rounds"]) == (1, 1)
    assert (row["prompt_tokens"], row["completion_tokens"]) == (21, 4)  # the paid round
    from hostile.hostilekit import check_events  # only the tests need it, not the workers

    record = results[name]
    failed = check_events(record.events)
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.error_kind, failed.reason) == (
        "TimeLimitError",
        "scenario",
        "timeout",
    )
    assert (failed.outcome, failed.cancelled) == ("failed", False)
    assert failed.message == time_limit_text("scenario", limit_s)
    stopped = [e for e in record.events if isinstance(e, ModelCallFailed)]
    assert [(e.call, e.error_type) for e in stopped] == [(2, "CancelledError")]


# -- a stateful backend: one count per run, shared by that run's tools ---------------------
class Tally:
    """A count that ``bump`` raises and ``read`` reports, with the process it lives in."""

    def __init__(self) -> None:
        self.count = 0

    def bump(self) -> int:
        self.count += 1
        return self.count

    def read(self) -> dict[str, int]:
        return {"count": self.count, "pid": os.getpid()}


TALLY_FUNCTIONS = (
    {"name": "bump", "description": "Add one.", "parameters": {"type": "object"}},
    {"name": "read", "description": "The count.", "parameters": {"type": "object"}},
)


@dataclass(frozen=True)
class TallyBench:
    """The tools factory: ``bump`` and ``read`` on one fresh :class:`Tally`."""

    def __call__(self) -> list[BaseTool]:
        return tools_from_schema(Tally(), TALLY_FUNCTIONS)


def tally_scenario(name: str) -> Scenario:
    """Two turns: bump twice (one reply, in order) then read; bump once more then read.
    A backend shared by the run's tools and fresh for the run reads 2, then 3."""

    def step(*names: str) -> Reply:
        return Reply("", tuple(ToolCallSpec(n) for n in names), input_tokens=20, output_tokens=4)

    def done(text: str) -> Reply:
        return Reply.final(text, input_tokens=30, output_tokens=5)

    return Scenario.scripted(
        name,
        turns=(
            Turn("bump twice", (step("bump", "bump"), step("read"), done("two"))),
            Turn("once more", (step("bump"), step("read"), done("three"))),
        ),
        tools_factory=TallyBench(),
        config=AgentConfig(parallel_tool_calls=False),
    )


def tally_reads(run: ScenarioRun) -> list[tuple[int, int]]:
    """``(count, pid)`` of every ``read`` the run made, in order."""
    return [
        (data["count"], data["pid"])
        for view in run.views()
        for row in view.rounds
        for tool in row.tools
        if tool.name == "read" and tool.status == "success"
        for data in [json.loads(tool.content)]
    ]


def checked_sweep() -> tuple[list[Scenario], dict[str, Any]]:
    """Scenarios with checks (one a lambda, which no worker could unpickle: checks are judged
    where the sweep started) and the variants to run them under: a scenario needing k tool
    rounds passes under a round cap m when k < m."""
    from toolloop_lab.checks import outcome, satisfies

    scenarios = [
        Scenario.scripted(
            f"needs_{k}",
            [
                *(
                    Reply.call("echo", {"text": f"step {i}"}, input_tokens=100, output_tokens=10)
                    for i in range(k)
                ),
                Reply.final("done", input_tokens=100, output_tokens=10),
            ],
            checks=[outcome("final_answer"), satisfies(lambda events: len(events) > 2, "events")],
        )
        for k in (1, 2, 3)
    ]
    return scenarios, {"cap 2": {"tool_max_rounds": 2}, "cap 4": {"tool_max_rounds": 4}}
