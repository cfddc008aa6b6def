"""Failures keep everything: bad config, model exceptions, cancellation, pickling
(issue 2, "Failures"); a bad config is refused when it is built (issue 28)."""

from __future__ import annotations

import asyncio
import dataclasses
import math
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from loopkit import MODEL, calls, changed_config, final, reference_cost, tool_call
from pydantic import BaseModel

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, ScriptedChatModel, usd_budget
from toolloop_lab.errors import (
    ConfigurationError,
    ExecutionError,
    ScriptError,
    ToolLoopError,
    _ToolLoopError,
)
from toolloop_lab.events import Event, LoopFailed, ModelCallFailed, ToolDispatched, event_from_dict

BAD_CONFIG: list[tuple[str, Any]] = [
    ("tool_max_rounds", 0),
    ("tool_max_rounds", -3),
    ("tool_max_rounds", 2.0),
    ("tool_max_rounds", True),
    ("tool_max_rounds", "5"),
    ("token_budget_percent", 0),
    ("token_budget_percent", 100.5),
    ("token_budget_percent", -1),
    ("token_budget_percent", math.nan),
    ("token_budget_percent", True),
    ("token_budget_percent", "50"),
    ("context_window", 0),
    ("context_window", -100),
    ("context_window", 1000.0),
    ("context_window", False),
    ("prune_tools", "file_read"),
    ("prune_tools", None),
    ("prune_tools", ("file_read", 3)),
    ("prune_tools", ("",)),
    ("prune_min_chars", -1),
    ("prune_min_chars", 10.5),
    ("prune_min_chars", True),
    ("prune_min_chars", None),
    ("pruning_prompt", ""),
    ("pruning_prompt", "   "),
    ("pruning_prompt", None),
    ("synthesis_prompt", ""),
    ("synthesis_prompt", 42),
    ("rate_limit_retries", -1),
    ("rate_limit_retries", True),
    ("rate_limit_retries", 1.5),
    ("rate_limit_retries", "2"),
    ("max_stuck_rounds", 0),
    ("max_stuck_rounds", True),
    ("max_stuck_rounds", 1.5),
    ("tool_timeout_s", 0),
    ("tool_timeout_s", -1.0),
    ("tool_timeout_s", math.nan),
    ("tool_timeout_s", math.inf),
    ("tool_timeout_s", True),
    ("tool_timeout_s", "1"),
    ("system_prompt", 123),
    ("system_prompt", ["be brief"]),
    ("system_prompt", "   "),  # some providers refuse whitespace-only text
    ("system_prompt", ""),
    ("system_prompt", "\n\t "),
    ("streaming", None),
    ("streaming", "yes"),
    ("streaming", 1),
    ("parallel_tool_calls", None),
    ("parallel_tool_calls", 0),
    ("model_timeout_s", 0),
    ("model_timeout_s", -1.0),
    ("model_timeout_s", math.nan),
    ("model_timeout_s", math.inf),
    ("model_timeout_s", True),
    ("model_timeout_s", "600"),
    ("model_timeout_s", 8 * 24 * 3600.0),  # past a week: a mistake, not a limit
    ("model_timeout_s", 10**400),
    ("tool_timeout_s", 10**400),  # a huge int passes a type check, then overflows later
    ("context_window", 10**400),
    ("tool_max_rounds", 10**400),
    ("prune_min_chars", 10**400),
    ("max_stuck_rounds", 10**400),
]


def test_every_agent_config_field_has_a_bad_value_case() -> None:
    fields = {f.name for f in dataclasses.fields(AgentConfig)}
    assert {name for name, _ in BAD_CONFIG} == fields


@pytest.mark.parametrize(("field", "value"), BAD_CONFIG)
def test_bad_config_is_refused_when_it_is_built(field: str, value: Any) -> None:
    with pytest.raises(ConfigurationError) as info:
        AgentConfig(**{field: value})
    assert info.value.field == field
    assert str(info.value).startswith(f"{field}: ")  # then what it should be
    assert "should" in str(info.value) or "at least one" in str(info.value)


def test_a_dict_config_is_the_config_of_its_fields(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("done")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], {"tool_max_rounds": 2, "streaming": True})
    assert agent.config == AgentConfig(tool_max_rounds=2, streaming=True)
    assert agent.run("go").final_response.text == "done"


@pytest.mark.parametrize(("field", "value"), BAD_CONFIG)
def test_a_dict_config_is_checked_as_the_config_is(
    field: str, value: Any, echo_tool: BaseTool
) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    with pytest.raises(ConfigurationError) as info:
        LLMAgent(model, [echo_tool], {field: value})
    assert info.value.field == field


