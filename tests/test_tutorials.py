"""The tutorials' stored outputs are what running them makes, and show the finished runs.

Strict nbval compares every output of ``notebooks/`` with the stored one. A tool result
printed in completion order passes only as long as the threads happen to finish in the
stored order; so every kernel nbval starts runs the IPython start-up file
``reversed_finish.py``, where the calls of a reply finish in the reverse of the order they
started in, and every tutorial must still match.

nbval compares a cell's output as that cell ends, and never applies a later update of it;
a debugger displayed before its run (the tutorials' way: display it, then run the agent
under it) is updated as the run ends, in a later cell. Those cells are tagged
``nbval-ignore-output``, and checked here instead: the stored output shows the finished
run, and is what executing the notebook (as ``nbconvert --execute`` does) leaves there.

Both read nbval's one execution of the notebooks (``notebookkit.py``): its verdicts, and
the notebook as that execution leaves it, each display update applied by nbclient's own
rules. Run alone, this module runs nbval once itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbval.plugin import get_sanitize_patterns
from notebookkit import TutorialRun

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


@pytest.mark.slow
def test_every_tutorial_output_holds_when_tool_calls_finish_the_other_way_round(
    tutorial_run: TutorialRun,
) -> None:
    tutorials = {n: r for n, r in tutorial_run.notebooks.items() if re.match(r"\d\d_", n)}
    assert tutorials, "no tutorial ran"
    failed = {n: r.failures for n, r in tutorials.items() if r.failures}
    assert failed == {}, f"outputs unlike the stored ones ({tutorial_run.how}): {failed}"
    assert tutorial_run.reversed_groups > 0, "the start-up file never reordered a group of calls"


def _debugger_outputs(path: Path) -> list[tuple[int, str]]:
    """(cell, what its stored outputs show) of every cell of ``path`` showing a debugger."""
    found = []
    notebook = nbformat.read(path, as_version=4)
    for number, cell in enumerate(notebook.cells):
        shown = ""
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            shown += f"{data.get('text/plain', '')}\n{data.get('text/html', '')}\n"
        if "Agent loop debugger:" in shown or "LoopDebugger:" in shown:
            found.append((number, shown))
    return found


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.name)
def test_a_tutorial_opened_without_running_shows_the_runs_its_debuggers_will_make(
    path: Path,
) -> None:
    """A visitor who opens a tutorial (on Binder, on GitHub) before running anything sees
    each debugger's finished run in its stored output, never an idle debugger."""
    for cell, shown in _debugger_outputs(path):
        assert "waiting for a run" not in shown, (path.name, cell)
        assert "LoopDebugger: waiting for a run" not in shown, (path.name, cell)
        assert "Agent loop debugger: " in shown, (path.name, cell, "no snapshot")


IGNORED = "nbval-ignore-output"


def _updated_debuggers(notebook: nbformat.NotebookNode) -> list[int]:
    """The cells nbval leaves to this module: a debugger displayed before its run."""
    return [
        number
        for number, cell in enumerate(notebook.cells)
        if IGNORED in cell.get("metadata", {}).get("tags", [])
        and any("LoopDebugger" in line for line in cell.source.splitlines())
    ]


def _shown(outputs: list[Any], patterns: list[tuple[str, str]]) -> list[dict[str, str]]:
    """What outputs show (text and HTML), with nbval's sanitizing applied."""
    shown = []
    for output in outputs:
        data = output.get("data", {})
        said = {}
        for mime in ("text/plain", "text/html"):
            text = data.get(mime, "")
            for regex, replace in patterns:
                text = re.sub(regex, replace, text)
            said[mime] = text
        shown.append(said)
    return shown


WITH_UPDATED = sorted(
    p
    for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")
    if _updated_debuggers(nbformat.read(p, as_version=4))
)


@pytest.mark.slow
@pytest.mark.parametrize("path", WITH_UPDATED, ids=lambda p: p.name)
def test_a_debugger_displayed_before_its_run_stores_what_executing_leaves(
    path: Path, tutorial_run: TutorialRun
) -> None:
    stored = nbformat.read(path, as_version=4)
    cells = _updated_debuggers(stored)
    fresh = tutorial_run.notebooks[path.name].executed()
    patterns = get_sanitize_patterns((NOTEBOOKS / "nbval_sanitize.cfg").read_text())
    for number in cells:
        want = _shown(stored.cells[number].outputs, patterns)
        got = _shown(fresh.cells[number].outputs, patterns)
        assert got == want, (path.name, number)
