"""MCP servers' tools for the loop: a server described as data (:mod:`.server`), one
server's session and what can go wrong with it (:mod:`.link`), and the block that starts
the servers and hands out their tools (:mod:`.tools`). Private: the public names
(``McpServer``, ``mcp_tools``) are :mod:`toolloop_lab.mcp`'s."""
