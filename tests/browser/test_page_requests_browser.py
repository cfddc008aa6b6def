"""What the page asks the kernel, and what it does between two draws, in a real JupyterLab
and Notebook 7 (Debian's chromium).

* Step and Continue with an argument edit open: the edit is applied first (the tool runs
  with the person's arguments, never the model's), and an edit Python refuses holds the
  pause, the reason said next to the edit.
* A request whose handler raises in the kernel: the page shows the kernel's reason where
  the person clicked, never "No answer from the kernel in 20 s".
* Switching between a long run and a short one in the run list while the timeline is
  resized and the theme switched: no handler reads the rounds of the run shown before.

Screenshots go to ``test-artifacts/requests_*.png``.
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
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel

ran = []


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    ran.append(database)
    return f"{database}: OK"


def analyst(messages, bound_tools):
    """Reads two logs, one a round, then says what every log it read said."""
    results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 100 * len(messages), "output_tokens": 20}
    usage["total_tokens"] = usage["input_tokens"] + 20
    if len(results) < 2 and bound_tools:
        db = ("users", "orders")[len(results)]
        call = {"name": "read_log", "args": {"database": db}, "id": f"call_{len(results) + 1}"}
        return AIMessage(f"Reading the {db} log.", tool_calls=[call], usage_metadata=usage)
    return AIMessage("Logs read: " + "; ".join(results), usage_metadata=usage)


agent = LLMAgent(
    ScriptedChatModel([analyst] * 8, model_name="gpt-4o-mini"), [read_log],
    AgentConfig(tool_max_rounds=4),
)
'''


def _stacks(page: Any) -> list[str]:
    """Every uncaught error the page raises from now on, with its stack."""
    stacks: list[str] = []
    page.on("pageerror", lambda exc: stacks.append(f"{exc.message}\n{exc.stack}"))
    return stacks


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_step_and_continue_apply_an_open_edit_or_say_why_not(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    name = write_notebook(
        jupyter.root,
        f"requests_edit_{ui}.ipynb",
        [
            AGENT,
            'dbg = LoopDebugger(pause_on="tools")\ndbg',
            'task = dbg.start(agent, "Did the backups succeed?")',
            'result = await task\nprint("ran:", ran)',
        ],
    )
    page = page_for(name, ui)
    stacks = _stacks(page)
    try:
        run_all_cells(page)
        live = widget(page)
        banner = live.locator(".tl-banner")
        banner.get_by_text("Paused before running read_log in round 1.").wait_for()
        step = live.locator(".tl-controls").get_by_role("button", name="Step")
        to_run = live.locator(".tl-block", has_text="About to run")

        # round 1: an edit that fits, left open, and Step: it is applied, then the step
        to_run.get_by_role("button", name="Edit arguments…").click()
        editor = live.locator(".tl-editor")
        editor.locator(".tl-edit-release", has_text="Step and Continue apply it first").wait_for()
        editor.locator("textarea").fill('{"database": "billing"}')
        editor.locator(".tl-edit-ok", has_text="fit the tool's schema").wait_for()
        assert (step.get_attribute("title") or "").startswith("Apply the edit you have open")
        live.scroll_into_view_if_needed()
        shot(live, f"requests_{ui}_edit_open_before_step")
        step.click()
        banner.get_by_text("Paused before running read_log in round 2.").wait_for()
        live.locator(".tl-editor").wait_for(state="detached")
        live.locator(".tl-row[data-n='1']").click()
        detail = live.locator(".tl-detail")
        detail.locator(".tl-block", has_text="Changed by you").get_by_text(
            "You edited the arguments"
        ).wait_for()
        detail.get_by_text("billing: OK").first.wait_for()
        live.get_by_role("button", name="Follow newest").click()

        # round 2: an edit Python refuses, Step clicked at once: refused, said next to it
        to_run.get_by_role("button", name="Edit arguments…").click()
        editor.locator("textarea").fill('{"database": 7}')
        step.click()
        said = editor.locator(".tl-edit-error")
        said.wait_for()
        assert said.inner_text().startswith(("Step refused (invalid_args): ", "Step waits for"))
        assert "valid string" in said.inner_text()
        assert "still paused" in said.inner_text()
        banner.get_by_text("Paused before running read_log in round 2.").wait_for()
        output = page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea")
        assert output.get_by_text("ran:").count() == 0  # the cell still awaits the run
        live.scroll_into_view_if_needed()
        shot(live, f"requests_{ui}_step_refused")
        if ui == "lab":
            page.set_viewport_size({"width": 600, "height": 1600})
            page.wait_for_timeout(400)
            assert layout_problems(page) == []
            live.scroll_into_view_if_needed()
            shot(live, "requests_lab_step_refused_600px")
            page.set_viewport_size({"width": 1400, "height": 1800})
            switch_theme(page, "JupyterLab Dark")
            assert contrast_report(page)["worst"] == []
            live.scroll_into_view_if_needed()
            shot(live, "requests_lab_step_refused_dark")
            switch_theme(page, "JupyterLab Light")

        # a good edit, then Continue: applied, and the run goes on to its end
        editor.locator("textarea").fill('{"database": "users"}')
        editor.locator(".tl-edit-ok", has_text="fit the tool's schema").wait_for()
        live.locator(".tl-controls").get_by_role("button", name="Continue").click()
        live.locator(".tl-badge", has_text="Finished").wait_for()
        output.get_by_text("ran: ['billing', 'users']").wait_for()  # never the model's own
        assert "Logs read: billing: OK; users: OK" in live.locator(".tl-activity").inner_text()
        live.scroll_into_view_if_needed()
        shot(live, f"requests_{ui}_edits_applied")
        wait_idle(page)
        assert ours(stacks) == [], stacks
    except BaseException:
        shot(page, f"requests_edit_{ui}_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


RUNS = '''\
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


def script(rounds, said):
    usage = {"input_tokens": 500, "output_tokens": 20, "total_tokens": 520}
    asks = [
        AIMessage(f"Round {i}.", usage_metadata=usage, tool_calls=[
            {"name": "echo", "args": {"text": f"r{i}"}, "id": f"c{i}", "type": "tool_call"}])
        for i in range(1, rounds)
    ]
    return ScriptedChatModel([*asks, AIMessage(said, usage_metadata=usage)],
                             model_name="gpt-4o-mini")


dbg = LoopDebugger()
shown = type(dbg).show_run


def picky(self, run_id):
    """Show a run, but raise for "Newest" (what a handler that raises looks like to the page)."""
    if run_id is None:
        raise OSError("the session's run store is gone")
    return shown(self, run_id)


type(dbg).show_run = picky
dbg
'''
RUN_BOTH = """\
long = LLMAgent(script(80, "The long run is done."), [echo], AgentConfig(tool_max_rounds=100))
await dbg.start(long, "A long run.")
short = LLMAgent(script(2, "The short run is done."), [echo])
await dbg.start(short, "A short run.")
print(len(dbg.runs), "runs")
"""

WIGGLE = """(on) => {
  cancelAnimationFrame(window.__wiggle || 0);
  const timelines = () => document.querySelectorAll('.tl-root .tl-gantt');
  if (!on) { for (const g of timelines()) g.style.width = ''; return; }
  let i = 0;
  const step = () => {  // the timeline resized every frame: its observer fires between draws
    for (const g of timelines()) g.style.width = (i++ % 2) ? '96%' : '';
    window.__wiggle = requestAnimationFrame(step);
  };
  step();
}"""


def _row(view: Any, prompt_start: str) -> Any:
    return view.locator(".tl-spacer > .tl-run", has_text=prompt_start)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_switching_runs_while_resizing_and_a_failed_request_said(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    name = write_notebook(jupyter.root, f"requests_runs_{ui}.ipynb", [RUNS, RUN_BOTH])
    page = page_for(name, ui)
    stacks = _stacks(page)
    try:
        run_all_cells(page)
        view = widget(page)
        page.get_by_text("2 runs", exact=True).first.wait_for()
        view.locator(".tl-runs-title", has_text="2 runs").wait_for()
        wait_idle(page)
        rows = view.locator(".tl-spacer > .tl-run")
        assert rows.count() == 2
        long_row, short_row = rows.nth(1), rows.nth(0)  # the newest first
        view.locator(".tl-gantt").wait_for()

        # the long run, then the short one, back and forth, resized every frame, the
        # theme switched in between: no handler reads the rounds of the other run
        activity = view.locator(".tl-activity")
        page.evaluate(WIGGLE, True)
        for _ in range(4):
            long_row.click()
            activity.get_by_text("The long run is done.").wait_for()
            page.wait_for_timeout(150)
            short_row.click()
            activity.get_by_text("The short run is done.").wait_for()
            page.wait_for_timeout(50)
        for theme in ("JupyterLab Dark", "JupyterLab Light"):
            long_row.click()
            activity.get_by_text("The long run is done.").wait_for()
            short_row.click()
            if ui == "lab":
                switch_theme(page, theme)
            else:  # a theme switch as Notebook 7 makes one: its body's theme attributes
                page.evaluate(f"document.body.dataset.jpThemeName = {theme!r}")
            activity.get_by_text("The short run is done.").wait_for()
        page.evaluate(WIGGLE, False)
        page.wait_for_timeout(600)
        assert ours(stacks) == [], stacks
        marks = view.locator(".tl-gantt-marks").inner_text()
        assert "round 80" not in marks, marks
        assert "round 3" not in marks, marks
        assert view.locator(".tl-row[data-n]").count() == 2
        view.scroll_into_view_if_needed()
        shot(view, f"requests_{ui}_switched_to_short")

        # a request whose handler raises in the kernel ("Newest" here): the kernel's
        # reason, where the person clicked, never "no answer"
        long_row.click()
        activity.get_by_text("The long run is done.").wait_for()
        view.get_by_role("button", name="Newest").click()
        note = view.locator(".tl-runs-head")
        note.get_by_text("OSError: the session's run store is gone").wait_for()
        assert "No answer from the kernel" not in view.inner_text()
        assert "The long run is done." in activity.inner_text()  # nothing changed
        view.scroll_into_view_if_needed()
        shot(view, f"requests_{ui}_failed_request_said")
        assert ours(stacks) == [], stacks
    except BaseException:
        shot(page, f"requests_runs_{ui}_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
