"""Hostile model replies: every odd thing a provider (or a proxy, or a misbehaving
integration) can hand back, and exactly how the loop answers it.

Decisions this module pins down:

* **Empty replies** (no text, no tool call; a thinking-only reply counts as empty) end the
  loop as its final answer, as the model asked, but never silently: ``ModelCalled.empty``,
  ``LoopFinished.final_empty`` and ``ToolLoopResult.final_empty`` say so. The loop does not
  spend another call on its own initiative.
* **Length-truncated replies** (``finish_reason="length"``, ``stop_reason="max_tokens"``,
  Gemini's ``MAX_TOKENS``, the Responses API's ``incomplete_details``) are flagged
  (``ModelCalled.truncated``). Their tool calls are never run: a streamed call cut off
  mid-argument parses as a *valid* call with half its arguments, so every call of such a
  reply gets an error ToolMessage (reason ``truncated``) telling the model to ask again.
  A truncated reply without tool calls is the final answer, flagged ``final_truncated``.

Related cases elsewhere: ids made unique (tests/tools/test_dispatch.py), a non-AIMessage reply
(tests/engine/test_loop_edges.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import pytest
from hostilekit import (
    check_result,
    dispatched,
    kinds,
    only,
    tool_messages,
)
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, invalid_call, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopResult
from toolloop_lab.events import ModelCalled

# -- helpers ------------------------------------------------------------------------------


def _odd(**fields: Any) -> AIMessage:
    """A reply whose fields bypass AIMessage validation, as a broken integration's would."""
    return AIMessage("", usage_metadata=usage(10, 5)).model_copy(update=fields)


async def _run(
    replies: list[Any], tools: list[BaseTool], config: AgentConfig | None = None
) -> tuple[ToolLoopResult, ScriptedChatModel]:
    model = ScriptedChatModel(replies, model_name=MODEL)
    result = await LLMAgent(model, tools, config or AgentConfig(tool_timeout_s=60)).arun("go")
    check_result(result)
    model.assert_complete()
    return result, model


def _model_calls(result: ToolLoopResult) -> list[ModelCalled]:
    return [e for e in result.events if isinstance(e, ModelCalled)]


def _invalid(*raw_calls: tuple[str | None, str, str | None]) -> AIMessage:
    """A reply whose calls the provider integration could not parse (``invalid_tool_calls``,
    as langchain-openai and langchain-anthropic build them from a non-streamed reply)."""
    return AIMessage(
        "",
        invalid_tool_calls=[invalid_call(name, args, call_id) for name, args, call_id in raw_calls],
        usage_metadata=usage(10, 5),
    )


def _chunk(*raw_calls: tuple[str | None, str, str | None], text: str = "") -> AIMessageChunk:
    """A streamed reply as langchain-core assembles it from tool-call chunks."""
    return AIMessageChunk(
        content=text,
        tool_call_chunks=[
            {"name": name, "args": args, "id": call_id, "index": i}
            for i, (name, args, call_id) in enumerate(raw_calls)
        ],
        usage_metadata=usage(10, 5),
    )


# -- malformed and non-object arguments ---------------------------------------------------

UNPARSED = [
    ('{"text": oops}', "arguments are not valid JSON"),
    ('{"text": "a"} trailing', "arguments are not valid JSON"),
    ("[1, 2]", "arguments must be a JSON object, got an array"),
    ("null", "arguments must be a JSON object, got null"),
    ("42", "arguments must be a JSON object, got a number"),
    ('"text"', "arguments must be a JSON object, got a string"),
    ("true", "arguments must be a JSON object, got a boolean"),
]


