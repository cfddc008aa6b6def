"""LLMAgent on the real ``ChatOpenAI`` and ``ChatAnthropic`` clients, against loopback stubs.

The stubs (``tests/stubs``) speak each provider's HTTP wire format on 127.0.0.1, so the
provider SDKs and langchain's converters run for real: provider ids, parallel calls, cache
usage, invalid JSON arguments and HTTP faults all arrive the way production sees them.
Expected figures are computed here from what the stubs reported, independently of the
loop, and costs straight from ``genai_prices.calc_price``.
"""

from __future__ import annotations

import functools
import json
import urllib.error
import urllib.request
from decimal import Decimal
from typing import Any

import anthropic
import openai
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import IN_A_LOOP
from stubs import anthropic_stub, openai_stub
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import anthropic_cost, openai_cost, price

from toolloop_lab import AgentConfig, LLMAgent, ToolLoopResult, usd_budget
from toolloop_lab.errors import ExecutionError, ToolLoopError
from toolloop_lab.events import LoopFailed, LoopStarted, ModelCalled, ToolDispatched
from toolloop_lab.lab import Scenario, run_scenarios
from toolloop_lab.lab._runner import run_one


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(key: str) -> dict[str, Any]:
    """Look a key up in a small table."""
    return {"key": key, "value": len(key)}


@tool
def explode(reason: str) -> str:
    """A tool that always fails."""
    raise RuntimeError(reason)


TOOLS = [add, lookup, explode]


def model_calls(events: Any) -> list[ModelCalled]:
    return [e for e in events if isinstance(e, ModelCalled)]


def test_stub_model_names_are_priced_by_genai_prices() -> None:
    assert price(OpenAIStub.model, 1_000_000, 0) == Decimal("0.15")
    assert price(AnthropicStub.model, 1_000_000, 0) == Decimal("0.8")


def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_stubs_refuse_unanswered_tool_calls_like_the_apis() -> None:
    unanswered = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    }
    with OpenAIStub() as oai:
        oai.reply(text="never sent", usage=OpenAIUsage(1, 1))
        status, body = post(oai.base_url + "/chat/completions", unanswered)
        assert status == 400
        assert "c2" in body["error"]["message"]
        assert oai.remaining == 1  # a refused request takes no queued reply
        assert [why for _, why in oai.rejected] == [body["error"]["message"]]
    twice = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                    {"type": "tool_result", "tool_use_id": "t1", "content": "b"},
                ],
            },
        ]
    }
    with AnthropicStub() as ant:
        status, body = post(ant.origin + "/v1/messages", twice)
        assert status == 400
        assert body["error"]["type"] == "invalid_request_error"
        assert "more than once" in body["error"]["message"]


# -- OpenAI ---------------------------------------------------------------------------


async def test_openai_parallel_tool_calls_get_one_result_each(oai: OpenAIStub) -> None:
    ids = oai.reply(
        tool_calls=[
            OpenAIToolCall("add", {"a": 2, "b": 3}),
            OpenAIToolCall("lookup", {"key": "abcd"}),
            OpenAIToolCall("add", {"a": 10, "b": -4}),
        ],
        usage=OpenAIUsage(120, 40),
    )
    oai.reply(text="5, 4 and 6.", usage=OpenAIUsage(210, 9))

    result = await LLMAgent(chat_openai(oai), TOOLS).arun("Compute things.")

    assert result.final_response.text == "5, 4 and 6."
    assert result.rounds == 2
    assert not result.synthesis_was_run
    assert result.accumulated_prompt == oai.prompt_tokens == 330
    assert result.accumulated_completion == oai.completion_tokens == 49
    assert result.usage.requests == 2
    assert not result.usage_estimated
    first, follow_up = oai.bodies
    assert first["model"] == "gpt-4o-mini"
    assert [t["function"]["name"] for t in first["tools"]] == ["add", "lookup", "explode"]
    assert openai_stub.tool_pairs(first) == []
    assert openai_stub.tool_pairs(follow_up) == [(ids, ids)]
    results = {
        m["tool_call_id"]: m["content"] for m in follow_up["messages"] if m["role"] == "tool"
    }
    assert results.keys() == set(ids)
    assert (results[ids[0]], results[ids[2]]) == ("5", "6")
    assert json.loads(results[ids[1]]) == {"key": "abcd", "value": 4}
    assert [c["id"] for c in result.messages[1].tool_calls] == ids  # type: ignore[attr-defined]