@pytest.mark.parametrize(
    ("config", "fix"),
    [
        ({"max_rounds": 3}, "no field 'max_rounds' (did you mean 'tool_max_rounds'?)"),
        ({"configurable": {"thread_id": "1"}}, "not a LangChain RunnableConfig"),
        ("fast", "config= takes an AgentConfig (or a dict of its fields), got the str 'fast'"),
        (10, "got the int 10"),
    ],
)
def test_a_config_that_is_no_agent_config_is_refused_when_the_agent_is_built(
    config: Any, fix: str, echo_tool: BaseTool
) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    with pytest.raises(TypeError) as info:
        LLMAgent(model, [echo_tool], config)
    assert fix in str(info.value)


def test_prune_tools_naming_no_tool_of_the_agent_is_refused_when_it_is_built(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    config = AgentConfig(prune_tools=("file_read", "echo"))
    with pytest.raises(ConfigurationError) as info:
        LLMAgent(model, [echo_tool], config)
    assert info.value.field == "prune_tools"
    assert "'file_read' is not one of the agent's tools (echo)" in str(info.value)
    pruner = ScriptedChatModel([final("short")], model_name=MODEL)
    LLMAgent(model, [echo_tool], AgentConfig(prune_tools=("echo",)), pruning_model=pruner)


async def test_prune_tools_left_naming_no_tool_after_the_tools_changed_fails_the_run(
    echo_tool: BaseTool,
) -> None:
    @tool
    def shout(text: str) -> str:
        """Shout the text."""
        return text.upper()

    model = ScriptedChatModel([final("never")], model_name=MODEL)
    pruner = ScriptedChatModel([final("short")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], AgentConfig(prune_tools=("echo",)), pruning_model=pruner)
    agent.tools = [shout]
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")
    assert isinstance(info.value.cause, ConfigurationError)
    assert info.value.cause.field == "prune_tools"
    assert info.value.any_invocation_made is False
    assert model.calls == ()


@pytest.mark.parametrize(("field", "value"), BAD_CONFIG)
@pytest.mark.parametrize("entry", ["arun", "_execute_tool_loop"])
async def test_bad_config_fails_before_any_model_call(
    field: str, value: Any, entry: str, echo_tool: BaseTool
) -> None:
    # a config changed after it was built (past its constructor's checks) is still
    # refused when a run starts, before any model call
    events: list[Event] = []
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    config = changed_config(**{field: value})
    agent = LLMAgent(model, [echo_tool], config, observers=[events.append])

    run = (
        agent.arun("hello")
        if entry == "arun"
        else agent._execute_tool_loop([HumanMessage("hello")])
    )
    with pytest.raises(ToolLoopError) as info:
        await run

    err = info.value
    assert isinstance(err.cause, ConfigurationError)
    assert err.cause.field == field
    assert err.__cause__ is err.cause
    assert err.any_invocation_made is False
    assert (err.accumulated_prompt, err.accumulated_completion, err.rounds) == (0, 0, 0)
    assert model.calls == ()
    assert model.bindings == ()
    assert [e.kind for e in events] == ["loop_failure"]
    assert err.events == tuple(events)
    failed = events[0]
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.any_invocation_made, failed.cancelled) == (
        "ConfigurationError",
        False,
        False,
    )


def test_configuration_error_is_a_value_error_with_a_field() -> None:
    err = ConfigurationError("bad", field="tool_max_rounds")
    assert isinstance(err, ValueError)
    assert err.field == "tool_max_rounds"


def test_good_config_validates_and_is_frozen() -> None:
    config = AgentConfig(
        tool_max_rounds=3,
        token_budget_percent=50,
        context_window=1000,
        prune_tools=("a",),
        prune_min_chars=0,
        max_stuck_rounds=1,
        tool_timeout_s=0.5,
        system_prompt="s",
    )
    config.validate()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.tool_max_rounds = 5  # type: ignore[misc]


async def test_a_tool_renamed_in_place_to_another_tools_name_fails_the_run_before_any_call() -> (
    None
):
    # two tools with one name are refused when the agent is built (test_agent_setup); a
    # tool renamed after that, past the setter, is still caught before any model call
    @tool("other_echo")
    def other_echo(text: str) -> str:
        """Another echo."""
        return text

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    model = ScriptedChatModel([final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo, other_echo])
    other_echo.name = "echo"
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("hi")
    assert isinstance(info.value.cause, ConfigurationError)
    assert info.value.cause.field == "tools"
    assert "both named 'echo'" in str(info.value.cause)
    assert model.calls == ()


class _CallbackArgs(BaseModel):
    callback: Callable[[int], int]
    """A Python callable: no JSON schema can describe it."""


