"""Notebooks kept after the kernel is gone, as a person opens them in chromium.

- Executed by ``nbconvert --execute`` (nbclient: no widget front end), reopened in
  JupyterLab and in Notebook 7 with the widget manager's default settings: each debugger
  shows its finished run, and no error text anywhere.
- The same notebook exported to HTML and opened with the network blocked: the finished runs,
  their status and figures.
- Saved from JupyterLab with widget state, the kernel stopped, reopened: the header counts
  the rounds the file left out, says what it kept, and draws no control that needs a kernel.

Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbconvert import HTMLExporter
from widget.test_widget_saved_notebook import executed_notebook

from browser.jupyterkit import (
    KERNEL,
    REPO,
    Jupyter,
    install_kernel,
    looks,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)
from toolloop_lab._support.words import OUTCOME

pytestmark = pytest.mark.browser

ERRORS = re.compile(r"Error displaying widget|model not found|waiting for a run")


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    folder = tmp_path_factory.mktemp("executed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(install_kernel(folder / "prefix")))
        notebook = executed_notebook(folder)
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    return notebook


@pytest.fixture
def default_settings(jupyter: Jupyter) -> Iterator[None]:
    """The widget manager's default settings (this suite saves widget state otherwise)."""
    path = (
        jupyter.root.parent
        / "lab-settings"
        / "@jupyter-widgets"
        / "jupyterlab-manager"
        / "plugin.jupyterlab-settings"
    )
    kept = path.read_text()
    path.write_text(json.dumps({}))
    try:
        yield
    finally:
        path.write_text(kept)


def _page_text(page: Any) -> str:
    text: str = page.locator(".jp-Notebook").inner_text()
    return text


@pytest.mark.usefixtures("default_settings")
@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_an_executed_notebook_reopens_showing_its_finished_runs(
    page_for: Any, jupyter: Jupyter, executed: nbformat.NotebookNode, ui: str
) -> None:
    name = f"executed_{ui}.ipynb"
    nbformat.write(executed, jupyter.root / name)
    page = page_for(name, ui, width=1000)
    snapshots = page.locator(".jp-OutputArea-output", has_text="Agent loop debugger: finished")
    snapshots.nth(1).wait_for()
    assert snapshots.count() == 2
    text = _page_text(page)
    assert not ERRORS.search(text), ERRORS.search(text)
    assert text.count(OUTCOME["final_answer"]) >= 2
    assert "120 input" in text
    assert "$0.000027" in text
    snapshots.first.scroll_into_view_if_needed()
    shot(page, f"{ui}_executed_notebook_reopened")


def test_an_exported_notebook_shows_its_runs_offline(
    browser: Any, executed: nbformat.NotebookNode, tmp_path: Path
) -> None:
    html, _ = HTMLExporter().from_notebook_node(executed)
    path = tmp_path / "executed.html"
    path.write_text(html, encoding="utf-8")
    context = browser.new_context(offline=True, viewport={"width": 1000, "height": 1400})
    try:
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        text = page.locator("body").inner_text()
        assert not ERRORS.search(text), ERRORS.search(text)
        assert text.count("Agent loop debugger: finished") == 2
        assert text.count(OUTCOME["final_answer"]) >= 2
        assert "120 input" in text
        assert "$0.000027" in text
        shot(page, "html_export_offline")
    finally:
        context.close()


LONG_RUN = '''\
from langchain_core.tools import tool
from loopkit import calls, final, tool_call
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel


@tool
def step(n: int) -> str:
    """One more step."""
    return f"step {n} done"


script = [calls(tool_call("step", {"n": i}, f"s{i}")) for i in range(1, 2001)] + [final("all done")]
agent = LLMAgent(
    ScriptedChatModel(script, model_name="gpt-4o-mini"), [step], AgentConfig(tool_max_rounds=2100)
)
dbg = LoopDebugger(pause_on="both")
agent.subscribe(dbg)
dbg
'''


def test_a_saved_2001_round_run_reopens_with_its_true_totals_and_no_kernel_controls(
    page_for: Any, jupyter: Jupyter
) -> None:
    name = write_notebook(
        jupyter.root,
        "saved_long_run.ipynb",
        [LONG_RUN, 'dbg.pause_on = "off"\nresult = await agent.arun("go")\nresult.rounds'],
    )
    page = page_for(name, "lab", width=1200)
    run_all_cells(page)
    live = widget(page)
    live.locator(".tl-badge", has_text="Finished").wait_for()
    head = live.locator(".tl-head .tl-meta").first.inner_text()
    # the run's saved state reaches the page in its own paced slot after the last batch:
    # save until the file holds it
    kept: list[dict[str, Any]] = []
    for _attempt in range(20):
        page.keyboard.press("Control+s")
        page.wait_for_function("() => !document.querySelector('.jp-mod-dirty')", timeout=30_000)
        saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
        widgets = saved["metadata"].get("widgets", {})
        states = widgets.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
        kept = [s["state"] for s in states.values() if s["state"].get("saved_omitted")]
        if kept:
            break
        page.wait_for_timeout(500)
    assert kept, "the file keeps the newest rounds only, and says how many it left out"
    jupyter.stop_kernels()
    page.reload()
    saved_view = widget(page)
    saved_view.locator(".tl-badge", has_text="Finished").wait_for()
    page.wait_for_timeout(1_000)  # the page's hello goes unanswered: nothing may change
    assert saved_view.locator(".tl-head .tl-meta").first.inner_text() == head
    assert "2,000 tool rounds, 2,001 model calls" in head
    # the newest call was sent the whole conversation: the input, then 2,000 calls and results
    saved_view.locator(
        ".tl-detail", has_text="Sent to the model (4,001 messages, 2 new)"
    ).wait_for()
    note = saved_view.locator(".tl-note").inner_text()
    assert "no kernel is connected" in note
    assert "earlier round" in note
    assert saved_view.locator(".tl-controls").is_hidden()
    assert saved_view.get_by_role("button", name=re.compile("Fork from here")).count() == 0 or (
        saved_view.get_by_role("button", name=re.compile("Fork from here")).is_hidden()
    )
    text = _page_text(page)
    assert not ERRORS.search(text), ERRORS.search(text)
    assert "Agent loop debugger:" not in text, "the drawn view, not the snapshot kept beside it"
    saved_view.scroll_into_view_if_needed()
    shot(saved_view, "lab_saved_long_run_reopened")
    looks(page, saved_view, "lab_saved_long_run_reopened")  # dark and 600 px too


