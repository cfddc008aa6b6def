"""One rule matches a tool's result to its call, whichever adapter saw the run.

The LangChain callback bridge and the spans source once each had their own rule, and they
disagreed on the cases below; each case is now run through both adapters (the same run told
as callbacks and as GenAI spans) and must read the same. The rule is
``toolloop_lab/_foreign/run.py``'s module docstring.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, Status, StatusCode, Tracer, use_span

from toolloop_lab import EventBridge
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    ModelCalled,
    ModelCallFailed,
    ModelCallStarted,
    ToolDispatched,
)
from toolloop_lab.otel import SpanSource

ASK = HumanMessage("Weather in Oslo?")


@dataclass(frozen=True)
class Reply:
    """A model call: the prompt it was sent and its reply."""

    prompt: Sequence[BaseMessage]
    reply: AIMessage


@dataclass(frozen=True)
class Tool:
    """A tool run: ``call_id`` is the call it names (``None``: it names none)."""

    name: str
    args: dict[str, Any]
    call_id: str | None
    result: str | None = None
    """``None``: the tool raised ``error``."""
    error: str = ""


Step = Reply | Tool


def _call(call_id: str, city: str) -> dict[str, Any]:
    return {"id": call_id, "name": "weather", "args": {"city": city}, "type": "tool_call"}


def _asks(*calls: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=list(calls))


# -- the LangChain adapter: the callbacks a framework would make ---------------------------


def through_callbacks(steps: Sequence[Step]) -> list[Event]:
    events: list[Event] = []
    bridge = EventBridge(events.append)
    root = uuid.uuid4()
    bridge.on_chain_start({"name": "agent"}, {"messages": [ASK]}, run_id=root)
    last: AIMessage | None = None
    for step in steps:
        key = uuid.uuid4()
        if isinstance(step, Reply):
            bridge.on_chat_model_start(
                {},
                [list(step.prompt)],
                run_id=key,
                parent_run_id=root,
                invocation_params={"tools": [{"name": "weather"}]},
            )
            result = LLMResult(generations=[[ChatGeneration(message=step.reply)]])
            bridge.on_llm_end(result, run_id=key)
            last = step.reply
            continue
        extra = {"tool_call_id": step.call_id} if step.call_id else {}
        bridge.on_tool_start(
            {"name": step.name},
            json.dumps(step.args),
            run_id=key,
            parent_run_id=root,
            inputs=step.args,
            **extra,
        )
        if step.result is None:
            bridge.on_tool_error(ValueError(step.error), run_id=key)
        elif step.call_id:
            message = ToolMessage(step.result, tool_call_id=step.call_id, name=step.name)
            bridge.on_tool_end(message, run_id=key)
        else:
            bridge.on_tool_end(step.result, run_id=key)
    bridge.on_chain_end({"messages": [ASK, last]}, run_id=root)
    return events


# -- the spans adapter: the GenAI spans a framework would send ------------------------------


def _parts(message: BaseMessage) -> dict[str, Any]:
    if isinstance(message, ToolMessage):
        part = {"type": "tool_call_response", "id": message.tool_call_id}
        return {"role": "tool", "parts": [{**part, "response": message.text}]}
    if isinstance(message, AIMessage):
        parts: list[dict[str, Any]] = [{"type": "text", "content": message.text}]
        for c in message.tool_calls:
            call = {"type": "tool_call", "id": c["id"], "name": c["name"]}
            parts.append({**call, "arguments": c["args"]})
        return {"role": "assistant", "parts": parts}
    return {"role": "user", "parts": [{"type": "text", "content": message.text}]}


def _messages(messages: Sequence[BaseMessage]) -> str:
    return json.dumps([_parts(m) for m in messages])


@contextmanager
def _span(tracer: Tracer, name: str, attributes: dict[str, Any]) -> Iterator[Span]:
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        yield span


def through_spans(steps: Sequence[Step]) -> list[Event]:
    events: list[Event] = []
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("test")
    with _span(tracer, "invoke_agent weather", {"gen_ai.operation.name": "invoke_agent"}):
        for step in steps:
            if isinstance(step, Reply):
                chat = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.input.messages": _messages(step.prompt),
                    "gen_ai.output.messages": _messages([step.reply]),
                    "gen_ai.tool.definitions": json.dumps([{"name": "weather"}]),
                }
                with _span(tracer, "chat gpt-4o", chat):
                    pass
                continue
            tool: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": step.name,
                "gen_ai.tool.call.arguments": json.dumps(step.args),
            }
            if step.call_id:
                tool["gen_ai.tool.call.id"] = step.call_id
            if step.result is not None:
                tool["gen_ai.tool.call.result"] = step.result
            with _span(tracer, f"execute_tool {step.name}", tool) as span:
                if step.result is None:
                    span.record_exception(ValueError(step.error))
                    span.set_status(Status(StatusCode.ERROR, step.error))
    provider.shutdown()
    return events


ADAPTERS: dict[str, Callable[[Sequence[Step]], list[Event]]] = {
    "callbacks": through_callbacks,
    "spans": through_spans,
}


@pytest.fixture(params=sorted(ADAPTERS))
def told(request: pytest.FixtureRequest) -> Callable[[Sequence[Step]], list[Event]]:
    return ADAPTERS[request.param]


@dataclass
class Read:
    """What the checks read off a run's events."""

    events: list[Event]
    dispatches: list[ToolDispatched] = field(init=False)

    def __post_init__(self) -> None:
        self.dispatches = [e for e in self.events if isinstance(e, ToolDispatched)]
        assert isinstance(self.events[-1], LoopFinished), self.events[-1]

    def answer(self, call_id: str) -> ToolDispatched:
        found = [d for d in self.dispatches if d.tool_call_id == call_id]
        assert len(found) == 1, [(d.tool_call_id, d.name) for d in self.dispatches]
        return found[0]


