"""Interventions at a pause, on the scripted model: what a person changes reaches the tool,
the model and the transcript, and each change is exactly one ``intervention`` event.

Every test drives the real loop through ``LLMAgent`` with a pause hook (the public seam a
debugger uses) and reads what the model was sent off ``ScriptedChatModel.calls``, what the
tools received off the tools themselves, and what was recorded off the events.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import BaseTool, StructuredTool, tool
from loopkit import MODEL, calls, final, invalid_call, tool_call, until
from pydantic import BaseModel, Field

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    PausePoint,
    RunView,
    ScriptedChatModel,
    ToolLoopResult,
    read_trace,
)
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.steps import StepController
from toolloop_lab.errors import InterventionError
from toolloop_lab.events import (
    Event,
    Intervention,
    ModelCalled,
    Paused,
    ToolDispatched,
    ToolStarted,
    transcript,
)

Step = Callable[[PausePoint], None]


class Calculator:
    """Tools that remember every call they really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.ran.append(("add", {"a": a, "b": b}))
            return a + b

        @tool
        def read(path: str, limit: int = 100) -> str:
            """Read a file."""
            self.ran.append(("read", {"path": path, "limit": limit}))
            return f"contents of {path}"

        self.tools: list[BaseTool] = [add, read]


def at(stage: str, round_: int, step: Step) -> Callable[[PausePoint], Awaitable[None]]:
    """A pause hook that runs ``step`` once, at the first pause of ``stage`` in ``round_``."""
    done = False

    async def hook(point: PausePoint) -> None:
        nonlocal done
        if not done and point.stage == stage and point.round == round_:
            done = True
            step(point)

    return hook


def interventions(events: Sequence[Event]) -> list[Intervention]:
    return [e for e in events if isinstance(e, Intervention)]


def assert_valid_transcript(messages: Sequence[BaseMessage]) -> None:
    """Every call id asked for has exactly one ToolMessage after it; no result is orphaned."""
    asked: list[str] = []
    answered: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            asked += [str(c["id"]) for c in message.tool_calls]
            asked += [str(c["id"]) for c in message.invalid_tool_calls]
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in asked, f"orphan result {message.tool_call_id}"
            answered.append(message.tool_call_id)
    assert sorted(asked) == sorted(answered)
    assert len(set(answered)) == len(answered)


async def run(
    script: Sequence[Any], tools: Sequence[BaseTool], *hooks: Any, **config: Any
) -> tuple[ToolLoopResult, ScriptedChatModel]:
    model = ScriptedChatModel(list(script))
    agent = LLMAgent(model, tools, AgentConfig(**config), pause_hooks=hooks)
    result = await agent.arun("Compute.")
    assert_valid_transcript(result.messages)
    assert transcript(result.events) == list(result.messages)
    return result, model


def refused(step: Step, point: PausePoint) -> InterventionError:
    with pytest.raises(InterventionError) as caught:
        step(point)
    return caught.value


# -- edit_args --------------------------------------------------------------------------


async def test_edited_arguments_reach_the_tool_the_transcript_and_the_next_request() -> None:
    calc = Calculator()
    pending: list[Any] = []

    def edit(point: PausePoint) -> None:
        point.edit_args("c1", {"a": 10, "b": 20})
        pending.extend(point.calls)

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("30")],
        calc.tools,
        at("tool_dispatch", 1, edit),
    )

    assert calc.ran == [("add", {"a": 10, "b": 20})]
    assert [(c.id, dict(c.args)) for c in pending] == [("c1", {"a": 10, "b": 20})]
    reply = result.messages[1]
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["args"] == {"a": 10, "b": 20}
    sent = model.calls[1].messages
    assert isinstance(sent[1], AIMessage)
    assert sent[1].tool_calls[0]["args"] == {"a": 10, "b": 20}
    assert isinstance(sent[2], ToolMessage)
    assert sent[2].content == "30"
    [change] = interventions(result.events)
    assert (change.action, change.stage, change.round, change.tool_call_id) == (
        "edit_args",
        "tool_dispatch",
        1,
        "c1",
    )
    assert (change.before, change.after) == ({"a": 1, "b": 2}, {"a": 10, "b": 20})
    # what the model asked for stays on record; what ran is the edit
    called = next(e for e in result.events if isinstance(e, ModelCalled))
    assert dict(called.tool_calls[0].args) == {"a": 1, "b": 2}
    started = next(e for e in result.events if isinstance(e, ToolStarted))
    dispatched = next(e for e in result.events if isinstance(e, ToolDispatched))
    assert dict(started.args) == dict(dispatched.args) == {"a": 10, "b": 20}
    kinds = [e.kind for e in result.events]
    assert kinds.index("intervention") < kinds.index("tool_start")


async def test_only_the_edited_call_changes_among_parallel_calls() -> None:
    calc = Calculator()

    def edit(point: PausePoint) -> None:
        point.edit_args("c2", {"path": "b.txt", "limit": 5})

    result, _ = await run(
        [
            calls(
                tool_call("add", {"a": 1, "b": 1}, "c1"),
                tool_call("read", {"path": "a.txt"}, "c2"),
                tool_call("add", {"a": 2, "b": 2}, "c3"),
            ),
            final("ok"),
        ],
        calc.tools,
        at("tool_dispatch", 1, edit),
    )

    assert sorted(calc.ran, key=str) == sorted(
        [
            ("add", {"a": 1, "b": 1}),
            ("read", {"path": "b.txt", "limit": 5}),
            ("add", {"a": 2, "b": 2}),
        ],
        key=str,
    )
    results = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in results] == [
        ("c1", "2"),
        ("c2", "contents of b.txt"),
        ("c3", "4"),
    ]
    assert len(interventions(result.events)) == 1


