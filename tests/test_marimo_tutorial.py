"""The marimo tutorial runs: ``marimo export html`` executes every cell in marimo's own
runtime (the debugger shown as an anywidget, a top-level ``await``) and keeps each cell's
output; the figures it prints are the Jupyter quickstart's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "notebooks" / "marimo" / "01_quickstart.py"


def _need_marimo() -> None:
    try:
        import marimo  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("marimo is not installed (it is in the test extra)")
        pytest.skip("marimo is not installed")


def _console(html: str) -> str:
    """Everything the cells printed, as the exported page keeps it."""
    texts = re.findall(r'"name": "stdout", "text": ("(?:[^"\\]|\\.)*")', html)
    return "".join(json.loads(t) for t in texts)


def test_the_marimo_quickstart_runs_and_prints_the_quickstarts_figures(tmp_path: Path) -> None:
    _need_marimo()
    out = tmp_path / "quickstart.html"
    # a copy: marimo keeps a session cache beside the file it runs
    notebook = tmp_path / TUTORIAL.name
    notebook.write_text(TUTORIAL.read_text(encoding="utf-8"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "export", "html", str(notebook), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = _console(out.read_text(encoding="utf-8"))
    assert "revenue grew 12% quarter on quarter and churn fell to 2.1%." in printed
    assert re.search(r"rounds:\s+2\n", printed), printed
    assert re.search(r"model calls:\s+4\n", printed), printed
    assert re.search(r"synthesis:\s+True - token_budget\n", printed), printed
    assert re.search(r"input tokens:\s+6000\n", printed), printed
    assert "quarterly.html" in printed
    assert "## Run `quarterly`: Finished" in printed
    assert "Traceback" not in printed
