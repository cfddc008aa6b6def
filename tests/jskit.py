"""Runs for the front end's tests: the catalog's scenarios and hostile cases, as the events
Python folds with ``RunView`` and as the wire payloads the browser folds.

``tests/widget/test_widget_parity.py`` folds them on both sides;
``tests/widget/test_widget_node.py`` writes them (:func:`write_fixtures`) for the Node tests
under ``tests/js/``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import json
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.messages.content import create_image_block, create_text_block
from langchain_core.tools import BaseTool, StructuredTool
from loopkit import (
    ALL,
    MODEL,
    PAYLOADS,
    calls,
    catalog_run,
    final,
    invalid_call,
    reference_cost,
    server_tool,
    tool_call,
)

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, compare, usd_budget
from toolloop_lab._support.escape import BIDI_CONTROLS
from toolloop_lab._widget.comparison import comparison_payload
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.events import Event, ToolDispatched
from toolloop_lab.lab import catalog

__all__ = [
    "HOSTILE",
    "MAX_CHARS",
    "ROOT",
    "all_cases",
    "catalog_cases",
    "comparison_cases",
    "hostile_cases",
    "need_node",
    "payloads",
    "usd_stop_mid_run",
    "write_fixtures",
]

ROOT = Path(__file__).resolve().parent.parent
"""The repository: package.json, node_modules and tests/js/ are here."""

MAX_CHARS = 20_000
"""The widget's default clip of a content string (``LoopDebugger(max_text_chars=)``)."""

HOSTILE = PAYLOADS[0]
"""A tool result that would be an element, were it ever parsed as HTML."""


def need_node(*installed: str) -> str:
    """The path of ``node``, when it and ``installed`` (paths under node_modules) are there.

    Without them the test skips, except under CI (``CI`` set, as CI services set it and
    ``.ci/run`` runs after ``npm ci``): there a missing install is a failure, so the Node
    tests can never be skipped unnoticed.
    """
    node = shutil.which("node")
    missing = [p for p in installed if not (ROOT / "node_modules" / p).exists()]
    if node is not None and shutil.which("npm") is not None and not missing:
        return node
    why = "node and npm are not installed" if node is None else f"node_modules lacks {missing}"
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{why}: CI must run `npm ci` before the tests")
    pytest.skip(f"{why}: run `npm ci` to run the front end's tests")


def _tool(name: str, fn: Callable[..., Any]) -> BaseTool:
    if asyncio.iscoroutinefunction(fn):
        return StructuredTool.from_function(coroutine=fn, name=name, description=f"{name}.")
    return StructuredTool.from_function(func=fn, name=name, description=f"{name}.")


def _hostile_text(text: str) -> str:
    """Returns hostile markup, unicode and a long line."""
    return f"{ALL} · 日本語 · 🙂 · \u202e{text}\u202c · " + "x" * 50_000


IMAGE_B64 = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(12_000)).decode("ascii")
"""A 12 KB image a tool returns (an MCP screenshot, say)."""


def _shot(page: str) -> tuple[list[Any], None]:
    """Answers as an MCP tool does: content blocks, each with an id langchain-core made up."""
    text = create_text_block(text=f"screenshot of {page} {HOSTILE}")
    return [text, create_image_block(base64=IMAGE_B64, mime_type="image/png")], None


def _blocks_tool() -> BaseTool:
    return StructuredTool.from_function(
        func=_shot, name="shot", description="shot.", response_format="content_and_artifact"
    )


def _count(n: int) -> str:
    """Says the number."""
    return f"{n}"


def _boom(text: str) -> str:
    """Raises."""
    raise ValueError(f"boom: {text} {PAYLOADS[1]}")


def _run(
    script: list[Any], tools: list[BaseTool], config: AgentConfig | None = None
) -> list[Event]:
    events: list[Event] = []
    agent = LLMAgent(
        ScriptedChatModel(script, model_name=MODEL), tools, config, observers=[events.append]
    )
    # in a thread of its own (with this context: a USD budget set around the call holds): a
    # sync browser test may hold a running event loop here, where agent.run() warns (rightly)
    # that it would block that loop
    run = contextvars.copy_context().run
    with ThreadPoolExecutor(1) as pool, contextlib.suppress(Exception):
        pool.submit(run, agent.run, "go " + PAYLOADS[2]).result()  # a failed run counts
    return events


