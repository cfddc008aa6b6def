"""The USD budget: per-run spend, typed errors with partial state, price overrides and
ContextVar isolation (issue 2, "USD budget")."""

from __future__ import annotations

import asyncio
import math
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call, usage

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    TokenPrice,
    file_read_tool,
    usd_budget,
)
from toolloop_lab._spend.budget import UsdBudget, current_usd_budget
from toolloop_lab.errors import ConfigurationError, ExecutionError
from toolloop_lab.events import (
    BudgetGate,
    Event,
    LoopFailed,
    LoopStarted,
    ModelCalled,
    ToolDispatched,
)


def _round(n: int, tokens: tuple[int, int]) -> AIMessage:
    return calls(tool_call("echo", {"text": f"r{n}"}, f"c{n}"), text=f"round {n}", tokens=tokens)


async def test_spend_over_the_limit_raises_cost_budget_exhausted_with_partial_state(
    echo_tool: BaseTool, recorder: list[Event]
) -> None:
    spend = [(1000, 200), (3000, 400), (5000, 100)]
    script = [_round(1, spend[0]), _round(2, spend[1]), final("never", spend[2])]
    model = ScriptedChatModel(script, model_name=MODEL)
    limit = reference_cost(spend[:1]) + reference_cost(spend[1:2]) / 2

    with usd_budget(limit), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool], observers=[recorder.append]).arun("go")

    err = info.value
    assert (err.kind, err.reason) == ("cost", "budget_exhausted")
    assert err.cost_usd == reference_cost(spend[:2])
    assert err.cost_usd is not None
    assert err.cost_usd > limit
    assert (err.accumulated_prompt, err.accumulated_completion) == (4000, 600)
    assert err.any_invocation_made is True
    assert len(model.calls) == 2
    # the reply that tripped the gate was paid for, so it is in the transcript, and its
    # tool call is answered without being run
    tripping = err.messages[-2]
    assert isinstance(tripping, AIMessage)
    assert tripping.text == "round 2"
    closed = err.messages[-1]
    assert isinstance(closed, ToolMessage)
    assert (closed.tool_call_id, closed.status) == ("c2", "error")

    gates = [e for e in recorder if isinstance(e, BudgetGate)]
    assert [(g.gate, g.stage, g.passed) for g in gates] == [
        ("usd", "after_call", True),
        ("usd", "after_call", False),
    ]
    assert gates[0].spent == reference_cost(spend[:1])
    assert gates[1].spent == err.cost_usd
    assert gates[1].limit == limit
    failed = recorder[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.error_kind, failed.reason) == (
        "ExecutionError",
        "cost",
        "budget_exhausted",
    )
    closed_events = [e for e in recorder if isinstance(e, ToolDispatched) and e.round == 2]
    assert [(e.tool_call_id, e.error_reason) for e in closed_events] == [("c2", "budget_exhausted")]
    assert err.events == tuple(recorder)


async def test_spend_exactly_at_the_limit_passes_but_stops_the_next_call(
    echo_tool: BaseTool,
) -> None:
    spend = [(1000, 200), (3000, 400)]
    model = ScriptedChatModel([_round(1, spend[0]), final("x", spend[1])], model_name=MODEL)
    with usd_budget(reference_cost(spend[:1])), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert info.value.reason == "budget_exhausted"
    assert len(model.calls) == 1
    assert info.value.cost_usd == reference_cost(spend[:1])
    gates = [e for e in info.value.events if isinstance(e, BudgetGate)]
    assert [(g.stage, g.passed) for g in gates] == [("after_call", True), ("before_call", False)]


async def test_a_zero_budget_stops_before_the_first_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    with usd_budget(0), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert info.value.reason == "budget_exhausted"
    assert info.value.any_invocation_made is False
    assert model.calls == ()


async def test_within_budget_the_run_finishes_with_its_cost(echo_tool: BaseTool) -> None:
    spend = [(1000, 200), (3000, 400)]
    model = ScriptedChatModel([_round(1, spend[0]), final("ok", spend[1])], model_name=MODEL)
    with usd_budget(1):
        result = await LLMAgent(model, [echo_tool]).arun("go")
    assert result.cost_usd == reference_cost(spend)
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit == Decimal(1)
    assert [g.passed for g in result.events if isinstance(g, BudgetGate)] == [True, True]


