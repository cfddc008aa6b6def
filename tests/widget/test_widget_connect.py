"""One way to connect a debugger: give it where the run takes observers.

``LLMAgent(model, tools, observers=[dbg])`` (or ``agent.subscribe(dbg)``) connects the
debugger to the agent: it holds the agent's runs in step mode and remembers the agent for
"Fork from here" and Stop, however the run is started (``agent.run``, ``await agent.arun``,
``dbg.start``). There is no second spelling (no ``attach``, no ``dbg.watch``): LangChain runs
are watched with the root's ``watch``, spans with ``toolloop_lab.otel.watch_spans``.
"""

from __future__ import annotations

import asyncio

import comm
import pytest
from langchain_core.tools import tool
from loopkit import MODEL, MockComm, calls, final, tool_call

from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model(rounds: int = 2) -> ScriptedChatModel:
    asks = [calls(tool_call("add", {"a": i, "b": 1}, f"c{i}")) for i in range(rounds)]
    return ScriptedChatModel([*asks, final("done")], model_name=MODEL)


def test_a_debugger_among_the_observers_knows_the_agent_to_fork_with() -> None:
    dbg = LoopDebugger()
    assert dbg.can_fork is False
    agent = LLMAgent(_model(), [add], observers=[dbg])
    assert dbg.can_fork is True  # "Fork from here" runs with this agent's model and tools
    agent.run("go")
    assert dbg.view.status == "finished"
    assert dbg.can_fork is True
    dbg.close()


async def test_a_run_awaited_in_place_pauses_where_the_debugger_says() -> None:
    """``await agent.arun(...)`` on an agent built with the debugger: the controls hold it
    (here, outside a kernel, a run no click could reach is never held; the debugger's own
    ``start`` is, on the same agent, with no second hook added)."""
    dbg = LoopDebugger(pause_on="tools")
    agent = LLMAgent(_model(), [add], observers=[dbg])
    hooks = agent.pause_hooks
    assert len(hooks) == 1  # the debugger's step hook, connected when the agent was built
    task = dbg.start(agent, "go")
    point = await dbg.next_pause(timeout=10)
    assert (point.stage, point.round) == ("tool_dispatch", 1)
    assert dbg.step() is True
    again = await dbg.next_pause(timeout=10)
    assert (again.stage, again.round) == ("tool_dispatch", 2)
    assert dbg.continue_() is True
    result = await asyncio.wait_for(task, 10)
    assert result.final_response.text == "done"
    assert agent.pause_hooks == hooks  # start connected nothing more, and left it connected
    assert [o for o in agent.observers if o is dbg] == [dbg]
    dbg.close()


def test_subscribe_connects_and_its_remover_disconnects() -> None:
    dbg = LoopDebugger(pause_on="model")
    agent = LLMAgent(_model(), [add])
    remove = agent.subscribe(dbg)
    assert dbg.can_fork is True
    assert len(agent.pause_hooks) == 1
    remove()
    assert agent.pause_hooks == ()
    assert not any(o is dbg for o in agent.observers)
    agent.run("go")  # neither seen nor held
    assert dbg.view.status == "idle"
    dbg.close()


def test_closing_the_debugger_disconnects_it_from_every_agent() -> None:
    dbg = LoopDebugger()
    agents = [LLMAgent(_model(), [add], observers=[dbg]) for _ in range(2)]
    dbg.close()
    assert all(agent.pause_hooks == () for agent in agents)


def test_one_spelling_for_each_job() -> None:
    for gone in ("attach", "watch", "callbacks", "watch_spans"):
        assert not hasattr(LoopDebugger, gone), gone
