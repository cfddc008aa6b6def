"""Then steps about tool dispatch, for features/dispatch.feature and friends."""

from __future__ import annotations

from typing import Any

from behave import then
from hostile.hostilekit import check_messages
from langchain_core.messages import AIMessage, ToolMessage

from toolloop_lab.events import ToolDispatched


def _messages(context: Any) -> list[Any]:
    lab = context.lab
    if lab.result is not None:
        return list(lab.result.messages)
    assert lab.error is not None, "the run neither finished nor failed"
    return list(getattr(lab.error, "messages", []))


def _tool_message(context: Any, call_id: str) -> ToolMessage:
    found = [
        m for m in _messages(context) if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    ]
    assert len(found) == 1, f"{len(found)} tool messages for {call_id!r}"
    return found[0]


@then('the tool messages answer "{ids}" in that order')
def step_tool_message_order(context: Any, ids: str) -> None:
    expected = [i.strip() for i in ids.split(",")]
    got = [m.tool_call_id for m in _messages(context) if isinstance(m, ToolMessage)]
    assert got == expected, got


@then("every tool call has exactly one tool message")
def step_one_message_per_call(context: Any) -> None:
    messages = _messages(context)
    asked = [m for m in messages if isinstance(m, AIMessage)]
    assert any(m.tool_calls or m.invalid_tool_calls for m in asked), "no tool calls were made"
    check_messages(messages)  # each id answered exactly once, after the reply that asked


@then('the tool message for "{call_id}" has status "{status}"')
def step_tool_status(context: Any, call_id: str, status: str) -> None:
    assert _tool_message(context, call_id).status == status


@then('the tool message for "{call_id}" contains "{text}"')
def step_tool_contains(context: Any, call_id: str, text: str) -> None:
    content = str(_tool_message(context, call_id).content)
    assert text in content, content


@then('the tool message for "{call_id}" is exactly')
def step_tool_exact(context: Any, call_id: str) -> None:
    content = _tool_message(context, call_id).content
    assert content == context.text, content


@then('the tool message for "{call_id}" keeps the original output in its artifact')
def step_tool_artifact(context: Any, call_id: str) -> None:
    message = _tool_message(context, call_id)
    pruned = next(
        e
        for e in context.lab.events
        if getattr(e, "tool_call_id", None) == call_id and e.kind == "pruning"
    )
    assert message.artifact["original"] == pruned.original
    assert message.artifact["pruned"] is True
    assert len(pruned.original) > len(str(message.content))


@then('the dispatch event for "{call_id}" has reason "{reason}"')
def step_dispatch_reason(context: Any, call_id: str, reason: str) -> None:
    events = [
        e for e in context.lab.events if isinstance(e, ToolDispatched) and e.tool_call_id == call_id
    ]
    assert len(events) == 1, events
    assert events[0].status == "error"
    assert events[0].error_reason == reason, events[0].error_reason


@then('the dispatch event for "{call_id}" says its tool was stopped while running')
def step_dispatch_stopped(context: Any, call_id: str) -> None:
    events = [
        e for e in context.lab.events if isinstance(e, ToolDispatched) and e.tool_call_id == call_id
    ]
    assert len(events) == 1, events
    stopped = events[0]
    # it had begun: it ran (and may have had effects) until the stop, never "not run"
    assert (stopped.status, stopped.error_reason, stopped.ran) == ("cancelled", "cancelled", True)
    assert stopped.duration_s > 0
    # what the model reads says so: the call began, so it may have had effects
    assert "stopped while this call was running" in stopped.content
    assert "may have had effects" in stopped.content


@then('the tools finished in the order "{names}"')
def step_finish_order(context: Any, names: str) -> None:
    assert context.lab.finished == [n.strip() for n in names.split(",")], context.lab.finished


@then('the run answers "{text}"')
def step_run_answers(context: Any, text: str) -> None:
    lab = context.lab
    assert lab.error is None, repr(lab.error)
    assert lab.result is not None
    assert lab.result.final_response.text == text
    assert lab.result.messages[-1] is lab.result.final_response or any(
        m is lab.result.final_response for m in lab.result.messages
    )
