"""Step definitions for features/tool_loop.feature (the behaviour spec, never edited).

The steps drive the real LLMAgent through ScriptedChatModel, a real langchain-core chat
model, and keep the usage they scripted so the Then steps can check exact sums. Replies
and reference prices come from the pytest suite's own kit (``tests/loopkit.py``, on the
path by ``features/environment.py``).
"""

from __future__ import annotations

import asyncio
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import parse
from behave import given, register_type, then, when
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from loopkit import MODEL, calls, changed_config, final, reference_cost, tool_call

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    echo_tool,
    file_read_tool,
    usd_budget,
)
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError, _ToolLoopError

MODEL_NAME = MODEL
PRUNING_MODEL_NAME = MODEL


@parse.with_pattern(r"true|false")
def _parse_bool(text: str) -> bool:
    return text == "true"


@parse.with_pattern(r"accumulated_prompt|accumulated_completion")
def _parse_count(text: str) -> str:
    return text


register_type(Bool=_parse_bool, Count=_parse_count)


def _tokens(n: int) -> tuple[int, int]:
    """The usage scripted for the ``n``-th reply (each reply reports different counts)."""
    return 10 + 2 * n, 5 + n


def _tool_call(
    context: Any,
    n: int,
    text: str = "",
    name: str | None = None,
    tokens: tuple[int, int] | None = None,
) -> AIMessage:
    tool = name or context.tool_name
    args = {"path": "report.txt"} if tool == "file_read" else {"text": f"ping {n}"}
    return calls(tool_call(tool, args, f"call_{n}"), text=text, tokens=tokens or _tokens(n))


def _final(text: str, n: int) -> AIMessage:
    return final(text, tokens=_tokens(n))


def _build_agent(context: Any, tool: str, config: AgentConfig | None = None, **fields: Any) -> None:
    context.tool_name = tool
    context.agent_config = config if config is not None else AgentConfig(**fields)
    context.pruning_model = None
    if tool == "file_read":
        root = Path(tempfile.mkdtemp(prefix="toolloop-feature-"))
        (root / "report.txt").write_text("quarterly figures: revenue up 12%. " * 200)
        context.tool = file_read_tool(root)
    else:
        context.tool = echo_tool()


def _set_script(context: Any, script: list[Any]) -> None:
    context.script = script
    context.model = ScriptedChatModel(script, model_name=MODEL_NAME)


def _scripted_usage(context: Any) -> list[dict[str, int]]:
    return [
        item.usage_metadata
        for item in context.script[: len(context.model.calls)]
        if isinstance(item, AIMessage) and item.usage_metadata
    ]


# -- Given: agents ------------------------------------------------------------------------
@given('I have an LLMAgent with tool loop test config for tool "{tool}" and tool_max_rounds {n:d}')
def step_agent_rounds(context: Any, tool: str, n: int) -> None:
    _build_agent(context, tool, tool_max_rounds=n)


@given(
    'I have an LLMAgent with tool loop test config for tool "{tool}" and tiny token_budget_percent'
)
def step_agent_tiny_budget(context: Any, tool: str) -> None:
    _build_agent(context, tool, token_budget_percent=1.0, context_window=10_000)


@given('I have an LLMAgent with tool loop test config for tool "{tool}" and pruning enabled')
def step_agent_pruning(context: Any, tool: str) -> None:
    _build_agent(context, tool, prune_tools=(tool,), prune_min_chars=1_000)


@given('I have an LLMAgent with tool loop test config for tool "{tool}" and bad tool_max_rounds')
def step_agent_bad_rounds(context: Any, tool: str) -> None:
    # AgentConfig(tool_max_rounds=0) is refused when it is built; the scenario is about a
    # setup error a run finds before its first call, so the config is changed after it was
    # built (as a patched or unpickled one can be), which the run's own check refuses
    _build_agent(context, tool, changed_config(tool_max_rounds=0))
    _set_script(context, [_final("never requested", 1)])


@given('I have an LLMAgent with tool loop test config for tool "{tool}"')
def step_agent(context: Any, tool: str) -> None:
    _build_agent(context, tool)


# -- Given: scripted models ---------------------------------------------------------------
@given('I set a mock that makes one tool call then returns a final answer "{text}"')
def step_one_call(context: Any, text: str) -> None:
    _set_script(context, [_tool_call(context, 1), _final(text, 2)])


@given('I set a mock that makes two tool calls then returns a final answer "{text}"')
def step_two_calls(context: Any, text: str) -> None:
    _set_script(context, [_tool_call(context, 1), _tool_call(context, 2), _final(text, 3)])


