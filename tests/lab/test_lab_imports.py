"""Layering: the core loop never loads the lab, and the lab never loads a widget library.

The lab's report draws each run with the debugger's ES module (``toolloop_lab._widget.page``
and the event format in ``.wire``), which are plain Python; ipywidgets, anywidget and the
``LoopDebugger`` widget itself stay unloaded, so a sweep and its report work (and import
fast) where no widget front end exists.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_core_run_loads_no_lab_pandas_or_matplotlib() -> None:
    out = run(
        """
        import sys
        from toolloop_lab import LLMAgent, ScriptedChatModel
        LLMAgent(ScriptedChatModel(["hi"])).run("go")
        print(sorted(m for m in sys.modules if m.split(".")[0] in {"pandas", "matplotlib"}
                     or m.startswith("toolloop_lab.lab")))
        """
    )
    assert out.strip() == "[]"


WIDGET_LIBRARIES = ("ipywidgets", "anywidget", "toolloop_lab._widget.debugger")


def test_a_whole_lab_session_loads_no_widget_library() -> None:
    # the sweep and its frames load nothing of the widget; the report draws each run with
    # the debugger's module (widget.page), never the live widget or its frameworks
    out = run(
        f"""
        import sys
        from toolloop_lab.lab import catalog, run_scenarios
        def loaded():
            prefixes = ("toolloop_lab._widget", "ipywidgets", "anywidget")
            return sorted(m for m in sys.modules if m.startswith(prefixes))
        results = run_scenarios(catalog(), progress=False)
        results.runs, results.turns, results.rounds, results.tools, results.events
        print(loaded())
        page = results.report_html()
        assert 'class="toolloop-view"' in page  # the runs are drawn by the widget's module
        print(sorted(m for m in sys.modules if m.startswith({WIDGET_LIBRARIES!r})))
        """
    )
    swept, reported = out.strip().splitlines()
    assert swept == "[]"
    assert reported == "[]"
