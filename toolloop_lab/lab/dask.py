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
from dataclasses import dataclass
from typing import Any, Final, Protocol

from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer
from toolloop_lab.lab.record import ScenarioRun
from toolloop_lab.lab.results import LabResults
from toolloop_lab.lab.runner import (
    executor_error_kind,
    executor_failure,
    progress_bar,
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
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ConfigurationError(f"retries must be an int >= 0, got {retries!r}", field="retries")
    if getattr(client, "asynchronous", False):
        raise ConfigurationError(
            "run_scenarios_on_dask needs a synchronous Client; in async code pass "
            "client.get_executor() to arun_scenarios(executor=...) instead",
            field="client",
        )
    distributed = _distributed()
    chosen: Sequence[Observer] = tuple(observers)
    slots: list[ScenarioRun | None] = [None] * len(items)
    pending: dict[Any, _Attempt] = {}
    failed = retried = 0
    bar = progress_bar(len(items), progress)
    try:
        if items:
            started = time.perf_counter()
            futures = client.map(run_one, items, range(len(items)), pure=False)
            pending = {f: _Attempt(i, 1, started) for i, f in enumerate(futures)}
            del futures
        done = distributed.as_completed(list(pending), loop=client.loop)
        for batch in done.batches():
            # One gather per batch of finished tasks, not one round trip per scenario;
            # failed tasks are left out of it and settled one by one.
            gathered = client.gather({f.key: f for f in batch}, errors="skip")
            for future in batch:
                result = gathered.get(future.key)
                attempt = pending.pop(future)
                scenario = items[attempt.index]
                outcome = result if isinstance(result, ScenarioRun) else _settle(future)
                if isinstance(outcome, ScenarioRun):
                    run = outcome
                    replay_events(run.events, chosen)
                else:
                    exc = outcome
                    if executor_error_kind(exc) == "worker_lost" and attempt.number <= retries:
                        again = client.submit(run_one, scenario, attempt.index, pure=False)
                        pending[again] = _Attempt(
                            attempt.index, attempt.number + 1, attempt.started
                        )
                        done.add(again)
                        retried += 1
                        bar.set_postfix(failed=failed, retried=retried, refresh=False)
                        continue
                    run = executor_failure(
                        scenario,
                        attempt.index,
                        exc,
                        started=attempt.started,
                        attempts=attempt.number,
                    )
                slots[attempt.index] = run
                if run.failed:
                    failed += 1
                    bar.set_postfix(failed=failed, retried=retried, refresh=False)
                bar.update(1)
    finally:
        if pending:  # interrupted: stop what the cluster would otherwise still run
            client.cancel(list(pending))
        bar.close()
    return LabResults(tuple(run for run in slots if run is not None))
