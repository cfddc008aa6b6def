"""Every Python block of the README and of ``docs/`` runs, in order, as a reader would.

The rule (CONTRIBUTING.md says it to writers): every fenced ``python`` block of
``README.md`` and ``docs/**/*.md`` runs. The blocks of one page share one namespace and run
in the page's order, as the cells of one notebook do; each page starts afresh. A block may
``await`` at its top level (it runs on an event loop of its own, so a task a block starts is
awaited in the same block). Where a block shows what it prints, as ``# > `` lines (the
comment as ``ruff format`` writes it), what it prints must be exactly those lines (trailing
spaces aside). Each page starts in an empty temporary directory with a loopback OpenAI
server (``OPENAI_BASE_URL``), a loopback OTLP receiver that ``otlp_tracer_provider()`` sends
to by default, and a widget comm that needs no browser, so nothing leaves the machine and no
key is needed. A block that no longer runs (a renamed argument, a removed function) or
prints something else fails with its file and line.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import http.server
import inspect
import io
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import comm
import pytest
from loopkit import MockComm
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
SHOWN = re.compile(r"^# > ?(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Block:
    where: str
    code: str

    @property
    def shown(self) -> list[str] | None:
        """The output the block shows (its ``# >`` lines), or None when it shows none."""
        lines = [line.rstrip() for line in SHOWN.findall(self.code)]
        return lines or None


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 2}", m.group(1))
        for m in FENCE.finditer(text)
    ]


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
"""Every page whose blocks run: the README and each Markdown page of the docs."""


def served(oai: OpenAIStub, page: str) -> None:
    """What the loopback OpenAI server answers on a page whose blocks call ``ChatOpenAI``:
    the replies a real provider would send those blocks, in order."""
    if page == "docs/how-to/real-providers.md":
        # the agent's run: one round that asks for the tool, then the answer
        oai.reply(
            tool_calls=[OpenAIToolCall("read_file", {"path": "q2.txt"})],
            usage=OpenAIUsage(120, 18),
        )
        oai.reply(text="Revenue grew 12%.", usage=OpenAIUsage(180, 9))
        # the recording's session, and nothing for the replay: it answers from the file
        oai.reply(text="Revenue grew 12%.", usage=OpenAIUsage(90, 9))


class OtlpSink(http.server.ThreadingHTTPServer):
    """A loopback OTLP/HTTP receiver on a free port; the reader's ``otlp_tracer_provider()``
    sends there by default (the port its default names, a local Phoenix's, may be taken on
    a machine where other test runs go on at once)."""

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

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def __exit__(self, *args: object) -> None:
        self.shutdown()
        super().__exit__(*args)


@pytest.fixture
def reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """What a reader's machine has before a page's first block: no names defined yet."""
    monkeypatch.setattr(comm, "create_comm", MockComm)
    monkeypatch.chdir(tmp_path)
    from toolloop_lab.otel import otlp_tracer_provider  # the otel extra, which the pages use

    with OpenAIStub() as oai, OtlpSink() as sink:
        endpoint = f"http://127.0.0.1:{sink.server_address[1]}/v1/traces"
        monkeypatch.setattr(otlp_tracer_provider, "__defaults__", (endpoint,))
        oai.chunk_interval = 0
        monkeypatch.setenv("OPENAI_BASE_URL", oai.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        yield {"_oai": oai, "_sink": sink}
        oai.assert_clean()
    with contextlib.suppress(ImportError):  # a page instruments pydantic-ai for everyone
        from pydantic_ai import Agent

        Agent.instrument_all(False)


def run_block(block: Block, namespace: dict[str, Any]) -> str:
    """Run one block in ``namespace``; what it printed."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    code = compile(block.code, block.where, "exec", flags=flags)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        outcome = eval(code, namespace)  # the page's own code, as a reader runs it
        if inspect.iscoroutine(outcome):
            asyncio.run(outcome)
    return printed.getvalue()


@pytest.mark.parametrize(
    "document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)).removeprefix("docs/")
)
def test_every_python_block_runs(document: Path, reader: dict[str, Any]) -> None:
    page = str(document.relative_to(ROOT))
    served(reader["_oai"], page)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in blocks(document):
        try:
            printed = run_block(block, namespace)
        except Exception as exc:  # noqa: BLE001 - said with the block's place
            pytest.fail(f"{block.where}: {type(exc).__name__}: {exc}")
        if block.shown is not None:
            lines = [line.rstrip() for line in printed.splitlines()]
            assert lines == block.shown, f"{block.where} prints otherwise"
    if page == "docs/how-to/export-otel.md":
        assert reader["_sink"].received, "the page's OTLP export sent nothing"


def test_the_blocks_are_found_and_what_they_show_is_read() -> None:
    found = blocks(ROOT / "README.md")
    assert len(found) >= 5
    assert all(b.code.strip() for b in found)
    assert any(b.shown for b in found)
    shown = Block("here", 'print("a")\n# > a\nprint("b c")\n# >  b c\n')
    assert shown.shown == ["a", " b c"]
    assert Block("here", "x = 1  # not output\n").shown is None


def test_a_block_that_prints_otherwise_is_caught() -> None:
    block = Block("here", 'print("shown")\n# > not what it prints\n')
    assert run_block(block, {}).splitlines() != block.shown
