"""Sweeps: failure rows, isolation of failures, order, concurrency, sync/async, observers,
progress, picklable scenarios and records (what an executor needs later)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import multiprocessing
import pickle
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dask_helpers import HangsAfterOneRound, assert_timed_out_row
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab import AgentConfig, ScriptedChatModel, TokenPrice, usd_budget
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import FAILED_OUTCOMES, Event
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    ScenarioRun,
    arun_scenarios,
    catalog,
    drop_volatile,
    run_scenarios,
)
from toolloop_lab.lab._runner import DEFAULT_SCENARIO_TIMEOUT_S, run_one


def stable(frame: pd.DataFrame) -> pd.DataFrame:
    return drop_volatile(frame)


def ok(name: str, text: str = "done") -> Scenario:
    return Scenario.scripted(
        name,
        [
            Reply.call("echo", {"text": name}, input_tokens=20, output_tokens=4),
            Reply.final(text, input_tokens=30, output_tokens=5),
        ],
    )


def exploding_factory() -> BaseChatModel:
    raise OSError("cannot reach the model host")


def not_a_model_factory() -> BaseChatModel:
    return "not a model"  # type: ignore[return-value]


def scripted_factory() -> BaseChatModel:
    return ScriptedChatModel(["factory answer"], model_name="gpt-4o-mini")


def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


def not_a_tool() -> BaseTool:
    return "not a tool"  # type: ignore[return-value]


def shout_tool() -> BaseTool:
    return StructuredTool.from_function(shout)


def test_failing_scenarios_are_rows_and_never_stop_the_others() -> None:
    sweep = [
        ok("first"),
        # a wrong field is refused when written (test_lab_scenario_fields); a factory's
        # result only a run can check
        Scenario.scripted("tool_factory_returns_junk", [Reply.final("x")], tools=(not_a_tool,)),
        ok("second"),
        Scenario("factory_raises", exploding_factory),
        Scenario("factory_returns_junk", not_a_model_factory),
        Scenario.scripted(
            "provider_down",
            [
                Reply.call("echo", {"text": "a"}, input_tokens=7, output_tokens=3),
                Reply.failure("503"),
            ],
        ),
        Scenario.scripted(
            "script_runs_out", [Reply.call("echo", {"text": "a"}, input_tokens=7, output_tokens=3)]
        ),
        Scenario.scripted(
            "unpriced_with_limit",
            [Reply.final("x", input_tokens=1, output_tokens=1)],
            model_name="a-model-nobody-prices",
            usd_limit=Decimal("1"),
        ),
        ok("third"),
    ]
    for concurrency in (1, 3):
        results = run_scenarios(sweep, concurrency=concurrency, progress=False)
        runs = results.runs.set_index("scenario")
        assert list(runs.index) == [s.name for s in sweep]
        for name in ("first", "second", "third"):
            assert runs.loc[name, "outcome"] == "final_answer"
            assert runs.loc[name, "prompt_tokens"] == 50
        expect = {
            "tool_factory_returns_junk": ("scenario", "tools"),
            "factory_raises": ("scenario", "OSError"),
            "factory_returns_junk": ("scenario", "model"),
            "provider_down": ("loop", "RuntimeError"),
            "script_runs_out": ("loop", "ScriptError"),
            "unpriced_with_limit": ("cost", "unpriced"),
        }
        for name, (kind, reason) in expect.items():
            row = runs.loc[name]
            assert row["outcome"] == "failed", name
            assert (row["error_kind"], row["error_reason"]) == (kind, reason), name
            assert isinstance(row["error"], str)
            assert row["error"], name
        assert "cannot reach the model host" in runs.loc["factory_raises", "error"]
        # Partial counts survive a failure in round 2.
        assert runs.loc["provider_down", "prompt_tokens"] == 7
        assert runs.loc["provider_down", "rounds"] == 1
        assert runs.loc["provider_down", "cost_usd"] > 0
        # A scenario that never started has no events and spent nothing.
        assert results["factory_raises"].events == ()
        assert runs.loc["factory_raises", "total_tokens"] == 0


def test_model_factory_and_tool_factory() -> None:
    scenario = Scenario(
        "factory",
        scripted_factory,
        tools=("echo", shout_tool),
        tags=["custom"],  # type: ignore[arg-type]
    )
    assert scenario.tags == ("custom",)
    results = run_scenarios([scenario], progress=False)
    row = results.runs.iloc[0]
    assert row["outcome"] == "final_answer"
    assert row["final_text"] == "factory answer"
    assert row["model"] == "gpt-4o-mini"
    start = results.records[0].events[0]
    assert start.kind == "loop_start"
    assert start.tools == ("echo", "shout")


def test_result_order_does_not_depend_on_concurrency() -> None:
    sweep = catalog()
    one = run_scenarios(sweep, concurrency=1, progress=False)
    many = run_scenarios(sweep, concurrency=8, progress=False)
    pd.testing.assert_frame_equal(stable(one.runs), stable(many.runs))
    pd.testing.assert_frame_equal(stable(one.rounds), stable(many.rounds))
    assert [r.index for r in many.records] == list(range(len(sweep)))


def test_concurrency_really_overlaps_runs() -> None:
    live = 0
    peak = 0
    lock = threading.Lock()

    async def slow(text: str) -> str:
        """Wait a little, so runs overlap."""
        nonlocal live, peak
        with lock:
            live += 1
            peak = max(peak, live)
        await asyncio.sleep(0.05)
        with lock:
            live -= 1
        return text

    def slow_tool() -> BaseTool:
        return StructuredTool.from_function(coroutine=slow, name="slow", description="wait")

    sweep = [
        Scenario.scripted(
            f"s{i}",
            [Reply.call("slow", {"text": "x"}, input_tokens=1, output_tokens=1), Reply.final("y")],
            tools=(slow_tool,),
        )
        for i in range(6)
    ]
    results = run_scenarios(sweep, concurrency=3, progress=False)
    assert (results.runs["outcome"] == "final_answer").all()
    assert peak == 3


async def test_async_and_sync_forms_agree() -> None:
    sweep = catalog()
    async_results = await arun_scenarios(sweep, progress=False)
    # Called where an event loop is running (as in a notebook cell): runs on a worker thread.
    sync_results = run_scenarios(sweep, progress=False)
    pd.testing.assert_frame_equal(stable(async_results.runs), stable(sync_results.runs))


def test_observers_see_every_event_live() -> None:
    seen: list[Event] = []
    results = run_scenarios(catalog(), observers=[seen.append], concurrency=2, progress=False)
    assert len(seen) == len(results.events)
    by_run: dict[str, list[Event]] = {}
    for event in seen:
        by_run.setdefault(event.run_id, []).append(event)
    for record in results.records:
        if record.events:
            assert tuple(by_run[record.events[0].run_id]) == record.events


def test_a_raising_observer_changes_nothing() -> None:
    def broken(_event: Event) -> None:
        raise ValueError("observer bug")

    quiet = run_scenarios(catalog(), progress=False)
    noisy = run_scenarios(catalog(), observers=[broken], progress=False)
    pd.testing.assert_frame_equal(stable(quiet.runs), stable(noisy.runs))


def test_progress_bar_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    results = run_scenarios(catalog(), progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "scenarios: 100%" in err
    assert "11/11" in err
    # the bar counts failures as the spend table does: a USD stop apart, never a failure
    outcomes = results.runs["outcome"]
    failed = int((outcomes.isin(FAILED_OUTCOMES) & (outcomes != "usd_budget_exhausted")).sum())
    stopped = int((outcomes == "usd_budget_exhausted").sum())
    assert (failed, stopped) == (2, 2)
    assert f"failed={failed}, USD limit={stopped}" in err


def test_no_progress_bar_when_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    run_scenarios(catalog()[:2], progress=False)
    assert capsys.readouterr().err == ""


def test_caller_usd_budget_does_not_leak_into_scenarios() -> None:
    # A scenario carries its own limit: a tiny budget around the sweep changes nothing.
    with usd_budget(Decimal("0.0000001")):
        results = run_scenarios([ok("free")], progress=False)
    assert results.runs.iloc[0]["outcome"] == "final_answer"


def test_price_overrides_apply_under_the_scenario_limit() -> None:
    scenario = Scenario.scripted(
        "own_price",
        [Reply.final("x", input_tokens=1_000_000, output_tokens=1_000_000)],
        model_name="house-model",
        usd_limit=Decimal("100"),
        prices={"house-model": TokenPrice(Decimal("2"), Decimal("3"))},
    )
    row = run_scenarios([scenario], progress=False).runs.iloc[0]
    assert row["outcome"] == "final_answer"
    assert row["cost_usd"] == 5.0


def test_price_overrides_apply_without_a_limit_too() -> None:
    # an in-house model nobody prices gets a cost from the scenario's own table, no cap
    priced = Scenario.scripted(
        "own_price_no_limit",
        [Reply.final("x", input_tokens=1_000_000, output_tokens=2_000_000)],
        model_name="house-model",
        prices={"house-model": TokenPrice(Decimal("2"), Decimal("3"))},
    )
    unpriced = Scenario.scripted(
        "no_price",
        [Reply.final("x", input_tokens=1_000_000, output_tokens=2_000_000)],
        model_name="house-model",
    )
    assert priced.usd_limit is None
    assert priced.build_agent().prices == {"house-model": TokenPrice(Decimal(2), Decimal(3))}
    runs = run_scenarios([priced, unpriced], progress=False).runs.set_index("scenario")
    assert runs.loc["own_price_no_limit", "outcome"] == "final_answer"
    assert bool(runs.loc["own_price_no_limit", "cost_known"]) is True
    assert runs.loc["own_price_no_limit", "cost_usd"] == 8.0
    assert bool(runs.loc["no_price", "cost_known"]) is False


def test_sweep_level_mistakes_raise_before_anything_runs() -> None:
    with pytest.raises(ConfigurationError) as duplicate:
        run_scenarios([ok("same"), ok("same")], progress=False)
    assert duplicate.value.field == "scenarios"
    with pytest.raises(ConfigurationError) as zero:
        run_scenarios([ok("a")], concurrency=0, progress=False)
    assert zero.value.field == "concurrency"
    with pytest.raises(ConfigurationError):
        run_scenarios(["not a scenario"], progress=False)  # type: ignore[list-item]


def test_a_scenario_past_its_time_limit_is_a_row_and_the_sweep_goes_on() -> None:
    # One scenario's model never answers its second call: the sweep returns (the scenario's
    # limit cancels it where it is) with every other row, and its row says it timed out,
    # with the round it had paid for.
    sweep = [ok("first"), Scenario("hangs", HangsAfterOneRound("hangs")), ok("second")]
    results = run_scenarios(sweep, scenario_timeout_s=2.0, concurrency=1, progress=False)
    assert_timed_out_row(results, "hangs", 2.0)
    good = LabResults(tuple(r for r in results.records if r.scenario != "hangs"))
    reference = run_scenarios([ok("first"), ok("second")], progress=False)
    pd.testing.assert_frame_equal(stable(good.runs), stable(reference.runs))


def test_the_scenario_time_limit_is_checked_before_anything_runs() -> None:
    assert DEFAULT_SCENARIO_TIMEOUT_S == 3600.0
    for bad in (0, -1.0, math.nan, math.inf, True, "60", 10**400):
        with pytest.raises(ConfigurationError) as limit:
            run_scenarios([ok("a")], scenario_timeout_s=bad, progress=False)  # type: ignore[arg-type]
        assert limit.value.field == "scenario_timeout_s"
        assert str(limit.value).startswith("scenario_timeout_s: ")
    unlimited = run_scenarios([ok("a")], scenario_timeout_s=None, progress=False)
    assert list(unlimited.runs["outcome"]) == ["final_answer"]


def test_scenario_spec_validation() -> None:
    with pytest.raises(ConfigurationError) as half_usage:
        Reply.final("x", input_tokens=3)
    assert half_usage.value.field == "input_tokens"
    with pytest.raises(ConfigurationError):
        Reply.final("x", input_tokens=-1, output_tokens=1)
    with pytest.raises(ConfigurationError) as no_name:
        Scenario.scripted(" ", [Reply.final("x")])
    assert no_name.value.field == "name"
    with pytest.raises(ConfigurationError) as prices:
        Scenario.scripted("p", [Reply.final("x")], prices={"m": 0.5})  # type: ignore[dict-item]
    assert prices.value.field == "prices"
    with pytest.raises(ConfigurationError) as unnamed:
        Scenario.scripted("p", [Reply.final("x")], prices={"": TokenPrice(Decimal(1), Decimal(1))})
    assert unnamed.value.field == "prices"
    no_limit = Scenario.scripted("p", [Reply.final("x")], prices={"m": TokenPrice(1, 1)})  # type: ignore[arg-type]
    assert no_limit.prices == {"m": TokenPrice(Decimal(1), Decimal(1))}
    with pytest.raises(ConfigurationError) as limit:
        Scenario.scripted("n", [Reply.final("x")], usd_limit=-1)
    assert limit.value.field == "usd_limit"
    assert Scenario.scripted("f", [Reply.final("x")], usd_limit=0.1).usd_limit == Decimal("0.1")


def test_the_same_scenario_runs_twice_identically() -> None:
    scenario = catalog()[1]
    a = run_scenarios([scenario], progress=False)
    b = run_scenarios([scenario], progress=False)
    pd.testing.assert_frame_equal(stable(a.runs), stable(b.runs))


def test_scenarios_and_records_pickle() -> None:
    sweep = catalog()
    assert pickle.loads(pickle.dumps(sweep)) == sweep
    results = run_scenarios(sweep, progress=False)
    records = pickle.loads(pickle.dumps(results.records))
    assert records == results.records
    pd.testing.assert_frame_equal(LabResults(records).runs, results.runs)
    # what crosses a process boundary comes back as frozen as it left
    event = records[0].events[-1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.round = 99  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        records[0].events[-1].usage.input_tokens = 1  # type: ignore[union-attr, misc]
    with pytest.raises(TypeError, match="frozen"):
        records[0].events[0].metadata["x"] = 1  # type: ignore[index]


def _run_in(pool: ProcessPoolExecutor, scenarios: tuple[Scenario, ...]) -> list[ScenarioRun]:
    return [pool.submit(run_one, s, i).result() for i, s in enumerate(scenarios)]


def test_run_one_in_a_fresh_process_gives_the_same_frames() -> None:
    sweep = catalog()
    local = run_scenarios(sweep, progress=False)
    ctx: Any = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        remote = LabResults(tuple(_run_in(pool, sweep)))
    pd.testing.assert_frame_equal(stable(local.runs), stable(remote.runs))


def _all_ran(results: LabResults) -> list[tuple[str, str | None]]:
    return [(r.scenario, r.error_message) for r in results.records]


def test_a_default_process_pool_runs_every_scenario() -> None:
    # the pool's default start method (fork on Linux): its workers are forked from a
    # thread that is running the sweep's event loop at that moment
    sweep = catalog()[:3]
    local = run_scenarios(sweep, progress=False)
    with ProcessPoolExecutor(2) as pool:
        remote = run_scenarios(sweep, executor=pool, progress=False)
        again = run_scenarios(sweep, executor=pool, progress=False)  # the same workers
    assert _all_ran(remote) == _all_ran(again) == [(s.name, None) for s in sweep]
    pd.testing.assert_frame_equal(stable(local.runs), stable(remote.runs))
    pd.testing.assert_frame_equal(stable(local.runs), stable(again.runs))


async def test_a_default_process_pool_runs_every_scenario_from_a_running_loop() -> None:
    # a notebook cell: the sync call hands the sweep to the background loop, whose
    # thread forks the workers; the async call forks them from this loop's own thread
    sweep = catalog()[:3]
    local = await arun_scenarios(sweep, progress=False)
    with ProcessPoolExecutor(2) as pool:
        remote = run_scenarios(sweep, executor=pool, progress=False)
    with ProcessPoolExecutor(2) as pool:
        awaited = await arun_scenarios(sweep, executor=pool, progress=False)
    assert _all_ran(remote) == _all_ran(awaited) == [(s.name, None) for s in sweep]
    pd.testing.assert_frame_equal(stable(local.runs), stable(remote.runs))
    pd.testing.assert_frame_equal(stable(local.runs), stable(awaited.runs))


@contextlib.contextmanager
def _stuck_after(seconds: int) -> Iterator[None]:
    """Only a deadlock guard (this thread must be the main one): a hang becomes a failure,
    since SIGALRM interrupts an event loop's wait."""

    def stuck(_signum: int, _frame: Any) -> None:
        raise AssertionError(f"stuck for {seconds} s")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_workers_forked_from_another_thread_leave_this_thread_s_loop_working() -> None:
    # A forked child drops every thread but the forking one; closing its copy of this
    # thread's idle loop would unregister this process's wake-up socket (the epoll instance
    # is shared), and the next sync tool here would never be heard back from.
    assert threading.current_thread() is threading.main_thread()
    # file_read is a sync tool: it runs on a worker thread, which then wakes the loop
    sweep = [
        Scenario.scripted(
            f"read_{n}",
            [Reply.call("file_read", {"path": "report.txt"}), Reply.final("read")],
            tools=("file_read",),
        )
        for n in range(2)
    ]
    local = run_scenarios(sweep, progress=False)  # this thread's loop: idle between runs
    with ProcessPoolExecutor(2) as pool, ThreadPoolExecutor(1) as other:
        remote = other.submit(run_scenarios, sweep, executor=pool, progress=False).result()
    assert _all_ran(remote) == [(s.name, None) for s in sweep]
    with _stuck_after(60):
        again = run_scenarios(sweep, progress=False)
    pd.testing.assert_frame_equal(stable(local.runs), stable(again.runs))


