"""A stop asked for one run (``engine.stopping``): the run ends as any stop does, and its
caller gets ``RunStopped`` with the partial counts, its own task left clean.

This is how a debugger stops a run it did not start (a notebook cell's ``await
agent.arun(...)``, or ``agent.run(...)`` on the sync runner's loop): the widget's side is
in tests/widget/test_widget_reach.py, a real kernel's in tests/widget/test_widget_kernel.py.
"""

from __future__ import annotations

import asyncio
import pickle
import threading
from typing import Any

import pytest
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel
from toolloop_lab._engine.stopping import STOP_MESSAGE, request_stop
from toolloop_lab.errors import RunStopped
from toolloop_lab.events import Event, LoopFailed, LoopStarted, ToolDispatched

_SAFETY_S = 10.0


@tool
async def slow(x: int) -> int:
    """Wait a while, then give ``x`` back."""
    await asyncio.sleep(_SAFETY_S)
    return x


@tool
def quick(x: int) -> int:
    """Give ``x`` back."""
    return x


def _agent(events: list[Event], tool_name: str = "slow") -> LLMAgent:
    model = ScriptedChatModel(
        [calls(tool_call(tool_name, {"x": 1}, "c1")), final("done")], model_name=MODEL
    )
    return LLMAgent(model, [slow, quick], observers=[events.append])


def _started(events: list[Event]) -> str:
    return next(e.run_id for e in events if isinstance(e, LoopStarted))


async def _stop_when_the_tool_runs(events: list[Event], task: asyncio.Task[Any]) -> bool:
    while not any(e.kind == "tool_start" for e in events):
        await asyncio.sleep(0.005)
    return request_stop(task, _started(events))


async def test_a_stopped_run_raises_run_stopped_with_its_partial_counts() -> None:
    events: list[Event] = []
    me = asyncio.current_task()
    assert me is not None
    stopper = asyncio.create_task(_stop_when_the_tool_runs(events, me))
    with pytest.raises(RunStopped) as caught:
        await _agent(events).arun("go")
    assert await stopper is True
    error = caught.value
    end = events[-1]
    assert isinstance(end, LoopFailed)
    assert (end.cancelled, end.outcome, end.message) == (True, "cancelled", STOP_MESSAGE)
    assert (error.run_id, error.rounds) == (end.run_id, 0)
    assert (error.accumulated_prompt, error.accumulated_completion) == (
        end.usage.input_tokens,
        end.usage.output_tokens,
    )
    assert error.events == tuple(events)
    [cut] = [e for e in events if isinstance(e, ToolDispatched)]
    assert (cut.tool_call_id, cut.status) == ("c1", "cancelled")
    assert "stopped in round 1" in str(error)
    assert error._render_traceback_() == [f"RunStopped: {error}"]  # IPython's one line
    assert me.cancelling() == 0  # the caller's task goes on clean
    await asyncio.sleep(0)  # and can await again


async def test_a_stop_asked_after_the_run_ended_does_nothing() -> None:
    events: list[Event] = []
    result = await _agent(events, "quick").arun("go")
    me = asyncio.current_task()
    assert me is not None
    assert request_stop(me, result.run_id) is False
    assert me.cancelling() == 0
    await asyncio.sleep(0)  # not cancelled


async def test_a_stop_for_another_run_than_the_one_going_on_does_nothing() -> None:
    events: list[Event] = []
    task = asyncio.create_task(_agent(events).arun("go"))
    while not any(e.kind == "tool_start" for e in events):
        await asyncio.sleep(0.005)
    assert request_stop(task, "not-this-run") is False
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancellation_someone_else_asked_for_too_still_propagates() -> None:
    events: list[Event] = []
    task = asyncio.create_task(_agent(events).arun("go"))
    while not any(e.kind == "tool_start" for e in events):
        await asyncio.sleep(0.005)
    assert request_stop(task, _started(events)) is True
    task.cancel()  # the caller's own cancel, as asyncio.timeout would
    with pytest.raises(asyncio.CancelledError):
        await task
    assert isinstance(events[-1], LoopFailed)
    assert events[-1].cancelled


def test_a_sync_run_stopped_from_another_thread_raises_run_stopped() -> None:
    """``agent.run()`` outside a loop runs on the thread's own loop; a stop asked on that
    loop (the debugger does it with ``call_soon_threadsafe``) ends it the same way."""
    events: list[Event] = []
    seen: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    def note(event: Event) -> None:
        if isinstance(event, LoopStarted):
            task = asyncio.current_task()
            assert task is not None
            seen.append((asyncio.get_running_loop(), task))
        if event.kind == "tool_start":
            loop, task = seen[0]
            run_id = event.run_id
            threading.Thread(
                target=lambda: loop.call_soon_threadsafe(request_stop, task, run_id)
            ).start()

    agent = _agent(events)
    agent.subscribe(note)
    with pytest.raises(RunStopped) as caught:
        agent.run("go")
    assert caught.value.run_id == events[-1].run_id
    assert events[-1].kind == "loop_failure"


def test_run_stopped_pickles_with_its_counts() -> None:
    error = RunStopped("stopped", rounds=2, accumulated_prompt=10, run_id="r1")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.rounds, copy.accumulated_prompt, copy.run_id) == (
        "stopped",
        2,
        10,
        "r1",
    )
