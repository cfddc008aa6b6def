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

from mkdocs.plugins import CombinedEvent, event_priority
from mkdocs.structure.files import File, Files

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@event_priority(100)  # before mkdocs-jupyter's on_files, which makes the notebooks pages
def _add_notebooks(files: Files, config: Any) -> Files:
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        files.append(File.generated(config, f"tutorials/{path.name}", abs_src_path=str(path)))
    return files


@event_priority(-100)  # after mkdocs-jupyter wrapped each notebook in its NotebookFile
def _paths_of_wrapped(files: Files, config: Any) -> Files:
    """mkdocs-jupyter's wrapper reads ``abs_src_path`` from a source folder, which a file
    added from outside ``docs/`` has none of: give each wrapper its notebook's own path."""
    for file in files:
        inner = getattr(file, "file", None)
        if file.abs_src_path is None and inner is not None and inner.abs_src_path:
            file.abs_src_path = inner.abs_src_path
    return files


on_files = CombinedEvent(_add_notebooks, _paths_of_wrapped)