@given("I set a mock that always returns tool_calls never a final answer")
def step_always_tools(context: Any) -> None:
    rounds = context.agent_config.tool_max_rounds
    _set_script(
        context,
        [
            _tool_call(context, n, text=f"Let me call the tool again ({n}).")
            for n in range(1, rounds + 2)
        ],
    )


@given('I set a mock that triggers budget exhaustion then returns "{text}"')
def step_budget_burner(context: Any, text: str) -> None:
    burner = _tool_call(context, 1, tokens=(5_000, 200))
    _set_script(context, [burner, _final(text, 2)])


@given('I set a mock that returns empty content tool calls then "{text}"')
def step_stuck(context: Any, text: str) -> None:
    rounds = context.agent_config.tool_max_rounds
    _set_script(
        context, [*(_tool_call(context, n) for n in range(1, rounds + 1)), _final(text, rounds + 1)]
    )


@given('I set a mock that makes one file_read tool call then returns "{text}"')
def step_file_read(context: Any, text: str) -> None:
    _set_script(context, [_tool_call(context, 1, name="file_read"), _final(text, 2)])


@given("I set a mock pruning model that adds extra tokens")
def step_pruning_model(context: Any) -> None:
    context.pruning_script = [final("revenue up 12% (quarterly figures)", tokens=(900, 40))]
    context.pruning_model = ScriptedChatModel(context.pruning_script, model_name=PRUNING_MODEL_NAME)


@given('I set a mock that calls a nonexistent tool then returns "{text}"')
def step_unknown_tool(context: Any, text: str) -> None:
    _set_script(context, [_tool_call(context, 1, name="does_not_exist"), _final(text, 2)])


@given("I set a mock that returns one tool round then raises a RuntimeError")
def step_raises(context: Any) -> None:
    _set_script(context, [_tool_call(context, 1), RuntimeError("provider exploded")])


def _cost(item: AIMessage) -> Decimal:
    meta = item.usage_metadata
    assert meta is not None
    cost = reference_cost([(meta["input_tokens"], meta["output_tokens"])], MODEL_NAME)
    assert cost > 0
    return cost


def _enter_budget(context: Any, limit: Decimal) -> None:
    manager = usd_budget(limit)
    manager.__enter__()
    context.add_cleanup(manager.__exit__, None, None, None)
    context.usd_limit = limit


@given("the USD budget ContextVars are set for in-node gating")
def step_usd_budget(context: Any) -> None:
    first, second = (_cost(item) for item in context.script[:2])
    # The first call fits; the second pushes spend over the limit and trips the gate.
    _enter_budget(context, first + second / 2)


@given("the USD budget ContextVars are set so first round exhausts limit")
def step_usd_budget_tiny(context: Any) -> None:
    _enter_budget(context, _cost(context.script[0]) / 2)


# -- When ---------------------------------------------------------------------------------
def _run_loop(context: Any) -> None:
    agent = LLMAgent(
        context.model, [context.tool], context.agent_config, pruning_model=context.pruning_model
    )
    context.agent = agent
    context.initial = [
        SystemMessage("You are a test agent."),
        HumanMessage("Use the tool, then answer."),
    ]
    context.result = None
    context.error = None
    try:
        context.result = asyncio.run(agent._execute_tool_loop(list(context.initial)))
    except Exception as exc:  # noqa: BLE001 - the Then steps assert on the exact type
        context.error = exc


@when("I run _execute_tool_loop with an initial messages list")
def step_run(context: Any) -> None:
    _run_loop(context)


@when("I attempt to run _execute_tool_loop with an initial messages list")
def step_attempt(context: Any) -> None:
    _run_loop(context)


# -- Then: results ------------------------------------------------------------------------
def _result(context: Any) -> Any:
    assert context.error is None, f"loop raised {context.error!r}"
    assert context.result is not None
    return context.result


@then('the loop result final_response content should be "{text}"')
def step_final_text(context: Any, text: str) -> None:
    result = _result(context)
    assert isinstance(result.final_response, AIMessage)
    assert result.final_response.content == text, result.final_response.content


@then("the loop result {field:Count} should be greater than {n:d}")
def step_count_gt(context: Any, field: str, n: int) -> None:
    value = getattr(_result(context), field)
    assert value > n, f"{field}={value}"


