"""Running scenarios: one (:func:`arun_one`) or a sweep (:func:`arun_scenarios`).

A sweep is a fixed number of workers pulling scenarios in order, each run handed to a
*backend* — ``async (scenario, index) -> ScenarioRun``. The local backend runs the loop
in this event loop and feeds ``observers`` live. The executor backend (``executor=``, any
``concurrent.futures.Executor``, a Dask ``Client.get_executor()`` included) submits the
module-level :func:`run_one` and awaits its future: scenarios and results are picklable
values, a remote run's events come back inside its :class:`ScenarioRun`, and observers get
them here, on the caller's side, in order, as each result arrives. Rows are ordered by
scenario, never by completion, so the frames are the same wherever the sweep ran.

A scenario of several turns runs them one after another on one agent (one model, one set
of tools and their backend): each turn is ``agent.arun(message, history=...)`` on the
transcript the turn before it left, under what the scenario's USD limit has left.

A failing scenario is a result too: :func:`arun_one` turns every ``Exception`` into a row
with its outcome, error kind and reason and the partial events, so one bad scenario never
stops the others. A failed turn ends its scenario: the turns after it never run. So does
its time limit (``scenario_timeout_s``, an hour by default), wherever it runs: the run is
cancelled where it is, ends timed out with every open call answered, and is a failed row
(kind ``scenario``, reason ``timeout``) with the counts it had; the sweep goes on.
Cancellation and ``KeyboardInterrupt`` still stop the sweep.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final, TypeAlias

from langchain_core.messages import BaseMessage
from langchain_core.tools import BaseTool
from tqdm.auto import tqdm

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.stopping import time_limit
from toolloop_lab._mcp.tools import McpTools
from toolloop_lab._spend.budget import usd_budget
from toolloop_lab._spend.pricing import model_name_of
from toolloop_lab._stream import checked_observers, notify
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.fields import TimeoutSeconds, checked
from toolloop_lab._support.sync_runner import parameters_of, run_sync
from toolloop_lab._support.words import GATE_NAME
from toolloop_lab.errors import ConfigurationError, McpServerError, TimeLimitError
from toolloop_lab.events import Event, Observer, Outcome
from toolloop_lab.lab._record import ScenarioRun, error_fields, outcome_of_events
from toolloop_lab.lab._results import LabResults
from toolloop_lab.lab._scenario import Scenario, agent_with
from toolloop_lab.lab._variants import plan

_log = logging.getLogger("toolloop_lab")

DEFAULT_CONCURRENCY: Final = 4
"""Scenarios run at once in this process when ``concurrency`` is not given."""

DEFAULT_SCENARIO_TIMEOUT_S: Final = 3600.0
"""How long one scenario of a sweep may run by default: an hour. A sweep is a batch nobody
watches, and a scenario that takes an hour (six times the longest silence a model call is
allowed by default, ``AgentConfig.model_timeout_s``) is stuck, on a hung tool or a model
that streams for ever: its row says so, with the counts it had, instead of the sweep
never returning. A sweep of longer scenarios says so: ``scenario_timeout_s=...`` or
``None``."""

Backend: TypeAlias = Callable[[Scenario, int], Awaitable[ScenarioRun]]
"""Runs one scenario (at its sweep position) to a :class:`ScenarioRun`; never raises for a
failing scenario."""

_LOST_WORKER_ERRORS: Final = frozenset({"KilledWorker", "CommClosedError", "BrokenProcessPool"})
"""Exception class names meaning "the process running it went away" (Dask's names are
matched by name so this module never imports Dask)."""


async def arun_one(
    scenario: Scenario,
    *,
    index: int = 0,
    observers: Iterable[Observer] = (),
    timeout_s: float | None = None,
) -> ScenarioRun:
    """Run one scenario, turn by turn, under exactly its own USD limit and, given
    ``timeout_s``, within that many seconds; failures become the result. A scenario that
    runs out of time is cancelled where it is (its run ends timed out, every open call
    answered) and is a failed row (kind ``scenario``, reason ``timeout``) with the counts
    it had."""
    started = time.perf_counter()
    if not scenario.mcp_servers:
        return await _run_turns(scenario, index, observers, timeout_s, started, ())
    try:  # its MCP servers started (connected to) here, in this worker, stopped after
        async with McpTools(scenario.mcp_servers) as served:
            return await _run_turns(scenario, index, observers, timeout_s, started, served)
    except McpServerError as exc:  # a server that cannot start: refused before any call
        return _record(scenario, index, None, started, (), *error_fields(exc), str(exc))


async def _run_turns(
    scenario: Scenario,
    index: int,
    observers: Iterable[Observer],
    timeout_s: float | None,
    started: float,
    served: Sequence[BaseTool],
) -> ScenarioRun:
    """The scenario's turns on a fresh agent with its tools and ``served`` (its MCP
    servers' tools, already open)."""
    events: list[Event] = []  # every run's, sub-agents' included (they feed the same list)
    try:
        agent = agent_with(scenario, (*observers, events.append), served)
    except Exception as exc:  # noqa: BLE001 - a scenario that cannot be built is a row
        kind, reason = error_fields(exc, building=True)
        return _record(scenario, index, None, started, (), kind, reason, str(exc))
    model_name = model_name_of(agent.model)
    try:
        async with time_limit(timeout_s, kind="scenario"):
            await _turns(scenario, agent)
    except TimeLimitError as exc:  # the scenario's limit, or a model call's: it failed
        return _record(
            scenario, index, model_name, started, events, *error_fields(exc), str(exc), "failed"
        )
    except Exception as exc:  # noqa: BLE001 - the loop wraps its errors; this is a guard
        kind, reason = error_fields(exc)
        return _record(scenario, index, model_name, started, events, kind, reason, str(exc))
    return _record(scenario, index, model_name, started, events)


