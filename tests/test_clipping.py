"""A model controls the length of every field it sends, not only of its text.

A 1 MB tool name, tool-call id, finish reason or invalid-call error (or, from an edited
trace or saved sweep, a 1 MB error kind, reason or type name) must not send megabytes to
the browser, fill the saved notebook, or make a 4 MB report: every view clips such fields
and says so with a ``… (N chars)`` marker, N being the whole length. Ids are cut to
``ID_CHARS``, names and labels to ``NAME_CHARS``, content (model text, tool output,
arguments, an invalid call's error, which goes back to the model) to the widget's
``max_text_chars``; the browser then shows content up to its preview with "show all".

Each test measures what a user gets: what the widget sends (mock comm), its saved state,
the text repr, the static snapshot, the report file. ``tests/browser/test_static_views.py``
shows the same clipping on a page in chromium.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import asyncio
import json
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import comm
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from loopkit import (
    MODEL,
    MockComm,
    calls,
    channel,
    invalid_call,
    received,
    strings,
    tool_call,
    usage,
)

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, Usage
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, TEXT_CHARS, clip
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.events import Event, LoopFailed, LoopStarted, ToolDispatched
from toolloop_lab.lab import LabResults, Reply, run_scenarios
from toolloop_lab.lab import Scenario as LabScenario

MB = 1_000_000
MARK = "… (1,000,000 chars)"
CONTENT = 20_000
"""The widget's default ``max_text_chars``."""
SENT_BOUND = 400_000
"""Characters of JSON the widget may send for a run with five 1 MB fields (each field
travels a few times: in the reply, in the conversation of the next call, at the end)."""


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


def big(char: str) -> str:
    return char * MB


def clipped(char: str, limit: int) -> str:
    """What a 1 MB field of ``char`` reads as, clipped to ``limit``."""
    return char * limit + MARK


def sent(dbg: LoopDebugger) -> list[dict[str, Any]]:
    """Everything the browser was sent, once the pacing let it all out."""
    dbg.flush()
    return channel(dbg).custom()


def sent_chars(dbg: LoopDebugger) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in sent(dbg))


# -- escape.clip ----------------------------------------------------------------------------
def test_clip_keeps_short_text_and_marks_a_cut() -> None:
    assert clip("short", 10) == "short"
    assert clip("x" * 10, 10) == "x" * 10
    assert clip("x" * 11, 10) == "x" * 10 + "… (11 chars)"
    assert clip("x" * 12_345, 3) == "xxx… (12,345 chars)"
    assert clip(big("y"), None) == big("y")
    assert clip(None, 5) == ""
    assert clip("a\ud800" * 3, 3) == "a\ufffda… (6 chars)"


def test_every_cut_in_the_package_says_so_with_the_one_marker() -> None:
    from toolloop_lab._replay.recording_file import describe_message

    line = describe_message({"role": "human", "content": "x" * 500}, limit=40)
    assert line == f"human {clip('x' * 500, 40)!r}"
    assert line.endswith("… (500 chars)'")


def test_the_limits_keep_real_names_and_bound_the_rest() -> None:
    assert 64 <= ID_CHARS <= NAME_CHARS <= 256  # real ids ~40, names 64 to 128 characters
    assert NAME_CHARS < TEXT_CHARS <= 5_000


# -- the live debugger ------------------------------------------------------------------------
def huge_fields_agent() -> LLMAgent:
    """One round whose tool name, tool-call id, finish reason, invalid-call error and model
    name are 1 MB each; the tool exists (so its own output stays short)."""
    tool = StructuredTool.from_function(lambda: "tool ok", name=big("n"), description="A tool.")
    reply = AIMessage(
        "",
        tool_calls=[tool_call(big("n"), {}, big("i"))],
        invalid_tool_calls=[invalid_call("bad", "{", "b1", big("e"))],
        usage_metadata=usage(10, 5),
        response_metadata={"finish_reason": big("f")},
    )
    script = [reply, AIMessage("done", usage_metadata=usage(10, 5))]
    return LLMAgent(ScriptedChatModel(script, model_name=big("m")), [tool], AgentConfig())


