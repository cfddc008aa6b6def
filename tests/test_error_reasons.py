"""An error's reason names what went wrong, wherever it is said: a tool's error result,
a failed model call, a failed run.

MCP and httpx clients fail inside anyio task groups, which wrap every failure in an
``ExceptionGroup`` of one ("unhandled errors in a TaskGroup (1 sub-exception)") and often
leave an exception with no message (``ClosedResourceError``) whose real cause sits in its
chain. The group of one stands for its member; an exception without a message is named by
its class and what it came out of; no reason ends in an empty ``: ``.
"""

from __future__ import annotations

import anyio
import httpx
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import Event, LoopFailed, ModelCallFailed, ToolDispatched

REFUSED = "All connection attempts failed"


async def _refused_connection() -> None:
    raise httpx.ConnectError(REFUSED)


async def _in_a_task_group() -> str:
    """What an MCP client's session does: the connection fails inside a task group."""
    async with anyio.create_task_group() as group:
        group.start_soon(_refused_connection)
    return "never"


async def _closed_after_refused() -> str:
    """A stream closed because the connection behind it failed: no message of its own."""
    try:
        await _refused_connection()
    except httpx.ConnectError:
        raise anyio.ClosedResourceError()  # noqa: B904 - raised while handling: the point
    return "never"


async def _closed_from_refused() -> str:
    try:
        await _refused_connection()
    except httpx.ConnectError as exc:
        raise anyio.ClosedResourceError from exc
    return "never"


async def _silent() -> str:
    raise ValueError


def _tool(coroutine: object, name: str = "connect") -> BaseTool:
    return StructuredTool.from_function(coroutine=coroutine, name=name, description="Connects.")


async def _tool_result(tool_: BaseTool) -> tuple[ToolMessage, ToolDispatched]:
    events: list[Event] = []
    model = ScriptedChatModel(
        [calls(tool_call(tool_.name, {}, "c1")), final("went on")], model_name=MODEL
    )
    result = await LLMAgent(model, [tool_], AgentConfig(), observers=[events.append]).arun("go")
    (message,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    return message, event


async def test_a_tool_failing_inside_a_task_group_names_the_exception_inside() -> None:
    message, event = await _tool_result(_tool(_in_a_task_group))
    assert message.content == f"Error: tool 'connect' raised ConnectError: {REFUSED}"
    assert event.content == message.content
    assert (event.error_reason, event.error_type) == ("tool_error", "ConnectError")


@pytest.mark.parametrize(
    ("body", "link"),
    [(_closed_after_refused, "while handling"), (_closed_from_refused, "caused by")],
    ids=["context", "cause"],
)
async def test_an_exception_without_a_message_is_named_with_what_it_came_out_of(
    body: object, link: str
) -> None:
    message, event = await _tool_result(_tool(body))
    assert message.content == (
        f"Error: tool 'connect' raised ClosedResourceError ({link} ConnectError: {REFUSED})"
    )
    assert event.error_type == "ClosedResourceError"


async def test_an_exception_with_nothing_to_say_is_named_by_its_class_alone() -> None:
    message, _ = await _tool_result(_tool(_silent, "silent"))
    assert message.content == "Error: tool 'silent' raised ValueError"


def _group(*members: Exception) -> ExceptionGroup[Exception]:
    """As anyio raises it: its text says "(1 sub-exception)" after the message."""
    return ExceptionGroup("unhandled errors in a TaskGroup", list(members))


async def test_a_model_call_failing_inside_a_task_group_names_the_exception_inside(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([_group(httpx.ConnectError(REFUSED))], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool], observers=[events.append]).arun("go")

    assert str(info.value) == f"tool loop failed in round 1: ConnectError: {REFUSED}"
    failed_call = next(e for e in events if isinstance(e, ModelCallFailed))
    assert (failed_call.error_type, failed_call.message) == ("ConnectError", REFUSED)
    failed_run = events[-1]
    assert isinstance(failed_run, LoopFailed)
    assert (failed_run.error_type, failed_run.message) == ("ConnectError", REFUSED)


async def test_a_run_failing_with_a_silent_exception_still_says_something(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([anyio.ClosedResourceError()], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool], observers=[events.append]).arun("go")

    assert str(info.value) == "tool loop failed in round 1: ClosedResourceError"
    for event in events:
        if isinstance(event, (ModelCallFailed, LoopFailed)):
            assert event.error_type == "ClosedResourceError"
            assert event.message.strip(), event  # never an empty reason after the type


def test_a_group_of_several_names_each_member() -> None:
    from toolloop_lab._support.errortext import explain

    group = _group(httpx.ConnectError(REFUSED), TimeoutError())
    assert explain(group) == (
        "ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions): "
        f"ConnectError: {REFUSED}; TimeoutError"
    )


def test_groups_nested_in_groups_of_one_stand_for_their_one_member() -> None:
    from toolloop_lab._support.errortext import describe, explain

    inner = httpx.ConnectError(REFUSED)
    assert explain(_group(_group(_group(inner)))) == f"ConnectError: {REFUSED}"
    assert describe(_group(_group(inner))) == REFUSED


def test_a_chain_that_loops_back_on_itself_ends() -> None:
    from toolloop_lab._support.errortext import explain

    first, second = anyio.ClosedResourceError(), anyio.BrokenResourceError()
    first.__cause__, second.__cause__ = second, first
    said = explain(first)
    assert said.startswith("ClosedResourceError (caused by BrokenResourceError (caused by ")
    assert len(said) < 2_000
