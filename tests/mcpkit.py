"""Real MCP servers for the tests: ``tests/mcp_tools/server_app.py`` (FastMCP) as a
subprocess, over stdio (``mcp_tools`` starts it) or over streamable HTTP on loopback (a
free port; the test starts it and waits, bounded, until it listens)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from toolloop_lab.mcp import McpServer

SERVER_APP = Path(__file__).resolve().parent / "mcp_tools" / "server_app.py"
LISTEN_TIMEOUT_S = 30.0


def stdio_server(name: str = "inventory", mode: str = "stdio") -> McpServer:
    """The test server, started over stdio by ``mcp_tools`` (``mode="broken"``: it exits
    before the handshake, with a traceback's last line on its stderr)."""
    return McpServer(name, command=sys.executable, args=[str(SERVER_APP), mode])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    server: McpServer

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(timeout=10)


@contextmanager
def http_server(name: str = "inventory") -> Iterator[HttpServer]:
    """The test server over streamable HTTP on 127.0.0.1 (a free port), stopped after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER_APP), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP MCP server exited with {process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the HTTP MCP server did not listen on {port}") from None
                time.sleep(0.1)
        yield HttpServer(process, McpServer(name, url=f"http://127.0.0.1:{port}/mcp"))
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