def test_agent_config_travels_with_the_scenario() -> None:
    scenario = Scenario.scripted(
        "capped",
        [Reply.call("echo", {"text": "a"}, text="more", input_tokens=1, output_tokens=1)] * 3,
        config=AgentConfig(tool_max_rounds=2),
    )
    row = run_scenarios([scenario], progress=False).runs.iloc[0]
    assert row["outcome"] == "synthesis"
    assert row["rounds"] == 2
    assert row["synthesis_reason"] == "round_cap"


def test_file_read_reads_the_scenario_data_dir(tmp_path: Path) -> None:
    (tmp_path / "report.txt").write_text("local figures only", encoding="utf-8")
    mine = Scenario.scripted(
        "mine",
        [Reply.call("file_read", {"path": "report.txt"}), Reply.final("ok")],
        tools=("file_read",),
        data_dir=str(tmp_path),
    )
    packaged = Scenario.scripted(
        "packaged",
        [Reply.call("file_read", {"path": "report.txt"}), Reply.final("ok")],
        tools=("file_read",),
    )
    escape = Scenario.scripted(
        "escape",
        [Reply.call("file_read", {"path": "../report.txt"}), Reply.final("ok")],
        tools=("file_read",),
        data_dir=str(tmp_path),
    )
    results = run_scenarios([mine, packaged, escape], progress=False)
    contents = {
        record.scenario: [e.content for e in record.events if e.kind == "tool_dispatch"]
        for record in results.records
    }
    assert contents["mine"] == ["local figures only"]
    assert contents["packaged"][0].startswith("ACME Corp. quarterly report")
    assert "'..' is not allowed" in contents["escape"][0]
    assert results.runs.set_index("scenario").loc["escape", "tool_errors"] == 1
