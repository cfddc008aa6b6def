"""Sweeps on a Dask cluster: :func:`run_scenarios_on_dask`.

Dask is an optional extra (``toolloop-lab[dask]``): nothing else in the project imports it,
and this module imports ``distributed`` only when a sweep starts, so importing the lab (or
this module) never loads Dask.

Scenarios are shipped as picklable :class:`~toolloop_lab.lab.Scenario` values, several to a
task, because a task costs the scheduler and the client a few milliseconds, more than a
cheap scenario takes to run: one task per scenario made a two-worker cluster slower than
the local sweep. A large sweep goes out in about :data:`TASKS_PER_THREAD` tasks per worker
thread (at most :data:`MAX_BATCH` scenarios each, so the last tasks still spread over the
workers); a small one, one scenario per task (``batch_size`` chooses otherwise).

On the worker, :func:`run_batch` runs a task's scenarios as the local sweep runs its own:
``concurrency`` at a time on one event loop (one after another, a worker lost the overlap
the local sweep gets, and a scenario whose tools spend CPU took a third longer there). A
task's scenarios travel as one pickled value that only the worker unpickles (the
scheduler, which shares the caller's process on a ``LocalCluster``, unpickled every one of
them otherwise). Each :class:`~toolloop_lab.lab.ScenarioRun` (events included) comes back
in its task's result.
Results are taken as they complete (one gather per batch of finished tasks), so the
progress bar and the observers move while the cluster works, and a result once taken is
never lost, whatever happens to workers later. A result a dying worker still held, not yet
taken, is recomputed by Dask itself: same row for a scripted model, a second call (and
its spend) for a real one. A gather waits at most :data:`GATHER_TIMEOUT` (Dask's own gather
would wait for such a recomputation, however long, with the rest of the sweep held up
behind it): a result it did not bring back is waited for again as the running tasks are,
and taken once Dask has it again.

A worker that dies takes the scenarios it was running with it. Dask itself re-runs such a task up
to ``distributed.scheduler.allowed-failures`` times (a scheduler setting, 3 by default)
before giving up with ``KilledWorker``; ``retries`` here is on top of that: the scenario is
submitted again as a fresh task, and once those attempts are lost too it becomes a row
with outcome ``error``, ``error_kind`` ``worker_lost``, the exception's type as
``error_reason`` and its text as the message. Every scenario is accounted for. A task of
several scenarios that is lost (or fails any other way) says nothing about which of them
was at fault, so each of its scenarios is sent again alone, and that costs none of them an
attempt: only a task a scenario was lost in alone counts against its ``retries``. A
scenario that kills its worker every time is thus reported as it would be alone, and its
neighbours in the batch run to the end.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from toolloop_lab._stream import checked_observers
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.sync_runner import run_sync
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer
from toolloop_lab.lab._record import ScenarioRun
from toolloop_lab.lab._results import LabResults
from toolloop_lab.lab._runner import (
    DEFAULT_CONCURRENCY,
    DEFAULT_SCENARIO_TIMEOUT_S,
    SweepRows,
    arun_batch,
    executor_error_kind,
    executor_failure,
    replay_events,
    scenario_time_limit,
    validate_scenarios,
)
from toolloop_lab.lab._scenario import Scenario
from toolloop_lab.lab._variants import plan

EXTRA: Final = "toolloop-lab[dask]"
"""The optional extra that installs Dask's ``distributed`` scheduler."""

MAX_BATCH: Final = 32
"""The most scenarios the automatic batch size puts in one task."""

GATHER_TIMEOUT: Final = 60.0
"""Seconds one gather of finished tasks' results may take. Bringing back a batch of small
results takes milliseconds; a gather takes longer only when a result was lost with its
worker, when Dask's ``Client.gather`` resets the result and waits, without a bound, for the
scheduler to compute it again (forever on a cluster left without workers). Past this, the
sweep stops waiting there and goes on taking other results; what was not brought back comes
back through the sweep's wait for finished tasks. Generous, so that a slow link bringing a
large batch's events is never mistaken for a loss (it would be gathered again, not lost)."""

TASKS_PER_THREAD: Final = 16
"""How many tasks the automatic batch size aims at per worker thread: enough that the
tasks still left at the end spread over the workers, few enough that a task's own cost is
small beside its scenarios'."""


