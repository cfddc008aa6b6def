"""behave's hooks: the step modules build runs with the pytest suite's own kits.

``tests/loopkit.py`` (scripts, calls, usage, reference prices) and
``tests/hostile/hostilekit.py`` (the completeness checks) are what the pytest suite builds
and checks runs with; putting ``tests/`` on the path here (behave loads this file before
the steps) lets the steps use the same builders instead of copies.
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
