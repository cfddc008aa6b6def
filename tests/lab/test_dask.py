"""Sweeps off this process: ``run_scenarios(executor=...)`` and ``run_scenarios_on_dask``.

The Dask tests share one ``LocalCluster`` of 2 worker processes (1 thread each). Without
Dask's ``distributed`` installed, or where worker processes cannot start, they are skipped
with the reason, except under ``CI=true``, where they fail: CI installs the extra. The
tests on the cluster are marked ``slow`` (the fast run, ``-m "not browser and not slow"``,
leaves them out).
"""

from __future__ import annotations

import asyncio
import importlib
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
import pytest
from dask_helpers import (
    AlwaysDie,
    BlockOnce,
    DieOnce,
    HangsAfterOneRound,
    assert_timed_out_row,
    attempts,
    checked_sweep,
    generated,
    plain,
    tally_reads,
    tally_scenario,
)
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab import ScriptedChatModel
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import FAILED_OUTCOMES, Event
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    arun_scenarios,
    catalog,
    drop_volatile,
    run_scenarios,
    run_scenarios_on_dask,
)
from toolloop_lab.lab._dask import EXTRA, run_batch
from toolloop_lab.workloads import files_sweep


# -- helpers ---------------------------------------------------------------------------
def comparable(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The frame sorted by ``keys`` without timing or run-id columns (they differ per run)."""
    kept = drop_volatile(frame)
    return kept.sort_values(keys, kind="stable").reset_index(drop=True)


def assert_same_frames(remote: LabResults, local: LabResults) -> None:
    """Runs, rounds and the event kinds agree, ignoring row order and durations; and the
    rows are in scenario order, not completion order."""
    assert list(remote.runs["scenario"]) == list(local.runs["scenario"])
    pd.testing.assert_frame_equal(
        comparable(remote.runs, ["scenario"]), comparable(local.runs, ["scenario"])
    )
    pd.testing.assert_frame_equal(
        comparable(remote.rounds, ["scenario", "round"]),
        comparable(local.rounds, ["scenario", "round"]),
    )
    columns = ["scenario", "seq", "kind", "round"]
    pd.testing.assert_frame_equal(
        comparable(remote.events[columns], ["scenario", "seq"]),
        comparable(local.events[columns], ["scenario", "seq"]),
    )


def events_by_run(events: list[Event]) -> dict[str, tuple[Event, ...]]:
    runs: dict[str, list[Event]] = {}
    for event in events:
        runs.setdefault(event.run_id, []).append(event)
    return {run_id: tuple(items) for run_id, items in runs.items()}


def assert_observers_saw_every_run_in_order(seen: list[Event], results: LabResults) -> None:
    by_run = events_by_run(seen)
    assert len(seen) == len(results.events)
    for record in results.records:
        if record.events:
            assert by_run[record.events[0].run_id] == record.events


def spawn_pool(workers: int) -> ProcessPoolExecutor:
    """Fresh interpreters, like a remote worker: nothing is inherited but ``sys.path``."""
    ctx: Any = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(workers, mp_context=ctx)


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the Dask tests must run under CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def sweep() -> list[Scenario]:
    """The catalog plus 200 generated scenarios (rounds, tools, budgets and failures vary)."""
    return [*catalog(), *generated(200)]


@pytest.fixture(scope="module")
def local(sweep: list[Scenario]) -> LabResults:
    return run_scenarios(sweep, progress=False)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A synchronous Client on a LocalCluster of 2 worker processes.

    Two scheduler settings make the kill tests exact: ``allowed-failures: 0`` turns the
    first lost attempt into ``KilledWorker`` (so the retry under test is ours, not Dask's
    own rescheduling), and ``worker-saturation: 1.0`` gives each 1-thread worker one task at
    a time (so a dying worker takes down only the scenario it was running).

    And the cluster keeps both workers, however often the tests kill them. A worker's nanny
    starts it again, but ``LocalCluster`` also closes that nanny for good when, a
    ``deploy.lost-worker-timeout`` (15 s) after a worker left, none of its name is back:
    under load a start takes that long, or the worker was killed again meanwhile. The
    cluster then ran on one worker (a test's scenarios were lost with the worker the nanny
    closed) or none (a sweep waited forever for a result to be computed again). The
    settings hold while the cluster lives: the cluster reads that one when a worker leaves.
    """
    try:
        dask = importlib.import_module("dask")
        distributed = importlib.import_module("distributed")
    except ImportError as exc:
        unavailable(f"Dask's distributed is not installed ({exc}); install {EXTRA}")
    settings = {
        "distributed.scheduler.allowed-failures": 0,
        "distributed.scheduler.worker-saturation": 1.0,
        "distributed.deploy.lost-worker-timeout": "1h",
    }
    with dask.config.set(settings):
        try:
            cluster = distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                # No dashboard, yet the scheduler's HTTP server would still take port 8787
                # (warning when it is taken): any free port instead.
                scheduler_kwargs={"dashboard_address": ":0"},
            )
        except (OSError, RuntimeError, TimeoutError) as exc:
            unavailable(f"cannot start a LocalCluster of worker processes here: {exc!r}")
        with cluster, distributed.Client(cluster) as dask_client:
            dask_client.wait_for_workers(2, timeout=60)
            yield dask_client


