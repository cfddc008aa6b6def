"""Fixtures shared by the tool-loop tests (kept small; see loopkit.py for script builders).

Only what every test can use without an optional extra: the OpenTelemetry fixtures live in
``otelkit.py``, which the tests that need them load with ``pytest_plugins = ("otelkit",)``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langchain_core.tools import BaseTool, tool
from stubs.anthropic_stub import AnthropicStub
from stubs.openai_stub import OpenAIStub

from toolloop_lab.events import Event

# otelkit is imported by its tests and loaded as their plugin; rewrite its asserts either way
pytest.register_assert_rewrite("otelkit")


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


@pytest.fixture
def oai() -> Iterator[OpenAIStub]:
    """A loopback OpenAI stub that must end with nothing left over or unanswered.

    It streams when asked, 50 ms between events; set ``oai.chunk_interval = 0`` where the
    pace does not matter (see ``stubs/sse.py`` for holds and mid-stream faults).
    """
    with OpenAIStub() as stub:
        yield stub
    stub.assert_clean()


@pytest.fixture
def ant() -> Iterator[AnthropicStub]:
    """A loopback Anthropic stub that must end with nothing left over or unanswered.

    It streams when asked, 50 ms between events; set ``ant.chunk_interval = 0`` where the
    pace does not matter.
    """
    with AnthropicStub() as stub:
        yield stub
    stub.assert_clean()
