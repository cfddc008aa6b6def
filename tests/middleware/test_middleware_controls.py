"""The debugger drives a LangChain ``create_agent`` run through ``ToolLoopMiddleware``, from
Python: pause before the model or the tools, step, edit arguments, skip a call with a
result, add a message, and Stop (between hooks, at a pause, while a tool runs)."""

from __future__ import annotations

import asyncio
from typing import Any

import comm
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import MockComm, calls, final, tool_call, until

from toolloop_lab import AgentConfig, LoopDebugger, ScriptedChatModel, ToolLoopMiddleware
from toolloop_lab._widget import reach
from toolloop_lab._widget.reach import KernelInfo
from toolloop_lab.errors import RunStopped
from toolloop_lab.events import Event, Intervention, LoopFailed, LoopFinished, ToolDispatched


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)
    # as in a notebook cell that awaits the agent (ipykernel 7.4 reads clicks meanwhile):
    # the controls reach a run the debugger did not start
    monkeypatch.setattr(reach, "kernel_info", lambda: KernelInfo("7.4.0"))


ran: list[str] = []
gate: asyncio.Event | None = None


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    ran.append(database)
    return f"{database}: FAILED" if database == "orders" else f"{database}: OK"


@tool
async def slow_backup(database: str) -> str:
    """Back a database up (waits until the test lets it finish)."""
    ran.append(f"backup {database}")
    assert gate is not None
    await gate.wait()
    return "done"


def analyst(messages: list[BaseMessage], bound_tools: Any) -> AIMessage:
    """Reads the orders log, then answers with the last tool result and the last human
    message it saw (so an edit, a skip or an added message shows in its answer)."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    if not results:
        return calls(tool_call("read_log", {"database": "orders"}, "c1"))
    return final(f"answer: {results[-1].content} | last: {humans[-1].content}")


def graph(dbg: LoopDebugger, *tools: Any, script: Any = None) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    model = ScriptedChatModel(script or [analyst] * 4, model_name="gpt-4o-mini")
    middleware = ToolLoopMiddleware(AgentConfig(tool_max_rounds=3), observers=[dbg, events.append])
    return create_agent(model, list(tools) or [read_log], middleware=[middleware]), events


@pytest.fixture(autouse=True)
def clean() -> None:
    ran.clear()


async def test_step_edit_arguments_and_add_a_message() -> None:
    dbg = LoopDebugger()
    dbg.pause_on = "both"
    agent, events = graph(dbg)
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("check backups")]}))
    await until(lambda: dbg.paused_at is not None)

    point = await dbg.next_pause(timeout=5)
    assert (point.stage, point.purpose, point.round) == ("model_call", "round", 1)
    assert dbg.step()
    point = await dbg.next_pause(timeout=5)
    assert (point.stage, point.detail) == ("tool_dispatch", ("read_log",))
    point.edit_args("c1", {"database": "users"})
    assert dbg.step()
    point = await dbg.next_pause(timeout=5)
    assert (point.stage, point.round) == ("model_call", 2)
    point.append(HumanMessage("be brief"))
    assert dbg.step()
    out = await asyncio.wait_for(task, 10)

    assert ran == ["users"]  # the edited arguments ran, not the model's
    assert out["messages"][-1].content == "answer: users: OK | last: be brief"
    edits = [e.action for e in events if isinstance(e, Intervention)]
    assert edits == ["edit_args", "append_message"]
    assert isinstance(events[-1], LoopFinished)
    # the graph's state holds what the loop sent: the edited call and the added message
    ai = next(m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls)
    assert ai.tool_calls[0]["args"] == {"database": "users"}
    assert any(m.content == "be brief" for m in out["messages"])


async def test_skip_answers_a_call_by_hand_and_the_tool_never_runs() -> None:
    dbg = LoopDebugger()
    dbg.pause_on = "tools"
    agent, events = graph(dbg)
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("check backups")]}))
    await until(lambda: dbg.paused_at is not None)
    point = await dbg.next_pause(timeout=5)
    point.skip("c1", "orders: restored by hand")
    assert dbg.continue_()
    out = await asyncio.wait_for(task, 10)

    assert ran == []
    assert out["messages"][-1].content.startswith("answer: orders: restored by hand")
    dispatched = [e for e in events if isinstance(e, ToolDispatched)]
    assert [(e.tool_call_id, e.ran) for e in dispatched] == [("c1", False)]


async def test_stop_at_a_pause_ends_the_run_stopped_with_its_counts() -> None:
    dbg = LoopDebugger()
    dbg.pause_on = "tools"
    agent, events = graph(dbg)
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("check backups")]}))
    await until(lambda: dbg.paused_at is not None)
    await dbg.next_pause(timeout=5)
    assert dbg.stop()
    with pytest.raises(RunStopped) as caught:
        await asyncio.wait_for(task, 10)

    assert ran == []
    assert caught.value.model_calls == 1
    assert caught.value.rounds == 0
    last = events[-1]
    assert isinstance(last, LoopFailed)
    assert last.cancelled
    # every open call answered (the transcript stays resumable)
    answered = [e for e in events if isinstance(e, ToolDispatched)]
    assert [(e.tool_call_id, e.status, e.ran) for e in answered] == [("c1", "error", False)]


async def test_stop_while_tools_run_answers_every_open_call() -> None:
    global gate
    gate = asyncio.Event()
    dbg = LoopDebugger()
    script = [
        calls(
            tool_call("slow_backup", {"database": "orders"}, "b1"),
            tool_call("slow_backup", {"database": "users"}, "b2"),
        ),
        final("never"),
    ]
    agent, events = graph(dbg, slow_backup, script=script)
    task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("back up")]}))
    await until(lambda: len(ran) == 2)
    assert dbg.stop()
    with pytest.raises(RunStopped) as caught:
        await asyncio.wait_for(task, 10)

    assert caught.value.model_calls == 1
    answered = {e.tool_call_id: e for e in events if isinstance(e, ToolDispatched)}
    assert sorted(answered) == ["b1", "b2"]
    assert {e.status for e in answered.values()} == {"cancelled"}
    assert isinstance(events[-1], LoopFailed)
    assert [e.kind for e in events].count("loop_failure") == 1


async def test_fork_from_a_round_replays_the_prefix_and_runs_on() -> None:
    dbg = LoopDebugger()
    model = ScriptedChatModel(
        [
            calls(tool_call("read_log", {"database": "orders"}, "c1"), tokens=(100, 10)),
            calls(tool_call("read_log", {"database": "users"}, "c2"), tokens=(200, 10)),
            final("both read", (300, 10)),
        ],
        model_name="gpt-4o-mini",
    )
    middleware = ToolLoopMiddleware(observers=[dbg])
    agent = create_agent(model, [read_log], middleware=[middleware])
    assert not dbg.can_fork  # connected, but no run yet: nothing to fork with
    await agent.ainvoke({"messages": [HumanMessage("check backups")]})
    assert ran == ["orders", "users"]
    assert dbg.view.done
    assert dbg.can_fork  # the page's "Fork from here" is enabled once a run has run

    child = dbg.fork(2, pause_on="off")
    result = await asyncio.wait_for(child.task, 10)  # type: ignore[arg-type]

    assert child.fork_info == {"at_round": 2, "source": "events"}
    # round 1 was taken from the events (its tool did not run again), round 2 on ran anew
    assert ran == ["orders", "users", "users"]
    assert len(model.calls) == 3  # the original model was not asked again
    assert result.original.rounds == 3
    assert result.forked.rounds == 3
    assert result.token_delta == 0
