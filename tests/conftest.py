"""Fixtures shared by the tool-loop tests (kept small; see loopkit.py for script builders)."""

from __future__ import annotations

import pytest
from langchain_core.tools import BaseTool, tool

from toolloop_lab.events import Event


@tool
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@pytest.fixture
def echo_tool() -> BaseTool:
    """The plain ``echo(text)`` tool."""
    return echo


@pytest.fixture
def recorder() -> list[Event]:
    """A list to pass as an observer (``recorder.append``); it collects every event."""
    return []
