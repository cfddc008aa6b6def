"""Budget stops, long conversations, failed calls and step mode, as a person sees them in
chromium: on a standalone page (no kernel) and in a real JupyterLab, light and dark.

- A run the USD limit stopped: its status is its own word (not "Failed"), it says how many
  calls were paid for and which round's tools did not run, its gauge says why it reads
  over 100 %, and the round where the gate tripped is marked in the warning style.
- 3,998 earlier messages: "Show 40 more" and "Show all" reach the first in two clicks, and
  the page never holds more than the widget's DOM budget; a failed call shows its
  traceback as text.
- Step mode: "Run with these arguments" is disabled while the live schema check refuses
  the arguments (the reason beside it), an edit shows old and new side by side, and after
  Continue the "Pause before" selector says this run will not pause again.

Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from pathlib import Path
from typing import Any

import pytest
from jskit import usd_stop_mid_run
from langchain_core.messages import AIMessage, HumanMessage

from browser.jupyterkit import (
    Jupyter,
    contrast_report,
    layout_problems,
    open_file,
    run_all_cells,
    shot,
    switch_theme,
    widget,
    write_notebook,
)
from browser.streams import XSS, Stream, ToolSpec
from toolloop_lab._widget.page import static_page
from toolloop_lab.events import Event, ModelCallFailed

pytestmark = pytest.mark.browser

DOM_BUDGET = 3_000
"""The widget's nodes at most: the 10,000-round test's bound, for any view of a run."""
MID_RUN = "Stopped by the USD limit after 4 paid calls; round 4's 2 tool calls did not run"
OVER = "the budget is checked after each call, so the last call can overshoot it"

USD_STOP = '''\
from langchain_core.tools import tool
from loopkit import calls, reference_cost, tool_call
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel, usd_budget


@tool
def lookup(text: str) -> str:
    """Look a text up."""
    return f"found {text}"


SPEND = (400, 50)
script = [
    calls(tool_call("lookup", {"text": f"{i}"}, f"u{i}a"),
          tool_call("lookup", {"text": f"{i}b"}, f"u{i}b"), tokens=SPEND)
    for i in range(1, 7)
]
stop_events = []
with usd_budget(reference_cost([SPEND] * 3) + reference_cost([SPEND]) / 4):
    try:
        LLMAgent(ScriptedChatModel(script, model_name="gpt-4o-mini"), [lookup],
                 AgentConfig(tool_max_rounds=8), observers=[stop_events.append]).run("go")
    except Exception as exc:
        print(type(exc).__name__)
'''

STEPS = '''\
import time
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    time.sleep(1.5)  # slow enough to see the run go on after Continue
    return f"{database}: OK" if database == "billing" else f"{database}: FAILED"


def analyst(messages, bound_tools):
    """Reads each log once, in order; then answers with what the logs said."""
    results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 100 * len(messages), "output_tokens": 20}
    usage["total_tokens"] = usage["input_tokens"] + 20
    for db in ("users", "orders", "billing"):
        if not any(r.startswith(db) for r in results):
            call = {"name": "read_log", "args": {"database": db}, "id": f"call_{len(results) + 1}"}
            return AIMessage(f"Reading the {db} log.", tool_calls=[call], usage_metadata=usage)
    return AIMessage("Backups: " + "; ".join(results), usage_metadata=usage)


agent = LLMAgent(ScriptedChatModel([analyst] * 20, model_name="gpt-4o-mini"), [read_log],
                 AgentConfig(tool_max_rounds=6))
'''


def _raised() -> str:
    """A real traceback, as the loop's event carries one."""
    try:
        raise RuntimeError(f"upstream model returned HTTP 500 {XSS}")
    except RuntimeError as exc:
        return "".join(traceback.format_exception(exc))


