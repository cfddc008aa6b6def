"""The debugger in a real JupyterLab, driven through Debian's chromium with Playwright.

The test starts JupyterLab on 127.0.0.1 (free port, temporary config, data, runtime and
root directories, a random token, no browser launch) with a kernelspec pointing at this
interpreter, opens a notebook, runs all its cells through the Run menu, and asserts on the
text a person would see: round rows, a tool dispatch, a pruning saving, a tripped budget
gate, the final answer, and a tool output holding an ``<img onerror>`` payload shown as
text without running. A screenshot goes to ``test-artifacts/``.

The notebook is a parameter: the test runs one it writes into its temporary root (with exact
expectations and a positive control for the payload check) and the tutorial
``notebooks/01_quickstart.ipynb``, which must show the same things (see
:func:`generic_expectations`). ``TOOLLOOP_BROWSER_NOTEBOOK`` swaps the tutorial for another.

It never downloads a browser. Without ``/usr/bin/chromium`` (or Playwright) the test skips,
except under ``CI=true``, where it fails.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytestmark = pytest.mark.browser

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
NOTEBOOK_ENV = "TOOLLOOP_BROWSER_NOTEBOOK"
TIMEOUT_MS = int(os.environ.get("TOOLLOOP_BROWSER_TIMEOUT_MS", "90000"))

XSS_FLAG = "__toolloopXss"
CONTROL_FLAG = "__toolloopControl"
REPORT = "quarterly figures: revenue up 12%. " * 200
PRUNED = "revenue up 12% (quarterly figures)"
FINAL = "ALL DONE: revenue is up 12% this quarter."
XSS = f'<img src=x onerror="window.{XSS_FLAG}=1">'


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser test cannot run under CI: {reason}")
    pytest.skip(reason)


# -- the notebook -------------------------------------------------------------------------
SETUP = f"""\
import pathlib
import tempfile

from langchain_core.messages import AIMessage

from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel
from toolloop_lab.builtin_tools import echo_tool, file_read_tool

root = pathlib.Path(tempfile.mkdtemp())
(root / "report.txt").write_text({REPORT!r})
XSS = {XSS!r}


def usage(i, o):
    return {{"input_tokens": i, "output_tokens": o, "total_tokens": i + o}}


def call(name, args, call_id):
    return {{"name": name, "args": args, "id": call_id, "type": "tool_call"}}


