"""A LangChain agent's run in the debugger: ``with watch(dbg): ...`` or
``config={"callbacks": [EventBridge(dbg)]}``, the one spelling of each.

A scripted ``create_agent`` runs under each; the debugger must show the run the bridge saw
(the events an independent observer got, in the same order), and what it sends the browser
must be those events.
"""

from __future__ import annotations

import comm
import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from loopkit import MODEL, MockComm, calls, final, received, tool_call

from toolloop_lab import EventBridge, ScriptedChatModel, watch
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.events import Event, LoopStarted


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent() -> object:
    replies = [calls(tool_call("add", {"a": 2, "b": 3}, "c1"), tokens=(50, 9))]
    model = ScriptedChatModel([*replies, final("The sum is 5.", (80, 6))], model_name=MODEL)
    return create_agent(model, [add])


def shown(dbg: LoopDebugger, seen: list[Event]) -> None:
    """The debugger shows the run the other observer saw, and sent the browser its events."""
    assert seen
    start = seen[0]
    assert isinstance(start, LoopStarted)
    assert start.source == "langchain"
    assert dbg.events == tuple(seen)
    view = dbg.view
    assert view.status == "finished"
    assert view.final_text == "The sum is 5."
    assert [t.name for row in view.rounds for t in row.tools] == ["add"]
    assert (view.usage.input_tokens, view.usage.output_tokens) == (130, 15)
    dbg.flush()
    assert received(dbg) == [event_payload(e, dbg.max_text_chars) for e in seen]
    assert "finished" in dbg.summary()


async def test_watch_shows_every_run_started_in_the_block() -> None:
    dbg = LoopDebugger()
    seen: list[Event] = []
    graph = agent()
    with watch(dbg, seen.append):
        await graph.ainvoke({"messages": [("user", "What is 2 + 3?")]})  # type: ignore[attr-defined]
    shown(dbg, seen)
    # outside the block, nothing is watched
    before = len(dbg.events)
    await agent().ainvoke({"messages": [("user", "again")]})  # type: ignore[attr-defined]
    assert len(dbg.events) == before
    dbg.close()


def test_callbacks_show_the_run_they_are_passed_to() -> None:
    dbg = LoopDebugger()
    seen: list[Event] = []
    handler = EventBridge(dbg, seen.append)
    agent().invoke(  # type: ignore[attr-defined]
        {"messages": [("user", "What is 2 + 3?")]}, config={"callbacks": [handler]}
    )
    shown(dbg, seen)
    dbg.close()


async def test_two_runs_in_one_watch_block_are_both_kept() -> None:
    dbg = LoopDebugger()
    seen: list[Event] = []
    with watch(dbg, seen.append):
        await agent().ainvoke({"messages": [("user", "What is 2 + 3?")]})  # type: ignore[attr-defined]
        await agent().ainvoke({"messages": [("user", "And again?")]})  # type: ignore[attr-defined]
    first, second = (e for e in seen if isinstance(e, LoopStarted))
    assert [r.run_id for r in dbg.runs] == [first.run_id, second.run_id]
    assert [r.outcome for r in dbg.runs] == ["final_answer", "final_answer"]
    assert [(r.input_tokens, r.output_tokens) for r in dbg.runs] == [(130, 15)] * 2
    assert dbg.view.run_id == second.run_id  # the view shows the newest run, as before
    dbg.close()
