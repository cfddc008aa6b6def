"""One JupyterLab server and one chromium for the whole browser suite.

The server (JupyterLab, which also serves Notebook 7 at ``/notebooks/``) runs on
127.0.0.1 with temporary config, data, runtime, settings and root directories, a random
token and a kernelspec pointing at this interpreter; widget state is saved with the
notebook, as a person who wants a shareable notebook would set it. Chromium is Debian's,
driven by Playwright; nothing downloads a browser. Without them the tests skip, except
under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
KERNEL = "toolloop-browser-test"
TIMEOUT_MS = int(os.environ.get("TOOLLOOP_BROWSER_TIMEOUT_MS", "90000"))


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser test cannot run under CI: {reason}")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Jupyter:
    url: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
            data=b"" if method == "POST" else None,
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # only ever 127.0.0.1
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4_000:]

    def page_url(self, name: str, ui: str) -> str:
        if ui == "lab":  # reset: a fresh workspace, with no tab left from an earlier test
            return f"{self.url}/lab/tree/{name}?reset&token={self.token}"
        return f"{self.url}/notebooks/{name}?token={self.token}"

    def stop_kernels(self) -> None:
        for kernel in self.api("/api/kernels") or []:
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")
        for session in self.api("/api/sessions") or []:
            self.api(f"/api/sessions/{session['id']}", method="DELETE")


def install_kernel(prefix: Path) -> Path:
    """A kernelspec running this very interpreter, with this checkout first on the path."""
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL, display_name="toolloop (test interpreter)", prefix=str(prefix))
    spec_path = prefix / "share" / "jupyter" / "kernels" / KERNEL / "kernel.json"
    spec = json.loads(spec_path.read_text())
    assert spec["argv"][0] == sys.executable
    spec["env"] = {"PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    spec_path.write_text(json.dumps(spec))
    return prefix / "share" / "jupyter"


@pytest.fixture(scope="session")
def playwright_api() -> Any:
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright_api: Any) -> Iterator[Any]:
    launched = playwright_api.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    yield launched
    launched.close()


@pytest.fixture(scope="session")
def jupyter(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jupyter]:
    base = tmp_path_factory.mktemp("jupyter")
    root = base / "root"
    config = base / "config"
    settings = base / "lab-settings"
    for d in (root, config / "labconfig", settings / "@jupyter-widgets" / "jupyterlab-manager"):
        d.mkdir(parents=True)
    # no news toasts, no extension manager (it would query a package registry)
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps(
            {
                "disabledExtensions": {
                    "@jupyterlab/apputils-extension:announcements": True,
                    "@jupyterlab/extensionmanager-extension": True,
                }
            }
        )
    )
    # save widget state with the notebook, so saved-state size is measurable
    (
        settings / "@jupyter-widgets" / "jupyterlab-manager" / "plugin.jupyterlab-settings"
    ).write_text(json.dumps({"saveState": True}))
    token = uuid.uuid4().hex
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(base / "data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_PATH": str(install_kernel(base / "kernel")),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "lab-workspaces"),
        "IPYTHONDIR": str(base / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    log = base / "jupyterlab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--LabApp.extension_manager=readonly",
                *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )
    server = Jupyter(f"http://127.0.0.1:{port}", token, root, process, log)
    try:
        for _ in range(600):
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited ({process.returncode}):\n{server.log_tail()}")
            try:
                server.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.1)
        else:
            pytest.fail(f"JupyterLab never answered:\n{server.log_tail()}")
        yield server
    finally:
        try:
            server.stop_kernels()
            server.api("/api/shutdown", method="POST")
            process.wait(timeout=20)
        except Exception:  # noqa: BLE001 - the server may already be gone; stop it by its pid
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


OBSERVERS = Path(__file__).with_name("observers.js").read_text()


@pytest.fixture
def page_for(browser: Any, jupyter: Jupyter) -> Iterator[Any]:
    """Open a notebook page: ``page_for(name, ui="lab"|"notebook", width=1400)``."""
    contexts: list[Any] = []

    def open_page(name: str, ui: str = "lab", width: int = 1400, height: int = 1800) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        context.add_init_script(OBSERVERS)
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.errors = []
        page.dialogs = []  # hostile text calls alert() if it ever runs: none may open
        page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        page.on(
            "console",
            lambda msg: (
                page.errors.append(f"console {msg.type}: {msg.text}")
                if msg.type in ("error", "warning")
                else None
            ),
        )
        page.goto(jupyter.page_url(name, ui))
        page.wait_for_selector(".jp-Notebook .jp-Cell")
        page.wait_for_selector(
            ".jp-Notebook-ExecutionIndicator[data-status='idle'], "
            ".jp-NotebookKernelStatus, #jp-top-bar"
        )
        wait_idle(page)
        return page

    try:
        yield open_page
    finally:
        for context in contexts:
            context.close()
        jupyter.stop_kernels()


def wait_idle(page: Any) -> None:
    """Until the kernel is ready and idle (Lab's indicator; Notebook 7's status)."""
    page.wait_for_function(
        """() => {
          const lab = document.querySelector('.jp-Notebook-ExecutionIndicator');
          if (lab) return lab.dataset.status === 'idle';
          const nb = document.querySelector('.jp-NotebookKernelStatus, .jp-KernelStatus');
          return !nb || /idle/i.test(nb.textContent + ' ' + (nb.getAttribute('title') || ''));
        }"""
    )


def write_notebook(root: Path, name: str, sources: list[str]) -> str:
    cells = [nbformat.v4.new_code_cell(s) for s in sources]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {
        "name": KERNEL,
        "display_name": "toolloop (test interpreter)",
        "language": "python",
    }
    nbformat.write(notebook, root / name)
    return name


def run_all_cells(page: Any) -> None:
    """Run ▸ Run All Cells, as a person would; retried while the page is still settling."""
    started = page.locator(".jp-InputPrompt", has_text=re.compile(r"\[(\*|\d+)\]"))
    for _attempt in range(6):
        page.locator(".jp-Notebook .jp-Cell >> visible=true").first.click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            started.first.wait_for(timeout=10_000)
            return
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try the menu again
            page.keyboard.press("Escape")
    pytest.fail("Run All Cells never started the cells")


def shot(page_or_locator: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page_or_locator.screenshot(path=str(ARTIFACTS / f"{name}.png"))