async def test_an_edit_can_be_edited_again_and_each_change_is_one_event() -> None:
    calc = Calculator()

    def edit(point: PausePoint) -> None:
        point.edit_args("c1", {"a": 5, "b": 5})
        point.edit_args("c1", {"a": 7, "b": 8})

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("15")],
        calc.tools,
        at("tool_dispatch", 1, edit),
    )

    assert calc.ran == [("add", {"a": 7, "b": 8})]
    changes = interventions(result.events)
    assert [(c.before, c.after) for c in changes] == [
        ({"a": 1, "b": 2}, {"a": 5, "b": 5}),
        ({"a": 5, "b": 5}, {"a": 7, "b": 8}),
    ]


async def test_the_tool_gets_its_own_copy_of_edited_arguments() -> None:
    given: dict[str, Any] = {"items": [1, 2]}

    @tool
    def total(items: list[int]) -> int:
        """Sum a list (and scribble on it)."""
        items.append(100)
        return sum(items)

    def edit(point: PausePoint) -> None:
        point.edit_args("c1", given)

    result, _ = await run(
        [calls(tool_call("total", {"items": [1]}, "c1")), final("103")],
        [total],
        at("tool_dispatch", 1, edit),
    )

    assert given == {"items": [1, 2]}
    [change] = interventions(result.events)
    assert change.after == {"items": [1, 2]}
    reply = result.messages[1]
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["args"] == {"items": [1, 2]}
    assert result.messages[2].content == "103"


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({"a": "ten", "b": 1}, "wrong type"),
        ({"a": 1}, "missing"),
        ({"a": 1, "b": 2, "c": 3}, "unknown name"),
        ({"a": 1, "b": float("nan")}, "not JSON"),
        ([1, 2], "not an object"),
        ({1: 2}, "non-text key"),
    ],
)
async def test_a_bad_edit_is_refused_and_the_pause_holds(args: Any, why: str) -> None:
    calc = Calculator()
    errors: list[InterventionError] = []

    def edit(point: PausePoint) -> None:
        errors.append(refused(lambda p: p.edit_args("c1", args), point))
        assert [dict(c.args) for c in point.calls] == [{"a": 1, "b": 2}]
        point.edit_args("c1", {"a": 2, "b": 2})  # the same pause still takes a good edit

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("4")],
        calc.tools,
        at("tool_dispatch", 1, edit),
    )

    [error] = errors
    assert (error.action, error.reason, error.call_id) == ("edit_args", "invalid_args", "c1")
    assert calc.ran == [("add", {"a": 2, "b": 2})]
    assert [c.after for c in interventions(result.events)] == [{"a": 2, "b": 2}]