async def _turns(scenario: Scenario, agent: LLMAgent) -> None:
    """Run the scenario's turns one after another on ``agent``, each on the transcript the
    turn before left, under what the scenario's USD limit has left; the first that fails
    raises (the turns after it never run)."""
    history: Sequence[BaseMessage] = ()
    spent: Decimal | None = Decimal(0)
    for message in scenario.messages:
        with usd_budget(_left(scenario.usd_limit, spent), prices=scenario.prices):
            result = await agent.arun(
                message, history=history, name=scenario.name, tags=scenario.tags
            )
        history = result.messages
        cost = result.cost_usd
        spent = None if cost is None or spent is None else spent + cost


def _left(limit: Decimal | None, spent: Decimal | None) -> Decimal | None:
    """What a scenario's USD limit leaves for its next turn (an unpriced turn leaves it
    whole: with a limit, an unpriced model is refused before it spends anything)."""
    if limit is None or spent is None:
        return limit
    return max(limit - spent, Decimal(0))


def _record(
    scenario: Scenario,
    index: int,
    model_name: str | None,
    started: float,
    events: Sequence[Event],
    kind: str | None = None,
    reason: str | None = None,
    message: str | None = None,
    outcome: Outcome | None = None,
) -> ScenarioRun:
    """A scenario's row; its outcome is its last turn's (``outcome`` when the scenario
    ended otherwise: a time limit between two turns still fails it)."""
    return ScenarioRun(
        scenario=scenario.name,
        index=index,
        tags=scenario.tags,
        description=scenario.description,
        model_name=model_name,
        outcome=outcome or outcome_of_events(tuple(events)),
        error_kind=kind,
        error_reason=reason,
        error_message=message,
        duration_s=time.perf_counter() - started,
        events=tuple(events),
        turns=scenario.messages,
    )


async def arun_batch(
    scenarios: Sequence[Scenario],
    indices: Sequence[int],
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float | None = None,
) -> tuple[ScenarioRun, ...]:
    """Run ``scenarios`` (``indices`` are their positions in a larger sweep) as the local
    sweep runs them, ``concurrency`` at a time on this event loop, each within
    ``timeout_s``, with no observers; the runs come back in the order given. What one Dask
    task runs: a worker running its batch one scenario after another lost the overlap the
    local sweep gets (a scenario's tool running in a thread while another's model call
    runs)."""
    if len(scenarios) != len(indices):
        raise ValueError(f"{len(scenarios)} scenarios but {len(indices)} indices")
    runs: list[ScenarioRun | None] = [None] * len(scenarios)

    async def backend(scenario: Scenario, position: int) -> ScenarioRun:
        return await arun_one(scenario, index=indices[position], timeout_s=timeout_s)

    await _sweep(scenarios, backend, concurrency, runs.__setitem__)
    return tuple(run for run in runs if run is not None)


def run_one(scenario: Scenario, index: int = 0, timeout_s: float | None = None) -> ScenarioRun:
    """Synchronous :func:`arun_one` with no observers: what an executor worker runs (on
    the one sync bridge, so a reused worker keeps its event loop and its clients' pools)."""
    return run_sync(lambda: arun_one(scenario, index=index, timeout_s=timeout_s))


def scenario_time_limit(value: object) -> float | None:
    """A sweep's ``scenario_timeout_s`` as checked: seconds (more than 0, finite, at most a
    week) or ``None``; ``ConfigurationError(field="scenario_timeout_s")`` for anything
    else, before anything runs."""
    limit: float | None = checked(TimeoutSeconds | None, value, field="scenario_timeout_s")
    return limit


