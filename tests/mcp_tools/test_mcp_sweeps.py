"""Scenarios that carry MCP servers as plain data: each worker starts the real FastMCP
server (over stdio) for its run and stops it after, here, on a process pool of fresh
interpreters and on a Dask LocalCluster; the frames agree, each call names its server,
and a server that cannot start fails its row before any model call."""

from __future__ import annotations

import importlib
import multiprocessing
import os
import pickle
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pandas as pd
import pytest
from mcpkit import stdio_server

from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    ScriptedModel,
    run_scenarios,
    run_scenarios_on_dask,
)


def _sweep() -> list[Scenario]:
    stock = ScriptedModel(
        (Reply.call("count", {"item": "bolts"}), Reply.call("picture"), Reply.final("5 bolts"))
    )
    crash = ScriptedModel((Reply.call("crash_tool"), Reply.final("the server died")))
    return [
        Scenario("stock", stock, tools=(), mcp_servers=(stdio_server(),)),
        Scenario("crash", crash, tools=(), mcp_servers=(stdio_server(),)),
        Scenario("broken", stock, tools=(), mcp_servers=(stdio_server(mode="broken"),)),
    ]


def _check(results: LabResults) -> None:
    runs = results.runs.set_index("scenario")
    assert runs.loc["stock", "outcome"] == "final_answer"
    assert runs.loc["crash", "outcome"] == "final_answer"  # the model read the error and answered
    broken = runs.loc["broken"]
    assert (broken["error_kind"], broken["error_reason"]) == ("tool", "server_start")
    record = next(r for r in results.records if r.scenario == "broken")
    assert "RuntimeError: the inventory database is missing" in (record.error_message or "")
    assert broken["model_calls"] == 0  # refused before the first model call
    tools = results.tools
    assert set(tools["server"].dropna()) == {"inventory"}
    crashed = tools[tools["scenario"] == "crash"].iloc[0]
    assert crashed["error_reason"] == "server_exited"
    logged = [
        e.event
        for e in results.events.itertuples()
        if e.kind == "server_log" and e.scenario == "stock"
    ]
    assert any("counting bolts" in line for event in logged for line in event.lines)


def _comparable(results: LabResults) -> pd.DataFrame:
    columns = ["scenario", "round", "name", "server", "status", "error_reason"]
    return results.tools[columns].reset_index(drop=True)


@pytest.fixture(scope="module")
def local() -> LabResults:
    results = run_scenarios(_sweep(), progress=False)
    _check(results)
    return results


def test_a_scenario_with_mcp_servers_runs_here(local: LabResults) -> None:
    assert len(local) == 3


def test_a_scenario_with_mcp_servers_pickles_and_checks_its_servers() -> None:
    scenario = _sweep()[0]
    assert pickle.loads(pickle.dumps(scenario)) == scenario
    with pytest.raises(ConfigurationError) as caught:
        Scenario("x", scenario.model, mcp_servers=("python server.py",))  # type: ignore[arg-type]
    assert caught.value.field == "mcp_servers"
    with pytest.raises(ConfigurationError, match="two servers are named 'inventory'"):
        Scenario("x", scenario.model, mcp_servers=(stdio_server(), stdio_server()))


def test_a_process_pool_starts_the_servers_in_its_workers(local: LabResults) -> None:
    ctx: Any = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:
        remote = run_scenarios(_sweep(), executor=pool, progress=False)
    _check(remote)
    pd.testing.assert_frame_equal(_comparable(remote), _comparable(local))


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    try:
        distributed = importlib.import_module("distributed")
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the Dask test must run under CI: {exc}")
        pytest.skip(f"Dask's distributed is not installed ({exc})")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},
    )
    with cluster, distributed.Client(cluster) as dask_client:
        dask_client.wait_for_workers(2, timeout=60)
        yield dask_client


def test_dask_workers_start_the_servers(client: Any, local: LabResults) -> None:
    remote = run_scenarios_on_dask(_sweep(), client, progress=False)
    _check(remote)
    pd.testing.assert_frame_equal(_comparable(remote), _comparable(local))