async def test_json_schema_tools_are_checked_with_their_schema() -> None:
    ran: list[dict[str, Any]] = []
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
        "additionalProperties": False,
    }

    def forecast(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "sunny"

    weather = StructuredTool.from_function(
        forecast, name="weather", description="Forecast.", args_schema=schema
    )
    errors: list[InterventionError] = []

    def edit(point: PausePoint) -> None:
        for bad in ({"city": "Oslo", "days": 0}, {"days": 2}, {"city": "Oslo", "x": 1}):
            errors.append(refused(lambda p, bad=bad: p.edit_args("w1", bad), point))
        point.edit_args("w1", {"city": "Oslo", "days": 3})

    await run(
        [calls(tool_call("weather", {"city": "Rome"}, "w1")), final("sunny")],
        [weather],
        at("tool_dispatch", 1, edit),
    )

    assert [e.reason for e in errors] == ["invalid_args"] * 3
    assert ran == [{"city": "Oslo", "days": 3}]


def nested(depth: int) -> Any:
    """A value ``depth`` lists deep (built without recursion)."""
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


def storing(ran: list[dict[str, Any]], schema: dict[str, Any] | None = None) -> BaseTool:
    """A JSON-schema tool taking any ``data``, remembering what it ran with."""

    def store(**kwargs: Any) -> str:
        ran.append(kwargs)
        return "stored"

    return StructuredTool.from_function(
        store,
        name="store",
        description="Store data.",
        args_schema=schema or {"type": "object", "properties": {"data": {}}},
    )


@pytest.mark.parametrize("depth", [100, 10_000])
async def test_arguments_nested_too_deep_are_refused_and_the_pause_holds(depth: int) -> None:
    ran: list[dict[str, Any]] = []
    errors: list[InterventionError] = []

    def edit(point: PausePoint) -> None:
        errors.append(refused(lambda p: p.edit_args("s1", {"data": nested(depth)}), point))
        assert [dict(c.args) for c in point.calls] == [{"data": 1}]
        point.edit_args("s1", {"data": nested(20)})  # the same pause takes a sane edit

    result, _ = await run(
        [calls(tool_call("store", {"data": 1}, "s1")), final("stored")],
        [storing(ran)],
        at("tool_dispatch", 1, edit),
    )

    [error] = errors
    assert (error.action, error.reason, error.call_id) == ("edit_args", "invalid_args", "s1")
    assert "nested" in str(error)
    assert ran == [{"data": nested(20)}]
    [change] = interventions(result.events)
    assert change.after == {"data": nested(20)}  # recorded whole


async def test_an_edit_of_a_tool_whose_schema_refers_to_itself_is_refused() -> None:
    ran: list[dict[str, Any]] = []
    looping = {
        "type": "object",
        "properties": {"data": {"$ref": "#/$defs/again"}},
        "$defs": {"again": {"$ref": "#/$defs/again"}},
    }
    errors: list[InterventionError] = []

    def edit(point: PausePoint) -> None:
        errors.append(refused(lambda p: p.edit_args("s1", {"data": 2}), point))
        point.skip("s1", "written by hand")  # the pause holds and takes another change

    result, _ = await run(
        [calls(tool_call("store", {"data": 1}, "s1")), final("ok")],
        [storing(ran, looping)],
        at("tool_dispatch", 1, edit),
    )

    [error] = errors
    assert (error.action, error.reason, error.call_id) == ("edit_args", "invalid_args", "s1")
    assert "$ref" in str(error)
    assert ran == []
    assert [c.action for c in interventions(result.events)] == ["skip"]


async def test_pydantic_schema_with_aliases_accepts_the_names_the_model_sees() -> None:
    class Query(BaseModel):
        text: str = Field(description="what to look for")
        top_k: int = 3

    ran: list[tuple[str, int]] = []

    @tool(args_schema=Query)
    def search(text: str, top_k: int = 3) -> str:
        """Search."""
        ran.append((text, top_k))
        return "found"

    def edit(point: PausePoint) -> None:
        point.edit_args("s1", {"text": "keys", "top_k": 1})

    await run(
        [calls(tool_call("search", {"text": "k"}, "s1")), final("found")],
        [search],
        at("tool_dispatch", 1, edit),
    )

    assert ran == [("keys", 1)]


async def test_an_unparseable_call_is_fixed_by_giving_it_arguments() -> None:
    calc = Calculator()
    broken = AIMessage(
        content="",
        tool_calls=[tool_call("add", {"a": 1, "b": 1}, "ok")],
        invalid_tool_calls=[invalid_call("add", '{"a": 2, "b": ', "bad", "unterminated JSON")],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    )
    errors: list[InterventionError] = []
    views: list[Any] = []

    def fix(point: PausePoint) -> None:
        views.extend(point.calls)
        errors.append(refused(lambda p: p.skip("bad", "5"), point))
        point.edit_args("bad", {"a": 2, "b": 3})

    result, model = await run([broken, final("2 and 5")], calc.tools, at("tool_dispatch", 1, fix))

    assert [(v.id, v.valid) for v in views] == [("ok", True), ("bad", False)]
    assert (errors[0].action, errors[0].reason) == ("skip", "not_allowed")
    assert sorted(calc.ran, key=str) == [("add", {"a": 1, "b": 1}), ("add", {"a": 2, "b": 3})]
    reply = result.messages[1]
    assert isinstance(reply, AIMessage)
    assert [c["id"] for c in reply.tool_calls] == ["ok", "bad"]
    assert reply.invalid_tool_calls == []
    [change] = interventions(result.events)
    assert change.before == {"raw": '{"a": 2, "b": ', "error": "unterminated JSON"}
    dispatched = {e.tool_call_id: e for e in result.events if isinstance(e, ToolDispatched)}
    assert (dispatched["bad"].status, dispatched["bad"].content) == ("success", "5")
    assert [m.content for m in model.calls[1].messages if isinstance(m, ToolMessage)] == [
        "2",
        "5",
    ]


async def test_anthropic_style_tool_use_blocks_follow_the_edit() -> None:
    calc = Calculator()
    reply = AIMessage(
        content=[
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1, "b": 2}},
        ],
        tool_calls=[tool_call("add", {"a": 1, "b": 2}, "t1")],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15},
    )

    def edit(point: PausePoint) -> None:
        point.edit_args("t1", {"a": 4, "b": 4})

    _, model = await run([reply, final("8")], calc.tools, at("tool_dispatch", 1, edit))

    sent = model.calls[1].messages[1]
    assert isinstance(sent, AIMessage)
    assert isinstance(sent.content, list)
    assert sent.content[1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "add",
        "input": {"a": 4, "b": 4},
    }
    assert sent.content[0] == {"type": "text", "text": "Adding."}
    assert calc.ran == [("add", {"a": 4, "b": 4})]


