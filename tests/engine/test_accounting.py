"""Accounting: exact token sums, costs as genai-prices computes them, and estimated usage
that is flagged, never silently zero (issue 2, "Accounting")."""

from __future__ import annotations

from decimal import Decimal

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, reference_cost, tool_call, usage
from pydantic import TypeAdapter

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, TokenPrice, Usage
from toolloop_lab._spend.pricing import cost_of
from toolloop_lab._spend.usage import estimate_tokens
from toolloop_lab.events import LoopFinished, ModelCalled

CLAUDE = "claude-3-5-sonnet-20241022"


async def test_cached_input_is_priced_like_genai_prices(echo_tool: BaseTool) -> None:
    first = AIMessage(
        "",
        tool_calls=[tool_call("echo", {"text": "a"}, "c1")],
        usage_metadata=usage(4000, 300, cache_write=3000),
    )
    second = AIMessage("done", usage_metadata=usage(4200, 120, cache_read=3000))
    model = ScriptedChatModel([first, second], model_name=CLAUDE)
    result = await LLMAgent(model, [echo_tool]).arun("go")

    assert result.cost_usd == reference_cost(
        [(4000, 300, 0, 3000), (4200, 120, 3000, 0)], model=CLAUDE
    )
    # cache writes cost more than plain input, cache reads less
    assert result.cost_usd != reference_cost([(4000, 300), (4200, 120)], model=CLAUDE)
    assert (result.usage.cache_read_tokens, result.usage.cache_write_tokens) == (3000, 3000)
    assert (result.accumulated_prompt, result.accumulated_completion) == (8200, 420)


@pytest.mark.parametrize("tokens", [(1, 1), (1234, 567), (250_000, 9_000)])
def test_cost_of_matches_genai_prices(tokens: tuple[int, int]) -> None:
    assert cost_of(Usage(*tokens), MODEL) == reference_cost([tokens])
    assert cost_of(Usage(*tokens), "in-house-model-7") is None
    assert cost_of(Usage(*tokens), None) is None


async def test_per_call_usage_and_running_totals_in_events(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(11, 2)),
            calls(tool_call("echo", {"text": "b"}, "c2"), tokens=(23, 4)),
            final("ok", (37, 8)),
        ],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool]).arun("go")
    model_events = [e for e in result.events if isinstance(e, ModelCalled)]
    assert [(e.usage.input_tokens, e.usage.output_tokens) for e in model_events] == [
        (11, 2),
        (23, 4),
        (37, 8),
    ]
    assert [e.accumulated.input_tokens for e in model_events] == [11, 34, 71]
    assert [e.accumulated.cost_usd for e in model_events] == [
        reference_cost([(11, 2)]),
        reference_cost([(11, 2), (23, 4)]),
        reference_cost([(11, 2), (23, 4), (37, 8)]),
    ]
    finished = result.events[-1]
    assert isinstance(finished, LoopFinished)
    assert finished.usage == result.usage


async def test_missing_usage_is_estimated_flagged_and_never_zero(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [
            AIMessage("", tool_calls=[tool_call("echo", {"text": "a"}, "c1")]),
            AIMessage("answer without usage"),
        ],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool]).arun("Count me, please.")

    assert result.usage_estimated is True
    expected_in = sum(count_tokens_approximately(list(c.messages)) for c in model.calls)
    assert result.accumulated_prompt == expected_in > 0
    replies = [m for m in result.messages if isinstance(m, AIMessage)]
    assert result.accumulated_completion == sum(estimate_tokens(m) for m in replies) > 0
    model_events = [e for e in result.events if isinstance(e, ModelCalled)]
    assert [e.usage.estimated for e in model_events] == [True, True]
    assert all(e.usage.input_tokens > 0 and e.usage.output_tokens > 0 for e in model_events)


async def test_a_provider_without_usage_is_estimated_by_the_loop() -> None:
    # a langchain-core fake model that reports no usage at all (not our scripted model)
    model = GenericFakeChatModel(messages=iter([AIMessage("plain reply")]))
    result = await LLMAgent(model).arun("What is two plus two?")

    assert result.final_response.usage_metadata is None
    assert result.usage_estimated is True
    assert result.accumulated_prompt == count_tokens_approximately(
        [HumanMessage("What is two plus two?")]
    )
    assert result.accumulated_completion == estimate_tokens(AIMessage("plain reply"))
    assert result.cost_usd is None  # the fake model has no name to price


