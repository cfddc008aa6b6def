"""The USD budget lives in a ContextVar: concurrent loops under different budgets, worker
threads that cannot see it, and nothing left behind in the caller's context.

A bare thread (one that did not inherit a context) reading the budget while a budget is in
force anywhere else fails closed with ``ExecutionError(kind="cost",
reason="budget_unavailable")``; it never reads as "no limit". A budget is in force while
its ``usd_budget`` block is open *and* while a run started under it is still going.

Related cases elsewhere: two loops under gather, a bare thread, ``to_thread`` and tasks
inheriting the budget (tests/engine/test_usd_budget.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from decimal import Decimal
from typing import Any

import pytest
from hostilekit import SAFETY_S, check_events, check_partial, check_result, kinds, only
from langchain_core.tools import BaseTool, StructuredTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, TokenPrice, usd_budget
from toolloop_lab._spend.budget import UsdBudget, current_usd_budget
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import BudgetGate, Event, LoopFailed, LoopStarted

SPEND = (1000, 100)
"""Tokens of every call below; ``reference_cost`` prices them independently."""


def _cost(calls_made: int) -> Decimal:
    return reference_cost([SPEND] * calls_made)


@tool
async def yielding_echo(text: str) -> str:
    """Echo, letting every other loop run first."""
    await asyncio.sleep(0)
    return text


def _agent(rounds: int, observers: list[Any] | None = None) -> tuple[LLMAgent, ScriptedChatModel]:
    script: list[Any] = [
        calls(tool_call("yielding_echo", {"text": f"r{n}"}, f"c{n}"), text="go on", tokens=SPEND)
        for n in range(rounds)
    ]
    model = ScriptedChatModel([*script, final("done", SPEND)], model_name=MODEL)
    agent = LLMAgent(
        model, [yielding_echo], AgentConfig(tool_max_rounds=10), observers=observers or []
    )
    return agent, model


def _in_bare_thread(work: Any) -> Any:
    """Run ``work`` in a new thread with an empty context; return its result or error."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    worker = threading.Thread(target=target)
    worker.start()
    worker.join(SAFETY_S)
    assert not worker.is_alive()
    return box[0]


def _unavailable(value: Any) -> ExecutionError:
    assert isinstance(value, ExecutionError), value
    assert (value.kind, value.reason) == ("cost", "budget_unavailable")
    return value


# -- concurrent loops under different budgets ---------------------------------------------


async def test_four_concurrent_loops_each_under_its_own_limit() -> None:
    order: list[tuple[int, int]] = []
    # loop i may afford i + 1 calls; each runs 4 rounds + a final answer if it can
    limits = [_cost(i + 1) for i in range(4)]

    async def one(i: int) -> Any:
        def seen(event: Event) -> None:
            if event.kind == "model_call":
                order.append((i, event.round))

        agent, model = _agent(4, [seen])
        with usd_budget(limits[i]):
            try:
                return await agent.arun("go"), model
            except ExecutionError as exc:
                return exc, model

    outcomes = await asyncio.gather(*(one(i) for i in range(4)))

    for i, (outcome, model) in enumerate(outcomes):
        assert isinstance(outcome, ExecutionError), outcome
        check_partial(outcome)
        assert outcome.reason == "budget_exhausted"
        assert len(model.calls) == i + 1  # exactly its own allowance, never another's
        assert outcome.cost_usd == limits[i]
        started = outcome.events[0]
        assert isinstance(started, LoopStarted)
        assert started.usd_limit == limits[i]
        assert {g.limit for g in outcome.events if isinstance(g, BudgetGate)} == {limits[i]}
    # they really interleaved: the first round of every loop before any third round
    assert max(order.index((i, 1)) for i in range(4)) < order.index((3, 3))


async def test_a_loop_with_no_limit_next_to_one_with_a_limit() -> None:
    async def capped() -> ExecutionError:
        agent, _ = _agent(3)
        with usd_budget(_cost(1)), pytest.raises(ExecutionError) as info:
            await agent.arun("go")
        return info.value

    async def free() -> Any:
        agent, _ = _agent(3)
        with usd_budget(None):
            return await agent.arun("go")

    err, result = await asyncio.gather(capped(), free())
    check_partial(err)
    check_result(result)
    assert result.cost_usd == _cost(4)
    assert not [e for e in result.events if isinstance(e, BudgetGate)]