async def test_no_pruning_pass_after_the_budget_tripped(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("line of data\n" * 500)
    reader = file_read_tool(tmp_path)
    model = ScriptedChatModel(
        [
            calls(tool_call("file_read", {"path": "big.txt"}, "f1"), tokens=(4000, 300)),
            final("never"),
        ],
        model_name=MODEL,
    )
    pruner = ScriptedChatModel(
        [AIMessage("short", usage_metadata=usage(900, 40))], model_name=MODEL
    )
    config = AgentConfig(prune_tools=("file_read",), prune_min_chars=100)
    agent = LLMAgent(model, [reader], config, pruning_model=pruner)

    with usd_budget(reference_cost([(4000, 300)]) / 2), pytest.raises(ExecutionError) as info:
        await agent.arun("go")

    assert info.value.reason == "budget_exhausted"
    assert pruner.calls == ()
    assert (info.value.accumulated_prompt, info.value.accumulated_completion) == (4000, 300)
    assert not [e for e in info.value.events if e.kind == "pruning"]


async def test_pruning_spend_counts_and_can_trip_the_budget(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("line of data\n" * 500)
    reader = file_read_tool(tmp_path)
    model = ScriptedChatModel(
        [
            calls(tool_call("file_read", {"path": "big.txt"}, "f1"), tokens=(1000, 100)),
            final("never"),
        ],
        model_name=MODEL,
    )
    pruner = ScriptedChatModel(
        [AIMessage("short", usage_metadata=usage(20_000, 40))], model_name=MODEL
    )
    config = AgentConfig(prune_tools=("file_read",), prune_min_chars=100)
    agent = LLMAgent(model, [reader], config, pruning_model=pruner)

    limit = reference_cost([(1000, 100)]) * 2
    with usd_budget(limit), pytest.raises(ExecutionError) as info:
        await agent.arun("go")

    assert info.value.reason == "budget_exhausted"
    assert info.value.cost_usd == reference_cost([(1000, 100), (20_000, 40)])
    assert info.value.accumulated_prompt == 21_000
    assert len(model.calls) == 1


async def test_unpriced_model_is_an_error_before_any_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name="in-house-model-7")
    with usd_budget(5), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert (info.value.kind, info.value.reason) == ("cost", "unpriced")
    assert "in-house-model-7" in str(info.value)
    assert model.calls == ()
    assert info.value.any_invocation_made is False


async def test_unpriced_pruning_model_is_an_error_before_any_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    pruner = ScriptedChatModel([final("never")], model_name="in-house-pruner")
    agent = LLMAgent(model, [echo_tool], AgentConfig(prune_tools=("echo",)), pruning_model=pruner)
    with usd_budget(5), pytest.raises(ExecutionError) as info:
        await agent.arun("go")
    assert info.value.reason == "unpriced"
    assert "in-house-pruner" in str(info.value)
    assert model.calls == ()


async def test_unpriced_model_without_a_budget_runs_with_unknown_cost(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("fine")], model_name="in-house-model-7")
    result = await LLMAgent(model, [echo_tool]).arun("go")
    assert result.cost_usd is None
    assert result.accumulated_prompt == 10


async def test_prices_override_genai_prices(echo_tool: BaseTool) -> None:
    prices = {
        "in-house-model-7": TokenPrice(Decimal("2"), Decimal("8")),
        MODEL: TokenPrice(Decimal("100"), Decimal("100")),
    }
    own = ScriptedChatModel([final("a", (1500, 250))], model_name="in-house-model-7")
    known = ScriptedChatModel([final("b", (1500, 250))], model_name=MODEL)
    with usd_budget(10, prices=prices):
        own_result = await LLMAgent(own, [echo_tool]).arun("go")
        known_result = await LLMAgent(known, [echo_tool]).arun("go")
    assert own_result.cost_usd == (Decimal(1500) * 2 + Decimal(250) * 8) / 1_000_000
    assert known_result.cost_usd == Decimal(1750) * 100 / 1_000_000
    assert known_result.cost_usd != reference_cost([(1500, 250)])


def test_token_price_keeps_float_prices_exact_and_prices_cached_input() -> None:
    from toolloop_lab import Usage

    price = TokenPrice(0.15, 0.6, cache_read_mtok=0.075)  # type: ignore[arg-type]
    assert (price.input_mtok, price.output_mtok, price.cache_read_mtok) == (
        Decimal("0.15"),
        Decimal("0.6"),
        Decimal("0.075"),
    )
    cost = price.cost(Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=400))
    assert cost == (600 * Decimal("0.15") + 400 * Decimal("0.075") + 100 * Decimal("0.6")) / (10**6)
    with pytest.raises(ConfigurationError) as info:
        TokenPrice(Decimal(-1), Decimal(1))
    assert info.value.field == "input_mtok"


