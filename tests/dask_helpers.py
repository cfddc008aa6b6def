"""Importable pieces for the executor and Dask tests: generated sweeps and model factories
that kill or block the worker process running them.

They live in a module (not in the test file) because worker processes unpickle them by
reference: a spawned worker imports ``dask_helpers`` from the same ``sys.path`` the test
process has. Each factory records every attempt (the worker's pid, one line) in a log file,
so a test can tell how often a scenario was really started and which process to kill.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from toolloop_lab import AgentConfig
from toolloop_lab.lab import Reply, Scenario, ScriptedModel
from toolloop_lab.lab.builtin_scenarios import PRUNING_REPLY

__all__ = [
    "AlwaysDie",
    "BlockOnce",
    "DieOnce",
    "attempts",
    "generated",
    "plain",
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
