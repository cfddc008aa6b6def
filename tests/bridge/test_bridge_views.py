"""Bridged runs in every view the loop's own runs have, unchanged: the live
``LoopDebugger``, a JSONL ``TraceWriter`` read back strictly, ``LoopDebugger.from_trace``,
``RunView`` and the lab's pandas frames; and one failure read the same way under
``LLMAgent`` and under the bridge, in the text view, the snapshot, the report and the
browser's own fold (``debugger.js``, run under node when it is installed).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from bridgekit import TOOLS, add, prepare, run_agent
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call
from stubs.openai_stub import OpenAIStub

from toolloop_lab import LLMAgent, RunView, ScriptedChatModel, TraceWriter, read_trace, watch
from toolloop_lab._support import words as fig
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.snapshot import snapshot_html
from toolloop_lab._widget.text import summary_text
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.events import (
    Event,
    LoopFinished,
    LoopStarted,
    ToolDispatched,
    ToolStarted,
    event_from_dict,
    transcript,
)
from toolloop_lab.lab import LabResults, ScenarioRun
from toolloop_lab.lab._frames import rounds_frame, runs_frame, tools_frame
from toolloop_lab.lab._record import outcome_of_events


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


# -- one failure, read the same under LLMAgent and under the bridge --------------------------
@tool
def slow(what: str) -> str:
    """Looks something up (takes a moment)."""
    time.sleep(0.05)
    return f"found {what}"


def _unknown_tool_script() -> ScriptedChatModel:
    """Round 1 calls a tool that works and one nobody has; round 2 answers."""
    first = calls(tool_call("slow", {"what": "x"}, "u_slow"), tool_call("nope", {}, "u_nope"))
    return ScriptedChatModel([first, final("done")], model_name=MODEL)


def _both_runs() -> dict[str, list[Event]]:
    """The same conversation run by ``LLMAgent`` and by a watched ``create_agent``."""
    ours: list[Event] = []
    LLMAgent(_unknown_tool_script(), [slow], observers=[ours.append]).run("go")
    bridged: list[Event] = []
    with watch(bridged.append):
        create_agent(_unknown_tool_script(), [slow]).invoke({"messages": [HumanMessage("go")]})
    return {"LLMAgent": ours, "bridge": bridged}


def _shape(event: ToolDispatched) -> tuple[str, str | None, bool]:
    return (event.status, event.error_reason, event.ran)


def test_an_unknown_tool_reads_as_the_same_error_under_the_bridge_and_llmagent() -> None:
    runs = _both_runs()
    shapes = {}
    for source, events in runs.items():
        by_id = {e.tool_call_id: e for e in events if isinstance(e, ToolDispatched)}
        shapes[source] = (_shape(by_id["u_nope"]), _shape(by_id["u_slow"]))
        assert "u_nope" not in {e.tool_call_id for e in events if isinstance(e, ToolStarted)}
        assert by_id["u_slow"].duration_s >= 0.05
    assert shapes["bridge"] == shapes["LLMAgent"]
    assert shapes["bridge"] == (("error", "not_available", True), ("success", None, True))


def test_every_view_shows_an_unknown_tool_as_an_error_with_its_reason_in_words() -> None:
    for source, events in _both_runs().items():
        view = RunView.from_events(events)
        text = summary_text(view)
        assert "nope: error (unknown tool)" in text, (source, text)
        assert "slow: success" in text, source
        html = snapshot_html(view)
        assert "nope: error (unknown tool)" in html, source
        record = _record(source, events)
        report = LabResults((record,)).report_html()
        assert "(unknown tool)" in report, source
        assert "(not_available)" not in report, source
        for shown in (text, html):
            assert "not run" not in shown, source
            assert "not_available" not in shown, source
        tools = tools_frame([record]).set_index("tool_call_id")
        assert (tools.loc["u_nope", "status"], bool(tools.loc["u_nope", "ran"])) == ("error", True)


@tool
def flaky(what: str) -> str:
    """Looks something up (and raises)."""
    raise ValueError(f"no record of {what}")


def test_a_tool_that_raises_says_so_by_its_exception_under_both() -> None:
    # LLMAgent answers the call with an error message; create_agent lets the error end its
    # run: either way the call says what it raised, in every text view
    ours: list[Event] = []
    script = calls(tool_call("flaky", {"what": "x"}, "r_flaky"))
    LLMAgent(
        ScriptedChatModel([script, final("done")], model_name=MODEL),
        [flaky],
        observers=[ours.append],
    ).run("go")
    bridged: list[Event] = []
    agent = create_agent(ScriptedChatModel([script, final("done")], model_name=MODEL), [flaky])
    with watch(bridged.append), pytest.raises(ValueError, match="no record of x"):
        agent.invoke({"messages": [HumanMessage("go")]})
    for source, events in {"LLMAgent": ours, "bridge": bridged}.items():
        (event,) = [e for e in events if isinstance(e, ToolDispatched)]
        assert (event.status, event.error_reason, event.error_type) == (
            "error",
            "tool_error",
            "ValueError",
        ), source
        view = RunView.from_events(events)
        assert "flaky: error (raised ValueError)" in summary_text(view), source
        assert "flaky: error (raised ValueError)" in snapshot_html(view), source


_DEBUGGER_JS = Path(__file__).parents[2] / "toolloop_lab" / "_widget" / "static" / "debugger.js"
_FOLD_IN_NODE = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const [moduleFile, inputFile] = process.argv.slice(2);
const { events, codes } = JSON.parse(readFileSync(inputFile, "utf8"));
const m = await import(pathToFileURL(moduleFile).href);
const { roundState, matches, reasonWords } = m;
const words = (code) => reasonWords(code);
const s = m.createStore();
for (const e of events) m.fold(s.run, e);
s.ui.filter = "errors";
const rounds = s.run.rounds.map((r) => ({
  state: roundState(s, r),
  errorsOnly: matches(s, r),
  tools: r.tools.map((t) => [t.name, t.status, t.reason ? words(t.reason) : null]),
}));
const said = Object.fromEntries(codes.map((c) => [c, words(c)]));
console.log(JSON.stringify({ status: s.run.status, rounds, said }));
"""


