"""The documented path of :mod:`toolloop_lab.engine.pruning` (kept so existing imports work): the
same names, the same objects.
"""

from __future__ import annotations

from toolloop_lab.engine.pruning import *  # noqa: F403  (every name of its __all__, nothing else)
from toolloop_lab.engine.pruning import __all__ as __all__
