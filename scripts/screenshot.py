"""Refresh the README's screenshot, ``docs/images/debugger.png``.

It runs the one browser test that draws it (``tests/browser/test_screenshot_browser.py``: a
finished run in the live debugger, in JupyterLab's light theme, driven through Debian's
chromium) and has the test write the picture there. Look at the picture before committing it.

    python scripts/screenshot.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "images" / "debugger.png"


def main() -> int:
    env = {**os.environ, "TOOLLOOP_SCREENSHOT": str(TARGET), "CI": "true"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "tests/browser/test_screenshot_browser.py",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, check=False, timeout=900)
    if done.returncode == 0:
        print(f"wrote {TARGET.relative_to(ROOT)}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