@pytest.mark.parametrize(("raw", "why"), UNPARSED, ids=[r for r, _ in UNPARSED])
async def test_arguments_that_are_no_json_object(raw: str, why: str, echo_tool: BaseTool) -> None:
    reply = _invalid(("echo", raw, "t1"))
    result, model = await _run([reply, final("done")], [echo_tool])

    message = only(tool_messages(result.messages).values())
    assert (message.tool_call_id, message.status, message.name) == ("t1", "error", "echo")
    assert message.content == (
        f"Error: could not parse the call to 'echo': {why}. Raw arguments: {_json(raw)}"
    )
    assert dispatched(result.events)["t1"].error_reason == "invalid_call"
    view = only(_model_calls(result)[0].tool_calls)
    assert (view.id, view.name, view.valid, dict(view.args)) == ("t1", "echo", False, {"raw": raw})
    assert message in model.calls[1].messages  # the model reads why
    assert result.final_response.text == "done"


DEEP_RAW = '{"text": ' + "[" * 20_000 + "]" * 20_000 + "}"
"""Argument text nested deeper than any JSON parser's recursion allows."""


@pytest.mark.parametrize("streamed", [False, True], ids=["invoked", "streamed"])
async def test_arguments_nested_too_deep_to_parse(streamed: bool, echo_tool: BaseTool) -> None:
    reply = _invalid(("echo", DEEP_RAW, "d1"))
    config = AgentConfig(tool_timeout_s=60, streaming=streamed)
    result, model = await _run([reply, final("done")], [echo_tool], config)

    message = only(tool_messages(result.messages).values())
    assert (message.tool_call_id, message.status) == ("d1", "error")
    assert message.content == (
        "Error: could not parse the call to 'echo': arguments are nested too deeply to "
        f"parse. Raw arguments: {_json(DEEP_RAW)}"
    )
    assert dispatched(result.events)["d1"].error_reason == "invalid_call"
    first = _model_calls(result)[0]
    assert (first.usage.input_tokens, first.usage.output_tokens) == (10, 5)  # kept, paid
    assert dict(only(first.tool_calls).args) == {"raw": DEEP_RAW}
    assert message in model.calls[1].messages  # the model reads why


def _json(text: str) -> str:
    import json

    return json.dumps(text)


@pytest.mark.parametrize(
    ("args", "kind"),
    [(["a"], "list"), ("text", "str"), (None, "NoneType"), (7, "int")],
    ids=["list", "string", "none", "number"],
)
async def test_parsed_arguments_that_are_no_object(
    args: Any, kind: str, echo_tool: BaseTool
) -> None:
    bad = _odd(tool_calls=[{"name": "echo", "args": args, "id": "a1", "type": "tool_call"}])
    result, _ = await _run([bad, final("done")], [echo_tool])

    message = tool_messages(result.messages)["a1"]
    assert (message.status, message.content) == (
        "error",
        f"Error: arguments for tool 'echo' must be a JSON object, got {kind}",
    )
    event = dispatched(result.events)["a1"]
    assert (event.error_reason, dict(event.args)) == ("invalid_arguments", {})
    view = only(_model_calls(result)[0].tool_calls)
    assert dict(view.args) == {"raw": args}  # shown as the model sent it, never trusted


@pytest.mark.parametrize("name", ["", None, 42], ids=["empty", "none", "number"])
async def test_a_call_that_names_no_tool(name: Any, echo_tool: BaseTool) -> None:
    bad = _odd(tool_calls=[{"name": name, "args": {}, "id": "n1", "type": "tool_call"}])
    result, _ = await _run([bad, final("done")], [echo_tool])

    message = tool_messages(result.messages)["n1"]
    assert (message.status, message.name, message.content) == (
        "error",
        "(unnamed)",
        "Error: the call names no tool. Available tools: echo.",
    )
    assert dispatched(result.events)["n1"].error_reason == "invalid_call"
    assert only(_model_calls(result)[0].tool_calls).name == ""


# -- duplicate, missing and empty ids -----------------------------------------------------


