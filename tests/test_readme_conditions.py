"""The README's promises that hold only under a condition state it, and the condition is
the one the code and the front end really have.

* Saved notebooks: the widget state reaches the notebook file only when the front end
  saves widget state, JupyterLab's (and Notebook 7's) "Save Widget State Automatically"
  setting, off by default in the widget manager the package is used with.
* The bridge: a LangChain or LangGraph run is observed, never driven: nothing can pause it,
  and ``dbg.next_pause()`` says so at once while such a run goes on.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import comm
import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from loopkit import MODEL, MockComm, calls, final, tool_call

from toolloop_lab import LoopDebugger, ScriptedChatModel, watch
from toolloop_lab.errors import NoPauseError

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PLUGIN = Path(sys.prefix).joinpath(
    "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager/schemas",
    "@jupyter-widgets/jupyterlab-manager/plugin.json",
)


def section(start: str) -> str:
    """The README's text from ``start`` to the next bullet or heading."""
    at = README.index(start)
    end = re.search(r"\n(- \*\*|#)", README[at + 1 :])
    return README[at : at + 1 + (end.start() if end else len(README))]


def test_saved_notebooks_state_the_setting_and_its_default() -> None:
    said = " ".join(section("- **Saved notebooks.**").split())
    assert '"Save Widget State Automatically", off by default' in said
    # what each way of saving keeps, the default's error included
    assert "Executed without a widget front end" in said
    assert "without widget state** (their default)" in said
    assert '"Error displaying widget: model not found"' in said
    if not PLUGIN.exists():
        pytest.skip("the JupyterLab widget manager is not installed here")
    schema = json.loads(PLUGIN.read_text(encoding="utf-8"))
    assert schema["properties"]["saveState"]["default"] is False  # "off by default" holds


@pytest.fixture
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@pytest.mark.usefixtures("mock_comm")
async def test_a_bridged_run_is_observed_and_cannot_pause() -> None:
    said = " ".join(section("- **Observed, never driven**").split())
    assert "cannot hold it" in said
    assert "`next_pause()` raises `NoPauseError`" in said
    dbg = LoopDebugger(pause_on="both")
    refused: list[str] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers (and ask the debugger for a pause while the run goes on)."""
        with pytest.raises(NoPauseError) as caught:
            await dbg.next_pause(timeout=1)
        refused.append(str(caught.value))
        return a + b

    replies = [calls(tool_call("add", {"a": 2, "b": 3}, "c1")), final("5")]
    graph = create_agent(ScriptedChatModel(replies, model_name=MODEL), [add])
    with watch(dbg):
        await graph.ainvoke({"messages": [("user", "2 + 3?")]})
    assert len(refused) == 1
    assert "no run this debugger can pause" in refused[0]
    assert dbg.view.status == "finished"  # it ran to its end: nothing held it
    assert dbg.reach.to_dict()["pause"] is False
    dbg.close()
