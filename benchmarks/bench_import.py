"""The first import: what a notebook's first cell pays before it can build an agent.

Each figure is one fresh interpreter (``python -X importtime`` would add its own cost, so
the time is taken inside the child with ``perf_counter`` around the import statement alone;
the interpreter's start-up is not counted). The two imports are timed alternately, run by
run, so a busy machine slows both alike; the report gives the median of each and of the
difference, and what the agent's import loaded that it should not have.

    python benchmarks/bench_import.py [--runs 9] [--quick]

About 30 seconds (``--quick``: 3 runs, about 10 seconds). The goals:
``from toolloop_lab import LLMAgent, LoopDebugger`` costs at most 0.3 s more than importing
langchain-core's chat models and tools, with JupyterLab (and so jsonschema with its format
checkers) installed, and loads none of the heavy modules below (``tests/test_first_import.py``
checks that part with the suite).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchkit import Goal, goal, load, print_goals

ROOT = Path(__file__).resolve().parent.parent

FLOOR = (
    "from langchain_core.language_models import BaseChatModel\n"
    "from langchain_core.tools import BaseTool, tool\n"
)
OURS = "from toolloop_lab import LLMAgent, LoopDebugger\n"

GOAL_S = 0.3
"""The most the agent's import may cost over langchain-core's, in seconds."""
HEAVY = ("jsonschema", "rfc3987_syntax", "anywidget", "ipywidgets", "traitlets", "pandas")
"""Modules the agent's import must leave unloaded (reported, not timed)."""

_CHILD = """
import json, sys, time
t = time.perf_counter()
exec(compile({code!r}, "<import>", "exec"))
took = time.perf_counter() - t
heavy = sorted(m for m in {heavy!r} if m in sys.modules)
print(json.dumps({{"s": took, "heavy": heavy}}))
"""


def time_import(code: str) -> tuple[float, list[str]]:
    """Seconds one fresh interpreter takes to run ``code``, and the heavy modules it left
    loaded."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(code=code, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return float(found["s"]), list(found["heavy"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters per import")
    parser.add_argument("--quick", action="store_true", help="3 runs, for a smoke run")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    time_import(FLOOR)  # one warm-up each: the first run after a change fills .pyc files
    time_import(OURS)
    floor, ours, diff = [], [], []
    loaded: list[str] = []
    for _ in range(runs):
        f, _heavy = time_import(FLOOR)
        o, loaded = time_import(OURS)
        floor.append(f)
        ours.append(o)
        diff.append(o - f)
    med = statistics.median
    print(f"{runs} fresh interpreters each, alternating; load {load()}")
    print(f"langchain-core chat models + tools: {med(floor):.3f} s (median)")
    print(f"from toolloop_lab import LLMAgent, LoopDebugger: {med(ours):.3f} s (median)")
    print(f"difference, run by run: {med(diff):+.3f} s (median)")
    what = "from toolloop_lab import LLMAgent, LoopDebugger, over langchain-core's import"
    heavy = Goal(
        "heavy modules the agent's import loaded",
        ", ".join(loaded) or "none",
        f"none of {', '.join(HEAVY)}",
        not loaded,
    )
    print_goals([goal(what, med(diff), at_most=GOAL_S, unit=" s", digits=3), heavy])


if __name__ == "__main__":
    main()
