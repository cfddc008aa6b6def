"""MCP servers' tools in the loop, against a real FastMCP server run as a subprocess
(``server_app.py``), over stdio and over streamable HTTP on loopback: each call names its
server in every view and file, the lines the server wrote to its stderr while a call ran
sit beside that call, a crash, a lost connection and a closed session each end a call in
words (never "timed out"), a run never hangs on a dead server with the default config, a
server that cannot start is refused before any model call, images and structured content
stay what they are, and a recorded MCP session replays offline the same."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from loopkit import calls, final, tool_call
from mcpkit import http_server, stdio_server
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolloop_lab import (
    LLMAgent,
    LoopDebugger,
    Recording,
    RecordingChatModel,
    ReplayChatModel,
    ScriptedChatModel,
    TraceWriter,
    compare,
    read_trace,
)
from toolloop_lab.errors import McpServerError, RunStopped
from toolloop_lab.events import Event, ServerLogged, ToolDispatched, ToolStarted
from toolloop_lab.mcp import McpServer, mcp_tools
from toolloop_lab.otel import export_trace

pytest_plugins = ("otelkit",)

RUN_BOUND_S = 60.0
"""Every run is awaited at most this long: a hang fails the test instead of stalling it."""


def _kinds(events: list[Event], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def _dispatch(events: list[Event], call_id: str) -> ToolDispatched:
    return next(e for e in _kinds(events, ToolDispatched) if e.tool_call_id == call_id)


async def _run(tools: list, script: list, observers: list, **kwargs: object) -> object:
    agent = LLMAgent(ScriptedChatModel(script), tools, observers=observers, **kwargs)
    return await asyncio.wait_for(agent.arun("check the stock"), RUN_BOUND_S)


# -- identity, stderr beside its call, rich results -----------------------------------------
async def test_a_stdio_servers_calls_name_it_in_every_view_and_file(
    tmp_path: Path, provider: object, exporter: InMemorySpanExporter
) -> None:
    events: list[Event] = []
    trace = tmp_path / "run.jsonl"
    script = [
        calls(tool_call("count", {"item": "bolts"}, "c1")),
        calls(tool_call("picture", {}, "c2"), tool_call("refuse", {"item": "x"}, "c3")),
        final("5 bolts"),
    ]
    async with mcp_tools([stdio_server()]) as tools:
        with TraceWriter(trace) as writer:
            await _run(tools, script, [events.append, writer])

    starts = _kinds(events, ToolStarted)
    assert {(e.name, e.server, e.transport) for e in starts} == {
        ("count", "inventory", "stdio"),
        ("picture", "inventory", "stdio"),
        ("refuse", "inventory", "stdio"),
    }
    assert all(e.server == "inventory" for e in _kinds(events, ToolDispatched))
    # the trace keeps it, and every view read from it says it
    read = read_trace(trace)
    assert [e for e in read.events if isinstance(e, ToolStarted)] == starts
    dbg = LoopDebugger.from_trace(trace)
    text = dbg.summary()
    assert "count [inventory]: success" in text
    assert "MCP server inventory (stdio) · 3 calls, 1 failed" in text
    assert "counting bolts" in text
    html = dbg.snapshot_html()
    assert "count [inventory]" in html
    assert "MCP server inventory (stdio)" in html
    # the OpenTelemetry export: the MCP conventions beside gen_ai.tool.name
    export_trace(trace, provider, capture_content=True)  # type: ignore[arg-type]
    spans = {
        s.attributes["gen_ai.tool.name"]: s
        for s in exporter.get_finished_spans()
        if s.attributes and "gen_ai.tool.name" in s.attributes
    }
    count = spans["count"].attributes
    assert count["mcp.method.name"] == "tools/call"
    assert count["network.transport"] == "pipe"
    assert count["toolloop.mcp.server"] == "inventory"
    logged = [e for e in spans["count"].events if e.name == "toolloop.mcp.server_log"]
    assert logged
    assert "counting bolts" in logged[0].attributes["toolloop.mcp.log.lines"]


async def test_what_the_server_wrote_while_a_call_ran_sits_beside_that_call() -> None:
    events: list[Event] = []
    script = [
        calls(tool_call("count", {"item": "bolts"}, "c1")),
        calls(tool_call("count", {"item": "nuts"}, "c2")),
        final("done"),
    ]
    async with mcp_tools([stdio_server()]) as tools:
        await _run(tools, script, [events.append])
    kinds = [e.kind for e in events]
    for call_id, item in (("c1", "bolts"), ("c2", "nuts")):
        said = next(e for e in _kinds(events, ServerLogged) if e.tool_call_id == call_id)
        assert f"counting {item}" in said.lines
        other = "nuts" if item == "bolts" else "bolts"
        assert f"counting {other}" not in said.lines  # the other call's line is not its
        # just before the call's result
        assert kinds[events.index(said) + 1] == "tool_dispatch"
        assert events[events.index(said) + 1].tool_call_id == call_id
    numbers = [e.first_line for e in _kinds(events, ServerLogged) if e.tool_call_id]
    assert numbers == sorted(numbers)


async def test_images_and_structured_content_stay_what_they_are(tmp_path: Path) -> None:
    events: list[Event] = []
    trace = tmp_path / "run.jsonl"
    script = [
        calls(tool_call("count", {"item": "bolts"}, "c1"), tool_call("picture", {}, "c2")),
        final("done"),
    ]
    async with mcp_tools([stdio_server()]) as tools:
        with TraceWriter(trace) as writer:
            result = await _run(tools, script, [events.append, writer])
    count, picture = _dispatch(events, "c1"), _dispatch(events, "c2")
    assert dict(count.structured or {}) == {"item": "bolts", "count": 5}
    assert picture.blocks is not None
    image = next(b for b in picture.blocks if b["type"] == "image")
    assert image["mime_type"] == "image/png"
    assert image["base64"].startswith("iVBORw0KGgo")
    assert "[image: image/png" in picture.content  # every text view's words for it
    # the model was sent the image as a block too
    sent = next(m for m in result.messages if getattr(m, "tool_call_id", None) == "c2")
    assert any(isinstance(b, dict) and b.get("type") == "image" for b in sent.content)
    # the views that draw no images say what they leave out
    dbg = LoopDebugger.from_trace(trace)
    assert "not drawn here: [image: image/png" in dbg.summary()
    assert "not drawn here: structured content" in dbg.summary()
    assert "not drawn here: [image: image/png" in dbg.snapshot_html()


# -- failures in words, no hangs -----------------------------------------------------------
async def test_a_crashed_stdio_server_ends_the_call_in_words_and_later_calls_at_once() -> None:
    events: list[Event] = []
    script = [
        calls(tool_call("crash_tool", {}, "c1")),
        calls(tool_call("count", {"item": "bolts"}, "c2")),
        final("the server is gone"),
    ]
    async with mcp_tools([stdio_server()]) as tools:
        result = await _run(tools, script, [events.append])  # the default config: no tool timeout
    crash = _dispatch(events, "c1")
    assert crash.status == "error"
    assert crash.error_reason == "server_exited"
    assert "'inventory'" in crash.content
    assert "exited while this call ran" in crash.content
    assert "FATAL: segfault-like crash in crash_tool" in crash.content
    assert "timed out" not in crash.content
    said = next(e for e in _kinds(events, ServerLogged) if e.tool_call_id == "c1")
    assert "FATAL: segfault-like crash in crash_tool" in said.lines
    later = _dispatch(events, "c2")
    assert later.error_reason == "session_closed"
    assert "the server exited earlier" in later.content
    assert result.final_response.text == "the server is gone"


async def test_a_lost_http_connection_ends_the_call_in_words_with_no_tool_timeout() -> None:
    events: list[Event] = []
    # the tool would sleep far past RUN_BOUND_S: only the lost connection can end the call
    script = [calls(tool_call("slow", {"seconds": 600}, "c1")), final("lost it")]
    with http_server() as served:
        async with mcp_tools([served.server]) as tools:

            def kill_when_running(event: Event) -> None:
                events.append(event)
                if isinstance(event, ToolStarted):
                    threading.Timer(1.0, served.kill).start()

            result = await _run(tools, script, [kill_when_running])
    lost = _dispatch(events, "c1")
    assert lost.status == "error"
    assert lost.error_reason == "connection_lost"
    assert "lost the connection to MCP server 'inventory'" in lost.content
    assert "timed out" not in lost.content
    assert lost.content.split("while this call ran:")[1].strip()  # a cause, never empty
    assert result.final_response.text == "lost it"


async def test_an_http_servers_calls_carry_its_transport_and_session() -> None:
    events: list[Event] = []
    script = [calls(tool_call("count", {"item": "bolts"}, "c1")), final("5")]
    with http_server() as served:
        async with mcp_tools([served.server]) as tools:
            await _run(tools, script, [events.append])
    start = _kinds(events, ToolStarted)[0]
    assert (start.server, start.transport) == ("inventory", "streamable_http")
    assert start.session_id
    assert _dispatch(events, "c1").status == "success"


def test_a_server_that_cannot_start_is_refused_naming_it_and_its_stderr() -> None:
    with pytest.raises(McpServerError) as caught, mcp_tools([stdio_server(mode="broken")]):
        pytest.fail("the block must not open")
    error = caught.value
    assert error.reason == "server_start"
    assert error.server == "inventory"
    assert "MCP server 'inventory'" in str(error)
    assert "RuntimeError: the inventory database is missing" in str(error)
    assert "RuntimeError: the inventory database is missing" in error.stderr


def test_a_url_nothing_listens_on_is_refused_before_any_model_call() -> None:
    from mcpkit import free_port

    server = McpServer("nowhere", url=f"http://127.0.0.1:{free_port()}/mcp", start_timeout_s=10)
    with pytest.raises(McpServerError) as caught, mcp_tools([server]):
        pytest.fail("the block must not open")
    assert caught.value.reason == "server_start"
    assert "'nowhere'" in str(caught.value)
    assert "timed out" not in str(caught.value)


async def test_stop_reaches_a_call_waiting_on_a_server() -> None:
    events: list[Event] = []
    started = asyncio.Event()

    def watch(event: Event) -> None:
        events.append(event)
        if isinstance(event, ToolStarted):
            started.set()

    async with mcp_tools([stdio_server()]) as tools:
        agent = LLMAgent(
            ScriptedChatModel([calls(tool_call("slow", {"seconds": 60}, "c1")), final("x")]),
            tools,
            observers=[watch],
        )
        task = asyncio.ensure_future(agent.arun("wait"))
        await asyncio.wait_for(started.wait(), RUN_BOUND_S)
        task.cancel()
        with pytest.raises((RunStopped, asyncio.CancelledError)):
            await asyncio.wait_for(task, RUN_BOUND_S)
        # the server is still there for the next run: the stop ended the call, not the session
        after: list[Event] = []
        await _run(
            tools, [calls(tool_call("count", {"item": "a"}, "c2")), final("1")], [after.append]
        )
        assert _dispatch(after, "c2").status == "success"
    stopped = _dispatch(events, "c1")
    assert stopped.status == "cancelled"
    assert stopped.server == "inventory"


# -- the sync block, recordings ------------------------------------------------------------
def test_the_sync_block_and_a_recorded_session_replayed_offline(tmp_path: Path) -> None:
    recording = tmp_path / "session.jsonl"
    script = [
        calls(tool_call("count", {"item": "bolts"}, "c1"), tool_call("picture", {}, "c2")),
        final("5 bolts"),
    ]
    with mcp_tools([stdio_server()]) as tools:
        model = RecordingChatModel(ScriptedChatModel(script), recording)
        first = LLMAgent(model, tools).run("check the stock")
        replay = ReplayChatModel(Recording.from_file(recording))
        second = LLMAgent(replay, tools).run("check the stock")
    same = compare(first, second)
    assert same.same, same
    assert json.loads(recording.read_text().splitlines()[0])["format"] == "toolloop_lab.recording"


# -- a LangChain agent, watched ------------------------------------------------------------
async def test_a_create_agent_run_names_the_server_and_its_lines_through_the_bridge() -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from toolloop_lab import watch

    events: list[Event] = []
    script = [
        calls(tool_call("count", {"item": "bolts"}, "c1")),
        calls(tool_call("crash_tool", {}, "c2")),
        final("done"),
    ]
    async with mcp_tools([stdio_server()]) as tools:
        with watch(events.append):
            agent = create_agent(ScriptedChatModel(script), tools)
            await asyncio.wait_for(
                agent.ainvoke({"messages": [HumanMessage("check the stock")]}), RUN_BOUND_S
            )
    start = next(e for e in _kinds(events, ToolStarted) if e.tool_call_id == "c1")
    assert (start.server, start.transport) == ("inventory", "stdio")
    count = _dispatch(events, "c1")
    assert count.server == "inventory"
    assert dict(count.structured or {}) == {"item": "bolts", "count": 5}
    said = next(e for e in _kinds(events, ServerLogged) if e.tool_call_id == "c1")
    assert "counting bolts" in said.lines
    crash = _dispatch(events, "c2")
    assert crash.status == "error"
    assert "MCP server 'inventory'" in crash.content
    assert "FATAL: segfault-like crash in crash_tool" in crash.content
    assert "timed out" not in crash.content


async def test_a_call_after_the_block_closed_is_refused_in_words_at_once() -> None:
    events: list[Event] = []
    async with mcp_tools([stdio_server()]) as tools:
        pass
    script = [calls(tool_call("count", {"item": "bolts"}, "c1")), final("closed")]
    await _run(tools, script, [events.append])
    closed = _dispatch(events, "c1")
    assert closed.status == "error"
    assert closed.error_reason == "session_closed"
    assert "the session with MCP server 'inventory'" in closed.content
    assert "block that opened it has ended" in closed.content