DEFAULT_SAVED = [
    '''\
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def agent(answer):
    call = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}],
                     usage_metadata={"input_tokens": 50, "output_tokens": 10, "total_tokens": 60})
    last = AIMessage(answer,
                     usage_metadata={"input_tokens": 70, "output_tokens": 5, "total_tokens": 75})
    return LLMAgent(ScriptedChatModel([call, last], model_name="gpt-4o-mini"), [add])
''',
    "first = agent('three')\ndbg = LoopDebugger()\nfirst.subscribe(dbg)\ndbg",
    "result = await first.arun('add 1 and 2')",
    "dbg2 = LoopDebugger()\ndbg2",
    "result2 = await dbg2.start(agent('also three'), 'add 1 and 2 again')",
]


def _saved_outputs_say(jupyter: Jupyter, name: str, text: str) -> int:
    """How many outputs of the saved file carry ``text`` in their HTML."""
    saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
    found = 0
    for cell in saved["cells"]:
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            found += text in ("".join(html) if isinstance(html, list) else html)
    return found


@pytest.mark.usefixtures("default_settings")
@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_a_notebook_saved_without_widget_state_reopens_showing_its_runs(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    """Run in the page, saved with the widget manager's defaults (no widget state), the
    kernel gone, reopened: each debugger shows its finished run (one subscribed and awaited,
    one started with ``dbg.start``), and no widget error anywhere."""
    name = write_notebook(jupyter.root, f"default_saved_{ui}.ipynb", DEFAULT_SAVED)
    page = page_for(name, ui, width=1100)
    try:
        run_all_cells(page)
        for index in (0, 1):
            widget(page, index).locator(".tl-badge", has_text="Finished").wait_for()
        wait_idle(page)
        live = _page_text(page)
        assert live.count("Agent loop debugger:") == 0, "the live widgets, not their snapshots"
        widget(page, 1).scroll_into_view_if_needed()
        shot(page, f"{ui}_default_saved_live")
        for _attempt in range(20):  # the snapshots are updated as the runs end: save until kept
            page.keyboard.press("Control+s")
            page.wait_for_timeout(500)
            if _saved_outputs_say(jupyter, name, "Agent loop debugger: finished") == 2:
                break
        assert _saved_outputs_say(jupyter, name, "Agent loop debugger: finished") == 2
        saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
        assert "widgets" not in saved["metadata"], "the default: no widget state in the file"
        jupyter.stop_kernels()
        page.reload()
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        wait_idle(page)
        snapshots = page.locator(".jp-OutputArea-output", has_text="Agent loop debugger: finished")
        snapshots.nth(1).wait_for()
        page.wait_for_timeout(2_000)  # the widget manager has restored what it could
        text = _page_text(page)
        assert not ERRORS.search(text), ERRORS.search(text)
        assert "Loading widget" not in text
        assert snapshots.count() == 2
        assert text.count(OUTCOME["final_answer"]) >= 2
        assert "120 input" in text
        assert "$0.000027" in text
        snapshots.first.scroll_into_view_if_needed()
        shot(page, f"{ui}_default_saved_reopened")
    except BaseException:
        shot(page, f"{ui}_default_saved_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


@pytest.mark.parametrize("ui", ["lab", "notebook"])
@pytest.mark.parametrize("tutorial", ["01_quickstart.ipynb", "12_many_runs.ipynb"])
def test_a_tutorial_opened_without_running_shows_its_finished_runs(
    page_for: Any, jupyter: Jupyter, ui: str, tutorial: str
) -> None:
    """A Binder visitor opens a tutorial as stored and runs nothing: each debugger shows
    the finished run the tutorial makes, never an idle one."""
    name = f"{ui}_{tutorial}"
    (jupyter.root / name).write_bytes((REPO / "notebooks" / tutorial).read_bytes())
    page = page_for(name, ui, width=1100)
    try:
        snapshots = page.locator(".jp-OutputArea-output", has_text="Agent loop debugger:")
        snapshots.first.wait_for()
        text = _page_text(page)
        assert not ERRORS.search(text), ERRORS.search(text)
        assert "Agent loop debugger: finished" in text
        assert "Agent loop debugger: waiting" not in text
        snapshots.first.scroll_into_view_if_needed()
        shot(page, f"{ui}_tutorial_{tutorial.split('_')[0]}_as_stored")
    except BaseException:
        shot(page, f"{ui}_tutorial_as_stored_failure")
        raise
