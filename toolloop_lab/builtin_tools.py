"""The documented path of :mod:`toolloop_lab.tools.builtin` (kept so existing imports work)."""

from __future__ import annotations

from toolloop_lab.tools.builtin import (
    DEFAULT_MAX_BYTES,
    echo_tool,
    file_read_tool,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "echo_tool",
    "file_read_tool",
]
