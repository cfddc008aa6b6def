"""Edges of the loop that the behaviour sections imply: pause points, odd replies and
tool results, and the JSON conversion of values that have no JSON form of their own."""

from __future__ import annotations

import asyncio
import datetime as dt
import enum
import json
from decimal import Decimal
from pathlib import PurePosixPath
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, ScriptedChatModel, TokenPrice, Usage
from toolloop_lab._spend.pricing import cost_of, known_price
from toolloop_lab._support.jsonsafe import dumps, json_safe
from toolloop_lab.errors import ConfigurationError, ToolLoopError


async def test_pause_hooks_see_every_model_call_and_dispatch_in_order() -> None:
    @tool
    def fetch(size: int) -> str:
        """Return ``size`` characters."""
        return "x" * size

    points: list[PausePoint] = []

    async def hook(point: PausePoint) -> None:
        points.append(point)

    model = ScriptedChatModel(
        [calls(tool_call("fetch", {"size": 500}, "f1"), text="reading"), final("sum")]
    )
    config = AgentConfig(tool_max_rounds=1, prune_tools=("fetch",), prune_min_chars=100)
    agent = LLMAgent(model, [fetch], config, pruning_model=ScriptedChatModel(["short"]))
    remove = agent.add_pause_hook(hook)
    result = await agent.arun("go")

    assert [(p.round, p.stage, p.purpose, p.detail) for p in points] == [
        (1, "model_call", "round", ()),
        (1, "tool_dispatch", "tools", ("fetch",)),
        (1, "model_call", "pruning", ()),
        (2, "model_call", "synthesis", ()),
    ]
    assert {p.run_id for p in points} == {result.run_id}

    remove()
    remove()
    replacement = ScriptedChatModel([final("again")])
    agent.model = replacement
    assert (await agent.arun("go")).final_response.text == "again"
    assert len(points) == 4
    assert replacement.calls[0].tool_names == ("fetch",)


async def test_a_model_that_returns_no_ai_message_fails_the_loop(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([lambda messages, tools: "fine"], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool])
    result = await agent.arun("go")
    assert result.final_response.text == "fine"

    class Broken(GenericFakeChatModel):
        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            return "not a message"

    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(Broken(messages=iter([]))).arun("go")
    assert isinstance(info.value.cause, TypeError)
    assert str(info.value.cause) == "model returned str, not an AIMessage"
    assert info.value.any_invocation_made is True


async def test_arguments_that_are_not_an_object_are_an_error_message(
    echo_tool: BaseTool,
) -> None:
    # AIMessage validates its args; a misbehaving integration can still hand one over
    bad = AIMessage("", usage_metadata=usage(10, 5)).model_copy(
        update={"tool_calls": [{"name": "echo", "args": ["a"], "id": "l1", "type": "tool_call"}]}
    )
    result = await LLMAgent(ScriptedChatModel([bad, final("ok")]), [echo_tool]).arun("go")
    (message,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert message.status == "error"
    assert message.content == ("Error: arguments for tool 'echo' must be a JSON object, got list")


async def test_a_tool_that_cancels_itself_is_an_error_not_a_stop() -> None:
    @tool
    async def quitter() -> str:
        """Raises CancelledError on its own."""
        raise asyncio.CancelledError

    events_model = ScriptedChatModel([calls(tool_call("quitter", {}, "q1")), final("went on")])
    result = await LLMAgent(events_model, [quitter]).arun("go")
    (message,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert (message.status, message.content) == (
        "error",
        "Error: tool 'quitter' was cancelled from inside",
    )
    assert result.final_response.text == "went on"


async def test_a_tool_returning_a_tool_message_keeps_its_content_and_artifact() -> None:
    @tool
    def direct() -> ToolMessage:
        """Builds its own ToolMessage."""
        return ToolMessage("two rows", tool_call_id="ignored", artifact=[1, 2])

    result = await LLMAgent(
        ScriptedChatModel([calls(tool_call("direct", {}, "d1")), final("ok")]), [direct]
    ).arun("go")
    (message,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert (message.tool_call_id, message.status) == ("d1", "success")
    assert (message.content, message.artifact) == ("two rows", [1, 2])


class Colour(enum.Enum):
    RED = "red"


class Dumps:
    def model_dump(self, mode: str) -> Any:
        raise ValueError("cannot dump")

    def to_dict(self) -> dict[str, int]:
        return {"via": 1}


class Named:
    def __str__(self) -> str:
        return "named thing"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Colour.RED, "red"),
        (dt.datetime(2024, 5, 6, 7, 8, 9), "2024-05-06T07:08:09"),
        (dt.date(2024, 5, 6), "2024-05-06"),
        (dt.time(7, 8), "07:08:00"),
        (dt.timedelta(minutes=2), 120.0),
        (b"\xff\xfe", {"__bytes_base64__": "//4="}),
        (bytearray(b"ok"), "ok"),
        (PurePosixPath("a/b.txt"), "a/b.txt"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (Dumps(), {"via": 1}),
        (Named(), {"__type__": f"{Named.__module__}.Named", "str": "named thing"}),
        ({True: 1, None: 2}, {"true": 1, "null": 2}),
    ],
)
def test_json_safe_conversions(value: Any, expected: Any) -> None:
    assert json_safe(value) == expected
    json.dumps(json_safe(value), allow_nan=False)


def test_json_safe_stops_at_a_depth_limit_instead_of_recursing_forever() -> None:
    loop: list[Any] = []
    loop.append(loop)
    text = dumps(loop)
    assert "<nested too deep>" in text
    assert text.count("[") == 65


def test_json_safe_dumps_ascii_by_default() -> None:
    assert dumps({"k": "é"}) == '{"k": "\\u00e9"}'
    assert dumps({"k": "é"}, ascii_only=False) == '{"k": "é"}'


@pytest.mark.parametrize(("value", "field"), [(True, "output_mtok"), ("cheap", "output_mtok")])
def test_token_price_rejects_non_numbers(value: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        TokenPrice(Decimal(1), value)
    assert info.value.field == field


def test_price_lookups_for_names_and_overrides() -> None:
    override = {"mine": TokenPrice(Decimal(1), Decimal(2))}
    assert known_price("mine", override) is True
    assert known_price("mine") is False
    assert known_price(None, override) is False
    assert cost_of(Usage(1_000_000, 1_000_000), "mine", override) == Decimal(3)
