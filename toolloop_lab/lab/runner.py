"""Running scenarios: one (:func:`arun_one`) or a sweep (:func:`arun_scenarios`).

A sweep is a fixed number of workers pulling scenarios in order, each run handed to a
*backend* — ``async (scenario, index) -> ScenarioRun``. The local backend runs the loop
in this event loop and feeds ``observers`` live. An executor backend (issue 9) only has to
submit the module-level :func:`run_one` and await its future: scenarios and results are
picklable values, and a remote run's events come back inside its :class:`ScenarioRun`.

A failing scenario is a result too: :func:`arun_one` turns every ``Exception`` into a row
with its outcome, error kind and reason and the partial events, so one bad scenario never
stops the others. Cancellation and ``KeyboardInterrupt`` still stop the sweep.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeAlias

from tqdm.auto import tqdm

from toolloop_lab.budget import usd_budget
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError
from toolloop_lab.events import Event, Observer
from toolloop_lab.lab.record import Outcome, ScenarioRun, classify_error, outcome_of_result
from toolloop_lab.lab.results import LabResults
from toolloop_lab.lab.scenario import Scenario
from toolloop_lab.pricing import model_name_of

__all__ = ["Backend", "arun_one", "arun_scenarios", "run_one", "run_scenarios"]

Backend: TypeAlias = Callable[[Scenario, int], Awaitable[ScenarioRun]]
"""Runs one scenario (at its sweep position) to a :class:`ScenarioRun`; never raises for a
failing scenario."""


async def arun_one(
    scenario: Scenario, *, index: int = 0, observers: Iterable[Observer] = ()
) -> ScenarioRun:
    """Run one scenario under exactly its own USD limit; failures become the result."""
    started = time.perf_counter()
    try:
        agent = scenario.build_agent(observers)
    except Exception as exc:  # noqa: BLE001 - a scenario that cannot be built is a row
        outcome, kind, reason = classify_error(exc, building=True)
        return _record(scenario, index, None, started, (), outcome, kind, reason, str(exc))
    model_name = model_name_of(agent.model)
    try:
        with usd_budget(scenario.usd_limit, prices=scenario.prices):
            result = await agent.arun(scenario.prompt)
    except (ExecutionError, ToolLoopError) as exc:
        outcome, kind, reason = classify_error(exc)
        return _record(
            scenario, index, model_name, started, exc.events, outcome, kind, reason, str(exc)
        )
    except Exception as exc:  # noqa: BLE001 - the loop wraps its errors; this is a guard
        outcome, kind, reason = classify_error(exc)
        return _record(scenario, index, model_name, started, (), outcome, kind, reason, str(exc))
    outcome = outcome_of_result(
        budget_exhausted=result.budget_exhausted, synthesis_was_run=result.synthesis_was_run
    )
    return _record(scenario, index, model_name, started, result.events, outcome)


def _record(
    scenario: Scenario,
    index: int,
    model_name: str | None,
    started: float,
    events: Sequence[Event],
    outcome: Outcome,
    kind: str | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> ScenarioRun:
    return ScenarioRun(
        scenario=scenario.name,
        index=index,
        tags=scenario.tags,
        description=scenario.description,
        model_name=model_name,
        outcome=outcome,
        error_kind=kind,
        error_reason=reason,
        error_message=message,
        duration_s=time.perf_counter() - started,
        events=tuple(events),
    )


def run_one(scenario: Scenario, index: int = 0) -> ScenarioRun:
    """Synchronous :func:`arun_one` with no observers: what an executor worker runs."""
    return asyncio.run(arun_one(scenario, index=index))


def _prepare(scenarios: Iterable[Scenario], concurrency: int) -> tuple[Scenario, ...]:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(
            f"concurrency must be a positive int, got {concurrency!r}", field="concurrency"
        )
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


def _progress_bar(total: int, enabled: bool) -> tqdm[Any]:
    """A tqdm.auto bar: a widget in a notebook, text on stderr in a terminal."""
    return tqdm(total=total, desc="scenarios", unit="scenario", disable=not enabled, leave=True)


async def _sweep(
    items: Sequence[Scenario], backend: Backend, concurrency: int, bar: tqdm[Any]
) -> LabResults:
    slots: list[ScenarioRun | None] = [None] * len(items)
    queue = iter(enumerate(items))
    errors = 0

    async def worker() -> None:
        nonlocal errors
        for index, scenario in queue:  # one shared iterator: each scenario runs once
            run = await backend(scenario, index)
            slots[index] = run
            if run.outcome == "error":
                errors += 1
                bar.set_postfix(errors=errors, refresh=False)
            bar.update(1)

    async with asyncio.TaskGroup() as group:
        for _ in range(min(concurrency, len(items))):
            group.create_task(worker())
    return LabResults(tuple(run for run in slots if run is not None))


def _local_backend(observers: tuple[Observer, ...]) -> Backend:
    async def backend(scenario: Scenario, index: int) -> ScenarioRun:
        return await arun_one(scenario, index=index, observers=observers)

    return backend


async def arun_scenarios(
    scenarios: Iterable[Scenario],
    *,
    concurrency: int = 4,
    observers: Iterable[Observer] = (),
    progress: bool = True,
) -> LabResults:
    """Run a sweep in this event loop, ``concurrency`` scenarios at a time.

    ``observers`` get every event of every scenario as it happens (tell runs apart by
    ``event.run_id``). Results keep the order of ``scenarios``.
    """
    items = _prepare(scenarios, concurrency)
    bar = _progress_bar(len(items), progress)
    try:
        return await _sweep(items, _local_backend(tuple(observers)), concurrency, bar)
    finally:
        bar.close()


def run_scenarios(
    scenarios: Iterable[Scenario],
    *,
    concurrency: int = 4,
    observers: Iterable[Observer] = (),
    progress: bool = True,
) -> LabResults:
    """Synchronous :func:`arun_scenarios`, for scripts and notebook cells alike.

    Where an event loop already runs (a notebook cell), the sweep runs on a worker thread
    with its own loop, like :meth:`LLMAgent.run`; observers are then called on that thread.
    The progress bar is made here, on the caller's thread, so a notebook shows it in the cell.
    """
    items = _prepare(scenarios, concurrency)
    bar = _progress_bar(len(items), progress)
    backend = _local_backend(tuple(observers))
    try:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_sweep(items, backend, concurrency, bar))
        ctx = contextvars.copy_context()
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="toolloop-lab") as pool:
            future = pool.submit(ctx.run, asyncio.run, _sweep(items, backend, concurrency, bar))
            return future.result()
    finally:
        bar.close()
