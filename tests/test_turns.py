"""A conversation of several turns on one agent: ``arun(message, history=previous.messages)``.

Each turn is its own run (its own run id and events) on the transcript so far plus the new
user message; its counts cover that turn only, and the turns' counts add up to the
conversation's. The system prompt is sent once, at the start of the conversation.
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab.events import LoopStarted, ModelCallStarted, message_from_dict, transcript

SYSTEM = "You are terse."

# Per call: (input, output) tokens, as the provider would report them.
TURN_1 = [(100, 10), (150, 12)]
TURN_2 = [(260, 20), (300, 8), (340, 9)]


def conversation_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "one"}, "c1"), tokens=TURN_1[0]),
            final("first answer", TURN_1[1]),
            calls(tool_call("echo", {"text": "two"}, "c2"), tokens=TURN_2[0]),
            calls(tool_call("echo", {"text": "three"}, "c3"), tokens=TURN_2[1]),
            final("second answer", TURN_2[2]),
        ],
        model_name=MODEL,
    )


async def test_each_turn_counts_its_own_calls_and_the_turns_add_up(echo_tool: BaseTool) -> None:
    agent = LLMAgent(conversation_model(), [echo_tool], AgentConfig(system_prompt=SYSTEM))
    first = await agent.arun("hello")
    second = await agent.arun("and now?", history=first.messages)

    assert (first.rounds, second.rounds) == (2, 3)
    assert (first.usage.requests, second.usage.requests) == (2, 3)
    assert (first.accumulated_prompt, first.accumulated_completion) == (250, 22)
    assert (second.accumulated_prompt, second.accumulated_completion) == (900, 37)
    assert first.cost_usd == reference_cost(TURN_1)
    assert second.cost_usd == reference_cost(TURN_2)
    total = first.usage + second.usage
    assert (total.input_tokens, total.output_tokens) == (1150, 59)
    assert total.cost_usd == reference_cost(TURN_1 + TURN_2)
    assert first.final_response.text == "first answer"
    assert second.final_response.text == "second answer"
    assert first.run_id != second.run_id
    assert {e.run_id for e in second.events} == {second.run_id}  # no event of turn 1


async def test_the_transcript_carries_over_and_the_system_prompt_is_sent_once(
    echo_tool: BaseTool,
) -> None:
    model = conversation_model()
    agent = LLMAgent(model, [echo_tool], AgentConfig(system_prompt=SYSTEM))
    first = await agent.arun("hello")
    second = await agent.arun("and now?", history=first.messages)

    # The new turn's transcript is the old one, unchanged, then the new message onwards.
    assert list(second.messages[: len(first.messages)]) == list(first.messages)
    assert second.messages[len(first.messages)] == HumanMessage("and now?")
    assert [type(m) for m in second.messages[len(first.messages) + 1 :]] == [
        AIMessage,
        ToolMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
    ]
    systems = [m for m in second.messages if isinstance(m, SystemMessage)]
    assert systems == [SystemMessage(SYSTEM)]
    # What the model was sent on turn 2's first call: the whole conversation so far.
    sent = model.calls[2].messages
    assert list(sent) == [*first.messages, HumanMessage("and now?")]
    assert sum(isinstance(m, SystemMessage) for m in sent) == 1
    # The turn's start event counts the messages it was given; its events rebuild it all.
    (started,) = [e for e in second.events if isinstance(e, LoopStarted)]
    assert started.input_messages == len(first.messages) + 1
    assert transcript(second.events) == list(second.messages)
    first_call = next(e for e in second.events if isinstance(e, ModelCallStarted))
    assert [message_from_dict(dict(m)) for m in first_call.messages] == list(sent)


def test_run_takes_the_history_too(echo_tool: BaseTool) -> None:
    agent = LLMAgent(conversation_model(), [echo_tool])
    first = agent.run("hello")
    second = agent.run("and now?", history=first.messages)
    assert second.accumulated_prompt == sum(i for i, _ in TURN_2)
    assert second.messages[: len(first.messages)] == first.messages
    assert not any(isinstance(m, SystemMessage) for m in second.messages)  # none configured


async def test_a_conversation_without_a_system_message_gets_it_first(echo_tool: BaseTool) -> None:
    history = [HumanMessage("earlier question"), AIMessage("earlier answer")]
    model = ScriptedChatModel([final("now")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], AgentConfig(system_prompt=SYSTEM))
    result = await agent.arun("next question", history=history)
    sent = list(model.calls[0].messages)
    assert sent == [SystemMessage(SYSTEM), *history, HumanMessage("next question")]
    assert list(result.messages[:4]) == sent


async def test_a_later_turn_prunes_against_its_own_question() -> None:
    @tool
    def report() -> str:
        """Returns a long report."""
        return "quarterly figures: revenue up 12%. " * 200

    pruner = ScriptedChatModel([final("short"), final("short")], model_name=MODEL)
    model = ScriptedChatModel(
        [
            calls(tool_call("report", {}, "r1")),
            final("one"),
            calls(tool_call("report", {}, "r2")),
            final("two"),
        ],
        model_name=MODEL,
    )
    config = AgentConfig(prune_tools=("report",), prune_min_chars=100)
    agent = LLMAgent(model, [report], config, pruning_model=pruner)
    first = await agent.arun("How did revenue do?")
    await agent.arun("And what about churn?", history=first.messages)
    asked = [call.messages[-1].text for call in pruner.calls]
    assert asked[0].startswith("User request:\nHow did revenue do?")
    assert asked[1].startswith("User request:\nAnd what about churn?")
