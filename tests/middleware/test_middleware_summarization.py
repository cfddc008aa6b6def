"""LangChain's ``SummarizationMiddleware`` after ``ToolLoopMiddleware``: its summarization
call (made inside its own ``before_model``) is a model call of the run with its purpose,
counted, priced and under the budgets; and a run whose graph another middleware's hook
ends is ended and let go (nothing kept by the middleware)."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from loopkit import calls, final, reference_cost, tool_call

from toolloop_lab import RunView, ScriptedChatModel, ToolLoopMiddleware, usd_budget
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    ModelCalled,
    ModelCallStarted,
)


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key} " * 20


def _main() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            calls(tool_call("lookup", {"key": "a"}, "c1"), tokens=(1_000, 100)),
            calls(tool_call("lookup", {"key": "b"}, "c2"), tokens=(2_000, 100)),
            final("done", (3_000, 100)),
        ],
        model_name="gpt-4o-mini",
    )


def _summarizing(*replies: Any) -> SummarizationMiddleware:
    """Summarizes once the conversation holds 4 messages, keeping the last 2."""
    model = ScriptedChatModel(list(replies), model_name="gpt-4o-mini")
    return SummarizationMiddleware(model, trigger=("messages", 4), keep=("messages", 2))


def _run(*middleware: Any, sync: bool = False) -> tuple[dict[str, Any], list[Event], Any]:
    events: list[Event] = []
    ours = ToolLoopMiddleware(observers=[events.append])
    agent = create_agent(_main(), [lookup], middleware=[ours, *middleware])
    prompt = {"messages": [HumanMessage("look a and b up")]}
    out = agent.invoke(prompt) if sync else asyncio.run(agent.ainvoke(prompt))
    return out, events, ours


@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
def test_a_summarization_call_is_a_model_call_with_its_purpose(sync: bool) -> None:
    summary = final("a and its value were looked up", (700, 30))
    out, events, _ours = _run(_summarizing(summary), sync=sync)

    started = [e for e in events if isinstance(e, ModelCallStarted)]
    called = [e for e in events if isinstance(e, ModelCalled)]
    assert [e.purpose for e in started] == ["round", "round", "summarization", "round"]
    assert [e.purpose for e in called] == ["round", "round", "summarization", "round"]
    said = called[2]
    assert (said.usage.input_tokens, said.usage.output_tokens) == (700, 30)
    assert said.text == "a and its value were looked up"
    assert started[2].call == said.call == 3  # numbered among the run's calls
    assert started[2].tools == ()
    assert "Here is a summary" not in str(started[2].messages)  # its own prompt, sent

    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.outcome == "final_answer"
    assert end.rounds == 3
    counts = [(1_000, 100), (2_000, 100), (700, 30), (3_000, 100)]
    assert end.usage.requests == 4
    assert (end.usage.input_tokens, end.usage.output_tokens) == (6_700, 330)
    assert end.usage.cost_usd == reference_cost(counts)

    view = RunView.from_events(events)
    assert view.model_calls == 4
    assert view.usage.cost_usd == reference_cost(counts)
    row = view.rounds[1]  # after round 2's tools, before round 3's call
    assert [e.call for e in row.summarizations] == [3]
    assert row.usage.input_tokens == 2_000  # the round's own call is not the summary's
    assert row.cost_usd == reference_cost([(2_000, 100), (700, 30)])
    assert view.rounds[2].text == "done"
    # LangChain's summary replaced the older messages in the graph's state
    assert out["messages"][0].additional_kwargs.get("lc_source") == "summarization"


def test_without_summarization_no_such_call() -> None:
    """The same run without it: three calls, nothing said of summarizing (the test above
    can fail)."""
    _out, events, _ours = _run()
    assert [e.purpose for e in events if isinstance(e, ModelCalled)] == ["round"] * 3


def test_the_usd_budget_stops_at_the_summarization_call_with_the_partial_counts() -> None:
    limit = Decimal("0.0006")  # rounds 1 and 2 fit ($0.00057); the summary goes over it
    events: list[Event] = []
    agent = create_agent(
        _main(),
        [lookup],
        middleware=[
            ToolLoopMiddleware(observers=[events.append]),
            _summarizing(final("summary", (1_000, 100))),
        ],
    )

    async def go() -> None:
        with usd_budget(limit):
            await agent.ainvoke({"messages": [HumanMessage("look a and b up")]})

    with pytest.raises(ExecutionError) as raised:
        asyncio.run(go())
    err = raised.value
    assert (err.kind, err.reason) == ("cost", "budget_exhausted")
    assert err.model_calls == 3  # the summary's call was paid for, and counted
    assert (err.accumulated_prompt, err.accumulated_completion) == (4_000, 300)
    assert err.cost_usd == reference_cost([(1_000, 100), (2_000, 100), (1_000, 100)])
    assert isinstance(events[-1], LoopFailed)
    assert events[-1].reason == "budget_exhausted"
    assert not [e for e in events if isinstance(e, ModelCalled) and e.call > 3]


class _Raising(AgentMiddleware[Any, Any, Any]):
    """Another middleware whose ``before_model`` raises on the second model call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = 0

    def before_model(self, state: Any, runtime: Any) -> None:
        self.seen += 1
        if self.seen == 2:
            raise LookupError("another middleware broke")

    async def abefore_model(self, state: Any, runtime: Any) -> None:
        self.before_model(state, runtime)


@pytest.mark.parametrize("sync", [False, True], ids=["ainvoke", "invoke"])
def test_another_middlewares_hook_raising_ends_the_run_and_lets_it_go(sync: bool) -> None:
    events: list[Event] = []
    ours = ToolLoopMiddleware(observers=[events.append])
    agent = create_agent(_main(), [lookup], middleware=[ours, _Raising()])
    prompt = {"messages": [HumanMessage("look a and b up")]}
    with pytest.raises(LookupError):
        agent.invoke(prompt) if sync else asyncio.run(agent.ainvoke(prompt))
    assert ours._runs == {}
    end = events[-1]
    assert isinstance(end, LoopFailed)
    assert end.error_type == "LookupError"
    assert end.usage.requests == 1  # round 1's call, kept with the failure
    assert "value of a" in str(end.messages)  # and round 1's tool result