@pytest.fixture(scope="module")
def huge_events() -> tuple[Event, ...]:
    return asyncio.run(huge_fields_agent().arun("go")).events


@pytest.fixture
def huge(huge_events: tuple[Event, ...]) -> Iterator[LoopDebugger]:
    dbg = LoopDebugger()
    for event in huge_events:
        dbg(event)
    yield dbg
    dbg.close()


def test_a_megabyte_field_sends_a_bounded_stream(huge: LoopDebugger) -> None:
    assert sent_chars(huge) < SENT_BOUND
    assert len(json.dumps(huge.saved_events)) < SENT_BOUND  # what the notebook file keeps
    longest = max(len(s) for m in sent(huge) for s in strings(m))
    assert longest == CONTENT + len(MARK)  # the invalid call's error: content, clipped


def test_every_clipped_field_says_how_long_it_was(huge: LoopDebugger) -> None:
    events = received(huge)
    start = next(e for e in events if e["kind"] == "loop_start")
    assert start["model_name"] == clipped("m", NAME_CHARS)
    assert start["tools"] == [clipped("n", NAME_CHARS)]
    reply = next(e for e in events if e["kind"] == "model_call")
    called, invalid = reply["tool_calls"]
    assert (called["name"], called["id"]) == (clipped("n", NAME_CHARS), clipped("i", ID_CHARS))
    assert invalid["error"] == clipped("e", CONTENT)
    assert reply["finish_reason"] == clipped("f", NAME_CHARS)
    assert reply["model_name"] == clipped("m", NAME_CHARS)
    dispatch = next(e for e in events if e["kind"] == "tool_dispatch")
    assert dispatch["name"] == clipped("n", NAME_CHARS)
    assert dispatch["tool_call_id"] == clipped("i", ID_CHARS)
    # the reply again, as the next call's conversation carries it
    second = [e for e in events if e["kind"] == "model_call_start"][1]
    ai = next(m for m in second["messages"] if m["type"] == "ai")
    assert ai["data"]["tool_calls"][0]["name"] == clipped("n", NAME_CHARS)
    assert ai["data"]["tool_calls"][0]["id"] == clipped("i", ID_CHARS)
    assert ai["data"]["response_metadata"]["finish_reason"] == clipped("f", NAME_CHARS)
    tool_message = next(m for m in second["messages"] if m["type"] == "tool")
    assert tool_message["data"]["tool_call_id"] == clipped("i", ID_CHARS)
    assert tool_message["data"]["name"] == clipped("n", NAME_CHARS)
    # no string anywhere is longer than its kind allows
    for message in sent(huge):
        for text in strings(message):
            assert len(text) <= CONTENT + len(MARK)


def test_the_text_repr_and_the_snapshot_are_bounded_too(huge: LoopDebugger) -> None:
    summary = huge.summary()
    assert len(summary) < 2_000
    assert MARK in summary
    snapshot = huge.snapshot_html()
    assert len(snapshot) < 10_000
    assert MARK in snapshot


async def test_a_pause_before_a_megabyte_tool_name_sends_it_clipped() -> None:
    names = [big("n"), *(f"tool_{i}" for i in range(2, 13))]
    tools = [
        StructuredTool.from_function(lambda: "ok", name=name, description="A tool.")
        for name in names
    ]
    reply = calls(*(tool_call(name, {"k": big("v")}, f"c{i}") for i, name in enumerate(names)))
    model = ScriptedChatModel([reply, AIMessage("done", usage_metadata=usage(1, 1))])
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(LLMAgent(model, tools), "go")
    for _ in range(100_000):  # a deadlock guard, not a timing assertion
        if dbg.paused_at is not None or task.done():
            break
        await asyncio.sleep(0)
    assert dbg.paused_at is not None
    point = sent(dbg)[-1]["control"]["paused_at"]
    assert point["detail"] == [clipped("n", NAME_CHARS), *names[1:]]
    assert point["calls"][0]["name"] == clipped("n", NAME_CHARS)
    assert point["calls"][0]["args"] == {"k": clipped("v", CONTENT)}
    assert len(json.dumps(point)) < 12 * (CONTENT + 200)
    assert len(dbg.summary()) < 3_000
    dbg.continue_()
    await task
    dbg.close()


