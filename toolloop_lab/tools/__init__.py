"""Tool dispatch: every tool call ends as exactly one ``ToolMessage``, success or error.

The names of :mod:`toolloop_lab.tools.dispatch`, at the path
``toolloop_lab.tools`` they have always had.
"""

from __future__ import annotations

from toolloop_lab.tools.dispatch import (
    STOPPED_TEXT,
    DispatchHooks,
    DispatchOutcome,
    ToolBox,
    ToolCaller,
    block_calls,
    dispatch,
    invalid_outcomes,
    normalize_tool_call_ids,
    not_available_error,
    serialize_output,
    skipped_outcomes,
    tool_caller,
    written_outcome,
)

__all__ = [
    "STOPPED_TEXT",
    "DispatchHooks",
    "DispatchOutcome",
    "ToolBox",
    "ToolCaller",
    "block_calls",
    "dispatch",
    "invalid_outcomes",
    "normalize_tool_call_ids",
    "not_available_error",
    "serialize_output",
    "skipped_outcomes",
    "tool_caller",
    "written_outcome",
]