async def test_repeated_ids_across_valid_and_invalid_calls(echo_tool: BaseTool) -> None:
    reply = _invalid(("echo", "{broken", "same")).model_copy(
        update={
            "tool_calls": [
                tool_call("echo", {"text": "a"}, "same"),
                tool_call("echo", {"text": "b"}, "same"),
            ]
        }
    )
    result, _ = await _run([reply, final("done")], [echo_tool])

    ai = result.messages[1]
    assert isinstance(ai, AIMessage)
    ids = [c["id"] for c in ai.tool_calls] + [c["id"] for c in ai.invalid_tool_calls]
    assert ids[0] == "same"  # kept at its first occurrence
    assert len(set(ids)) == 3
    answers = tool_messages(result.messages)
    assert [answers[i].content for i in ids[:2]] == ["a", "b"]
    assert answers[ids[2]].status == "error"
    assert dispatched(result.events)[ids[2]].error_reason == "invalid_call"


@pytest.mark.parametrize("missing", [None, ""], ids=["none", "empty"])
async def test_missing_ids_on_valid_and_invalid_calls(
    missing: str | None, echo_tool: BaseTool
) -> None:
    reply = _invalid(("echo", "{broken", missing)).model_copy(
        update={
            "tool_calls": [
                {"name": "echo", "args": {"text": "x"}, "id": missing, "type": "tool_call"},
                {"name": "echo", "args": {"text": "y"}, "id": missing, "type": "tool_call"},
            ]
        }
    )
    result, _ = await _run([reply, final("done")], [echo_tool])

    answers = tool_messages(result.messages)
    assert len(answers) == 3
    assert all(answers)  # no empty id left
    assert Counter(m.status for m in answers.values()) == Counter(success=2, error=1)
    assert [m.content for m in answers.values() if m.status == "success"] == ["x", "y"]


async def test_an_id_answered_in_an_earlier_round_is_not_reused(echo_tool: BaseTool) -> None:
    first = calls(tool_call("echo", {"text": "r1"}, "call_1"))
    again = calls(tool_call("echo", {"text": "r2"}, "call_1"), tool_call("echo", {}, "call_2"))
    result, model = await _run([first, again, final("done")], [echo_tool])

    answered = [m.tool_call_id for m in result.messages if isinstance(m, ToolMessage)]
    assert answered[0] == "call_1"
    assert len(answered) == len(set(answered)) == 3
    assert "call_1" not in answered[1:]
    # what the model saw in round 3 pairs every answer with its own request
    sent = model.calls[2].messages
    asked = [c["id"] for m in sent if isinstance(m, AIMessage) for c in m.tool_calls]
    assert asked == answered


# -- empty replies ------------------------------------------------------------------------

EMPTY = {
    "empty-string": AIMessage("", usage_metadata=usage(10, 0)),
    "whitespace": AIMessage("  \n\t ", usage_metadata=usage(10, 1)),
    "empty-list": AIMessage([], usage_metadata=usage(10, 0)),
    "empty-text-block": AIMessage([{"type": "text", "text": ""}], usage_metadata=usage(10, 0)),
}


@pytest.mark.parametrize("name", list(EMPTY))
async def test_an_empty_reply_is_a_flagged_final_answer(name: str, echo_tool: BaseTool) -> None:
    result, model = await _run([EMPTY[name]], [echo_tool])

    assert len(model.calls) == 1  # no extra call spent on the model's behalf
    assert result.final_response.text.strip() == ""
    assert (result.final_empty, result.final_truncated, result.synthesis_was_run) == (
        True,
        False,
        False,
    )
    called = only(_model_calls(result))
    assert (called.empty, called.stuck, called.tool_calls) == (True, False, ())
    assert kinds(result.events) == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "loop_finish",
    ]


async def test_an_empty_synthesis_answer_is_flagged_too(echo_tool: BaseTool) -> None:
    result, _ = await _run(
        [calls(tool_call("echo", {"text": "a"}, "c1"), text="looking"), ""],
        [echo_tool],
        AgentConfig(tool_max_rounds=1),
    )
    assert (result.synthesis_was_run, result.synthesis_reason) == (True, "round_cap")
    assert result.final_empty is True
    assert [e.empty for e in _model_calls(result)] == [False, True]