model = ScriptedChatModel(
    [
        AIMessage(
            "Reading the report and echoing a note.",
            tool_calls=[
                call("file_read", {{"path": "report.txt"}}, "call_read"),
                call("echo", {{"text": XSS}}, "call_echo"),
            ],
            usage_metadata=usage(1000, 50),
        ),
        AIMessage(
            "One more look.",
            tool_calls=[call("echo", {{"text": "again"}}, "call_again")],
            usage_metadata=usage(3500, 100),
        ),
        AIMessage({FINAL!r}, usage_metadata=usage(600, 40)),
    ],
    model_name="gpt-4o-mini",
)
pruner = ScriptedChatModel(
    [AIMessage({PRUNED!r}, usage_metadata=usage(900, 40))], model_name="gpt-4o-mini"
)
config = AgentConfig(
    tool_max_rounds=6,
    token_budget_percent=50,
    context_window=10_000,
    prune_tools=("file_read",),
    prune_min_chars=1_000,
)
agent = LLMAgent(model, [file_read_tool(root), echo_tool()], config, pruning_model=pruner)
"""


def generated_notebook() -> nbformat.NotebookNode:
    """A notebook that runs one scripted loop under the debugger, in the background."""
    cells = [
        nbformat.v4.new_markdown_cell("# LoopDebugger browser check"),
        nbformat.v4.new_code_cell(SETUP),
        nbformat.v4.new_code_cell("dbg = LoopDebugger()\ndbg"),
        nbformat.v4.new_code_cell('task = dbg.start(agent, "How did revenue do?")'),
        nbformat.v4.new_code_cell("result = await task\nprint(result.final_response.text)"),
        nbformat.v4.new_markdown_cell(
            "Control: raw HTML from trusted code, to prove an unescaped `onerror` would run."
        ),
        nbformat.v4.new_code_cell(
            f"import ipywidgets\nipywidgets.HTML('<img src=x onerror=\"window.{CONTROL_FLAG}=1\">')"
        ),
    ]
    return nbformat.v4.new_notebook(cells=cells)


@dataclass(frozen=True)
class Expectations:
    """Visible texts the run must show, and the window flags to check."""

    texts: tuple[str, ...]
    final_answer: str
    control: bool = False
    rows: tuple[str, ...] = field(default=("round 1",))


def exact_expectations() -> Expectations:
    """Figures of the generated notebook, computed here from its script."""
    from toolloop_lab.pruning import text_tokens

    saved = text_tokens(REPORT) - text_tokens(PRUNED)
    net = saved - (900 + 40)
    spent = 1000 + 50 + 900 + 40 + 3500 + 100 + 600 + 40
    return Expectations(
        texts=(
            "file_read ✓ success",
            "echo ✓ success",
            f"net saving {net:,} tokens",
            f"saved {saved:,} · net {net:,}",
            f"{spent:,} / 5,000 tokens",
            "token gate TRIPPED",
            "tokens ✗ TRIPPED",
            "synthesis: token_budget",
            "● FINISHED",
            XSS,
        ),
        final_answer=FINAL,
        control=True,
        rows=("round 1", "round 2", "synthesis"),
    )


def generic_expectations() -> Expectations:
    """What any notebook run under this test must show (for ``TOOLLOOP_BROWSER_NOTEBOOK``)."""
    return Expectations(
        texts=("✓ success", "net saving", "TRIPPED", "Final answer", "<img src=x onerror="),
        final_answer="Final answer",
    )


# -- JupyterLab ---------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Lab:
    url: str
    token: str
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


def install_kernel(prefix: Path) -> Path:
    """A kernelspec running this very interpreter (so the kernel sees this venv)."""
    from ipykernel.kernelspec import install

    install(kernel_name=KERNEL, display_name="toolloop (test interpreter)", prefix=str(prefix))
    spec = prefix / "share" / "jupyter" / "kernels" / KERNEL / "kernel.json"
    assert json.loads(spec.read_text())["argv"][0] == sys.executable
    return prefix / "share" / "jupyter"


@pytest.fixture
def chromium() -> Any:
    """Playwright's sync API, once the browser is known to be there (else skip, or fail
    under CI)."""
    if not CHROMIUM.exists() or shutil.which(str(CHROMIUM)) is None:
        _unavailable(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    return sync_playwright


@pytest.fixture
def lab(chromium: Any, tmp_path: Path) -> Iterator[Lab]:
    root = tmp_path / "root"
    config = tmp_path / "config"
    for d in (root, config / "labconfig"):
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
    token = uuid.uuid4().hex
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_PATH": str(install_kernel(tmp_path / "kernel")),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    log = tmp_path / "jupyterlab.log"
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
    server = Lab(f"http://127.0.0.1:{port}", token, process, log)
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
            for kernel in server.api("/api/kernels") or []:
                server.api(f"/api/kernels/{kernel['id']}", method="DELETE")
            server.api("/api/shutdown", method="POST")
            process.wait(timeout=20)
        except Exception:  # noqa: BLE001 - the server may already be gone; stop it by its pid
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def notebook_under_test(root: Path, chosen: str | None) -> tuple[str, Expectations]:
    """Put the notebook to run into ``root``; returns its name and what it must show."""
    if chosen:
        source = (REPO / chosen).resolve()
        notebook = nbformat.read(source, as_version=4)
        expectations = generic_expectations()
        name = source.name
    else:
        notebook = generated_notebook()
        expectations = exact_expectations()
        name = "widget_check.ipynb"
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    notebook.metadata["kernelspec"] = {
        "name": KERNEL,
        "display_name": "toolloop (test interpreter)",
        "language": "python",
    }
    nbformat.write(notebook, root / name)
    return name, expectations


def run_all_cells(page: Any) -> None:
    """Run ▸ Run All Cells, as a person would; retried while Lab is still settling (the
    command does nothing until the notebook is the current widget)."""
    started = page.locator(".jp-InputPrompt", has_text=re.compile(r"\[(\*|\d+)\]"))
    for _attempt in range(6):
        page.locator(".jp-NotebookPanel .jp-Cell").first.click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            started.first.wait_for(timeout=10_000)
            return
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try the menu again
            page.keyboard.press("Escape")
    pytest.fail("Run All Cells never started the cells")


# -- the test -----------------------------------------------------------------------------
TUTORIAL = os.environ.get(NOTEBOOK_ENV, "notebooks/01_quickstart.ipynb")


@pytest.mark.parametrize("chosen", [None, TUTORIAL], ids=["generated", "tutorial"])
def test_widget_runs_live_in_jupyterlab(
    chromium: Any, lab: Lab, tmp_path: Path, chosen: str | None
) -> None:
    name, expect = notebook_under_test(tmp_path / "root", chosen)
    shot = "widget_browser" if chosen is None else f"widget_browser_{Path(chosen).stem}"
    ARTIFACTS.mkdir(exist_ok=True)

    with chromium() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 3000})
            page.set_default_timeout(TIMEOUT_MS)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(f"{lab.url}/lab/tree/{name}?token={lab.token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell")
            # the kernel must be ours and ready before the cells run
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")
            run_all_cells(page)

            widget = page.locator(".jp-OutputArea-output .widget-vbox").first
            widget.get_by_text("● FINISHED").wait_for()
            page.get_by_text(expect.final_answer).first.wait_for()
            if expect.control:
                page.wait_for_function(f"window.{CONTROL_FLAG} === 1")
            page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']")

            # pick round 1 in the inspector, as a person would: its tool results show
            widget.locator("select").select_option(label="round 1")
            widget.get_by_text("Round 1 · model call").wait_for()

            widget.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / f"{shot}.png"))
            widget.screenshot(path=str(ARTIFACTS / f"{shot}_widget.png"))

            shown = widget.inner_text()
            for text in expect.texts:
                assert text in shown, f"{text!r} is not visible in the widget:\n{shown}"
            rows = widget.locator("tr")
            for label in expect.rows:
                assert rows.filter(has_text=label).count() >= 1, f"no {label!r} row"
            assert expect.final_answer in shown

            # the payload shows as text, and no element came of it
            assert widget.get_by_text(XSS.split('"')[0], exact=False).count() >= 1
            assert page.locator(".jp-OutputArea-output img[src='x']").count() == (
                1 if expect.control else 0
            )  # only the control's own image
            assert page.evaluate(f"window.{XSS_FLAG}") is None
            assert not [e for e in errors if XSS_FLAG in e]
        except BaseException:
            # what the page showed when it went wrong, for the CI log and artifacts
            page.screenshot(path=str(ARTIFACTS / f"{shot}_failure.png"))
            print(page.locator("body").inner_text()[-6_000:])
            print(lab.log_tail())
            raise
        finally:
            browser.close()
    kernel = lab.api("/api/kernels")
    assert kernel
    assert kernel[0]["name"] == KERNEL
