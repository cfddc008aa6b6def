"""Two runs side by side in a real JupyterLab and Notebook 7, and a fork's comparison.

An agent runs twice on the same prompt: in round 2 one run calls ``read_log``, the other
``open_ticket``, spending the same tokens. ``dbg.compare(...)`` shows them: the call must
read as changed (never "±0"), the reworded reply as deleted and inserted words, and the
rounds that did the same as one line. "Swap sides" asks the kernel again through the
page's own request (the run list's path), and Close closes it. Then "Fork from here" on
a run of the reading agent, forked with the ticket-opening one: when the fork ends, its
debugger shows the same view, from the fork's round on, with the changed call marked.
Hostile text rides along in the prompt and a result: no dialog may open. Screenshots
(light, dark, 600 px) go to ``test-artifacts/``.
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


AGENTS = '''\
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import ALL
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel

PROMPT = "The disk of the build server is full. " + ALL


@tool
def read_log(path: str) -> str:
    """Read a log file."""
    return f"{path}: 97% of /var used by build caches {ALL}"


@tool
def open_ticket(title: str) -> str:
    """Open a ticket for the operations team."""
    return f"ticket OPS-17 opened: {title}"


def operator(second):
    """Round 1 reads disk.log; round 2 calls `second`; then answers."""

    def reply(messages, bound_tools):
        done = [m for m in messages if isinstance(m, ToolMessage)]
        usage = {"input_tokens": 120 * len(messages), "output_tokens": 30}
        usage["total_tokens"] = usage["input_tokens"] + 30
        if not bound_tools or len(done) >= 2:
            return AIMessage("The build caches filled the disk.", usage_metadata=usage)
        if not done:
            call = {"name": "read_log", "args": {"path": "disk.log"}, "id": "c1"}
            text = "I will look at the disk log."
            return AIMessage(text, tool_calls=[call], usage_metadata=usage)
        name, args, text = second
        call = {"name": name, "args": args, "id": "c2"}
        return AIMessage(text, tool_calls=[call], usage_metadata=usage)

    return reply


def agent(second):
    model = ScriptedChatModel([operator(second)] * 20, model_name="gpt-4o-mini")
    return LLMAgent(model, [read_log, open_ticket])


READ = ("read_log", {"path": "build.log"}, "I will read the build log.")
TICKET = ("open_ticket", {"title": "build server disk full"}, "I will open a ticket.")
reader, ticketer = agent(READ), agent(TICKET)
'''

RUNS = """\
reader.subscribe(dbg)
first = await reader.arun(PROMPT, name="reads the build log")
ticketer.subscribe(dbg)
second = await ticketer.arun(PROMPT, name="opens a ticket")
compared = dbg.compare(first.run_id, second.run_id)
print(compared.frame()[["round", "same", "a_tools", "b_tools", "tokens_delta"]])
"""

FORKED = """\
forked = LoopDebugger(fork_with=agent(TICKET))
display(forked)
await forked.start(agent(READ), PROMPT)
"""


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
    """Screenshots at 600 px wide, with the file browser open (the notebook is then about
    250 px wide) and closed, after checking that nothing overflows or is cut."""
    page.set_viewport_size({"width": 600, "height": 1600})
    for show, suffix in ((True, "_sidebar"), (False, "")):
        left_sidebar(page, show)
        assert layout_problems(page) == []
        view.locator(".tl-cmpview").scroll_into_view_if_needed()
        shot(view, name + suffix)


def wide(page: Any) -> None:
    page.set_viewport_size({"width": 1400, "height": 1800})
    page.wait_for_timeout(300)


def check_changed_call(view: Any, round_number: int) -> Any:
    """The round that differs marks read_log as changed into open_ticket, and the reply's
    reworded words as deleted and inserted; returns that round."""
    box = view.locator(".tl-cmpview")
    row = box.locator(f".tl-cmp-round[data-round='{round_number}']")
    row.wait_for()
    row.locator(".tl-cmp-rhead .tl-mark-changed", has_text="read_log changed").wait_for()
    row.locator(".tl-cmp-span .tl-mark-changed", has_text="changed: another tool").wait_for()
    calls = row.locator(".tl-cmp-call .tl-chip")
    assert calls.all_inner_texts() == ["read_log", "open_ticket"]
    assert row.locator(".tl-del").first.inner_text() == "read the build log."
    assert row.locator(".tl-ins").first.inner_text() == "open a ticket."
    assert "±0" in row.locator(".tl-cmp-rhead").inner_text()  # the same spend, yet changed
    return row


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_two_runs_compared_in_the_widget(page_for: Any, jupyter: Jupyter, ui: str) -> None:
    name = write_notebook(
        jupyter.root, f"compare_{ui}.ipynb", [AGENTS, "dbg = LoopDebugger()\ndbg", RUNS]
    )
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        view = widget(page)
        box = view.locator(".tl-cmpview")
        box.locator(".tl-block-title", has_text="Comparing A with B").wait_for()
        assert "1 round of 3 differs." in box.locator(".tl-cmp-verdict").inner_text()
        check_changed_call(view, 2)
        same = box.locator(".tl-cmp-same .tl-strong").all_inner_texts()
        assert same == ["Round 1 the same", "Round 3 the same"]
        totals = box.locator(".tl-cmp tr").nth(1).inner_text()
        assert "reads the build log" in totals
        assert "opens a ticket" in totals
        box.scroll_into_view_if_needed()
        shot(view, f"{ui}_compare_two_runs")

        # Swap sides: the page's own request (what the run list sends), answered by the kernel
        box.get_by_role("button", name="Swap sides").click()
        page.wait_for_function(
            "() => document.querySelector('.tl-cmpview .tl-cmp tr:nth-child(2) td:nth-child(2)')"
            "?.textContent.startsWith('opens a ticket')"
        )
        row = box.locator(".tl-cmp-round[data-round='2']")
        row.locator(".tl-cmp-rhead .tl-mark-changed", has_text="open_ticket changed").wait_for()
        assert row.locator(".tl-cmp-call .tl-chip").all_inner_texts() == [
            "open_ticket",
            "read_log",
        ]
        box.get_by_role("button", name="Swap sides").click()
        page.wait_for_function(
            "() => document.querySelector('.tl-cmpview .tl-cmp tr:nth-child(2) td:nth-child(2)')"
            "?.textContent.startsWith('reads the build log')"
        )

        if ui == "lab":
            narrow(page, view, "lab_compare_two_runs_600px")
            switch_theme(page, "JupyterLab Dark")
            contrast = contrast_report(page)
            print(f"\n[dark, compare] text nodes: {contrast['count']}, low: {contrast['worst']}")
            assert contrast["worst"] == []
            narrow(page, view, "lab_dark_compare_two_runs_600px")
            wide(page)
            box.scroll_into_view_if_needed()
            shot(view, "lab_dark_compare_two_runs")
            switch_theme(page, "JupyterLab Light")

        # Close: gone from the page, and from what the kernel keeps
        box.get_by_role("button", name="Close").click()
        box.wait_for(state="hidden")
        wait_idle(page)
        assert page.dialogs == []  # the hostile prompt and results never ran
        assert page.locator(".tl-root img").count() == 0
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"{ui}_compare_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


def test_fork_from_here_shows_its_comparison_with_the_changed_call(
    page_for: Any, jupyter: Jupyter
) -> None:
    name = write_notebook(jupyter.root, "compare_fork.ipynb", [AGENTS, FORKED])
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page)
        live.locator(".tl-badge", has_text="Finished").wait_for()
        live.locator(".tl-row[data-n='2']").click()
        detail = live.locator(".tl-detail")
        detail.get_by_role("button", name="Fork from here").click()
        live.locator(".tl-fork-msg", has_text="the fork runs in a new debugger below").wait_for()
        fork = widget(page, 1)
        fork.locator(".tl-forkbox", has_text="Fork of a run at round 2.").wait_for()
        fork.get_by_role("button", name="Continue").click()
        fork.locator(".tl-badge", has_text="Finished").wait_for()

        box = fork.locator(".tl-cmpview")
        title = "The fork next to the original, from round 2 on"
        box.locator(".tl-block-title", has_text=title).wait_for()
        assert box.locator(".tl-cmp th").all_inner_texts()[:3] == ["", "Original", "Fork"]
        check_changed_call(fork, 2)
        assert box.locator(".tl-cmp-round[data-round='1']").count() == 0  # taken as it was
        assert box.get_by_role("button", name="Swap sides").count() == 0  # not its runs
        box.scroll_into_view_if_needed()
        shot(fork, "lab_fork_compared")
        narrow(page, fork, "lab_fork_compared_600px")
        switch_theme(page, "JupyterLab Dark")
        assert contrast_report(page)["worst"] == []
        narrow(page, fork, "lab_dark_fork_compared_600px")
        switch_theme(page, "JupyterLab Light")
        wide(page)

        wait_idle(page)
        assert page.dialogs == []
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "compare_fork_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