# -- skip -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["success", "error"])
async def test_a_skipped_call_never_runs_and_the_model_reads_the_written_result(
    status: Any,
) -> None:
    calc = Calculator()

    def skip(point: PausePoint) -> None:
        point.skip("c2", "file not needed", status=status)

    result, model = await run(
        [
            calls(tool_call("add", {"a": 1, "b": 1}, "c1"), tool_call("read", {"path": "x"}, "c2")),
            final("2"),
        ],
        calc.tools,
        at("tool_dispatch", 1, skip),
    )

    assert calc.ran == [("add", {"a": 1, "b": 1})]
    results = [m for m in model.calls[1].messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content, m.status) for m in results] == [
        ("c1", "2", "success"),
        ("c2", "file not needed", status),
    ]
    dispatched = {e.tool_call_id: e for e in result.events if isinstance(e, ToolDispatched)}
    assert dispatched["c2"].ran is False
    assert dispatched["c2"].status == status
    assert dispatched["c2"].error_reason == ("skipped" if status == "error" else None)
    assert not any(isinstance(e, ToolStarted) and e.tool_call_id == "c2" for e in result.events)
    [change] = interventions(result.events)
    assert (change.action, change.tool_call_id) == ("skip", "c2")
    assert change.before == {"name": "read", "args": {"path": "x"}}
    assert change.after == {"content": "file not needed", "status": status}


async def test_every_call_of_a_round_can_be_skipped() -> None:
    calc = Calculator()

    def skip(point: PausePoint) -> None:
        for call in point.calls:
            point.skip(call.id, f"by hand {call.id}")

    result, model = await run(
        [
            calls(
                tool_call("add", {"a": 1, "b": 1}, "c1"), tool_call("add", {"a": 2, "b": 2}, "c2")
            ),
            final("done"),
        ],
        calc.tools,
        at("tool_dispatch", 1, skip),
    )

    assert calc.ran == []
    assert [m.content for m in model.calls[1].messages if isinstance(m, ToolMessage)] == [
        "by hand c1",
        "by hand c2",
    ]
    assert len(interventions(result.events)) == 2


async def test_edited_then_skipped_and_refusals_after_a_skip() -> None:
    calc = Calculator()
    errors: list[InterventionError] = []

    def change(point: PausePoint) -> None:
        point.edit_args("c1", {"a": 3, "b": 3})
        point.skip("c1", "6")
        errors.append(refused(lambda p: p.skip("c1", "again"), point))
        errors.append(refused(lambda p: p.edit_args("c1", {"a": 1, "b": 1}), point))

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("6")],
        calc.tools,
        at("tool_dispatch", 1, change),
    )

    assert calc.ran == []
    assert [(e.action, e.reason) for e in errors] == [
        ("skip", "not_allowed"),
        ("edit_args", "not_allowed"),
    ]
    skip = interventions(result.events)[1]
    assert skip.before == {"name": "add", "args": {"a": 3, "b": 3}}


@pytest.mark.parametrize(
    ("content", "status"), [(42, "success"), ("fine", "maybe"), (None, "error")]
)
async def test_a_bad_written_result_is_refused(content: Any, status: Any) -> None:
    calc = Calculator()
    errors: list[InterventionError] = []

    def skip(point: PausePoint) -> None:
        errors.append(refused(lambda p: p.skip("c1", content, status=status), point))

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("tool_dispatch", 1, skip),
    )

    assert [(e.action, e.reason, e.call_id) for e in errors] == [("skip", "not_allowed", "c1")]
    assert calc.ran == [("add", {"a": 1, "b": 2})]
    assert interventions(result.events) == []


# -- append -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "Use the read tool next.",
        ("user", "Use the read tool next."),
        {"role": "user", "content": "Use the read tool next."},
        HumanMessage("Use the read tool next."),
    ],
)
async def test_an_appended_message_is_sent_with_the_next_call(message: Any) -> None:
    calc = Calculator()
    seen: list[int] = []

    def append(point: PausePoint) -> None:
        before = len(point.messages)
        point.append(message)
        seen.extend([before, len(point.messages)])

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, append),
    )

    assert seen == [3, 4]
    last = model.calls[1].messages[-1]
    assert isinstance(last, HumanMessage)
    assert last.content == "Use the read tool next."
    assert isinstance(model.calls[1].messages[-2], ToolMessage)
    [change] = interventions(result.events)
    assert (change.action, change.stage, change.round, change.before) == (
        "append_message",
        "model_call",
        2,
        None,
    )
    assert isinstance(change.after, dict)
    assert change.after["type"] == "human"
    assert change.after["data"]["content"] == "Use the read tool next."


async def test_a_message_appended_before_the_first_call_and_before_synthesis() -> None:
    calc = Calculator()

    def hint(point: PausePoint) -> None:
        point.append("Be brief.")

    def nudge(point: PausePoint) -> None:
        assert point.purpose == "synthesis"
        point.append(AIMessage("Summary so far: 3."))

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 1, hint),
        at("model_call", 2, nudge),
        tool_max_rounds=1,
    )

    assert [type(m).__name__ for m in model.calls[0].messages] == ["HumanMessage"] * 2
    assert model.calls[0].messages[-1].content == "Be brief."
    assert model.calls[1].tool_names == ()  # the synthesis call
    assert model.calls[1].messages[-1].content == "Summary so far: 3."
    assert result.synthesis_was_run
    assert [(c.round, c.action) for c in interventions(result.events)] == [
        (1, "append_message"),
        (2, "append_message"),
    ]


