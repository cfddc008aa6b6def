"""Record -> replay -> what-if, on real clients against the loopback stubs.

Sessions are recorded through the real ``ChatOpenAI`` / ``ChatAnthropic`` talking to a
stub; the stub is then stopped, so a replay that touched the network would fail.
"""

from __future__ import annotations

import json
import pickle
import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import IPython.lib.pretty
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from loopkit import changed_config
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic, chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import anthropic_cost, openai_cost, price

import toolloop_lab
from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    Recording,
    RecordingChatModel,
    ReplayChatModel,
    ScriptedChatModel,
    ToolLoopResult,
    awhat_if,
    usd_budget,
    what_if,
)
from toolloop_lab.errors import (
    ConfigurationError,
    ExecutionError,
    RecordedCallError,
    RecordingError,
    RecordingFormatError,
    ReplayDivergedError,
    ReplayExhaustedError,
    ToolLoopError,
    ToolLoopLabError,
)
from toolloop_lab.events import Event, LoopStarted, ModelCalled, Pruned, ToolDispatched


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
def fetch(url: str) -> str:
    """Fetch a long page."""
    return f"<page {url}> " + "lorem ipsum dolor sit amet " * 120


TOOLS: list[BaseTool] = [add, lookup]
PROMPT = "Add and look up some things."


def script_openai_session(stub: OpenAIStub) -> None:
    """Three tool rounds (parallel calls, cached tokens, one invalid JSON call), then an answer."""
    stub.reply(
        text="Starting.",
        tool_calls=[
            OpenAIToolCall("add", {"a": 1, "b": 2}),
            OpenAIToolCall("lookup", {"key": "k"}),
        ],
        usage=OpenAIUsage(400, 30),
    )
    stub.reply(
        text="Retrying one.",
        tool_calls=[OpenAIToolCall("add", '{"a": 3,'), OpenAIToolCall("add", {"a": 3, "b": 4})],
        usage=OpenAIUsage(520, 28, cached_tokens=256),
    )
    stub.reply(
        text="One more.",
        tool_calls=[OpenAIToolCall("lookup", {"key": "z"})],
        usage=OpenAIUsage(640, 12, cached_tokens=512),
    )
    stub.reply(text="3, 7 and two values.", usage=OpenAIUsage(700, 9, cached_tokens=512))


def model_call_view(events: tuple[Event, ...]) -> list[tuple[Any, ...]]:
    """What must replay identically: everything but timings."""
    return [
        (e.round, e.purpose, e.model_name, e.usage, e.accumulated, e.tool_calls, e.text)
        for e in events
        if isinstance(e, ModelCalled)
    ]


def tool_view(events: tuple[Event, ...]) -> list[tuple[Any, ...]]:
    """Every call's dispatch, in call-id order: dispatch events come as calls finish, and
    concurrent calls may finish in either order from one run to the next."""
    return sorted(
        (
            (e.tool_call_id, e.name, e.status, e.error_reason, e.content)
            for e in events
            if isinstance(e, ToolDispatched)
        ),
        key=lambda row: row[0],
    )


@pytest.fixture
def openai_recording(tmp_path: Path) -> tuple[Path, ToolLoopResult, OpenAIStub]:
    """A real ChatOpenAI session recorded against the stub; the stub is stopped after."""
    path = tmp_path / "session.jsonl"
    with OpenAIStub() as stub:
        script_openai_session(stub)
        live = LLMAgent(RecordingChatModel(chat_openai(stub), path), TOOLS)
        result = live.run(PROMPT)
    stub.assert_clean()
    return path, result, stub


# -- record and replay ----------------------------------------------------------------


