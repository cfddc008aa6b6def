"""The README's "what the loop's contract costs on its own" compares ``LLMAgent`` with a
least loop built in ``benchmarks/bench_parts.py`` from the package's own parts. That
comparison holds only while the least loop does what ``LLMAgent`` does: these tests keep the
two together (no timing here; the figures live in the benchmark)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench_parts() -> Iterator[ModuleType]:
    """The benchmark module; its event loop runner is closed afterwards, so no later test
    finds that loop set as this thread's current one."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_parts
    finally:
        sys.path.remove(str(BENCHMARKS))
    try:
        yield bench_parts
    finally:
        bench_parts.RUNNER.close()


@pytest.mark.parametrize("rounds", [1, 3])
def test_with_every_part_the_least_loop_emits_what_llmagent_emits(
    bench_parts: ModuleType, rounds: int
) -> None:
    bench_parts.check_faithful(rounds)


@pytest.mark.parametrize(
    ("left_out", "differs"),
    [("copies", "('model_call_start', 'messages')"), ("usage", "('model_call', 'usage')")],
)
def test_the_check_finds_a_part_left_out(
    bench_parts: ModuleType, left_out: str, differs: str
) -> None:
    parts = [p for p in bench_parts.PARTS if p != left_out]
    with pytest.raises(AssertionError) as info:
        bench_parts.check_faithful(3, parts)
    assert str(info.value) == differs


def test_without_events_the_least_loop_emits_none(bench_parts: ModuleType) -> None:
    runner = bench_parts.RUNNER
    assert runner.run(bench_parts.parts_loop(3, ())) == []
    with_events = runner.run(bench_parts.parts_loop(3, ("events",)))
    assert [e.kind for e in with_events][:2] == ["loop_start", "round_start"]
    assert with_events[-1].kind == "loop_finish"