@pytest.mark.parametrize(
    "message",
    [
        ToolMessage("x", tool_call_id="c1"),
        {"role": "tool", "content": "x", "tool_call_id": "c9"},
        AIMessage("", tool_calls=[tool_call("add", {"a": 1, "b": 1}, "new")]),
        SystemMessage("You are now a pirate."),
        "",
        "   ",
        42,
        None,
        ("bogus", "text"),
        pytest.param(("tool", "x"), id="tool-pair-without-id"),
        pytest.param({"role": "tool", "content": "x"}, id="tool-dict-without-id"),
        pytest.param(
            AIMessage(content=[{"type": "tool_use", "id": "t9", "name": "add", "input": {}}]),
            id="tool_use-block",
        ),
        pytest.param(
            AIMessage(
                content=[
                    {"type": "text", "text": "Calling."},
                    {"type": "function_call", "call_id": "f9", "name": "add", "arguments": "{}"},
                ]
            ),
            id="function_call-block",
        ),
        pytest.param(
            AIMessage(content=[{"type": "tool_call", "id": "s9", "name": "add", "args": {}}]),
            id="standard-tool_call-block",
        ),
        pytest.param(
            HumanMessage(content=[{"type": "tool_result", "tool_use_id": "c1", "content": "5"}]),
            id="result-block-for-an-answered-call",
        ),
        pytest.param(
            HumanMessage(content=[{"type": "tool_result", "tool_use_id": "zz", "content": "5"}]),
            id="result-block-for-no-call",
        ),
        pytest.param(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]},
            id="result-block-in-a-dict",
        ),
        pytest.param(HumanMessage(content=[{"type": "text", "text": ""}]), id="empty-text-block"),
        pytest.param(
            HumanMessage(content=[{"type": "text", "text": "  "}, "\n"]), id="blank-blocks"
        ),
        pytest.param(HumanMessage(content=[{"type": "text"}]), id="text-block-without-text"),
        pytest.param(AIMessage(content=[]), id="no-blocks"),
        pytest.param(HumanMessage(content=[{"type": "image"}]), id="image-block-without-data"),
        pytest.param(
            HumanMessage(content=[{"type": "server_tool_use", "id": "w1", "name": "search"}]),
            id="server-tool-call-block",
        ),
    ],
)
async def test_a_message_that_would_break_the_transcript_is_refused(message: Any) -> None:
    calc = Calculator()
    errors: list[InterventionError] = []
    sizes: list[int] = []

    def append(point: PausePoint) -> None:
        before = len(point.messages)
        errors.append(refused(lambda p: p.append(message), point))
        sizes.extend([before, len(point.messages)])

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, append),
    )

    assert [(e.action, e.reason) for e in errors] == [("append_message", "not_allowed")]
    assert sizes[0] == sizes[1]
    assert len(model.calls[1].messages) == 3
    assert interventions(result.events) == []


async def test_a_refused_result_block_says_which_call_it_would_answer_twice() -> None:
    calc = Calculator()
    errors: list[InterventionError] = []

    def append(point: PausePoint) -> None:
        for call_id in ("c1", "zz"):
            block = {"type": "tool_result", "tool_use_id": call_id, "content": "5"}
            message = HumanMessage(content=[block])
            errors.append(refused(lambda p, m=message: p.append(m), point))

    await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, append),
    )

    answered, unknown = (str(e) for e in errors)
    assert "'c1'" in answered
    assert "already" in answered
    assert "'zz'" in unknown
    assert "no call" in unknown


async def test_a_message_with_text_and_an_image_block_is_added() -> None:
    calc = Calculator()
    content = [
        {"type": "text", "text": "Compare with this chart."},
        {"type": "image", "url": "https://example.com/chart.png"},
    ]

    def append(point: PausePoint) -> None:
        point.append(HumanMessage(content=content))

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, append),
    )

    assert model.calls[1].messages[-1].content == content
    assert [c.action for c in interventions(result.events)] == ["append_message"]


async def test_a_message_changed_after_it_was_added_stays_as_added() -> None:
    calc = Calculator()
    hint = HumanMessage("Use the read tool next.")

    def append(point: PausePoint) -> None:
        point.append(hint)
        hint.content = "changed behind the point's back"

    _, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, append),
    )

    assert model.calls[1].messages[-1].content == "Use the read tool next."


async def test_the_messages_a_pause_shows_cannot_change_the_run() -> None:
    calc = Calculator()

    def scribble(point: PausePoint) -> None:
        question, reply, result = point.messages
        assert isinstance(reply, AIMessage)
        reply.tool_calls.append(tool_call("add", {"a": 5, "b": 5}, "sneaked"))
        reply.content = "rewritten"
        result.content = "999"
        question.content = "Do something else."
        assert [m.content for m in point.messages] == ["Compute.", "", "3"]

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("model_call", 2, scribble),
    )

    sent = model.calls[1].messages
    assert [m.content for m in sent] == ["Compute.", "", "3"]
    assert isinstance(sent[1], AIMessage)
    assert [c["id"] for c in sent[1].tool_calls] == ["c1"]
    assert interventions(result.events) == []