# -- executors without Dask ------------------------------------------------------------
def test_a_process_pool_gives_the_frames_of_a_local_run(
    sweep: list[Scenario], local: LabResults
) -> None:
    seen: list[Event] = []
    with spawn_pool(2) as pool:
        remote = run_scenarios(sweep, executor=pool, observers=[seen.append], progress=False)
    assert_same_frames(remote, local)
    assert_observers_saw_every_run_in_order(seen, remote)
    assert [r.index for r in remote.records] == list(range(len(sweep)))


def assert_same_checked_sweep(remote: LabResults, local: LabResults) -> None:
    """Variants, repeats and checks read the same wherever the sweep ran."""
    keys = ["scenario", "variant", "repeat"]
    pd.testing.assert_frame_equal(comparable(remote.runs, keys), comparable(local.runs, keys))
    assert list(remote.runs["passed"]) == list(local.runs["passed"])
    assert list(remote.runs["failed_checks"]) == list(local.runs["failed_checks"])
    pd.testing.assert_frame_equal(remote.frontier(), local.frontier())


@pytest.fixture(scope="module")
def checked_local() -> LabResults:
    scenarios, variants = checked_sweep()
    return run_scenarios(scenarios, variants=variants, repeats=2, progress=False)


def test_variants_and_checks_read_the_same_locally(checked_local: LabResults) -> None:
    runs = checked_local.runs
    assert len(runs) == 3 * 2 * 2
    want = {("needs_1", "cap 2"): True, ("needs_2", "cap 2"): False, ("needs_3", "cap 2"): False}
    for row in runs.to_dict("records"):
        assert row["passed"] == want.get((row["scenario"], row["variant"]), True), row
    assert checked_local.frontier()["pass_rate"].tolist() == pytest.approx([1 / 3, 1.0])


def test_variants_and_checks_on_a_process_pool_equal_a_local_run(
    checked_local: LabResults,
) -> None:
    scenarios, variants = checked_sweep()
    with spawn_pool(2) as pool:
        remote = run_scenarios(
            scenarios, variants=variants, repeats=2, executor=pool, progress=False
        )
    assert_same_checked_sweep(remote, checked_local)


def assert_fresh_backend_per_run(results: LabResults) -> None:
    """Every run read 2 then 3 (its tools shared one backend over both turns, and no other
    run touched it), and some worker ran several of them (so freshness was put to the
    test: a backend kept in a worker between runs would have read more)."""
    pids: list[int] = []
    for record in results:
        reads = tally_reads(record)
        assert [count for count, _ in reads] == [2, 3], (record.scenario, record.error_message)
        assert len({pid for _, pid in reads}) == 1  # both turns ran in one process
        pids.append(reads[0][1])
    assert os.getpid() not in pids
    assert max(pids.count(p) for p in set(pids)) >= 2


def test_stateful_tools_get_a_fresh_backend_per_run_on_a_process_pool() -> None:
    scenarios = [tally_scenario(f"tally_{i}") for i in range(6)]
    with spawn_pool(2) as pool:
        results = run_scenarios(scenarios, executor=pool, progress=False)
    assert_fresh_backend_per_run(results)


