"""Tool results made of LangChain content blocks (every MCP tool's, through
``langchain-mcp-adapters``; any ``content_and_artifact`` tool that returns blocks).

They reach the model as content blocks, text as text and an image as an image, without
the ``lc_<uuid>`` id langchain-core's ``create_*_block`` gives each block (a new one per
call): so two identical runs are the same run, a recording replays, and an image is never
sent (or counted) as base64 text. Every reader treats them alike: the event says the
blocks in words (``[image: image/png, 12 KB]``) and keeps the blocks, the trace reads
them back exactly, ``compare``, ``what_if`` and ``fork`` see them as the model did, and
the page shows the words, never the bytes.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.messages.content import create_image_block, create_text_block
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from loopkit import MODEL, calls, final, tool_call
from stubs.anthropic_stub import AnthropicStub, AnthropicToolUse, AnthropicUsage
from stubs.clients import chat_anthropic

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    RecordingChatModel,
    ReplayChatModel,
    ScriptedChatModel,
    ToolLoopResult,
    TraceWriter,
    compare,
    fork,
    read_trace,
    what_if,
)
from toolloop_lab._widget.wire import event_payload, page_blocks
from toolloop_lab.events import (
    Event,
    ModelCalled,
    ModelCallStarted,
    Pruned,
    ToolDispatched,
    transcript,
)

PNG = b"\x89PNG\r\n\x1a\n" + bytes(12_000)
PNG_B64 = base64.b64encode(PNG).decode("ascii")
OTHER_PNG_B64 = base64.b64encode(PNG[:-1] + b"\x01").decode("ascii")

SAFETY_S = 60.0
"""Only a guard against a server that never answers: a hang becomes a failure."""

SENT = [
    {"type": "text", "text": "screenshot of home"},
    {"type": "image", "base64": PNG_B64, "mime_type": "image/png"},
]
"""The blocks as the model gets them: the tool's own, without the ids made for them."""
SAID = "screenshot of home\n[image: image/png, 12 KB]"
"""The same result in words, as every text view and the event's ``content`` say it."""


def _screenshot(image: str = PNG_B64) -> BaseTool:
    @tool(response_format="content_and_artifact")
    def screenshot(page: str) -> tuple[list[Any], dict[str, str]]:
        """Take a screenshot of a page."""
        # as langchain-mcp-adapters builds them: a new ``lc_<uuid>`` id on every block
        blocks = [
            create_text_block(text=f"screenshot of {page}"),
            create_image_block(base64=image, mime_type="image/png"),
        ]
        return blocks, {"page": page}

    return screenshot


def _script() -> list[Any]:
    # the answer carries no usage: the scripted model estimates its input, as the loop does
    return [calls(tool_call("screenshot", {"page": "home"}, "s1")), AIMessage("done")]


async def _run(
    tool_: BaseTool | None = None, model: Any = None
) -> tuple[ToolLoopResult, list[Event], Any]:
    events: list[Event] = []
    model = model or ScriptedChatModel(_script(), model_name=MODEL)
    agent = LLMAgent(model, [tool_ or _screenshot()], AgentConfig(), observers=[events.append])
    return await agent.arun("Look at the home page."), events, model


def _tool_message(messages: Any) -> ToolMessage:
    (message,) = [m for m in messages if isinstance(m, ToolMessage)]
    return message


async def test_content_blocks_reach_the_model_as_blocks_without_made_up_ids() -> None:
    result, _, model = await _run()
    sent = _tool_message(model.calls[1].messages)
    assert sent.content == SENT
    assert (sent.status, sent.artifact) == ("success", {"page": "home"})
    assert _tool_message(result.messages) == sent


async def test_an_image_is_counted_as_an_image_not_as_its_base64_text() -> None:
    _, events, _ = await _run()
    answer = [e for e in events if isinstance(e, ModelCalled)][-1]
    assert answer.usage.estimated  # the scripted model counted it, as the loop would
    as_text = len(PNG_B64) // 4  # what the base64 would cost read as text, 4 chars a token
    assert 0 < answer.usage.input_tokens < as_text // 10


async def test_the_event_says_the_blocks_in_words_and_keeps_them() -> None:
    _, events, _ = await _run()
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.status, event.content, event.output_chars) == ("success", SAID, len(SAID))
    assert event.blocks == tuple(SENT)
    assert "lc_" not in str(event.to_dict())