class DaskClient(Protocol):
    """The part of a synchronous ``distributed.Client`` this module uses; spelled out so the
    project type-checks without Dask installed."""

    @property
    def asynchronous(self) -> bool: ...

    @property
    def loop(self) -> Any: ...

    def map(self, func: Callable[..., Any], *iterables: Iterable[Any], **kwargs: Any) -> Any: ...

    def submit(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def gather(self, futures: Any, *args: Any, **kwargs: Any) -> Any: ...

    def cancel(self, futures: Any, *args: Any, **kwargs: Any) -> Any: ...

    def sync(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...


def _distributed() -> Any:
    """``distributed``, imported on first use, or an ImportError naming the extra."""
    try:
        return importlib.import_module("distributed")
    except ImportError as exc:
        raise ImportError(
            "run_scenarios_on_dask needs Dask's distributed scheduler, an optional extra: "
            f"python -m pip install '{EXTRA}'"
        ) from exc


@dataclass(frozen=True, slots=True)
class _Attempt:
    """Which scenarios a task runs, which try it is (for a task of one scenario), and when
    they were first sent."""

    indices: tuple[int, ...]
    number: int
    started: float


def run_batch(
    scenarios: Sequence[Scenario],
    indices: Sequence[int],
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float | None = None,
) -> tuple[ScenarioRun, ...]:
    """What one Dask task runs: ``scenarios`` (``indices`` are their positions in the sweep)
    ``concurrency`` at a time, each within ``timeout_s``, as the local sweep runs them
    (:func:`~toolloop_lab.lab._runner.arun_batch`), on the worker thread's one event loop."""
    return run_sync(
        lambda: arun_batch(scenarios, indices, concurrency=concurrency, timeout_s=timeout_s)
    )


def _pack(scenarios: Sequence[Scenario]) -> bytes:
    """A task's scenarios as one pickled value, with Dask's own pickler (it falls back to
    cloudpickle for what plain pickle cannot ship, e.g. a factory defined in ``__main__``)."""
    dumped: bytes = _distributed_pickle().dumps(list(scenarios))
    return dumped


def _run_packed(
    packed: bytes, indices: Sequence[int], concurrency: int, timeout_s: float | None
) -> tuple[ScenarioRun, ...]:
    """The task itself: :func:`run_batch` on the scenarios :func:`_pack` shipped."""
    scenarios: list[Scenario] = _distributed_pickle().loads(packed)
    return run_batch(scenarios, indices, concurrency, timeout_s)


def _distributed_pickle() -> Any:
    return importlib.import_module("distributed.protocol.pickle")


def batch_size_for(scenarios: int, threads: int) -> int:
    """The automatic batch size: about :data:`TASKS_PER_THREAD` tasks per worker thread, at
    most :data:`MAX_BATCH` scenarios a task, at least one (a small sweep: one a task)."""
    return max(1, min(MAX_BATCH, scenarios // (max(1, threads) * TASKS_PER_THREAD)))


def _threads(client: DaskClient) -> int:
    """The cluster's worker threads (1 when the client cannot say)."""
    nthreads = getattr(client, "nthreads", None)
    try:
        return max(1, sum(nthreads().values())) if callable(nthreads) else 1
    except Exception:  # noqa: BLE001 - only a hint for the batch size
        return 1


def _settle(future: Any) -> tuple[ScenarioRun, ...] | BaseException:
    """Why a task that failed (``KilledWorker``, a cancellation, a task error...) has no
    run. Its exception is already on the client, so this does not wait (bounded all the
    same: only the client's own state says it failed)."""
    try:
        value = future.result(timeout=GATHER_TIMEOUT)
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - every failure is a row
        return exc
    return _runs(value)


def _runs(value: object) -> tuple[ScenarioRun, ...] | BaseException:
    """A gathered task result: its ScenarioRuns, or why it is not that."""
    if isinstance(value, tuple) and all(isinstance(v, ScenarioRun) for v in value):
        return value
    return TypeError(f"the Dask task returned {type(value).__name__}, not its ScenarioRuns")


def _gather_bounded(client: DaskClient, futures: Sequence[Any]) -> dict[Any, Any]:
    """The results of finished ``futures`` by key, in one gather of at most
    :data:`GATHER_TIMEOUT` seconds; a task that failed meanwhile maps to ``None``, and when
    the gather timed out (a result was lost with its worker: see the constant) the mapping
    is empty."""
    if not futures:
        return {}
    # Client.gather has no timeout of its own; Future.result(timeout=...) bounds its gather
    # the same way: the client's sync with a callback_timeout, the gather itself asynchronous
    # on the client's loop (cancelled there when the time is up).
    gather = functools.partial(client.gather, asynchronous=True)
    try:
        gathered: dict[Any, Any] = client.sync(
            gather, {f.key: f for f in futures}, errors="skip", callback_timeout=GATHER_TIMEOUT
        )
    except TimeoutError:
        return {}
    return gathered


def run_scenarios_on_dask(
    scenarios: Iterable[Scenario],
    client: DaskClient,
    *,
    retries: int = 1,
    progress: bool = True,
    observers: Iterable[Observer] = (),
    batch_size: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    scenario_timeout_s: float | None = DEFAULT_SCENARIO_TIMEOUT_S,
    variants: Mapping[str, Any] | Iterable[Any] | None = None,
    repeats: int = 1,
) -> LabResults:
    """Run a sweep on a Dask cluster, several scenarios a task; the frames equal a local run's.

    ``variants`` and ``repeats`` expand the sweep as :func:`~toolloop_lab.lab.run_scenarios`
    does (each run a task's scenario like any other); checks are judged here, on the
    caller's side, as results arrive.

    ``client`` is a synchronous ``distributed.Client``. Progress and ``observers`` (each
    scenario's events, in order) advance here, on the caller's side, as results arrive.
    A scenario whose worker died is submitted again up to ``retries`` times, then reported
    as a failed row (``error_kind="worker_lost"``, with the reason); other executor
    failures (e.g. a worker that cannot import a factory) are failed rows at once
    (``error_kind="executor"``). Rows keep the order of ``scenarios``. ``batch_size`` is how
    many scenarios one task runs (``None``: :func:`batch_size_for` the cluster's threads);
    see the module doc for what a lost task of several costs. ``concurrency`` is how many of
    a task's scenarios its worker thread runs at once (as the local sweep's).
    ``scenario_timeout_s`` bounds each scenario on its worker, as the local sweep's does
    (an hour by default; ``None``: no limit): one that runs out is a failed row (kind
    ``scenario``, reason ``timeout``) with the counts it had, never a task that holds the
    sweep.
    """
    planned = plan(validate_scenarios(scenarios), variants, repeats)
    items = planned.scenarios
    chosen = checked_observers(observers)
    _check(client, retries, batch_size, concurrency)
    limit = scenario_time_limit(scenario_timeout_s)
    distributed = _distributed()
    rows = SweepRows(len(items), progress, retries=True)
    size = batch_size if batch_size is not None else batch_size_for(len(items), _threads(client))
    sweep = _Sweep(client, items, retries, chosen, rows, size, concurrency, limit)
    try:
        done = distributed.as_completed(sweep.submit_all(), loop=client.loop)
        for batch in done.batches():
            for again in sweep.take(batch):
                done.add(again)
    finally:
        sweep.cancel_pending()
        rows.close()
    return LabResults(planned.finish(rows.results().records))


def _check(client: DaskClient, retries: int, batch_size: int | None, concurrency: int) -> None:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigurationError(f"retries must be an int >= 0, got {retries!r}", field="retries")
    if batch_size is not None and not _positive_int(batch_size):
        raise ConfigurationError(
            f"batch_size must be an int >= 1 or None, got {batch_size!r}", field="batch_size"
        )
    if not _positive_int(concurrency):
        raise ConfigurationError(
            f"concurrency must be an int >= 1, got {concurrency!r}", field="concurrency"
        )
    if getattr(client, "asynchronous", False):
        raise ConfigurationError(
            "run_scenarios_on_dask needs a synchronous Client; in async code pass "
            "client.get_executor() to arun_scenarios(executor=...) instead",
            field="client",
        )


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


@dataclass(eq=False)
class _Sweep:
    """The sweep's tasks in flight: which scenarios each runs, and which try it is."""

    client: DaskClient
    items: Sequence[Scenario]
    retries: int
    observers: Sequence[Observer]
    rows: SweepRows
    batch_size: int = 1
    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float | None = None
    pending: dict[Any, _Attempt] = field(default_factory=dict)

    def submit_all(self) -> list[Any]:
        """Every scenario, ``batch_size`` to a task; returns the tasks' futures."""
        started = time.perf_counter()
        n, size = len(self.items), self.batch_size
        for first in range(0, n, size):
            indices = tuple(range(first, min(n, first + size)))
            self._submit(_Attempt(indices, 1, started))
        return list(self.pending)

    def _submit(self, attempt: _Attempt) -> list[Any]:
        """Send ``attempt``'s scenarios as one task; returns the futures sent. A batch that
        will not pickle goes out one scenario a task instead, and a scenario that will not
        pickle alone is a failed row at once, naming it (the rest of the sweep runs)."""
        try:
            packed = _pack([self.items[i] for i in attempt.indices])
        except Exception as exc:  # noqa: BLE001 - any pickling failure is that scenario's row
            if len(attempt.indices) == 1:
                self._unshippable(attempt, exc)
                return []
            return [
                future
                for index in attempt.indices
                for future in self._submit(_Attempt((index,), attempt.number, attempt.started))
            ]
        future = self.client.submit(
            _run_packed, packed, attempt.indices, self.concurrency, self.timeout_s, pure=False
        )
        self.pending[future] = attempt
        return [future]

    def _unshippable(self, attempt: _Attempt, exc: Exception) -> None:
        (index,) = attempt.indices
        scenario = self.items[index]
        said = (
            f"scenario {scenario.name!r} cannot be sent to a Dask worker, which needs it "
            f"pickled: {type(exc).__name__}: {describe(exc)}"
        )
        failure = executor_failure(scenario, index, exc, started=attempt.started, said=said)
        self.rows.put(index, failure)

    def take(self, batch: Sequence[Any]) -> list[Any]:
        """Settle a batch of finished tasks into rows; returns the tasks to wait for again:
        those sent again, and those whose result the gather did not bring back."""
        # One gather per batch of finished tasks, not one round trip per task; failed
        # tasks are left out of it and settled one by one, from what the client knows.
        gathered = _gather_bounded(self.client, [f for f in batch if f.status == "finished"])
        again = []
        for future in batch:
            value = gathered.get(future.key)  # None: a failed task, or not brought back
            if value is None and future.status in ("error", "cancelled"):
                outcome = _settle(future)
            elif future.key in gathered:
                outcome = _runs(value)
            else:  # lost with its worker (Dask computes it again), or the gather timed out
                again.append(future)
                continue
            attempt = self.pending.pop(future)
            if isinstance(outcome, tuple):
                for index, run in zip(attempt.indices, outcome, strict=True):
                    replay_events(run.events, self.observers)
                    self.rows.put(index, run)
            elif len(attempt.indices) > 1:  # whose fault is unknown: each goes again alone
                again.extend(self._alone(attempt))
            elif executor_error_kind(outcome) == "worker_lost" and attempt.number <= self.retries:
                again.extend(self._resubmit(attempt))
            else:
                self._failed(attempt, outcome)
        return again

    def _alone(self, attempt: _Attempt) -> list[Any]:
        """A lost task of several: each of its scenarios sent again alone, at no attempt's
        cost (see the module doc)."""
        for _ in attempt.indices:
            self.rows.retry()
        return [
            future
            for i in attempt.indices
            for future in self._submit(_Attempt((i,), attempt.number, attempt.started))
        ]

    def _failed(self, attempt: _Attempt, outcome: BaseException) -> None:
        (index,) = attempt.indices
        failure = executor_failure(
            self.items[index], index, outcome, started=attempt.started, attempts=attempt.number
        )
        self.rows.put(index, failure)

    def _resubmit(self, attempt: _Attempt) -> list[Any]:
        self.rows.retry()
        return self._submit(_Attempt(attempt.indices, attempt.number + 1, attempt.started))

    def cancel_pending(self) -> None:
        """Interrupted: stop what the cluster would otherwise still run."""
        if self.pending:
            self.client.cancel(list(self.pending))