def test_a_tool_run_naming_no_call_answers_its_call_when_the_framework_changed_its_arguments(
    told: Callable[[Sequence[Step]], list[Event]],
) -> None:
    """The callback bridge once matched only on the same arguments: a framework that filled
    in a default made the run a call of its own, and the call was answered a second time,
    unrun, from the next prompt. Spans matched by the tool's name. Now both: one answer,
    the call the model asked for, ran."""
    asked = _asks(_call("c1", "Oslo"))
    result = ToolMessage("rain", tool_call_id="c1")
    read = Read(
        told(
            [
                Reply([ASK], asked),
                Tool("weather", {"city": "Oslo", "units": "metric"}, None, "rain"),
                Reply([ASK, asked, result], AIMessage("Rain.")),
            ]
        )
    )
    assert len(read.dispatches) == 1
    answer = read.answer("c1")
    assert (answer.ran, answer.status, answer.round) == (True, "success", 1)
    assert answer.args == {"city": "Oslo"}
    assert answer.content == "rain"


def test_a_tool_run_naming_no_call_answers_the_newest_reply_first(
    told: Callable[[Sequence[Step]], list[Event]],
) -> None:
    """A call of an earlier reply still open (its answer never came) and the same call asked
    again: the tool a framework runs answers the newest reply's call, in its round (the
    callback bridge once took the oldest open call, in an earlier round)."""
    first = _asks(_call("c1", "Oslo"))
    again = _asks(_call("c2", "Oslo"))
    result = ToolMessage("rain", tool_call_id="c2")
    read = Read(
        told(
            [
                Reply([ASK], first),
                Reply([ASK, first, HumanMessage("Please, Oslo.")], again),
                Tool("weather", {"city": "Oslo"}, None, "rain"),
                Reply([ASK, first, HumanMessage("Please, Oslo."), again, result], AIMessage("R")),
            ]
        )
    )
    answer = read.answer("c2")
    assert (answer.round, answer.ran, answer.content) == (2, True, "rain")
    assert not [d for d in read.dispatches if d.tool_call_id == "c1"]


def test_a_call_the_framework_answered_without_a_tool_run_is_answered_once_unrun(
    told: Callable[[Sequence[Step]], list[Event]],
) -> None:
    """A result in the next prompt that no tool run reported (a framework's own answer): the
    call is answered from it, ``ran=False`` (spans once left such a call unanswered)."""
    asked = _asks(_call("c1", "Oslo"))
    result = ToolMessage("cached: rain", tool_call_id="c1")
    read = Read(
        told(
            [
                Reply([ASK], asked),
                Reply([ASK, asked, result], AIMessage("Rain.")),
            ]
        )
    )
    answer = read.answer("c1")
    assert (answer.ran, answer.status, answer.content) == (False, "success", "cached: rain")
    assert answer.round == 1