# -- pieces shared by the local sweep, the executor backend and the Dask sweep ----------
def executor_error_kind(exc: BaseException) -> str:
    """``worker_lost`` when the process running a scenario went away (the scenario itself
    may be fine, so a retry can succeed), ``cancelled`` when its future was cancelled, and
    ``executor`` for anything else the executor raised (e.g. a spec that would not pickle)."""
    if isinstance(exc, concurrent.futures.BrokenExecutor) or any(
        cls.__name__ in _LOST_WORKER_ERRORS for cls in type(exc).__mro__
    ):
        return "worker_lost"
    if isinstance(exc, concurrent.futures.CancelledError | asyncio.CancelledError):
        return "cancelled"
    return "executor"


def executor_failure(
    scenario: Scenario,
    index: int,
    exc: BaseException,
    *,
    started: float,
    attempts: int = 1,
    said: str | None = None,
) -> ScenarioRun:
    """The row of a scenario the executor never brought back: outcome ``error``, kind from
    :func:`executor_error_kind`, reason the exception's type, and its text (or ``said``,
    what the caller knows of it) as the message."""
    reason = type(exc).__name__
    text = said or describe(exc) or reason
    message = f"{text} (gave up after {attempts} attempts)" if attempts > 1 else text
    kind = executor_error_kind(exc)
    return _record(scenario, index, None, started, (), kind, reason, message)


def replay_events(events: Iterable[Event], observers: Sequence[Observer]) -> None:
    """Feed a finished run's events to ``observers`` in order, with the loop's own policy."""
    for event in events:
        notify(observers, event)


def validate_scenarios(scenarios: Iterable[Scenario]) -> tuple[Scenario, ...]:
    """The sweep as a tuple, refusing non-scenarios and repeated names before anything runs
    (names key every frame, so two rows may never share one)."""
    items = tuple(scenarios)
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, Scenario):
            raise ConfigurationError(
                f"run_scenarios takes Scenario values, got {type(item).__name__}",
                field="scenarios",
            )
        if item.name in seen:
            raise ConfigurationError(
                f"scenario names must be unique in a sweep; {item.name!r} repeats",
                field="scenarios",
            )
        seen.add(item.name)
    return items


def progress_bar(total: int, enabled: bool) -> tqdm[Any]:
    """A tqdm.auto bar: a widget in a notebook, text on stderr in a terminal."""
    return tqdm(total=total, desc="scenarios", unit="scenario", disable=not enabled, leave=True)


class SweepRows:
    """A sweep's rows by scenario position (never by completion), and the progress bar that
    counts them, the failed ones, the ones the USD limit stopped (apart: no failure) and, for
    a sweep that retries, the retries."""

    def __init__(self, total: int, progress: bool, *, retries: bool = False) -> None:
        self.bar = progress_bar(total, progress)
        self._rows: list[ScenarioRun | None] = [None] * total
        self._failed = 0
        self._stopped = 0
        self._retried: int | None = 0 if retries else None

    def put(self, index: int, run: ScenarioRun) -> None:
        """The row of the scenario at ``index``."""
        self._rows[index] = run
        if run.outcome == "usd_budget_exhausted":
            self._stopped += 1  # the limit did its job: counted apart, as the spend table does
            self._postfix()
        elif run.failed:
            self._failed += 1  # the same count the spend table's "failed" gives
            self._postfix()
        self.bar.update(1)

    def retry(self) -> None:
        """A scenario was sent again (its row is still to come)."""
        self._retried = (self._retried or 0) + 1
        self._postfix()

    def _postfix(self) -> None:
        counts = {"failed": self._failed}
        if self._stopped:
            counts[GATE_NAME["usd"]] = self._stopped
        if self._retried is not None:
            counts["retried"] = self._retried
        self.bar.set_postfix(counts, refresh=False)

    def results(self) -> LabResults:
        """The rows that came, in scenario order."""
        return LabResults(tuple(run for run in self._rows if run is not None))

    def close(self) -> None:
        self.bar.close()


def _slots(
    concurrency: int | None, executor: concurrent.futures.Executor | None, total: int
) -> int:
    """How many scenarios may be in flight: ``concurrency``, else 4 locally, else (with an
    executor) all of them, since the executor's own workers set the pace."""
    if concurrency is None:
        return max(total, 1) if executor is not None else DEFAULT_CONCURRENCY
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(
            f"concurrency must be a positive int, got {concurrency!r}", field="concurrency"
        )
    return concurrency


def _check_executor(executor: object) -> None:
    if executor is not None and not isinstance(executor, concurrent.futures.Executor):
        hint = (
            "; pass client.get_executor(), or use toolloop_lab.lab._dask.run_scenarios_on_dask"
            if hasattr(executor, "get_executor")
            else ""
        )
        raise ConfigurationError(
            f"executor must be a concurrent.futures.Executor, got {type(executor).__name__}{hint}",
            field="executor",
        )


