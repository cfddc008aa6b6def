"""The words the tutorials and docs use for outcomes and reasons are the code's own.

Prose drifts: a tutorial once said outcome ``cost_exhausted`` beside a table that showed
``usd_budget_exhausted``, and outcome ``error`` where the frame said ``failed``. Every
"outcome `x`" and "reason `x`" in the notebooks' text, the README and ``docs/`` must name a
code of the event vocabulary (``toolloop_lab/words.json``, the one table every view reads)
or a reason the errors carry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from toolloop_lab.events import OUTCOMES

ROOT = Path(__file__).resolve().parents[1]
WORDS = json.loads((ROOT / "toolloop_lab" / "words.json").read_text(encoding="utf-8"))
OUTCOME_WORDS = set(OUTCOMES) | set(WORDS["outcome"])
REASON_WORDS = (
    set(WORDS["synthesis_reason"])
    | set(WORDS["failed"])
    | set(WORDS["not_run"])
    | {"budget_exhausted"}  # ExecutionError(kind="cost").reason, as the spec names it
)
OUTCOME = re.compile(r"outcomes? `([A-Za-z_]+)`|`([A-Za-z_]+)` outcome")
REASON = re.compile(r"reason `([A-Za-z_]+)`")


def prose() -> list[tuple[str, str]]:
    """(where, text) of every notebook's markdown and of the README and docs."""
    texts = [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    texts += [
        (str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in ROOT.glob("docs/*.md")
    ]
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        for n, cell in enumerate(notebook.cells):
            if cell.cell_type == "markdown":
                texts.append((f"{path.name} cell {n}", cell.source))
    return texts


@pytest.mark.parametrize(("where", "text"), [pytest.param(w, t, id=w) for w, t in prose()])
def test_outcomes_and_reasons_in_the_prose_are_the_codes_own(where: str, text: str) -> None:
    outcomes = {a or b for a, b in OUTCOME.findall(text)}
    reasons = set(REASON.findall(text))
    assert outcomes <= OUTCOME_WORDS, f"{where}: no such outcome {outcomes - OUTCOME_WORDS}"
    assert reasons <= REASON_WORDS, f"{where}: no such reason {reasons - REASON_WORDS}"


def test_the_check_finds_what_it_looks_for() -> None:
    found = {w for where, text in prose() for a, b in OUTCOME.findall(text) for w in (a, b) if w}
    assert "usd_budget_exhausted" in found
    assert {a or b for a, b in OUTCOME.findall("outcome `cost_exhausted`")} - OUTCOME_WORDS
