"""``LoopDebugger(...)`` refuses a bad argument with one error naming the fix, and a
constructor that fails leaves nothing behind that could raise later."""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from ipywidgets.widgets import widget as ipywidget

from toolloop_lab import LoopDebugger
from toolloop_lab.errors import ConfigurationError

BAD: list[tuple[dict[str, Any], str, str]] = [
    ({"pause_on": "tool"}, "pause_on", "did you mean 'tools'?"),
    ({"pause_on": None}, "pause_on", "'off', 'model', 'tools', 'both'"),
    ({"max_text_chars": -1}, "max_text_chars", "LoopDebugger(max_text_chars=-1)"),
    ({"max_text_chars": "5"}, "max_text_chars", "a whole number >= 1"),
    ({"saved_state_bytes": 0}, "saved_state_bytes", "a whole number >= 1"),
    ({"max_runs": 0}, "max_runs", "LoopDebugger(max_runs=0)"),
    ({"max_messages_per_second": 0}, "max_messages_per_second", "a number > 0"),
    ({"max_messages_per_second": float("nan")}, "max_messages_per_second", "a number > 0"),
]


@pytest.fixture
def unraisable() -> Iterator[list[Any]]:
    """What ``__del__`` and other finalizers raised, which Python would only print."""
    caught: list[Any] = []
    before = sys.unraisablehook
    sys.unraisablehook = caught.append
    try:
        yield caught
    finally:
        sys.unraisablehook = before


@pytest.mark.parametrize(("kwargs", "field", "fix"), BAD, ids=[repr(b[0]) for b in BAD])
def test_a_bad_argument_is_one_error_naming_the_fix_and_leaves_nothing(
    kwargs: dict[str, Any], field: str, fix: str, unraisable: list[Any]
) -> None:
    gc.collect()
    widgets_before = len(ipywidget._instances)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with pytest.raises(ConfigurationError) as caught:
            LoopDebugger(**kwargs)
        assert (caught.value.field, fix in str(caught.value)) == (field, True), str(caught.value)
        assert isinstance(caught.value, ValueError)  # what it raised before, still caught
        del caught
        gc.collect()
    assert unraisable == []
    assert [str(w.message) for w in warned] == []
    assert len(ipywidget._instances) == widgets_before


def test_a_bad_pause_mode_set_later_is_refused_and_the_mode_stays() -> None:
    dbg = LoopDebugger(pause_on="model")
    with pytest.raises(ConfigurationError, match=r"dbg.pause_on = 'tool'.*did you mean 'tools'"):
        dbg.pause_on = "tool"  # type: ignore[assignment]
    assert dbg.pause_on == "model"
    dbg.close()