async def test_openai_cached_input_tokens_are_counted_and_priced(oai: OpenAIStub) -> None:
    oai.reply(
        tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 1})],
        usage=OpenAIUsage(1_500, 30, cached_tokens=1_024),
    )
    oai.reply(text="2", usage=OpenAIUsage(1_560, 4, cached_tokens=1_536))

    result = await LLMAgent(chat_openai(oai), TOOLS).arun("1+1?")

    assert result.usage.input_tokens == oai.prompt_tokens == 3_060
    assert result.usage.cache_read_tokens == oai.cached_tokens == 2_560
    assert result.usage.output_tokens == oai.completion_tokens == 34
    expected = openai_cost(oai.reported)
    assert result.cost_usd == expected
    # cached input is cheaper than plain input, so the cache really went into the price
    assert expected < price(OpenAIStub.model, 3_060, 34)
    calls = model_calls(result.events)
    assert [c.model_name for c in calls] == [OpenAIStub.model] * 2
    assert [(c.usage.input_tokens, c.usage.cache_read_tokens) for c in calls] == [
        (1_500, 1_024),
        (1_560, 1_536),
    ]
    assert [c.usage.cost_usd for c in calls] == [openai_cost([u]) for u in oai.reported]


async def test_openai_invalid_json_arguments_become_an_error_result(oai: OpenAIStub) -> None:
    ids = oai.reply(
        tool_calls=[
            OpenAIToolCall("add", {"a": 1, "b": 2}),
            OpenAIToolCall("add", '{"a": 1, "b": '),
        ],
        usage=OpenAIUsage(100, 25),
    )
    oai.reply(text="Fixed my call: 3.", usage=OpenAIUsage(180, 6))

    result = await LLMAgent(chat_openai(oai), TOOLS).arun("Add.")

    assert result.final_response.text == "Fixed my call: 3."
    reply = result.messages[1]
    assert isinstance(reply, AIMessage)
    assert [c["id"] for c in reply.tool_calls] == [ids[0]]
    assert [c["id"] for c in reply.invalid_tool_calls] == [ids[1]]
    dispatched = {e.tool_call_id: e for e in result.events if isinstance(e, ToolDispatched)}
    assert dispatched[ids[0]].status == "success"
    assert dispatched[ids[1]].status == "error"
    assert dispatched[ids[1]].error_reason == "invalid_call"
    follow_up = oai.bodies[1]
    [(calls, answered)] = openai_stub.tool_pairs(follow_up)
    assert sorted(calls) == sorted(answered) == sorted(ids)
    assert len(answered) == len(set(answered))
    bad = next(m for m in follow_up["messages"] if m.get("tool_call_id") == ids[1])
    assert bad["content"].startswith("Error: could not parse the call to 'add'")
    assert '{"a": 1, "b": ' in bad["content"]
    assert result.accumulated_prompt == oai.prompt_tokens
    assert result.accumulated_completion == oai.completion_tokens


async def test_openai_repeated_and_empty_call_ids_are_made_unique(oai: OpenAIStub) -> None:
    oai.reply(
        tool_calls=[
            OpenAIToolCall("add", {"a": 1, "b": 1}, id="dup"),
            OpenAIToolCall("add", {"a": 2, "b": 2}, id="dup"),
            OpenAIToolCall("lookup", {"key": "k"}, id="dup"),
        ],
        usage=OpenAIUsage(50, 30),
    )
    oai.reply(text="2, 4, k.", usage=OpenAIUsage(90, 5))

    result = await LLMAgent(chat_openai(oai), TOOLS).arun("Three calls, one id.")

    assert result.final_response.text == "2, 4, k."
    [(calls, answered)] = openai_stub.tool_pairs(oai.bodies[1])
    assert calls == answered
    assert len(set(calls)) == 3
    assert calls[0] == "dup"
    results = {m["tool_call_id"]: m["content"] for m in oai.bodies[1]["messages"][2:]}
    assert [results[c] for c in calls[:2]] == ["2", "4"]


