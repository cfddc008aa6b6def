"""The widget, trace, runview and escape modules keep ``__all__`` sorted and complete."""

from __future__ import annotations

import importlib
import typing

import pytest

MODULES = [
    "toolloop_lab._support.escape",
    "toolloop_lab._runview",
    "toolloop_lab._trace",
    "toolloop_lab._widget",
    "toolloop_lab._widget.channel",
    "toolloop_lab._widget.coalesce",
    "toolloop_lab._widget.construct",
    "toolloop_lab._widget.control",
    "toolloop_lab._widget.debugger",
    "toolloop_lab._widget.display",
    "toolloop_lab._widget.figures",
    "toolloop_lab._widget.forks",
    "toolloop_lab._widget.page",
    "toolloop_lab._widget.pausing",
    "toolloop_lab._widget.requests",
    "toolloop_lab._widget.shown",
    "toolloop_lab._widget.snapshot",
    "toolloop_lab._widget.step",
    "toolloop_lab._widget.text",
    "toolloop_lab._widget.wire",
]


def isort_order(name: str) -> tuple[int, str]:
    """The order ruff keeps ``__all__`` in (RUF022): constants, classes, then the rest."""
    if name.isupper():
        return 0, name
    return (1 if name[:1].isupper() else 2), name


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=isort_order)
    assert all(hasattr(module, n) for n in exported)
    defined_here = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and getattr(v, "__module__", None) == name
        and not isinstance(v, typing.TypeVar)
    }
    assert defined_here <= set(exported), defined_here - set(exported)


def test_the_package_exports_the_debugger() -> None:
    # toolloop_lab.LoopDebugger is a stand-in that loads the widget on first use (see
    # tests/test_first_import.py); used, it is the widget class in every way a user sees
    import inspect

    import toolloop_lab
    from toolloop_lab._widget import LoopDebugger

    dbg = toolloop_lab.LoopDebugger(max_runs=3)
    assert isinstance(dbg, LoopDebugger)
    assert isinstance(dbg, toolloop_lab.LoopDebugger)
    assert issubclass(LoopDebugger, toolloop_lab.LoopDebugger)
    assert not isinstance(object(), toolloop_lab.LoopDebugger)
    assert toolloop_lab.LoopDebugger.__doc__ == LoopDebugger.__doc__
    assert inspect.signature(toolloop_lab.LoopDebugger) == inspect.signature(LoopDebugger)
    assert toolloop_lab.LoopDebugger.from_trace == LoopDebugger.from_trace


def test_a_class_may_build_on_the_exported_debugger() -> None:
    import toolloop_lab
    from toolloop_lab._widget import LoopDebugger

    class Mine(toolloop_lab.LoopDebugger):  # type: ignore[misc]
        """A debugger of a user's own."""

    assert issubclass(Mine, LoopDebugger)
    assert isinstance(Mine(), toolloop_lab.LoopDebugger)


def test_each_widget_module_does_one_job_in_under_400_lines() -> None:
    import ast
    from pathlib import Path

    import toolloop_lab._widget

    folder = Path(toolloop_lab._widget.__file__).parent
    for path in sorted(folder.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) < 400, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                assert node.end_lineno - node.lineno < 50, f"{path.name}: {node.name}"
