"""Interventions on the real ``ChatOpenAI`` and ``ChatAnthropic`` clients, against the
loopback stubs: what a person changed is what goes over the wire in the next request.

The stubs refuse a request whose tool calls are not answered exactly once (as the APIs
do), so every test here also proves the edited transcript is one a provider accepts.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import tool
from stubs import anthropic_stub, openai_stub
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, ToolLoopResult
from toolloop_lab.events import Intervention, ToolDispatched, transcript

ran: list[tuple[str, dict[str, Any]]] = []


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append(("add", {"a": a, "b": b}))
    return a + b


@tool
def read(path: str) -> str:
    """Read a file."""
    ran.append(("read", {"path": path}))
    return f"contents of {path}"


TOOLS = [add, read]


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    ran.clear()


def hook_for(
    on_dispatch: Callable[[PausePoint], None], on_round_2: Callable[[PausePoint], None]
) -> Callable[[PausePoint], Awaitable[None]]:
    async def hook(point: PausePoint) -> None:
        if point.stage == "tool_dispatch" and point.round == 1:
            on_dispatch(point)
        elif point.stage == "model_call" and point.round == 2:
            on_round_2(point)

    return hook


def interventions(events: Any) -> list[tuple[str, str | None]]:
    return [(e.action, e.tool_call_id) for e in events if isinstance(e, Intervention)]


async def run_every_intervention(
    model: BaseChatModel,
    streaming: bool,
    ids: list[str],
    skip_with: tuple[str, Literal["success", "error"]],
) -> ToolLoopResult:
    """Run "Go." making one intervention of each kind: at round 1's dispatch, ``ids[0]``'s
    args become ``{"a": 40, "b": 2}`` and ``ids[1]`` is skipped with ``skip_with``'s content
    and status; before round 2's model call, ``ids[0]``'s result becomes "forty-two" and
    "Answer in one word." is appended."""
    content, status = skip_with

    def dispatch(point: PausePoint) -> None:
        point.edit_args(ids[0], {"a": 40, "b": 2})
        point.skip(ids[1], content, status=status)

    def round_2(point: PausePoint) -> None:
        point.edit_result(ids[0], "forty-two")
        point.append("Answer in one word.")

    agent = LLMAgent(
        model, TOOLS, AgentConfig(streaming=streaming), pause_hooks=[hook_for(dispatch, round_2)]
    )
    return await agent.arun("Go.")


@pytest.mark.parametrize("streaming", [False, True])
async def test_openai_every_intervention_reaches_the_wire(oai: OpenAIStub, streaming: bool) -> None:
    oai.chunk_interval = 0
    ids = oai.reply(
        tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 2}), OpenAIToolCall("read", {"path": "x"})],
        usage=OpenAIUsage(100, 20),
    )
    oai.reply(text="Done.", usage=OpenAIUsage(200, 5))

    result = await run_every_intervention(
        chat_openai(oai), streaming, ids, skip_with=("the file is empty", "success")
    )

    assert ran == [("add", {"a": 40, "b": 2})]
    follow_up = oai.bodies[1]
    [(asked, answered)] = openai_stub.tool_pairs(follow_up)
    assert asked == answered == ids
    assistant = next(m for m in follow_up["messages"] if m["role"] == "assistant")
    args = {c["id"]: json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]}
    assert args == {ids[0]: {"a": 40, "b": 2}, ids[1]: {"path": "x"}}
    results = {
        m["tool_call_id"]: m["content"] for m in follow_up["messages"] if m["role"] == "tool"
    }
    assert results == {ids[0]: "forty-two", ids[1]: "the file is empty"}
    assert follow_up["messages"][-1] == {"role": "user", "content": "Answer in one word."}
    assert interventions(result.events) == [
        ("edit_args", ids[0]),
        ("skip", ids[1]),
        ("edit_result", ids[0]),
        ("append_message", None),
    ]
    assert transcript(result.events) == list(result.messages)
    assert result.accumulated_prompt == oai.prompt_tokens


async def test_openai_unparseable_arguments_fixed_by_hand(oai: OpenAIStub) -> None:
    ids = oai.reply(tool_calls=[OpenAIToolCall("add", '{"a": 1, "b": ')], usage=OpenAIUsage(60, 10))
    oai.reply(text="3", usage=OpenAIUsage(90, 2))

    async def hook(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            assert [c.valid for c in point.calls] == [False]
            point.edit_args(ids[0], {"a": 1, "b": 2})

    result = await LLMAgent(chat_openai(oai), TOOLS, pause_hooks=[hook]).arun("Add.")

    assert ran == [("add", {"a": 1, "b": 2})]
    follow_up = oai.bodies[1]
    assistant = next(m for m in follow_up["messages"] if m["role"] == "assistant")
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"a": 1, "b": 2}
    ]
    results = [m["content"] for m in follow_up["messages"] if m["role"] == "tool"]
    assert results == ["3"]
    dispatched = next(e for e in result.events if isinstance(e, ToolDispatched))
    assert (dispatched.status, dispatched.error_reason) == ("success", None)
    assert interventions(result.events) == [("edit_args", ids[0])]
    assert transcript(result.events) == list(result.messages)


@pytest.mark.parametrize("streaming", [False, True])
async def test_anthropic_every_intervention_reaches_the_wire(
    ant: AnthropicStub, streaming: bool
) -> None:
    ant.chunk_interval = 0
    ids = ant.reply(
        text="Working on it.",
        tool_uses=[
            AnthropicToolUse("add", {"a": 1, "b": 2}),
            AnthropicToolUse("read", {"path": "x"}),
        ],
        usage=AnthropicUsage(100, 20),
    )
    ant.reply(text="Done.", usage=AnthropicUsage(200, 5))

    result = await run_every_intervention(
        chat_anthropic(ant), streaming, ids, skip_with=("no such file", "error")
    )

    assert ran == [("add", {"a": 40, "b": 2})]
    follow_up = ant.bodies[1]
    [(asked, answered)] = anthropic_stub.tool_pairs(follow_up)
    assert asked == answered == ids
    assistant = next(m for m in follow_up["messages"] if m["role"] == "assistant")
    inputs = {b["id"]: b["input"] for b in assistant["content"] if b["type"] == "tool_use"}
    assert inputs == {ids[0]: {"a": 40, "b": 2}, ids[1]: {"path": "x"}}
    blocks = [b for m in follow_up["messages"][2:] for b in m["content"] if isinstance(b, dict)]
    results = {b["tool_use_id"]: b for b in blocks if b["type"] == "tool_result"}
    assert _text(results[ids[0]]["content"]) == "forty-two"
    assert _text(results[ids[1]]["content"]) == "no such file"
    assert results[ids[1]].get("is_error") is True
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert texts[-1] == "Answer in one word."
    assert interventions(result.events) == [
        ("edit_args", ids[0]),
        ("skip", ids[1]),
        ("edit_result", ids[0]),
        ("append_message", None),
    ]
    assert transcript(result.events) == list(result.messages)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b["text"] for b in content if b.get("type") == "text")