def test_the_files_workload_on_a_process_pool_equals_a_local_run() -> None:
    scenarios = files_sweep()
    with spawn_pool(2) as pool:
        remote = run_scenarios(scenarios, executor=pool, progress=False)
    local = run_scenarios(scenarios, progress=False)
    assert_same_frames(remote, local)
    for name in ("turns", "tools"):
        pd.testing.assert_frame_equal(
            drop_volatile(getattr(remote, name)), drop_volatile(getattr(local, name)), obj=name
        )
    assert remote.turns["tool_errors"].sum() > 0  # the tight config's knock-on errors travel


async def test_the_async_form_takes_an_executor_too() -> None:
    scenarios = catalog()
    with ThreadPoolExecutor(3) as pool:
        remote = await arun_scenarios(scenarios, executor=pool, concurrency=2, progress=False)
    assert_same_frames(remote, await arun_scenarios(scenarios, progress=False))


def test_a_dead_pool_worker_loses_nothing_that_completed(tmp_path: Path) -> None:
    # One worker runs the sweep in order: five scenarios finish, the sixth kills the
    # process, and every scenario still pending is lost with the pool. All are rows.
    first = generated(5)
    rest = generated(9)[5:]
    killer = Scenario("kills_the_pool", AlwaysDie(str(tmp_path / "killer.log")))
    scenarios = [*first, killer, *rest]
    with spawn_pool(1) as pool:
        results = run_scenarios(scenarios, executor=pool, progress=False)
    assert [r.scenario for r in results.records] == [s.name for s in scenarios]
    assert_same_frames(LabResults(results.records[:5]), run_scenarios(first, progress=False))
    lost = results.runs.iloc[5:]
    assert list(lost["scenario"]) == ["kills_the_pool", *(s.name for s in rest)]
    assert (lost["outcome"] == "failed").all()
    assert (lost["error_kind"] == "worker_lost").all()
    assert (lost["error_reason"] == "BrokenProcessPool").all()
    assert lost["error"].str.contains("terminated abruptly").all()


def test_a_scenario_that_cannot_be_shipped_is_a_row() -> None:
    def local_factory() -> ScriptedChatModel:  # a local function: pickle refuses it
        return ScriptedChatModel(["never"])

    scenarios = [*catalog()[:2], Scenario("unshippable", local_factory), catalog()[2]]
    with spawn_pool(1) as pool:
        results = run_scenarios(scenarios, executor=pool, progress=False)
    runs = results.runs.set_index("scenario")
    row = runs.loc["unshippable"]
    assert (row["outcome"], row["error_kind"]) == ("failed", "executor")
    # pickle's own words name the function it could not ship ("Can't pickle local object"
    # up to Python 3.12, "Can't get local object" from 3.13)
    assert "local object" in row["error"]
    assert "local_factory" in row["error"]
    assert (runs.drop(index="unshippable")["error_kind"].isna()).all()


def test_a_scenario_past_its_time_limit_on_a_process_pool_is_a_row() -> None:
    sweep = [*catalog()[:2], Scenario("hangs", HangsAfterOneRound("hangs")), catalog()[2]]
    with spawn_pool(2) as pool:
        results = run_scenarios(sweep, executor=pool, scenario_timeout_s=2.0, progress=False)
    assert [r.scenario for r in results.records] == [s.name for s in sweep]
    assert_timed_out_row(results, "hangs", 2.0)
    good = LabResults(tuple(r for r in results.records if r.scenario != "hangs"))
    assert_same_frames(good, run_scenarios([*catalog()[:3]], progress=False))


