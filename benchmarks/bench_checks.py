"""Replaying and checking recorded runs: what ``toolloop-lab check`` does, 1,000 times.

Run: ``python benchmarks/bench_checks.py`` (about 20 seconds, most of it recording;
``--runs`` and ``--rounds`` to vary it). First, untimed: ``--runs`` five-round runs (a
scripted model priced as gpt-4o-mini making one ``echo`` call a round, the answer in the
last round) are recorded, each to a file of its own, with its checks saved beside it as a
debugger's "Save as test" or the pytest plugin saves them (the tool sequence, a call's
argument, rounds, model calls, tokens, cost, outcome, the answer). Then, timed: every
recording is replayed strictly through the loop with its recorded tool results and judged
by its saved checks, as ``toolloop-lab check DIR`` does (the same function, without the
printing). Every run must pass, or the figure is not reported. The goal (1,000 five-round
runs in at most 10 seconds) is judged on the default workload. Not part of the test suite:
timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from benchkit import Goal, goal, load, print_goals
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from toolloop_lab import AgentConfig, LLMAgent, RecordingChatModel, ScriptedChatModel
from toolloop_lab._replay.recorded_run import ReplaySettings
from toolloop_lab.checks import (
    answer_contains,
    called,
    called_in_order,
    max_cost_usd,
    max_model_calls,
    max_tokens,
    max_tool_rounds,
    no_tool_errors,
    outcome,
)
from toolloop_lab.checks._command import judge_recording
from toolloop_lab.checks._saved import save_checks

GOAL_S = 10.0
"""The most seconds replaying and checking 1,000 recorded five-round runs may take."""


@tool
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


def script(run: int, rounds: int) -> list[AIMessage]:
    """``rounds`` model calls: ``rounds - 1`` that call ``echo`` once, then the answer."""
    usage = {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}
    calls = [
        AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": f"s{run} r{n}"}, "id": f"c{run}_{n}"}],
            usage_metadata=usage,
        )
        for n in range(1, rounds)
    ]
    return [*calls, AIMessage(f"answer {run}", usage_metadata=usage)]


def record(folder: Path, runs: int, rounds: int) -> list[Path]:
    """``runs`` recordings, each with its checks beside it."""
    paths = []
    config = AgentConfig(tool_max_rounds=rounds + 1)
    for run in range(runs):
        path = folder / f"run_{run:05d}.jsonl"
        scripted = ScriptedChatModel(script(run, rounds), model_name="gpt-4o-mini")
        model = RecordingChatModel(scripted, path)
        result = LLMAgent(model, [echo], config).run(f"task {run}")
        checks = [
            called_in_order(*["echo"] * (rounds - 1)),
            called("echo", text=f"s{run} r1"),
            no_tool_errors(),
            max_tool_rounds(rounds),
            max_model_calls(rounds + 1),
            max_tokens(60 * rounds * 2),
            max_cost_usd(0.01),
            outcome("final_answer"),
            answer_contains(f"answer {run}"),
        ]
        save_checks(path, checks, settings=ReplaySettings.of_events(result.events))
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-checks-") as folder:
        started = time.perf_counter()
        paths = record(Path(folder), args.runs, args.rounds)
        recorded = time.perf_counter() - started
        started, cpu = time.perf_counter(), time.process_time()
        cases = [judge_recording(path) for path in paths]
        took, cpu = time.perf_counter() - started, time.process_time() - cpu
    failed = [case for case in cases if not case.passed]
    print(
        f"{args.runs:,} recorded runs of {args.rounds} model calls each; load {load()}\n"
        f"recording (untimed)     : {recorded:.2f} s\n"
        f"replaying and checking  : {took:.2f} s, {args.runs / took:,.0f} runs a second, "
        f"{took / args.runs * 1e3:.2f} ms a run\n"
        f"  of it, this process's CPU: {cpu:.2f} s (the wall-clock figure grows on a busy machine)"
    )
    if failed:
        print(f"{len(failed)} run(s) did not pass their checks, e.g. {failed[0]}")
        sys.exit(1)
    goals: list[Goal] = []
    if args.runs == 1_000 and args.rounds == 5:
        what = "replaying and checking 1,000 recorded five-round runs"
        goals.append(goal(what, took, at_most=GOAL_S, unit=" s"))
    print_goals(goals)


if __name__ == "__main__":
    main()
