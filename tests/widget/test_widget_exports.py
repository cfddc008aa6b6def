"""``toolloop_lab.LoopDebugger`` is a stand-in for the widget class, the same in every way a
user sees (its widget library loads on first use: ``tests/test_first_import.py``)."""

from __future__ import annotations


def test_the_package_exports_the_debugger() -> None:
    # toolloop_lab.LoopDebugger is a stand-in that loads the widget on first use (see
    # tests/test_first_import.py); used, it is the widget class in every way a user sees
    import inspect

    import toolloop_lab
    from toolloop_lab._widget.debugger import LoopDebugger

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
    from toolloop_lab._widget.debugger import LoopDebugger

    class Mine(toolloop_lab.LoopDebugger):  # type: ignore[misc]
        """A debugger of a user's own."""

    assert issubclass(Mine, LoopDebugger)
    assert isinstance(Mine(), toolloop_lab.LoopDebugger)