class _SchemaRaises(BaseTool):
    """A tool whose input schema cannot be built (its own schema code raises)."""

    name: str = "fragile"
    description: str = "Its schema code raises."

    def get_input_schema(self, config: Any = None) -> Any:
        raise RuntimeError("schema backend offline")

    def _run(self, **kwargs: Any) -> str:
        return "ran"


def _unschemable() -> list[BaseTool]:
    hook = StructuredTool(
        name="hook", description="Calls back.", args_schema=_CallbackArgs, func=lambda callback: ""
    )
    return [hook, _SchemaRaises()]


class _BindsLazily(ScriptedChatModel):
    """A model that binds tool objects as they are and would describe them only when a
    call is sent (as some wrappers do)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


@pytest.mark.parametrize("broken", _unschemable(), ids=lambda t: t.name)
@pytest.mark.parametrize("model_type", [ScriptedChatModel, _BindsLazily])
async def test_a_tool_whose_schema_cannot_be_built_fails_before_any_call(
    echo_tool: BaseTool, broken: BaseTool, model_type: type[ScriptedChatModel]
) -> None:
    events: list[Event] = []
    model = model_type([calls(tool_call("echo", {"text": "a"}, "c1")), final("done")])
    agent = LLMAgent(model, [echo_tool, broken], observers=[events.append])
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")
    err = info.value
    assert err.any_invocation_made is False
    assert (err.rounds, err.accumulated_prompt, err.accumulated_completion) == (0, 0, 0)
    assert isinstance(err.cause, ConfigurationError)
    assert err.cause.field == "tools"
    assert f"tool {broken.name!r}" in str(err.cause)
    assert model.calls == ()
    assert [e.kind for e in events] == ["loop_failure"]
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert failed.any_invocation_made is False


async def test_a_model_that_cannot_take_tools_fails_before_any_call(echo_tool: BaseTool) -> None:
    class NoTools(ScriptedChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("this model has no tool calling")

    model = NoTools([final("never")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert info.value.any_invocation_made is False
    assert isinstance(info.value.cause, ConfigurationError)
    assert "no tool calling" in str(info.value.cause)
    assert model.calls == ()


async def test_unreadable_input_messages_fail_as_tool_loop_error(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun([("not-a-role", "x")])
    assert info.value.any_invocation_made is False
    assert isinstance(info.value.cause, ValueError)
    assert model.calls == ()


async def test_model_exception_keeps_partial_counts_messages_and_events(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    boom = RuntimeError("provider exploded")
    first = calls(tool_call("echo", {"text": "a"}, "c1"), text="looking", tokens=(30, 8))
    model = ScriptedChatModel([first, boom], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append])

    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")

    err = info.value
    assert isinstance(err, _ToolLoopError)
    assert err.cause is boom
    assert err.__cause__ is boom
    assert err.any_invocation_made is True
    assert (err.accumulated_prompt, err.accumulated_completion) == (30, 8)
    assert err.cost_usd == reference_cost([(30, 8)])
    assert err.rounds == 1
    assert [type(m) for m in err.messages] == [HumanMessage, AIMessage, ToolMessage]
    assert err.messages[2].content == "a"
    assert err.events == tuple(events)
    assert [e.kind for e in events] == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
        "tool_dispatch",
        "round_start",
        "model_call_start",
        "model_call_failed",
        "loop_failure",
    ]
    raised = events[-2]
    assert isinstance(raised, ModelCallFailed)
    assert (raised.call, raised.purpose, raised.error_type) == (2, "round", "RuntimeError")
    assert raised.message == "provider exploded"
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.error_type, failed.round, failed.cancelled) == ("RuntimeError", 2, False)
    assert failed.usage.input_tokens == 30
    assert err.run_id == failed.run_id


async def test_a_failed_call_carries_where_it_raised(echo_tool: BaseTool) -> None:
    """The event of a call that raised holds its traceback (clipped, the innermost frames
    and the exception's line last); a trace written before the field reads it as None."""
    events: list[Event] = []
    model = ScriptedChatModel([RuntimeError("provider exploded " + "x" * 9_000)], model_name=MODEL)
    with pytest.raises(ToolLoopError):
        await LLMAgent(model, [echo_tool], observers=[events.append]).arun("go")
    failed = next(e for e in events if isinstance(e, ModelCallFailed))
    assert failed.traceback is not None
    assert failed.traceback.startswith("Traceback (most recent call last):")
    assert 'File "' in failed.traceback
    assert "in _next" in failed.traceback
    assert failed.traceback.endswith(" chars)")  # the message made it long: clipped
    assert len(failed.traceback) < 4_100
    old = failed.to_dict()
    del old["traceback"]
    assert event_from_dict(old).traceback is None


async def test_exception_on_the_first_call_counts_as_an_invocation(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([ConnectionError("refused")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert info.value.any_invocation_made is True
    assert (info.value.accumulated_prompt, info.value.accumulated_completion) == (0, 0)
    assert isinstance(info.value.cause, ConnectionError)


async def test_exhausted_script_surfaces_as_script_error_cause(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"}, "c1"))], model_name=MODEL)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert isinstance(info.value.cause, ScriptError)
    assert "script exhausted" in str(info.value.cause)


async def test_execution_error_propagates_as_itself(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([final("never")], model_name="no-such-model-anywhere")
    with usd_budget(1), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    assert not isinstance(info.value, ToolLoopError)
    assert (info.value.kind, info.value.reason) == ("cost", "unpriced")
    assert info.value.events[-1].kind == "loop_failure"


async def test_cancellation_propagates_unwrapped_after_a_final_event() -> None:
    events: list[Event] = []
    started = asyncio.Event()
    never = asyncio.Event()

    @tool
    async def wait_forever(text: str) -> str:
        """Blocks until cancelled."""
        started.set()
        await never.wait()
        return text

    model = ScriptedChatModel([calls(tool_call("wait_forever", {"text": "x"}, "w1"))])
    agent = LLMAgent(model, [wait_forever], observers=[events.append])
    task = asyncio.create_task(agent.arun("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert task.cancelled()
    assert [e.kind for e in events][-2:] == ["tool_dispatch", "loop_failure"]
    closed = events[-2]
    assert isinstance(closed, ToolDispatched)
    assert (closed.tool_call_id, closed.status, closed.error_reason, closed.ran) == (
        "w1",
        "cancelled",
        "cancelled",
        True,  # it had begun: stopped while running, never "not run"
    )
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.cancelled, failed.error_type, failed.any_invocation_made) == (
        True,
        "CancelledError",
        True,
    )


async def test_keyboard_interrupt_propagates_unwrapped_after_a_final_event(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []

    async def ctrl_c(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            raise KeyboardInterrupt

    model = ScriptedChatModel([calls(tool_call("echo", {"text": "x"}, "k1"))], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append], pause_hooks=[ctrl_c])
    with pytest.raises(KeyboardInterrupt):
        await agent.arun("go")

    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.cancelled, failed.error_type) == (True, "KeyboardInterrupt")
    assert failed.usage.input_tokens == 10


def test_keyboard_interrupt_from_the_model_in_sync_run(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([KeyboardInterrupt()], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append])
    with pytest.raises(KeyboardInterrupt):
        agent.run("go")
    assert events[-1].kind == "loop_failure"
    assert isinstance(events[-1], LoopFailed)
    assert events[-1].cancelled is True


async def test_tool_loop_error_pickles_with_every_field(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(12, 3)), ValueError("bad reply")],
        model_name=MODEL,
    )
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    err = info.value
    clone = pickle.loads(pickle.dumps(err))

    assert type(clone) is ToolLoopError
    assert str(clone) == str(err)
    assert isinstance(clone.cause, ValueError)
    assert clone.cause.args == ("bad reply",)
    assert clone.__cause__ is clone.cause
    for name in (
        "accumulated_prompt",
        "accumulated_completion",
        "cost_usd",
        "any_invocation_made",
        "rounds",
        "messages",
        "events",
        "run_id",
    ):
        assert getattr(clone, name) == getattr(err, name), name
    assert clone.accumulated_prompt == 12
    assert len(clone.events) == len(err.events) > 0


async def test_execution_error_pickles_with_every_field(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(5000, 1000)), final("x")],
        model_name=MODEL,
    )
    with usd_budget("0.0001"), pytest.raises(ExecutionError) as info:
        await LLMAgent(model, [echo_tool]).arun("go")
    err = info.value
    clone = pickle.loads(pickle.dumps(err))

    assert type(clone) is ExecutionError
    assert (clone.kind, clone.reason, str(clone)) == (err.kind, err.reason, str(err))
    assert clone.cost_usd == err.cost_usd == reference_cost([(5000, 1000)])
    assert clone.messages == err.messages
    assert clone.events == err.events
    assert (clone.accumulated_prompt, clone.accumulated_completion) == (5000, 1000)
    assert clone.any_invocation_made is True


def test_configuration_error_pickles_with_its_field() -> None:
    clone = pickle.loads(pickle.dumps(ConfigurationError("bad", field="context_window")))
    assert (str(clone), clone.field) == ("bad", "context_window")
