"""A scenario's ``tools_factory``: called once per run, its tools share one backend that
lives through every turn of that run, and no other run ever sees it (here, with runs
interleaved in one process; on worker processes and Dask in ``test_dask.py``)."""

from __future__ import annotations

import os

import pytest
from dask_helpers import TallyBench, tally_reads, tally_scenario
from langchain_core.tools import BaseTool

from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab import Reply, Scenario, run_scenarios


def test_one_runs_tools_share_a_backend_that_is_fresh_for_every_run() -> None:
    # Eight runs, four at a time in this process: each must count on its own backend.
    scenarios = [tally_scenario(f"tally_{i}") for i in range(8)]
    results = run_scenarios(scenarios, concurrency=4, progress=False)
    for record in results:
        assert record.outcome == "final_answer", record.error_message
        assert tally_reads(record) == [(2, os.getpid()), (3, os.getpid())], record.scenario
    assert results.turns["tool_errors"].sum() == 0


def test_the_factory_is_called_once_per_run() -> None:
    calls: list[int] = []

    class Counting(TallyBench):
        def __call__(self) -> list[BaseTool]:
            calls.append(1)
            return super().__call__()

    base = tally_scenario("counted")
    counted = Scenario(
        "counted", base.model, turns=base.turns, tools_factory=Counting(), config=base.config
    )
    run_scenarios([counted], progress=False)
    assert calls == [1]  # two turns, one backend


def test_a_factory_brings_its_tools_without_the_default_echo() -> None:
    scenario = tally_scenario("tools")
    assert scenario.tools == ()
    assert [t.name for t in scenario.build_tools()] == ["bump", "read"]
    both = Scenario.scripted(
        "both", [Reply.final("x")], tools=("echo",), tools_factory=TallyBench()
    )
    assert [t.name for t in both.build_tools()] == ["echo", "bump", "read"]


def not_tools() -> object:
    return 42


def not_a_tool_inside() -> list[object]:
    return ["echo"]


@pytest.mark.parametrize("factory", [not_tools, not_a_tool_inside])
def test_a_factory_that_gives_no_tools_is_a_scenario_error(factory: object) -> None:
    bad = Scenario.scripted("bad", [Reply.final("x")], tools_factory=factory)  # type: ignore[arg-type]
    run = run_scenarios([bad], progress=False)["bad"]
    assert (run.outcome, run.error_kind, run.error_reason) == (
        "failed",
        "scenario",
        "tools_factory",
    )


def test_a_factory_must_be_callable() -> None:
    with pytest.raises(ConfigurationError) as err:
        Scenario.scripted("bad", [Reply.final("x")], tools_factory="bench")  # type: ignore[arg-type]
    assert err.value.field == "tools_factory"
