"""marimo's own server for the browser tests: ``marimo run`` on a free port, headless, with no
token, in its light or dark theme (a user config of its own), every wait bounded.

marimo draws an anywidget in a shadow root; Playwright's locators pierce open shadow roots,
so the tests find the debugger as they do in JupyterLab.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from browser.jupyterkit import REPO, free_port, unavailable

START_S = 60.0
"""How long marimo may take to answer."""


def marimo_available() -> None:
    try:
        import marimo  # noqa: F401
    except ImportError:
        unavailable("marimo is not installed (pip install -e '.[test]')")


@contextmanager
def serve(notebook: Path, theme: str, home: Path) -> Iterator[str]:
    """``marimo run notebook`` in ``theme`` ("light" or "dark"); yields its URL."""
    marimo_available()
    config = home / f"config-{theme}" / "marimo"
    config.mkdir(parents=True, exist_ok=True)
    (config / "marimo.toml").write_text(
        f'[display]\ntheme = "{theme}"\n\n[runtime]\nauto_instantiate = true\n'
    )
    port = free_port()
    log = home / f"marimo-{theme}-{port}.log"
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(config.parent),
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
    }
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "marimo",
                "run",
                "--headless",
                "--no-token",
                "--host",
                "127.0.0.1",
                "-p",
                str(port),
                str(notebook),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=notebook.parent,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + START_S
        while True:
            if process.poll() is not None:
                pytest.fail(f"marimo exited ({process.returncode}):\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url, timeout=5):  # only ever 127.0.0.1
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"marimo never answered:\n{log.read_text()[-3000:]}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
