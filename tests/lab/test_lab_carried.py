"""What each tool output really cost: ``carried_tokens`` and ``carried_cost_usd`` in
``lab.tools`` and ``lab.by_tool()``, checked against runs computed by hand.

The token count of one message is langchain-core's approximate counter (providers report a
request's total only): ceil((content + tool call id + role + name) / 4) characters, plus 3
per message. An ``echo`` of 400 characters answering ``call_1_1`` is
ceil((400 + 8 + 4 + 4) / 4) + 3 = 107 tokens.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab import AgentConfig, TokenPrice
from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios

PRICES = {"gpt-4o-mini": TokenPrice(Decimal(2), Decimal(8))}  # $2 / $8 per million
IN = Decimal(2) / 10**6


def tokens_of(content_chars: int, call_id: str, name: str) -> int:
    return math.ceil((content_chars + len(call_id) + len("tool") + len(name)) / 4) + 3


@pytest.fixture(scope="module")
def known() -> LabResults:
    """Tokens per round given: 50, 300 and 600 in; 20, 20 and 10 out."""
    scenario = Scenario.scripted(
        "known",
        [
            Reply.call("echo", {"text": "a" * 400}, input_tokens=50, output_tokens=20),
            Reply.call("echo", {"text": "b" * 800}, input_tokens=300, output_tokens=20),
            Reply.final("done", input_tokens=600, output_tokens=10),
        ],
        prices=PRICES,
    )
    return run_scenarios([scenario], progress=False)


def test_carried_tokens_and_cost_are_the_hand_computed_ones(known: LabResults) -> None:
    tools = known.tools.set_index("tool_call_id")
    first, second = tokens_of(400, "call_1_1", "echo"), tokens_of(800, "call_2_1", "echo")
    assert (first, second) == (107, 207)
    assert tools.loc["call_1_1", "output_tokens"] == first
    assert tools.loc["call_1_1", "times_sent"] == 2  # rounds 2 and 3
    assert tools.loc["call_1_1", "carried_tokens"] == 2 * first
    assert tools.loc["call_1_1", "carried_cost_usd"] == pytest.approx(float(2 * first * IN))
    assert tools.loc["call_2_1", "times_sent"] == 1  # round 3
    assert tools.loc["call_2_1", "carried_cost_usd"] == pytest.approx(float(second * IN))
    assert tools["carried_estimated"].all()


def test_carried_cost_is_part_of_what_the_later_calls_paid(known: LabResults) -> None:
    rounds = known.rounds.set_index("round")
    tools = known.tools
    # each later call's input holds the outputs carried into it, at that call's price
    paid_in = {n: float(rounds.loc[n, "prompt_tokens"] * IN) for n in (2, 3)}
    carried_into_3 = float((107 + 207) * IN)
    assert carried_into_3 <= paid_in[3]
    assert float(107 * IN) <= paid_in[2]
    assert tools["carried_cost_usd"].sum() == pytest.approx(float((2 * 107 + 207) * IN))
    assert tools["carried_cost_usd"].sum() <= known.runs["cost_usd"].sum()


def blob_tool() -> BaseTool:
    def blob(size: int) -> str:
        """Returns size characters."""
        return "x" * size

    return StructuredTool.from_function(blob)


def _estimated_run(size: int) -> LabResults:
    """A run whose usage the scripted model counts from the messages it is sent, so what
    it paid follows the tool output's size."""
    scenario = Scenario.scripted(
        f"blob_{size}",
        [Reply.call("blob", {"size": size}), Reply.call("echo", {"text": "hi"}), Reply.final("ok")],
        tools=["echo", blob_tool],
        prices=PRICES,
    )
    return run_scenarios([scenario], progress=False)


def test_carried_cost_agrees_with_what_the_run_paid() -> None:
    small, large = _estimated_run(1000), _estimated_run(3000)
    paid = large.runs["cost_usd"].iloc[0] - small.runs["cost_usd"].iloc[0]
    carried = large.tools["carried_cost_usd"].iloc[0] - small.tools["carried_cost_usd"].iloc[0]
    assert large.tools["times_sent"].iloc[0] == 2
    assert large.tools["carried_tokens"].iloc[0] - small.tools["carried_tokens"].iloc[0] == 2 * 500
    assert paid == pytest.approx(float(2 * 500 * IN))  # 2,000 characters more, sent twice
    assert carried == pytest.approx(paid)
    prompt = large.runs["prompt_tokens"].iloc[0] - small.runs["prompt_tokens"].iloc[0]
    assert prompt == 2 * 500


def test_by_tool_sums_the_calls_per_tool_dearest_first() -> None:
    results = _estimated_run(3000)
    by_tool = results.by_tool()
    assert list(by_tool["name"]) == ["blob", "echo"]
    tools = results.tools.set_index("name")
    assert by_tool.set_index("name").loc["blob", "carried_cost_usd"] == pytest.approx(
        tools.loc["blob", "carried_cost_usd"]
    )
    assert by_tool["calls"].tolist() == [1, 1]


def test_pruning_savings_read_in_the_same_money() -> None:
    scenario = Scenario.scripted(
        "pruned",
        [
            Reply.call("echo", {"text": "c" * 4000}, input_tokens=100, output_tokens=10),
            Reply.call("echo", {"text": "d"}, input_tokens=200, output_tokens=10),
            Reply.final("done", input_tokens=300, output_tokens=10),
        ],
        pruning_replies=[Reply.final("short", input_tokens=1000, output_tokens=5)],
        config=AgentConfig(prune_tools=("echo",), prune_min_chars=100),
        prices=PRICES,
    )
    tools = run_scenarios([scenario], progress=False).tools.set_index("tool_call_id")
    pruned = tools.loc["call_1_1"]
    assert bool(pruned["pruned"])
    assert pruned["times_sent"] == 2
    assert pruned["output_tokens"] == tokens_of(len("short"), "call_1_1", "echo")
    saved = pruned["tokens_saved_by_pruning"] * 2 * IN
    assert pruned["pruning_saved_usd"] == pytest.approx(float(saved))
    assert pruned["pruning_cost_usd"] == pytest.approx(float(1000 * IN + 5 * Decimal(8) / 10**6))
    assert tools.loc["call_2_1", "pruning_saved_usd"] == 0


def test_an_unpriced_later_call_makes_the_carried_cost_unknown() -> None:
    scenario = Scenario.scripted(
        "unpriced",
        [Reply.call("echo", {"text": "a"}), Reply.final("ok")],
        model_name="a-model-nobody-prices",
    )
    tools = run_scenarios([scenario], progress=False).tools
    assert tools["carried_tokens"].iloc[0] > 0
    assert math.isnan(tools["carried_cost_usd"].iloc[0])


def test_the_report_says_on_each_tool_call_what_its_output_cost_later(known: LabResults) -> None:
    html = known.report_html()
    assert "sent 2 more times: 214 tokens, $0.000428 (estimated)" in html
    assert "sent 1 more time: 207 tokens, $0.000414 (estimated)" in html
