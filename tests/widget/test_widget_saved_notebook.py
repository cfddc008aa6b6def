"""A notebook executed without a widget front end (``nbconvert --execute``, ``nbclient``)
keeps each debugger as one output showing its finished run, and the front end once.

The browser half (the same file reopened in JupyterLab and Notebook 7, and exported to
HTML and opened offline) is in ``tests/browser/test_saved_notebooks_browser.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from browser.jupyterkit import KERNEL, install_kernel
from nbclient import NotebookClient
from nbconvert import HTMLExporter

from toolloop_lab._support.words import OUTCOME

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

SETUP = '''
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel

@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

def agent(answer, dbg):
    call = AIMessage("", tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "c1"}],
                     usage_metadata={"input_tokens": 50, "output_tokens": 10, "total_tokens": 60})
    last = AIMessage(answer,
                     usage_metadata={"input_tokens": 70, "output_tokens": 5, "total_tokens": 75})
    model = ScriptedChatModel([call, last], model_name="gpt-4o-mini")
    return LLMAgent(model, [add], observers=[dbg])
'''


def executed_notebook(folder: Path) -> nbformat.NotebookNode:
    """Two debuggers, each displayed in one cell and its run in the next (one awaited, one
    run synchronously), executed as ``nbconvert --execute`` does."""
    sources = [
        SETUP,
        "dbg = LoopDebugger()\nfirst = agent('three', dbg)\ndbg",
        "result = await first.arun('add 1 and 2')",
        "dbg2 = LoopDebugger()\nsecond = agent('also three', dbg2)\ndbg2",
        "result2 = second.run('add 1 and 2 again')",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    NotebookClient(
        notebook, kernel_name=KERNEL, timeout=180, resources={"metadata": {"path": str(folder)}}
    ).execute()
    return notebook


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    folder = tmp_path_factory.mktemp("executed")
    data = install_kernel(folder / "prefix")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(data))
        return executed_notebook(folder)


def outputs(notebook: nbformat.NotebookNode, cell: int) -> list[Any]:
    return list(notebook.cells[cell].outputs)


@pytest.mark.parametrize("cell", [1, 3])
def test_each_debugger_is_one_output_that_shows_its_finished_run(
    notebook: nbformat.NotebookNode, cell: int
) -> None:
    (output,) = outputs(notebook, cell)
    data = output["data"]
    # no widget view whose state no page can draw: the file shows the snapshot everywhere
    assert WIDGET_VIEW not in data
    text, html = data["text/plain"], data["text/html"]
    assert OUTCOME["final_answer"] in text
    assert "idle" not in text
    assert "waiting" not in text
    assert "finished" in html
    assert OUTCOME["final_answer"] in html
    assert "120 input" in html
    assert "15 output" in html


def test_the_saved_notebook_holds_the_front_end_once(notebook: nbformat.NotebookNode) -> None:
    states = notebook.metadata["widgets"][WIDGET_STATE]["state"]
    code = [s for s in states.values() if "code" in s["state"]]
    assert len(code) == 1, "one model holds the front end, for every debugger"
    assert len(code[0]["state"]["code"]) > 40_000  # it is the whole module
    debuggers = [s for s in states.values() if "saved_events" in s["state"]]
    assert len(debuggers) == 2
    for state in debuggers:
        assert len(json.dumps(state)) < 40_000


def test_the_html_export_shows_the_finished_runs_not_the_empty_debugger(
    notebook: nbformat.NotebookNode,
) -> None:
    page, _ = HTMLExporter().from_notebook_node(notebook)
    body = re.sub(r"<script\b.*?</script>", "", page, flags=re.S)  # what a reader sees
    assert body.count(OUTCOME["final_answer"]) >= 2
    assert "LoopDebugger: waiting for a run" not in body
    assert "waiting for a run" not in body


STARTED = [
    SETUP,
    "dbg = LoopDebugger()\ndbg",
    "task = dbg.start(agent('three', dbg), 'add 1 and 2')",
    "result = await task",
    "dbg2 = LoopDebugger()\ndbg2",
    "task2 = dbg2.start(agent('also three', dbg2), 'add 1 and 2 again')",
    "import asyncio\nawait asyncio.wait_for(asyncio.shield(task2), 60)\nlen(dbg2.events) > 0",
    "result2 = await task2",
]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    """Runs started with ``dbg.start`` in one cell and awaited in a later one (the
    tutorials' way), executed as ``nbconvert --execute`` does."""
    folder = tmp_path_factory.mktemp("started")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(install_kernel(folder / "prefix")))
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in STARTED])
        NotebookClient(
            notebook, kernel_name=KERNEL, timeout=180, resources={"metadata": {"path": str(folder)}}
        ).execute()
    return notebook


@pytest.mark.parametrize("cell", [1, 4])
def test_a_run_started_with_dbg_start_is_kept_in_the_stored_output(
    started: nbformat.NotebookNode, cell: int
) -> None:
    """The output of the cell that displayed the debugger ends as the finished run, though
    the run went on in a background task after that cell (and the next) had ended."""
    (output,) = outputs(started, cell)
    data = output["data"]
    assert WIDGET_VIEW not in data
    assert OUTCOME["final_answer"] in data["text/plain"]
    assert "idle" not in data["text/plain"]
    assert "waiting for a run" not in data["text/html"]
    assert "Agent loop debugger: finished" in data["text/html"]
    assert "120 input" in data["text/html"]