def _browser_fold(events: list[Event], tmp_path: Path) -> Any:
    """What the debugger's own module makes of ``events`` as the browser gets them (run
    under node: the fold and what a round reads as need no page)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    module = tmp_path / "debugger.mjs"
    module.write_text(_DEBUGGER_JS.read_text(encoding="utf-8"), encoding="utf-8")
    script = tmp_path / "fold.mjs"
    script.write_text(_FOLD_IN_NODE, encoding="utf-8")
    sent = tmp_path / "input.json"
    payloads = [event_payload(e, 4000) for e in events]
    codes = [*fig.NOT_RUN, *fig.FAILED, "constructor", "a_newer_code"]
    sent.write_text(json.dumps({"events": payloads, "codes": codes}), encoding="utf-8")
    done = subprocess.run(
        [node, str(script), str(module), str(sent)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_browser_finds_an_unknown_tool_with_errors_only_under_both(tmp_path: Path) -> None:
    for source, events in _both_runs().items():
        folded = _browser_fold(events, tmp_path)
        first, second = folded["rounds"]
        assert folded["status"] == "finished", source
        assert (first["state"], first["errorsOnly"]) == ("error", True), source
        assert (second["state"], second["errorsOnly"]) == ("answer", False), source
        tools = {name: (status, words) for name, status, words in first["tools"]}
        assert tools == {"slow": ("success", None), "nope": ("error", "unknown tool")}, source


def test_the_browser_and_python_give_every_reason_the_same_words(tmp_path: Path) -> None:
    said = _browser_fold([], tmp_path)["said"]
    assert said == {
        **fig.NOT_RUN,
        **fig.FAILED,
        "constructor": "constructor",  # a code that is a name on every JS object
        "a_newer_code": "a_newer_code",  # shown as it is (clipped, as text)
    }
    assert fig.reason_words("a_newer_code") == "a_newer_code"
