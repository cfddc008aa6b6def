"""The tutorials' stored outputs hold whatever order concurrent tool calls finish in.

Strict nbval compares every output of ``notebooks/`` with the stored one. A tool result
printed in completion order passes only as long as the threads happen to finish in the
stored order; here every notebook runs in kernels where the calls of a reply finish in the
reverse of the order they started in (``reversed_finish.py``), and must still match.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SLOW = {"06_dask_sweeps.ipynb"}
"""Left to the plain nbval run: it starts a Dask cluster, and compares its sweep's frames
with a local sweep's (already independent of the order calls finish in)."""


def test_every_tutorial_output_holds_when_tool_calls_finish_the_other_way_round(
    tmp_path: Path,
) -> None:
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("reversed_finish.py"), startup / "00_reversed.py")
    log = tmp_path / "reversed.log"
    env = {
        **os.environ,
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "TOOLLOOP_FINISH_LOG": str(log),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    notebooks = sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if p.name not in SLOW)
    command = [
        *(sys.executable, "-m", "pytest", *map(str, notebooks), "--nbval"),
        *("--nbval-sanitize-with", str(NOTEBOOKS / "nbval_sanitize.cfg")),
        *("--nbval-current-env", "-p", "no:randomly", "-p", "no:cacheprovider", "-q"),
    ]
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert log.exists(), "the start-up file never reordered a group of calls"
