"""Every run a debugger sees, kept: ``LoopDebugger.runs``.

A debugger shows one run (the newest top-level one), but people run a cell again, call
sub-agents from tools and open traces a cell appended to. ``runs`` is a summary of every
run it saw, in start order: each run of an attached agent, every run in a trace it was
opened on (every run in a ``watch()`` block: ``tests/widget/test_widget_bridge.py``). What
it shows and sends the browser stays the newest run's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import comm
import pytest
from browser.streams import Stream, session_runs
from langchain_core.tools import tool
from loopkit import MODEL, FakeTime, MockComm, calls, channel, final, received, tool_call

from toolloop_lab import LLMAgent, RunSummary, ScriptedChatModel, TraceWriter, echo_tool
from toolloop_lab._runview import summaries
from toolloop_lab._support.escape import NAME_CHARS
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.runs import MAX_TAGS, row_payload
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.errors import UnknownRunError
from toolloop_lab.events import Event


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
        return (await helper.arun(question, name="helper")).finished.final_text

    replies = [calls(tool_call("ask_helper", {"question": "?"}, "o1")), final("It is two.")]
    return LLMAgent(
        ScriptedChatModel(replies, model_name=MODEL),
        [ask_helper],
        observers=observers,  # type: ignore[arg-type]
    )


def test_an_attached_agent_run_twice_is_two_runs_and_the_newest_is_shown() -> None:
    dbg = LoopDebugger()
    agent = echo_agent(times=2)
    agent.subscribe(dbg)
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
    agent.subscribe(dbg)
    results = [agent.run("go", name=f"run {n}") for n in range(3)]
    assert [r.name for r in dbg.runs] == ["run 1", "run 2"]
    assert dbg.runs_left_out == 1
    assert dbg.events == results[-1].events
    assert all(isinstance(r, RunSummary) for r in dbg.runs)
    with pytest.raises(ValueError, match="max_runs"):
        LoopDebugger(max_runs=0)
    dbg.close()


# -- the run list on the wire --------------------------------------------------------
def runs_parts(dbg: LoopDebugger) -> list[dict[str, Any]]:
    """The ``runs`` part of every message sent so far (messages without one left out)."""
    return [m["runs"] for m in channel(dbg).custom() if "runs" in m]


def page_rows(dbg: LoopDebugger) -> dict[str, dict[str, Any]]:
    """The rows a page folding every message in order holds."""
    rows: dict[str, dict[str, Any]] = {}
    for part in runs_parts(dbg):
        if part["reset"]:
            rows = {}
        for run_id in part["dropped"]:
            rows.pop(run_id, None)
        rows.update({row["run_id"]: row for row in part["rows"]})
    return rows


def make(fake: FakeTime, **options: Any) -> LoopDebugger:
    return LoopDebugger(clock=fake.clock, schedule=fake.schedule, **options)


def feed(dbg: LoopDebugger, fake: FakeTime, events: Sequence[Event], step: float = 0.01) -> None:
    for event in events:
        dbg(event)
        fake.advance(step)
    fake.advance(1.0)


def test_the_page_gets_every_row_then_only_the_rows_that_changed() -> None:
    fake = FakeTime()
    dbg = make(fake)
    seen: list[Event] = []
    boss_and_helper(seen.append).run("What is 1+1?", name="boss")
    feed(dbg, fake, seen)
    parts = runs_parts(dbg)
    assert parts[0]["reset"] is True
    assert all(not p["reset"] for p in parts[1:])
    # every message carried only rows that changed: the boss's row many times, the helper's
    # only while it ran, and never a row twice in one message
    assert all(len({r["run_id"] for r in p["rows"]}) == len(p["rows"]) for p in parts)
    assert len(parts) < len(seen)
    rows = page_rows(dbg)
    assert rows == {s.run_id: row_payload(s, dbg.max_text_chars) for s in dbg.runs}
    boss, helper = dbg.runs
    row = rows[helper.run_id]
    assert (row["parent_run_id"], row["parent_tool_call_id"]) == (boss.run_id, "o1")
    assert (row["parent_tool_name"], row["name"], row["source"]) == ("ask_helper", "helper", "loop")
    assert [span[0] for span in row["spans"]] == ["model"]
    assert rows[boss.run_id]["total_cost_usd"] == str(boss.total_cost_usd)
    assert rows[boss.run_id]["spans"] == []
    # a page that opens later says hello and gets every row again
    before = len(parts)
    channel(dbg).from_browser({"type": "hello"})
    fake.advance(1.0)
    again = runs_parts(dbg)[before:]
    assert again[0]["reset"] is True
    assert {r["run_id"] for r in again[0]["rows"]} == {boss.run_id, helper.run_id}
    assert again[0]["pinned"] is None
    dbg.close()


def test_runs_the_session_no_longer_keeps_leave_the_page_too() -> None:
    fake = FakeTime()
    dbg = make(fake, max_runs=3)
    events = session_runs(6, long_rounds=2, nest_every=100)
    feed(dbg, fake, events)
    rows = page_rows(dbg)
    assert list(rows) == [s.run_id for s in dbg.runs] == ["run0003", "run0004", "long"]
    assert runs_parts(dbg)[-1]["left_out"] == dbg.runs_left_out == 3
    assert any(p["dropped"] for p in runs_parts(dbg))
    dbg.close()


def test_hostile_names_and_tags_are_clipped_in_rows() -> None:
    fake = FakeTime()
    dbg = make(fake)
    name, tags = "<img src=x onerror=alert(1)>" * 400, tuple(f"t{n}" for n in range(50))
    first = Stream(run_id="a").start("go", name=name, tags=tags)
    second = Stream(run_id="b").start("go")
    feed(dbg, fake, [*first.finish("x", 0).events, *second.finish("y", 0).events])
    row = page_rows(dbg)["a"]
    assert len(row["name"]) < NAME_CHARS + 30
    assert row["name"].endswith(f"({len(name):,} chars)")
    assert row["tags"] == [f"t{n}" for n in range(MAX_TAGS)]
    dbg.close()


# -- showing another run -------------------------------------------------------------
def test_show_run_pins_a_run_and_none_follows_the_newest_again() -> None:
    fake = FakeTime()
    dbg = make(fake)
    agent = echo_agent(times=3)
    agent.subscribe(dbg)
    first = agent.run("go", name="first")
    agent.run("again", name="second")
    fake.advance(1.0)
    epoch = channel(dbg).custom()[-1]["epoch"]
    dbg.show_run(first.events[0].run_id)
    assert dbg.events == first.events
    fake.advance(1.0)
    assert received(dbg) == [event_payload(e, dbg.max_text_chars) for e in first.events]
    assert channel(dbg).custom()[-1]["epoch"] > epoch
    assert runs_parts(dbg)[-1]["pinned"] == first.events[0].run_id
    third = agent.run("more", name="third")  # a new run does not take the pinned view
    assert dbg.events == first.events
    dbg.show_run(None)
    assert dbg.events == third.events
    fake.advance(1.0)
    assert runs_parts(dbg)[-1]["pinned"] is None
    with pytest.raises(UnknownRunError):
        dbg.show_run("no-such-run")
    assert dbg.events == third.events  # nothing changed
    dbg.close()


def test_a_nested_run_can_be_shown_and_is_never_shown_unasked() -> None:
    fake = FakeTime()
    dbg = make(fake)
    outer = boss_and_helper(dbg).run("What is 1+1?", name="boss")
    _boss, helper = dbg.runs
    assert dbg.events == outer.events
    dbg.show_run(helper.run_id)
    assert [e.run_id for e in dbg.events] == [helper.run_id] * len(dbg.events)
    assert dbg.view.status == "finished"
    # the notebook file keeps what is shown
    fake.advance(1.0)
    assert {e["run_id"] for e in dbg.saved_events} == {helper.run_id}
    dbg.close()


def test_the_page_asks_to_show_a_run_and_is_answered() -> None:
    fake = FakeTime()
    dbg = make(fake)
    agent = echo_agent(times=2)
    agent.subscribe(dbg)
    first = agent.run("go")
    agent.run("again")
    fake.advance(1.0)
    mock = channel(dbg)

    def answer(content: Any) -> dict[str, Any]:
        mock.from_browser(content)
        fake.advance(1.0)
        answer = mock.custom()[-1]["control"]["answer"]
        assert isinstance(answer, dict)
        return answer

    shown = answer({"type": "show_run", "request": 7, "run_id": first.events[0].run_id})
    assert (shown["request"], shown["action"], shown["ok"]) == (7, "show_run", True)
    assert dbg.events == first.events
    unknown = answer({"type": "show_run", "request": 8, "run_id": "<b>nope</b>"})
    assert (unknown["ok"], unknown["reason"]) == (False, "unknown_run")
    assert "<b>nope</b>" in unknown["message"]
    assert dbg.events == first.events
    for bad in ({"type": "show_run", "request": 9}, {"type": "show_run", "run_id": 3}):
        refused = answer(bad)
        assert (refused["ok"], refused["reason"]) == (False, "bad_request")
    back = answer({"type": "show_run", "request": 10, "run_id": None})
    assert back["ok"]
    assert dbg.events[0].run_id != first.events[0].run_id
    dbg.close()


# -- the notebook file ---------------------------------------------------------------
def test_a_thousand_runs_keep_the_saved_state_under_a_megabyte() -> None:
    fake = FakeTime()
    dbg = make(fake)
    events = session_runs(1_000, long_rounds=2_000)
    for n, event in enumerate(events):
        dbg(event)
        if n % 50 == 0:
            fake.advance(0.01)
    fake.advance(2.0)
    assert (len(dbg.runs), dbg.runs_left_out) == (1_000, 39)  # 999 + 39 nested + 1 long
    saved = json.dumps(
        {
            "events": dbg.saved_events,
            "runs": dbg.saved_runs,
            "left_out": dbg.saved_runs_left_out,
        }
    )
    assert len(saved) < 1_000_000
    kept = [row["run_id"] for row in dbg.saved_runs]
    assert kept[-1] == "long"  # the newest rows, in start order
    assert kept == [s.run_id for s in dbg.runs][-len(kept) :]
    assert dbg.saved_runs_left_out == 39 + 1_000 - len(kept)
    assert len(kept) > 100
    dbg.close()


def test_a_nested_run_of_another_run_never_takes_the_view() -> None:
    fake = FakeTime()
    dbg = make(fake)
    shown, other = Stream(run_id="shown").start("a"), Stream(run_id="other").start("b")
    nested = Stream(run_id="nested").start("c", parent_run_id="other", parent_tool_call_id="x")
    events = [*shown.events, *other.events, *shown.finish("done", 0).events, *nested.events]
    feed(dbg, fake, events)
    assert dbg.view.run_id == "shown"
    assert [s.run_id for s in dbg.runs] == ["shown", "other", "nested"]


def test_a_sub_agent_reaches_what_watches_its_parent_with_no_wiring(tmp_path: Path) -> None:
    helper = LLMAgent(ScriptedChatModel([final("two")], model_name=MODEL))  # no observers

    @tool
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        return (await helper.arun(question, name="helper")).final_response.text

    boss = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("ask_helper", {"question": "?"}, "o1")), final("It is two.")],
            model_name=MODEL,
        ),
        [ask_helper],
    )
    dbg = LoopDebugger()
    boss.subscribe(dbg)
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


# -- the bound never lets go of what is on screen or still going --------------------------
def nested_chain(depth: int) -> LLMAgent:
    """An agent whose tool awaits a sub-agent, whose tool awaits another, ``depth`` runs
    deep (named ``level 1`` .. ``level {depth}``): while the deepest runs, every run above
    it is still going."""
    agent = LLMAgent(ScriptedChatModel([final("bottom")], model_name=MODEL))
    for level in range(depth - 1, 0, -1):
        agent = _calling(agent, level)
    return agent


def _calling(inner: LLMAgent, level: int) -> LLMAgent:
    @tool
    async def ask_below(question: str) -> str:
        """Ask the agent one level down."""
        return (await inner.arun(question, name=f"level {level + 1}")).final_response.text

    replies = [calls(tool_call("ask_below", {"question": "?"}, f"o{level}")), final("done")]
    return LLMAgent(ScriptedChatModel(replies, model_name=MODEL), [ask_below])


def test_the_shown_run_is_kept_while_its_sub_agents_start_past_the_bound() -> None:
    """max_runs=3 and a run four levels deep: when the deepest starts, the three above it
    are still going. The top-level run on screen stays in ``runs`` (it used to be let go,
    its row gone and its later events not kept); its totals with its sub-agents stay
    exact though one of them is let go once they end."""
    dbg = LoopDebugger(max_runs=3)
    top = nested_chain(4)
    top.subscribe(dbg)
    seen: list[Event] = []
    top.subscribe(seen.append)
    outer = top.run("Go down.", name="level 1")
    whole = {s.name: s for s in summaries(seen)}["level 1"]  # every run, none let go
    assert dbg.view.run_id == outer.run_id
    assert dbg.events == outer.events
    kept = {r.name: r for r in dbg.runs}
    assert "level 1" in kept, [r.name for r in dbg.runs]
    boss = kept["level 1"]
    assert (boss.status, boss.outcome) == ("finished", "final_answer")
    assert len(dbg.runs) == 3  # back under the bound once the runs ended
    assert dbg.runs_left_out == 1
    # every level's spend, the one let go included
    totals = (boss.total_input_tokens, boss.total_output_tokens, boss.total_cost_usd)
    assert totals == (whole.total_input_tokens, whole.total_output_tokens, whole.total_cost_usd)
    assert whole.total_input_tokens > whole.input_tokens
    dbg.close()


def test_sub_agents_going_at_once_are_all_kept_past_the_bound() -> None:
    """When every run kept is going (a parent and its sub-agents, running at once) and
    another starts, none is let go: the bound is exceeded until they end."""
    fake = FakeTime()
    dbg = make(fake, max_runs=3)
    boss = Stream(run_id="boss").start("Ask three helpers.", name="boss")
    helpers = [
        Stream(run_id=f"helper{n}").start(
            "Help.", name=f"helper {n}", parent_run_id="boss", parent_tool_call_id=f"h{n}"
        )
        for n in range(3)
    ]
    feed(dbg, fake, [*boss.events, *(e for h in helpers for e in h.events)])
    assert [r.run_id for r in dbg.runs] == ["boss", "helper0", "helper1", "helper2"]
    assert dbg.runs_left_out == 0
    assert dbg.view.run_id == "boss"
    for helper in helpers:
        before = len(helper.events)
        helper.full_round(1, "ok", [], tokens=(7, 1))
        helper.finish("ok", 1)
        feed(dbg, fake, helper.events[before:])
    before = len(boss.events)
    boss.full_round(1, "all done", [], tokens=(5, 1)).finish("all done", 1)
    feed(dbg, fake, boss.events[before:])
    assert dbg.events == tuple(boss.events)
    kept = {r.run_id: r for r in dbg.runs}
    assert len(kept) == 3
    assert dbg.runs_left_out == 1
    assert kept["boss"].outcome == "final_answer"
    assert kept["boss"].total_input_tokens == 5 + 3 * 7  # the helper let go included
    assert page_rows(dbg).keys() == kept.keys()
    dbg.close()


def test_a_run_picked_to_show_is_never_let_go() -> None:
    """A finished run picked with ``show_run`` stays while newer runs push past the bound
    (the oldest finished run used to go, though it was the one on screen)."""
    dbg = LoopDebugger(max_runs=2)
    agent = echo_agent(times=4)
    agent.subscribe(dbg)
    first = agent.run("go", name="first")
    agent.run("go", name="second")
    dbg.show_run(first.run_id)
    agent.run("go", name="third")
    agent.run("go", name="fourth")
    assert [r.name for r in dbg.runs] == ["first", "fourth"]
    assert dbg.runs_left_out == 2
    assert dbg.events == first.events
    dbg.show_run(None)  # following the newest again: the first may go now
    agent_more = echo_agent()
    agent_more.subscribe(dbg)
    agent_more.run("go", name="fifth")
    assert [r.name for r in dbg.runs] == ["fourth", "fifth"]
    dbg.close()


def test_a_trace_opened_on_its_oldest_run_keeps_that_run(tmp_path: Path) -> None:
    """``from_trace(..., run_id=, max_runs=1)``: the run shown is the one kept."""
    path = tmp_path / "three.jsonl"
    agent = echo_agent(times=3)
    with TraceWriter(path) as writer:
        agent.subscribe(writer)
        first, *_ = [agent.run("go", name=f"run {n}") for n in range(3)]
    dbg = LoopDebugger.from_trace(path, run_id=first.run_id, max_runs=1)
    assert dbg.events == first.events
    assert [r.run_id for r in dbg.runs] == [first.run_id]
    assert dbg.runs_left_out == 2
    dbg.close()
