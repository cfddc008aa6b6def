"""Changing a run at its pauses, and forking it, by clicking in a real JupyterLab.

A real :class:`LLMAgent` (a scripted model that reads the conversation, so what a person
changes changes what it does next) runs in step mode in a notebook. The test clicks
through what a person would: a bad argument edit is refused with the schema's words as
typed (the Run button disabled, saying why), a good one runs; a result the model has not
seen is replaced and a message added; a call is answered by hand; then "Fork from here"
opens the fork's own
debugger below, which pauses, refuses a bad edit in the dark theme, and ends with the two
runs side by side from the fork's round on (the call answered by hand is marked changed).
Hostile text rides along in the prompt and a tool result: no dialog may ever open.
Screenshots (light and dark, 600 px wide) go to ``test-artifacts/``.
"""

from __future__ import annotations

from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    contrast_report,
    layout_problems,
    ours,
    run_all_cells,
    shot,
    switch_theme,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser


AGENT = '''\
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import ALL
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel

PROMPT = "Did last night's backups of orders, users and billing succeed? " + ALL


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    return f"{database}: OK (96 GB) {ALL}" if database == "billing" else f"{database}: FAILED"


def analyst(messages, bound_tools):
    """Reads each log once, in order; then answers with what the logs said."""
    results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 100 * len(messages), "output_tokens": 20}
    usage["total_tokens"] = usage["input_tokens"] + 20
    if not bound_tools:
        return AIMessage("Answer with what I have.", usage_metadata=usage)
    for db in ("users", "orders", "billing"):
        if not any(r.startswith(db) for r in results):
            call = {"name": "read_log", "args": {"database": db}, "id": f"call_{len(results) + 1}"}
            return AIMessage(f"Reading the {db} log.", tool_calls=[call], usage_metadata=usage)
    return AIMessage("Backups: " + "; ".join(r[:24] for r in results), usage_metadata=usage)


model = ScriptedChatModel([analyst] * 40, model_name="gpt-4o-mini")
agent = LLMAgent(model, [read_log], AgentConfig(tool_max_rounds=6))
'''


def banner(view: Any, text: str) -> None:
    view.locator(".tl-banner", has_text=text).wait_for()


def left_sidebar(page: Any, show: bool) -> None:
    """Open or close JupyterLab's left sidebar (clicking its current tab toggles it)."""
    shown = page.evaluate(
        "() => { const s = document.querySelector('#jp-left-stack');"
        " return !!s && !s.classList.contains('lm-mod-hidden')"
        " && s.getBoundingClientRect().width > 0; }"
    )
    if shown != show:
        tabs = page.locator(".jp-SideBar.jp-mod-left li[role='tab']")
        current = tabs.and_(page.locator(".lm-mod-current"))
        (current if not show and current.count() else tabs.first).click()
        page.wait_for_timeout(400)


def narrow(page: Any, view: Any, name: str) -> None:
    """A screenshot at 600 px wide, after checking that nothing overflows or is cut, with
    the file browser open (the notebook is then about 250 px wide) and closed."""
    page.set_viewport_size({"width": 600, "height": 1600})
    left_sidebar(page, True)
    assert layout_problems(page) == []
    left_sidebar(page, False)
    assert layout_problems(page) == []
    view.scroll_into_view_if_needed()
    shot(view, name)


def wide(page: Any) -> None:
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.wait_for_timeout(300)


