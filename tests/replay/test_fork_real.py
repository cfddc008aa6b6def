"""``fork`` on the real ``ChatOpenAI`` and ``ChatAnthropic`` clients, against the stubs.

The stub sees every request, so it proves the two promises of a fork on the wire: no
request is made for the rounds taken, and the fork's first request is byte for byte the
request the original sent at that round (whether the prefix came from the live result or
was rebuilt from a trace's JSON).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import anthropic_cost, openai_cost

from toolloop_lab import AgentConfig, LLMAgent, TraceWriter, fork
from toolloop_lab._replay.figures import RunFigures


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def queue_openai(oai: OpenAIStub, start: int) -> None:
    """The replies of rounds ``start``.. of a three-round session (same ids and usage)."""
    plan = [
        ([OpenAIToolCall("add", {"a": 1, "b": 2}, id="call_a")], OpenAIUsage(120, 20)),
        ([OpenAIToolCall("add", {"a": 3, "b": 4}, id="call_b")], OpenAIUsage(180, 22)),
        ([], OpenAIUsage(240, 8)),
    ]
    for calls, usage in plan[start - 1 :]:
        if calls:
            oai.reply(tool_calls=calls, usage=usage)
        else:
            oai.reply(text="3 and 7.", usage=usage)


@pytest.mark.parametrize("source", ["result", "trace"])
@pytest.mark.parametrize("at_round", [2, 3])
async def test_openai_fork_sends_round_k_exactly_and_nothing_before(
    oai: OpenAIStub, tmp_path: Path, source: str, at_round: int
) -> None:
    oai.chunk_interval = 0
    queue_openai(oai, 1)
    path = tmp_path / "trace.jsonl"
    with TraceWriter(path) as writer:
        result = await LLMAgent(chat_openai(oai), [add], observers=[writer]).arun("Add twice.")
    sent = list(oai.bodies)
    cost = openai_cost(oai.reported)
    queue_openai(oai, at_round)

    forked = await asyncio_fork(
        result if source == "result" else path, at_round, chat_openai(oai), [add]
    )

    assert forked.error is None
    fork_bodies = list(oai.bodies[len(sent) :])
    assert len(fork_bodies) == 4 - at_round
    assert fork_bodies == sent[at_round - 1 :]
    assert forked.forked == RunFigures.of_result(result)
    assert forked.forked.cost_usd == cost


async def test_anthropic_fork_with_a_changed_config_shows_the_deltas(ant: AnthropicStub) -> None:
    ant.chunk_interval = 0
    ant.reply(tool_uses=[AnthropicToolUse("add", {"a": 1, "b": 2})], usage=AnthropicUsage(100, 20))
    ant.reply(tool_uses=[AnthropicToolUse("add", {"a": 3, "b": 4})], usage=AnthropicUsage(150, 20))
    ant.reply(text="3 and 7.", usage=AnthropicUsage(200, 6))
    result = await LLMAgent(chat_anthropic(ant), [add]).arun("Add twice.")
    sent = list(ant.bodies)
    original_cost = anthropic_cost(ant.reported)
    ant.reply(tool_uses=[AnthropicToolUse("add", {"a": 3, "b": 4})], usage=AnthropicUsage(150, 20))
    ant.reply(text="3, 7 and no more.", usage=AnthropicUsage(190, 9))

    forked = await asyncio_fork(
        result, 2, chat_anthropic(ant), [add], config=AgentConfig(tool_max_rounds=2)
    )

    assert ant.bodies[len(sent)] == sent[1]
    synthesis = ant.bodies[-1]
    assert "tools" not in synthesis  # the lower cap made the fork's last call a synthesis
    assert forked.forked.outcome == "synthesis"
    assert (forked.original.rounds, forked.forked.rounds) == (3, 2)
    fork_cost = anthropic_cost([*ant.reported[:1], *ant.reported[3:]])
    assert forked.original.cost_usd == original_cost
    assert forked.forked.cost_usd == fork_cost
    assert forked.cost_delta == fork_cost - original_cost
    frame = forked.comparison()
    assert frame["fork_outcome"].tolist() == ["tools", "tools", "synthesis"]
    assert frame["tokens_delta"].tolist() == [0, 0, (190 + 9) - (200 + 6)]


async def asyncio_fork(source: Any, at_round: int, model: Any, tools: Any, **kw: Any) -> Any:
    from toolloop_lab import afork

    return await afork(source, at_round, model=model, tools=tools, **kw)


def test_fork_is_the_public_name() -> None:
    from toolloop_lab import fork as exported

    assert exported is fork
