"""Tool dispatch: concurrency, call order, one ToolMessage per id, every failure as an error
ToolMessage, and deterministic JSON for non-string results (issue 2, "Dispatch")."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from loopkit import MODEL, calls, final, tool_call, usage
from pydantic import BaseModel

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopResult
from toolloop_lab._tools.call_ids import normalize_tool_call_ids
from toolloop_lab._tools.dispatcher import not_available_error, serialize_output
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import Event, ModelCalled, ToolDispatched

SAFETY_S = 30.0
"""Only a deadlock guard: turns a hang into a failure, never a timing assertion."""


def _tool_messages(result: ToolLoopResult) -> list[ToolMessage]:
    return [m for m in result.messages if isinstance(m, ToolMessage)]


async def _run(
    tools: list[BaseTool], reply: AIMessage, config: AgentConfig | None = None
) -> tuple[ToolLoopResult, list[Event], ScriptedChatModel]:
    events: list[Event] = []
    model = ScriptedChatModel([reply, final("done")], model_name=MODEL)
    agent = LLMAgent(
        model, tools, config or AgentConfig(tool_timeout_s=10), observers=[events.append]
    )
    result = await agent.arun("go")
    return result, events, model


async def test_tool_calls_of_one_reply_run_concurrently() -> None:
    # Each tool waits for the other one to have started: sequential dispatch could never
    # finish both (the timeout below is a deadlock guard that turns a hang into a failure).
    ping_started, pong_started = asyncio.Event(), asyncio.Event()

    @tool
    async def ping() -> str:
        """Ping."""
        ping_started.set()
        await pong_started.wait()
        return "ping saw pong"

    @tool
    async def pong() -> str:
        """Pong."""
        pong_started.set()
        await ping_started.wait()
        return "pong saw ping"

    reply = calls(tool_call("ping", {}, "a"), tool_call("pong", {}, "b"))
    result, _, _ = await _run([ping, pong], reply, AgentConfig(tool_timeout_s=30))

    messages = _tool_messages(result)
    assert [(m.tool_call_id, m.status, m.content) for m in messages] == [
        ("a", "success", "ping saw pong"),
        ("b", "success", "pong saw ping"),
    ]


async def test_results_are_appended_in_call_order_not_completion_order() -> None:
    finished: list[str] = []
    second_done = asyncio.Event()

    @tool
    async def slow(text: str) -> str:
        """Finishes only after ``fast``."""
        await second_done.wait()
        finished.append("slow")
        return f"slow {text}"

    @tool
    async def fast(text: str) -> str:
        """Finishes first."""
        finished.append("fast")
        second_done.set()
        return f"fast {text}"

    reply = calls(
        tool_call("slow", {"text": "1"}, "first"), tool_call("fast", {"text": "2"}, "second")
    )
    result, events, model = await _run([slow, fast], reply)

    assert finished == ["fast", "slow"]
    assert [m.tool_call_id for m in _tool_messages(result)] == ["first", "second"]
    assert [m.content for m in _tool_messages(result)] == ["slow 1", "fast 2"]
    # events come as each call finishes: the fast one first
    dispatched = [e for e in events if isinstance(e, ToolDispatched)]
    assert [e.tool_call_id for e in dispatched] == ["second", "first"]
    # the next model call sees them in call order
    assert [m.tool_call_id for m in model.calls[1].messages if isinstance(m, ToolMessage)] == [
        "first",
        "second",
    ]


async def test_every_tool_call_id_gets_exactly_one_tool_message(echo_tool: BaseTool) -> None:
    @tool
    def explode() -> str:
        """Always raises."""
        raise ValueError("boom")

    reply = AIMessage(
        content="",
        tool_calls=[
            tool_call("echo", {"text": "ok"}, "good"),
            tool_call("nope", {}, "unknown"),
            tool_call("echo", {"txt": "typo"}, "wrong_args"),
            tool_call("explode", {}, "raises"),
        ],
        invalid_tool_calls=[
            {"name": "echo", "args": "{not json", "id": "bad_json", "error": "Expecting value"}
        ],
        usage_metadata=usage(10, 5),
    )
    result, _, _ = await _run([echo_tool, explode], reply)

    ids = Counter(m.tool_call_id for m in _tool_messages(result))
    assert ids == Counter({"good": 1, "unknown": 1, "wrong_args": 1, "raises": 1, "bad_json": 1})
    status = {m.tool_call_id: m.status for m in _tool_messages(result)}
    assert status == {
        "good": "success",
        "unknown": "error",
        "wrong_args": "error",
        "raises": "error",
        "bad_json": "error",
    }
    assert result.final_response.text == "done"


async def test_unknown_tool_is_an_error_message_listing_available_tools(
    echo_tool: BaseTool,
) -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result, events, model = await _run(
        [echo_tool, add], calls(tool_call("search", {"q": "x"}, "s1"))
    )
    (message,) = _tool_messages(result)
    assert message.status == "error"
    assert message.name == "search"
    assert "not available" in str(message.content)
    assert "Available tools: add, echo" in str(message.content)
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.status, event.error_reason, event.name) == ("error", "not_available", "search")
    assert result.final_response.text == "done"
    assert message in model.calls[1].messages


def test_not_available_error_is_a_typed_execution_error() -> None:
    err = not_available_error("x", ["b", "a"])
    assert isinstance(err, ExecutionError)
    assert (err.kind, err.reason) == ("tool", "not_available")
    assert str(err) == "Tool 'x' is not available. Available tools: a, b."
    assert "(none)" in str(not_available_error("x", []))


async def test_invalid_json_arguments_from_a_real_parse_become_an_error_message(
    echo_tool: BaseTool,
) -> None:
    # langchain-core parses streamed tool-call chunks; broken JSON lands in invalid_tool_calls
    reply = AIMessageChunk(
        content="",
        tool_call_chunks=[{"name": "echo", "args": '{"text": oops}', "id": "t1", "index": 0}],
        usage_metadata=usage(10, 5),
    )
    assert reply.tool_calls == []
    assert len(reply.invalid_tool_calls) == 1
    result, events, _ = await _run([echo_tool], reply)

    (message,) = _tool_messages(result)
    assert (message.tool_call_id, message.status) == ("t1", "error")
    assert message.content == (
        "Error: could not parse the call to 'echo': arguments are not valid JSON. "
        'Raw arguments: "{\\"text\\": oops}"'
    )
    model_event = next(e for e in events if isinstance(e, ModelCalled))
    (view,) = model_event.tool_calls
    assert (view.id, view.name, view.valid) == ("t1", "echo", False)
    (dispatch,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert dispatch.error_reason == "invalid_call"
    assert result.final_response.text == "done"


async def test_wrong_argument_names_become_an_error_message(echo_tool: BaseTool) -> None:
    result, events, model = await _run([echo_tool], calls(tool_call("echo", {"txt": "x"}, "w")))
    (message,) = _tool_messages(result)
    assert message.status == "error"
    assert "invalid arguments for tool 'echo'" in str(message.content)
    assert "text: Field required" in str(message.content)
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.error_reason, dict(event.args)) == ("invalid_arguments", {"txt": "x"})
    assert len(model.calls) == 2


async def test_wrong_argument_types_become_an_error_message() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    result, _, _ = await _run([add], calls(tool_call("add", {"a": "one", "b": 2}, "t")))
    (message,) = _tool_messages(result)
    assert message.status == "error"
    assert "a: Input should be a valid integer" in str(message.content)


async def test_a_tool_that_raises_becomes_an_error_message_and_the_loop_goes_on() -> None:
    @tool
    async def flaky(text: str) -> str:
        """Fails."""
        raise RuntimeError(f"disk full while writing {text}")

    result, events, _ = await _run([flaky], calls(tool_call("flaky", {"text": "a.txt"}, "f")))
    (message,) = _tool_messages(result)
    assert message.status == "error"
    assert (
        message.content == "Error: tool 'flaky' raised RuntimeError: disk full while writing a.txt"
    )
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.error_reason, event.error_type) == ("tool_error", "RuntimeError")
    assert event.output_chars == len(str(message.content))
    assert result.final_response.text == "done"


async def test_a_tool_over_its_timeout_is_an_error_message() -> None:
    never = asyncio.Event()

    @tool
    async def hang() -> str:
        """Never returns."""
        await never.wait()
        return "unreachable"

    result, events, _ = await _run(
        [hang], calls(tool_call("hang", {}, "h")), AgentConfig(tool_timeout_s=0.01)
    )
    (message,) = _tool_messages(result)
    assert message.status == "error"
    assert message.content == "Error: tool 'hang' timed out after 0.01 s"
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.error_reason, event.error_type) == ("timeout", None)  # it raised nothing


async def test_a_tools_own_timeout_error_is_not_reported_as_the_loop_timeout() -> None:
    @tool
    async def remote() -> str:
        """Times out on its own."""
        raise TimeoutError("upstream did not answer")

    result, events, _ = await _run([remote], calls(tool_call("remote", {}, "r")), AgentConfig())
    (message,) = _tool_messages(result)
    assert message.content == "Error: tool 'remote' raised TimeoutError: upstream did not answer"
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.error_reason, event.error_type) == ("tool_error", "TimeoutError")


async def test_content_and_artifact_tools_keep_their_artifact() -> None:
    @tool(response_format="content_and_artifact")
    def lookup(key: str) -> tuple[str, dict[str, Any]]:
        """Look up a key."""
        return f"value of {key}", {"rows": [1, 2, 3]}

    result, _, _ = await _run([lookup], calls(tool_call("lookup", {"key": "k"}, "l")))
    (message,) = _tool_messages(result)
    assert (message.content, message.artifact) == ("value of k", {"rows": [1, 2, 3]})


async def test_missing_and_repeated_tool_call_ids_are_made_unique(echo_tool: BaseTool) -> None:
    reply = AIMessage(
        content="",
        tool_calls=[
            {"name": "echo", "args": {"text": "a"}, "id": "dup", "type": "tool_call"},
            {"name": "echo", "args": {"text": "b"}, "id": "dup", "type": "tool_call"},
            {"name": "echo", "args": {"text": "c"}, "id": None, "type": "tool_call"},
        ],
        usage_metadata=usage(10, 5),
    )
    result, _, _ = await _run([echo_tool], reply)
    ai = result.messages[1]
    assert isinstance(ai, AIMessage)
    ids = [c["id"] for c in ai.tool_calls]
    assert ids[0] == "dup"
    assert len(set(ids)) == 3
    assert all(ids)
    assert [m.tool_call_id for m in _tool_messages(result)] == ids
    assert [m.content for m in _tool_messages(result)] == ["a", "b", "c"]


def test_normalize_tool_call_ids_returns_the_same_message_when_ids_are_fine() -> None:
    message = calls(tool_call("echo", {}, "x"), tool_call("echo", {}, "y"))
    assert normalize_tool_call_ids(message) is message


# -- non-string results ------------------------------------------------------------------


class Point(BaseModel):
    y: int
    x: int


@dataclass
class Box:
    width: int
    label: str


class Opaque:
    """No JSON form, no __str__: its default repr would show a memory address."""

    def __init__(self) -> None:
        self.secret = Decimal("2.50")


class Slotted:
    __slots__ = ("a",)

    def __init__(self) -> None:
        self.a = 1


_ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}|object at")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": {"d": 4, "c": 3}}, {"a": {"c": 3, "d": 4}, "b": 1}),
        ({3, 1, 2}, [1, 2, 3]),
        (frozenset({"b", "a"}), ["a", "b"]),
        (Decimal("1.10"), "1.10"),
        (Point(y=2, x=1), {"x": 1, "y": 2}),
        (Box(3, "lid"), {"label": "lid", "width": 3}),
        ((1, "two", None), [1, "two", None]),
        (float("nan"), "NaN"),
        (b"bytes", "bytes"),
        (
            Opaque(),
            {"__type__": f"{Opaque.__module__}.Opaque", "attributes": {"secret": "2.50"}},
        ),
        (Slotted(), {"__type__": f"{Slotted.__module__}.Slotted"}),
        ({Decimal("1.5"): "d", 2: "i", (1, 2): "t"}, {"1.5": "d", "2": "i", "[1, 2]": "t"}),
    ],
    ids=[
        "nested-dict-order",
        "set",
        "frozenset",
        "decimal",
        "pydantic",
        "dataclass",
        "tuple",
        "nan",
        "bytes",
        "opaque-object",
        "slotted-object",
        "non-string-keys",
    ],
)
def test_serialize_output_is_deterministic_json(value: Any, expected: Any) -> None:
    text = serialize_output(value)
    assert json.loads(text) == expected
    # sorted keys: the text is exactly json.dumps of the expected data with sorted keys
    assert text == json.dumps(expected, sort_keys=True, ensure_ascii=False)
    assert not _ADDRESS.search(text)


def test_object_keys_never_leak_a_memory_address() -> None:
    text = serialize_output({Opaque(): 1})
    assert not _ADDRESS.search(text)
    assert json.loads(text) == {
        json.dumps(
            {"__type__": f"{Opaque.__module__}.Opaque", "attributes": {"secret": "2.50"}},
            sort_keys=True,
        ): 1
    }


def test_strings_pass_through_unchanged() -> None:
    assert serialize_output('already "text"') == 'already "text"'
    assert serialize_output("") == ""


async def test_tool_results_reach_the_model_as_deterministic_json() -> None:
    @tool
    def report() -> dict[str, Any]:
        """A structured result."""
        return {"zeta": {3, 1, 2}, "alpha": Decimal("0.10"), "point": Point(y=2, x=1)}

    first, _, _ = await _run([report], calls(tool_call("report", {}, "r")))
    second, _, _ = await _run([report], calls(tool_call("report", {}, "r")))
    (message,) = _tool_messages(first)
    assert message.content == ('{"alpha": "0.10", "point": {"x": 1, "y": 2}, "zeta": [1, 2, 3]}')
    assert _tool_messages(second)[0].content == message.content


def test_a_good_id_after_a_missing_one_is_kept() -> None:
    message = AIMessage(
        "",
        tool_calls=[
            {"name": "echo", "args": {}, "id": None, "type": "tool_call"},
            {"name": "echo", "args": {}, "id": "b", "type": "tool_call"},
            {"name": "echo", "args": {}, "id": "call_1", "type": "tool_call"},
        ],
    )
    fixed = normalize_tool_call_ids(message)
    assert [c["id"] for c in fixed.tool_calls] == ["call_2", "b", "call_1"]


def test_ids_already_in_the_transcript_are_not_reused() -> None:
    message = calls(tool_call("echo", {}, "call_1"), tool_call("echo", {}, "fresh"))
    fixed = normalize_tool_call_ids(message, {"call_1", "call_2"})
    assert [c["id"] for c in fixed.tool_calls] == ["call_3", "fresh"]


@pytest.mark.parametrize(
    "round_ids", [(None, None), ("call_0", "call_0"), ("call_1", None), ("", "")]
)
async def test_tool_call_ids_stay_unique_across_rounds(
    round_ids: tuple[str | None, str | None], echo_tool: BaseTool
) -> None:
    def reply(n: int, call_id: str | None) -> AIMessage:
        return AIMessage(
            "",
            tool_calls=[
                {"name": "echo", "args": {"text": f"r{n}"}, "id": call_id, "type": "tool_call"}
            ],
            usage_metadata=usage(10, 5),
        )

    model = ScriptedChatModel(
        [reply(1, round_ids[0]), reply(2, round_ids[1]), final("done")], model_name=MODEL
    )
    result = await LLMAgent(model, [echo_tool]).arun("go")

    asked = [c["id"] for m in result.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    answered = Counter(m.tool_call_id for m in _tool_messages(result))
    assert len(asked) == len(set(asked)) == 2
    assert answered == Counter(dict.fromkeys(asked, 1))
    assert [m.content for m in _tool_messages(result)] == ["r1", "r2"]


def test_content_blocks_carrying_ids_are_renamed_with_their_calls() -> None:
    message = AIMessage(
        content=[
            {"type": "text", "text": "Two sums."},
            {"type": "tool_use", "id": "toolu_same", "name": "add", "input": {"a": 1}},
            {"type": "tool_use", "id": "toolu_same", "name": "add", "input": {"a": 2}},
            {"type": "function_call", "call_id": "toolu_same", "name": "add", "arguments": "{}"},
        ],
        tool_calls=[
            tool_call("add", {"a": 1}, "toolu_same"),
            tool_call("add", {"a": 2}, "toolu_same"),
            tool_call("add", {"a": 3}, "toolu_same"),
        ],
    )
    fixed = normalize_tool_call_ids(message)
    ids = [c["id"] for c in fixed.tool_calls]
    assert ids == ["toolu_same", "call_1", "call_2"]
    assert isinstance(fixed.content, list)
    blocks = [b for b in fixed.content if isinstance(b, dict)]
    assert [b.get("id") or b.get("call_id") for b in blocks[1:]] == ids
    assert [b.get("input") for b in blocks[1:3]] == [{"a": 1}, {"a": 2}]
    assert blocks[0] == {"type": "text", "text": "Two sums."}
    # the original reply is untouched
    assert isinstance(message.content, list)
    assert [b["id"] for b in message.content[1:3] if isinstance(b, dict)] == ["toolu_same"] * 2


def test_content_blocks_are_left_alone_when_ids_are_fine() -> None:
    content: list[str | dict[str, Any]] = [
        {"type": "tool_use", "id": "t1", "name": "add", "input": {}}
    ]
    message = AIMessage(content=content, tool_calls=[tool_call("add", {}, "t1")])
    assert normalize_tool_call_ids(message) is message


async def test_anthropic_shaped_replies_reach_the_transcript_with_unique_block_ids() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    reply = AIMessage(
        content=[
            {"type": "tool_use", "id": "toolu_x", "name": "add", "input": {"a": 1, "b": 1}},
            {"type": "tool_use", "id": "toolu_x", "name": "add", "input": {"a": 2, "b": 2}},
        ],
        tool_calls=[
            tool_call("add", {"a": 1, "b": 1}, "toolu_x"),
            tool_call("add", {"a": 2, "b": 2}, "toolu_x"),
        ],
        usage_metadata=usage(10, 5),
    )
    result, _, model = await _run([add], reply)
    sent = model.calls[1].messages[1]
    assert isinstance(sent, AIMessage)
    assert isinstance(sent.content, list)
    block_ids = [b["id"] for b in sent.content if isinstance(b, dict)]
    assert block_ids == [c["id"] for c in sent.tool_calls]
    assert len(set(block_ids)) == 2
    assert [(m.tool_call_id, m.content) for m in _tool_messages(result)] == [
        (block_ids[0], "2"),
        (block_ids[1], "4"),
    ]


# -- what a tool or an observer does with the data cannot reach back (issue 12: 5, 6, 7) --


TAGS_SCHEMA = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["tags"],
}


async def test_a_tool_that_changes_its_arguments_changes_nothing_else() -> None:
    # A JSON-schema tool (MCP, OpenAPI, a dict schema) gets the arguments as they are: no
    # pydantic model copies them on the way in.
    def add_tag(**kwargs: Any) -> list[str]:
        kwargs["tags"].append("added")
        kwargs["tags"][0] = "rewritten"
        return list(kwargs["tags"])

    tagger = StructuredTool.from_function(
        add_tag, name="add_tag", description="Adds a tag.", args_schema=TAGS_SCHEMA
    )
    reply = calls(tool_call("add_tag", {"tags": ["a"]}, "t1"))
    result, events, model = await _run([tagger], reply)

    assert _tool_messages(result)[0].content == '["rewritten", "added"]'  # the tool did run
    asked = result.messages[1]
    assert isinstance(asked, AIMessage)
    assert asked.tool_calls[0]["args"] == {"tags": ["a"]}  # the transcript
    sent = next(m for m in model.calls[1].messages if isinstance(m, AIMessage))
    assert sent.tool_calls[0]["args"] == {"tags": ["a"]}  # the next request
    called = next(e for e in events if isinstance(e, ModelCalled))
    assert called.tool_calls[0].args == {"tags": ["a"]}  # the events
    done = next(e for e in events if isinstance(e, ToolDispatched))
    assert done.args == {"tags": ["a"]}


def test_a_result_is_taken_as_text_the_moment_the_tool_returns() -> None:
    # get_order hands back a live dict of the backend; cancel_order changes that dict while
    # get_order's call is still finishing (its end-of-tool callback waits for it). The
    # model must read the order as it was when get_order returned.
    orders = {"o1": {"id": "o1", "status": "open"}}
    ended, cancelled = threading.Event(), threading.Event()

    class HoldTheEnd(BaseCallbackHandler):
        def on_tool_end(self, output: Any, **kwargs: Any) -> None:
            ended.set()
            assert cancelled.wait(SAFETY_S)

    def get_order(order_id: str) -> dict[str, str]:
        """Returns the live order."""
        return orders[order_id]

    def cancel_order(order_id: str) -> str:
        """Cancels the order once get_order has returned it."""
        assert ended.wait(SAFETY_S)
        orders[order_id]["status"] = "cancelled"
        cancelled.set()
        return "cancelled"

    getter = StructuredTool.from_function(get_order, callbacks=[HoldTheEnd()])
    canceller = StructuredTool.from_function(cancel_order)
    reply = calls(
        tool_call("get_order", {"order_id": "o1"}, "g"),
        tool_call("cancel_order", {"order_id": "o1"}, "c"),
    )
    model = ScriptedChatModel([reply, final("done")], model_name=MODEL)
    result = LLMAgent(model, [getter, canceller], AgentConfig(tool_timeout_s=SAFETY_S)).run("go")

    by_id = {m.tool_call_id: m.content for m in _tool_messages(result)}
    assert json.loads(str(by_id["g"])) == {"id": "o1", "status": "open"}
    assert by_id["c"] == "cancelled"
    assert orders["o1"]["status"] == "cancelled"  # the backend did change, afterwards


async def test_an_observer_cannot_rewrite_a_tool_call() -> None:
    received: list[Any] = []
    refused: list[str] = []

    @tool
    def record(items: list[str]) -> str:
        """Records what it was given."""
        received.append(list(items))
        return "ok"

    def meddle(event: Event) -> None:
        if isinstance(event, ModelCalled) and event.tool_calls:
            args = event.tool_calls[0].args
            for attempt in (
                lambda: args.__setitem__("items", ["evil"]),
                lambda: args["items"].append("evil"),
                lambda: args["items"].__setitem__(0, "evil"),
            ):
                try:
                    attempt()
                except TypeError:
                    refused.append("refused")

    model = ScriptedChatModel(
        [calls(tool_call("record", {"items": ["good"]}, "r1")), final("done")], model_name=MODEL
    )
    result = await LLMAgent(model, [record], observers=[meddle]).arun("go")

    assert received == [["good"]]
    assert refused == ["refused"] * 3
    asked = result.messages[1]
    assert isinstance(asked, AIMessage)
    assert asked.tool_calls[0]["args"] == {"items": ["good"]}
