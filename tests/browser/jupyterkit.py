"""What the browser tests share: a JupyterLab server, notebooks, pages and screenshots.

The fixtures that start the server and chromium live in ``conftest.py``; the tests import
these helpers from here (never from ``conftest``, whose name other test folders share).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
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


OBSERVERS = Path(__file__).with_name("observers.js").read_text()


def on_dialog(page: Any, dialog: Any) -> None:
    """Record every alert/confirm/prompt (a payload that ran would open one) and dismiss
    it; let a reload leave the page (JupyterLab asks before leaving unsaved work)."""
    if dialog.type == "beforeunload":
        dialog.accept()
        return
    page.dialogs.append(dialog.message)
    dialog.dismiss()


def open_file(browser: Any, path: Path, width: int = 1200) -> Any:
    """A standalone page (a report, a run's page) in a fresh tab, its errors and dialogs
    recorded: hostile text calls ``alert()`` if it ever runs, and none may open."""
    page = browser.new_page(viewport={"width": width, "height": 1400})
    page.errors = []
    page.dialogs = []
    page.on("dialog", lambda dialog: on_dialog(page, dialog))
    page.on("pageerror", lambda exc: page.errors.append(f"{exc.message}\n{exc.stack}"))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    return page


def ours(errors: list[str]) -> list[str]:
    """The page's errors raised in the debugger's own code. anywidget loads the bundle from
    a ``blob:`` URL, so its stack frames name no file of the package; the pages record each
    uncaught error with its stack so the frames can be told apart from the front end's."""
    return [e for e in errors if "toolloop" in e.lower() or "blob:" in e]


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


CHECKS = (Path(__file__).with_name("checks.js")).read_text()
"""The page-side checks (``layoutProblems``, ``contrastReport``): evaluate them with
:func:`layout_problems` and :func:`contrast_report`."""


def widget(page: Any, index: int = 0) -> Any:
    """The ``index``-th debugger on the page."""
    return page.locator(".tl-root").nth(index)


def layout_problems(page: Any) -> list[str]:
    """Horizontal overflow of any debugger, and controls that are clipped or cut."""
    result: list[str] = page.evaluate(f"(() => {{ {CHECKS}; return layoutProblems(); }})()")
    return result


def contrast_report(page: Any) -> dict[str, Any]:
    """How many text nodes were checked (``count``) and those below 4.5:1 (``worst``)."""
    result: dict[str, Any] = page.evaluate(f"(() => {{ {CHECKS}; return contrastReport(); }})()")
    return result


def switch_theme(page: Any, theme: str) -> None:
    """Pick ``theme`` in JupyterLab's Settings menu and wait until it is applied."""
    page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.locator(
        ".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text="Theme")
    ).first.hover()
    page.locator(
        ".lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=theme)
    ).first.click()
    page.wait_for_function(f"document.body.dataset.jpThemeName === {theme!r}")
    page.wait_for_timeout(500)


def shot(page_or_locator: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page_or_locator.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def looks(page: Any, live: Any, name: str) -> None:
    """Screenshots of ``live`` light, dark and at 600 px (``{name}_light.png`` and so on);
    contrast and layout hold in each."""
    live.scroll_into_view_if_needed()
    shot(live, f"{name}_light")
    switch_theme(page, "JupyterLab Dark")
    dark = contrast_report(page)
    print(f"\n[{name} dark] text nodes checked: {dark['count']}, below 4.5:1: {dark['worst']}")
    assert dark["worst"] == []
    live.scroll_into_view_if_needed()
    shot(live, f"{name}_dark")
    switch_theme(page, "JupyterLab Light")
    page.set_viewport_size({"width": 600, "height": 1400})
    page.wait_for_timeout(400)
    assert layout_problems(page) == []
    live.scroll_into_view_if_needed()
    shot(page, f"{name}_600px")
    page.set_viewport_size({"width": 1400, "height": 1800})