def test_long_content_says_how_long_it_was() -> None:
    reply = AIMessage("t" * 5_000, usage_metadata=usage(1, 1))
    result = asyncio.run(LLMAgent(ScriptedChatModel([reply])).arun("go"))
    dbg = LoopDebugger(max_text_chars=100)
    for event in result.events:
        dbg(event)
    end = received(dbg)[-1]
    assert end["final_text"] == "t" * 100 + "… (5,000 chars)"
    assert "final answer: " + "t" * 200 + "… (5,000 chars)" in dbg.summary()
    dbg.close()


def replayed_events() -> list[Event]:
    """What an edited trace may hold: 1 MB in every string field a view shows."""
    return [
        LoopStarted(
            run_id=big("r"),
            round=0,
            t=0.0,
            model_name=big("m"),
            tools=(big("n"),),
            max_rounds=2,
            token_budget=None,
            context_window=1000,
            usd_limit=None,
            prune_tools=(),
            input_messages=1,
            started_at=big("s"),
            name=big("N"),
            tags=(big("g"),),
            metadata={big("y"): "v"},
        ),
        ToolDispatched(
            run_id=big("r"),
            round=1,
            t=0.1,
            tool_call_id=big("i"),
            name=big("n"),
            args={big("k"): "v"},
            status="error",
            error_reason=big("q"),
            duration_s=0.0,
            output_chars=2,
            content="no",
        ),
        LoopFailed(
            run_id=big("r"),
            round=1,
            t=0.2,
            error_type=big("T"),
            error_kind=big("K"),
            reason=big("R"),
            message="boom",
            cause_type=big("C"),
            rounds=1,
            usage=Usage(),
            any_invocation_made=True,
            cancelled=False,
            outcome="failed",
        ),
    ]


def test_a_replayed_trace_with_megabyte_fields_is_bounded_everywhere() -> None:
    dbg = LoopDebugger.from_trace(replayed_events())
    try:
        assert sent_chars(dbg) < 20_000
        assert len(json.dumps(dbg.saved_events)) < 20_000
        start, dispatch, failure = received(dbg)
        assert start["run_id"] == clipped("r", ID_CHARS)
        assert start["started_at"] == clipped("s", NAME_CHARS)
        assert start["name"] == clipped("N", NAME_CHARS)
        assert start["tags"] == [clipped("g", NAME_CHARS)]
        assert start["metadata"] == {clipped("y", NAME_CHARS): "v"}  # a key is a name
        assert dispatch["tool_call_id"] == clipped("i", ID_CHARS)
        assert dispatch["error_reason"] == clipped("q", NAME_CHARS)
        assert dispatch["args"] == {clipped("k", NAME_CHARS): "v"}  # a key is a name
        for char, field in (("T", "error_type"), ("K", "error_kind"), ("R", "reason")):
            assert failure[field] == clipped(char, NAME_CHARS)
        assert failure["cause_type"] == clipped("C", NAME_CHARS)
        summary = dbg.summary()
        assert len(summary) < 3_000, len(summary)
        assert MARK in summary
        assert len(dbg.snapshot_html()) < 10_000
    finally:
        dbg.close()


# -- the HTML report --------------------------------------------------------------------------
REPORT_BOUND = 600_000
"""The report of two small scenarios, four PNG plots included, is about 150 KB."""

_SQUEEZED = "ignore:constrained_layout not applied:UserWarning"


