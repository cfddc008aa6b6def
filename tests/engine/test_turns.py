"""A conversation of several turns on one agent: ``arun(message, history=previous.messages)``.

Each turn is its own run (its own run id and events) on the transcript so far plus the new
user message; its counts cover that turn only, and the turns' counts add up to the
conversation's. The system prompt is sent once, at the start of the conversation.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import IN_A_LOOP, MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab._stream import message_from_dict
from toolloop_lab.errors import ConfigurationError, ConversationError, ExecutionError
from toolloop_lab.events import Event, LoopFailed, LoopStarted, ModelCallStarted, transcript

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


def _asks(*ids: str, text: str = "") -> AIMessage:
    return calls(*(tool_call("echo", {"text": i}, i) for i in ids), text=text)


def _answer(call_id: str) -> ToolMessage:
    return ToolMessage("done", tool_call_id=call_id, name="echo")


# (history, reason, index of the message at fault, call id)
BROKEN_HISTORIES: list[tuple[list[Any], str, int, str | None]] = [
    # a call without its result (the next turn's question comes right after it)
    ([HumanMessage("q"), _asks("c1", "c2"), _answer("c1")], "unanswered_call", 1, "c2"),
    # a call whose result comes only after another message
    (
        [HumanMessage("q"), _asks("c1"), HumanMessage("?"), _answer("c1")],
        "unanswered_call",
        1,
        "c1",
    ),
    # a result without its call
    ([HumanMessage("q"), _answer("ghost"), AIMessage("ok")], "orphan_result", 1, "ghost"),
    # a call answered twice
    ([HumanMessage("q"), _asks("c1"), _answer("c1"), _answer("c1")], "answered_twice", 3, "c1"),
    # answered twice across rounds
    (
        [_asks("c1"), _answer("c1"), _asks("c2"), _answer("c2"), _answer("c1")],
        "answered_twice",
        4,
        "c1",
    ),
    # one call id used by two calls
    ([_asks("c1"), _answer("c1"), _asks("c1"), _answer("c1")], "repeated_call_id", 2, "c1"),
    # a call only a content block carries (an Anthropic tool_use nobody answered)
    (
        [
            HumanMessage("q"),
            AIMessage([{"type": "tool_use", "id": "tu1", "name": "echo", "input": {}}]),
        ],
        "unanswered_call",
        1,
        "tu1",
    ),
    # a user message's tool_result block that answers an already-answered call
    (
        [
            _asks("c1"),
            _answer("c1"),
            HumanMessage([{"type": "tool_result", "tool_use_id": "c1", "content": "again"}]),
        ],
        "answered_twice",
        2,
        "c1",
    ),
]


@pytest.mark.parametrize(("history", "reason", "index", "call_id"), BROKEN_HISTORIES)
async def test_a_broken_history_is_refused_before_any_call(
    echo_tool: BaseTool, history: list[Any], reason: str, index: int, call_id: str | None
) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append])
    with pytest.raises(ConversationError) as info:
        await agent.arun("next question", history=history)
    err = info.value
    assert isinstance(err, ExecutionError)
    assert (err.kind, err.reason, err.source, err.index) == ("input", reason, "history", index)
    assert err.call_id == call_id
    assert str(err).startswith(f"history[{index}]: ")
    assert model.calls == ()
    assert err.any_invocation_made is False
    assert (err.accumulated_prompt, err.accumulated_completion, err.rounds) == (0, 0, 0)
    assert [e.kind for e in events] == ["loop_failure"]
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.error_kind, failed.reason, failed.outcome) == ("input", reason, "failed")
    assert err.events == tuple(events)
    assert pickle.loads(pickle.dumps(err)).position == f"history[{index}]"


async def test_messages_given_as_the_prompt_are_checked_with_their_own_positions(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool])
    history = [HumanMessage("q"), _asks("c1"), _answer("c1"), AIMessage("done")]
    with pytest.raises(ConversationError) as info:
        await agent.arun([HumanMessage("more"), _asks("c9")], history=history)
    assert (info.value.position, info.value.reason) == ("messages[1]", "unanswered_call")
    with pytest.raises(ConversationError) as alone:
        await agent.arun([HumanMessage("more"), _answer("c1")])
    assert (alone.value.position, alone.value.reason) == ("messages[1]", "orphan_result")
    assert model.calls == ()


async def test_results_in_the_prompt_may_answer_the_history_s_last_calls(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("thanks")], model_name=MODEL)
    history = [HumanMessage("q"), _asks("c1", text="let me look")]
    result = await LLMAgent(model, [echo_tool]).arun([_answer("c1")], history=history)
    assert result.final_response.text == "thanks"
    assert list(model.calls[0].messages) == [*history, _answer("c1")]


async def test_a_whole_conversation_passes_the_check(echo_tool: BaseTool) -> None:
    anthropic_style = AIMessage(
        [
            {"type": "text", "text": "looking"},
            {"type": "tool_use", "id": "c3", "name": "echo", "input": {"text": "x"}},
        ],
        tool_calls=[tool_call("echo", {"text": "x"}, "c3")],
    )
    history = [
        SystemMessage(SYSTEM),
        HumanMessage("q"),
        _asks("c1", "c2"),
        _answer("c2"),
        _answer("c1"),
        AIMessage("first"),
        HumanMessage("again"),
        anthropic_style,
        _answer("c3"),
        AIMessage("second"),
    ]
    model = ScriptedChatModel([final("third")], model_name=MODEL)
    result = await LLMAgent(model, [echo_tool]).arun("and?", history=history)
    assert result.final_response.text == "third"


# -- what run() takes (issue 28, "Inputs") ---------------------------------------------------
@pytest.mark.parametrize(
    "given",
    [
        {"messages": [("user", "hello")]},
        {"messages": [HumanMessage("hello")]},
        {"messages": "hello"},  # one message, as LangGraph's add_messages takes it
        {"messages": {"role": "user", "content": "hello"}},
    ],
    ids=["tuples", "messages", "a string", "a message dict"],
)
@pytest.mark.parametrize("entry", ["run", "arun"])
@pytest.mark.filterwarnings(IN_A_LOOP)
async def test_langgraphs_input_shape_is_its_messages(
    given: Any, entry: str, echo_tool: BaseTool
) -> None:
    model = ScriptedChatModel([final("hi there")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool])
    result = await agent.arun(given) if entry == "arun" else agent.run(given)
    assert result.final_response.text == "hi there"
    sent = model.calls[0].messages
    assert [(type(m), m.content) for m in sent] == [(HumanMessage, "hello")]


REFUSED_INPUTS: list[tuple[str, dict[str, Any], Any, str]] = [
    ("another key", {}, {"input": "hello"}, "only its 'messages' are read"),
    ("more state", {}, {"messages": [("user", "hi")], "step": 3}, "pass state['messages']"),
    ("one message dict", {}, {"role": "user", "content": "hi"}, "pass [message]"),
    ("one message", {}, HumanMessage("hi"), "got one HumanMessage: pass [message]"),
    ("a mapping as history", {"history": {"a": 1}}, "go", "history= takes"),
    ("a text as history", {"history": "earlier"}, "go", "history= takes"),
]


@pytest.mark.parametrize(
    ("kwargs", "given", "fix"),
    [c[1:] for c in REFUSED_INPUTS],
    ids=[c[0] for c in REFUSED_INPUTS],
)
@pytest.mark.parametrize("entry", ["run", "arun"])
async def test_a_mapping_is_never_read_as_messages(
    kwargs: dict[str, Any], given: Any, fix: str, entry: str, echo_tool: BaseTool
) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append])

    async def call() -> Any:
        return await agent.arun(given, **kwargs) if entry == "arun" else agent.run(given, **kwargs)

    with pytest.raises(TypeError) as info:
        await call()
    assert fix in str(info.value)
    assert model.calls == ()
    assert events == [], "refused at the call: no run started"


async def test_a_result_given_as_history_is_refused_with_its_messages_named(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([final("first"), final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool])
    first = await agent.arun("hello")
    with pytest.raises(TypeError, match=r"history=first\.messages|history=result\.messages"):
        await agent.arun("and now?", history=first)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"history=result\.messages"):
        await agent.arun(first)  # type: ignore[arg-type]
    assert len(model.calls) == 1


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t"])
@pytest.mark.parametrize("entry", ["run", "arun"])
@pytest.mark.filterwarnings(IN_A_LOOP)
async def test_a_blank_prompt_is_refused_at_the_call_as_blank_config_prompts_are(
    prompt: str, entry: str, echo_tool: BaseTool
) -> None:
    # Providers refuse whitespace-only text (Anthropic: "text content blocks must contain
    # non-whitespace text"): a paid call must never be the first to say so.
    events: list[Event] = []
    model = ScriptedChatModel([final("never")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], observers=[events.append])
    with pytest.raises(ConfigurationError) as info:
        await agent.arun(prompt) if entry == "arun" else agent.run(prompt)
    assert info.value.field == "prompt"
    assert str(info.value).startswith("prompt: ")
    assert "whitespace" in str(info.value)
    assert model.calls == ()
    assert events == [], "refused at the call: no run started"
