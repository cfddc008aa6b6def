"""A scenario whose tool runs a sub-agent: the sub-agent's run is kept with the scenario
(its events reach the sweep with no wiring), is no turn of its own, and the frames show
the scenario's own spend beside its spend with the nested runs."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from langchain_core.tools import BaseTool, tool

from toolloop_lab import LLMAgent, RunView, ScriptedChatModel
from toolloop_lab.events import LoopStarted
from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios

MODEL = "gpt-4o-mini"


def research_tool() -> BaseTool:
    """A tool that asks a helper agent (a fresh one per run, as a factory must give)."""
    helper = LLMAgent(
        ScriptedChatModel(
            [Reply.final("the answer is 42", input_tokens=400, output_tokens=30).to_script_item(0)],
            model_name=MODEL,
        )
    )

    @tool
    async def research(question: str) -> str:
        """Ask the research helper."""
        return (await helper.arun(question, name="researcher")).final_response.text

    return research


NESTED = Scenario.scripted(
    "nested",
    [
        Reply.call("research", {"question": "what?"}, input_tokens=100, output_tokens=10),
        Reply.final("It is 42.", input_tokens=150, output_tokens=12),
    ],
    tools=(research_tool,),
)


@pytest.fixture(scope="module")
def results() -> LabResults:
    return run_scenarios([NESTED], progress=False)


def test_the_sub_agents_run_is_kept_and_is_no_turn(results: LabResults) -> None:
    (record,) = results
    starts = [e for e in record.events if isinstance(e, LoopStarted)]
    assert [s.name for s in starts] == ["nested", "researcher"]
    assert starts[1].parent_run_id == starts[0].run_id
    assert len(record.turn_events()) == 1
    assert record.outcome == "final_answer"
    assert record.final_text == "It is 42."
    ((helper,),) = record.nested_views()
    assert isinstance(helper, RunView)
    assert helper.final_text == "the answer is 42"
    tools = results.tools
    assert tools["status"].tolist() == ["success"]  # the tool got the helper's answer


def test_frames_show_own_spend_and_spend_with_nested_runs(results: LabResults) -> None:
    for frame in (results.runs, results.turns):
        row = frame.iloc[0]
        assert row["name"] == "nested"
        assert row["total_tokens"] == 100 + 10 + 150 + 12
        assert row["nested_runs"] == 1
        assert row["total_tokens_with_nested"] == row["total_tokens"] + 400 + 30
        assert row["cost_usd_with_nested"] > row["cost_usd"] > 0
        assert not math.isnan(row["cost_usd_with_nested"])


def test_a_saved_sweep_keeps_its_nested_runs(results: LabResults, tmp_path: Path) -> None:
    loaded = LabResults.load(results.save(tmp_path / "nested.jsonl"))
    pd.testing.assert_frame_equal(loaded.runs, results.runs)
    pd.testing.assert_frame_equal(loaded.turns, results.turns)