async def test_the_reply_an_editor_shows_cannot_change_the_calls() -> None:
    calc = Calculator()

    def scribble(point: PausePoint) -> None:
        editor = point.editor
        assert editor is not None
        reply = getattr(editor, "reply")  # noqa: B009 - the editor's public view of the reply
        reply.tool_calls[0]["args"]["a"] = 99
        reply.tool_calls.append(tool_call("add", {"a": 5, "b": 5}, "sneaked"))
        written = getattr(editor, "written")  # noqa: B009
        written["c1"] = None  # not a written result: only skip() answers a call

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")],
        calc.tools,
        at("tool_dispatch", 1, scribble),
    )

    assert calc.ran == [("add", {"a": 1, "b": 2})]
    assert interventions(result.events) == []


# -- edit_result ------------------------------------------------------------------------


async def test_a_result_not_yet_sent_is_replaced_and_the_original_kept() -> None:
    calc = Calculator()

    def fix(point: PausePoint) -> None:
        point.edit_result("c1", "404: not found", status="error")

    result, model = await run(
        [calls(tool_call("read", {"path": "x"}, "c1")), final("missing")],
        calc.tools,
        at("model_call", 2, fix),
    )

    sent = model.calls[1].messages[-1]
    assert isinstance(sent, ToolMessage)
    assert (sent.content, sent.status, sent.tool_call_id) == ("404: not found", "error", "c1")
    assert sent.artifact == {"original": "contents of x", "artifact": None, "edited": True}
    [change] = interventions(result.events)
    assert (change.action, change.stage, change.tool_call_id) == ("edit_result", "model_call", "c1")
    assert change.before == {"content": "contents of x", "status": "success"}
    assert change.after == {"content": "404: not found", "status": "error"}
    # the tool's own report stays as it ran; the transcript has the edit
    dispatched = next(e for e in result.events if isinstance(e, ToolDispatched))
    assert dispatched.content == "contents of x"


async def test_editing_a_result_keeps_its_status_unless_told() -> None:
    calc = Calculator()

    def fix(point: PausePoint) -> None:
        point.edit_result("c1", "contents of y")

    _, model = await run(
        [calls(tool_call("read", {"path": "x"}, "c1")), final("y")],
        calc.tools,
        at("model_call", 2, fix),
    )

    sent = model.calls[1].messages[-1]
    assert isinstance(sent, ToolMessage)
    assert (sent.content, sent.status) == ("contents of y", "success")


async def test_a_result_the_model_has_seen_cannot_be_edited() -> None:
    calc = Calculator()
    errors: list[InterventionError] = []

    def late(point: PausePoint) -> None:
        errors.append(refused(lambda p: p.edit_result("c1", "too late"), point))
        errors.append(refused(lambda p: p.edit_result("nope", "x"), point))
        errors.append(refused(lambda p: p.edit_result("c2", 5), point))  # type: ignore[arg-type]
        errors.append(refused(lambda p: p.edit_result("c2", "x", status="odd"), point))  # type: ignore[arg-type]

    result, model = await run(
        [
            calls(tool_call("add", {"a": 1, "b": 2}, "c1")),
            calls(tool_call("add", {"a": 3, "b": 4}, "c2")),
            final("3 and 7"),
        ],
        calc.tools,
        at("model_call", 3, late),
    )

    assert [(e.reason, e.call_id) for e in errors] == [
        ("already_sent", "c1"),
        ("unknown_call", "nope"),
        ("not_allowed", "c2"),
        ("not_allowed", "c2"),
    ]
    assert [m.content for m in model.calls[2].messages if isinstance(m, ToolMessage)] == [
        "3",
        "7",
    ]
    assert interventions(result.events) == []


# -- where each change belongs ------------------------------------------------------------


async def test_each_change_is_refused_at_the_other_stage() -> None:
    calc = Calculator()
    errors: dict[str, list[tuple[str, str]]] = {"model_call": [], "tool_dispatch": []}
    shown: dict[str, tuple[int, int]] = {}

    async def hook(point: PausePoint) -> None:
        if point.round != 1:
            return
        shown[point.stage] = (len(point.calls), len(point.messages))
        for step in (
            lambda p: p.edit_args("c1", {"a": 1, "b": 1}),
            lambda p: p.skip("c1", "x"),
            lambda p: p.append("hi"),
            lambda p: p.edit_result("c1", "x"),
        ):
            try:
                step(point)
            except InterventionError as exc:
                errors[point.stage].append((exc.action, exc.reason))

    result, _ = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")], calc.tools, hook
    )

    # before round 1's call no result exists yet
    assert errors["model_call"] == [
        ("edit_args", "wrong_stage"),
        ("skip", "wrong_stage"),
        ("edit_result", "unknown_call"),
    ]
    assert errors["tool_dispatch"] == [
        ("append_message", "wrong_stage"),
        ("edit_result", "wrong_stage"),
    ]
    assert shown == {"model_call": (0, 1), "tool_dispatch": (1, 0)}
    actions = [c.action for c in interventions(result.events)]
    assert actions == ["append_message", "edit_args", "skip"]


async def test_the_pruning_pause_changes_nothing() -> None:
    calc = Calculator()
    pruner = ScriptedChatModel([final("short")])
    points: list[PausePoint] = []
    errors: list[InterventionError] = []

    async def hook(point: PausePoint) -> None:
        if point.purpose == "pruning":
            points.append(point)
            errors.append(refused(lambda p: p.append("x"), point))

    model = ScriptedChatModel([calls(tool_call("read", {"path": "big"}, "c1")), final("ok")])
    agent = LLMAgent(
        model,
        calc.tools,
        AgentConfig(prune_tools=("read",), prune_min_chars=3),
        pruning_model=pruner,
        pause_hooks=[hook],
    )
    result = await agent.arun("Read it.")

    assert len(points) == 1
    assert (points[0].calls, points[0].messages) == ((), ())
    assert (errors[0].action, errors[0].reason) == ("append_message", "wrong_stage")
    assert interventions(result.events) == []


