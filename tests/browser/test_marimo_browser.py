"""The debugger in marimo, driven through Debian's chromium with marimo's own server.

marimo draws an anywidget in a shadow root, where the page's stylesheets do not reach: the
debugger styles its own root and reads marimo's theme variables, light and dark. The
notebook runs a live run that pauses before each model call: the test steps it, adds a
message at a pause (an edit, a page request), lets it finish, forks it from a round (a
widget made by a click, outside any cell), shows the fork and runs it to its comparison,
then runs the agent again and compares the two runs from the run list. Screenshots go to
``test-artifacts/marimo_*.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browser.jupyterkit import TIMEOUT_MS, contrast_report, layout_problems, on_dialog, ours, shot
from browser.marimokit import serve

pytestmark = pytest.mark.browser

NOTEBOOK = '''\
import marimo

app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.tools import tool
    from loopkit import ALL
    from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel

    @tool
    def read_log(path: str) -> str:
        """Read a log file."""
        return f"{path}: 97% of /var used by build caches {ALL}"

    @tool
    def open_ticket(title: str) -> str:
        """Open a ticket for the operations team."""
        return f"ticket OPS-17 opened: {title}"

    def operator(second):
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
    reader = agent(READ)
    dbg = LoopDebugger(pause_on="model", fork_with=agent(TICKET))
    reader.subscribe(dbg)
    return LoopDebugger, ALL, agent, READ, TICKET, dbg, mo, reader


@app.cell
def _(dbg):
    dbg
    return


@app.cell
def _(ALL, dbg, reader):
    task = dbg.start(reader, "The disk of the build server is full. " + ALL)
    return


@app.cell
def _(mo):
    again = mo.ui.run_button(label="Run it again")
    show_fork = mo.ui.run_button(label="Show the fork")
    mo.hstack([again, show_fork], justify="start")
    return again, show_fork


@app.cell
def _(again, dbg, mo, reader):
    mo.stop(not again.value)
    dbg.start(reader, "Is the disk still full?", pause_on="off")
    return


@app.cell
def _(dbg, mo, show_fork):
    mo.stop(not show_fork.value)
    dbg.forks[-1] if dbg.forks else mo.md("no fork yet")
    return
'''


def open_page(browser: Any, url: str, width: int = 1200) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 1800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.errors = []
    page.dialogs = []  # hostile text calls alert() if it ever runs: none may open
    page.on("dialog", lambda dialog: on_dialog(page, dialog))
    page.on("pageerror", lambda exc: page.errors.append(f"{exc.message}\n{exc.stack}"))
    page.goto(url)
    return page


def styled(view: Any) -> dict[str, str]:
    """What the debugger's root computes: its styles came into marimo's shadow root."""
    result: dict[str, str] = view.evaluate(
        "el => { const s = getComputedStyle(el); return {border: s.borderTopStyle,"
        " bg: s.backgroundColor, fg: s.color, font: s.fontFamily,"
        " inShadow: String(el.getRootNode() instanceof ShadowRoot)}; }"
    )
    return result


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_marimo_draws_steps_edits_forks_and_compares(
    browser: Any, tmp_path: Path, theme: str
) -> None:
    notebook = tmp_path / "debugger_marimo.py"
    notebook.write_text(NOTEBOOK)
    with serve(notebook, theme, tmp_path) as url:
        page = open_page(browser, url)
        try:
            run_in_marimo(page, theme)
        except BaseException:
            shot(page, f"marimo_{theme}_failure")
            print("\n".join(page.errors))
            raise
        finally:
            page.context.close()


def run_in_marimo(page: Any, theme: str) -> None:
    view = page.locator(".tl-root").first
    view.wait_for()
    looks = styled(view)
    assert looks["inShadow"] == "true"
    assert looks["border"] == "solid"  # unstyled, a div has no border
    dark = theme == "dark"
    light_bg = looks["bg"] in ("rgb(255, 255, 255)", "color(srgb 1 1 1)")
    assert light_bg is not dark, looks  # marimo's own background, light or dark
    assert "PT Sans" in looks["font"]  # marimo's text font, read through its variables

    # a live run, paused before its first model call: the question beside its name
    view.locator(".tl-badge", has_text="Paused").wait_for()
    assert "The disk of the build server is full." in view.locator(".tl-question").inner_text()
    view.get_by_role("button", name="Step").click()
    view.locator(".tl-head", has_text="round 2 of").wait_for()

    # an edit at a pause: a message added before the next model call
    send = view.locator(".tl-block", has_text="About to send")
    send.get_by_role("button", name="Add message…").click()
    editor = view.locator(".tl-editor")
    editor.locator("textarea").fill("Answer in one line.")
    editor.get_by_role("button", name="Add the message").click()
    view.locator(".tl-editor").wait_for(state="detached")
    send.get_by_text("Answer in one line.").wait_for()

    view.get_by_role("button", name="Continue").click()
    view.locator(".tl-badge", has_text="Finished").wait_for()
    view.scroll_into_view_if_needed()
    shot(view, f"marimo_{theme}_finished")
    contrast = contrast_report(page)
    print(f"\n[marimo {theme}] text nodes: {contrast['count']}, low: {contrast['worst']}")
    assert contrast["count"] > 50
    assert contrast["worst"] == []

    # "Fork from here" on round 2: a widget made by a click, outside any cell
    view.locator(".tl-row[data-n='2']").click()
    view.locator(".tl-detail").get_by_role("button", name="Fork from here").click()
    view.locator(".tl-fork-msg", has_text="the fork runs").wait_for()
    page.get_by_role("button", name="Show the fork").click()
    fork = page.locator(".tl-root").nth(1)
    fork.locator(".tl-forkbox", has_text="Fork of a run at round 2.").wait_for()
    assert styled(fork)["border"] == "solid"
    fork.get_by_role("button", name="Continue").click()
    fork.locator(".tl-badge", has_text="Finished").wait_for()
    box = fork.locator(".tl-cmpview")
    box.locator(".tl-block-title", has_text="The fork next to the original").wait_for()
    fork.scroll_into_view_if_needed()
    shot(fork, f"marimo_{theme}_fork_compared")

    # a second run, then the two compared from the run list (a page request)
    page.get_by_role("button", name="Run it again").click()
    view.locator(".tl-runs-title", has_text="2 runs").wait_for()
    view.locator(".tl-badge", has_text="Finished").wait_for()
    ticks = view.locator(".tl-spacer > .tl-run input[type='checkbox']")
    ticks.nth(0).check()
    ticks.nth(1).check()
    view.get_by_role("button", name="Compare").click()
    view.locator(".tl-cmpview .tl-block-title", has_text="Comparing").wait_for()
    view.scroll_into_view_if_needed()
    shot(view, f"marimo_{theme}_compared")

    page.set_viewport_size({"width": 600, "height": 1800})
    page.wait_for_timeout(400)
    assert layout_problems(page) == []
    shot(page, f"marimo_{theme}_600px")
    assert not page.dialogs
    assert not ours(page.errors), page.errors
    assert not [e for e in page.errors if "tl-" in e], page.errors