def test_recording_keeps_what_the_stub_reported(
    openai_recording: tuple[Path, ToolLoopResult, OpenAIStub],
) -> None:
    path, result, stub = openai_recording
    assert result.rounds == 4
    assert result.accumulated_prompt == stub.prompt_tokens == 2_260
    assert result.usage.cache_read_tokens == stub.cached_tokens == 1_280
    assert result.cost_usd == openai_cost(stub.reported)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["call"] for line in lines] == [0, 1, 2, 3]
    assert {line["format"] for line in lines} == {"toolloop_lab.recording"}
    assert {tuple(line["tools"]) for line in lines} == {("add", "lookup")}
    assert {line["model_name"] for line in lines} == {"gpt-4o-mini"}
    assert [len(line["request"]) for line in lines] == [1, 4, 7, 9]
    # the response is langchain-core's message dict, usage and provider metadata included
    second = lines[1]["response"]
    assert second["type"] == "ai"
    assert second["data"]["usage_metadata"]["input_tokens"] == 520
    assert second["data"]["usage_metadata"]["input_token_details"]["cache_read"] == 256
    assert second["data"]["response_metadata"]["model_name"] == OpenAIStub.model
    assert len(second["data"]["invalid_tool_calls"]) == 1
    recording = Recording.from_file(path)
    assert recording.usage() == result.usage
    assert [c.usage().cost_usd for c in recording.calls] == [
        openai_cost([u]) for u in stub.reported
    ]
    assert recording.task == (HumanMessage(PROMPT),)


def test_replay_offline_gives_identical_figures_and_events(
    openai_recording: tuple[Path, ToolLoopResult, OpenAIStub],
) -> None:
    path, live, stub = openai_recording
    replay = ReplayChatModel.from_file(path)
    assert replay.model_name == "gpt-4o-mini"
    assert replay.profile is not None
    assert replay.profile.get("max_input_tokens") == 128_000

    again = LLMAgent(replay, TOOLS).run(PROMPT)

    assert replay.remaining == 0
    assert [s.exact for s in replay.served] == [True] * 4
    assert again.final_response.text == live.final_response.text == "3, 7 and two values."
    assert (again.rounds, again.synthesis_was_run) == (live.rounds, live.synthesis_was_run)
    assert again.usage == live.usage
    assert again.cost_usd == live.cost_usd == openai_cost(stub.reported)
    assert model_call_view(again.events) == model_call_view(live.events)
    assert tool_view(again.events) == tool_view(live.events)
    assert [m.content for m in again.messages] == [m.content for m in live.messages]
    assert len(stub.requests) == 4  # the stub (stopped) saw nothing new


def test_replay_twice_needs_reset(openai_recording: tuple[Path, ToolLoopResult, Any]) -> None:
    path, live, _ = openai_recording
    replay = ReplayChatModel.from_file(path)
    agent = LLMAgent(replay, TOOLS)
    agent.run(PROMPT)

    with pytest.raises(ToolLoopError) as info:
        agent.run(PROMPT)
    err = info.value.cause
    assert isinstance(err, ReplayExhaustedError)
    assert (err.call_index, err.recorded_calls, err.needed) == (4, 4, "call")

    replay.reset()
    assert agent.run(PROMPT).usage == live.usage