async def test_a_reply_with_text_is_not_empty(echo_tool: BaseTool) -> None:
    result, _ = await _run([final("an answer")], [echo_tool])
    assert result.final_empty is False
    assert only(_model_calls(result)).empty is False


# -- thinking-only content ----------------------------------------------------------------

THINKING = {"type": "thinking", "thinking": "The user wants x. I should", "signature": "sig"}
REASONING = {"type": "reasoning", "reasoning": "step one"}


@pytest.mark.parametrize("block", [THINKING, REASONING], ids=["thinking", "reasoning"])
async def test_a_thinking_only_reply_is_an_empty_final_answer(
    block: dict[str, str], echo_tool: BaseTool
) -> None:
    reply = AIMessage([block], usage_metadata=usage(10, 40))
    result, _ = await _run([reply], [echo_tool])

    assert result.final_response.text == ""
    assert result.final_empty is True
    called = only(_model_calls(result))
    assert (called.text, called.empty) == ("", True)
    assert result.accumulated_completion == 40  # the thinking was paid for and counted


async def test_thinking_only_with_tool_calls_dispatches_and_is_not_stuck(
    echo_tool: BaseTool,
) -> None:
    reply = AIMessage(
        [THINKING, {"type": "tool_use", "id": "tu1", "name": "echo", "input": {"text": "a"}}],
        tool_calls=[tool_call("echo", {"text": "a"}, "tu1")],
        usage_metadata=usage(10, 30),
    )
    result, _ = await _run([reply, final("done")], [echo_tool])

    assert tool_messages(result.messages)["tu1"].content == "a"
    first = _model_calls(result)[0]
    # no text is ordinary for a tool round: stuck means repeating the same calls
    assert (first.text, first.stuck, first.empty) == ("", False, False)
    assert result.final_empty is False


async def test_thinking_next_to_text_shows_only_the_text(echo_tool: BaseTool) -> None:
    reply = AIMessage(
        [THINKING, {"type": "text", "text": "The answer."}], usage_metadata=usage(1, 1)
    )
    result, _ = await _run([reply], [echo_tool])
    assert result.final_response.text == "The answer."
    assert only(_model_calls(result)).text == "The answer."
    assert "should" not in result.events[-1].to_dict()["final_text"]


# -- 50 parallel tool calls ---------------------------------------------------------------


async def test_fifty_parallel_calls_run_concurrently_and_are_answered_in_order() -> None:
    started: set[int] = set()
    all_started = asyncio.Event()

    @tool
    async def wait_for_all(n: int) -> str:
        """Returns only once all 50 calls are running at the same time."""
        started.add(n)
        if len(started) == 50:
            all_started.set()
        await all_started.wait()
        return f"done {n}"

    reply = calls(*(tool_call("wait_for_all", {"n": n}, f"p{n}") for n in range(50)))
    result, model = await _run([reply, final("done")], [wait_for_all])

    answered = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in answered] == [f"p{n}" for n in range(50)]
    assert [m.content for m in answered] == [f"done {n}" for n in range(50)]
    # events come as each call finishes (all 50 at once here), the transcript in call order
    events = [e.tool_call_id for e in result.events if e.kind == "tool_dispatch"]
    assert sorted(events) == sorted(f"p{n}" for n in range(50))
    starts = [e.tool_call_id for e in result.events if e.kind == "tool_start"]
    assert sorted(starts) == sorted(events)
    assert len([m for m in model.calls[1].messages if isinstance(m, ToolMessage)]) == 50