async def test_openai_call_ids_reused_across_rounds_stay_one_to_one(oai: OpenAIStub) -> None:
    # some OpenAI-compatible servers number calls per reply, so "call_0" comes back each round
    for n in (1, 2):
        oai.reply(
            tool_calls=[OpenAIToolCall("add", {"a": n, "b": n}, id="call_0")],
            usage=OpenAIUsage(40 * n, 10),
        )
    oai.reply(text="2 then 4.", usage=OpenAIUsage(120, 4))

    result = await LLMAgent(chat_openai(oai), TOOLS).arun("Twice.")

    assert result.final_response.text == "2 then 4."
    pairs = openai_stub.tool_pairs(oai.bodies[2])
    assert [calls == answered for calls, answered in pairs] == [True, True]
    ids = [calls[0] for calls, _ in pairs]
    assert ids[0] == "call_0"
    assert ids[1] != "call_0"


@pytest.mark.parametrize(
    ("status", "sdk_error"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError)],
)
async def test_openai_server_fault_mid_run_is_a_typed_error(
    oai: OpenAIStub, status: int, sdk_error: type[Exception]
) -> None:
    ids = oai.reply(tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 2})], usage=OpenAIUsage(90, 12))
    oai.fault(status, "slow down" if status == 429 else "boom")

    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(chat_openai(oai), TOOLS).arun("Add.")

    err = info.value
    assert isinstance(err.cause, sdk_error)
    assert isinstance(err.cause, openai.APIStatusError)
    assert err.cause.status_code == status
    assert err.rounds == 1
    assert err.any_invocation_made
    assert err.accumulated_prompt == 90
    assert err.accumulated_completion == 12
    assert err.cost_usd == openai_cost(oai.reported)
    assert isinstance(err.messages[-1], ToolMessage)
    assert err.messages[-1].tool_call_id == ids[0]
    failed = err.events[-1]
    assert isinstance(failed, LoopFailed)
    assert failed.error_type == type(err.cause).__name__
    assert failed.round == 2
    assert len(oai.requests) == 2
    assert openai_stub.tool_pairs(oai.bodies[1]) == [(ids, ids)]


@pytest.mark.parametrize(
    ("status", "sdk_error"),
    [(429, openai.RateLimitError), (500, openai.InternalServerError)],
)
async def test_openai_fault_on_first_call_has_zero_partial_counts(
    oai: OpenAIStub, status: int, sdk_error: type[Exception]
) -> None:
    oai.fault(status)

    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(chat_openai(oai), TOOLS).arun("Add.")

    assert isinstance(info.value.cause, sdk_error)
    assert info.value.any_invocation_made
    assert (info.value.rounds, info.value.accumulated_prompt, info.value.cost_usd) == (
        0,
        0,
        Decimal(0),
    )


async def test_openai_token_budget_uses_the_client_profile_window(oai: OpenAIStub) -> None:
    model = chat_openai(oai)
    assert model.profile is not None
    window = model.profile.get("max_input_tokens")
    assert window == 128_000
    # 0.25 % of 128,000 = 320 tokens: round 1 (150) passes, round 2 (+250) trips the gate
    oai.reply(tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 2})], usage=OpenAIUsage(130, 20))
    ids = oai.reply(
        tool_calls=[OpenAIToolCall("add", {"a": 3, "b": 4})], usage=OpenAIUsage(230, 20)
    )
    oai.reply(text="Best effort: 3 and (not run).", usage=OpenAIUsage(300, 10))

    result = await LLMAgent(model, TOOLS, AgentConfig(token_budget_percent=0.25)).arun("Add.")

    started = next(e for e in result.events if isinstance(e, LoopStarted))
    assert started.context_window == 128_000
    assert started.token_budget == 320
    assert result.budget_exhausted
    assert result.synthesis_reason == "token_budget"
    assert result.rounds == 2
    assert result.accumulated_prompt == oai.prompt_tokens == 660
    synthesis_request = oai.bodies[2]
    assert "tools" not in synthesis_request
    # the call the budget stopped still got exactly one (error) result
    assert openai_stub.tool_pairs(synthesis_request)[-1] == (ids, ids)
    skipped = next(m for m in synthesis_request["messages"] if m.get("tool_call_id") == ids[0])
    assert "token budget" in skipped["content"]