def test_replay_diverges_when_a_tool_result_changes(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, _, _ = openai_recording

    @tool("lookup")
    def other_lookup(key: str) -> str:
        """Look a key up, differently."""
        return f"changed {key}"

    with pytest.raises(ToolLoopError) as info:
        LLMAgent(ReplayChatModel.from_file(path), [add, other_lookup]).run(PROMPT)

    err = info.value.cause
    assert isinstance(err, ReplayDivergedError)
    assert (err.call_index, err.field, err.message_index) == (1, "messages", 3)
    assert "value of k" in err.expected
    assert "changed k" in err.received
    assert info.value.rounds == 1
    assert info.value.accumulated_prompt == 400  # the first call replayed before it diverged


def test_replay_diverges_on_another_prompt_or_other_tools(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, _, _ = openai_recording
    with pytest.raises(ToolLoopError) as info:
        LLMAgent(ReplayChatModel.from_file(path), TOOLS).run("Something else.")
    err = info.value.cause
    assert isinstance(err, ReplayDivergedError)
    assert (err.call_index, err.field, err.message_index) == (0, "messages", 0)
    assert "Add and look up" in err.expected
    assert "Something else" in err.received

    with pytest.raises(ToolLoopError) as info:
        LLMAgent(ReplayChatModel.from_file(path), [add]).run(PROMPT)
    err = info.value.cause
    assert isinstance(err, ReplayDivergedError)
    assert (err.call_index, err.field) == (0, "tools")
    assert (err.expected, err.received) == ("[add, lookup]", "[add]")


def test_strict_replay_serves_calls_recorded_out_of_order(tmp_path: Path) -> None:
    """Concurrent calls are recorded in completion order; replay matches each request to
    the first unserved recorded call with the same request, whatever the order."""
    release = threading.Event()

    def slow(messages: list[Any], tools: list[Any]) -> AIMessage:
        release.wait(5)
        return AIMessage(f"slow {messages[-1].content}")

    def fast(messages: list[Any], tools: list[Any]) -> AIMessage:
        release.set()
        return AIMessage(f"fast {messages[-1].content}")

    path = tmp_path / "batch.jsonl"
    recorder = RecordingChatModel(ScriptedChatModel([slow, fast]), path)
    assert [r.text for r in recorder.batch(["one", "two"])] in (
        ["slow one", "fast two"],
        ["fast one", "slow two"],
    )
    recorded = [c.response.text for c in Recording.from_file(path).calls if c.response]
    assert recorded[0].startswith("fast")  # the call that finished first is line 0

    replay = ReplayChatModel.from_file(path)
    first_line_prompt = recorded[1].split()[-1]  # ask the second line's question first
    second_line_prompt = recorded[0].split()[-1]
    assert replay.invoke(first_line_prompt).text == recorded[1]
    assert replay.remaining == 1
    assert replay.invoke(second_line_prompt).text == recorded[0]
    assert [s.recorded_call for s in replay.served] == [1, 0]
    assert replay.remaining == 0
    with pytest.raises(ReplayExhaustedError):
        replay.invoke(first_line_prompt)


def test_strict_replay_of_an_unrecorded_request_names_the_next_recorded_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "two.jsonl"
    recorder = RecordingChatModel(ScriptedChatModel(["a", "b"]), path)
    recorder.invoke("first")
    recorder.invoke("second")
    replay = ReplayChatModel.from_file(path)
    assert replay.invoke("first").text == "a"
    with pytest.raises(ReplayDivergedError) as info:
        replay.invoke("third")
    assert (info.value.call_index, info.value.field, info.value.message_index) == (
        1,
        "messages",
        0,
    )
    assert "second" in info.value.expected


def test_a_recorded_fault_replays_as_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "fault.jsonl"
    with OpenAIStub() as stub:
        stub.reply(tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 2})], usage=OpenAIUsage(90, 9))
        stub.fault(429, "slow down")
        with pytest.raises(ToolLoopError) as live:
            LLMAgent(RecordingChatModel(chat_openai(stub), path), TOOLS).run(PROMPT)
    assert type(live.value.cause).__name__ == "OpenAIRateLimitError"
    line = json.loads(path.read_text().splitlines()[1])
    assert line["response"] is None
    assert line["error"]["status_code"] == 429
    assert line["error"]["type"].endswith("OpenAIRateLimitError")

    with pytest.raises(ToolLoopError) as replayed:
        LLMAgent(ReplayChatModel.from_file(path), TOOLS).run(PROMPT)

    err = replayed.value.cause
    assert isinstance(err, RecordedCallError)
    assert (err.call_index, err.status_code) == (1, 429)
    assert err.error_type.endswith("RateLimitError")
    assert "slow down" in err.error_message
    for name in ("rounds", "accumulated_prompt", "accumulated_completion", "cost_usd"):
        assert getattr(replayed.value, name) == getattr(live.value, name)


