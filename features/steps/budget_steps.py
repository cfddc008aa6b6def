"""Then steps about token and USD budgets and synthesis, for features/budgets.feature."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from behave import then
from langchain_core.messages import AIMessage, HumanMessage
from loopkit import reference_cost

from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import LoopStarted, SynthesisStarted


def _result(context: Any) -> Any:
    lab = context.lab
    assert lab.error is None, repr(lab.error)
    assert lab.result is not None
    return lab.result


def _reference(lab: Any, calls: int) -> Decimal:
    """genai-prices' own price of the first ``calls`` replies."""
    counts = []
    for reply in [r for r in lab.replies if isinstance(r, AIMessage)][:calls]:
        meta = reply.usage_metadata
        assert meta is not None, "every lab reply reports its usage"
        counts.append((meta["input_tokens"], meta["output_tokens"]))
    return reference_cost(counts, lab.model_name)


@then('the run stops with a cost error "{reason}"')
def step_cost_error(context: Any, reason: str) -> None:
    error = context.lab.error
    assert isinstance(error, ExecutionError), repr(error)
    assert (error.kind, error.reason) == ("cost", reason)
    assert error.events[-1].kind == "loop_failure"


@then("no scripted model call was made")
def step_no_call(context: Any) -> None:
    assert context.lab.model.calls == ()
    assert context.lab.error.any_invocation_made is False


@then("the run's cost equals genai-prices for every call made")
def step_cost_reference(context: Any) -> None:
    lab = context.lab
    result = _result(context)
    assert result.cost_usd == _reference(lab, len(lab.model.calls))
    assert result.cost_usd > 0


@then("the run's cost is {amount} dollars")
def step_cost_exact(context: Any, amount: str) -> None:
    assert _result(context).cost_usd == Decimal(amount)


@then("the run's prompt tokens are {inp:d} and completion tokens {out:d}")
def step_token_counts(context: Any, inp: int, out: int) -> None:
    result = _result(context)
    assert (result.accumulated_prompt, result.accumulated_completion) == (inp, out)


@then("the token budget is {n:d} tokens")
def step_token_budget(context: Any, n: int) -> None:
    started = _result(context).events[0]
    assert isinstance(started, LoopStarted)
    assert started.token_budget == n


@then('the token budget was exhausted and synthesis ran because of "{reason}"')
def step_budget_synthesis(context: Any, reason: str) -> None:
    result = _result(context)
    assert result.budget_exhausted is True
    assert (result.synthesis_was_run, result.synthesis_reason) == (True, reason)


@then('synthesis ran because of "{reason}" after {n:d} rounds')
def step_synthesis_after(context: Any, reason: str, n: int) -> None:
    result = _result(context)
    assert (result.synthesis_was_run, result.synthesis_reason, result.rounds) == (True, reason, n)
    (event,) = [e for e in result.events if isinstance(e, SynthesisStarted)]
    assert (event.reason, event.round) == (reason, n + 1)


@then("the last scripted model call had no tools bound")
def step_last_call_no_tools(context: Any) -> None:
    calls = context.lab.model.calls
    assert calls[-1].tool_names == ()
    assert all(c.tool_names for c in calls[:-1])


@then('the last scripted model call ended with the prompt "{prompt}"')
def step_last_call_prompt(context: Any, prompt: str) -> None:
    assert context.lab.model.calls[-1].messages[-1] == HumanMessage(prompt)
    assert HumanMessage(prompt) in _result(context).messages


@then("the first run stopped with a cost error after {n:d} calls")
def step_first_run(context: Any, n: int) -> None:
    first = context.lab.others[0]
    assert isinstance(first.error, ExecutionError), repr(first.error)
    assert first.error.reason == "budget_exhausted"
    assert len(first.model.calls) == n
    assert first.error.cost_usd == _reference(first, n)


@then("the second run finished after {n:d} calls with the cost of {m:d} calls")
def step_second_run(context: Any, n: int, m: int) -> None:
    second = context.lab.others[1]
    assert second.error is None, repr(second.error)
    assert len(second.model.calls) == n
    assert second.result.cost_usd == _reference(second, m)
