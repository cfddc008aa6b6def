"""What renders without a widget front end imports no widget library.

The text repr, the static snapshot, the event format and the static page (the report's
view) are plain Python: they must work (and stay cheap to import) where no widget front
end exists. Each import runs in a fresh interpreter, so modules other tests loaded cannot
hide an import.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

RENDERERS = [
    "toolloop_lab._widget.text",
    "toolloop_lab._widget.snapshot",
    "toolloop_lab._widget.wire",
    "toolloop_lab._widget.page",
    "toolloop_lab._widget.requests",
    "toolloop_lab.lab._report",
]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("module", RENDERERS)
def test_importing_a_renderer_loads_no_widget_library(module: str) -> None:
    done = _run(
        f"import sys, {module}\n"
        "loaded = [m for m in ('ipywidgets', 'anywidget') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "print('clean')"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "clean"


def test_the_widget_package_itself_loads_no_widget_library() -> None:
    done = _run(
        "import sys\n"
        "import toolloop_lab._widget\n"
        "assert 'ipywidgets' not in sys.modules, 'loaded before use'\n"
        "from toolloop_lab._widget.debugger import LoopDebugger\n"
        "assert 'ipywidgets' in sys.modules\n"
        "print('ok')"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
