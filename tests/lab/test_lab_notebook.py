"""The lab in a real Jupyter kernel: a sweep runs inside a cell, where an event loop is
already running, and its progress bar is a widget there, not text."""

from __future__ import annotations

import json
import textwrap

import nbformat
import pytest
from nbclient import NotebookClient

CELL = textwrap.dedent(
    """
    import asyncio
    asyncio.get_running_loop()  # a cell runs inside the kernel's event loop
    from toolloop_lab.lab import catalog, run_scenarios, arun_scenarios
    from toolloop_lab.lab import drop_volatile
    results = run_scenarios(catalog())
    again = await arun_scenarios(catalog(), progress=False)
    print(json.dumps({
        "rows": len(results.runs),
        "same": drop_volatile(results.runs).equals(drop_volatile(again.runs)),
        "prompt": int(results.runs["prompt_tokens"].sum()),
    }))
    """
)


@pytest.fixture(scope="module")
def outputs() -> list[dict[str, object]]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import json"), nbformat.v4.new_code_cell(CELL)]
    NotebookClient(nb, timeout=180, kernel_name="python3").execute()
    return [dict(o) for o in nb.cells[1].outputs]


def test_sweep_runs_in_a_cell(outputs: list[dict[str, object]]) -> None:
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert errors == []
    text = "".join(str(o.get("text", "")) for o in outputs if o.get("name") == "stdout")
    assert json.loads(text.strip().splitlines()[-1]) == {"rows": 11, "same": True, "prompt": 5270}


def test_progress_bar_is_a_widget_in_the_notebook(outputs: list[dict[str, object]]) -> None:
    widgets = [
        o
        for o in outputs
        if o.get("output_type") == "display_data"
        and isinstance(data := o.get("data"), dict)
        and "application/vnd.jupyter.widget-view+json" in data
    ]
    assert len(widgets) == 1
    stderr = "".join(str(o.get("text", "")) for o in outputs if o.get("name") == "stderr")
    assert "scenarios:" not in stderr  # no text bar next to the widget
