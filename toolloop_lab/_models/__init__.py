"""``ScriptedChatModel``: a real langchain-core chat model that plays back a script of replies.

The names of :mod:`toolloop_lab._models.scripted`, at the path
``toolloop_lab._models`` they have always had.
"""

from __future__ import annotations

from toolloop_lab._models.scripted import *  # noqa: F403  (every name of its __all__, nothing else)
from toolloop_lab._models.scripted import __all__ as __all__
