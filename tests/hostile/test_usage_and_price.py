"""Usage and price: what providers report about tokens (missing, negative, inconsistent,
odd types), model names nobody prices, and the float edges of USD limits.

Counts are never silently zero and never negative: an unusable count is estimated (and
flagged ``estimated``), cache counts that cannot all be true are dropped (flagged too).
Costs are Decimal end to end and compared in Decimal; a limit of 0 blocks the first call.

Expected token estimates come from langchain-core's own ``count_tokens_approximately`` and
expected costs from genai-prices' ``calc_price`` (tests/loopkit.py), never from the code
under test. Related cases elsewhere: tests/engine/test_accounting.py,
tests/engine/test_usd_budget.py.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from hostilekit import check_partial, check_result, kinds, only
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, reference_cost, tool_call, usage

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    TokenPrice,
    ToolLoopResult,
    Usage,
    usd_budget,
)
from toolloop_lab._spend.pricing import call_cost, cost_of, known_price
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import BudgetGate, ModelCalled

PROMPT = [HumanMessage("go")]
ANSWER = "The figures are in."


def _expected_in() -> int:
    return count_tokens_approximately(PROMPT)


def _expected_out(reply: AIMessage) -> int:
    return max(1, count_tokens_approximately([reply], extra_tokens_per_message=0, count_name=False))


async def _answer_with(meta: Any, model_name: str = MODEL) -> tuple[ToolLoopResult, ModelCalled]:
    reply = AIMessage(ANSWER).model_copy(update={"usage_metadata": meta})
    model = ScriptedChatModel([reply], model_name=model_name)
    result = await LLMAgent(model).arun("go")
    check_result(result)
    return result, only(e for e in result.events if isinstance(e, ModelCalled))


# -- missing, negative, odd and inconsistent usage ----------------------------------------

UNUSABLE: dict[str, Any] = {
    "empty": {},
    "negative": {"input_tokens": -5, "output_tokens": -1, "total_tokens": -6},
    "bool": {"input_tokens": True, "output_tokens": False, "total_tokens": 1},
    "text": {"input_tokens": "12", "output_tokens": "3", "total_tokens": "15"},
    "fractional": {"input_tokens": 12.5, "output_tokens": 3.2, "total_tokens": 15.7},
    "nan": {"input_tokens": math.nan, "output_tokens": math.inf, "total_tokens": 0},
    "zeros-for-real-text": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
    # no event can hold a count past 2**53 (the trace reader refuses it): not a count
    "past-the-schema": {"input_tokens": 2**62, "output_tokens": 2**53 + 1, "total_tokens": 0},
}


@pytest.mark.parametrize("name", list(UNUSABLE))
async def test_unusable_counts_are_estimated_and_flagged(name: str) -> None:
    result, called = await _answer_with(UNUSABLE[name])
    expected = Usage(
        input_tokens=_expected_in(),
        output_tokens=_expected_out(AIMessage(ANSWER)),
        requests=1,
        estimated=True,
        cost_usd=reference_cost([(_expected_in(), _expected_out(AIMessage(ANSWER)))]),
        input_cost_usd=reference_cost([(_expected_in(), 0)]),
    )
    assert called.usage == expected
    assert result.usage == expected
    assert result.usage_estimated is True


async def test_integral_float_counts_are_the_counts_they_spell() -> None:
    _, called = await _answer_with(
        {"input_tokens": 120.0, "output_tokens": 30.0, "total_tokens": 150.0}
    )
    assert (called.usage.input_tokens, called.usage.output_tokens) == (120, 30)
    assert called.usage.estimated is False


async def test_a_wrong_total_is_ignored_the_total_is_always_in_plus_out() -> None:
    _, called = await _answer_with({"input_tokens": 120, "output_tokens": 30, "total_tokens": 9999})
    assert (called.usage.total_tokens, called.usage.estimated) == (150, False)
    assert called.usage.cost_usd == reference_cost([(120, 30)])


CACHE: list[tuple[str, dict[str, Any], tuple[int, int], bool]] = [
    ("read-over-input", {"cache_read": 500}, (0, 0), True),
    ("read-and-write-over-input", {"cache_read": 80, "cache_creation": 80}, (80, 0), True),
    ("negative", {"cache_read": -3, "cache_creation": -1}, (0, 0), True),
    ("text", {"cache_read": "40"}, (0, 0), True),
    ("consistent", {"cache_read": 60, "cache_creation": 40}, (60, 40), False),
    ("details-not-a-mapping", "cache_read=5", (0, 0), False),
]


@pytest.mark.parametrize(
    ("details", "kept", "flagged"), [c[1:] for c in CACHE], ids=[c[0] for c in CACHE]
)
async def test_cache_counts_that_cannot_all_be_true(
    details: Any, kept: tuple[int, int], flagged: bool
) -> None:
    meta = {
        "input_tokens": 100,
        "output_tokens": 10,
        "total_tokens": 110,
        "input_token_details": details,
    }
    _, called = await _answer_with(meta)
    read, write = kept
    assert (called.usage.cache_read_tokens, called.usage.cache_write_tokens) == kept
    assert called.usage.estimated is flagged
    # never a negative uncached share: priced exactly as genai-prices prices what was kept
    assert called.usage.cost_usd == reference_cost([(100, 10, read, write)])


async def test_huge_counts_stay_exact_and_trip_the_budget(echo_tool: BaseTool) -> None:
    huge = 10**15
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(huge, 1)), final("never")],
        model_name=MODEL,
    )
    with usd_budget(1_000), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    check_partial(info.value)
    assert info.value.reason == "budget_exhausted"
    assert info.value.accumulated_prompt == huge
    assert info.value.cost_usd == reference_cost([(huge, 1)])


# -- unknown model names ------------------------------------------------------------------

UNKNOWN_NAMES = [
    "in-house-llm-7",
    "gpt-4o-mini ",  # a stray space
    "gpt-4o-mini\x00",
    "",
    "x" * 5000,
    "<img src=x onerror=alert(1)>",
    "../../etc/passwd",
]


@pytest.mark.parametrize("name", UNKNOWN_NAMES, ids=range(len(UNKNOWN_NAMES)))
def test_an_unknown_name_is_simply_unpriced(name: str) -> None:
    assert known_price(name) is False
    assert cost_of(Usage(10, 5), name) is None


async def test_an_unknown_model_without_a_budget_runs_with_unknown_cost(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1")), final("ok")], model_name="in-house-llm-7"
    )
    result = await LLMAgent(model, [echo_tool]).arun("go")
    check_result(result)
    called = [e for e in result.events if isinstance(e, ModelCalled)]
    assert [(c.usage.cost_usd, c.accumulated.cost_usd) for c in called] == [(None, None)] * 2
    assert result.cost_usd is None  # unknown, never zero
    assert result.accumulated_prompt == 20


async def test_an_unknown_model_under_a_budget_fails_before_any_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name="in-house-llm-7")
    with usd_budget(5), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    failed = check_partial(info.value, started=False)
    assert (info.value.kind, info.value.reason, failed.reason) == ("cost", "unpriced", "unpriced")
    assert model.calls == ()


async def test_a_known_reply_name_does_not_unlock_an_unknown_configured_model(
    echo_tool: BaseTool,
) -> None:
    # the reply would say gpt-4o-mini, but nothing is spent on a guess: fail closed
    reply = AIMessage("x", response_metadata={"model_name": MODEL}, usage_metadata=usage(1, 1))
    model = ScriptedChatModel([reply], model_name="in-house-llm-7")
    with usd_budget(5), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert info.value.reason == "unpriced"
    assert model.calls == ()


async def test_an_unknown_dated_reply_name_falls_back_to_the_configured_name(
    echo_tool: BaseTool,
) -> None:
    reply = AIMessage(
        "x",
        response_metadata={"model_name": "gpt-4o-mini-2099-01-01"},
        usage_metadata=usage(700, 70),
    )
    model = ScriptedChatModel([reply], model_name=MODEL)
    with usd_budget(5):
        result = await LLMAgent(model, [echo_tool]).arun("go")
    check_result(result)
    called = only(e for e in result.events if isinstance(e, ModelCalled))
    assert called.model_name == "gpt-4o-mini-2099-01-01"
    assert result.cost_usd == reference_cost([(700, 70)])


def test_call_cost_never_prices_an_empty_or_missing_name() -> None:
    assert call_cost(Usage(10, 5), [None, "", "in-house-llm-7"]) is None


# -- float edge cases: Decimal all the way ------------------------------------------------


@pytest.mark.parametrize(
    "limit", [0, 0.0, "0", Decimal("0E-10"), -0.0], ids=["int", "float", "str", "decimal", "neg0"]
)
async def test_a_zero_limit_blocks_the_first_call(limit: Any, echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    with usd_budget(limit), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    failed = check_partial(info.value)
    assert (info.value.kind, info.value.reason, info.value.any_invocation_made) == (
        "cost",
        "budget_exhausted",
        False,
    )
    assert model.calls == ()
    gate = only(e for e in info.value.events if isinstance(e, BudgetGate))
    assert (gate.stage, gate.passed, gate.spent, gate.limit) == ("before_call", False, 0, 0)
    assert kinds(info.value.events) == ["loop_start", "round_start", "budget_gate", "loop_failure"]
    assert failed.usage == Usage()


CENT = TokenPrice(Decimal("0.01"), Decimal(0))
"""$0.01 per million input tokens, output free: a 1,000,000-token call costs one cent."""


async def test_ten_cents_reach_a_limit_of_0_1_exactly(echo_tool: BaseTool) -> None:
    # A running float total, one call's cost added at a time, reaches 0.09999999999999999
    # after ten 0.01s, and an eleventh call would slip through; in Decimal they are exactly
    # 0.1: the tenth call passes (spent == limit) and the eleventh is never made. (Python
    # 3.12's sum() compensates its rounding and gets 0.1: the loop adds as it goes.)
    spent = 0.0
    for _ in range(10):
        spent += 0.01
    assert spent < 0.1
    script = [
        calls(tool_call("echo", {"text": str(n)}, f"c{n}"), tokens=(1_000_000, 5))
        for n in range(11)
    ]
    model = ScriptedChatModel(script, model_name="cent-model")
    agent = LLMAgent(
        model, [echo_tool], AgentConfig(tool_max_rounds=20), prices={"cent-model": CENT}
    )
    with usd_budget(0.1), pytest.raises(ExecutionError) as info:
        await agent.arun("go")

    check_partial(info.value)
    assert info.value.reason == "budget_exhausted"
    assert len(model.calls) == 10
    assert info.value.cost_usd == Decimal("0.1")
    assert str(info.value.cost_usd) == "0.10"
    gates = [e for e in info.value.events if isinstance(e, BudgetGate)]
    assert [(g.stage, g.passed) for g in gates] == [("after_call", True)] * 10 + [
        ("before_call", False)
    ]
    assert gates[-1].spent == gates[-1].limit == Decimal("0.1")


async def test_a_limit_one_unit_short_trips_on_the_call_that_crosses_it(
    echo_tool: BaseTool,
) -> None:
    script = [
        calls(tool_call("echo", {"text": str(n)}, f"c{n}"), tokens=(1_000_000, 5)) for n in range(3)
    ]
    model = ScriptedChatModel(script, model_name="cent-model")
    agent = LLMAgent(model, [echo_tool], prices={"cent-model": CENT})
    with usd_budget(Decimal("0.0299999999999999999999")), pytest.raises(ExecutionError) as info:
        await agent.arun("go")
    check_partial(info.value)
    assert len(model.calls) == 3
    gates = [e for e in info.value.events if isinstance(e, BudgetGate)]
    assert [(g.stage, g.passed) for g in gates] == [("after_call", True)] * 2 + [
        ("after_call", False)
    ]
    assert info.value.cost_usd == Decimal("0.03")


def test_float_prices_are_exact() -> None:
    price = TokenPrice(0.1, 0.2)  # type: ignore[arg-type]
    cost = price.cost(Usage(1_000_000, 1_000_000))
    assert cost == Decimal("0.3")  # 0.1 + 0.2 == 0.30000000000000004 in floats
    assert 0.1 + 0.2 != 0.3
