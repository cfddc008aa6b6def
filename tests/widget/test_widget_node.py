"""The front end's own tests run under Node, and its sources pass the type check.

``node --test tests/js/`` runs the unit tests of the fold, the link protocol, the labels
and a jsdom mount of finished runs, on real runs Python writes here first (the catalog's
and the hostile cases of ``jskit``, as wire payloads). ``npm run check`` is ``tsc`` over
``toolloop_lab/_widget/src``. Both skip without Node and ``npm ci``, except under CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from jskit import ROOT, need_node, write_fixtures


def _run(command: list[str], env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        command,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output}"


def test_the_node_unit_tests_pass(tmp_path: Path) -> None:
    node = need_node("jsdom", "esbuild")
    names = write_fixtures(tmp_path)
    assert {"single_round", "hostile_tools", "cancelled_tool"} <= set(names)
    _run([node, "--test", "tests/js/"], {"TOOLLOOP_JS_FIXTURES": str(tmp_path)})


def test_the_front_end_passes_the_type_check() -> None:
    need_node(".bin/tsc")
    npm = shutil.which("npm")
    assert npm is not None
    _run([npm, "run", "check", "--silent"])


def test_every_front_end_module_asks_for_the_type_check() -> None:
    """``tsc`` checks a file only under ``// @ts-check``: each hand-written module starts so."""
    sources = sorted((ROOT / "toolloop_lab" / "_widget" / "src").glob("*.js"))
    assert len(sources) > 1
    assert [
        p.name for p in sources if not p.read_text(encoding="utf-8").startswith("// @ts-check")
    ] == []