async def test_two_loops_under_gather_never_see_each_others_spend(echo_tool: BaseTool) -> None:
    spend = [(2000, 100), (2500, 150), (3000, 200)]
    seen: list[tuple[str, int]] = []

    @tool
    async def echo(text: str) -> str:
        """Echo, yielding to the other loop first."""
        await asyncio.sleep(0)
        return text

    def script() -> list[Any]:
        return [_round(1, spend[0]), _round(2, spend[1]), final("done", spend[2])]

    def observe(name: str) -> Any:
        return lambda event: (
            seen.append((name, event.round)) if event.kind == "model_call" else None
        )

    async def tight() -> ExecutionError:
        # over after the second call
        with usd_budget(reference_cost(spend[:2]) - Decimal("0.0000001")):
            agent = LLMAgent(
                ScriptedChatModel(script(), model_name=MODEL), [echo], observers=[observe("A")]
            )
            with pytest.raises(ExecutionError) as info:
                await agent.arun("go")
            return info.value

    async def roomy() -> Decimal | None:
        # exactly the three calls: shared spend would trip it
        with usd_budget(reference_cost(spend)):
            agent = LLMAgent(
                ScriptedChatModel(script(), model_name=MODEL), [echo], observers=[observe("B")]
            )
            return (await agent.arun("go")).cost_usd

    err, cost_b = await asyncio.gather(tight(), roomy())

    assert err.reason == "budget_exhausted"
    assert err.cost_usd == reference_cost(spend[:2])
    assert cost_b == reference_cost(spend)
    # the two runs really interleaved
    assert seen.index(("B", 1)) < seen.index(("A", 2))
    assert seen.index(("A", 1)) < seen.index(("B", 2))


async def test_the_budget_context_var_is_reset_after_the_block(echo_tool: BaseTool) -> None:
    assert current_usd_budget() is None
    with usd_budget("0.5") as outer:
        assert outer == UsdBudget(Decimal("0.5"))
        assert current_usd_budget() == outer
        with usd_budget(2) as inner:
            assert current_usd_budget() == inner
        assert current_usd_budget() == outer
        with usd_budget(None) as none:
            assert none is None
            assert current_usd_budget() is None
        assert current_usd_budget() == outer
    assert current_usd_budget() is None

    model = ScriptedChatModel([final("after")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool]).arun("go")
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit is None
    assert not [e for e in result.events if isinstance(e, BudgetGate)]


def test_budget_is_reset_even_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), usd_budget(1):
        raise RuntimeError("inside")
    assert current_usd_budget() is None


@pytest.mark.parametrize("limit", [-1, "abc", math.nan, math.inf, True, Decimal("NaN")])
def test_bad_usd_limits_are_configuration_errors(limit: Any) -> None:
    with pytest.raises(ConfigurationError) as info, usd_budget(limit):
        pass
    assert info.value.field == "limit_usd"
    assert current_usd_budget() is None


def test_float_limits_are_kept_exact() -> None:
    with usd_budget(0.1) as budget:
        assert budget is not None
        assert budget.limit_usd == Decimal("0.1")


async def test_the_budget_applies_per_loop_run(echo_tool: BaseTool) -> None:
    spend = [(2000, 100)]
    with usd_budget(reference_cost(spend) * Decimal("1.5")):
        for _ in range(3):
            model = ScriptedChatModel([final("ok", spend[0])], model_name=MODEL)
            result = await LLMAgent(model, [echo_tool]).arun("go")
            assert result.cost_usd == reference_cost(spend)


def _dated_reply(tokens: tuple[int, int]) -> AIMessage:
    return AIMessage(
        "ok",
        response_metadata={"model_name": "gpt-4o-mini-2024-07-18"},
        usage_metadata=usage(*tokens),
    )