@then("the loop result {field:Count} should be at least {n:d}")
def step_count_ge(context: Any, field: str, n: int) -> None:
    value = getattr(_result(context), field)
    assert value >= n, f"{field}={value}"


@then("the loop result budget_exhausted should be {flag:Bool}")
def step_budget_flag(context: Any, flag: bool) -> None:
    assert _result(context).budget_exhausted is flag


@then("the loop result synthesis_was_run should be {flag:Bool}")
def step_synthesis_flag(context: Any, flag: bool) -> None:
    assert _result(context).synthesis_was_run is flag


@then("the loop result should contain some content from the synthesis prompt")
def step_synthesis_prompt(context: Any) -> None:
    result = _result(context)
    prompt = context.agent_config.synthesis_prompt
    assert result.synthesis_was_run is True
    assert result.synthesis_reason == "round_cap"
    assert any(isinstance(m, HumanMessage) and m.content == prompt for m in result.messages)
    last_call = context.model.calls[-1]
    assert last_call.tool_names == (), "synthesis must be called without tools"
    assert last_call.messages[-1].content == prompt


@then("the loop result {field:Count} should equal the sum of all rounds prompt tokens")
def step_prompt_sum(context: Any, field: str) -> None:
    expected = sum(u["input_tokens"] for u in _scripted_usage(context))
    assert getattr(_result(context), field) == expected


@then("the loop result {field:Count} should equal the sum of all rounds completion tokens")
def step_completion_sum(context: Any, field: str) -> None:
    expected = sum(u["output_tokens"] for u in _scripted_usage(context))
    assert getattr(_result(context), field) == expected


@then("the loop result accumulated_prompt should include pruning tokens")
def step_includes_pruning(context: Any) -> None:
    result = _result(context)
    main = sum(u["input_tokens"] for u in _scripted_usage(context))
    pruning = context.pruning_script[0].usage_metadata["input_tokens"]
    assert len(context.pruning_model.calls) == 1
    assert result.accumulated_prompt == main + pruning
    tool_message = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert tool_message.content == context.pruning_script[0].content
    assert tool_message.artifact["original"].startswith("quarterly figures")


@then("the messages list should contain a ToolMessage with not available content")
def step_not_available(context: Any) -> None:
    result = _result(context)
    errors = [m for m in result.messages if isinstance(m, ToolMessage) and m.status == "error"]
    assert len(errors) == 1
    assert "not available" in errors[0].content
    assert context.tool_name in errors[0].content, "the error lists the available tools"


# -- Then: errors -------------------------------------------------------------------------
@then("a _ToolLoopError should be raised")
def step_tool_loop_error(context: Any) -> None:
    assert isinstance(context.error, _ToolLoopError), repr(context.error)
    assert _ToolLoopError is ToolLoopError


@then("the _ToolLoopError any_invocation_made should be {flag:Bool}")
def step_any_invocation(context: Any, flag: bool) -> None:
    assert context.error.any_invocation_made is flag
    assert (len(context.model.calls) > 0) is flag


@then("the _ToolLoopError accumulated_prompt should be greater than {n:d}")
def step_error_prompt(context: Any, n: int) -> None:
    assert context.error.accumulated_prompt > n
    first = context.script[0].usage_metadata
    assert context.error.accumulated_prompt == first["input_tokens"]
    assert context.error.accumulated_completion == first["output_tokens"]


@then("the _ToolLoopError cause should be a ConfigurationError")
def step_error_cause(context: Any) -> None:
    assert isinstance(context.error.cause, ConfigurationError)
    assert context.error.__cause__ is context.error.cause
    assert context.error.cause.field == "tool_max_rounds"


@then('an ExecutionError with kind "{kind}" and reason "{reason}" should be raised')
def step_execution_error(context: Any, kind: str, reason: str) -> None:
    error = context.error
    assert isinstance(error, ExecutionError), repr(error)
    assert (error.kind, error.reason) == (kind, reason)
    assert error.cost_usd is not None
    assert error.cost_usd > context.usd_limit
    assert error.events
    assert error.events[-1].kind == "loop_failure"


@then("the accumulated prompt should NOT include pruning tokens")
def step_no_pruning_prompt(context: Any) -> None:
    assert context.pruning_model.calls == ()
    assert context.error.accumulated_prompt == context.script[0].usage_metadata["input_tokens"]


@then("the accumulated completion should NOT include pruning tokens")
def step_no_pruning_completion(context: Any) -> None:
    assert context.pruning_model.calls == ()
    assert context.error.accumulated_completion == context.script[0].usage_metadata["output_tokens"]