def test_anthropic_session_replays_with_cache_figures_and_costs(
    ant: AnthropicStub, tmp_path: Path
) -> None:
    path = tmp_path / "claude.jsonl"
    ids = ant.reply(
        text="Both at once.",
        tool_uses=[
            AnthropicToolUse("add", {"a": 1, "b": 1}),
            AnthropicToolUse("lookup", {"key": "q"}),
        ],
        usage=AnthropicUsage(200, 40, cache_creation_input_tokens=1_500),
    )
    ant.reply(text="2 and q.", usage=AnthropicUsage(260, 6, cache_read_input_tokens=1_500))
    live = LLMAgent(RecordingChatModel(chat_anthropic(ant), path), TOOLS).run(PROMPT)
    ant.stop()

    again = LLMAgent(ReplayChatModel.from_file(path), TOOLS).run(PROMPT)

    assert live.accumulated_prompt == sum(u.total_input for u in ant.reported) == 3_460
    assert again.usage == live.usage
    assert again.usage.cache_read_tokens == 1_500
    assert again.usage.cache_write_tokens == 1_500
    assert again.cost_usd == anthropic_cost(ant.reported)
    assert model_call_view(again.events) == model_call_view(live.events)
    replies = [m for m in again.messages if isinstance(m, AIMessage)]
    assert [c["id"] for c in replies[0].tool_calls] == ids
    assert isinstance(replies[0].content, list)  # Anthropic content blocks survive JSON


# -- RecordingChatModel on its own ----------------------------------------------------


def test_recording_delegates_bind_tools_and_records_every_path(tmp_path: Path) -> None:
    inner = ScriptedChatModel(["one", "two", "three"], model_name="gpt-4o-mini")
    path = tmp_path / "r.jsonl"
    model = RecordingChatModel(inner, path)
    assert model.model_name == "gpt-4o-mini"

    bound = model.bind_tools(TOOLS, tool_choice="auto")
    assert bound.invoke("hi").text == "one"
    assert inner.bindings == ((("add", "lookup"), "auto"),)
    assert inner.calls[0].tool_names == ("add", "lookup")
    assert model.invoke("plain").text == "two"
    assert inner.calls[1].tool_names == ()

    again = RecordingChatModel(inner, path)  # appends, numbering on
    assert again.recorded_calls == 2
    again.invoke([HumanMessage("third")])

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(line["call"], line["tools"]) for line in lines] == [
        (0, ["add", "lookup"]),
        (1, None),
        (2, None),
    ]
    recording = Recording.from_file(path)
    assert [c.response.text for c in recording.calls if c.response] == ["one", "two", "three"]


def test_recorder_reports_the_wrapped_models_name_and_profile(tmp_path: Path) -> None:
    model = ChatOpenAI(model="gpt-4o-mini", base_url="http://127.0.0.1:9/v1", api_key="test")
    recorder = RecordingChatModel(model, tmp_path / "unused.jsonl")
    assert recorder.profile == model.profile
    assert recorder.model_name == "gpt-4o-mini"
    assert LLMAgent(recorder).model is recorder