def _cancelled_tool() -> list[Event]:
    """A run stopped while a tool runs (the tool is cut short)."""
    events: list[Event] = []
    started = asyncio.Event()

    async def hang(text: str) -> str:
        """Waits until cancelled."""
        started.set()
        await asyncio.Event().wait()
        return text

    script = [
        calls(tool_call("hang", {"text": "a"}, "h1"), tool_call("hostile", {"text": "b"}, "h2"))
    ]
    tools = [_tool("hang", hang), _tool("hostile", _hostile_text)]
    agent = LLMAgent(ScriptedChatModel(script, model_name=MODEL), tools, observers=[events.append])

    async def go() -> None:
        task = asyncio.create_task(agent.arun("go"))
        await asyncio.wait_for(started.wait(), 10)
        await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(go())
    return events


def _interrupted() -> list[Event]:
    """A LangGraph run, seen through the bridge, whose tool paused it with ``interrupt()``
    (outcome ``interrupted``: the tool waits for input)."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.types import interrupt

    from toolloop_lab import watch

    def confirm(question: str) -> str:
        """Ask a person."""
        return str(interrupt(question))

    model = ScriptedChatModel(
        [calls(tool_call("confirm", {"question": HOSTILE}, "q1")), final("ok")], model_name=MODEL
    )
    graph = create_agent(model, [_tool("confirm", confirm)], checkpointer=InMemorySaver())
    events: list[Event] = []
    with watch(events.append):
        graph.invoke({"messages": [("user", "go")]}, {"configurable": {"thread_id": "t"}})
    return events


def usd_stop_mid_run() -> list[Event]:
    """Four paid calls under a USD limit that the fourth passes: round 4 asked for two
    tool calls, which never run (the gate is checked after each call)."""
    spend = (400, 50)
    script = [
        calls(
            tool_call("hostile", {"text": f"{i}"}, f"u{i}a"),
            tool_call("hostile", {"text": f"{i}b"}, f"u{i}b"),
            tokens=spend,
        )
        for i in range(1, 7)
    ]
    limit = reference_cost([spend] * 3) + reference_cost([spend]) / 4
    with usd_budget(limit):
        return _run(script, [_tool("hostile", _hostile_text)], AgentConfig(tool_max_rounds=8))


def _spans_past_the_schema() -> list[Event]:
    """A run read from spans whose counts no event can hold (``2**62`` input tokens, a
    cache read past it, ``2**60`` rounds): they are unknown, estimated and flagged so."""
    from opentelemetry.sdk.trace import TracerProvider

    from toolloop_lab.otel import SpanSource

    events: list[Event] = []
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(events.append))
    tracer = provider.get_tracer("jskit")
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": MODEL,
        "gen_ai.usage.input_tokens": 2**62,
        "gen_ai.usage.output_tokens": 4,
        "gen_ai.usage.cache_read.input_tokens": 2**60,
    }
    agent = {"gen_ai.operation.name": "invoke_agent", "toolloop.rounds": 2**60}
    with tracer.start_as_current_span("invoke_agent", attributes=agent):
        with tracer.start_as_current_span("chat", attributes=chat):
            pass
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "hostile"}
        with tracer.start_as_current_span("execute_tool hostile", attributes=tool):
            pass
        with tracer.start_as_current_span("chat", attributes=chat):
            pass
    provider.shutdown()
    return events


SPOOF = "invoice_\u202efdp.exe"
"""A tool name that reads ``invoice_exe.pdf`` wherever its override is obeyed."""


def _bidi_text() -> list[Event]:
    """Every bidirectional control (``escape.BIDI_CONTROLS``) in a model's name, its text,
    a tool's name (an unknown tool), arguments and output, and the final answer."""
    every = f"all {BIDI_CONTROLS} end"
    script = [
        calls(
            tool_call(SPOOF, {"text": every}, "b1"),
            tool_call("hostile", {"text": every}, "b2"),
            text=f"text {SPOOF} {every}",
        ),
        final(f"final {SPOOF} {every}"),
    ]
    events: list[Event] = []
    model = ScriptedChatModel(script, model_name=f"model {SPOOF}")
    agent = LLMAgent(model, [_tool("hostile", _hostile_text)], observers=[events.append])
    with ThreadPoolExecutor(1) as pool:  # as _run does: never inside a running event loop
        pool.submit(agent.run, f"go {SPOOF}", name=f"run {SPOOF}", tags=(f"tag {SPOOF}",)).result()
    return events


