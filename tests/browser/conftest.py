"""One JupyterLab server and one chromium for the browser suite (closed when it ends).

The server (JupyterLab, which also serves Notebook 7 at ``/notebooks/``) runs on
127.0.0.1 with temporary config, data, runtime, settings and root directories, a random
token and a kernelspec pointing at this interpreter; widget state is saved with the
notebook, as a person who wants a shareable notebook would set it. Chromium is Debian's,
driven by Playwright; nothing downloads a browser. Without them the tests skip, except
under ``CI=true``, where they fail.

The fixtures are package-scoped (this folder is a package), so chromium and Playwright's
event loop, which the sync API keeps marked as running in the main thread, are gone
before the asyncio tests of the rest of the suite start.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from browser.jupyterkit import (
    CHROMIUM,
    CHROMIUM_ARGS,
    OBSERVERS,
    TIMEOUT_MS,
    Jupyter,
    free_port,
    install_kernel,
    on_dialog,
    unavailable,
    wait_idle,
)


@pytest.fixture(scope="package")
def playwright_api() -> Any:
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright package is not installed")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="package")
def browser(playwright_api: Any) -> Iterator[Any]:
    launched = playwright_api.chromium.launch(
        executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
    )
    yield launched
    launched.close()


@pytest.fixture(scope="package")
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
        page.on("dialog", lambda dialog: on_dialog(page, dialog))
        page.on("pageerror", lambda exc: page.errors.append(f"{exc.message}\n{exc.stack}"))
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
