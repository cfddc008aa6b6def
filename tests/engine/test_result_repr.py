"""A cell ending in a run's result prints a short line, not every message and event."""

from __future__ import annotations

from langchain_core.tools import tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel


@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text * 500


def test_the_result_reads_as_one_short_line_with_its_figures() -> None:
    script = [calls(tool_call("echo", {"text": "x" * 200}, "e1")), final("y" * 5_000)]
    result = LLMAgent(ScriptedChatModel(script, model_name=MODEL), [echo]).run("go")
    shown = repr(result)
    assert len(shown) < 400, len(shown)
    assert "outcome='final_answer'" in shown
    assert "tool_rounds=1" in shown
    assert f"model_calls={result.model_calls}" in shown
    assert f"messages={len(result.messages)}" in shown
    assert f"events={len(result.events)}" in shown
    assert "yyy..." in shown  # the answer, clipped
    # everything stays one attribute away
    assert result.final_response.text == "y" * 5_000