def _estimated() -> list[Event]:
    """A run whose model reports no usage: its counts are estimated (``Usage.estimated``)."""
    return _run([AIMessage("no usage reported")], [])


def _mcp_server() -> list[Event]:
    """A run whose tools came from an MCP server (loopkit's ``server_tool``, no process):
    two calls at once whose server logs hostile lines while they run, a result holding an
    image and structured content, a call the server's exit cut short, lines between calls
    (at start and after the failure), and a log longer than a batch."""
    from toolloop_lab._tools.servers import METADATA_KEY
    from toolloop_lab.errors import McpServerError

    said = (f"{{item}}: {HOSTILE}", f"\u202e{SPOOF} " + "y" * 3_000)
    counter, site = server_tool("count", said=said)
    site.log.note("\n".join(f"starting line {i}" for i in range(250)))
    metadata = {METADATA_KEY: site.metadata()}

    def shot(page: str) -> tuple[list[Any], Any]:
        site.log.note(f"shooting {page}")
        blocks, _ = _shot(page)
        return blocks, {"structured_content": {"page": page, "bytes": 12_000}}

    def crash(item: str) -> str:
        site.log.note(f"FATAL: crash in crash_tool {HOSTILE}")
        raise McpServerError(
            f"MCP server 'inventory' exited while this call ran {HOSTILE}",
            reason="server_exited",
            server="inventory",
            transport="stdio",
        )

    tools = [
        counter,
        StructuredTool.from_function(
            func=shot,
            name="shot",
            description="shot.",
            response_format="content_and_artifact",
            metadata=metadata,
        ),
        StructuredTool.from_function(func=crash, name="crash", description="c.", metadata=metadata),
        _tool("hostile", _hostile_text),
    ]
    script = [
        calls(
            tool_call("count", {"item": "bolts"}, "m1"),
            tool_call("shot", {"page": "home"}, "m2"),
            tool_call("hostile", {"text": "x"}, "m3"),
        ),
        calls(tool_call("crash", {"item": "x"}, "m4")),
        final("done"),
    ]
    events = _run(script, tools)
    site.log.note("after the run")
    return events


LONG_ROUNDS = 200
"""Rounds of the long run: enough that what the page keeps a round shows."""


def hostile_cases() -> dict[str, list[Event]]:
    """Runs the catalog has not: hostile, huge and unicode strings from a tool and the
    model, a tool that raises, an unknown and an invalid call, a run stopped mid-tool, a
    model that runs out of replies (the run fails), a token budget tripped mid-run, a USD
    limit that stops a run mid-round, a run read from spans whose counts no event can hold,
    every bidirectional control in every field, a model that reports no usage (estimated
    counts), a tool that answers with content blocks (a text and an image, as an MCP tool
    does); and a long run (``LONG_ROUNDS`` rounds of one call)."""
    stopped = _cancelled_tool()
    hostile = _tool("hostile", _hostile_text)
    boom = _tool("boom", _boom)
    mixed = [
        calls(
            tool_call("hostile", {"text": PAYLOADS[0]}, "c1"),
            tool_call("boom", {"text": PAYLOADS[3]}, "c2"),
            tool_call("constructor", {"text": "x"}, "c3"),
            text=ALL,
            invalid=[invalid_call("hostile", "{not json", "c4", PAYLOADS[4])],
        ),
        final(f"Done {PAYLOADS[0]} 日本語"),
    ]
    return {
        "hostile_tools": _run(mixed, [hostile, boom]),
        "hostile_tools_streamed": _run(list(mixed), [hostile, boom], AgentConfig(streaming=True)),
        "model_runs_out": _run([calls(tool_call("hostile", {"text": "a"}, "c1"))], [hostile]),
        "token_budget_mid_run": _run(
            [
                calls(tool_call("hostile", {"text": f"{i}"}, f"t{i}"), tokens=(400, 50))
                for i in range(5)
            ],
            [hostile],
            AgentConfig(token_budget_percent=1.0, context_window=100_000),
        ),
        "usd_stop_mid_run": usd_stop_mid_run(),
        "long_run": _run(
            [calls(tool_call("count", {"n": i}, f"c{i}")) for i in range(LONG_ROUNDS)]
            + [final("done")],
            [_tool("count", _count)],
            AgentConfig(tool_max_rounds=LONG_ROUNDS + 1),
        ),
        "cancelled_tool": stopped,
        "bidi_text": _bidi_text(),
        "estimated_counts": _estimated(),
        "mcp_server": _mcp_server(),
        "tool_blocks": _run(
            [calls(tool_call("shot", {"page": "home"}, "s1")), final("A blank page.")],
            [_blocks_tool()],
        ),
        "langgraph_interrupted": _interrupted(),
        "spans_past_the_schema": _spans_past_the_schema(),
        "tool_result_missing": [
            e for e in stopped if not (isinstance(e, ToolDispatched) and e.tool_call_id == "h1")
        ],
    }