def test_a_tool_that_raised_is_answered_with_what_the_framework_told_the_model(
    told: Callable[[Sequence[Step]], list[Event]],
) -> None:
    """A tool raised and the framework sent the model an error result: the call's answer is
    that result (what the model read), with the tool's error type (spans once answered with
    the exception's text at once)."""
    asked = _asks(_call("c1", "Atlantis"))
    told_model = ToolMessage("Error: no such city. Try another.", tool_call_id="c1")
    read = Read(
        told(
            [
                Reply([ASK], asked),
                Tool("weather", {"city": "Atlantis"}, "c1", None, "no such city"),
                Reply([ASK, asked, told_model], AIMessage("Sorry.")),
            ]
        )
    )
    assert len(read.dispatches) == 1
    answer = read.answer("c1")
    assert (answer.status, answer.error_reason, answer.error_type) == (
        "error",
        "tool_error",
        "ValueError",
    )
    assert answer.content == "Error: no such city. Try another."
    second = [e for e in read.events if isinstance(e, ModelCallStarted)][1]
    sent = [m["data"] for m in second.messages if m["type"] == "tool"]
    assert [m["status"] for m in sent] == ["error"]


def test_a_tool_that_raised_with_no_answer_after_it_is_answered_by_its_error(
    told: Callable[[Sequence[Step]], list[Event]],
) -> None:
    """No result followed (the run ended): the call's answer is the error's own text."""
    asked = _asks(_call("c1", "Atlantis"))
    read = Read(
        told(
            [
                Reply([ASK], asked),
                Tool("weather", {"city": "Atlantis"}, "c1", None, "no such city"),
            ]
        )
    )
    answer = read.answer("c1")
    assert (answer.status, answer.error_type) == ("error", "ValueError")
    assert "no such city" in answer.content


def _fails_with_a_call_out_through_callbacks() -> list[Event]:
    events: list[Event] = []
    bridge = EventBridge(events.append)
    root, call = uuid.uuid4(), uuid.uuid4()
    bridge.on_chain_start({"name": "agent"}, {"messages": [ASK]}, run_id=root)
    bridge.on_chat_model_start({}, [[ASK]], run_id=call, parent_run_id=root)
    bridge.on_chain_error(RuntimeError("the graph broke"), run_id=root)
    late = LLMResult(generations=[[ChatGeneration(message=AIMessage("late"))]])
    bridge.on_llm_end(late, run_id=call)
    return events


def _fails_with_a_call_out_through_spans() -> list[Event]:
    events: list[Event] = []
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("test")
    agent = tracer.start_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    )
    with use_span(agent, end_on_exit=False):
        chat = tracer.start_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": _messages([ASK]),
            },
        )
    agent.set_status(Status(StatusCode.ERROR, "the graph broke"))
    agent.end()
    chat.set_attribute("gen_ai.output.messages", _messages([AIMessage("late")]))
    chat.end()
    provider.shutdown()
    return events


@pytest.mark.parametrize(
    "told_failing",
    [_fails_with_a_call_out_through_callbacks, _fails_with_a_call_out_through_spans],
    ids=["callbacks", "spans"],
)
def test_a_call_still_out_when_its_run_fails_is_closed_before_the_failure(
    told_failing: Callable[[], list[Event]],
) -> None:
    """Every call started gets an end: a call still out when its run failed is closed as
    ``incomplete`` just before ``loop_failure`` (the callback bridge once left it without
    one), and a reply that comes after the run's end changes nothing."""
    events = told_failing()
    assert isinstance(events[-1], LoopFailed)
    [closed] = [e for e in events if isinstance(e, ModelCallFailed)]
    assert (closed.call, closed.error_type) == (1, "incomplete")
    assert events.index(closed) == len(events) - 2
    assert not [e for e in events if isinstance(e, ModelCalled)]