async def test_fifty_parallel_sync_calls_mixed_with_failures() -> None:
    threads: set[int] = set()

    @tool
    def work(n: int) -> str:
        """Fails on multiples of 7."""
        threads.add(threading.get_ident())
        if n % 7 == 0:
            raise ValueError(f"bad {n}")
        return f"ok {n}"

    reply = calls(*(tool_call("work", {"n": n}, f"s{n}") for n in range(50)))
    result, _ = await _run([reply, final("done")], [work])

    answers = tool_messages(result.messages)
    for n in range(50):
        message = answers[f"s{n}"]
        if n % 7 == 0:
            assert (message.status, message.content) == (
                "error",
                f"Error: tool 'work' raised ValueError: bad {n}",
            )
        else:
            assert (message.status, message.content) == ("success", f"ok {n}")
    assert threading.get_ident() not in threads  # every call ran off the event loop's thread


# -- replies cut off by the length limit ----------------------------------------------------

TRUNCATED_TEXT = (
    "Error: not run: the reply was cut off by the output-token limit, so this call's "
    "arguments may be incomplete. Make the call again (shorter, or fewer calls at once)."
)


def _counting_echo() -> tuple[BaseTool, list[str]]:
    ran: list[str] = []

    @tool
    def echo(text: str) -> str:
        """Echo (records every call it really ran)."""
        ran.append(text)
        return text

    return echo, ran


async def test_a_streamed_call_parses_leniently() -> None:
    # Why truncation matters: langchain-core's streaming parser completes broken JSON.
    cut = _chunk(("echo", '{"text": "a"} trailing', "c1"), ("echo", "{broken", "c2"))
    assert [c["args"] for c in cut.tool_calls] == [{"text": "a"}, {}]
    assert cut.invalid_tool_calls == []


@pytest.mark.parametrize(
    "meta",
    [
        {"finish_reason": "length"},
        {"stop_reason": "max_tokens"},
        {"finish_reason": "MAX_TOKENS"},
        {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}},
    ],
    ids=["openai", "anthropic", "gemini", "responses-api"],
)
async def test_a_cut_off_reply_never_runs_its_half_parsed_calls(meta: dict[str, Any]) -> None:
    echo, ran = _counting_echo()
    # streamed and cut mid-argument: langchain-core's partial parser makes it *valid*
    cut = _chunk(("echo", '{"text": "first"}', "c1"), ("echo", '{"text": "rm -rf /tmp/bu', "c2"))
    assert [c["args"] for c in cut.tool_calls] == [{"text": "first"}, {"text": "rm -rf /tmp/bu"}]
    cut = cut.model_copy(update={"response_metadata": meta})
    result, model = await _run([cut, final("retried")], [echo])

    assert ran == []  # not even the complete-looking first call
    answers = tool_messages(result.messages)
    assert [(m.status, m.content) for m in answers.values()] == [("error", TRUNCATED_TEXT)] * 2
    assert {e.error_reason for e in dispatched(result.events).values()} == {"truncated"}
    first = _model_calls(result)[0]
    assert first.truncated is True
    assert first.finish_reason == next(
        v if isinstance(v, str) else v["reason"] for k, v in meta.items() if k != "status"
    )
    assert answers["c2"] in model.calls[1].messages  # the model is told, and goes on
    assert (result.final_response.text, result.final_truncated) == ("retried", False)


async def test_a_cut_off_final_answer_is_flagged(echo_tool: BaseTool) -> None:
    cut = AIMessage(
        "The three steps are: first, open the", response_metadata={"finish_reason": "length"}
    )
    result, _ = await _run([cut.model_copy(update={"usage_metadata": usage(10, 9)})], [echo_tool])
    assert result.final_response.text == "The three steps are: first, open the"
    assert (result.final_truncated, result.final_empty) == (True, False)
    assert only(_model_calls(result)).truncated is True


async def test_a_normal_stop_is_not_truncation() -> None:
    echo, ran = _counting_echo()
    reply = calls(tool_call("echo", {"text": "x"}, "c1")).model_copy(
        update={"response_metadata": {"finish_reason": "tool_calls"}}
    )
    result, _ = await _run([reply, final("done")], [echo])
    assert ran == ["x"]
    assert _model_calls(result)[0].truncated is False
