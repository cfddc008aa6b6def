"""A small MCP server for the tutorials: a shop's inventory, run over stdio.

Start it yourself with ``python inventory_server.py`` (it then waits for an MCP client on
its stdin), or let ``toolloop_lab.mcp.mcp_tools`` start it. It writes a line to its stderr
for every call, as real servers log; ``reserve`` fails on purpose for an item that is out
of stock, and ``reindex`` crashes the whole process, as a server with a bug does.
"""

from __future__ import annotations

import base64
import os
import sys

from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.utilities.types import Image

server = FastMCP("inventory", log_level="WARNING")

STOCK = {"bolts": 120, "nuts": 75, "widgets": 0}
# a small PNG: the shelf's four bins, in four colours
SHELF_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAALUlEQVR42mPcYqPBQAiUyPUQVMPEQCUwatBQNIjR"
    "ZpobQUWr5B6NBvaoQfgAAD9KBRdUeaDQAAAAAElFTkSuQmCC"
)


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@server.tool()
def count(item: str) -> dict[str, int | str]:
    """How many of an item are in stock."""
    log(f"inventory: looking up {item!r}")
    return {"item": item, "count": STOCK.get(item, 0)}


@server.tool()
def reserve(item: str, quantity: int) -> str:
    """Reserve some of an item for an order."""
    log(f"inventory: reserving {quantity} x {item!r}")
    if STOCK.get(item, 0) < quantity:
        log(f"inventory: refused, only {STOCK.get(item, 0)} {item} left")
        raise ValueError(f"only {STOCK.get(item, 0)} {item} in stock, {quantity} asked")
    STOCK[item] -= quantity
    return f"reserved {quantity} {item}"


@server.tool()
def shelf_photo() -> Image:
    """A photo of the shelf."""
    log("inventory: taking a photo of the shelf")
    return Image(data=SHELF_PNG, format="png")


@server.tool()
def reindex() -> str:
    """Rebuild the inventory's index."""
    log("inventory: rebuilding the index")
    log("FATAL: index file corrupted, cannot continue")
    os._exit(3)  # the process dies mid-call, as a crash does


if __name__ == "__main__":
    server.run("stdio")