def test_what_if_result_displays_as_its_summary(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, _, _ = openai_recording
    report = what_if(path, AgentConfig(tool_max_rounds=3), tools=TOOLS)
    assert IPython.lib.pretty.pretty(report) == report.summary == str(report)
    assert "ToolLoopResult" not in repr(report)
    assert repr(Recording.from_file(path)) == (
        f"Recording(4 calls, model='gpt-4o-mini', path={str(path)!r})"
    )


def test_what_the_lazy_package_exports_are_the_recording_models() -> None:
    assert toolloop_lab.RecordingChatModel is RecordingChatModel
    assert toolloop_lab.ReplayChatModel is ReplayChatModel


# -- the file format ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("", None, "no calls recorded"),
        ("{not json\n", 1, "not JSON"),
        ('{"format": "other"}\n', 1, "not a toolloop_lab recording"),
        ('\n{"format": "toolloop_lab.recording", "version": 9}\n', 2, "unsupported recording"),
        ('{"format": "toolloop_lab.recording", "version": 1, "request": 3}\n', 1, "malformed"),
    ],
)
def test_bad_files_raise_a_format_error_naming_the_line(
    tmp_path: Path, text: str, line: int | None, fragment: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(RecordingFormatError) as info:
        ReplayChatModel.from_file(path)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert fragment in str(info.value)
    assert isinstance(info.value, ToolLoopLabError)


def test_missing_file_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(tmp_path / "nope.jsonl")
    assert info.value.line is None


def test_errors_keep_their_fields_through_pickle() -> None:
    err = ReplayDivergedError(
        "x", call_index=3, field="messages", expected="a", received="b", message_index=2
    )
    back = pickle.loads(pickle.dumps(err))
    assert isinstance(back, ReplayDivergedError)
    assert isinstance(back, RecordingError)
    assert (back.call_index, back.field, back.message_index, back.expected, back.received) == (
        3,
        "messages",
        2,
        "a",
        "b",
    )
    assert str(back) == "x"


# -- what if --------------------------------------------------------------------------


def test_what_if_with_the_recorded_config_changes_nothing(
    openai_recording: tuple[Path, ToolLoopResult, OpenAIStub],
) -> None:
    path, live, stub = openai_recording

    report = what_if(path, AgentConfig(), tools=TOOLS)

    assert report.recorded == report.replayed
    assert report.recorded.outcome == "final_answer"
    assert (report.recorded.rounds, report.recorded.calls) == (4, 4)
    assert report.recorded.input_tokens == stub.prompt_tokens
    assert report.recorded.cost_usd == openai_cost(stub.reported)
    assert (report.stand_ins, report.adjusted, report.pruned) == (0, 0, 0)
    assert (report.token_delta, report.cost_delta) == (0, Decimal(0))
    assert report.result is not None
    assert model_call_view(report.result.events) == model_call_view(live.events)


def test_what_if_a_lower_round_cap(
    openai_recording: tuple[Path, ToolLoopResult, OpenAIStub],
) -> None:
    path, _, stub = openai_recording

    report = what_if(path, AgentConfig(tool_max_rounds=2), tools=TOOLS)

    rep = report.replayed
    assert (rep.outcome, rep.synthesis_reason, rep.rounds, rep.calls) == (
        "synthesis",
        "round_cap",
        2,
        3,
    )
    assert report.stand_ins == 1
    assert rep.estimated
    assert rep.final_text == "3, 7 and two values."  # the recorded answer stood in
    assert report.result is not None
    # two rounds on the exact recorded figures, then a synthesis call whose input is
    # estimated from the actual prompt (the recorded answer stands in for its reply)
    synthesis_prompt = list(report.result.messages[:-1])
    estimated_in = count_tokens_approximately(synthesis_prompt)
    synthesis = [e for e in report.result.events if isinstance(e, ModelCalled)][-1]
    assert synthesis.purpose == "synthesis"
    assert synthesis.usage.input_tokens == estimated_in
    first_two = stub.reported[:2]
    assert rep.input_tokens == sum(u.prompt_tokens for u in first_two) + estimated_in
    assert rep.cost_usd == openai_cost(first_two) + price(
        OpenAIStub.model, estimated_in, synthesis.usage.output_tokens
    )
    assert report.token_delta < 0
    assert report.cost_delta is not None
    assert report.cost_delta < 0
    lines = report.summary.splitlines()
    assert lines[0] == "What if tool_max_rounds=2:"
    assert lines[3].split() == ["rounds", "4", "2", "-2"]
    assert "answered by the recorded final answer" in report.summary


def test_what_if_a_token_budget(openai_recording: tuple[Path, ToolLoopResult, Any]) -> None:
    path, _, _ = openai_recording
    # 0.5 % of the profile's 128,000 = 640 tokens: round 1 spends 430, round 2 548 more
    report = what_if(path, AgentConfig(token_budget_percent=0.5), tools=TOOLS)

    assert report.result is not None
    started = next(e for e in report.result.events if isinstance(e, LoopStarted))
    assert (started.token_budget, started.context_window) == (640, 128_000)
    assert report.replayed.outcome == "token_budget_exhausted"
    assert report.replayed.synthesis_reason == "token_budget"
    assert report.result.budget_exhausted
    assert report.replayed.rounds == 2
    assert report.stand_ins == 1


def test_what_if_beyond_the_recording_is_a_typed_outcome(tmp_path: Path) -> None:
    path = tmp_path / "capped.jsonl"
    with OpenAIStub() as stub:
        for n in range(2):
            stub.reply(
                text=f"Round {n}.",
                tool_calls=[OpenAIToolCall("add", {"a": n, "b": n})],
                usage=OpenAIUsage(100 + n, 10),
            )
        stub.reply(text="Capped answer.", usage=OpenAIUsage(150, 5))
        config = AgentConfig(tool_max_rounds=2)
        LLMAgent(RecordingChatModel(chat_openai(stub), path), TOOLS, config).run(PROMPT)

    report = what_if(path, AgentConfig(tool_max_rounds=5), tools=TOOLS)

    assert report.recorded.outcome == "synthesis"
    rep = report.replayed
    assert (rep.outcome, rep.detail) == ("failed", "beyond_recording")
    assert (rep.rounds, rep.calls, rep.input_tokens) == (2, 2, 201)
    assert rep.cost_usd == openai_cost(stub.reported[:2])
    assert isinstance(report.error, ToolLoopError)
    cause = report.error.cause
    assert isinstance(cause, ReplayExhaustedError)
    assert (cause.call_index, cause.recorded_calls, cause.needed) == (2, 3, "round")
    assert "beyond the recording" in report.summary


def test_what_if_with_pruning(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    tools: list[BaseTool] = [fetch, add]
    with OpenAIStub() as stub:
        stub.reply(
            text="Fetching.",
            tool_calls=[
                OpenAIToolCall("fetch", {"url": "a"}),
                OpenAIToolCall("fetch", {"url": "b"}),
            ],
            usage=OpenAIUsage(300, 20),
        )
        stub.reply(
            text="Adding.",
            tool_calls=[OpenAIToolCall("add", {"a": 1, "b": 1})],
            usage=OpenAIUsage(2_000, 15, cached_tokens=256),
        )
        stub.reply(text="Two pages, sum 2.", usage=OpenAIUsage(2_050, 8, cached_tokens=1_792))
        LLMAgent(RecordingChatModel(chat_openai(stub), path), tools).run(PROMPT)
    pruner = ScriptedChatModel(
        [
            AIMessage(
                f"page {u}: lorem ipsum",
                usage_metadata={"input_tokens": 900, "output_tokens": 8, "total_tokens": 908},
            )
            for u in "ab"
        ],
        model_name="gpt-4o-mini",
    )
    config = AgentConfig(prune_tools=("fetch",), prune_min_chars=500)

    report = what_if(path, config, tools=tools, pruning_model=pruner)

    assert report.result is not None
    assert report.pruned == 2
    assert report.replayed.outcome == "final_answer"
    assert report.replayed.rounds == report.recorded.rounds == 3
    assert report.replayed.calls == 5
    main_calls = [e for e in report.result.events if isinstance(e, ModelCalled)]
    pruning = [e for e in report.result.events if isinstance(e, Pruned)]
    # the first call is before any pruning: its recorded figures are exact
    assert main_calls[0].usage.input_tokens == 300
    assert report.adjusted == 2
    # later calls saw a shorter conversation, so their input shrank by the pruning
    later_in = sum(c.usage.input_tokens for c in main_calls[1:])
    assert later_in < 4_050
    saved = sum(p.tokens_saved for p in pruning)
    assert saved > 0
    assert report.replayed.input_tokens == sum(c.usage.input_tokens for c in main_calls) + 1_800
    assert report.replayed.estimated
    assert report.replayed.output_tokens == 20 + 15 + 8 + 16
    assert "2 tool output(s) pruned" in report.summary


def test_what_if_under_a_usd_budget(openai_recording: tuple[Path, ToolLoopResult, Any]) -> None:
    path, _, stub = openai_recording
    first, second = (openai_cost([u]) for u in stub.reported[:2])
    with usd_budget(first + second / 2):  # the second call crosses it
        report = what_if(path, AgentConfig(), tools=TOOLS)
    assert report.replayed.outcome == "usd_budget_exhausted"
    assert isinstance(report.error, ExecutionError)
    assert report.replayed.cost_usd == openai_cost(stub.reported[:2])
    assert (report.replayed.rounds, report.replayed.calls) == (1, 2)
    assert "* The what-if run stopped: ExecutionError: USD budget exhausted" in report.summary


def test_what_if_of_an_unpriced_model_under_a_usd_budget_is_a_failure(tmp_path: Path) -> None:
    path = tmp_path / "unpriced.jsonl"
    model = RecordingChatModel(ScriptedChatModel(["fine"], model_name="no-such-model-x"), path)
    LLMAgent(model).run("hi")
    with usd_budget(1):
        report = what_if(path, AgentConfig(), tools=[])
    assert report.replayed.outcome == "failed"
    assert isinstance(report.error, ExecutionError)
    assert report.error.reason == "unpriced"
    assert report.recorded.cost_usd is None
    assert report.cost_delta is None
    assert "unpriced" in report.summary


def test_what_if_of_a_recorded_failure_fails_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "fault.jsonl"
    with OpenAIStub() as stub:
        stub.fault(500, "boom")
        with pytest.raises(ToolLoopError):
            LLMAgent(RecordingChatModel(chat_openai(stub), path), TOOLS).run(PROMPT)
    report = what_if(path, AgentConfig(tool_max_rounds=1), tools=TOOLS)
    assert report.recorded.outcome == report.replayed.outcome == "failed"
    assert isinstance(report.error, ToolLoopError)
    assert isinstance(report.error.cause, RecordedCallError)
    assert report.error.cause.status_code == 500


def test_what_if_rejects_a_bad_config(openai_recording: tuple[Path, ToolLoopResult, Any]) -> None:
    path, _, _ = openai_recording
    with pytest.raises(ToolLoopError) as info:
        what_if(path, changed_config(tool_max_rounds=0), tools=TOOLS)
    assert isinstance(info.value.cause, ConfigurationError)


async def test_awhat_if_matches_what_if(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, _, _ = openai_recording
    recording = Recording.from_file(path)
    report = await awhat_if(recording, AgentConfig(tool_max_rounds=3), tools=TOOLS)
    assert report.replayed.rounds == 3
    assert report.replayed.synthesis_reason == "round_cap"
    assert (
        report.replayed == what_if(recording, AgentConfig(tool_max_rounds=3), tools=TOOLS).replayed
    )


def test_relaxed_replay_still_checks_the_task(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, _, _ = openai_recording
    replay = ReplayChatModel.from_file(path, mode="relaxed")
    with pytest.raises(ToolLoopError) as info:
        LLMAgent(replay, TOOLS).run("A different task.")
    err = info.value.cause
    assert isinstance(err, ReplayDivergedError)
    assert (err.field, err.call_index, err.message_index) == ("task", 0, 0)


def test_tool_results_reach_the_model_unchanged_in_replay(
    openai_recording: tuple[Path, ToolLoopResult, Any],
) -> None:
    path, live, _ = openai_recording
    again = LLMAgent(ReplayChatModel.from_file(path), TOOLS).run(PROMPT)
    results = [m for m in again.messages if isinstance(m, ToolMessage)]
    # valid calls are answered first, then the invalid one, in each round
    assert [m.status for m in results] == ["success", "success", "success", "error", "success"]
    assert results == [m for m in live.messages if isinstance(m, ToolMessage)]