class CancellingExecutor(Executor):
    """An executor whose futures come back cancelled, as after ``shutdown(cancel_futures)``."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.cancel()
        return future


def test_a_cancelled_future_is_a_row_not_a_hole() -> None:
    results = run_scenarios(catalog()[:3], executor=CancellingExecutor(), progress=False)
    assert len(results) == 3
    assert list(results.runs["error_kind"]) == ["cancelled"] * 3
    assert list(results.runs["error_reason"]) == ["CancelledError"] * 3


class GatedExecutor(Executor):
    """Threads that hold every task until ``opens_at`` tasks were submitted; it records the
    most tasks ever in flight at once."""

    def __init__(self, opens_at: int) -> None:
        self.pool = ThreadPoolExecutor(8)
        self.gate = threading.Event()
        self.opens_at = opens_at
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            if self.in_flight >= self.opens_at:
                self.gate.set()

        def gated() -> Any:
            self.gate.wait(timeout=10)
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.in_flight -= 1

        return self.pool.submit(gated)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.pool.shutdown(wait, cancel_futures=cancel_futures)


def test_an_executor_gets_every_scenario_at_once_unless_capped() -> None:
    scenarios = catalog()[:6]
    with GatedExecutor(opens_at=6) as everything:
        run_scenarios(scenarios, executor=everything, progress=False)
    assert everything.peak == 6  # the executor's workers set the pace, not the sweep
    with GatedExecutor(opens_at=2) as capped:
        results = run_scenarios(scenarios, executor=capped, concurrency=2, progress=False)
    assert capped.peak == 2
    assert list(results.runs["scenario"]) == [s.name for s in scenarios]


def test_an_executor_must_be_an_executor() -> None:
    class LooksLikeAClient:
        def get_executor(self) -> Executor:
            return ThreadPoolExecutor(1)

    with pytest.raises(ConfigurationError) as wrong:
        run_scenarios(catalog(), executor=LooksLikeAClient(), progress=False)  # type: ignore[arg-type]
    assert wrong.value.field == "executor"
    assert "client.get_executor()" in str(wrong.value)
    with pytest.raises(ConfigurationError) as zero:
        run_scenarios(catalog(), executor=CancellingExecutor(), concurrency=0, progress=False)
    assert zero.value.field == "concurrency"


# -- Dask stays optional ---------------------------------------------------------------
def test_the_package_and_the_lab_never_import_dask() -> None:
    code = """
        import sys
        from concurrent.futures import ThreadPoolExecutor
        import toolloop_lab, toolloop_lab.lab, toolloop_lab.lab._dask
        from toolloop_lab.lab import catalog, run_scenarios
        with ThreadPoolExecutor(2) as pool:
            run_scenarios(catalog(), executor=pool, progress=False)
        print(sorted(m for m in sys.modules if m.split(".")[0] in {"dask", "distributed"}))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_dask_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # makes `import distributed` fail
    with pytest.raises(ImportError, match=r"toolloop-lab\[dask\]"):
        run_scenarios_on_dask(catalog(), object(), progress=False)  # type: ignore[arg-type]


def test_dask_sweep_arguments_are_checked_before_anything_runs() -> None:
    class AsyncClient:
        asynchronous = True

    with pytest.raises(ConfigurationError) as retries:
        run_scenarios_on_dask(catalog(), AsyncClient(), retries=-1)  # type: ignore[arg-type]
    assert retries.value.field == "retries"
    with pytest.raises(ConfigurationError) as not_sync:
        run_scenarios_on_dask(catalog(), AsyncClient())  # type: ignore[arg-type]
    assert not_sync.value.field == "client"
    with pytest.raises(ConfigurationError) as twice:
        run_scenarios_on_dask([catalog()[0], catalog()[0]], AsyncClient())  # type: ignore[arg-type]
    assert twice.value.field == "scenarios"
    for size in (0, -1, 1.5, True, "4"):
        with pytest.raises(ConfigurationError) as batch:
            run_scenarios_on_dask(catalog(), AsyncClient(), batch_size=size)  # type: ignore[arg-type]
        assert batch.value.field == "batch_size"
    for bad in (0, -1, 1.5, True, "4", None):
        with pytest.raises(ConfigurationError) as concurrency:
            run_scenarios_on_dask(catalog(), AsyncClient(), concurrency=bad)  # type: ignore[arg-type]
        assert concurrency.value.field == "concurrency"


# -- one task's batch, run in this process ---------------------------------------------
def waiting_for_each_other(barrier: threading.Barrier) -> Callable[[], list[BaseTool]]:
    """A tools factory: ``meet`` returns once as many runs as ``barrier`` counts call it,
    or fails when they do not all come within its timeout (runs one after another)."""

    def factory() -> list[BaseTool]:
        def meet(text: str) -> str:
            """Wait for the other runs."""
            barrier.wait()
            return text

        return [StructuredTool.from_function(meet, name="meet")]

    return factory