def long_conversation() -> list[Event]:
    """Round 2's call is sent 3,998 earlier messages (and 2 new); round 3's call raises."""
    s = Stream().start("Summarise the thread.", system=None)
    for i in range(3_997):
        s.pending.append((AIMessage if i % 2 else HumanMessage)(f"message {i + 2}"))
    s.full_round(1, "Reading.", [ToolSpec("c1", "echo", {"text": "a"})], tokens=(400, 30))
    s.full_round(2, "Still reading.", [ToolSpec("c2", "echo", {"text": "b"})], tokens=(400, 30))
    s.round_start(3)
    s.call_start(3)
    s.call_failed(3, "RuntimeError", f"upstream model returned HTTP 500 {XSS}", latency=0.4)
    failed = s.events[-1]
    assert isinstance(failed, ModelCallFailed)
    s.events[-1] = dataclasses.replace(failed, traceback=_raised())
    return [*s.fail(2, message="RuntimeError: upstream model returned HTTP 500").events]


def nodes(view: Any) -> int:
    return int(view.evaluate("el => el.querySelectorAll('*').length"))


def test_a_long_conversation_and_a_failed_call_on_a_page(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "long.html"
    path.write_text(static_page(long_conversation()), encoding="utf-8")
    page = open_file(browser, path, width=1200)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="Failed").wait_for()
        view.locator(".tl-row[data-n='2']").click()
        sent = view.locator(".tl-block", has_text="Sent to the model (4,000 messages, 2 new)")
        sent.wait_for()
        assert sent.locator(".tl-pager-bar").first.inner_text().startswith("3,998 earlier messages")
        sent.get_by_role("button", name="Show 40 more").click()
        assert sent.locator(".tl-msg").count() == 42
        sent.get_by_role("button", name="Show all").click()
        at = sent.locator(".tl-pager-at")
        at.wait_for()
        assert at.inner_text() == "messages 1\u2013120 of 3,998"
        first = sent.locator(".tl-msg").first.inner_text()
        assert "Summarise the thread." in first
        assert nodes(view) < DOM_BUDGET, nodes(view)
        at.scroll_into_view_if_needed()
        shot(view, "long_conversation_show_all")
        # the failed call: where it raised, as text
        view.locator(".tl-row[data-n='3']").click()
        reply = view.locator(".tl-block", has_text="Reply (never came back)")
        reply.get_by_text("Traceback: RuntimeError").wait_for()
        trace = reply.locator("pre.tl-traceback")
        assert trace.inner_text().startswith("Traceback (most recent call last):")
        assert f"RuntimeError: upstream model returned HTTP 500 {XSS}" in trace.inner_text()
        assert view.locator("img").count() == 0
        assert page.dialogs == []
        assert page.errors == []
        reply.scroll_into_view_if_needed()
        shot(reply, "failed_call_traceback")
    finally:
        page.close()


def _check_usd_stop(view: Any) -> None:
    """What a run the USD limit stopped shows, wherever it is drawn."""
    badge = view.locator(".tl-badge")
    assert badge.inner_text() == "USD limit reached"
    assert "tl-b-warn" in (badge.get_attribute("class") or "")
    assert view.locator(".tl-activity").inner_text() == MID_RUN
    box = view.locator(".tl-failure")
    assert box.locator(".tl-strong").inner_text() == MID_RUN
    assert "tl-budget-box" in (box.get_attribute("class") or "")
    over = view.locator(".tl-gauge-over")
    assert re.fullmatch(rf"over the limit by \d+\.\d%: {OVER}", over.inner_text())
    assert over.is_visible()
    chip = view.locator(".tl-row[data-n='4'] .tl-chip-gate")
    assert chip.inner_text() == "USD limit reached"
    assert view.locator(".tl-row .tl-chip-error").count() == 0
    assert "Failed" not in view.inner_text()


@pytest.mark.parametrize("width", [1200, 600])
def test_a_usd_stop_on_a_page(browser: Any, tmp_path: Path, width: int) -> None:
    path = tmp_path / "usd.html"
    path.write_text(static_page(usd_stop_mid_run()), encoding="utf-8")
    page = open_file(browser, path, width=width)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="USD limit reached").wait_for()
        _check_usd_stop(view)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.errors == []
        shot(view, f"usd_stop_{width}px")
    finally:
        page.close()


