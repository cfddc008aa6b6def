"""Rounds, the round cap, stuck models and synthesis (issue 2, "Rounds" and "Round cap")."""

from __future__ import annotations

from collections import Counter

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab._engine.config import DEFAULT_SYNTHESIS_PROMPT
from toolloop_lab.events import Event, ModelCalled, SynthesisStarted, ToolDispatched


def _echo(n: int, text: str = "") -> AIMessage:
    return calls(tool_call("echo", {"text": f"ping {n}"}, f"c{n}"), text=text, tokens=(10 * n, n))


async def test_single_round_returns_the_final_answer_and_exact_sums(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([_echo(1, "Let me check."), final("done", (25, 7))], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool]).arun("Say ping.")

    assert result.final_response.text == "done"
    assert result.final_response is result.messages[-1]
    assert [type(m) for m in result.messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    tool_message = result.messages[2]
    assert isinstance(tool_message, ToolMessage)
    assert (tool_message.tool_call_id, tool_message.status) == ("c1", "success")
    assert tool_message.content == "ping 1"
    # two model calls with tools bound: the tool round and the answering round
    assert result.rounds == 2
    assert (result.accumulated_prompt, result.accumulated_completion) == (10 + 25, 1 + 7)
    assert result.cost_usd == reference_cost([(10, 1), (25, 7)])
    assert result.usage.requests == 2
    assert result.usage_estimated is False
    assert (result.budget_exhausted, result.synthesis_was_run) == (False, False)
    assert result.synthesis_reason is None
    assert [c.tool_names for c in model.calls] == [("echo",), ("echo",)]
    assert tool_message in model.calls[1].messages
    model.assert_complete()


async def test_multi_round_accumulates_every_call(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [_echo(1, "one"), _echo(2, "two"), _echo(3, "three"), final("all three", (90, 11))],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=4)).arun("go")

    assert result.final_response.text == "all three"
    assert result.rounds == 4
    assert result.accumulated_prompt == 10 + 20 + 30 + 90
    assert result.accumulated_completion == 1 + 2 + 3 + 11
    assert result.cost_usd == reference_cost([(10, 1), (20, 2), (30, 3), (90, 11)])
    tool_ids = [m.tool_call_id for m in result.messages if isinstance(m, ToolMessage)]
    assert tool_ids == ["c1", "c2", "c3"]
    assert result.synthesis_was_run is False
    # each call sees the whole conversation so far
    assert [len(c.messages) for c in model.calls] == [1, 3, 5, 7]


async def test_messages_input_is_kept_and_system_prompt_used_for_plain_prompts(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("hi"), final("again")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], AgentConfig(system_prompt="Be brief."))
    result = await agent.arun("hello")
    assert [type(m) for m in result.messages] == [SystemMessage, HumanMessage, AIMessage]
    assert result.messages[0].content == "Be brief."

    history = [("system", "Sys."), ("human", "Q1"), ("ai", "A1"), ("human", "Q2")]
    result2 = await agent.arun(history)
    assert [m.content for m in result2.messages[:4]] == ["Sys.", "Q1", "A1", "Q2"]
    assert result2.final_response.text == "again"


async def test_round_cap_runs_synthesis_without_tools(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [_echo(1, "thinking"), _echo(2, "still thinking"), final("best effort", (40, 9))],
        model_name=MODEL,
    )
    result = await LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=2)).arun("go")

    assert result.synthesis_was_run is True
    assert result.synthesis_reason == "round_cap"
    assert result.final_response.text == "best effort"
    assert result.rounds == 2
    assert len(model.calls) == 3
    synthesis_call = model.calls[-1]
    assert synthesis_call.tool_names == ()
    assert synthesis_call.messages[-1] == HumanMessage(DEFAULT_SYNTHESIS_PROMPT)
    assert HumanMessage(DEFAULT_SYNTHESIS_PROMPT) in result.messages
    # both capped rounds still dispatched their calls
    assert sum(isinstance(m, ToolMessage) for m in result.messages) == 2
    assert result.accumulated_prompt == 10 + 20 + 40
    assert result.cost_usd == reference_cost([(10, 1), (20, 2), (40, 9)])


async def test_synthesis_prompt_is_configurable(echo_tool: BaseTool, recorder: list[Event]) -> None:
    prompt = "Wrap up with what you have."
    model = ScriptedChatModel([_echo(1, "x"), final("wrapped")], model_name=MODEL)
    config = AgentConfig(tool_max_rounds=1, synthesis_prompt=prompt)
    result = await LLMAgent(model, [echo_tool], config, observers=[recorder.append]).arun("go")

    assert model.calls[-1].messages[-1] == HumanMessage(prompt)
    assert result.messages[-2] == HumanMessage(prompt)
    assert HumanMessage(DEFAULT_SYNTHESIS_PROMPT) not in result.messages
    (event,) = [e for e in recorder if isinstance(e, SynthesisStarted)]
    assert (event.reason, event.prompt, event.round) == ("round_cap", prompt, 2)


def _same(n: int) -> AIMessage:
    """Round ``n`` of a model that makes the very same call again (no text, no progress)."""
    return calls(tool_call("echo", {"text": "again"}, f"s{n}"))


