"""The event stream: order, fields, JSON round trips, observers (issue 2, "Events")."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, reference_cost, server_tool, tool_call, usage
from pydantic import BaseModel, ValidationError

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    PausePoint,
    ScriptedChatModel,
    Usage,
    file_read_tool,
    usd_budget,
)
from toolloop_lab._stream import message_dicts
from toolloop_lab._support.jsonsafe import FrozenDict, frozen_json
from toolloop_lab.errors import ExecutionError, ToolLoopError
from toolloop_lab.events import (
    EVENT_TYPES,
    BudgetGate,
    Event,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    Paused,
    Pruned,
    RoundStarted,
    SynthesisStarted,
    ToolCallView,
    ToolDispatched,
    ToolStarted,
    event_from_dict,
    transcript,
)
from toolloop_lab.lab import Scenario, catalog


def _two_round_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            calls(
                tool_call("echo", {"text": "a"}, "c1"),
                tool_call("echo", {"text": "bb"}, "c2"),
                text="checking",
                tokens=(20, 4),
            ),
            final("done", (30, 6)),
        ],
        model_name=MODEL,
    )


async def test_event_order_and_fields_of_a_plain_run(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    agent = LLMAgent(
        _two_round_model(), [echo_tool], AgentConfig(tool_max_rounds=4), observers=[events.append]
    )
    result = await agent.arun("go")

    assert [e.kind for e in events] == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
        "tool_start",
        "tool_dispatch",
        "tool_dispatch",
        "round_start",
        "model_call_start",
        "model_call",
        "loop_finish",
    ]
    assert [e.round for e in events] == [0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2]
    assert {e.run_id for e in events} == {result.run_id}
    assert all(a.t <= b.t for a, b in itertools.pairwise(events))

    started = events[0]
    assert isinstance(started, LoopStarted)
    assert (started.model_name, started.tools, started.max_rounds) == (MODEL, ("echo",), 4)
    assert (started.token_budget, started.usd_limit, started.input_messages) == (None, None, 1)
    assert isinstance(events[1], RoundStarted)
    assert events[1].max_rounds == 4

    sent = events[2]
    assert isinstance(sent, ModelCallStarted)
    assert (sent.call, sent.purpose, sent.model_name, sent.tools) == (1, "round", MODEL, ("echo",))
    assert [m["type"] for m in sent.messages] == ["human"]  # everything, for the first call
    second = events[9]
    assert isinstance(second, ModelCallStarted)
    # then only what was added since: the reply and its two results
    assert [m["type"] for m in second.messages] == ["ai", "tool", "tool"]

    call = events[3]
    assert isinstance(call, ModelCalled)
    assert call.call == 1
    assert (call.purpose, call.model_name, call.text, call.stuck) == (
        "round",
        MODEL,
        "checking",
        False,
    )
    assert call.tool_calls == (
        ToolCallView("c1", "echo", {"text": "a"}),
        ToolCallView("c2", "echo", {"text": "bb"}),
    )
    assert (call.usage.input_tokens, call.usage.output_tokens) == (20, 4)
    assert call.usage.cost_usd == reference_cost([(20, 4)])
    assert call.latency_s >= 0

    assert [e.tool_call_id for e in events if isinstance(e, ToolStarted)] == ["c1", "c2"]
    # results come in as each call finishes; sorted here, since both run at once
    dispatched = sorted(
        (e for e in events if isinstance(e, ToolDispatched)), key=lambda e: e.tool_call_id
    )
    assert [
        (e.tool_call_id, e.name, dict(e.args), e.status, e.output_chars, e.content)
        for e in dispatched
    ] == [
        ("c1", "echo", {"text": "a"}, "success", 1, "a"),
        ("c2", "echo", {"text": "bb"}, "success", 2, "bb"),
    ]
    assert all(e.duration_s >= 0 and e.error_reason is None for e in dispatched)

    finished = events[-1]
    assert isinstance(finished, LoopFinished)
    assert (finished.final_text, finished.rounds, finished.synthesis_was_run) == ("done", 2, False)
    assert (finished.usage.input_tokens, finished.usage.output_tokens) == (50, 10)
    assert finished.synthesis_reason is None


async def test_reply_text_in_events_is_a_plain_str(echo_tool: BaseTool) -> None:
    """langchain-core's ``.text`` is a ``TextAccessor`` (a str subclass the garbage
    collector tracks); events keep the plain string it spells."""
    result = await LLMAgent(_two_round_model(), [echo_tool]).arun("go")
    called = [e for e in result.events if isinstance(e, ModelCalled)]
    finished = [e for e in result.events if isinstance(e, LoopFinished)]
    assert [e.text for e in called] == ["checking", "done"]
    assert {type(e.text) for e in called} == {str}
    assert [(e.final_text, type(e.final_text)) for e in finished] == [("done", str)]


async def test_result_events_are_the_observed_stream(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    result = await LLMAgent(_two_round_model(), [echo_tool], observers=[events.append]).arun("go")
    assert result.events == tuple(events)


async def test_error_events_are_the_observed_stream(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"}, "c1")), OSError("gone")])
    with pytest.raises(ToolLoopError) as info:
        await LLMAgent(model, [echo_tool], observers=[events.append]).arun("go")
    assert info.value.events == tuple(events)
    assert events[-1].kind == "loop_failure"


async def _every_kind(tmp_path: Path, echo_tool: BaseTool) -> list[Event]:
    """Runs that together emit every event kind, with every optional field filled."""
    (tmp_path / "notes.txt").write_text("note line\n" * 300)
    events: list[Event] = []
    model = ScriptedChatModel(
        [
            AIMessage(
                "Reading the notes first.",
                tool_calls=[
                    tool_call("file_read", {"path": "notes.txt"}, "r1"),
                    tool_call("missing", {"q": [1, 2]}, "m1"),
                ],
                invalid_tool_calls=[
                    {"name": "echo", "args": "{oops", "id": "bad", "error": "not JSON"}
                ],
                usage_metadata=usage(120, 30),
                response_metadata={"finish_reason": "tool_calls"},
            ),
            final("synthesised", (200, 20)),
        ],
        model_name=MODEL,
    )
    pruner = ScriptedChatModel([AIMessage("notes", usage_metadata=usage(400, 5))], model_name=MODEL)
    config = AgentConfig(
        tool_max_rounds=1,
        token_budget_percent=50,
        context_window=100_000,
        prune_tools=("file_read",),
        prune_min_chars=100,
    )
    agent = LLMAgent(
        model,
        [echo_tool, file_read_tool(tmp_path)],
        config,
        pruning_model=pruner,
        observers=[events.append],
    )
    with usd_budget("0.5"):
        await agent.arun("Summarise the notes.")

    failing = ScriptedChatModel([calls(tool_call("echo", {"text": "x"}, "e1")), final("x")])
    with usd_budget(1), pytest.raises(ExecutionError):
        await LLMAgent(failing, [echo_tool], observers=[events.append]).arun("go")

    async def hint(point: PausePoint) -> None:
        if point.stage == "model_call" and point.round == 2:
            point.append(HumanMessage("Answer now, please."))

    streamed = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "y"}, "s1"), text="streaming " * 10), final("ok")],
        model_name=MODEL,
    )
    agent = LLMAgent(
        streamed,
        [echo_tool],
        AgentConfig(streaming=True),
        observers=[events.append],
        pause_hooks=[hint],
    )
    await agent.arun("go")

    broken = ScriptedChatModel([ConnectionError("the provider went away")], model_name=MODEL)
    with pytest.raises(ToolLoopError):
        await LLMAgent(broken, [echo_tool], observers=[events.append]).arun("go")

    # an MCP server's tool: its server named, what it logged beside the call and after
    counter, site = server_tool(transport="streamable_http")
    site.log.note("listening on 127.0.0.1")
    counting = ScriptedChatModel([calls(tool_call("count", {"item": "bolts"}, "k1")), final("3")])
    await LLMAgent(counting, [counter], observers=[events.append]).arun("count")
    return events


async def test_every_event_kind_is_json_safe_and_round_trips(
    tmp_path: Path, echo_tool: BaseTool
) -> None:
    events = await _every_kind(tmp_path, echo_tool)
    assert {e.kind for e in events} == set(EVENT_TYPES)

    for event in events:
        data = event.to_dict()
        text = json.dumps(data, allow_nan=False)
        assert data["kind"] == event.kind
        rebuilt = event_from_dict(json.loads(text))
        assert rebuilt == event, event.kind
        assert type(rebuilt) is type(event)


async def test_event_fields_for_pruning_gates_and_synthesis(
    tmp_path: Path, echo_tool: BaseTool
) -> None:
    events = await _every_kind(tmp_path, echo_tool)
    pruned = next(e for e in events if isinstance(e, Pruned))
    assert (pruned.tool_call_id, pruned.tokens_before > pruned.tokens_after) == ("r1", True)
    assert (pruned.usage.input_tokens, pruned.usage.output_tokens) == (400, 5)

    gates = [e for e in events if isinstance(e, BudgetGate)][:4]
    # after the round's call: usd then token; after pruning: usd then token
    assert [(g.gate, g.passed) for g in gates] == [
        ("usd", True),
        ("token", True),
        ("usd", True),
        ("token", True),
    ]
    assert gates[0].limit == Decimal("0.5")
    assert gates[1].limit == Decimal(50_000)
    assert gates[3].spent == Decimal(120 + 30 + 400 + 5)

    synthesis = next(e for e in events if isinstance(e, SynthesisStarted))
    assert (synthesis.reason, synthesis.round) == ("round_cap", 2)

    model_call = next(e for e in events if isinstance(e, ModelCalled))
    assert model_call.finish_reason == "tool_calls"
    assert [v.valid for v in model_call.tool_calls] == [True, True, False]
    assert model_call.tool_calls[2] == ToolCallView(
        "bad", "echo", {"raw": "{oops"}, False, "not JSON"
    )


async def test_to_json_is_the_same_data_as_to_dict(tmp_path: Path, echo_tool: BaseTool) -> None:
    events = await _every_kind(tmp_path, echo_tool)
    for event in events:
        raw = event.to_json()
        assert raw is not None, event.kind
        assert json.loads(raw) == event.to_dict(), event.kind
        assert event_from_dict(json.loads(raw)) == event, event.kind


async def test_to_json_writes_the_bytes_pydantic_writes(
    tmp_path: Path, echo_tool: BaseTool
) -> None:
    # trace lines are written by the fast path; the event schema (pydantic) is what reads
    # them, so the two must agree byte for byte, Decimal digits and field order included
    from toolloop_lab.events import _adapter

    adapter = _adapter()  # the one (de)serialiser of events, private to events.py

    events = await _every_kind(tmp_path, echo_tool)
    usage_costs = Usage(
        input_tokens=20,
        requests=1,
        cost_usd=Decimal("0.0000042"),
        input_cost_usd=Decimal("0.0000030"),
    )
    events.append(dataclasses.replace(events[-1], usage=usage_costs))
    for event in events:
        assert event.to_json() == adapter.dump_json(event), event.kind
    first = events[-1].to_json()
    assert first is not None
    assert b'"input_cost_usd":"0.0000030"' in first  # the Decimal's own digits, kept


def test_an_integer_past_64_bits_is_still_written() -> None:
    # tool arguments come from a model: an integer JSON allows but a fast encoder refuses
    event = ToolStarted(
        run_id="r", round=1, t=0.0, tool_call_id="c1", name="echo", args=frozen_json({"n": 2**70})
    )
    raw = event.to_json()
    assert raw is not None
    assert json.loads(raw)["args"] == {"n": 2**70}
    assert event_from_dict(json.loads(raw)) == event


def test_to_json_declines_a_lone_surrogate_and_to_dict_keeps_it() -> None:
    event = ToolDispatched(
        run_id="r",
        round=1,
        t=0.0,
        tool_call_id="c1",
        name="echo",
        args=frozen_json({"k\udcff": ["\ud800"]}),
        status="success",
        error_reason=None,
        duration_s=0.0,
        output_chars=3,
        content="a\ud800b",
        ran=True,
    )
    assert event.to_json() is None
    data = event.to_dict()
    assert data["content"] == "a\ud800b"
    assert data["args"] == {"k\udcff": ["\ud800"]}
    assert event_from_dict(json.loads(json.dumps(data))) == event


class _Tagged(ToolMessage):
    """A message subclass with a field of its own (pydantic must dump it)."""

    tag: str = "mine"


class _Parsed(BaseModel):
    when: datetime
    raw: bytes


def test_message_snapshots_are_what_pydantic_dumps() -> None:
    when = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    messages = [
        HumanMessage("hi", id="h1"),
        AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": "a", "n": [1, {"x": None}]}, "id": "c1"}],
            usage_metadata={"input_tokens": 5, "output_tokens": 2, "total_tokens": 7},
            response_metadata={"model_name": MODEL},
        ),
        AIMessage("parsed", additional_kwargs={"parsed": _Parsed(when=when, raw=b"\xff")}),
        ToolMessage("r", tool_call_id="c1", name="echo", extra_field=[1, 2]),
        _Tagged("t", tool_call_id="c2"),
    ]
    snapshots = message_dicts(messages)
    for message, snapshot in zip(messages, snapshots, strict=True):
        assert snapshot == {
            "type": message.type,
            "data": frozen_json(message.model_dump(warnings=False)),
        }
        assert isinstance(snapshot["data"], FrozenDict)
        with pytest.raises(TypeError):
            snapshot["data"]["additional_kwargs"]["new"] = 1  # type: ignore[index]
    assert snapshots[3]["data"]["extra_field"] == [1, 2]
    assert snapshots[4]["data"]["tag"] == "mine"
    assert snapshots[2]["data"]["additional_kwargs"]["parsed"]["when"] == when.isoformat()


@pytest.mark.parametrize(
    "message",
    [
        ToolMessage("r", tool_call_id="c1", name="echo"),
        ToolMessage("Error: boom", tool_call_id="c1", name="echo", status="error"),
        ToolMessage("r", tool_call_id="c1", id="m1"),
        ToolMessage("", tool_call_id="c1", name="echo"),
        ToolMessage("r", tool_call_id="c1", name="echo", artifact={"rows": [1, 2]}),
        ToolMessage("r", tool_call_id="c1", response_metadata={"took": 1}),
        ToolMessage("r", tool_call_id="c1", additional_kwargs={"k": "v"}),
        ToolMessage([{"type": "text", "text": "r"}], tool_call_id="c1"),
        ToolMessage("r", tool_call_id="c1", extra_field=[1, 2]),
        ToolMessage.model_construct(content="r", tool_call_id=7, name="echo"),
    ],
    ids=[
        "plain",
        "error",
        "with-id",
        "empty",
        "artifact",
        "metadata",
        "kwargs",
        "blocks",
        "extra",
        "unvalidated",
    ],
)
def test_a_tool_result_snapshot_is_what_pydantic_dumps_key_for_key(message: ToolMessage) -> None:
    """Tool results, one a round, are copied on a path of their own: the same dict in the
    same key order as pydantic's dump, whatever the message holds."""
    (snapshot,) = message_dicts([message])
    dumped = frozen_json(message.model_dump(warnings=False))
    assert snapshot == {"type": message.type, "data": dumped}
    assert list(snapshot) == ["type", "data"]
    assert list(snapshot["data"]) == list(dumped)
    assert json.dumps(snapshot["data"]) == json.dumps(dumped)
    with pytest.raises(TypeError):
        snapshot["data"]["additional_kwargs"]["new"] = 1  # type: ignore[index]


