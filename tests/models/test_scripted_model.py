"""``ScriptedChatModel``: a real langchain-core chat model that replays a script."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from loopkit import MODEL, invalid_call, tool_call, usage

from toolloop_lab import ScriptedChatModel
from toolloop_lab._spend.usage import estimate_tokens
from toolloop_lab.errors import ScriptError

PROMPT = [HumanMessage("Please echo hello.")]


def _tool_reply() -> AIMessage:
    return AIMessage(
        "I will call echo now, then report back to you.",
        tool_calls=[tool_call("echo", {"text": "hello"}, "c1")],
        usage_metadata=usage(42, 7),
    )


def test_is_a_base_chat_model_pytest_does_not_collect() -> None:
    assert issubclass(ScriptedChatModel, BaseChatModel)
    assert ScriptedChatModel.__test__ is False


def test_bind_tools_records_tools_and_tool_choice(echo_tool: BaseTool) -> None:
    model = ScriptedChatModel([_tool_reply(), "second"])
    bound = model.bind_tools([echo_tool], tool_choice="echo")
    assert list(model.bindings) == [(("echo",), "echo")]
    bound.invoke(PROMPT)
    model.bind_tools([echo_tool]).invoke(PROMPT)

    assert model.bindings == ((("echo",), "echo"), (("echo",), None))
    assert [(c.tool_names, c.tool_choice) for c in model.calls] == [
        (("echo",), "echo"),
        (("echo",), None),
    ]
    assert model.calls[0].messages == tuple(PROMPT)


def test_keeps_tool_calls_and_usage_and_names_the_model() -> None:
    model = ScriptedChatModel([_tool_reply()], model_name=MODEL)
    reply = model.invoke(PROMPT)
    assert reply.tool_calls == [tool_call("echo", {"text": "hello"}, "c1")]
    assert reply.usage_metadata == usage(42, 7)
    assert reply.response_metadata["model_name"] == MODEL
    assert "usage_estimated" not in reply.response_metadata


def test_a_scripted_model_name_in_metadata_wins() -> None:
    reply = AIMessage("x", response_metadata={"model_name": "gpt-4o-2024-08-06"})
    model = ScriptedChatModel([reply], model_name="gpt-4o")
    assert model.invoke(PROMPT).response_metadata["model_name"] == "gpt-4o-2024-08-06"


def test_estimates_missing_usage_and_marks_it() -> None:
    model = ScriptedChatModel(["an answer of a few words"])
    reply = model.invoke(PROMPT)
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == count_tokens_approximately(PROMPT)
    assert reply.usage_metadata["output_tokens"] == estimate_tokens(
        AIMessage("an answer of a few words")
    )
    assert reply.usage_metadata["total_tokens"] == (
        reply.usage_metadata["input_tokens"] + reply.usage_metadata["output_tokens"]
    )
    assert reply.response_metadata["usage_estimated"] is True


def test_script_items_are_not_mutated_by_playback() -> None:
    item = AIMessage("same object twice")
    model = ScriptedChatModel([item, item], model_name=MODEL)
    model.invoke(PROMPT)
    model.invoke(PROMPT)
    assert item.usage_metadata is None
    assert item.response_metadata == {}


def test_running_out_is_a_clear_script_error() -> None:
    model = ScriptedChatModel(["only one"])
    model.invoke(PROMPT)
    with pytest.raises(ScriptError, match=r"script exhausted: all 1 scripted replies were used"):
        model.invoke(PROMPT)


def test_assert_complete() -> None:
    model = ScriptedChatModel(["a", "b"])
    model.invoke(PROMPT)
    assert model.remaining == 1
    with pytest.raises(ScriptError, match="1 of 2 scripted replies were never requested"):
        model.assert_complete()
    model.invoke(PROMPT)
    model.assert_complete()
    assert model.remaining == 0


def test_answering_from_plays_the_script_again_from_an_item_on_a_copy() -> None:
    model = ScriptedChatModel(["a", "b", "c"], model_name=MODEL)
    for _ in range(3):
        model.invoke(PROMPT)
    again = model.answering_from(1)
    assert (again.model_name, again.remaining, again.calls) == (MODEL, 2, ())
    assert [again.invoke(PROMPT).content for _ in range(2)] == ["b", "c"]
    assert (model.remaining, len(model.calls)) == (0, 3)  # the model itself is unchanged
    for bad in (-1, 4, True, "1"):
        with pytest.raises(ScriptError, match="answering_from"):
            model.answering_from(bad)  # type: ignore[arg-type]


def test_exceptions_and_callables_in_the_script(echo_tool: BaseTool) -> None:
    seen: list[tuple[int, list[str]]] = []

    def reply(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        seen.append((len(messages), [t["function"]["name"] for t in tools]))
        return AIMessage(f"saw {len(messages)} messages")

    model = ScriptedChatModel([ValueError("scripted failure"), reply, lambda m, t: "plain text"])
    with pytest.raises(ValueError, match="scripted failure"):
        model.invoke(PROMPT)
    assert model.bind_tools([echo_tool]).invoke(PROMPT).text == "saw 1 messages"
    assert seen == [(1, ["echo"])]
    assert model.invoke(PROMPT).text == "plain text"


def test_unplayable_items_are_script_errors() -> None:
    with pytest.raises(ScriptError, match=r"script\[0\] is the int 42, which cannot be played"):
        ScriptedChatModel([42])
    model = ScriptedChatModel([])
    model.script.append(42)  # past the constructor's check: refused when it is reached
    with pytest.raises(ScriptError, match="cannot play script item of type int"):
        model.invoke(PROMPT)
    with pytest.raises(ScriptError, match="returned int, not AIMessage"):
        ScriptedChatModel([lambda m, t: 42]).invoke(PROMPT)


async def test_ainvoke_and_astream_give_the_same_reply(echo_tool: BaseTool) -> None:
    invoked = await ScriptedChatModel([_tool_reply()], model_name=MODEL).ainvoke(PROMPT)

    streamed = ScriptedChatModel([_tool_reply()], model_name=MODEL)
    chunks: list[AIMessageChunk] = []
    async for chunk in streamed.bind_tools([echo_tool]).astream(PROMPT):
        assert isinstance(chunk, AIMessageChunk)
        chunks.append(chunk)
    assert len(chunks) > 1  # really streamed in pieces
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk

    assert total.text == invoked.text == _tool_reply().text
    assert total.tool_calls == invoked.tool_calls == _tool_reply().tool_calls
    assert total.usage_metadata == invoked.usage_metadata == usage(42, 7)
    assert total.response_metadata["model_name"] == MODEL
    assert streamed.calls[0].tool_names == ("echo",)


def test_sync_stream_aggregates_like_invoke() -> None:
    chunks = list(ScriptedChatModel([_tool_reply()]).stream(PROMPT))
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.tool_calls == _tool_reply().tool_calls
    assert total.usage_metadata == usage(42, 7)


async def test_invalid_tool_calls_survive_streaming() -> None:
    reply = AIMessage(
        "text and two calls",
        tool_calls=[tool_call("echo", {"text": "a"}, "c1")],
        invalid_tool_calls=[invalid_call("echo", '{"text": oops}', "x1")],
        usage_metadata=usage(5, 5),
    )
    invoked = await ScriptedChatModel([reply]).ainvoke(PROMPT)
    chunks = [c async for c in ScriptedChatModel([reply]).astream(PROMPT)]
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    assert total.tool_calls == invoked.tool_calls == reply.tool_calls
    assert [(c["id"], c["name"], c["args"]) for c in total.invalid_tool_calls] == [
        ("x1", "echo", '{"text": oops}')
    ]
    assert [(c["id"], c["args"]) for c in invoked.invalid_tool_calls] == [("x1", '{"text": oops}')]


@pytest.mark.parametrize(
    ("script", "fix"),
    [
        ("abc", "script takes a list of replies, got the str 'abc': pass ['abc'] for one reply"),
        (5, "script takes a list of replies, got the int 5"),
        ([AIMessage("ok"), 42], "script[1] is the int 42, which cannot be played"),
        ([ValueError], "script[0] is the class ValueError: pass an instance, ValueError(...)"),
        ([None], "script[0] is None, which cannot be played"),
    ],
    ids=["a string", "a number", "a number in it", "an exception class", "None in it"],
)
def test_a_script_that_cannot_be_played_is_refused_when_the_model_is_built(
    script: Any, fix: str
) -> None:
    # it used to be accepted and to fail at the call that reached the item ("abc" played
    # as three replies, "a", "b" and "c")
    with pytest.raises(ScriptError) as info:
        ScriptedChatModel(script)
    assert fix in str(info.value)
    assert "a script item is an AIMessage, a str (a final answer), an exception to raise" in str(
        info.value
    )