class _Visible(HTMLParser):
    """The text a reader without scripts sees: no <script>, <style> or <title> content."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "title"):
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def visible(page: str) -> str:
    parser = _Visible()
    parser.feed(page)
    parser.close()
    return "".join(parser.parts)


def embedded_events(page: str) -> list[dict[str, Any]]:
    """The events the report's view draws from (its JSON data blocks)."""

    class Blocks(HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.blocks: list[str] = []
            self._on = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            self._on = tag == "script" and dict(attrs).get("data-role") == "events"
            if self._on:
                self.blocks.append("")

        def handle_endtag(self, tag: str) -> None:
            self._on = False

        def handle_data(self, data: str) -> None:
            if self._on:
                self.blocks[-1] += data

    parser = Blocks()
    parser.feed(page)
    return [e for block in parser.blocks for e in json.loads(block)]


def _edit(item: dict[str, Any]) -> dict[str, Any]:
    """Put 1 MB in each string field a saved sweep's line has that the report shows."""
    if item["type"] == "run":
        return {
            **item,
            "scenario": big("s"),
            "tags": [big("g")],
            "description": big("d"),
            "model_name": big("m"),
            "error_kind": big("K"),
            "error_reason": big("R"),
        }
    event = item.get("event", {})
    if event.get("kind") == "tool_dispatch":
        event = {**event, "name": big("n"), "tool_call_id": big("i"), "error_reason": big("q")}
    return {**item, "event": event} if "event" in item else item


@pytest.fixture(scope="module")
def megabyte_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    sweep = [
        LabScenario.scripted("unknown tool", [Reply.call("nope", {}), Reply.final("done")]),
    ]
    root = tmp_path_factory.mktemp("clip")
    saved = run_scenarios(sweep, progress=False).save(root / "sweep.jsonl")
    lines = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    edited = root / "edited.jsonl"
    edited.write_text("".join(json.dumps(_edit(line)) + "\n" for line in lines), "utf-8")
    path = LabResults.load(edited).write_report(root / "r.html")
    return path.read_text(encoding="utf-8")


@pytest.mark.filterwarnings(_SQUEEZED)
def test_a_megabyte_field_gives_a_bounded_report(megabyte_report: str) -> None:
    assert len(megabyte_report) < REPORT_BOUND, len(megabyte_report)


@pytest.mark.filterwarnings(_SQUEEZED)
def test_the_report_shows_the_marker_for_every_clipped_field(megabyte_report: str) -> None:
    text = visible(megabyte_report)
    for char, limit in (("s", NAME_CHARS), ("g", NAME_CHARS), ("m", NAME_CHARS)):
        assert clipped(char, limit) in text, char
    assert clipped("d", TEXT_CHARS) in text
    assert f"{clipped('K', NAME_CHARS)}: {clipped('R', NAME_CHARS)}" in text
    assert f"{clipped('n', NAME_CHARS)} error ({clipped('q', NAME_CHARS)})" in text
    # the view the report draws with the widget's module gets the same clipped fields
    dispatch = next(e for e in embedded_events(megabyte_report) if e["kind"] == "tool_dispatch")
    assert dispatch["name"] == clipped("n", NAME_CHARS)
    assert dispatch["tool_call_id"] == clipped("i", ID_CHARS)
    assert dispatch["error_reason"] == clipped("q", NAME_CHARS)


def test_a_long_tool_name_from_the_model_is_clipped_in_the_report() -> None:
    sweep = [
        LabScenario.scripted(
            "long name", [Reply.call(big("n"), {}), Reply.final("done")], model_name=MODEL
        )
    ]
    page = run_scenarios(sweep, progress=False).report_html()
    assert len(page) < REPORT_BOUND
    assert f"<b>{clipped('n', NAME_CHARS)}</b>" in page
    reply = next(e for e in embedded_events(page) if e["kind"] == "model_call")
    assert reply["tool_calls"][0]["name"] == clipped("n", NAME_CHARS)