async def test_tool_rounds_without_text_are_not_stuck(echo_tool: BaseTool) -> None:
    # Providers send tool calls with empty text: that is an ordinary round, so a run that
    # uses up its rounds that way stops at the cap, not as "stuck".
    model = ScriptedChatModel([_echo(1), _echo(2), _echo(3), final("finally")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=3)).arun("go")

    assert (result.synthesis_was_run, result.synthesis_reason) == (True, "round_cap")
    assert result.final_response.text == "finally"
    assert result.rounds == 3
    assert sum(isinstance(m, ToolMessage) for m in result.messages) == 3
    model_events = [e for e in result.events if isinstance(e, ModelCalled)]
    assert [e.stuck for e in model_events] == [False, False, False, False]
    assert [e.purpose for e in model_events] == ["round", "round", "round", "synthesis"]


async def test_the_same_calls_again_are_stuck(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([_same(1), _same(2), _same(3), final("x")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=3)).arun("go")
    model_events = [e for e in result.events if isinstance(e, ModelCalled)]
    # the first round is new; each repeat of it is stuck (ids differ, names and args do not)
    assert [e.stuck for e in model_events] == [False, True, True, False]
    # without max_stuck_rounds the loop only notes it, and stops at the cap
    assert result.synthesis_reason == "round_cap"


async def test_max_stuck_rounds_stops_early(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([_same(1), _same(2), _same(3), final("early")], model_name=MODEL)
    config = AgentConfig(tool_max_rounds=10, max_stuck_rounds=2)
    result = await LLMAgent(model, [echo_tool], config).arun("go")

    assert result.synthesis_reason == "stuck"
    assert result.rounds == 3  # the calls of round 1, repeated twice
    assert len(model.calls) == 4
    assert model.calls[-1].tool_names == ()
    model.assert_complete()


async def test_max_stuck_rounds_counts_consecutive_repeats_only(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel(
        [_same(1), _same(2), _echo(3), _same(4), _same(5), final("answer")], model_name=MODEL
    )
    config = AgentConfig(tool_max_rounds=10, max_stuck_rounds=2)
    result = await LLMAgent(model, [echo_tool], config).arun("go")
    assert result.synthesis_was_run is False
    assert result.rounds == 6
    assert result.final_response.text == "answer"


async def test_different_arguments_are_progress(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([_echo(1), _echo(2), _echo(3), final("done")], model_name=MODEL)
    config = AgentConfig(tool_max_rounds=10, max_stuck_rounds=1)
    result = await LLMAgent(model, [echo_tool], config).arun("go")
    assert (result.synthesis_was_run, result.rounds) == (False, 4)


async def test_final_answer_in_the_last_allowed_round_needs_no_synthesis(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([_echo(1, "a"), final("in time")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=2)).arun("go")
    assert result.synthesis_was_run is False
    assert result.rounds == 2
    assert len(model.calls) == 2


async def test_tool_calls_in_the_synthesis_reply_are_answered_not_run(
    recorder: list[Event],
) -> None:
    from langchain_core.tools import tool

    ran: list[str] = []

    @tool
    def echo(text: str) -> str:
        """Return the text."""
        ran.append(text)
        return text

    stubborn = calls(tool_call("echo", {"text": "more"}, "late"), text="one more look")
    model = ScriptedChatModel([_echo(1, "x"), stubborn], model_name=MODEL)
    config = AgentConfig(tool_max_rounds=1)
    result = await LLMAgent(model, [echo], config, observers=[recorder.append]).arun("go")

    assert ran == ["ping 1"]
    assert result.final_response.text == "one more look"
    answers = Counter(m.tool_call_id for m in result.messages if isinstance(m, ToolMessage))
    assert answers == Counter({"c1": 1, "late": 1})
    late = next(
        m for m in result.messages if isinstance(m, ToolMessage) and m.tool_call_id == "late"
    )
    assert late.status == "error"
    dispatched = [e for e in recorder if isinstance(e, ToolDispatched)]
    assert [(e.tool_call_id, e.status, e.error_reason) for e in dispatched] == [
        ("c1", "success", None),
        ("late", "error", "synthesis"),
    ]


async def test_changing_the_agents_tools_rebinds_the_model() -> None:
    from langchain_core.tools import tool

    @tool
    def first(text: str) -> str:
        """First tool."""
        return text

    @tool
    def second(text: str) -> str:
        """Second tool."""
        return text

    model = ScriptedChatModel([final("a"), final("b"), final("c")], model_name=MODEL)
    agent = LLMAgent(model, [first])
    await agent.arun("go")
    await agent.arun("go")
    agent.tools = (first, second)
    await agent.arun("go")
    assert [c.tool_names for c in model.calls] == [("first",), ("first",), ("first", "second")]
    assert [names for names, _ in model.bindings] == [("first",), ("first", "second")]


async def test_changing_the_agents_model_uses_the_new_model(echo_tool: BaseTool) -> None:
    first = ScriptedChatModel([final("from first")], model_name=MODEL)
    agent = LLMAgent(first, [echo_tool])
    assert (await agent.arun("go")).final_response.text == "from first"
    second = ScriptedChatModel([final("from second")], model_name=MODEL)
    agent.model = second
    assert (await agent.arun("go")).final_response.text == "from second"
    assert (len(first.calls), len(second.calls)) == (1, 1)
    assert second.bindings == ((("echo",), None),)
