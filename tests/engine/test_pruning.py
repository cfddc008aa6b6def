"""Tool-output pruning: what is pruned, what is kept, and what it costs (issue 2, "Pruning")."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab._engine.pruning import DEFAULT_PRUNING_PROMPT
from toolloop_lab.errors import ConfigurationError, ToolLoopError
from toolloop_lab.events import Event, Pruned, ToolDispatched

LONG = "The quarterly revenue went up by twelve percent. " * 60


def _tokens(text: str) -> int:
    return count_tokens_approximately(
        [HumanMessage(text)], extra_tokens_per_message=0, count_name=False
    )


@tool
def fetch(size: int) -> str:
    """Return ``size`` x characters, or a long report for 0."""
    return ("x" * size) if size else LONG


@tool
def lookup(size: int) -> str:
    """Return ``size`` characters of text (never pruned)."""
    return "y" * size


def _tool_message(result_messages: tuple[BaseMessage, ...], call_id: str) -> ToolMessage:
    return next(
        m for m in result_messages if isinstance(m, ToolMessage) and m.tool_call_id == call_id
    )


async def test_pruning_replaces_content_keeps_the_original_and_counts_its_tokens() -> None:
    events: list[Event] = []
    model = ScriptedChatModel(
        [calls(tool_call("fetch", {"size": 0}, "f1"), tokens=(100, 10)), final("ok", (80, 6))],
        model_name=MODEL,
    )
    pruner = ScriptedChatModel(
        [AIMessage("Revenue +12% this quarter.", usage_metadata=usage(700, 9))], model_name=MODEL
    )
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100)
    agent = LLMAgent(model, [fetch], config, pruning_model=pruner, observers=[events.append])
    result = await agent.arun("How did revenue do?")

    message = _tool_message(result.messages, "f1")
    assert message.content == "Revenue +12% this quarter."
    assert message.artifact == {"original": LONG, "artifact": None, "pruned": True}
    # the main model saw the pruned text, never the original
    seen = _tool_message(model.calls[1].messages, "f1")
    assert seen.content == "Revenue +12% this quarter."

    (pruned,) = [e for e in events if isinstance(e, Pruned)]
    assert (pruned.tool_call_id, pruned.tool_name, pruned.model_name) == ("f1", "fetch", MODEL)
    assert pruned.tokens_before == _tokens(LONG)
    assert pruned.tokens_after == _tokens("Revenue +12% this quarter.")
    assert pruned.tokens_saved == pruned.tokens_before - pruned.tokens_after > 0
    assert (pruned.usage.input_tokens, pruned.usage.output_tokens) == (700, 9)
    assert pruned.usage.cost_usd == reference_cost([(700, 9)])
    assert pruned.net_saved == pruned.tokens_saved - 709
    assert (pruned.original, pruned.pruned) == (LONG, "Revenue +12% this quarter.")

    assert (result.accumulated_prompt, result.accumulated_completion) == (
        100 + 700 + 80,
        10 + 9 + 6,
    )
    assert result.cost_usd == reference_cost([(100, 10), (700, 9), (80, 6)])
    assert result.usage.requests == 3
    kinds = [e.kind for e in events]
    assert kinds.index("tool_dispatch") < kinds.index("pruning") < kinds.index("loop_finish")

    # the pruning model got the instruction, the user's request and the output
    (call,) = pruner.calls
    assert call.tool_names == ()
    assert call.messages[0] == SystemMessage(DEFAULT_PRUNING_PROMPT)
    assert "How did revenue do?" in str(call.messages[1].content)
    assert LONG in str(call.messages[1].content)


async def test_pruning_prompt_is_configurable() -> None:
    model = ScriptedChatModel([calls(tool_call("fetch", {"size": 0}, "f1")), final("ok")])
    pruner = ScriptedChatModel(["short"])
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=10, pruning_prompt="Be terse.")
    await LLMAgent(model, [fetch], config, pruning_model=pruner).arun("go")
    assert pruner.calls[0].messages[0] == SystemMessage("Be terse.")


@pytest.mark.parametrize(("size", "pruned"), [(500, False), (501, True)])
async def test_prune_min_chars_is_the_threshold(size: int, pruned: bool) -> None:
    model = ScriptedChatModel([calls(tool_call("fetch", {"size": size}, "f1")), final("ok")])
    pruner = ScriptedChatModel(["short"])
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=500)
    result = await LLMAgent(model, [fetch], config, pruning_model=pruner).arun("go")

    assert (len(pruner.calls) == 1) is pruned
    content = _tool_message(result.messages, "f1").content
    assert content == ("short" if pruned else "x" * size)
    assert any(e.kind == "pruning" for e in result.events) is pruned


async def test_only_prune_tools_are_pruned() -> None:
    model = ScriptedChatModel(
        [
            calls(
                tool_call("fetch", {"size": 900}, "f1"), tool_call("lookup", {"size": 900}, "l1")
            ),
            final("ok"),
        ]
    )
    pruner = ScriptedChatModel(["short"])
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100)
    result = await LLMAgent(model, [fetch, lookup], config, pruning_model=pruner).arun("go")

    assert len(pruner.calls) == 1
    assert _tool_message(result.messages, "f1").content == "short"
    assert _tool_message(result.messages, "l1").content == "y" * 900
    assert _tool_message(result.messages, "l1").artifact is None


async def test_several_outputs_of_one_round_are_pruned_and_each_counted() -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("fetch", {"size": 900}, "a"), tool_call("fetch", {"size": 800}, "b")),
            final("ok"),
        ],
        model_name=MODEL,
    )

    def shorten(messages: list[BaseMessage], _tools: list[dict[str, Any]]) -> AIMessage:
        size = str(messages[1].content).count("x")
        return AIMessage(f"{size} x", usage_metadata=usage(size, 3))

    pruner = ScriptedChatModel([shorten, shorten], model_name=MODEL)
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100)
    result = await LLMAgent(model, [fetch], config, pruning_model=pruner).arun("go")

    assert _tool_message(result.messages, "a").content == "900 x"
    assert _tool_message(result.messages, "b").content == "800 x"
    pruned = [e for e in result.events if isinstance(e, Pruned)]
    assert [(e.tool_call_id, e.usage.input_tokens) for e in pruned] == [("a", 900), ("b", 800)]
    assert result.accumulated_prompt == 10 + 900 + 800 + 10


async def test_no_pruning_model_is_refused_and_error_outputs_are_never_pruned() -> None:
    @tool
    def broken(size: int) -> str:
        """Fails with a long message."""
        raise ValueError("e" * size)

    model = ScriptedChatModel([final("never")])
    config = AgentConfig(prune_tools=("fetch", "broken"), prune_min_chars=100)
    # without a pruning model nothing would ever be pruned: refused, not silently ignored
    with pytest.raises(ConfigurationError, match="no pruning model") as info:
        LLMAgent(model, [fetch, broken], config)
    assert info.value.field == "prune_tools"

    model2 = ScriptedChatModel([calls(tool_call("broken", {"size": 900}, "b1")), final("ok")])
    pruner = ScriptedChatModel([])
    await LLMAgent(model2, [fetch, broken], config, pruning_model=pruner).arun("go")
    assert pruner.calls == ()


async def test_a_longer_pruning_reply_keeps_the_original_text() -> None:
    model = ScriptedChatModel([calls(tool_call("fetch", {"size": 200}, "f1")), final("ok")])
    pruner = ScriptedChatModel(["z" * 300])
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100)
    result = await LLMAgent(model, [fetch], config, pruning_model=pruner).arun("go")
    assert _tool_message(result.messages, "f1").content == "x" * 200
    (pruned,) = [e for e in result.events if isinstance(e, Pruned)]
    assert pruned.tokens_after == pruned.tokens_before


async def test_a_failed_pruning_call_fails_the_loop_but_keeps_the_others_spend(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel(
        [
            calls(tool_call("fetch", {"size": 900}, "a"), tool_call("fetch", {"size": 800}, "b")),
            final("never"),
        ],
        model_name=MODEL,
    )

    def prune_or_fail(messages: list[BaseMessage], _tools: list[dict[str, Any]]) -> AIMessage:
        if str(messages[1].content).count("x") == 800:
            raise ConnectionError("pruning endpoint down")
        return AIMessage("900 x", usage_metadata=usage(900, 3))

    pruner = ScriptedChatModel([prune_or_fail, prune_or_fail], model_name=MODEL)
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=100)
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [fetch], config, pruning_model=pruner).arun("go")

    err = info.value
    assert isinstance(err.cause, ConnectionError)
    assert (err.accumulated_prompt, err.accumulated_completion) == (10 + 900, 5 + 3)
    assert err.cost_usd == reference_cost([(10, 5), (900, 3)])
    assert [e.kind for e in err.events if isinstance(e, (Pruned, ToolDispatched))] == [
        "tool_dispatch",
        "tool_dispatch",
        "pruning",
    ]
    assert _tool_message(tuple(err.messages), "a").content == "900 x"
    assert _tool_message(tuple(err.messages), "b").content == "x" * 800