async def test_two_identical_runs_are_the_same_run() -> None:
    first, _, _ = await _run()
    second, _, _ = await _run()
    assert compare(first, second).same
    assert _tool_message(first.messages) == _tool_message(second.messages)


async def test_a_changed_image_is_a_changed_result_though_its_words_are_the_same() -> None:
    first, _, _ = await _run()
    second, _, _ = await _run(_screenshot(OTHER_PNG_B64))
    diff = compare(first, second)
    assert not diff.same
    (pair,) = diff.differing
    assert pair.round == 1
    assert diff.frame()["a_results"][0].endswith(SAID)
    assert PNG_B64[:40] not in diff.summary
    assert "(the same words; the data of an image or file differs)" in diff.summary


async def test_a_trace_of_block_results_reads_back_exactly(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    result, _, _ = await _traced(path)
    read = read_trace(path)
    assert read.skipped == ()
    assert read.events == result.events
    assert transcript(read.events) == list(result.messages)


async def _traced(path: Path) -> tuple[ToolLoopResult, list[Event], Any]:
    writer = TraceWriter(path)
    events: list[Event] = []
    model = ScriptedChatModel(_script(), model_name=MODEL)
    agent = LLMAgent(model, [_screenshot()], observers=[events.append, writer])
    try:
        return await agent.arun("Look at the home page."), events, model
    finally:
        writer.close()


async def test_a_recording_of_block_results_replays(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    recorded, _, _ = await _run(model=RecordingChatModel(ScriptedChatModel(_script()), path))
    # replayed strictly: each request must be the recorded one, and the tool makes its
    # blocks (and langchain-core new ids for them) again
    replayed, _, _ = await _run(model=ReplayChatModel.from_file(path))
    assert replayed.final_response.text == recorded.final_response.text
    assert replayed.usage == recorded.usage
    assert replayed.messages == recorded.messages


async def test_what_if_under_the_same_config_serves_every_reply_as_recorded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    await _run(model=RecordingChatModel(ScriptedChatModel(_script()), path))
    again = what_if(path, AgentConfig(), tools=[_screenshot()])
    assert again.adjusted == 0  # no request differed from the recorded one
    assert again.replayed.outcome == "final_answer"
    figures = ("input_tokens", "output_tokens", "cost_usd", "estimated")
    assert [getattr(again.replayed, f) for f in figures] == [
        getattr(again.recorded, f) for f in figures
    ]


async def test_a_fork_after_a_block_result_sends_the_blocks(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    await _traced(path)
    model = ScriptedChatModel([AIMessage("done again")], model_name=MODEL)
    forked = fork(path, 2, model=model, tools=[_screenshot()])
    assert forked.forked.outcome == "final_answer"
    assert _tool_message(model.calls[0].messages).content == SENT


def _mcp_error(blocks: list[Any]) -> ToolException:
    error = ToolException("\n".join(b["text"] for b in blocks if b["type"] == "text"))
    error.tool_content = blocks  # type: ignore[attr-defined]
    return error


async def test_a_result_holding_an_image_is_never_pruned() -> None:
    # pruning makes text of a result: an image's words are not the image
    pruner = ScriptedChatModel([], model_name=MODEL)
    events: list[Event] = []
    config = AgentConfig(prune_tools=("screenshot",), prune_min_chars=1)
    model = ScriptedChatModel(_script(), model_name=MODEL)
    agent = LLMAgent(
        model, [_screenshot()], config, pruning_model=pruner, observers=[events.append]
    )
    await agent.arun("Look at the home page.")
    assert pruner.calls == ()
    assert not [e for e in events if isinstance(e, Pruned)]
    assert _tool_message(model.calls[1].messages).content == SENT


async def test_a_result_of_text_blocks_is_pruned_as_its_text() -> None:
    @tool(response_format="content_and_artifact")
    def log(name: str) -> tuple[list[Any], None]:
        """Read a log."""
        return [create_text_block(text=f"{name}: ok"), create_text_block(text="x" * 300)], None

    pruner = ScriptedChatModel([final("the log is fine")], model_name=MODEL)
    events: list[Event] = []
    config = AgentConfig(prune_tools=("log",), prune_min_chars=100)
    model = ScriptedChatModel(
        [calls(tool_call("log", {"name": "app"}, "l1")), final("done")], model_name=MODEL
    )
    agent = LLMAgent(model, [log], config, pruning_model=pruner, observers=[events.append])
    await agent.arun("Is the log fine?")
    (pruned,) = [e for e in events if isinstance(e, Pruned)]
    assert pruned.original == "app: ok\n" + "x" * 300
    assert pruned.pruned == "the log is fine"
    assert _tool_message(model.calls[1].messages).content == "the log is fine"


async def test_an_error_answered_with_blocks_reads_as_their_words() -> None:
    # langchain-mcp-adapters answers an MCP error (isError=True) through the tool's
    # handle_tool_error, which returns the error's content blocks
    async def page(name: str) -> tuple[list[Any], None]:
        raise _mcp_error([create_text_block(text=f"Error executing tool page: no page {name}")])

    failing = StructuredTool.from_function(
        coroutine=page,
        name="page",
        description="Opens a page.",
        response_format="content_and_artifact",
        handle_tool_error=lambda exc: exc.tool_content,
    )
    model = ScriptedChatModel([calls(tool_call("page", {"name": "x"}, "p1")), final("ok")])
    result, events, _ = await _run(failing, model)
    message = _tool_message(result.messages)
    assert (message.status, message.content) == (
        "error",
        "Error executing tool page: no page x",
    )
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.error_reason, event.content) == ("tool_error", message.content)


async def test_a_tool_message_of_blocks_keeps_its_blocks() -> None:
    @tool
    def screenshot(page: str) -> ToolMessage:
        """Take a screenshot of a page."""
        blocks = [
            create_text_block(text=f"screenshot of {page}"),
            create_image_block(base64=PNG_B64, mime_type="image/png"),
        ]
        return ToolMessage(blocks, tool_call_id="ignored", artifact={"page": page})

    result, events, _ = await _run(screenshot)
    assert _tool_message(result.messages).content == SENT
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert event.content == SAID


@pytest.mark.parametrize(
    "value",
    [["a", "b"], [{"type": "row", "id": 1}], [{"text": "no type"}], []],
    ids=["strings", "typed-data", "untyped", "empty"],
)
async def test_a_list_that_is_not_content_blocks_stays_json(value: list[Any]) -> None:
    @tool
    def rows() -> list[Any]:
        """Rows of data."""
        return value

    model = ScriptedChatModel([calls(tool_call("rows", {}, "r1")), final("ok")])
    result, events, _ = await _run(rows, model)
    content = _tool_message(result.messages).content
    assert isinstance(content, str)
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.content, event.blocks) == (content, None)


async def test_the_page_gets_an_images_bytes_only_to_draw_it_never_svg() -> None:
    _, events, _ = await _run()
    sent = next(e for e in events if isinstance(e, ModelCallStarted) and e.call == 2)
    (tool_message,) = [m for m in event_payload(sent, 20_000)["messages"] if m["type"] == "tool"]
    text, image = tool_message["data"]["content"]
    assert text == SENT[0]
    assert image == {"type": "image", "mime_type": "image/png", "text": "[image: image/png, 12 KB]"}
    (dispatched,) = [e for e in events if isinstance(e, ToolDispatched)]
    payload = event_payload(dispatched, 20_000)
    assert payload["content"] == SAID
    # the bytes go once, in the result's blocks, for the page to draw (a raster type it
    # allows); everywhere else the image is its words
    (drawn,) = [b for b in payload["blocks"] if b["type"] == "image"]
    assert (drawn["mime_type"], drawn["base64"]) == ("image/png", "".join(PNG_B64.split()))
    assert PNG_B64[:40] not in str({k: v for k, v in payload.items() if k != "blocks"})
    svg = {"type": "image", "mime_type": "image/svg+xml", "base64": "PHN2Zz48L3N2Zz4="}
    (said,) = page_blocks([svg], 20_000)
    assert "base64" not in said
    assert said["text"].startswith("[image: image/svg+xml")


def test_a_real_client_sends_the_image_as_an_image(ant: AnthropicStub) -> None:
    ant.reply(
        tool_uses=[AnthropicToolUse("screenshot", {"page": "home"})], usage=AnthropicUsage(50, 9)
    )
    ant.reply(text="A blank page.", usage=AnthropicUsage(900, 5))
    LLMAgent(chat_anthropic(ant), [_screenshot()]).run("Look at the home page.")
    *_, answer = ant.bodies
    result = answer["messages"][-1]["content"][0]
    assert result["type"] == "tool_result"
    assert result["content"] == [
        {"type": "text", "text": "screenshot of home"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
    ]


async def test_a_langgraph_tool_node_result_is_said_in_words_through_the_bridge() -> None:
    from bridgekit import state_graph

    from toolloop_lab import watch

    events: list[Event] = []
    model = ScriptedChatModel(_script(), model_name=MODEL)
    with watch(events.append):
        await state_graph(model, [_screenshot()]).ainvoke(
            {"messages": [HumanMessage("Look at the home page.")]}
        )
    (event,) = [e for e in events if isinstance(e, ToolDispatched)]
    assert (event.status, event.content) == ("success", SAID)
    assert event.blocks == tuple(SENT)  # the ids ToolNode's blocks carry are no content


async def test_a_recorded_langgraph_run_of_block_results_replays(tmp_path: Path) -> None:
    # LangGraph's ToolNode keeps the made-up ids on the blocks it sends: a new one each run
    from bridgekit import state_graph

    path = tmp_path / "graph.jsonl"
    prompt = {"messages": [HumanMessage("Look at the home page.")]}
    recording = RecordingChatModel(ScriptedChatModel(_script(), model_name=MODEL), path)
    recorded = await state_graph(recording, [_screenshot()]).ainvoke(prompt)
    replayed = await state_graph(ReplayChatModel.from_file(path), [_screenshot()]).ainvoke(prompt)
    assert replayed["messages"][-1].text == recorded["messages"][-1].text == "done"


SERVER = '''
from mcp.server.fastmcp import FastMCP, Image

server = FastMCP("pages")
PNG = bytes.fromhex({png!r})


@server.tool()
def screenshot(page: str) -> list:
    """Take a screenshot of a page."""
    return [f"screenshot of {{page}}", Image(data=PNG, format="png")]


@server.tool()
def broken(page: str) -> str:
    """Always fails."""
    raise ValueError(f"no page {{page}}")


server.run()
'''


async def test_a_real_mcp_server_over_stdio(tmp_path: Path) -> None:
    """A FastMCP server in its own process, its tools through langchain-mcp-adapters:
    the blocks it answers with reach the model as blocks, its error as its words."""
    pytest.importorskip("mcp.server.fastmcp")
    client = pytest.importorskip("langchain_mcp_adapters.client")
    tools_of = pytest.importorskip("langchain_mcp_adapters.tools").load_mcp_tools
    script = tmp_path / "server.py"
    script.write_text(SERVER.format(png=PNG.hex()), encoding="utf-8")
    env = {"PYTHONPATH": os.pathsep.join(sys.path), "PATH": os.environ.get("PATH", "")}
    server = {"command": sys.executable, "args": [str(script)], "transport": "stdio", "env": env}
    script_ = [
        calls(
            tool_call("screenshot", {"page": "home"}, "s1"),
            tool_call("broken", {"page": "x"}, "b1"),
        ),
        final("done"),
    ]
    model = ScriptedChatModel(script_, model_name=MODEL)
    events: list[Event] = []

    async def run() -> ToolLoopResult:
        async with client.MultiServerMCPClient({"pages": server}).session("pages") as session:
            tools = await tools_of(session)  # one server process for the whole run
            return await LLMAgent(model, tools, observers=[events.append]).arun("Look.")

    result = await asyncio.wait_for(run(), SAFETY_S)  # a server that never answers fails
    answers = {m.tool_call_id: m for m in result.messages if isinstance(m, ToolMessage)}
    shot, broke = answers["s1"], answers["b1"]
    assert (shot.status, shot.content) == ("success", SENT)
    assert broke.status == "error"
    assert broke.content == "Error executing tool broken: no page x"
    by_id = {e.tool_call_id: e for e in events if isinstance(e, ToolDispatched)}
    assert (by_id["s1"].content, by_id["s1"].blocks) == (SAID, tuple(SENT))
    assert (by_id["b1"].error_reason, by_id["b1"].content) == ("tool_error", broke.content)