def test_step_mode_and_a_usd_stop_in_jupyterlab(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "budget_steps.ipynb",
        [
            USD_STOP,
            "LoopDebugger.from_trace(stop_events)",
            STEPS,
            'dbg = LoopDebugger(pause_on="both")\ndbg',
            'task = dbg.start(agent, "Did the backups succeed?")',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        stopped, live = widget(page, 0), widget(page, 1)
        stopped.locator(".tl-badge", has_text="USD limit reached").wait_for()
        _check_usd_stop(stopped)
        stopped.scroll_into_view_if_needed()
        shot(stopped, "lab_usd_stop")

        banner = live.locator(".tl-banner")
        banner.filter(has_text="Paused before calling the model in round 1.").wait_for()
        live.get_by_role("button", name="Step").click()
        banner.filter(has_text="Paused before running read_log in round 1.").wait_for()
        live.locator(".tl-block", has_text="About to run").get_by_role(
            "button", name="Edit arguments…"
        ).click()
        editor = live.locator(".tl-editor")
        area = editor.locator("textarea")
        apply = editor.get_by_role("button", name="Run with these arguments")
        area.fill('{"db": "orders"}')
        editor.locator(".tl-edit-error", has_text="unknown argument(s) db").wait_for()
        assert apply.is_disabled()
        assert "unknown argument(s) db" in (apply.get_attribute("title") or "")
        live.scroll_into_view_if_needed()
        shot(editor, "lab_run_disabled_with_reason")
        area.fill('{"database": "orders"}')
        editor.locator(".tl-edit-ok", has_text="fit the tool's schema").wait_for()
        assert apply.is_enabled()
        apply.click()
        live.locator(".tl-editor").wait_for(state="detached")

        # Continue: the run goes on (its tools take a while) and will not pause again
        live.get_by_role("button", name="Continue").click()
        note = live.locator(".tl-pause-note")
        note.wait_for()
        assert note.inner_text() == "off for this run (Continue); the next run pauses before both"
        assert live.locator(".tl-controls select").input_value() == "both"
        shot(live.locator(".tl-controls"), "lab_continue_note")
        live.locator(".tl-badge", has_text="Finished").wait_for(timeout=60_000)
        assert note.is_hidden()
        assert live.locator(".tl-controls select").input_value() == "both"

        # the edit: old and new side by side, in the round and in the tool's block
        live.locator(".tl-row[data-n='1']").click()
        title = page.locator(".tl-block-title", has_text=re.compile(r"^Changed by you$"))
        changed = live.locator(".tl-block").filter(has=title)
        changed.locator(".tl-diff").wait_for()
        cells = changed.locator(".tl-diff > *").all_inner_texts()
        assert cells[4:8] == ["database", '"users"', '"orders"', "changed"]
        tool = live.locator(".tl-block", has_text="Tool read_log")
        tool.get_by_text("Arguments (changed by you)").wait_for()
        changed.scroll_into_view_if_needed()
        shot(live.locator(".tl-detail"), "lab_edit_side_by_side")

        switch_theme(page, "JupyterLab Dark")
        contrast = contrast_report(page)
        print(f"\n[dark] text nodes checked: {contrast['count']}, low: {contrast['worst']}")
        assert contrast["worst"] == []
        shot(live.locator(".tl-detail"), "lab_dark_edit_side_by_side")
        stopped.scroll_into_view_if_needed()
        shot(stopped, "lab_dark_usd_stop")
        page.set_viewport_size({"width": 600, "height": 1600})
        page.wait_for_timeout(400)
        assert layout_problems(page) == []
        stopped.scroll_into_view_if_needed()
        shot(stopped, "lab_dark_usd_stop_600px")
        changed.scroll_into_view_if_needed()
        shot(changed, "lab_dark_edit_side_by_side_600px")
        tool.scroll_into_view_if_needed()
        shot(tool, "lab_dark_tool_args_changed_600px")
        switch_theme(page, "JupyterLab Light")
        assert page.dialogs == []
    finally:
        page.close()