def test_a_batch_runs_its_scenarios_at_once_like_the_local_sweep() -> None:
    barrier = threading.Barrier(3, timeout=30)
    scenarios = [
        Scenario.scripted(
            f"meet_{i}",
            [Reply.call("meet", {"text": f"m{i}"}), Reply.final(f"met {i}")],
            tools=(),
            tools_factory=waiting_for_each_other(barrier),
        )
        for i in range(3)
    ]
    runs = run_batch(scenarios, [7, 8, 9], concurrency=3)
    assert [(r.scenario, r.index) for r in runs] == [("meet_0", 7), ("meet_1", 8), ("meet_2", 9)]
    # Each tool call returned only because the three runs were in flight together.
    assert [r.final_text for r in runs] == ["met 0", "met 1", "met 2"]
    assert all(tool.status == "success" for r in runs for tool in r.view().rounds[0].tools)
    assert not barrier.broken


def test_a_batch_keeps_its_order_and_positions_at_any_concurrency() -> None:
    scenarios = generated(9)
    local = run_scenarios(scenarios, progress=False)
    for concurrency in (1, 4, 20):
        runs = run_batch(scenarios[2:], range(2, 9), concurrency=concurrency)
        assert [r.index for r in runs] == list(range(2, 9))
        assert_same_frames(LabResults(runs), LabResults(local.records[2:]))


# -- on a LocalCluster -----------------------------------------------------------------
@pytest.mark.slow
def test_the_cluster_gives_the_frames_of_a_local_run(
    client: Any, sweep: list[Scenario], local: LabResults
) -> None:
    assert_same_frames(run_scenarios_on_dask(sweep, client, progress=False), local)
    # The documented executor form: Dask's concurrent.futures facade.
    via_executor = run_scenarios(sweep, executor=client.get_executor(), progress=False)
    assert_same_frames(via_executor, local)
    # The sweep really ran on both worker processes, not here.
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2
    assert os.getpid() not in pids


@pytest.mark.slow
def test_progress_and_observers_follow_the_results(
    client: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Event] = []
    results = run_scenarios_on_dask(catalog(), client, observers=[seen.append])
    assert_observers_saw_every_run_in_order(seen, results)
    err = capsys.readouterr().err
    assert "scenarios: 100%" in err
    assert "11/11" in err
    failures = FAILED_OUTCOMES - {"usd_budget_exhausted"}  # a USD stop is counted apart
    assert f"failed={int(results.runs['outcome'].isin(failures).sum())}" in err
    assert "failed=2, USD limit=2" in err  # a USD stop is counted apart, never as a failure
    assert len(run_scenarios_on_dask([], client, progress=False)) == 0


@pytest.mark.slow
def test_a_worker_killed_mid_sweep_loses_nothing(client: Any, tmp_path: Path) -> None:
    log = tmp_path / "blocked.log"
    normal = generated(60)
    scenarios = [*normal[:5], Scenario("blocked", BlockOnce(str(log), "blocked")), *normal[5:]]
    arrived: list[str] = []  # run ids of results as they arrive
    before_kill: list[str] = []
    lock = threading.Lock()

    def observe(event: Event) -> None:
        if event.kind == "loop_start":
            with lock:
                arrived.append(event.run_id)

    def kill_the_blocked_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with lock:
                ready = len(arrived) >= 3
                if ready and attempts(log):
                    before_kill.extend(arrived)
                    os.kill(attempts(log)[0], signal.SIGKILL)
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_blocked_worker, daemon=True)
    killer.start()
    results = run_scenarios_on_dask(scenarios, client, observers=[observe], progress=False)
    killer.join(timeout=5)

    pids = attempts(log)
    assert len(pids) == 2  # killed once, then run again on a live worker
    assert pids[0] != pids[1]
    assert 3 <= len(before_kill) < len(scenarios)  # the kill came mid-sweep
    # Every result taken before the kill is in the sweep as it was (same run id: the very
    # run that finished, not a re-run), and every scenario is accounted for.
    assert set(before_kill) <= set(results.runs["run_id"])
    reference = [*normal[:5], Scenario("blocked", plain("blocked")), *normal[5:]]
    assert_same_frames(results, run_scenarios(reference, progress=False))
    assert results["blocked"].final_text == "blocked survived"