def test_events_are_frozen() -> None:
    event = RoundStarted(run_id="r", round=1, t=0.0, max_rounds=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.round = 2  # type: ignore[misc]


def test_a_stopped_tool_and_a_pause_read_back_and_old_lines_still_load() -> None:
    old = {
        "kind": "tool_dispatch",
        "run_id": "r",
        "round": 1,
        "t": 1.0,
        "tool_call_id": "c1",
        "name": "echo",
        "args": {},
        "status": "error",
        "error_reason": "cancelled",
        "duration_s": 0.0,
        "output_chars": 0,
        "content": "Error: the loop was stopped before this call ran",
    }  # written before calls stopped while running were told apart: no ``ran`` at all
    assert isinstance(event_from_dict(old), ToolDispatched)
    stopped = event_from_dict({**old, "status": "cancelled", "duration_s": 1.5, "ran": True})
    assert isinstance(stopped, ToolDispatched)
    assert (stopped.status, stopped.ran, stopped.duration_s) == ("cancelled", True, 1.5)
    with pytest.raises(ValidationError):
        event_from_dict({**old, "status": "stopped"})  # the vocabulary is closed
    held = Paused(run_id="r", round=1, t=7.0, stage="tool_dispatch", purpose="tools", paused_s=6.2)
    assert event_from_dict(json.loads(json.dumps(held.to_dict()))) == held
    with pytest.raises(ValidationError):
        event_from_dict({**held.to_dict(), "paused_s": -1.0})


def test_event_from_dict_rejects_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="teleport") as info:
        event_from_dict({"kind": "teleport", "run_id": "r", "round": 0, "t": 0.0})
    assert isinstance(info.value, ValidationError)
    assert info.value.errors()[0]["type"] == "union_tag_invalid"