async def test_a_point_refuses_changes_once_the_loop_has_gone_on() -> None:
    calc = Calculator()
    kept: list[PausePoint] = []

    async def hook(point: PausePoint) -> None:
        kept.append(point)

    result, model = await run(
        [calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")], calc.tools, hook
    )

    first_call, dispatch = kept[0], kept[1]
    for point, step in (
        (first_call, lambda p: p.append("late")),
        (dispatch, lambda p: p.edit_args("c1", {"a": 9, "b": 9})),
        (dispatch, lambda p: p.skip("c1", "late")),
        (kept[2], lambda p: p.edit_result("c1", "late")),
    ):
        assert refused(step, point).reason == "expired"
    assert calc.ran == [("add", {"a": 1, "b": 2})]
    assert interventions(result.events) == []
    assert len(model.calls[0].messages) == 1


async def test_changes_from_another_thread_while_the_loop_waits() -> None:
    """The widget's case: clicks arrive on the kernel's thread while the loop waits."""
    calc = Calculator()
    paused = threading.Event()
    holder: list[PausePoint] = []
    release = asyncio.Event()

    async def hook(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            holder.append(point)
            paused.set()
            await release.wait()

    def person() -> None:
        paused.wait(5)
        point = holder[0]
        point.edit_args("c1", {"a": 2, "b": 3})
        point.skip("c2", "skipped from the kernel thread")

    model = ScriptedChatModel(
        [
            calls(
                tool_call("add", {"a": 1, "b": 1}, "c1"), tool_call("add", {"a": 9, "b": 9}, "c2")
            ),
            final("5"),
        ]
    )
    agent = LLMAgent(model, calc.tools, pause_hooks=[hook])
    task = asyncio.create_task(agent.arun("Add."))
    await asyncio.to_thread(person)
    release.set()
    result = await task

    assert calc.ran == [("add", {"a": 2, "b": 3})]
    assert [c.action for c in interventions(result.events)] == ["edit_args", "skip"]
    assert transcript(result.events) == list(result.messages)


async def test_an_observer_sees_each_intervention_as_it_happens() -> None:
    calc = Calculator()
    seen: list[str] = []
    point_calls: list[int] = []
    holder: list[PausePoint] = []

    def observer(event: Event) -> None:
        if isinstance(event, Intervention):
            seen.append(event.action)
            point_calls.append(len(holder[0].calls))  # reading the point again is safe

    async def hook(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            holder.append(point)
            point.edit_args("c1", {"a": 0, "b": 0})

    model = ScriptedChatModel([calls(tool_call("add", {"a": 1, "b": 1}, "c1")), final("0")])
    await LLMAgent(model, calc.tools, observers=[observer], pause_hooks=[hook]).arun("x")

    assert seen == ["edit_args"]
    assert point_calls == [1]


# -- what the record shows ----------------------------------------------------------------


async def test_interventions_survive_a_trace_and_show_in_the_view(tmp_path: Any) -> None:
    calc = Calculator()

    def dispatch(point: PausePoint) -> None:
        point.edit_args("c1", {"a": 5, "b": 6})
        point.skip("c2", "not needed")

    def before_call(point: PausePoint) -> None:
        point.edit_result("c1", "eleven")
        point.append("Answer in words.")

    result, _ = await run(
        [
            calls(tool_call("add", {"a": 1, "b": 1}, "c1"), tool_call("read", {"path": "p"}, "c2")),
            final("eleven"),
        ],
        calc.tools,
        at("tool_dispatch", 1, dispatch),
        at("model_call", 2, before_call),
    )

    path = write_trace(tmp_path / "run.jsonl", result.events)
    events = read_trace(path).events
    assert events == result.events
    assert transcript(events) == list(result.messages)
    view = RunView.from_events(events)
    row1, row2 = view.row(1), view.row(2)
    assert row1 is not None
    assert row2 is not None
    assert [c.action for c in row1.interventions] == ["edit_args", "skip"]
    assert [c.action for c in row2.interventions] == ["edit_result", "append_message"]
    assert (row1.interventions[0].before, row1.interventions[0].after) == (
        {"a": 1, "b": 1},
        {"a": 5, "b": 6},
    )
    tools = {t.id: t for t in row1.tools}
    assert tools["c1"].content == "11"
    assert (tools["c2"].ran, tools["c2"].content) == (False, "not needed")


async def test_a_run_without_hooks_has_no_pause_and_no_intervention() -> None:
    calc = Calculator()
    result, _ = await run([calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")], calc.tools)
    assert interventions(result.events) == []
    assert calc.ran == [("add", {"a": 1, "b": 2})]


async def test_the_view_shows_the_arguments_a_call_really_ran_with() -> None:
    ran: list[int] = []

    @tool
    def square(n: int) -> int:
        """Squares n."""
        ran.append(n)
        return n * n

    async def fix(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            point.edit_args("q1", {"n": 3})

    model = ScriptedChatModel(
        [calls(tool_call("square", {"n": 300}, "q1")), final("9")], model_name=MODEL
    )
    result = await LLMAgent(model, [square], pause_hooks=[fix]).arun("go")
    view = RunView.from_events(result.events)
    (row,) = view.rounds[0].tools
    assert ran == [3]
    assert row.args == {"n": 3}  # what ran, not what the model first asked for
    assert view.rounds[0].tool_calls[0].args == {"n": 300}  # the model's ask stays visible


async def test_time_held_at_a_pause_is_its_own_segment_not_round_time() -> None:
    # a person reading a pause must not make a round of a quick call and a quick tool slow
    calc = Calculator()
    events: list[Event] = []

    async def linger(point: PausePoint) -> None:
        await asyncio.sleep(0.1)  # someone reads the pause, then goes on

    model = ScriptedChatModel([calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")])
    agent = LLMAgent(model, calc.tools, observers=[events.append], pause_hooks=[linger])
    await agent.arun("Compute.")

    held = [e for e in events if isinstance(e, Paused)]
    assert [(e.round, e.stage, e.purpose) for e in held] == [
        (1, "model_call", "round"),
        (1, "tool_dispatch", "tools"),
        (2, "model_call", "round"),
    ]
    assert all(e.paused_s >= 0.1 for e in held)
    # each pause ends before what it held began, so no latency or duration holds it
    kinds = [e.kind for e in events if e.round == 1]
    assert kinds.index("pause") < kinds.index("model_call_start")
    assert kinds.index("pause", kinds.index("model_call")) < kinds.index("tool_start")
    view = RunView.from_events(events)
    first = view.row(1)
    assert first is not None
    assert first.paused_s == pytest.approx(held[0].paused_s + held[1].paused_s)
    assert first.started_t is not None
    assert first.ended_t is not None
    assert first.duration_s == pytest.approx(first.ended_t - first.started_t - first.paused_s)
    assert 0 <= first.duration_s < first.ended_t - first.started_t
    assert view.paused_s == pytest.approx(sum(e.paused_s for e in held))
    assert view.active_s == pytest.approx(view.elapsed_s - view.paused_s)


async def test_a_trace_written_before_pauses_were_timed_still_reads() -> None:
    # old traces have no pause events: nothing paused, round time as the events say
    calc = Calculator()
    result, _ = await run([calls(tool_call("add", {"a": 1, "b": 2}, "c1")), final("3")], calc.tools)
    view = RunView.from_events(result.events)
    row = view.row(1)
    assert row is not None
    assert row.started_t is not None
    assert row.ended_t is not None
    assert (view.paused_s, row.paused_s) == (0.0, 0.0)
    assert row.duration_s == pytest.approx(row.ended_t - row.started_t)


class _Picky:
    """A pause hook that says where it may hold (``may_hold``) and records where it was
    asked."""

    def __init__(self, stages: set[str]) -> None:
        self.stages = stages
        self.asked: list[str] = []
        self.called: list[str] = []

    def may_hold(self, stage: str) -> bool:
        self.asked.append(stage)
        return stage in self.stages

    async def __call__(self, point: PausePoint) -> None:
        self.called.append(point.stage)


async def test_a_hook_is_only_awaited_where_it_says_it_may_hold(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"}, "c1")), final("done")])
    picky = _Picky({"tool_dispatch"})
    plain: list[str] = []

    async def every(point: PausePoint) -> None:
        plain.append(point.stage)

    result = await LLMAgent(model, [echo_tool], pause_hooks=[picky, every]).arun("go")
    assert result.final_response.text == "done"
    assert picky.asked == ["model_call", "tool_dispatch", "model_call"]
    assert picky.called == ["tool_dispatch"]
    assert plain == ["model_call", "tool_dispatch", "model_call"]  # no may_hold: always asked


async def test_a_step_controller_may_hold_only_its_armed_task_where_its_mode_stops() -> None:
    controller = StepController(mode="tools")
    assert not controller.may_hold("tool_dispatch")  # not armed: never holds

    async def inside() -> tuple[bool, bool]:
        return controller.may_hold("tool_dispatch"), controller.may_hold("model_call")

    task = asyncio.ensure_future(inside())
    controller.arm(task)
    assert await task == (True, False)
    assert not controller.may_hold("tool_dispatch")  # another task (this test's own)

    async def not_paused() -> tuple[bool, bool, bool]:
        # nothing waits: Continue and Step change nothing, so the run still pauses
        return controller.continue_(), controller.step(), controller.may_hold("tool_dispatch")

    idle = asyncio.ensure_future(not_paused())
    controller.arm(idle)
    assert await idle == (False, False, True)

    async def held() -> bool:
        await controller(PausePoint("r", 1, "tool_dispatch", "tools"))
        return controller.may_hold("tool_dispatch")

    again = asyncio.ensure_future(held())
    controller.arm(again)
    await until(lambda: controller.paused)
    assert not controller.continue_(at=controller.pauses - 1)  # meant for an earlier pause
    assert controller.continue_(at=controller.pauses)
    assert await again is False  # released while paused: no more pauses this run
