"""Tool dispatch: every tool call ends as exactly one ``ToolMessage``, success or error.

The names of :mod:`toolloop_lab._tools.dispatcher`, at the path
``toolloop_lab._tools`` they have always had.
"""

from __future__ import annotations

from toolloop_lab._tools.dispatcher import *  # noqa: F403  (every name of its __all__, nothing else)
from toolloop_lab._tools.dispatcher import __all__ as __all__
