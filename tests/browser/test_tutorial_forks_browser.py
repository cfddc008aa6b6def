""" "Fork from here" on a tutorial's run, clicked in a real JupyterLab and Notebook 7.

The quickstart tutorial runs a scripted model whose run plays every reply of its script.
Forking that run from its round 2 runs the fork on the same model, from the reply the
original got there: the fork ends answered, as the original did, never "Failed, 0 model
calls". A debugger whose agent has no reply left for a fork refuses the click, and says why
next to the button, before any call. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from browser.jupyterkit import KERNEL, REPO, Jupyter, ours, run_all_cells, shot, wait_idle, widget

pytestmark = pytest.mark.browser

QUICKSTART = REPO / "notebooks" / "01_quickstart.ipynb"

REFUSING = [
    """spent = ScriptedChatModel(["I answered something else."], model_name="gpt-4o-mini")
spent.invoke("Something else.")  # its one reply is played: it has none left for a fork
refusing = LoopDebugger(fork_with=LLMAgent(spent, tools))
refusing""",
    """again = LLMAgent(
    ScriptedChatModel(model.script, model_name="gpt-4o-mini"),
    tools,
    config,
    pruning_model=ScriptedChatModel(pruner.script, model_name="gpt-4o-mini"),
)
rerun = await refusing.start(again, "How did revenue and churn do last quarter?")""",
]


def quickstart_with_a_refusing_debugger(root: Path, name: str) -> str:
    """The quickstart, outputs cleared, then a debugger whose fork agent cannot answer."""
    notebook = nbformat.read(QUICKSTART, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    notebook.cells.extend(nbformat.v4.new_code_cell(s) for s in REFUSING)
    notebook.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL, "language": "python"}
    nbformat.write(notebook, root / name)
    return name


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_fork_from_here_on_the_quickstarts_run_runs_and_a_fork_that_cannot_is_refused(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    name = quickstart_with_a_refusing_debugger(jupyter.root, f"quickstart_fork_{ui}.ipynb")
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        quick, refusing = widget(page, 0), widget(page, 1)
        for view in (quick, refusing):
            view.locator(".tl-badge", has_text="Finished").wait_for()
        wait_idle(page)

        # a fork that cannot run: refused where it was clicked, with the reason
        refusing.locator(".tl-row[data-n='2']").click()
        refusing.locator(".tl-detail").get_by_role("button", name="Fork from here").click()
        said = refusing.locator(".tl-fork-msg", has_text="Cannot fork here (model)")
        said.wait_for()
        assert "has no reply for the fork" in said.inner_text()
        assert "fork with a model that can answer" in said.inner_text()
        assert page.locator(".tl-forkbox:visible").count() == 0  # no fork's debugger
        refusing.scroll_into_view_if_needed()
        shot(refusing, f"{ui}_fork_refused_model")

        # the quickstart's own run, forked at round 2: it runs, and ends as the original
        quick.locator(".tl-row[data-n='2']").click()
        quick.locator(".tl-detail").get_by_role("button", name="Fork from here").click()
        quick.locator(".tl-fork-msg", has_text="the fork runs in a new debugger below").wait_for()
        forked = widget(page, 1)
        forked.locator(".tl-forkbox", has_text="Fork of a run at round 2.").wait_for()
        forked.get_by_role("button", name="Continue").click()
        forked.locator(".tl-badge", has_text="Finished").wait_for()
        assert "Failed" not in forked.locator(".tl-head").inner_text()
        box = forked.locator(".tl-cmpview")
        box.locator(".tl-block-title", has_text="The fork next to the original").wait_for()
        assert "Final answer: revenue grew 12%" in forked.inner_text()
        forked.scroll_into_view_if_needed()
        shot(forked, f"{ui}_quickstart_fork_finished")
        assert page.dialogs == []
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"{ui}_quickstart_fork_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