async def test_an_override_under_the_configured_name_wins_over_a_dated_reply_name(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([_dated_reply((1000, 1000))], model_name=MODEL)
    with usd_budget(1, prices={MODEL: TokenPrice(Decimal(100), Decimal(100))}):
        result = await LLMAgent(model, [echo_tool]).arun("go")
    assert result.cost_usd == Decimal("0.2")
    (event,) = [e for e in result.events if e.kind == "model_call"]
    assert isinstance(event, ModelCalled)
    assert event.model_name == "gpt-4o-mini-2024-07-18"


def test_call_cost_prefers_the_most_specific_name() -> None:
    from toolloop_lab import Usage
    from toolloop_lab._spend.pricing import call_cost

    spent = Usage(1000, 1000)
    dated, alias = "gpt-4o-mini-2024-07-18", "my-alias"
    both = {dated: TokenPrice(Decimal(1), Decimal(1)), MODEL: TokenPrice(Decimal(9), Decimal(9))}
    assert call_cost(spent, [dated, MODEL], both) == Decimal("0.002")
    assert call_cost(spent, [dated, MODEL], {MODEL: both[MODEL]}) == Decimal("0.018")
    assert call_cost(spent, [dated, MODEL]) == reference_cost([(1000, 1000)], model=dated)
    # a reply name genai-prices knows prices a model configured under an unknown alias
    assert call_cost(spent, [MODEL, alias]) == reference_cost([(1000, 1000)])
    assert call_cost(spent, [None, alias]) is None


def _in_thread(work: Any) -> Any:
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box.append(exc)

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    return box[0]


def test_a_bare_thread_fails_closed_while_a_budget_is_active_elsewhere(
    echo_tool: BaseTool,
) -> None:
    def bare() -> Any:
        return LLMAgent(ScriptedChatModel([final("x")], model_name=MODEL), [echo_tool]).run("go")

    def declared() -> Any:
        with usd_budget(None):
            model = ScriptedChatModel([final("declared")], model_name=MODEL)
            return LLMAgent(model, [echo_tool]).run("go")

    with usd_budget(1):
        unavailable = _in_thread(bare)
        ok = _in_thread(declared)
    after = _in_thread(bare)

    assert isinstance(unavailable, ExecutionError)
    assert (unavailable.kind, unavailable.reason) == ("cost", "budget_unavailable")
    assert ok.final_response.text == "declared"
    assert after.final_response.text == "x"  # nothing active any more


async def test_to_thread_and_tasks_inherit_the_budget() -> None:
    async def seen_by_task() -> UsdBudget | None:
        await asyncio.sleep(0)
        return current_usd_budget()

    with usd_budget("0.25") as budget:
        in_thread = await asyncio.to_thread(current_usd_budget)
        task = asyncio.create_task(seen_by_task())
    # the task was created inside the block, so it keeps the budget after the block ends
    in_task = await task
    assert budget is not None
    assert in_thread == budget == in_task
    assert current_usd_budget() is None


@pytest.mark.parametrize(
    "prices",
    [{"mine": 0.5}, {"": TokenPrice(Decimal(1), Decimal(1))}, [("mine", 1)], "mine"],
)
def test_bad_price_tables_are_configuration_errors(prices: Any) -> None:
    model = ScriptedChatModel([final("never")], model_name="mine")
    with pytest.raises(ConfigurationError) as info, usd_budget(1, prices=prices):
        LLMAgent(model).run("go")
    assert info.value.field == "prices"
    assert model.calls == ()
    assert current_usd_budget() is None


# -- the agent's own prices ---------------------------------------------------------------

HOUSE = TokenPrice(Decimal("2"), Decimal("8"))


def _house_cost(inp: int, out: int, price: TokenPrice = HOUSE) -> Decimal:
    return (Decimal(inp) * price.input_mtok + Decimal(out) * price.output_mtok) / 1_000_000


async def test_agent_prices_price_every_call_without_a_budget(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [_round(1, (1500, 250)), final("ok", (2000, 100))], model_name="in-house-model-7"
    )
    agent = LLMAgent(model, [echo_tool], prices={"in-house-model-7": HOUSE})
    result = await agent.arun("go")
    assert result.cost_usd == _house_cost(1500, 250) + _house_cost(2000, 100)
    costs = [e.usage.cost_usd for e in result.events if isinstance(e, ModelCalled)]
    assert costs == [_house_cost(1500, 250), _house_cost(2000, 100)]


async def test_agent_prices_make_an_unknown_model_cappable(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("ok", (1500, 250))], model_name="in-house-model-7")
    agent = LLMAgent(model, [echo_tool], prices={"in-house-model-7": HOUSE})
    with usd_budget(1):
        result = await agent.arun("go")
    assert result.cost_usd == _house_cost(1500, 250)
    with usd_budget(_house_cost(1500, 250) / 2), pytest.raises(ExecutionError) as info:
        await LLMAgent(
            ScriptedChatModel([final("ok", (1500, 250))], model_name="in-house-model-7"),
            prices={"in-house-model-7": HOUSE},
        ).arun("go")
    assert info.value.reason == "budget_exhausted"


