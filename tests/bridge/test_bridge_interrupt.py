"""A LangGraph ``interrupt()`` ends the bridged run ``interrupted``: waiting for a person,
never a failure, in every view.

Real LangGraph graphs with a checkpointer run on our scripted model through the bridge:
a tool that asks (``ToolNode``), a node that asks, a subgraph that asks, and the resume
(``Command(resume=...)``), which is a run of its own. Each view is read as a user meets
it: the events, ``RunView``, the run summaries, the text and snapshot views, the
debugger, and the OpenTelemetry export.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt
from loopkit import MODEL, calls, final, tool_call
from opentelemetry.trace import StatusCode

from toolloop_lab import RunSummary, RunView, ScriptedChatModel, watch
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.text import summary_text
from toolloop_lab.events import FAILED_OUTCOMES, Event, LoopFinished, LoopStarted, ToolDispatched
from toolloop_lab.otel import OTelObserver
from toolloop_lab.otel._names import TOOLLOOP

pytest_plugins = ("otelkit",)


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool
def approve(action: str) -> str:
    """Ask a person whether ``action`` may go ahead."""
    return str(interrupt(f"May I {action}?"))


def _approval_graph() -> Any:
    """A model node, ``tools_condition`` and a ``ToolNode`` whose tool asks a person."""
    model = ScriptedChatModel(
        [calls(tool_call("approve", {"action": "restart the server"}, "a1")), final("Restarted.")],
        model_name=MODEL,
    )
    bound = model.bind_tools([approve])

    def agent(state: _State) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(_State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([approve]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver(), name="approvals")


def _asking_node_graph(value: Any, checkpointer: Any) -> Any:
    """A model node, then a node that asks with ``value`` itself."""
    model = ScriptedChatModel([final("draft ready")], model_name=MODEL)

    def agent(state: _State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def review(state: _State) -> dict[str, Any]:
        return {"messages": [HumanMessage(str(interrupt(value)))]}

    graph = StateGraph(_State)
    graph.add_node("agent", agent)
    graph.add_node("review", review)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=checkpointer, name="review")


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


def _ends(events: list[Event]) -> list[LoopFinished]:
    return [e for e in events if isinstance(e, LoopFinished)]


def test_a_tool_that_interrupts_ends_the_run_interrupted_and_the_resume_answers() -> None:
    graph = _approval_graph()
    events: list[Event] = []
    with watch(events.append):
        paused = graph.invoke({"messages": [HumanMessage("Restart it.")]}, CONFIG)
        first = len(events)
        graph.invoke(Command(resume="yes"), CONFIG)
    assert "__interrupt__" in paused
    before, after = events[:first], events[first:]
    [end] = _ends(before)
    assert (end.outcome, end.final_text, end.final_empty) == (
        "interrupted",
        "May I restart the server?",
        False,
    )
    assert end.outcome not in FAILED_OUTCOMES
    view = RunView.from_events(before)
    assert (view.status, view.failure) == ("finished", None)
    [asked] = view.rounds[-1].tools
    assert (asked.id, asked.status, asked.error_reason) == ("a1", "cancelled", "interrupted")
    assert RunSummary.of(view).outcome == "interrupted"
    text = summary_text(view)
    assert "outcome: Interrupted, waiting for input" in text
    assert "interrupt() asked: May I restart the server?" in text
    assert "failed" not in text
    # the resume is a run of its own, which answers the call and finishes
    [resumed] = [e for e in after if isinstance(e, LoopStarted)]
    assert resumed.run_id != end.run_id
    [answer] = [e for e in after if isinstance(e, ToolDispatched)]
    assert (answer.tool_call_id, answer.content) == ("a1", "yes")
    assert [e.outcome for e in _ends(after)] == ["final_answer"]


@pytest.mark.parametrize(
    ("value", "said"),
    [("Approve the draft?", "Approve the draft?"), ({"question": "ok?", "n": 2}, None)],
)
def test_a_node_that_interrupts_says_what_it_asked(value: Any, said: str | None) -> None:
    events: list[Event] = []
    with watch(events.append):
        _asking_node_graph(value, InMemorySaver()).invoke({"messages": [("user", "go")]}, CONFIG)
    [end] = _ends(events)
    assert end.outcome == "interrupted"
    if said is not None:
        assert end.final_text == said
    else:  # anything but a string reads as JSON
        assert '"question"' in end.final_text
        assert '"ok?"' in end.final_text


def test_an_interrupt_inside_a_subgraph_interrupts_the_graph_that_runs_it() -> None:
    inner = _asking_node_graph("Go on?", None)
    outer = StateGraph(_State)
    outer.add_node("inner", inner)
    outer.add_edge(START, "inner")
    outer.add_edge("inner", END)
    graph = outer.compile(checkpointer=InMemorySaver(), name="outer")
    events: list[Event] = []
    with watch(events.append):
        graph.invoke({"messages": [("user", "go")]}, CONFIG)
    assert [(e.outcome, e.final_text) for e in _ends(events)] == [("interrupted", "Go on?")]
    assert not [e for e in events if e.kind == "loop_failure"]


async def test_the_debugger_shows_an_interrupted_run_as_such() -> None:
    dbg = LoopDebugger()
    with watch(dbg):
        await _approval_graph().ainvoke({"messages": [HumanMessage("Restart it.")]}, CONFIG)
    assert dbg.view.status == "finished"
    assert dbg.runs[-1].outcome == "interrupted"
    assert "outcome: Interrupted, waiting for input" in dbg.summary()
    html = dbg.snapshot_html()
    assert "<b>Interrupt() asked:</b> May I restart the server?" in html
    assert "failed" not in html
    assert dbg.reach.code == "bridged"
    dbg.close()


def test_the_export_ends_an_interrupted_run_without_an_error(provider: Any, exporter: Any) -> None:
    observer = OTelObserver(provider, use_current_context=False)
    with watch(observer):
        _approval_graph().invoke({"messages": [HumanMessage("Restart it.")]}, CONFIG)
    spans = {s.name: s for s in exporter.get_finished_spans()}
    run = next(s for s in spans.values() if (s.attributes or {}).get(TOOLLOOP.OUTCOME))
    assert run.attributes[TOOLLOOP.OUTCOME] == "interrupted"
    assert run.status.status_code is not StatusCode.ERROR
    [asked] = [s for s in spans.values() if (s.attributes or {}).get(TOOLLOOP.INTERRUPTED)]
    assert "approve" in asked.name
    assert asked.status.status_code is not StatusCode.ERROR
