"""Sharing runs: one HTML file (``LoopDebugger.export_html``), a run as Markdown
(``to_markdown``), and what the run list needs of thousands of runs (each run's tool
errors and question on its row; a bound on the bytes a debugger keeps, and what it let go).

What the file does in a browser (offline, no request, hostile text inert, every run
reachable) is ``tests/browser/test_share_browser.py``'s; here, what it holds."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any

import comm
import pytest
from langchain_core.tools import tool
from loopkit import ALL, MODEL, MockComm, calls, channel, final, tool_call

from toolloop_lab import LLMAgent, RunSummary, RunView, ScriptedChatModel, echo_tool, to_markdown
from toolloop_lab._runview import QUESTION_CHARS
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.page import LOADER_CSP
from toolloop_lab._widget.runs import event_bytes
from toolloop_lab.errors import ConfigurationError, UnknownRunError


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    if topic == "bad":
        raise ValueError("no such topic")
    return f"{topic}: fine"


def run_once(dbg: LoopDebugger | None, topic: str, prompt: str, name: str) -> Any:
    replies = [calls(tool_call("lookup", {"topic": topic}, "c1")), final(f"About {topic}.")]
    observers = [dbg] if dbg is not None else []
    agent = LLMAgent(ScriptedChatModel(replies, model_name=MODEL), [lookup], observers=observers)
    return agent.run(prompt, name=name)


def blocks(html: str) -> dict[str, Any]:
    """The JSON data blocks of an exported page: rows, options and each run's events."""
    found: dict[str, Any] = {}
    for attrs, body in re.findall(r'<script type="application/json" ([^>]*)>(.*?)</script>', html):
        found[attrs] = json.loads(body)
    return found


# -- the row's fields -----------------------------------------------------------------------


def test_a_summary_counts_the_tool_calls_that_failed_and_keeps_the_question() -> None:
    failed = run_once(None, "bad", "What about bad?", "one")
    fine = run_once(None, "good", "x" * 500, "two")
    (first,) = RunSummary.of_stream(failed.events)
    (second,) = RunSummary.of_stream(fine.events)
    assert (first.tool_errors, second.tool_errors) == (1, 0)
    assert first.question == "What about bad?"
    assert second.question == "x" * QUESTION_CHARS + "… (500 chars)"


def test_a_run_asked_nothing_has_no_question() -> None:
    view = RunView()
    assert view.question is None
    assert view.tool_errors == 0


# -- the byte bound ---------------------------------------------------------------------------


def test_a_debugger_lets_the_oldest_runs_go_past_its_bytes_and_says_so() -> None:
    probe = run_once(None, "good", "p" * 5_000, "probe")
    weight = sum(event_bytes(e) for e in probe.events)
    dbg = LoopDebugger(max_run_bytes=int(weight * 2.5))
    for i in range(5):
        run_once(dbg, "good", "p" * 5_000, f"run {i}")
    names = [r.name for r in dbg.runs]
    assert names == ["run 3", "run 4"]  # two runs weigh under 2.5 runs; a third would not
    assert dbg.runs_left_out == 3
    dbg.flush()
    parts = [m["runs"] for m in channel(dbg).custom() if "runs" in m]
    said = parts[-1]["let_go"]
    assert said.startswith("3 earlier runs (")
    assert "keeps at most 1,000 runs" in said


def test_the_run_shown_is_kept_whatever_it_weighs() -> None:
    dbg = LoopDebugger(max_run_bytes=1)
    run_once(dbg, "good", "p" * 5_000, "heavy")
    assert [r.name for r in dbg.runs] == ["heavy"]
    run_once(dbg, "good", "p" * 5_000, "heavier")
    assert [r.name for r in dbg.runs] == ["heavier"]  # the one before is let go
    assert dbg.runs_left_out == 1


def test_a_byte_bound_that_is_no_whole_number_is_refused() -> None:
    for bad in (0, -5, 1.5, True, "1MB"):
        with pytest.raises(ConfigurationError, match="max_run_bytes") as err:
            LoopDebugger(max_run_bytes=bad)  # type: ignore[arg-type]
        assert err.value.field == "max_run_bytes"


