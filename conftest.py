"""The repository's pytest plugins: loaded for ``tests/`` and for ``notebooks/`` alike.

``tests/notebookkit.py`` runs the tutorial notebooks once per run for nbval and for the
checks that read their outputs (the Binder environment, tool calls finishing the other
way round); see its docstring.
"""

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent / "tests")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)  # where pytest puts it for tests/ too: one module, one name

pytest_plugins = ("notebookkit",)