async def test_budget_prices_override_agent_prices_name_by_name(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("line of data\n" * 500)
    main = ScriptedChatModel(
        [
            calls(tool_call("file_read", {"path": "big.txt"}, "f1"), tokens=(1000, 100)),
            final("done", (1000, 100)),
        ],
        model_name="house-main",
    )
    pruner = ScriptedChatModel(
        [AIMessage("short", usage_metadata=usage(3000, 30))], model_name="house-pruner"
    )
    cheap = TokenPrice(Decimal("1"), Decimal("1"))
    agent = LLMAgent(
        main,
        [file_read_tool(tmp_path)],
        AgentConfig(prune_tools=("file_read",), prune_min_chars=100),
        pruning_model=pruner,
        prices={"house-main": HOUSE, "house-pruner": HOUSE},
    )
    with usd_budget(1, prices={"house-main": cheap}):
        result = await agent.arun("go")
    # the main model at the budget's price, the pruner still at the agent's
    assert result.cost_usd == (_house_cost(1000, 100, cheap) * 2 + _house_cost(3000, 30, HOUSE))


async def test_usd_budget_none_with_prices_applies_them(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("ok", (1500, 250))], model_name="in-house-model-7")
    with usd_budget(None, prices={"in-house-model-7": HOUSE}) as budget:
        assert budget is None  # still "no limit"
        result = await LLMAgent(model, [echo_tool]).arun("go")
    assert result.cost_usd == _house_cost(1500, 250)
    assert not [e for e in result.events if isinstance(e, BudgetGate)]
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit is None


@pytest.mark.parametrize(
    "prices",
    [{"mine": 0.5}, {"": TokenPrice(Decimal(1), Decimal(1))}, [("mine", 1)], "mine"],
)
def test_bad_agent_prices_are_configuration_errors(prices: Any) -> None:
    model = ScriptedChatModel([final("never")], model_name="mine")
    with pytest.raises(ConfigurationError) as info:
        LLMAgent(model, prices=prices)
    assert info.value.field == "prices"
    agent = LLMAgent(model)
    with pytest.raises(ConfigurationError):
        agent.prices = prices
    assert agent.prices is None
    assert model.calls == ()


def test_agent_prices_are_a_read_only_copy() -> None:
    table = {"mine": HOUSE}
    agent = LLMAgent(ScriptedChatModel([final("x")], model_name="mine"), prices=table)
    table["mine"] = TokenPrice(Decimal(0), Decimal(0))
    assert agent.prices == {"mine": HOUSE}
    with pytest.raises(TypeError):
        agent.prices["other"] = HOUSE  # type: ignore[index]
    assert LLMAgent(ScriptedChatModel([]), prices={}).prices is None


# -- a model named only by its tracing parameters, or not at all (issue 12, item 19) ------


class _Deployment(BaseChatModel):
    """A chat model that names itself only through langchain-core's standard tracing
    parameters (as some provider integrations do, e.g. with a deployment name)."""

    deployment: str

    @property
    def _llm_type(self) -> str:
        return "deployment"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_model_name"] = self.deployment
        return params

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        reply = AIMessage("priced answer", usage_metadata=usage(1_000, 100))
        return ChatResult(generations=[ChatGeneration(message=reply)])


async def test_a_model_named_by_its_tracing_parameters_can_be_priced() -> None:
    model = _Deployment(deployment="team-gpt-prod")
    price = TokenPrice(input_mtok=Decimal(1), output_mtok=Decimal(2))
    with usd_budget(1, prices={"team-gpt-prod": price}):
        result = await LLMAgent(model).arun("go")
    assert result.cost_usd == Decimal("0.0012")  # 1,000 x $1/M + 100 x $2/M
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.model_name == "team-gpt-prod"


async def test_a_model_that_declares_no_name_says_so_under_a_usd_budget() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("never")]))
    with usd_budget(1), pytest.raises(ExecutionError) as info:
        await LLMAgent(model).arun("go")
    assert (info.value.kind, info.value.reason) == ("cost", "unpriced")
    assert info.value.any_invocation_made is False
    text = str(info.value)
    assert "None" not in text  # "model None has no known price" cannot be keyed
    assert "declares no name" in text


async def test_a_budget_error_with_a_tiny_limit_prints_no_exponent(echo_tool: BaseTool) -> None:
    """A limit of $0.0000001 is written out (Decimal's own str says ``1E-7``)."""
    model = ScriptedChatModel([_round(1, (1000, 200)), final("never")], model_name=MODEL)
    with usd_budget(Decimal("1E-7")), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    message = str(info.value)
    assert "of $0.0000001" in message
    assert "E-" not in message.upper()