@pytest.mark.slow
def test_a_lost_scenario_is_retried_once_then_reported(
    client: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    once, always = tmp_path / "once.log", tmp_path / "always.log"
    normal = generated(30)
    scenarios = [
        *normal[:3],
        Scenario("dies_once", DieOnce(str(once), "dies_once")),
        *normal[3:10],
        Scenario("always_dies", AlwaysDie(str(always))),
        *normal[10:],
    ]
    results = run_scenarios_on_dask(scenarios, client, retries=1)
    assert [r.scenario for r in results.records] == [s.name for s in scenarios]

    # Died once, then ran again; a third run is Dask recomputing a result it had not yet
    # handed over when its worker died (always_dies may land on that worker next).
    first, *later = attempts(once)
    assert later
    assert first not in client.run(os.getpid).values()
    assert results["dies_once"].outcome == "final_answer"
    assert results["dies_once"].final_text == "dies_once survived"

    assert len(attempts(always)) == 2
    row = results.runs.set_index("scenario").loc["always_dies"]
    assert (row["outcome"], row["error_kind"], row["error_reason"]) == (
        "failed",
        "worker_lost",
        "KilledWorker",
    )
    assert "workers died while running it" in row["error"]
    assert row["error"].endswith("(gave up after 2 attempts)")
    assert row["total_tokens"] == 0

    others = LabResults(tuple(r for r in results.records if r.scenario in {s.name for s in normal}))
    assert_same_frames(others, run_scenarios(normal, progress=False))
    err = capsys.readouterr().err
    assert "retried=2" in err
    failures = FAILED_OUTCOMES - {"usd_budget_exhausted"}  # a USD stop is counted apart
    assert f"failed={int(others.runs['outcome'].isin(failures).sum()) + 1}" in err


@pytest.mark.slow
def test_retries_zero_reports_the_first_loss(client: Any, tmp_path: Path) -> None:
    log = tmp_path / "once.log"
    scenarios = [*catalog()[:3], Scenario("dies_once", DieOnce(str(log), "dies_once"))]
    results = run_scenarios_on_dask(scenarios, client, retries=0, progress=False)
    assert len(attempts(log)) == 1
    row = results.runs.set_index("scenario").loc["dies_once"]
    assert (row["error_kind"], row["error_reason"]) == ("worker_lost", "KilledWorker")
    assert "gave up" not in row["error"]
    assert list(results.runs["outcome"][:3]) == ["final_answer", "final_answer", "synthesis"]


@pytest.mark.slow
def test_the_async_executor_form_runs_on_the_cluster(client: Any) -> None:
    async def sweep() -> LabResults:
        return await arun_scenarios(catalog(), executor=client.get_executor(), progress=False)

    assert_same_frames(asyncio.run(sweep()), run_scenarios(catalog(), progress=False))


@pytest.mark.slow
def test_variants_and_checks_on_dask_equal_a_local_run(
    client: Any, checked_local: LabResults
) -> None:
    scenarios, variants = checked_sweep()
    remote = run_scenarios_on_dask(scenarios, client, variants=variants, repeats=2, progress=False)
    assert_same_checked_sweep(remote, checked_local)


@pytest.mark.slow
def test_stateful_tools_get_a_fresh_backend_per_run_on_dask(client: Any) -> None:
    scenarios = [tally_scenario(f"tally_{i}") for i in range(6)]
    results = run_scenarios_on_dask(scenarios, client, progress=False)
    assert_fresh_backend_per_run(results)
    assert_same_frames(results, run_scenarios(scenarios, progress=False))


@pytest.mark.slow
def test_a_lost_batch_sends_each_scenario_again_alone_at_no_attempts_cost(
    client: Any, tmp_path: Path
) -> None:
    # Two batches of five. The first holds a scenario that kills its worker every time and
    # one that kills it once: the batch's loss is no one's attempt, so with retries=0 the
    # one-off death runs again (alone) and answers, the every-time one dies alone and is
    # the only row lost, and every neighbour is there as a local run has it.
    once, always = tmp_path / "once.log", tmp_path / "always.log"
    normal = generated(8)
    scenarios = [
        *normal[:2],
        Scenario("dies_once", DieOnce(str(once), "dies_once")),
        Scenario("always_dies", AlwaysDie(str(always))),
        *normal[2:],
    ]
    results = run_scenarios_on_dask(scenarios, client, retries=0, batch_size=5, progress=False)
    assert [r.scenario for r in results.records] == [s.name for s in scenarios]
    assert results["dies_once"].final_text == "dies_once survived"
    # the batch starts its scenarios in order: dies_once took the worker down (as it was
    # built) before always_dies began in its batch, then alone (a third run is Dask
    # recomputing a result it had not yet handed over when always_dies took that worker
    # down)
    assert 2 <= len(attempts(once)) <= 3
    assert len(attempts(always)) == 1  # alone only
    row = results.runs.set_index("scenario").loc["always_dies"]
    assert (row["error_kind"], row["error_reason"]) == ("worker_lost", "KilledWorker")
    assert "gave up" not in row["error"]  # one attempt of its own, as retries=0 allows
    others = LabResults(tuple(r for r in results.records if r.scenario in {s.name for s in normal}))
    assert_same_frames(others, run_scenarios(normal, progress=False))


class Locked:
    """A model factory holding a lock: no pickler ships it (``cannot pickle
    '_thread.lock' object``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self) -> ScriptedChatModel:
        return ScriptedChatModel(["never"])


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [None, 4])
def test_a_scenario_that_cannot_be_shipped_to_dask_is_a_row_naming_it(
    client: Any, batch_size: int | None
) -> None:
    # One scenario that will not pickle, alone in its task or in a batch of good ones:
    # the sweep still returns every good row, and the bad one is a failed row that says
    # which scenario could not be sent and why, as on the process-pool path.
    normal = generated(9)
    scenarios = [*normal[:3], Scenario("holds_a_lock", Locked()), *normal[3:]]
    results = run_scenarios_on_dask(scenarios, client, batch_size=batch_size, progress=False)
    assert [r.scenario for r in results.records] == [s.name for s in scenarios]
    row = results.runs.set_index("scenario").loc["holds_a_lock"]
    assert (row["outcome"], row["error_kind"]) == ("failed", "executor")
    assert "holds_a_lock" in row["error"]
    assert "cannot pickle '_thread.lock' object" in row["error"]
    assert row["total_tokens"] == 0
    others = LabResults(tuple(r for r in results.records if r.scenario != "holds_a_lock"))
    assert_same_frames(others, run_scenarios(normal, progress=False))


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [None, 4])
def test_a_scenario_past_its_time_limit_on_dask_is_a_row(
    client: Any, batch_size: int | None
) -> None:
    # Alone in its task or in a batch: the worker's own limit ends it, the task returns
    # with its neighbours' rows, and the sweep never waits on it.
    normal = generated(7)
    sweep = [*normal[:2], Scenario("hangs", HangsAfterOneRound("hangs")), *normal[2:]]
    results = run_scenarios_on_dask(
        sweep, client, scenario_timeout_s=2.0, batch_size=batch_size, progress=False
    )
    assert [r.scenario for r in results.records] == [s.name for s in sweep]
    assert_timed_out_row(results, "hangs", 2.0)
    good = LabResults(tuple(r for r in results.records if r.scenario != "hangs"))
    assert_same_frames(good, run_scenarios(normal, progress=False))
    with pytest.raises(ConfigurationError) as limit:
        run_scenarios_on_dask(sweep, client, scenario_timeout_s=0, progress=False)
    assert limit.value.field == "scenario_timeout_s"


@pytest.mark.slow
def test_a_large_sweep_goes_out_in_batches_with_the_frames_of_a_local_run(
    client: Any, sweep: list[Scenario], local: LabResults
) -> None:
    from toolloop_lab.lab._dask import MAX_BATCH, batch_size_for

    assert batch_size_for(len(sweep), 2) > 1  # the fixture's sweep is batched
    assert batch_size_for(10, 2) == 1  # a small sweep: one scenario a task
    assert batch_size_for(100_000, 2) == MAX_BATCH
    seen: list[Event] = []
    results = run_scenarios_on_dask(sweep, client, observers=[seen.append], progress=False)
    assert_same_frames(results, local)
    assert_observers_saw_every_run_in_order(seen, results)
    for size in (1, 7, len(sweep) + 5):
        assert_same_frames(
            run_scenarios_on_dask(sweep, client, batch_size=size, progress=False), local
        )
