"""Every run a debugger sees, kept: ``LoopDebugger.runs``.

A debugger shows one run (the newest top-level one), but people run a cell again, call
sub-agents from tools and open traces a cell appended to. ``runs`` is a summary of every
run it saw, in start order: each run of an attached agent, every run in a trace it was
opened on (every run in a ``watch()`` block: ``tests/widget/test_widget_bridge.py``). What
it shows and sends the browser stays the newest run's.
"""

from __future__ import annotations

from pathlib import Path

import comm
import pytest
from langchain_core.tools import tool
from loopkit import MODEL, MockComm, calls, final, received, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.events import Event
from toolloop_lab.runview import RunSummary, summaries
from toolloop_lab.trace import TraceWriter
from toolloop_lab.widget import LoopDebugger
from toolloop_lab.widget.wire import event_payload


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


def echo_agent(times: int = 1) -> LLMAgent:
    """An agent that answers ``times`` runs, each with one echo round then an answer."""
    script = [calls(tool_call("echo", {"text": "x"}, "c1")), final("done")] * times
    return LLMAgent(ScriptedChatModel(script, model_name=MODEL), [echo_tool()])


def boss_and_helper(*observers: object) -> LLMAgent:
    """A boss whose tool awaits a helper agent; both feed ``observers``."""
    helper = LLMAgent(
        ScriptedChatModel([final("two")], model_name=MODEL),
        observers=observers,  # type: ignore[arg-type]
    )

    @tool
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return (await helper.arun(question, name="helper")).final_text

    replies = [calls(tool_call("ask_helper", {"question": "?"}, "o1")), final("It is two.")]
    return LLMAgent(
        ScriptedChatModel(replies, model_name=MODEL),
        [ask_helper],
        observers=observers,  # type: ignore[arg-type]
    )


def test_an_attached_agent_run_twice_is_two_runs_and_the_newest_is_shown() -> None:
    dbg = LoopDebugger()
    agent = echo_agent(times=2)
    dbg.attach(agent)
    first = agent.run("go", name="first")
    second = agent.run("again", name="second", tags=("retry",))
    assert dbg.runs == summaries((*first.events, *second.events))
    assert [(r.name, r.tags, r.outcome) for r in dbg.runs] == [
        ("first", (), "final_answer"),
        ("second", ("retry",), "final_answer"),
    ]
    assert dbg.events == second.events  # the view is the newest run's, as before
    dbg.flush()
    assert received(dbg) == [event_payload(e, dbg.max_text_chars) for e in second.events]
    dbg.close()


def test_a_sub_agent_is_kept_as_its_own_run_under_its_parent() -> None:
    dbg = LoopDebugger()
    seen: list[Event] = []
    outer = boss_and_helper(dbg, seen.append).run("What is 1+1?", name="boss")
    boss, helper = dbg.runs
    assert (boss.name, helper.name) == ("boss", "helper")
    assert (helper.parent_run_id, helper.parent_tool_call_id) == (boss.run_id, "o1")
    assert helper.outcome == "final_answer"
    assert dbg.events == outer.events  # the view still shows the boss alone
    assert dbg.runs == summaries(seen)
    dbg.close()


def test_a_run_in_progress_has_no_outcome_yet() -> None:
    dbg = LoopDebugger()
    events = echo_agent().run("go").events
    for event in events[:-1]:
        dbg(event)
    (going,) = dbg.runs
    assert (going.status, going.outcome) == ("running", None)
    dbg(events[-1])
    assert dbg.runs[0].outcome == "final_answer"
    dbg.close()


def test_a_trace_opened_keeps_every_run_and_shows_the_one_picked(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    with TraceWriter(path) as writer:
        outer = boss_and_helper(writer).run("What is 1+1?", name="boss")
        again = echo_agent()
        again.subscribe(writer)
        newest = again.run("go", name="newest")
    dbg = LoopDebugger.from_trace(path)
    assert [r.name for r in dbg.runs] == ["boss", "helper", "newest"]
    assert dbg.events == newest.events
    picked = LoopDebugger.from_trace(path, run_id=outer.events[0].run_id)
    assert picked.runs == dbg.runs
    assert picked.events == outer.events
    for debugger in (dbg, picked):
        debugger.close()


def test_only_the_newest_runs_are_kept_past_the_bound() -> None:
    dbg = LoopDebugger(max_runs=2)
    agent = echo_agent(times=3)
    dbg.attach(agent)
    results = [agent.run("go", name=f"run {n}") for n in range(3)]
    assert [r.name for r in dbg.runs] == ["run 1", "run 2"]
    assert dbg.runs_left_out == 1
    assert dbg.events == results[-1].events
    assert all(isinstance(r, RunSummary) for r in dbg.runs)
    with pytest.raises(ValueError, match="max_runs"):
        LoopDebugger(max_runs=0)
    dbg.close()


def test_a_sub_agent_reaches_what_watches_its_parent_with_no_wiring(tmp_path: Path) -> None:
    helper = LLMAgent(ScriptedChatModel([final("two")], model_name=MODEL))  # no observers

    @tool
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return (await helper.arun(question, name="helper")).final_text

    boss = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("ask_helper", {"question": "?"}, "o1")), final("It is two.")],
            model_name=MODEL,
        ),
        [ask_helper],
    )
    dbg = LoopDebugger()
    dbg.attach(boss)
    path = tmp_path / "nested.jsonl"
    with TraceWriter(path) as writer:
        boss.subscribe(writer)
        outer = boss.run("What is 1+1?", name="boss")
    top, nested = dbg.runs
    assert (top.name, nested.name) == ("boss", "helper")
    assert (nested.parent_run_id, nested.parent_tool_call_id) == (outer.run_id, "o1")
    assert nested.outcome == "final_answer"
    assert nested.input_tokens > 0
    assert dbg.events == outer.events  # the view still shows the boss
    assert helper.observers == ()  # nothing was added to the helper
    assert [r.name for r in LoopDebugger.from_trace(path).runs] == ["boss", "helper"]
    dbg.close()
