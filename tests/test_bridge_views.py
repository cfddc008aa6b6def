"""Bridged runs in every view the loop's own runs have, unchanged: the live
``LoopDebugger``, a JSONL ``TraceWriter`` read back strictly, ``LoopDebugger.from_trace``,
``RunView`` and the lab's pandas frames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call
from stubs.openai_stub import OpenAIStub
from test_bridge_kit import TOOLS, add, prepare, run_agent

from toolloop_lab import ScriptedChatModel
from toolloop_lab.bridge import watch
from toolloop_lab.events import (
    Event,
    LoopFinished,
    LoopStarted,
    event_from_dict,
    transcript,
)
from toolloop_lab.lab.frames import rounds_frame, runs_frame
from toolloop_lab.lab.record import ScenarioRun, outcome_of_events
from toolloop_lab.runview import RunView
from toolloop_lab.trace import TraceWriter, read_trace
from toolloop_lab.widget import LoopDebugger


def _record(name: str, events: list[Event]) -> ScenarioRun:
    """A bridged run as the lab's unit (what a sweep would have collected)."""
    start = next(e for e in events if isinstance(e, LoopStarted))
    return ScenarioRun(
        scenario=name,
        index=0,
        tags=("bridged",),
        description="",
        model_name=start.model_name,
        outcome=outcome_of_events(tuple(events)),
        error_kind=None,
        error_reason=None,
        error_message=None,
        duration_s=events[-1].t,
        events=tuple(events),
    )


async def test_a_trace_of_a_bridged_run_replays_as_the_live_view_ended(
    tmp_path: Path, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    model, expected = prepare("openai", oai, streaming=True)
    path = tmp_path / "agent.jsonl"
    live = LoopDebugger()
    events: list[Event] = []
    with TraceWriter(path) as writer, watch(live, writer, events.append):
        await run_agent("create_agent", model, stream=True)

    read = read_trace(path)
    assert read.skipped == ()
    assert list(read.events) == events  # every event survives the strict parser
    assert all(event_from_dict(e.to_dict()) == e for e in events)
    replay = LoopDebugger.from_trace(path)
    assert replay.summary() == live.summary()
    assert replay.view.status == live.view.status == "finished"
    assert replay.view.usage == live.view.usage
    assert replay.view.usage.input_tokens == expected.input_tokens
    assert [(r.number, [t.status for t in r.tools]) for r in replay.view.rounds] == [
        (1, ["success", "error", "error"]),
        (2, []),
    ]
    assert transcript(read.events) == transcript(events)


def test_the_lab_frames_read_a_bridged_run() -> None:
    model, expected = prepare("scripted", None, streaming=False)
    events: list[Event] = []
    with watch(events.append):
        create_agent(model, TOOLS).invoke({"messages": [HumanMessage("Add 2 and 3.")]})
    runs = runs_frame([_record("create_agent", events)])
    row = runs.iloc[0]
    assert row["outcome"] == "final_answer"
    assert (row["rounds"], row["model_calls"]) == (2, expected.calls)
    assert row["prompt_tokens"] == expected.input_tokens
    assert row["completion_tokens"] == expected.output_tokens
    assert (row["tool_calls"], row["tool_errors"]) == (3, 2)
    assert bool(row["cost_known"]) is True
    assert row["cost_usd"] == float(expected.cost)
    assert bool(row["budget_exhausted"]) is False
    rounds = rounds_frame([_record("create_agent", events)])
    assert list(rounds["round"]) == [1, 2]
    assert set(rounds["token_gate"]) == set(rounds["usd_gate"]) == {"off"}  # absent


def test_a_nested_run_can_be_opened_on_its_own(tmp_path: Path) -> None:
    inner = create_agent(
        ScriptedChatModel(
            [calls(tool_call("add", {"a": 1, "b": 1}, "i1")), final("two")], model_name=MODEL
        ),
        [add],
        name="helper",
    )

    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return str(inner.invoke({"messages": [HumanMessage(question)]})["messages"][-1].text)

    outer = create_agent(
        ScriptedChatModel(
            [calls(tool_call("ask_helper", {"question": "?"}, "o1")), final("It is two.")],
            model_name=MODEL,
        ),
        [ask_helper],
        name="boss",
    )
    path = tmp_path / "nested.jsonl"
    with TraceWriter(path) as writer, watch(writer):
        outer.invoke({"messages": [HumanMessage("go")]})
    read = read_trace(path)
    boss, helper = (e for e in read.events if isinstance(e, LoopStarted))
    assert read.run_ids == (boss.run_id, helper.run_id)
    shown: dict[str, Any] = {}
    for start in (boss, helper):
        debugger = LoopDebugger.from_trace(path, run_id=start.run_id)
        shown[start.name or ""] = debugger.view
    assert shown["boss"].final_text == "It is two."
    assert shown["helper"].final_text == "two"
    assert shown["helper"].started.parent_tool_call_id == "o1"
    assert [t.id for r in shown["boss"].rounds for t in r.tools] == ["o1"]
    ends = [e for e in read.events if isinstance(e, LoopFinished)]
    assert {e.run_id for e in ends} == {boss.run_id, helper.run_id}
    assert RunView.from_events(read.run(boss.run_id)).status == "finished"
