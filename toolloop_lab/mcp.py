"""MCP servers' tools, each keeping its server: which server a call went to, what the
server said while it ran, and why a call failed when the server did.

::

    import sys
    from toolloop_lab import LLMAgent, LoopDebugger
    from toolloop_lab.mcp import McpServer, mcp_tools

    inventory = McpServer("inventory", command=sys.executable, args=["inventory_server.py"])
    with mcp_tools([inventory]) as tools:       # or: async with
        agent = LLMAgent(model, tools, observers=[dbg])
        agent.run("How many widgets are left?")

:class:`McpServer` describes a server as plain data (a command to start over stdio, or a
streamable HTTP URL): a ``Scenario`` carries it (``Scenario(mcp_servers=[...])``) to any
worker. :func:`mcp_tools` starts the servers, loads their tools through
``langchain-mcp-adapters`` and the ``mcp`` SDK, and stops the servers after. Needs the
``mcp`` extra (``pip install 'toolloop-lab[mcp]'``).
"""

from __future__ import annotations

from toolloop_lab._mcp.server import McpServer
from toolloop_lab._mcp.tools import mcp_tools

__all__ = ["McpServer", "mcp_tools"]