async def test_openai_usd_budget_priced_for_the_reported_model(oai: OpenAIStub) -> None:
    for _ in range(2):
        oai.reply(
            tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 2})],
            usage=OpenAIUsage(2_000, 100, cached_tokens=1_024),
        )
    costs = [openai_cost([u]) for u in oai.reported]
    limit = costs[0] + costs[1] / 2  # the second call crosses it

    with pytest.raises(ExecutionError) as info, usd_budget(limit):
        await LLMAgent(chat_openai(oai), TOOLS).arun("Add forever.")

    err = info.value
    assert (err.kind, err.reason) == ("cost", "budget_exhausted")
    assert err.cost_usd == costs[0] + costs[1]
    assert err.accumulated_prompt == oai.prompt_tokens == 4_000
    assert err.rounds == 1
    assert len(oai.requests) == 2  # no call after the gate tripped
    # the second reply's call was never run, yet it got exactly one (error) result
    second = err.messages[-2]
    assert isinstance(second, AIMessage)
    assert isinstance(err.messages[-1], ToolMessage)
    assert err.messages[-1].tool_call_id == second.tool_calls[0]["id"]
    assert err.messages[-1].status == "error"


async def test_openai_usd_budget_allows_a_run_that_fits(oai: OpenAIStub) -> None:
    oai.reply(
        tool_calls=[OpenAIToolCall("lookup", {"key": "k"})],
        usage=OpenAIUsage(800, 50, cached_tokens=512),
    )
    oai.reply(text="done", usage=OpenAIUsage(900, 5, cached_tokens=768))
    expected = openai_cost(oai.reported)

    with usd_budget(expected):
        result = await LLMAgent(chat_openai(oai), TOOLS).arun("Look up k.")

    assert result.cost_usd == expected
    started = next(e for e in result.events if isinstance(e, LoopStarted))
    assert started.usd_limit == expected


# -- Anthropic ------------------------------------------------------------------------


async def test_anthropic_parallel_tool_use_and_cache_usage(ant: AnthropicStub) -> None:
    ids = ant.reply(
        text="Let me check both.",
        tool_uses=[
            AnthropicToolUse("add", {"a": 2, "b": 2}),
            AnthropicToolUse("lookup", {"key": "xyz"}),
        ],
        usage=AnthropicUsage(300, 60, cache_read_input_tokens=2_048),
    )
    ant.reply(text="4 and 3.", usage=AnthropicUsage(420, 8, cache_read_input_tokens=2_048))

    result = await LLMAgent(chat_anthropic(ant), TOOLS).arun("Two things.")

    assert result.final_response.text == "4 and 3."
    # langchain-anthropic folds the cache figures into usage_metadata input_tokens:
    # wire input_tokens counts only uncached input, so the loop's prompt total is the sum
    # of all three input figures the stub reported.
    assert ant.input_tokens == 720
    assert result.accumulated_prompt == (
        ant.input_tokens + ant.cache_read_input_tokens + ant.cache_creation_input_tokens
    )
    assert result.accumulated_prompt == 4_816
    assert result.usage.cache_read_tokens == ant.cache_read_input_tokens == 4_096
    assert result.accumulated_completion == ant.output_tokens == 68
    assert result.cost_usd == anthropic_cost(ant.reported)
    first, follow_up = ant.bodies
    assert first["model"] == "claude-3-5-haiku-latest"
    assert [t["name"] for t in first["tools"]] == ["add", "lookup", "explode"]
    assert anthropic_stub.tool_pairs(follow_up) == [(ids, ids)]
    assert [c.model_name for c in model_calls(result.events)] == [AnthropicStub.model] * 2
    assert [c.finish_reason for c in model_calls(result.events)] == ["tool_use", "end_turn"]


