"""A path with every symlink followed, and a symlink loop told apart on every Python.

Up to Python 3.12 ``Path.resolve()`` raises ``RuntimeError`` on a symlink loop; from 3.13 it
returns the looping link itself. The file tool and the command line both refuse such a path
before using it, in the same words on every version, so they ask here.
"""

from __future__ import annotations

import os
from pathlib import Path


def resolved(path: Path) -> Path | None:
    """``path`` with every symlink followed (missing parts kept as written), or ``None``
    for a symlink loop. A path every link of which was followed is never a link itself,
    unless it loops. ``OSError`` (an unreadable link, say) propagates."""
    try:
        target = path.resolve(strict=False)
    except RuntimeError:  # a symlink loop, before Python 3.13
        return None
    return None if os.path.islink(target) else target
