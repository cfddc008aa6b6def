"""Sweeps on a Dask cluster: :func:`run_scenarios_on_dask`.

Dask is an optional extra (``toolloop-lab[dask]``): nothing else in the project imports it,
and this module imports ``distributed`` only when a sweep starts, so importing the lab (or
this module) never loads Dask.

Each scenario is shipped as its picklable :class:`~toolloop_lab.lab.Scenario` and runs as
one task of the module-level :func:`~toolloop_lab.lab.runner.run_one`; its
:class:`~toolloop_lab.lab.ScenarioRun` (events included) comes back as the task's result.
Results are taken as they complete (one gather per batch of finished tasks), so the
progress bar and the observers move while the cluster works, and a result once taken is
never lost, whatever happens to workers later. A result a dying worker still held, not yet
taken, is recomputed by Dask itself: same row for a scripted model, a second call (and
its spend) for a real one.

A worker that dies takes its running scenario with it. Dask itself re-runs such a task up
to ``distributed.scheduler.allowed-failures`` times (a scheduler setting, 3 by default)
before giving up with ``KilledWorker``; ``retries`` here is on top of that: the scenario is
submitted again as a fresh task, and once those attempts are lost too it becomes a row
with outcome ``error``, ``error_kind`` ``worker_lost``, the exception's type as
``error_reason`` and its text as the message. Every scenario is accounted for.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer
from toolloop_lab.lab.record import ScenarioRun
from toolloop_lab.lab.results import LabResults
from toolloop_lab.lab.runner import (
    SweepRows,
    executor_error_kind,
    executor_failure,
    replay_events,
    run_one,
    validate_scenarios,
)
from toolloop_lab.lab.scenario import Scenario

__all__ = ["EXTRA", "DaskClient", "run_scenarios_on_dask"]

EXTRA: Final = "toolloop-lab[dask]"
"""The optional extra that installs Dask's ``distributed`` scheduler."""


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
    """Which scenario a task runs, which try it is, and when the scenario was first sent."""

    index: int
    number: int
    started: float


def _settle(future: Any) -> ScenarioRun | BaseException:
    """The run of a future the batch gather did not bring back, or why it has none: waits
    for it (a result lost with its worker is recomputed), then returns its result or the
    exception it ended with (``KilledWorker``, a cancellation, an unpickling error...)."""
    try:
        value = future.result()
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - every failure is a row
        return exc
    if isinstance(value, ScenarioRun):
        return value
    return TypeError(f"the Dask task returned {type(value).__name__}, not a ScenarioRun")


def run_scenarios_on_dask(
    scenarios: Iterable[Scenario],
    client: DaskClient,
    *,
    retries: int = 1,
    progress: bool = True,
    observers: Iterable[Observer] = (),
) -> LabResults:
    """Run a sweep on a Dask cluster, one task per scenario; the frames equal a local run's.

    ``client`` is a synchronous ``distributed.Client``. Progress and ``observers`` (each
    scenario's events, in order) advance here, on the caller's side, as results arrive.
    A scenario whose worker died is submitted again up to ``retries`` times, then reported
    as a failed row (``error_kind="worker_lost"``, with the reason); other executor
    failures (e.g. a worker that cannot import a factory) are failed rows at once
    (``error_kind="executor"``). Rows keep the order of ``scenarios``.
    """
    items = validate_scenarios(scenarios)
    _check(client, retries)
    distributed = _distributed()
    rows = SweepRows(len(items), progress, retries=True)
    sweep = _Sweep(client, items, retries, tuple(observers), rows)
    try:
        done = distributed.as_completed(sweep.submit_all(), loop=client.loop)
        for batch in done.batches():
            for again in sweep.take(batch):
                done.add(again)
    finally:
        sweep.cancel_pending()
        rows.close()
    return rows.results()


def _check(client: DaskClient, retries: int) -> None:
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigurationError(f"retries must be an int >= 0, got {retries!r}", field="retries")
    if getattr(client, "asynchronous", False):
        raise ConfigurationError(
            "run_scenarios_on_dask needs a synchronous Client; in async code pass "
            "client.get_executor() to arun_scenarios(executor=...) instead",
            field="client",
        )


@dataclass(eq=False)
class _Sweep:
    """The sweep's tasks in flight: which scenario each runs, and which try it is."""

    client: DaskClient
    items: Sequence[Scenario]
    retries: int
    observers: Sequence[Observer]
    rows: SweepRows
    pending: dict[Any, _Attempt] = field(default_factory=dict)

    def submit_all(self) -> list[Any]:
        """One task per scenario; returns their futures."""
        if self.items:
            started = time.perf_counter()
            futures = self.client.map(run_one, self.items, range(len(self.items)), pure=False)
            self.pending = {f: _Attempt(i, 1, started) for i, f in enumerate(futures)}
        return list(self.pending)

    def take(self, batch: Sequence[Any]) -> list[Any]:
        """Settle a batch of finished tasks into rows; returns the tasks sent again."""
        # One gather per batch of finished tasks, not one round trip per scenario;
        # failed tasks are left out of it and settled one by one.
        gathered = self.client.gather({f.key: f for f in batch}, errors="skip")
        again = []
        for future in batch:
            result = gathered.get(future.key)
            attempt = self.pending.pop(future)
            outcome = result if isinstance(result, ScenarioRun) else _settle(future)
            if isinstance(outcome, ScenarioRun):
                replay_events(outcome.events, self.observers)
                self.rows.put(attempt.index, outcome)
            elif executor_error_kind(outcome) == "worker_lost" and attempt.number <= self.retries:
                again.append(self._resubmit(attempt))
            else:
                scenario = self.items[attempt.index]
                failure = executor_failure(
                    scenario,
                    attempt.index,
                    outcome,
                    started=attempt.started,
                    attempts=attempt.number,
                )
                self.rows.put(attempt.index, failure)
        return again

    def _resubmit(self, attempt: _Attempt) -> Any:
        scenario = self.items[attempt.index]
        future = self.client.submit(run_one, scenario, attempt.index, pure=False)
        self.pending[future] = _Attempt(attempt.index, attempt.number + 1, attempt.started)
        self.rows.retry()
        return future

    def cancel_pending(self) -> None:
        """Interrupted: stop what the cluster would otherwise still run."""
        if self.pending:
            self.client.cancel(list(self.pending))