async def test_per_run_prices_under_concurrent_budgets() -> None:
    # the same model name, priced differently by two concurrent budgets
    def priced(per_mtok: int) -> dict[str, TokenPrice]:
        return {"house": TokenPrice(Decimal(per_mtok), Decimal(0))}

    async def run(per_mtok: int) -> Decimal | None:
        model = ScriptedChatModel([final("a", (1_000_000, 1))], model_name="house")
        with usd_budget(100, prices=priced(per_mtok)):
            await asyncio.sleep(0)
            return (await LLMAgent(model).arun("go")).cost_usd

    assert await asyncio.gather(run(1), run(7)) == [Decimal(1), Decimal(7)]


# -- worker threads fail closed -----------------------------------------------------------


def test_agent_run_in_a_bare_thread_fails_closed_and_says_so() -> None:
    events: list[Event] = []

    def bare() -> Any:
        agent, model = _agent(0, [events.append])
        try:
            return agent.run("go")
        finally:
            assert model.calls == ()

    with usd_budget(1):
        err = _unavailable(_in_bare_thread(bare))
    failed = check_partial(err, started=False)  # recorded, not just raised
    assert (failed.error_kind, failed.reason) == ("cost", "budget_unavailable")
    assert err.events == tuple(events)


def test_asyncio_run_in_a_bare_thread_fails_closed() -> None:
    def bare() -> Any:
        agent, _ = _agent(0)
        return asyncio.run(agent.arun("go"))

    with usd_budget(1):
        err = _unavailable(_in_bare_thread(bare))
    assert kinds(err.events) == ["loop_failure"]


def test_a_thread_pool_worker_fails_closed() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool, usd_budget("0.5"):
        read = pool.submit(current_usd_budget)
        with pytest.raises(ExecutionError) as info:
            read.result(SAFETY_S)
    assert info.value.reason == "budget_unavailable"


def test_a_copied_context_carries_the_budget_into_a_thread() -> None:
    with usd_budget("0.5") as budget:
        ctx = contextvars.copy_context()
        seen = _in_bare_thread(lambda: ctx.run(current_usd_budget))
    assert seen == budget


async def test_how_each_kind_of_worker_inside_a_tool_sees_the_budget() -> None:
    seen: dict[str, Any] = {}

    def read() -> Any:
        try:
            return current_usd_budget()
        except ExecutionError as exc:
            return exc.reason

    async def probe() -> str:
        seen["to_thread"] = await asyncio.to_thread(read)
        seen["run_in_executor"] = await asyncio.get_running_loop().run_in_executor(None, read)
        seen["bare_thread"] = _in_bare_thread(read)
        return "probed"

    def sync_probe() -> str:
        seen["sync_tool"] = read()  # langchain-core runs it with a copy of the context
        return "probed"

    tools: list[BaseTool] = [
        StructuredTool.from_function(coroutine=probe, name="probe", description="P."),
        StructuredTool.from_function(sync_probe, name="sync_probe", description="S."),
    ]
    reply = calls(tool_call("probe", {}, "p1"), tool_call("sync_probe", {}, "p2"))
    model = ScriptedChatModel([reply, final("done")], model_name=MODEL)
    with usd_budget("0.5") as budget:
        result = await LLMAgent(model, tools).arun("go")
    check_result(result)
    assert seen == {
        "to_thread": budget,
        "run_in_executor": "budget_unavailable",  # no context copied: fails closed
        "bare_thread": "budget_unavailable",
        "sync_tool": budget,
    }