async def test_anthropic_final_answer_after_several_rounds(ant: AnthropicStub) -> None:
    all_ids = [
        ant.reply(
            tool_uses=[AnthropicToolUse("add", {"a": n, "b": n})],
            usage=AnthropicUsage(200 + 50 * n, 20, cache_read_input_tokens=100 * n),
        )
        for n in range(1, 4)
    ]
    ant.reply(text="2, 4, 6.", usage=AnthropicUsage(380, 7, cache_read_input_tokens=400))

    result = await LLMAgent(chat_anthropic(ant), TOOLS).arun("Double 1, 2, 3.")

    assert result.final_response.text == "2, 4, 6."
    assert result.rounds == 4
    assert not result.synthesis_was_run
    assert result.accumulated_prompt == sum(u.total_input for u in ant.reported)
    assert result.accumulated_completion == ant.output_tokens
    assert result.usage.cache_read_tokens == ant.cache_read_input_tokens
    assert result.cost_usd == anthropic_cost(ant.reported)
    assert len(ant.requests) == 4
    for k, body in enumerate(ant.bodies):
        assert anthropic_stub.tool_pairs(body) == [(ids, ids) for ids in all_ids[:k]]
    outputs = [
        [b["content"] for b in m["content"] if b.get("type") == "tool_result"]
        for m in ant.bodies[3]["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
    ]
    assert outputs == [["2"], ["4"], ["6"]]


async def test_anthropic_tool_failure_goes_back_as_is_error(ant: AnthropicStub) -> None:
    ids = ant.reply(
        tool_uses=[
            AnthropicToolUse("explode", {"reason": "disk full"}),
            AnthropicToolUse("nope", {}),
            AnthropicToolUse("add", {"a": "x"}),
        ],
        usage=AnthropicUsage(150, 30),
    )
    ant.reply(text="All three failed.", usage=AnthropicUsage(260, 6))

    result = await LLMAgent(chat_anthropic(ant), TOOLS).arun("Break things.")

    assert result.final_response.text == "All three failed."
    follow_up = ant.bodies[1]
    assert anthropic_stub.tool_pairs(follow_up) == [(ids, ids)]
    blocks = [b for b in follow_up["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert [b["is_error"] for b in blocks] == [True, True, True]
    reasons = {
        e.tool_call_id: e.error_reason for e in result.events if isinstance(e, ToolDispatched)
    }
    assert [reasons[i] for i in ids] == ["tool_error", "not_available", "invalid_arguments"]


async def test_anthropic_repeated_tool_use_ids_are_made_unique() -> None:
    with AnthropicStub() as ant:
        ant.reply(
            tool_uses=[
                AnthropicToolUse("add", {"a": 1, "b": 1}, id="toolu_same"),
                AnthropicToolUse("add", {"a": 2, "b": 2}, id="toolu_same"),
            ],
            usage=AnthropicUsage(50, 30),
        )
        ant.reply(text="2 and 4.", usage=AnthropicUsage(90, 5))
        outcome: ToolLoopResult | ToolLoopError
        try:
            outcome = await LLMAgent(chat_anthropic(ant), TOOLS).arun("Two calls, one id.")
        except ToolLoopError as exc:
            outcome = exc

    assert [why for _, why in ant.rejected] == []
    assert isinstance(outcome, ToolLoopResult)
    assert outcome.final_response.text == "2 and 4."
    [(calls, answered)] = anthropic_stub.tool_pairs(ant.bodies[1])
    assert calls == answered
    assert len(set(calls)) == 2
    assistant = ant.bodies[1]["messages"][1]["content"]
    assert [b["input"] for b in assistant if b["type"] == "tool_use"] == [
        {"a": 1, "b": 1},
        {"a": 2, "b": 2},
    ]


@pytest.mark.parametrize(
    ("status", "sdk_error"),
    [
        (429, anthropic.RateLimitError),
        (500, anthropic.InternalServerError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_anthropic_server_fault_is_a_typed_error(
    ant: AnthropicStub, status: int, sdk_error: type[Exception]
) -> None:
    ids = ant.reply(
        tool_uses=[AnthropicToolUse("add", {"a": 1, "b": 2})],
        usage=AnthropicUsage(100, 10, cache_read_input_tokens=50),
    )
    ant.fault(status)

    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(chat_anthropic(ant), TOOLS).arun("Add.")

    err = info.value
    assert isinstance(err.cause, sdk_error)
    assert isinstance(err.cause, anthropic.APIStatusError)
    assert err.cause.status_code == status
    assert (err.rounds, err.accumulated_prompt, err.accumulated_completion) == (1, 150, 10)
    assert err.cost_usd == anthropic_cost(ant.reported)
    assert anthropic_stub.tool_pairs(ant.bodies[1]) == [(ids, ids)]


async def test_anthropic_usd_budget_priced_for_the_reported_model(ant: AnthropicStub) -> None:
    for _ in range(2):
        ant.reply(
            tool_uses=[AnthropicToolUse("add", {"a": 1, "b": 2})],
            usage=AnthropicUsage(1_000, 200, cache_read_input_tokens=4_000),
        )
    costs = [anthropic_cost([u]) for u in ant.reported]

    with pytest.raises(ExecutionError) as info, usd_budget(costs[0] + costs[1] / 3):
        await LLMAgent(chat_anthropic(ant), TOOLS).arun("Add forever.")

    assert (info.value.kind, info.value.reason) == ("cost", "budget_exhausted")
    assert info.value.cost_usd == costs[0] + costs[1]
    assert info.value.accumulated_prompt == 10_000


async def test_anthropic_cache_creation_is_priced_at_the_cache_write_rate(
    ant: AnthropicStub,
) -> None:
    ant.reply(
        text="cached the docs",
        usage=AnthropicUsage(
            100, 10, cache_read_input_tokens=0, cache_creation_input_tokens=10_000
        ),
    )

    result = await LLMAgent(chat_anthropic(ant), TOOLS).arun("Read the docs.")

    assert result.usage.cache_write_tokens == 10_000
    assert result.cost_usd == anthropic_cost(ant.reported)


# -- one client, several runs (keep-alive connections, as the real APIs keep them) ------


def keep_alive_agent(provider: str) -> tuple[OpenAIStub | AnthropicStub, LLMAgent]:
    if provider == "openai":
        oai = OpenAIStub(keep_alive=True).start()
        for text in ("one", "two"):
            oai.reply(text=text, usage=OpenAIUsage(10, 2))
        return oai, LLMAgent(chat_openai(oai), TOOLS)
    ant = AnthropicStub(keep_alive=True).start()
    for text in ("one", "two"):
        ant.reply(text=text, usage=AnthropicUsage(10, 2))
    return ant, LLMAgent(chat_anthropic(ant), TOOLS)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_two_runs_in_one_event_loop_share_a_pooled_connection(provider: str) -> None:
    stub, agent = keep_alive_agent(provider)
    try:
        first = await agent.arun("a")
        second = await agent.arun("b")
    finally:
        stub.stop()
    assert (first.final_response.text, second.final_response.text) == ("one", "two")
    ports = [r.client_port for r in stub.requests]
    assert len(ports) == 2
    assert ports[0] == ports[1]  # the client pooled the connection: keep-alive is real
    stub.assert_clean()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_sync_run_twice_on_one_client(provider: str) -> None:
    # each asyncio.run would make a new loop, while the provider clients keep one pooled
    # async httpx client per base_url: a second run on a fresh loop would meet a pooled
    # connection of the first, closed one ("Event loop is closed")
    stub, agent = keep_alive_agent(provider)
    try:
        assert agent.run("a").final_response.text == "one"
        assert agent.run("b").final_response.text == "two"
    finally:
        stub.stop()
    ports = [r.client_port for r in stub.requests]
    assert ports[0] == ports[1]
    stub.assert_clean()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.filterwarnings(IN_A_LOOP)
async def test_sync_run_twice_inside_a_running_loop(provider: str) -> None:
    # the notebook case: run() is called where an event loop already runs
    stub, agent = keep_alive_agent(provider)
    try:
        assert agent.run("a").final_response.text == "one"
        assert agent.run("b").final_response.text == "two"
    finally:
        stub.stop()
    stub.assert_clean()


@pytest.mark.parametrize("entry", ["run_one", "run_scenarios"])
def test_lab_entry_points_run_twice_on_one_pooled_client(entry: str) -> None:
    # Every sync entry point goes through the one sync bridge: a reused executor or Dask
    # worker runs scenario after scenario on one event loop, so a client that pooled a
    # connection in the first run still has a live loop for it in the second.
    stub = OpenAIStub(keep_alive=True).start()
    try:
        for text in ("one", "two"):
            stub.reply(text=text, usage=OpenAIUsage(10, 2))
        scenario = Scenario("pooled", functools.partial(chat_openai, stub), tools=())
        if entry == "run_one":
            runs = [run_one(scenario), run_one(scenario)]
        else:
            runs = [run_scenarios([scenario], progress=False).records[0] for _ in range(2)]
    finally:
        stub.stop()
    assert [(r.outcome, r.final_text) for r in runs] == [
        ("final_answer", "one"),
        ("final_answer", "two"),
    ]
    ports = [r.client_port for r in stub.requests]
    assert ports[0] == ports[1]  # the second run really reused the first one's connection
    stub.assert_clean()