def test_reported_zero_counts_for_real_text_are_estimated() -> None:
    prompt = [HumanMessage("A question with several words in it.")]
    reply = AIMessage("A reply with words.", usage_metadata=usage(0, 0))
    counted = Usage.from_ai_message(reply, prompt=prompt)
    assert counted.estimated is True
    assert counted.input_tokens == count_tokens_approximately(prompt)
    assert counted.output_tokens == estimate_tokens(reply) > 0


def test_reported_counts_are_used_as_they_are() -> None:
    reply = AIMessage("ok", usage_metadata=usage(12, 3, cache_read=5))
    counted = Usage.from_ai_message(reply, prompt=[HumanMessage("q")])
    assert counted == Usage(12, 3, 5, 0, 1, False, Decimal(0))


def test_invalid_cache_counts_are_dropped() -> None:
    reply = AIMessage(
        "ok",
        usage_metadata={
            "input_tokens": 10,
            "output_tokens": 2,
            "total_tokens": 12,
            "input_token_details": {"cache_read": 50},
        },
    )
    assert Usage.from_ai_message(reply).cache_read_tokens == 0


def test_usage_adds_and_unknown_cost_stays_unknown() -> None:
    a = Usage(10, 2, requests=1, cost_usd=Decimal("0.5"))
    b = Usage(5, 1, 2, 1, requests=1, estimated=True, cost_usd=Decimal("0.25"))
    total = a + b
    assert total == Usage(15, 3, 2, 1, 2, True, Decimal("0.75"))
    assert total.total_tokens == 18
    assert (a + Usage(1, 1, cost_usd=None)).cost_usd is None
    assert TypeAdapter(Usage).validate_python(total.to_dict()) == total


async def test_counts_are_exact_with_estimated_and_reported_calls_mixed(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(40, 6)),
            AIMessage("no usage here"),
        ],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool], AgentConfig()).arun("go")
    second_in = count_tokens_approximately(list(model.calls[1].messages))
    assert result.accumulated_prompt == 40 + second_in
    assert result.usage_estimated is True
    assert result.messages[2] == ToolMessage(
        "a", tool_call_id="c1", name="echo", status="success", id=result.messages[2].id
    )


async def test_the_cost_splits_into_input_and_output(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(1_000, 100)),
            AIMessage("done", usage_metadata=usage(2_000, 50, cache_read=500)),
        ],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool]).arun("go")
    total = result.usage
    assert total.input_cost_usd is not None
    assert total.output_cost_usd is not None
    assert total.input_cost_usd + total.output_cost_usd == total.cost_usd
    # the input part is what the same call would cost with no output, and the other way round
    inputs_only = reference_cost([(1_000, 0), (2_000, 0, 500, 0)])
    outputs_only = reference_cost([(0, 100), (0, 50)])
    assert total.input_cost_usd == inputs_only
    assert total.output_cost_usd == outputs_only


def test_a_flat_price_splits_too_and_an_unknown_split_stays_unknown() -> None:
    price = TokenPrice(input_mtok="2", output_mtok="8", cache_read_mtok="1")
    used = Usage(1_000_000, 500_000, cache_read_tokens=400_000, requests=1)
    priced = used.with_cost(price.price(used))
    assert (priced.input_cost_usd, priced.output_cost_usd) == (Decimal("1.6"), Decimal("4"))
    assert priced.cost_usd == Decimal("5.6")
    unsplit = used.with_cost(Decimal("5.6"))  # priced before splits were recorded
    assert (unsplit.input_cost_usd, unsplit.output_cost_usd) == (None, None)
    assert (priced + unsplit).input_cost_usd is None
    assert (priced + unsplit).cost_usd == Decimal("11.2")
    assert (Usage() + priced).input_cost_usd == Decimal("1.6")  # nothing spent adds nothing
    assert (priced + Usage(1, 1, requests=1, cost_usd=None)).output_cost_usd is None
