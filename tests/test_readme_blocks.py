"""Every Python block of the README and of ``docs/`` runs, in order, as a reader would.

The blocks of one document share a namespace, as cells of one notebook do. The names a
block leaves to the reader (``my_chat_model``, ``tools``, a paused ``dbg``…) are given here,
on the scripted models, a loopback OpenAI stub and a loopback OTLP receiver, so nothing
leaves the machine. A block that no longer runs (a renamed argument, a removed function)
fails this test with its file and line.
"""

from __future__ import annotations

import ast
import asyncio
import http.server
import inspect
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import comm
import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import MockComm
from stubs.openai_stub import OpenAIStub, OpenAIUsage

from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class Block:
    where: str
    code: str


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 2}", m.group(1))
        for m in FENCE.finditer(text)
    ]


DOCUMENTS = [ROOT / "README.md", *sorted(ROOT.glob("docs/**/*.md"))]


# -- what the README leaves to the reader ----------------------------------------------
def researcher(messages: list[Any], bound_tools: Any) -> AIMessage:
    """A scripted model that reads a file (or searches) once, then answers."""
    usage = {"input_tokens": 50 * len(messages) + 100, "output_tokens": 20}
    usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
    if isinstance(messages[-1], ToolMessage) or not bound_tools:
        return AIMessage("Rotate them in the console.", usage_metadata=usage)  # type: ignore[arg-type]
    names = {getattr(t, "name", None) or t.get("function", {}).get("name") for t in bound_tools}
    name, args = (
        ("read_file", {"path": "q2.txt"}) if "read_file" in names else ("search", {"query": "keys"})
    )
    call = {"name": name, "args": args, "id": f"call_{len(messages)}", "type": "tool_call"}
    return AIMessage("Looking.", tool_calls=[call], usage_metadata=usage)  # type: ignore[arg-type]


def scripted() -> ScriptedChatModel:
    return ScriptedChatModel([researcher] * 50, model_name=MODEL)


@tool
def read_file(path: str) -> str:
    """Read a file of the quarterly reports."""
    return f"contents of {path}"


class Workbench:
    """A file system of two folders, as ``MyBackend`` in the README."""

    def __init__(self) -> None:
        self.files = {"notes.txt": "", "archive/": ""}

    def mv(self, source: str, destination: str) -> str:
        self.files[f"{destination}/{source}"] = self.files.pop(source)
        return "moved"

    def ls(self, path: str) -> list[str]:
        return [name.split("/", 1)[1] for name in self.files if name.startswith(path + "/")]


FUNCTION_DOCS = [
    {
        "type": "function",
        "function": {
            "name": "mv",
            "description": "Move a file.",
            "parameters": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
                "required": ["source", "destination"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "ls",
            "description": "List a folder.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    },
]


class Paused:
    """A debugger whose run waits at a pause, on a loop of its own thread (as a notebook's
    kernel holds a run while the reader types in another cell)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.debuggers: list[LoopDebugger] = []

    def at(self, pause_on: str, steps: int = 0) -> LoopDebugger:
        dbg = LoopDebugger(pause_on=pause_on)  # type: ignore[arg-type]
        agent = LLMAgent(scripted(), [read_file])

        async def start() -> None:
            dbg.start(agent, "Summarise q2.txt")

        asyncio.run_coroutine_threadsafe(start(), self.loop).result(10)
        seen = None
        for n in range(steps + 1):
            wait_for(lambda seen=seen: dbg.paused_at not in (None, seen))
            seen = dbg.paused_at
            if n < steps:
                dbg.step()
        self.debuggers.append(dbg)
        return dbg

    def close(self) -> None:
        for dbg in self.debuggers:
            dbg.stop()
            dbg.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def wait_for(ready: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError("the run never paused")
        time.sleep(0.01)


class OtlpSink(http.server.ThreadingHTTPServer):
    """A loopback OTLP/HTTP receiver on the port the README's default endpoint names."""

    received: list[bytes]
    allow_reuse_address = True

    def __init__(self) -> None:
        self.received = []
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                sink.received.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 6006), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __exit__(self, *args: object) -> None:
        self.shutdown()
        super().__exit__(*args)


GIVENS: dict[str, Callable[[dict[str, Any], Paused], None]] = {
    # the first words of a block -> what the reader has at hand by then
    "point = dbg.paused_at  # the loop waits here": lambda ns, paused: ns.update(
        dbg=(dbg := paused.at("tools")),
        call_id=dbg.paused_at.calls[0].id,  # type: ignore[union-attr]
    ),
    "point = dbg.paused_at\n": lambda ns, paused: ns.update(
        dbg=(dbg := paused.at("model", steps=1)),
        call_id=next(
            m.tool_call_id
            for m in dbg.paused_at.messages
            if isinstance(m, ToolMessage)  # type: ignore[union-attr]
        ),
    ),
    "from langchain.agents import create_agent": lambda ns, _: [
        ns["_oai"].reply(text="Order A-17 ships today.", usage=OpenAIUsage(40, 8))
        for _ in range(2)  # two runs of the agent: one reply each
    ],
    "from toolloop_lab import compare": lambda ns, _: ns.update(
        before=ns["result"], after=ns["forked"].result
    ),
}


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The namespace a reader's notebook holds before the first block."""
    monkeypatch.setattr(comm, "create_comm", MockComm)
    monkeypatch.chdir(tmp_path)
    with OpenAIStub() as oai, OtlpSink() as sink:
        oai.chunk_interval = 0
        monkeypatch.setenv("OPENAI_BASE_URL", oai.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        namespace: dict[str, Any] = {
            "my_chat_model": scripted(),
            "model": scripted(),
            "tools": [read_file],
            "inputs": {"messages": [("user", "Where is order A-17?")]},
            "MyBackend": Workbench,
            "MY_FUNCTION_DOCS": FUNCTION_DOCS,
            "_sink": sink,
            "_oai": oai,
        }
        yield namespace
        oai.assert_clean()


def run_block(block: Block, namespace: dict[str, Any]) -> None:
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(block.code, block.where, "exec", flags=flags)
    outcome = eval(code, namespace)  # the README's own code, as a reader runs it
    if inspect.iscoroutine(outcome):
        asyncio.run(outcome)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_every_python_block_runs(document: Path, reader: dict[str, Any]) -> None:
    paused = Paused()
    try:
        for block in blocks(document):
            for start, given in GIVENS.items():
                if block.code.startswith(start):
                    given(reader, paused)
            try:
                run_block(block, reader)
            except Exception as exc:  # noqa: BLE001 - said with the block's place
                pytest.fail(f"{block.where}: {type(exc).__name__}: {exc}")
    finally:
        paused.close()
    if document.name == "README.md":
        assert reader["_sink"].received, "the README's OTLP export sent nothing"


def test_the_readme_has_blocks_and_each_is_found() -> None:
    found = blocks(ROOT / "README.md")
    assert len(found) >= 9
    assert all(b.code.strip() for b in found)