async def test_subscribe_returns_a_working_unsubscribe(echo_tool: BaseTool) -> None:
    first: list[Event] = []
    second: list[Event] = []
    agent = LLMAgent(ScriptedChatModel([final("one"), final("two")]), [echo_tool])
    unsubscribe = agent.subscribe(first.append)
    agent.subscribe(second.append)
    assert agent.observers == (first.append, second.append)

    await agent.arun("go")
    count = len(first)
    assert count == len(second) > 0

    unsubscribe()
    unsubscribe()  # idempotent
    await agent.arun("again")
    assert len(first) == count
    assert len(second) == 2 * count


async def test_unsubscribe_removes_only_its_own_registration(echo_tool: BaseTool) -> None:
    seen: list[Event] = []
    agent = LLMAgent(ScriptedChatModel([final("one")]), [echo_tool])
    agent.subscribe(seen.append)
    remove_second = agent.subscribe(seen.append)
    remove_second()
    result = await agent.arun("go")
    assert seen == list(result.events)


async def test_an_observer_that_raises_never_breaks_the_loop(
    echo_tool: BaseTool, caplog: pytest.LogCaptureFixture
) -> None:
    after: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError(f"observer broke on {event.kind}")

    agent = LLMAgent(_two_round_model(), [echo_tool], observers=[broken, after.append])
    with caplog.at_level(logging.WARNING, logger="toolloop_lab"):
        result = await agent.arun("go")

    assert result.final_response.text == "done"
    assert after == list(result.events)
    assert len([r for r in caplog.records if "observer" in r.getMessage()]) == len(result.events)


