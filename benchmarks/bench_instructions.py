"""Per-round overhead of LLMAgent against the floor, counted in machine instructions.

Run: ``python benchmarks/bench_instructions.py`` (needs Debian's ``valgrind``; 4 to 20
minutes on a 2-core machine, the variants split over two processes). ``bench_loop.py``
times the same loops, and on a shared machine its ratios move with the load: two of its
runs minutes apart on one nearly quiet 2-core machine put events on at 1.41x and then
1.00x the floor at 100 rounds. This one counts what each loop makes the CPU do instead,
under valgrind's callgrind, which gives the same count for the same work whatever else the
machine does (the floor's moved 0.25% at most from one interpreter to the next). It does
not see what costs time without costing instructions (cache misses, a heap spread wider):
only ``bench_loop.py`` measures those, so the two are read side by side.

The variants are ``bench_loop.py``'s own (the floor, events on, a JSONL trace, a headless
``LoopDebugger``, langchain's ``create_agent``), on its instant chat model with one
``echo`` call a round. Each runs in a fresh interpreter under callgrind with collection
off. A variant first runs once, 10 rounds (its first-use costs: lazy imports, caches, the
debugger's widgets); then its measured runs are made inside ``sys.call_tracing``, the one
function callgrind is told to count inside (nothing else calls it), dumped one file per
size, each from a collected heap (so a full collection, which walks every object the
interpreter holds, never falls inside one because of what ran before it). Every measured
run builds its agent, model and tool afresh, as ``bench_loop.py``'s do. Printed:
instructions per round (millions, over the measured rounds) and the ratio to the floor's,
for 10, 100 and 1,000 rounds. Not part of the test suite.

``--cache`` turns on callgrind's simulation of the caches and prints a second table: the
first-level data cache misses per round (reads and writes) and their ratio to the floor's.
A miss costs time and no instruction, so this table is the one that says how much of the
timed ratio above the counted one comes from a run keeping a wider heap (the simulated
cache is the machine's own sizes as valgrind reads them, not a measurement of its timing).
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SIZES = (10, 100, 1000)
RUNS = {10: 20, 100: 3, 1000: 1}
"""Measured runs per size (200, 300 and 1,000 rounds)."""
GROUPS = (("floor", "events", "debugger"), ("trace", "create_agent"))
"""Variants per interpreter; the groups run side by side, one per core."""
MARKER = "sys_call_tracing"
"""The C function of ``sys.call_tracing``: callgrind counts only inside it."""


def _variants() -> dict[str, Any]:
    # this checkout's package and benchmarks, whatever an editable install points at, so
    # two checkouts (a change and its base) can be counted one after the other
    sys.path[:0] = [str(HERE.parent), str(HERE)]
    import bench_loop

    return {
        "floor": bench_loop.floor,
        "events": bench_loop.agent_events,
        "trace": bench_loop.agent_trace,
        "debugger": bench_loop.agent_widget,
        "create_agent": bench_loop.create_agent_loop,
    }


def inner(names: list[str], sizes: list[int]) -> None:
    """Under callgrind: for each variant, one unmeasured 10-round run, then for each size
    the measured runs inside ``sys.call_tracing`` (one dump file each, in this order)."""
    variants = _variants()
    from benchkit import RUNNER

    for name in names:
        variant = variants[name]
        RUNNER.run(variant(10))  # first-use costs: lazy imports, caches, a debugger's widgets
        for rounds in sizes:

            def measured(variant: Any = variant, rounds: int = rounds) -> None:
                for _ in range(RUNS[rounds]):
                    RUNNER.run(variant(rounds))

            # Every stretch starts from a collected heap: a full collection walks every
            # object the interpreter holds (some 40 million instructions here), and whether
            # one fell inside a stretch depended on what ran before it in this process, not
            # on the loop measured (one put the floor's 100 rounds 4% higher).
            gc.collect()
            sys.call_tracing(measured, ())


def _totals(path: Path) -> dict[str, int]:
    """A callgrind dump's totals by event (``Ir``: instructions; with the cache simulation
    also ``D1mr`` and ``D1mw``, first-level data cache read and write misses)."""
    text = path.read_text()
    names = re.search(r"^events:\s*(.+)$", text, re.MULTILINE)
    totals = re.search(r"^totals:\s*(.+)$", text, re.MULTILINE)
    if names is None or totals is None:
        raise RuntimeError(f"{path}: no events or totals line")
    return dict(zip(names.group(1).split(), map(int, totals.group(1).split()), strict=False))


def run_group(
    names: list[str], sizes: list[int], out: Path, *, cache: bool = False
) -> subprocess.Popen[bytes]:
    """Start one interpreter under callgrind for ``names`` (``cache``: with its simulation
    of the caches, which counts the misses as well, at about twice the time)."""
    command = [
        "valgrind",
        "--tool=callgrind",
        *(["--cache-sim=yes"] if cache else []),
        "--collect-atstart=no",
        f"--toggle-collect={MARKER}",
        f"--dump-after={MARKER}",
        f"--callgrind-out-file={out}/cg.out",
        sys.executable,
        str(Path(__file__).resolve()),
        "--inner",
        ",".join(names),
        "--rounds",
        *map(str, sizes),
    ]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def counts(names: list[str], sizes: list[int], out: Path) -> dict[tuple[str, int], dict[str, int]]:
    """The totals of each (variant, size)'s measured runs, by event, read from the dumps."""
    dumps = sorted(out.glob("cg.out.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    keys = [(n, r) for n in names for r in sizes]
    # dump 1 is what was counted before the first measured stretch (nothing): skip empties
    full = [t for t in map(_totals, dumps) if t.get("Ir", 0) > 0]
    if len(full) != len(keys):
        raise RuntimeError(f"{len(full)} measured dumps for {len(keys)} stretches in {out}")
    return dict(zip(keys, full, strict=True))


def _table(title: str, found: dict[tuple[str, int], int], sizes: list[int], scale: float) -> None:
    """One line per variant: ``found`` per round (divided by ``scale``) and its ratio to the
    floor's, for each size."""
    unit = "M" if scale == 1e6 else "k"
    print(title)
    print(f"{'loop':<14}" + "".join(f"{r:>12} rounds" for r in sizes))
    for name in (n for g in GROUPS for n in g):
        cells = []
        for rounds in sizes:
            per = found[(name, rounds)] / (RUNS[rounds] * rounds)
            floor = found[("floor", rounds)] / (RUNS[rounds] * rounds)
            cells.append(f"{per / scale:>8.3f} {unit} {per / floor:.2f}x")
        print(f"{name:<14}" + "".join(f"{c:>19}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, nargs="+", default=list(SIZES))
    parser.add_argument(
        "--cache",
        action="store_true",
        help="simulate the caches too: first-level data cache misses per round (about 2x slower)",
    )
    args = parser.parse_args()
    if args.inner:
        inner(args.inner.split(","), args.rounds)
        return
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    sizes = [r for r in args.rounds if r in RUNS]
    found: dict[tuple[str, int], dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_instructions_") as tmp:
        jobs = []
        for index, group in enumerate(GROUPS):
            out = Path(tmp) / str(index)
            out.mkdir()
            job = run_group(list(group), sizes, out, cache=args.cache)
            jobs.append((list(group), out, job))
        for members, out, job in jobs:
            _, err = job.communicate()
            if job.returncode != 0:
                sys.exit(f"{members}: valgrind exited {job.returncode}\n{err.decode()[-2000:]}")
            found.update(counts(members, sizes, out))
    version = sys.version.split()[0]
    _table(
        f"python {version}; instructions per round (callgrind), ratio to the floor",
        {key: totals["Ir"] for key, totals in found.items()},
        sizes,
        1e6,
    )
    if args.cache:
        misses = {key: t.get("D1mr", 0) + t.get("D1mw", 0) for key, t in found.items()}
        _table(
            "first-level data cache misses per round (reads and writes, callgrind's "
            "simulated cache), ratio to the floor",
            misses,
            sizes,
            1e3,
        )


if __name__ == "__main__":
    main()