async def _sweep(
    items: Sequence[Scenario],
    backend: Backend,
    concurrency: int,
    put: Callable[[int, ScenarioRun], None],
) -> None:
    """Run ``items`` through ``backend``, ``concurrency`` at a time, handing each run to
    ``put`` with its position in ``items``."""
    queue = iter(enumerate(items))

    async def worker() -> None:
        for index, scenario in queue:  # one shared iterator: each scenario runs once
            put(index, await backend(scenario, index))

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(items))):
            group.create_task(worker())


def _local_backend(observers: tuple[Observer, ...], timeout_s: float | None) -> Backend:
    async def backend(scenario: Scenario, index: int) -> ScenarioRun:
        return await arun_one(scenario, index=index, observers=observers, timeout_s=timeout_s)

    return backend


def _executor_backend(
    executor: concurrent.futures.Executor,
    observers: tuple[Observer, ...],
    timeout_s: float | None,
) -> Backend:
    async def backend(scenario: Scenario, index: int) -> ScenarioRun:
        started = time.perf_counter()
        try:
            future = executor.submit(run_one, scenario, index, timeout_s)
            run = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the sweep itself is being cancelled
            # Someone cancelled the executor's future (e.g. a shutdown): still a row.
            lost = concurrent.futures.CancelledError("the executor cancelled this scenario")
            return executor_failure(scenario, index, lost, started=started)
        except Exception as exc:  # noqa: BLE001 - a lost or unshippable scenario is a row
            return executor_failure(scenario, index, exc, started=started)
        replay_events(run.events, observers)
        return run

    return backend


def _backend(
    executor: concurrent.futures.Executor | None,
    observers: Iterable[Observer],
    timeout_s: float | None,
) -> Backend:
    _check_executor(executor)
    chosen = checked_observers(observers)
    if executor is None:
        return _local_backend(chosen, timeout_s)
    return _executor_backend(executor, chosen, timeout_s)


async def arun_scenarios(
    scenarios: Iterable[Scenario],
    *,
    concurrency: int | None = None,
    observers: Iterable[Observer] = (),
    progress: bool = True,
    executor: concurrent.futures.Executor | None = None,
    scenario_timeout_s: float | None = DEFAULT_SCENARIO_TIMEOUT_S,
    variants: Mapping[str, Any] | Iterable[Any] | None = None,
    repeats: int = 1,
) -> LabResults:
    """Run a sweep from this event loop, ``concurrency`` scenarios at a time.

    ``variants`` runs every scenario under each named change of its setup (a dict of name
    -> :class:`Variant` or a dict of ``AgentConfig`` changes, a list of them, or
    :meth:`Variant.grid`), and ``repeats`` runs each (scenario, variant) pair that many
    times: each is a row, with its ``variant`` and ``repeat``. A scenario's ``checks`` are
    judged here, when its run comes back (``passed``, ``failed_checks``).

    Without ``executor`` the scenarios run here (4 at a time by default) and ``observers``
    get every event as it happens (tell runs apart by ``event.run_id``). With one, each
    scenario runs on a worker (all are submitted at once unless ``concurrency`` caps them)
    and observers get its events, in order, when its result arrives. A scenario the executor
    loses is a row with outcome ``error`` and kind ``worker_lost`` (or ``executor``). Results
    keep the order of ``scenarios`` either way.

    Each scenario has ``scenario_timeout_s`` seconds (an hour by default, see
    :data:`DEFAULT_SCENARIO_TIMEOUT_S`; ``None``: no limit), wherever it runs: one that
    runs out is cancelled where it is and becomes a failed row (kind ``scenario``, reason
    ``timeout``) with the counts it had, and the sweep goes on.
    """
    planned = plan(validate_scenarios(scenarios), variants, repeats)
    items = planned.scenarios
    slots = _slots(concurrency, executor, len(items))
    backend = _backend(executor, observers, scenario_time_limit(scenario_timeout_s))
    rows = SweepRows(len(items), progress)
    try:
        await _sweep(items, backend, slots, rows.put)
    finally:
        rows.close()
    return LabResults(planned.finish(rows.results().records))


@parameters_of(arun_scenarios)
def run_scenarios(*args: Any, **kwargs: Any) -> LabResults:
    """Synchronous :func:`arun_scenarios`, for scripts and notebook cells alike.

    It runs on the one sync bridge :meth:`LLMAgent.run` uses (in a notebook cell, on the
    background loop; observers are then called on that loop's thread), so sweep after sweep
    reuses one event loop. ``executor`` takes any ``concurrent.futures.Executor``, e.g. a
    ``ProcessPoolExecutor`` or a Dask ``client.get_executor()``; the frames are the same as
    a local run's.
    """
    return run_sync(lambda: arun_scenarios(*args, **kwargs))