async def test_a_run_holds_its_budget_after_the_block_closed() -> None:
    # a task started inside the block keeps its budget; while it runs, a bare thread must
    # not read "no limit" just because the block itself has closed
    inside = asyncio.Event()
    release = asyncio.Event()
    seen: list[Any] = []

    @tool
    async def worker() -> str:
        """Looks from a bare thread, once the block is closed."""
        inside.set()
        await release.wait()
        seen.append(_in_bare_thread(current_usd_budget))
        return "looked"

    model = ScriptedChatModel([calls(tool_call("worker", {}, "w1")), final("ok")], model_name=MODEL)
    with usd_budget(1):
        task = asyncio.create_task(LLMAgent(model, [worker]).arun("go"))
        await asyncio.wait_for(inside.wait(), SAFETY_S)
    assert current_usd_budget() is None  # the block itself is closed
    release.set()
    result = await asyncio.wait_for(task, SAFETY_S)
    check_result(result)
    _unavailable(only(seen))
    # and once the run is over, nothing is held any more
    assert _in_bare_thread(current_usd_budget) is None


# -- nothing leaks to the caller ----------------------------------------------------------


def _context() -> dict[Any, Any]:
    return dict(contextvars.copy_context())


async def test_a_finished_run_leaves_the_callers_context_as_it_was() -> None:
    before = _context()
    with usd_budget(1):
        result = await _agent(1)[0].arun("go")
    check_result(result)
    assert _context() == before
    assert current_usd_budget() is None
    assert _in_bare_thread(current_usd_budget) is None


async def test_a_failed_run_leaves_the_callers_context_as_it_was() -> None:
    before = _context()
    with usd_budget(_cost(1)), pytest.raises(ExecutionError):
        await _agent(3)[0].arun("go")
    assert _context() == before
    assert _in_bare_thread(current_usd_budget) is None


async def test_a_cancelled_run_leaves_the_callers_context_as_it_was() -> None:
    before = _context()
    started = asyncio.Event()

    @tool
    async def hang() -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedChatModel([calls(tool_call("hang", {}, "h1"))], model_name=MODEL)
    with usd_budget(1):
        task = asyncio.create_task(LLMAgent(model, [hang]).arun("go"))
        await asyncio.wait_for(started.wait(), SAFETY_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert _context() == before
    assert _in_bare_thread(current_usd_budget) is None


def test_a_sync_run_interrupted_leaves_nothing_held() -> None:
    events: list[Event] = []
    model = ScriptedChatModel([KeyboardInterrupt()], model_name=MODEL)
    before = _context()
    with usd_budget(1), pytest.raises(KeyboardInterrupt):
        LLMAgent(model, observers=[events.append]).run("go")
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert _context() == before
    assert _in_bare_thread(current_usd_budget) is None


MARK: contextvars.ContextVar[str] = contextvars.ContextVar("hostile_mark", default="caller")


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_context_a_tool_sets_stays_inside_the_tool(kind: str) -> None:
    def meddle() -> str:
        MARK.set("tool")  # never reset: a tool gone wrong
        return MARK.get()

    async def ameddle() -> str:
        return meddle()

    tool_ = (
        StructuredTool.from_function(meddle, name="meddle", description="M.")
        if kind == "sync"
        else StructuredTool.from_function(coroutine=ameddle, name="meddle", description="M.")
    )
    model = ScriptedChatModel([calls(tool_call("meddle", {}, "m1")), final("ok")], model_name=MODEL)
    before = _context()
    with usd_budget(1) as mine:
        result = await LLMAgent(model, [tool_]).arun("go")
        assert current_usd_budget() == mine
    check_result(result)
    assert result.messages[2].content == "tool"  # it did set it, in its own copy
    assert MARK.get() == "caller"
    assert _context() == before


def test_the_budget_value_is_immutable() -> None:
    with usd_budget(1) as budget:
        assert isinstance(budget, UsdBudget)
        with pytest.raises(AttributeError):
            budget.limit_usd = Decimal(100)  # type: ignore[misc]
        assert budget.prices is None


def test_a_block_closed_from_another_context_still_releases_its_hold() -> None:
    block = usd_budget(1)
    contextvars.copy_context().run(block.__enter__)
    with pytest.raises(ValueError, match="different Context"):
        block.__exit__(None, None, None)
    assert current_usd_budget() is None
    assert _in_bare_thread(current_usd_budget) is None  # the hold did not leak