def catalog_cases() -> dict[str, list[Event]]:
    """Every scenario of the lab's built-in catalog, run to its end."""
    return {s.name: list(catalog_run(s.name).events) for s in catalog()}


def all_cases() -> dict[str, list[Event]]:
    """The catalog's runs and the hostile cases, by name."""
    return {**catalog_cases(), **hostile_cases()}


def _compared(scripts: list[list[Any]], rounds: int = 6) -> list[list[Event]]:
    """One run of each script, with tools read_log, open_ticket and hostile."""
    tools = [
        _tool("read_log", lambda path: f"contents of {path}"),
        _tool("open_ticket", lambda title: f"ticket opened: {title}"),
        _tool("hostile", _hostile_text),
    ]
    return [_run(script, tools, AgentConfig(tool_max_rounds=rounds)) for script in scripts]


def comparison_cases() -> dict[str, dict[str, Any]]:
    """Comparisons as the page gets them (``comparison_payload``): a call that became
    another tool's, with a reply reworded; hostile text in every field; many rounds that
    differ (drawn a few at a time)."""
    look = calls(tool_call("read_log", {"path": "disk.log"}, "c1"), text="I will look.")
    read = calls(tool_call("read_log", {"path": "app.log"}, "c2"), text="I will read the log.")
    ticket = calls(
        tool_call("open_ticket", {"title": "disk full"}, "c2"), text="I will open a ticket."
    )
    bad = calls(tool_call("hostile", {"text": PAYLOADS[0]}, "c2"), text=ALL)
    changed = _compared([[look, read, final("done")], [look, ticket, final("done")]])
    hostile = _compared([[look, read, final("done")], [look, bad, final(PAYLOADS[1])]])
    many = _compared(
        [
            [calls(tool_call("read_log", {"path": f"{side}{i}"}, f"c{i}")) for i in range(25)]
            + [final("done")]
            for side in ("a", "b")
        ],
        rounds=26,
    )
    spent = _compared(
        [
            [
                calls(tool_call("read_log", {"path": f"x{i}"}, f"c{i}"), tokens=(n, 5))
                for i in range(3)
            ]
            + [final("done", (n, 5))]
            for n in (10, 70)  # the same rounds; b's prompt was longer
        ],
        rounds=4,
    )
    return {
        name: comparison_payload(
            compare(a, b), max_chars=MAX_CHARS, budget_bytes=256_000, runs_held=True
        )
        for name, (a, b) in (
            ("compare_changed_call", changed),
            ("compare_hostile", hostile),
            ("compare_many", many),
            ("compare_same_spent_differently", spent),
        )
    }


def payloads(events: list[Event]) -> list[dict[str, Any]]:
    """The events as the browser gets them."""
    return [event_payload(e, MAX_CHARS) for e in events]


def write_fixtures(folder: Path) -> list[str]:
    """One ``<case>.json`` of wire payloads per case in ``folder``; returns the names."""
    folder.mkdir(parents=True, exist_ok=True)
    cases = all_cases()
    for name, events in cases.items():
        text = json.dumps(payloads(events), ensure_ascii=False)
        (folder / f"{name}.json").write_text(text, encoding="utf-8")
    comparisons = comparison_cases()
    for name, data in comparisons.items():
        text = json.dumps(data, ensure_ascii=False)
        (folder / f"{name}.json").write_text(text, encoding="utf-8")
    return sorted([*cases, *comparisons])
