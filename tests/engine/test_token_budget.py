"""The token budget: where the window comes from, the gate after each call, and the
synthesis it leads to (issue 2, "Token budget")."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, file_read_tool
from toolloop_lab._spend.budget import DEFAULT_CONTEXT_WINDOW, resolve_token_budget
from toolloop_lab.events import BudgetGate, LoopStarted, SynthesisStarted, ToolDispatched


def _started(events: tuple[object, ...]) -> LoopStarted:
    first = events[0]
    assert isinstance(first, LoopStarted)
    return first


@pytest.mark.parametrize(
    ("config_window", "profile", "percent", "window", "source"),
    [
        (10_000, {"max_input_tokens": 50_000}, 50, 10_000, "config"),
        (None, {"max_input_tokens": 8_000}, 25, 8_000, "profile"),
        (None, None, 10, DEFAULT_CONTEXT_WINDOW, "default"),
        (None, {"max_output_tokens": 4_000}, 10, DEFAULT_CONTEXT_WINDOW, "default"),
    ],
)
async def test_budget_is_a_percentage_of_the_resolved_window(
    config_window: int | None,
    profile: dict[str, int] | None,
    percent: float,
    window: int,
    source: str,
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("ok")], model_name=MODEL, profile=profile)
    config = AgentConfig(token_budget_percent=percent, context_window=config_window)
    result = await LLMAgent(model, [echo_tool], config).arun("go")

    started = _started(result.events)
    assert started.context_window == window
    assert started.token_budget == window * percent // 100
    budget = resolve_token_budget(percent, config_window, model)
    assert budget is not None
    assert (budget.limit, budget.context_window, budget.source) == (
        window * percent // 100,
        window,
        source,
    )


def test_default_window_is_the_documented_128k() -> None:
    assert DEFAULT_CONTEXT_WINDOW == 128_000
    assert resolve_token_budget(None, 1000, object()) is None


async def test_no_token_budget_means_no_token_gate(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(900_000, 10)), final("ok")],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool]).arun("go")
    assert _started(result.events).token_budget is None
    assert not [e for e in result.events if isinstance(e, BudgetGate)]
    assert result.budget_exhausted is False


async def test_gate_checks_accumulated_prompt_plus_completion_after_each_call(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(300, 20)),
            calls(tool_call("echo", {"text": "b"}, "c2"), tokens=(400, 30)),
            final("ok", (500, 40)),
        ],
        model_name=MODEL,
    )
    config = AgentConfig(token_budget_percent=50, context_window=4000)
    result = await LLMAgent(model, [echo_tool], config).arun("go")

    gates = [e for e in result.events if isinstance(e, BudgetGate)]
    assert [(g.gate, g.stage, g.round) for g in gates] == [
        ("token", "after_call", 1),
        ("token", "after_call", 2),
        ("token", "after_call", 3),
    ]
    assert [g.spent for g in gates] == [Decimal(320), Decimal(750), Decimal(1290)]
    assert {g.limit for g in gates} == {Decimal(2000)}
    assert all(g.passed for g in gates)
    assert result.budget_exhausted is False


async def test_over_budget_stops_tool_rounds_and_runs_synthesis() -> None:
    ran: list[str] = []

    @tool
    def echo(text: str) -> str:
        """Echo."""
        ran.append(text)
        return text

    model = ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "a"}, "c1"), text="first", tokens=(60, 10)),
            calls(tool_call("echo", {"text": "b"}, "c2"), text="second", tokens=(90, 20)),
            final("summary under budget", (120, 15)),
        ],
        model_name=MODEL,
    )
    config = AgentConfig(token_budget_percent=10, context_window=1000, tool_max_rounds=5)
    result = await LLMAgent(model, [echo], config).arun("go")

    assert result.budget_exhausted is True
    assert result.synthesis_was_run is True
    assert result.synthesis_reason == "token_budget"
    assert result.final_response.text == "summary under budget"
    assert result.rounds == 2
    assert ran == ["a"]  # the tripping round's call is answered, not run
    skipped = [m for m in result.messages if isinstance(m, ToolMessage)][-1]
    assert (skipped.tool_call_id, skipped.status) == ("c2", "error")
    dispatched = [e for e in result.events if isinstance(e, ToolDispatched)]
    assert [(e.tool_call_id, e.status, e.error_reason) for e in dispatched] == [
        ("c1", "success", None),
        ("c2", "error", "token_budget"),
    ]
    gates = [e for e in result.events if isinstance(e, BudgetGate)]
    assert [(g.spent, g.passed) for g in gates][:2] == [
        (Decimal(70), True),
        (Decimal(180), False),
    ]
    assert model.calls[-1].tool_names == ()
    (synthesis,) = [e for e in result.events if isinstance(e, SynthesisStarted)]
    assert (synthesis.reason, synthesis.round) == ("token_budget", 3)
    assert (result.accumulated_prompt, result.accumulated_completion) == (270, 45)


async def test_profile_window_drives_the_gate() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1"), tokens=(150, 10)), final("short")],
        model_name=MODEL,
        profile={"max_input_tokens": 1000},
    )
    result = await LLMAgent(model, [echo], AgentConfig(token_budget_percent=10)).arun("go")
    assert result.budget_exhausted is True
    assert _started(result.events).token_budget == 100


async def test_pruning_tokens_count_toward_the_token_budget(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("row\n" * 400)
    model = ScriptedChatModel(
        [
            calls(
                tool_call("file_read", {"path": "big.txt"}, "f1"), text="reading", tokens=(50, 5)
            ),
            final("synthesised"),
        ],
        model_name=MODEL,
    )
    pruner = ScriptedChatModel([AIMessage("rows", usage_metadata=usage(300, 10))])
    config = AgentConfig(
        token_budget_percent=10,
        context_window=2000,
        prune_tools=("file_read",),
        prune_min_chars=100,
    )
    agent = LLMAgent(model, [file_read_tool(tmp_path)], config, pruning_model=pruner)
    result = await agent.arun("go")

    gates = [e for e in result.events if isinstance(e, BudgetGate)]
    assert [(g.spent, g.passed) for g in gates][:2] == [(Decimal(55), True), (Decimal(365), False)]
    assert result.budget_exhausted is True
    assert result.synthesis_reason == "token_budget"
    # the round's tool call did run (its output was pruned), then synthesis followed
    tool_message = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert (tool_message.status, tool_message.content) == ("success", "rows")


async def test_a_final_answer_that_trips_the_gate_is_still_the_answer(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("long answer", (5000, 900))], model_name=MODEL)
    config = AgentConfig(token_budget_percent=1, context_window=10_000)
    result = await LLMAgent(model, [echo_tool], config).arun("go")
    assert result.final_response.text == "long answer"
    # nothing was stopped: the answer came in the call that spent the budget
    assert (result.budget_exhausted, result.synthesis_was_run) == (False, False)
    assert len(model.calls) == 1
    gate = next(e for e in result.events if isinstance(e, BudgetGate))
    assert (gate.passed, gate.spent, gate.limit) == (False, Decimal(5900), Decimal(100))
