"""An mkdocs hook: the notebooks under ``notebooks/`` are the site's tutorials.

The notebooks stay where they are (nbval, Binder and the tutorials' tests read them there);
this hook adds each ``notebooks/NN_*.ipynb`` to the site as ``tutorials/NN_*.ipynb`` before
mkdocs-jupyter turns notebooks into pages, so they render with their stored outputs and are
never executed at build time. Links between notebooks (``02_budgets_and_synthesis.ipynb``)
resolve, since the pages sit side by side as the files do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@event_priority(100)  # before mkdocs-jupyter's on_files, which makes the notebooks pages
def on_files(files: Files, config: Any) -> Files:
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        files.append(
            File.generated(config, f"tutorials/{path.name}", abs_src_path=str(path))
        )
    return files