# -- one file to share ------------------------------------------------------------------------


def test_export_html_holds_the_runs_rows_and_events_as_inert_data(tmp_path: Path) -> None:
    dbg = LoopDebugger(max_text_chars=300)
    run_once(dbg, "bad", "Why? " + ALL, "hostile")
    run_once(dbg, "good", "Fine?", "plain")
    path = dbg.export_html(tmp_path / "runs.html")
    html = path.read_text(encoding="utf-8")
    assert html.count("<script") == 6  # the module, the loader, rows, options, two runs
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    policy = unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', html)[1])
    assert f"script-src {LOADER_CSP};" in policy
    assert "default-src 'none'" in policy
    assert "connect-src 'none'" in policy
    data = blocks(html)
    rows = data['data-role="runs"']
    assert [r["name"] for r in rows] == ["hostile", "plain"]
    assert [r["tool_errors"] for r in rows] == [1, 0]
    options = data['data-role="options"']
    assert options["runs"] == {rows[0]["run_id"]: 0, rows[1]["run_id"]: 1}
    assert options["shown"] == rows[1]["run_id"]
    first = data['data-run="0"']
    assert first[0]["kind"] == "loop_start"
    sent = json.dumps(first, ensure_ascii=False)
    assert "… (" in sent  # the hostile prompt cut at max_text_chars, as the page gets it
    assert "<b>" not in html.split('id="toolloop-module"')[0]


def test_export_html_of_chosen_runs_and_of_a_run_it_does_not_keep(tmp_path: Path) -> None:
    dbg = LoopDebugger()
    one = run_once(dbg, "good", "One?", "one")
    run_once(dbg, "good", "Two?", "two")
    path = dbg.export_html(tmp_path / "one.html", runs=[one.run_id])
    rows = blocks(path.read_text(encoding="utf-8"))['data-role="runs"']
    assert [r["name"] for r in rows] == ["one"]
    with pytest.raises(UnknownRunError, match="nope"):
        dbg.export_html(tmp_path / "x.html", runs=["nope"])
    with pytest.raises(ConfigurationError, match="list of run ids") as err:
        dbg.export_html(tmp_path / "x.html", runs=one.run_id)
    assert err.value.field == "runs"
    assert not (tmp_path / "x.html").exists()


# -- a run as Markdown ------------------------------------------------------------------------


def test_to_markdown_says_the_figures_and_fences_every_text() -> None:
    result = run_once(None, "bad", "Why ```break out``` <img src=x onerror=alert(1)>?", "md")
    text = to_markdown(result.events)
    assert text.startswith("## Run `md`: Finished\n")
    assert "- tool calls that failed: 1" in text
    assert "- outcome: Answered" in text
    assert re.search(r"- tokens: [\d,]+ input \([\d,]+ from cache\), [\d,]+ output · cost \$", text)
    # the prompt holds three backticks: its fence is four, so nothing in it renders
    assert "````text\nWhy ```break out``` <img src=x onerror=alert(1)>?\n````" in text
    assert "no such topic" in text  # the tool's error, as the model was told it
    outside = re.sub(r"(`{3,})text\n.*?\n\1", "", text, flags=re.S)
    assert "<img" not in outside
    assert "```break" not in outside


def test_to_markdown_cuts_long_texts_and_refuses_a_bad_limit() -> None:
    result = run_once(None, "good", "q" * 5_000, "long")
    view = RunView.from_events(result.events)
    assert "q" * 100 + "… (5,000 chars)" in to_markdown(view, max_chars=100)
    with pytest.raises(ConfigurationError) as err:
        to_markdown(view, max_chars=0)
    assert err.value.field == "max_chars"


def test_echo_runs_have_no_tool_errors() -> None:
    replies = [calls(tool_call("echo", {"text": "x"}, "c1")), final("done")]
    agent = LLMAgent(ScriptedChatModel(replies, model_name=MODEL), [echo_tool()])
    (summary,) = RunSummary.of_stream(agent.run("hi").events)
    assert summary.tool_errors == 0
