"""The documented path of :mod:`toolloop_lab.tools.schema` (kept so existing imports work): the
same names, the same objects.
"""

from __future__ import annotations

from toolloop_lab.tools.schema import *  # noqa: F403  (every name of its __all__, nothing else)
from toolloop_lab.tools.schema import __all__ as __all__