def test_edit_skip_add_and_fork_by_clicking(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "interventions.ipynb",
        [AGENT, 'dbg = LoopDebugger(pause_on="both")\ndbg', "task = dbg.start(agent, PROMPT)"],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page)
        banner(live, "Paused before calling the model in round 1.")
        live.get_by_role("button", name="Step").click()
        banner(live, "Paused before running read_log in round 1.")

        # a bad edit: the schema check, as typed, then a refusal; the pause holds
        run = live.locator(".tl-block", has_text="About to run")
        run.get_by_role("button", name="Edit arguments…").click()
        editor = live.locator(".tl-editor")
        area = editor.locator("textarea")
        assert '"database": "users"' in area.input_value()
        area.fill('{"db": "orders"}')
        editor.locator(".tl-edit-error", has_text="unknown argument(s) db").wait_for()
        area.fill('{"database": 7}')
        editor.locator(".tl-edit-error", has_text="valid string").wait_for()
        # arguments the live check refused cannot be sent: the button says why
        apply = editor.get_by_role("button", name="Run with these arguments")
        assert apply.is_disabled()
        assert (apply.get_attribute("title") or "").startswith("Fix the arguments first: ")
        banner(live, "Paused before running read_log in round 1.")
        live.scroll_into_view_if_needed()
        shot(live, "lab_edit_refused")
        narrow(page, live, "lab_edit_refused_600px")
        wide(page)

        # a good edit: checked, applied, the call runs with it
        area.fill('{"database": "orders"}')
        editor.locator(".tl-edit-ok", has_text="fit the tool's schema").wait_for()
        editor.get_by_role("button", name="Run with these arguments").click()
        live.locator(".tl-editor").wait_for(state="detached")
        run.get_by_text('"orders"').first.wait_for()
        live.locator(".tl-block", has_text="Changed by you").get_by_text(
            "You edited the arguments"
        ).wait_for()

        # before round 2's call: replace the result the model has not seen, add a message
        live.get_by_role("button", name="Step").click()
        banner(live, "Paused before calling the model in round 2.")
        send = live.locator(".tl-block", has_text="About to send")
        send.get_by_role("button", name="Edit result…").click()
        editor = live.locator(".tl-editor")
        assert editor.locator("textarea").input_value() == "orders: FAILED"
        editor.locator("textarea").fill("orders: OK (412 GB, checked by hand)")
        editor.get_by_role("button", name="Replace the result").click()
        live.locator(".tl-editor").wait_for(state="detached")
        send.get_by_text("orders: OK (412 GB, checked by hand)").wait_for()
        send.get_by_role("button", name="Add message…").click()
        editor = live.locator(".tl-editor")
        editor.get_by_role("button", name="Add the message").click()
        editor.get_by_text("Write the message first.").wait_for()
        editor.locator("textarea").fill("Answer in one line.")
        editor.get_by_role("button", name="Add the message").click()
        live.locator(".tl-editor").wait_for(state="detached")
        send.get_by_text("Answer in one line.").wait_for()
        shot(live, "lab_result_and_message")

        # round 2 reads users: answer it by hand instead of running the tool
        live.get_by_role("button", name="Step").click()
        banner(live, "Paused before running read_log in round 2.")
        run = live.locator(".tl-block", has_text="About to run")
        run.get_by_role("button", name="Skip with result…").click()
        editor = live.locator(".tl-editor")
        editor.locator("textarea").fill("users: OK (from the dashboard)")
        editor.get_by_role("button", name="Skip the tool").click()
        live.locator(".tl-editor").wait_for(state="detached")
        live.get_by_role("button", name="Continue").click()
        live.locator(".tl-badge", has_text="Finished").wait_for()
        assert live.locator(".tl-row .tl-chip-hand").count() == 2  # rounds 1 and 2
        live.locator(".tl-row[data-n='2']").click()
        detail = live.locator(".tl-detail")
        detail.get_by_text("answered by you: the tool never ran").wait_for()
        detail.locator(".tl-block", has_text="Changed by you").wait_for()
        shot(live, "lab_changed_by_hand")

        # Fork from here: a new debugger below, its rounds numbered as the original's
        detail.get_by_role("button", name="Fork from here").click()
        live.locator(".tl-fork-msg", has_text="the fork runs in a new debugger below").wait_for()
        fork = widget(page, 1)
        fork.locator(".tl-forkbox", has_text="Fork of a run at round 2.").wait_for()
        banner(fork, "Paused before calling the model in round 2.")
        assert "round 2 of 6" in fork.locator(".tl-head").inner_text()
        fork.get_by_role("button", name="Step").click()
        banner(fork, "Paused before running read_log in round 2.")

        # in the dark theme, at 600 px: a refused edit in the fork
        switch_theme(page, "JupyterLab Dark")
        fork.locator(".tl-block", has_text="About to run").get_by_role(
            "button", name="Edit arguments…"
        ).click()
        editor = fork.locator(".tl-editor")
        editor.locator("textarea").fill('{"database": ["users"]}')
        editor.locator(".tl-edit-error", has_text="database").wait_for()
        assert editor.get_by_role("button", name="Run with these arguments").is_disabled()
        contrast = contrast_report(page)
        print(f"\n[dark, editors] text nodes: {contrast['count']}, low: {contrast['worst']}")
        assert contrast["worst"] == []
        narrow(page, fork, "lab_dark_fork_edit_refused_600px")
        wide(page)
        editor.get_by_role("button", name="Cancel").click()
        fork.get_by_role("button", name="Continue").click()
        fork.locator(".tl-badge", has_text="Finished").wait_for()
        # the original from round 2 on next to the fork: the users log, answered by hand in
        # the original, was read for real in the fork
        compared = fork.locator(
            ".tl-cmpview", has_text="The fork next to the original, from round 2 on"
        )
        compared.wait_for()
        row = compared.locator(".tl-cmp-round[data-round='2']")
        row.locator(".tl-mark-changed", has_text="read_log changed").wait_for()
        assert "skipped by you" in row.inner_text()
        assert compared.locator(".tl-cmp-round[data-round='1']").count() == 0  # taken as it was
        contrast = contrast_report(page)
        assert contrast["worst"] == []
        narrow(page, fork, "lab_dark_fork_compared_600px")
        switch_theme(page, "JupyterLab Light")
        narrow(page, fork, "lab_light_fork_compared_600px")
        narrow(page, live, "lab_light_changed_by_hand_600px")
        wide(page)

        wait_idle(page)
        assert page.dialogs == []  # the hostile prompt and result never ran
        assert page.locator(".tl-root img").count() == 0
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "interventions_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
