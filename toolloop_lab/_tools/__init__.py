"""Tools: dispatch (every call ends as exactly one ``ToolMessage``), content blocks, the
built-in tools and tools made from JSON-schema function docs. Private: the public names
(``echo_tool``, ``file_read_tool``, ``tools_from_schema``) are the package root's."""
