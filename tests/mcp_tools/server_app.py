"""A real FastMCP server for the MCP tests, run as a subprocess: ``python server_app.py
stdio`` or ``python server_app.py http PORT`` (streamable HTTP on 127.0.0.1).

Its tools do what the tests need a server to do: log to stderr while a call runs, answer
with structured content or an image, fail as a tool fails, crash the process mid-call, and
take their time (for a connection lost under a call). ``python server_app.py broken``
writes a traceback's last line to stderr and exits before the handshake."""

from __future__ import annotations

import base64
import os
import sys

import anyio
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.utilities.types import Image
from pydantic import BaseModel

# a 24x16 PNG in four colours
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAALUlEQVR42mPcYqPBQAiUyPUQVMPEQCUwatBQNIjR"
    "ZpobQUWr5B6NBvaoQfgAAD9KBRdUeaDQAAAAAElFTkSuQmCC"
)


class Stock(BaseModel):
    item: str
    count: int


def build(port: int = 8000) -> FastMCP:
    server = FastMCP("inventory", host="127.0.0.1", port=port, log_level="WARNING")

    @server.tool()
    def count(item: str) -> Stock:
        """Count an item in stock."""
        print(f"counting {item}", file=sys.stderr, flush=True)
        return Stock(item=item, count=len(item))

    @server.tool()
    def picture() -> Image:
        """A picture of the shelf."""
        print("drawing the shelf", file=sys.stderr, flush=True)
        return Image(data=PNG, format="png")

    @server.tool()
    def refuse(item: str) -> str:
        """Fails as a tool fails: the server stays up."""
        raise ValueError(f"no such item: {item}")

    @server.tool()
    def crash_tool() -> str:
        """Crashes the server's process mid-call."""
        print("FATAL: segfault-like crash in crash_tool", file=sys.stderr, flush=True)
        os._exit(3)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Takes its time (on the server's loop: a cancelled call frees the server)."""
        print(f"sleeping {seconds}", file=sys.stderr, flush=True)
        await anyio.sleep(seconds)
        return "awake"

    return server


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "broken":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("RuntimeError: the inventory database is missing", file=sys.stderr, flush=True)
        sys.exit(2)
    if mode == "http":
        build(int(sys.argv[2])).run("streamable-http")
    else:
        build().run("stdio")
