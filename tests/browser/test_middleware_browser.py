"""The controls on a LangChain ``create_agent`` run that ``ToolLoopMiddleware`` drives, in a
real JupyterLab, as a person meets them: the debugger given to the middleware as an
observer, a cell that awaits ``graph.ainvoke(...)``; the page pauses the run before its
tools, Step goes on to the next pause (a new graph task: the run is held by its id), Stop
ends it ("Stopped by you", the partial counts shown), the cell says ``RunStopped`` in one
line, and the kernel is free afterwards.

Screenshots (light, dark, 600 px) go to ``test-artifacts/middleware_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    looks,
    ours,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)
from browser.test_controls_browser import AGENT

pytestmark = pytest.mark.browser

GRAPH = """\
from langchain.agents import create_agent
from toolloop_lab import ToolLoopMiddleware

dbg = LoopDebugger(pause_on="tools")
graph = create_agent(asks(4), [lookup], middleware=[ToolLoopMiddleware(observers=[dbg])])
dbg"""


def test_step_and_stop_drive_a_create_agent_run(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "middleware_controls.ipynb",
        [
            AGENT,
            GRAPH,
            'await graph.ainvoke({"messages": [("user", "Are tickets 1 to 4 open?")]})',
            'print("kernel free:", 1 + 1)',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        live.get_by_text("Paused before running lookup in round 1.").wait_for()
        buttons = {n: live.get_by_role("button", name=n) for n in ("Continue", "Step", "Stop")}
        for button in buttons.values():
            assert button.is_enabled()
        assert live.locator(".tl-reach-hint").is_hidden()

        buttons["Step"].click()
        live.get_by_text("Paused before running lookup in round 2.").wait_for()
        looks(page, live, "middleware_paused")
        buttons["Stop"].click()
        live.locator(".tl-badge", has_text="Stopped").wait_for()
        failure = live.locator(".tl-failure").inner_text()
        assert "Stopped by you after 1 round" in failure
        assert (
            "1 tool round, 2 model calls (at most 10 rounds)"
            in live.locator(".tl-head").inner_text()
        )
        assert buttons["Stop"].is_disabled()
        output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        output.get_by_text("RunStopped: the run was stopped in round 2").wait_for()
        assert "CancelledError" not in failure
        shot(output, "middleware_cell_output")
        wait_idle(page)
        cell = page.locator(".jp-Notebook .jp-Cell").nth(3)
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        page.get_by_text("kernel free: 2").wait_for()
        looks(page, live, "middleware_stopped")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "middleware_controls_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