async def test_an_async_observer_is_reported_not_silently_dropped(
    echo_tool: BaseTool, caplog: pytest.LogCaptureFixture
) -> None:
    async def async_observer(event: Event) -> None:
        raise AssertionError("never awaited by the loop")

    agent = LLMAgent(ScriptedChatModel([final("ok")]), [echo_tool], observers=[async_observer])
    with caplog.at_level(logging.WARNING, logger="toolloop_lab"):
        result = await agent.arun("go")
    warnings = [r.getMessage() for r in caplog.records if "returned an awaitable" in r.getMessage()]
    assert len(warnings) == len(result.events)
    assert warnings[0].endswith(
        "returned an awaitable on loop_start; observers are plain "
        "callables (schedule async work yourself)"
    )


@pytest.mark.parametrize("scenario", catalog(), ids=lambda s: s.name)
async def test_the_events_rebuild_the_conversation_of_every_catalog_run(
    scenario: Scenario,
) -> None:
    agent = scenario.build_agent()
    try:
        with usd_budget(scenario.usd_limit, prices=scenario.prices):
            result = await agent.arun(scenario.prompt)
    except (ExecutionError, ToolLoopError) as exc:
        messages, events = exc.messages, exc.events
    else:
        messages, events = list(result.messages), result.events
    assert transcript(events) == list(messages)
    read_back = [event_from_dict(json.loads(json.dumps(e.to_dict()))) for e in events]
    assert transcript(read_back) == list(messages)  # a trace file holds the conversation


def test_the_shared_fixtures_need_no_optional_extra() -> None:
    """``pytest tests/test_events.py`` must run without the otel or dask extras: the
    top-level conftest imports neither (their fixtures live beside the tests using them)."""
    tests = Path(__file__).parent
    code = (
        "import runpy, sys\n"
        "for name in ('opentelemetry', 'dask', 'distributed'):\n"
        "    sys.modules[name] = None\n"
        f"sys.path.insert(0, {str(tests)!r})\n"
        f"runpy.run_path({str(tests / 'conftest.py')!r})\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
