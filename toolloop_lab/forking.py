"""The documented path of :mod:`toolloop_lab.replay.fork` (kept so existing imports work): the
same names, the same objects.
"""

from __future__ import annotations

from toolloop_lab.replay.fork import *  # noqa: F403  (every name of its __all__, nothing else)
from toolloop_lab.replay.fork import __all__ as __all__
