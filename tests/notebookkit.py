"""The tutorial notebooks, executed once per test run, and every check of them reading that run.

Three checks need the notebooks executed: nbval's strict comparison of every output with
the stored one; ``tests/test_tutorials.py`` (the outputs hold when a reply's tool calls
finish in the reverse of the order they started in); ``tests/test_binder.py`` (every
tutorial runs in the environment ``binder/`` describes and prints the figure it teaches).
They used to execute the notebooks three times. Now there is one execution, and it is all
three at once:

- nbval runs each notebook in the kernel ``toolloop-binder``
  (``--nbval-kernel-name toolloop-binder``), whose Python is the Binder environment: what
  ``pip install -r binder/requirements.txt`` installs (built once per machine, see
  ``venvcache.py``), copied for this run, then ``binder/postBuild`` run in the copy (it
  installs this checkout's package). The kernel ignores ``PYTHONPATH`` (``python -E``), so
  the notebooks see only what Binder would have.
- Every kernel nbval starts while this plugin is loaded (that one, or the test environment's
  with ``--nbval-current-env``) runs the IPython start-up file ``reversed_finish.py``: the
  calls of a reply finish the other way round, and each reordered group is logged.
- The plugin keeps every message each cell's kernel sent, whether the cell passed, and how
  long each notebook took, and runs the notebooks before the Binder and tutorial tests,
  which read the results (fixture ``tutorial_run``). From the messages it makes the notebook
  as executing it leaves it (nbval keeps a cell's outputs as the cell ends, and drops a
  later update of a display): nbclient, the executor of ``nbconvert --execute``, is given
  them in order with no kernel, so a display updated by a later cell shows its update by
  nbclient's own rules. Under pytest-xdist
  (``-n 2 --dist loadscope``) the notebooks and those tests are one scope, run by one
  worker in that order; the browser tests are another (:func:`scope_of`).

When a session did not run the notebooks that way (``pytest tests/test_binder.py`` alone,
or ``--nbval-current-env``), ``tutorial_run`` runs them once itself: nbval in a
subprocess, in the same kernel, reporting to a JSON file (``--notebook-results``).

The notebooks are marked ``slow``. ``TOOLLOOP_SKIP_BINDER_TEST=1`` skips what needs the
Binder environment outside CI; under ``CI=true`` anything missing fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionComplete
from venvcache import (
    VenvError,
    cached_venv,
    clean_env,
    clone_venv,
    requirement_lines,
    venv_python,
)

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
NOTEBOOKS = REPO / "notebooks"
SANITIZE = NOTEBOOKS / "nbval_sanitize.cfg"
KERNEL = "toolloop-binder"
"""The kernel nbval is told to use: the Binder environment's Python."""
SKIP_ENV = "TOOLLOOP_SKIP_BINDER_TEST"
PREFIX_ENV = "TOOLLOOP_BINDER_PREFIX"
"""Set by the fallback for its nbval subprocess: the Binder environment already made."""
INSTALL_TIMEOUT_S = 1_200
RUN_TIMEOUT_S = 1_500
STALE_S = 86_400
"""A run's copy of the Binder environment older than this was left by a killed run."""
STATE = pytest.StashKey["NotebookRun"]()


def notebooks() -> list[str]:
    """The notebooks in ``notebooks/`` (nbval runs each one), by file name."""
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def unavailable(reason: str) -> None:
    """Skip, except under ``CI=true``, where a check that cannot run fails."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"the Binder environment cannot be had under CI: {reason}")
    pytest.skip(reason)


@dataclass(frozen=True)
class BinderEnv:
    """The environment Binder would build, made for this run."""

    prefix: Path

    @property
    def python(self) -> Path:
        return venv_python(self.prefix)

    @property
    def env(self) -> dict[str, str]:
        return clean_env(self.prefix)


@dataclass(frozen=True)
class NotebookResult:
    """One notebook as nbval ran it: what each code cell shows once it has run."""

    name: str
    kernel: str
    cells: int
    """Code cells run (the notebook's, all of them, or the result is not used)."""
    failures: tuple[str, ...]
    """One line per cell nbval failed (an exception, or outputs unlike the stored ones)."""
    outputs: tuple[tuple[dict[str, Any], ...], ...]
    """Each code cell's outputs as executing the notebook leaves them (later display
    updates applied), in order."""
    seconds: float
    """From the start of its kernel to the end of its last cell."""

    def output_text(self) -> str:
        """Every cell's text output, one part per output, a stream's pieces joined as
        written: the kernel may send one ``print`` as several stream outputs (it flushes
        on a timer), and a line break put between them would split the line a test looks
        for."""
        parts: list[str] = []
        for cell in self.outputs:
            stream: str | None = None  # the stream the previous output of this cell was on
            for out in cell:
                if out.get("output_type") == "stream":
                    if parts and out.get("name") == stream:
                        parts[-1] += out.get("text", "")
                    else:
                        parts.append(out.get("text", ""))
                    stream = out.get("name")
                    continue
                stream = None
                if "data" in out:
                    parts.append(out["data"].get("text/plain", ""))
        return "\n".join(parts)

    def errors(self) -> list[dict[str, Any]]:
        return [out for cell in self.outputs for out in cell if out.get("output_type") == "error"]

    def executed(self) -> nbformat.NotebookNode:
        """The stored notebook with each code cell's outputs as this run left them."""
        nb = nbformat.read(NOTEBOOKS / self.name, as_version=4)
        code = [cell for cell in nb.cells if cell.cell_type == "code"]
        for cell, outputs in zip(code, self.outputs, strict=True):
            cell.outputs = [nbformat.from_dict(out) for out in outputs]
        return nb


@dataclass(frozen=True)
class TutorialRun:
    """The one execution of the notebooks: each one's result, and how many groups of tool
    calls the kernels finished the other way round."""

    notebooks: dict[str, NotebookResult]
    reversed_groups: int
    how: str
    """``"this session"`` or ``"a subprocess"``: where the execution happened."""


@dataclass
class _Cells:
    started: float | None = None
    ended: float = 0.0
    cells: int = 0
    failures: list[str] = field(default_factory=list)
    current: int = -1
    """The code cell running now (its number among the code cells, as nbval counts)."""
    requests: dict[int, str] = field(default_factory=dict)
    """The id of each code cell's execute request, as nbval sent it."""
    messages: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Each code cell's iopub messages (those answering its request), as they came."""
    recording: bool = False

    def record(self, kernel: Any) -> None:
        """Keep what nbval sends to and reads from ``kernel`` (its ``RunningKernel``)."""
        execute, get = kernel.execute_cell_input, kernel.get_message

        def execute_cell_input(*args: Any, **kwargs: Any) -> str:
            msg_id: str = execute(*args, **kwargs)
            self.requests[self.current] = msg_id
            self.messages[self.current] = []
            return msg_id

        def get_message(stream: str, timeout: float | None = None) -> dict[str, Any]:
            msg: dict[str, Any] = get(stream, timeout=timeout)
            request = self.requests.get(self.current)
            if stream == "iopub" and msg["parent_header"].get("msg_id") == request:
                self.messages[self.current].append(_kept(msg))
            return msg

        kernel.execute_cell_input = execute_cell_input
        kernel.get_message = get_message
        self.recording = True

    def executed_outputs(self, nb: nbformat.NotebookNode) -> list[tuple[dict[str, Any], ...]]:
        """Each code cell's outputs once ``nb`` has run, made by nbclient from the messages
        (no kernel): a display a later cell updates shows its update, as in
        ``nbconvert --execute``."""
        client = NotebookClient(nb, record_timing=False)
        code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        for number, index in enumerate(code):
            cell = nb.cells[index]
            cell.outputs = []
            client.clear_before_next_output = False  # as nbclient starts each cell
            for msg in self.messages.get(number, []):
                try:  # a copy: nbclient renames an update's header in place
                    client.process_message({**msg, "header": dict(msg["header"])}, cell, index)
                except CellExecutionComplete:
                    break
        return [tuple(dict(out) for out in nb.cells[i].outputs) for i in code]


def _kept(msg: dict[str, Any]) -> dict[str, Any]:
    """What nbclient reads of an iopub message (its header's dates left out)."""
    return {
        "msg_type": msg["msg_type"],
        "header": {"msg_type": msg["header"]["msg_type"]},
        "parent_header": {"msg_id": msg["parent_header"].get("msg_id")},
        "metadata": msg.get("metadata", {}),
        "content": msg["content"],
        "buffers": [bytes(b) for b in msg.get("buffers", [])],
    }


class NotebookRun:
    """This session's side of it: the Binder environment, the kernel, what nbval ran."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.work = Path(tempfile.mkdtemp(prefix="toolloop-notebooks-"))
        self.log = self.work / "reversed.log"
        self.ipython = self.work / "ipython"
        startup = self.ipython / "profile_default" / "startup"
        startup.mkdir(parents=True)
        shutil.copy(Path(__file__).with_name("reversed_finish.py"), startup / "00_reversed.py")
        self.jupyter_path = self.work / "jupyter"
        self.seen: dict[str, _Cells] = {}
        self._binder: BinderEnv | None = None
        self._binder_error: str | None = None
        self._made: Path | None = None

    # -- the Binder environment ------------------------------------------------------------
    def binder(self) -> BinderEnv:
        """The Binder environment for this run, made on first use (skips or fails if it
        cannot be had)."""
        if self._binder is None and self._binder_error is None:
            try:
                self._binder = self._make_binder()
            except VenvError as exc:
                self._binder_error = str(exc)
        if self._binder is None:
            unavailable(self._binder_error or "no Binder environment")
        assert self._binder is not None
        return self._binder

    def _make_binder(self) -> BinderEnv:
        if os.environ.get(SKIP_ENV) and os.environ.get("CI") != "true":
            pytest.skip(f"{SKIP_ENV} is set")
        if given := os.environ.get(PREFIX_ENV):
            return BinderEnv(Path(given))
        if shutil.which("bash") is None:
            raise VenvError("bash is needed to run binder/postBuild")
        base = cached_venv(
            "binder", requirement_lines(BINDER / "requirements.txt"), timeout=INSTALL_TIMEOUT_S
        )
        # A copy for this run: postBuild installs this checkout's package into it, and the
        # cached environment stays as pip left it (other checkouts share it).
        runs = base.parent / "runs"
        for stale in runs.glob("binder-*"):  # left by a run that was killed
            if time.time() - stale.stat().st_mtime > STALE_S:
                shutil.rmtree(stale, ignore_errors=True)
        self._made = clone_venv(base, runs / f"binder-{uuid.uuid4().hex[:12]}")
        env = BinderEnv(self._made)
        # repo2docker runs postBuild from the repository root; pip then builds the package
        # from a copy of the sources, so the work tree is left as it was.
        done = subprocess.run(
            ["bash", str(BINDER / "postBuild")],
            env=env.env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            check=False,
        )
        if done.returncode != 0:
            raise VenvError(f"binder/postBuild exited {done.returncode}:\n{done.stderr[-4_000:]}")
        return env

    def kernel_path(self) -> Path:
        """A ``JUPYTER_PATH`` holding the kernelspec ``toolloop-binder``."""
        binder = self.binder()
        spec = self.jupyter_path / "kernels" / KERNEL / "kernel.json"
        if not spec.exists():
            spec.parent.mkdir(parents=True)
            argv = [str(binder.python), "-E", "-s", "-m", "ipykernel_launcher"]
            spec.write_text(
                json.dumps(
                    {
                        "argv": [*argv, "-f", "{connection_file}"],
                        "display_name": "Python (Binder environment)",
                        "language": "python",
                        "env": {"PATH": binder.env["PATH"], "VIRTUAL_ENV": str(binder.prefix)},
                    }
                ),
                encoding="utf-8",
            )
        return self.jupyter_path

    def uses_binder_kernel(self) -> bool:
        return bool(
            self.config.getoption("nbval_kernel_name", None) == KERNEL
            and not self.config.getoption("nbval_current_env", False)
        )

    def kernel_env(self) -> dict[str, str]:
        """What a kernel nbval starts must see: the calls reversed, and the kernelspec."""
        env = {"IPYTHONDIR": str(self.ipython), "TOOLLOOP_FINISH_LOG": str(self.log)}
        if self.uses_binder_kernel():
            paths = [str(self.kernel_path()), os.environ.get("JUPYTER_PATH", "")]
            env["JUPYTER_PATH"] = os.pathsep.join(p for p in paths if p)
        return env

    # -- what nbval ran ----------------------------------------------------------------------
    def cells_of(self, item: pytest.Item) -> _Cells:
        return self.seen.setdefault(item.path.name, _Cells())

    def result(self, name: str) -> NotebookResult | None:
        """The notebook's result, if this session ran all of its code cells."""
        seen = self.seen.get(name)
        if seen is None or seen.started is None:
            return None
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        if seen.cells != sum(cell.cell_type == "code" for cell in nb.cells):
            return None
        return NotebookResult(
            name=name,
            kernel=KERNEL if self.uses_binder_kernel() else "the test environment's",
            cells=seen.cells,
            failures=tuple(seen.failures),
            outputs=tuple(seen.executed_outputs(nb)),
            seconds=seen.ended - seen.started,
        )

    def reversed_groups(self) -> int:
        return len(self.log.read_text("utf-8").splitlines()) if self.log.exists() else 0

    def tutorial_run(self) -> TutorialRun:
        """Every notebook's result: this session's, or one run of nbval in a subprocess."""
        names = notebooks()
        if self.uses_binder_kernel():
            ran = {n: r for n in names if (r := self.result(n)) is not None}
            if len(ran) == len(names):
                return TutorialRun(ran, self.reversed_groups(), "this session")
        return self._run_in_subprocess(names)

    def _run_in_subprocess(self, names: list[str]) -> TutorialRun:
        binder = self.binder()
        out = self.work / f"results-{uuid.uuid4().hex[:8]}.json"
        command = [
            *(sys.executable, "-m", "pytest", *(str(NOTEBOOKS / n) for n in names)),
            *("--nbval", "--nbval-sanitize-with", str(SANITIZE)),
            *("--nbval-kernel-name", KERNEL, "--notebook-results", str(out)),
            *("-p", "no:randomly", "-p", "no:cacheprovider", "-q"),
        ]
        done = subprocess.run(
            command,
            cwd=REPO,
            env={**os.environ, PREFIX_ENV: str(binder.prefix)},
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
        )
        if not out.exists():
            pytest.fail(f"nbval wrote no results:\n{done.stdout[-6_000:]}{done.stderr[-2_000:]}")
        data = json.loads(out.read_text("utf-8"))
        notebooks = {
            n: NotebookResult(
                name=n,
                kernel=r["kernel"],
                cells=r["cells"],
                failures=tuple(r["failures"]),
                outputs=tuple(tuple(cell) for cell in r["outputs"]),
                seconds=r["seconds"],
            )
            for n, r in data["notebooks"].items()
        }
        missing = sorted(set(names) - set(notebooks))
        if missing:
            pytest.fail(f"nbval did not run {missing}:\n{done.stdout[-6_000:]}")
        return TutorialRun(notebooks, data["reversed_groups"], "a subprocess")

    def write_results(self, path: Path) -> None:
        ran = {n: r for n in self.seen if (r := self.result(n)) is not None}
        data = {
            "reversed_groups": self.reversed_groups(),
            "notebooks": {
                n: {
                    "kernel": r.kernel,
                    "cells": r.cells,
                    "failures": list(r.failures),
                    "outputs": [list(cell) for cell in r.outputs],
                    "seconds": r.seconds,
                }
                for n, r in ran.items()
            },
        }
        path.write_text(json.dumps(data), encoding="utf-8")

    def close(self) -> None:
        """Remove this run's copy of the Binder environment and its files (again: no-op)."""
        if self._made is not None:
            shutil.rmtree(self._made, ignore_errors=True)
            self._made = self._binder = None
        shutil.rmtree(self.work, ignore_errors=True)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _is_cell(item: pytest.Item) -> bool:
    return type(item).__name__ == "IPyNbCell" and item.path.suffix == ".ipynb"


# -- hooks -------------------------------------------------------------------------------------
def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--notebook-results",
        default=None,
        help="write what nbval ran (each notebook's fresh outputs) to this JSON file",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.stash[STATE] = NotebookRun(config)
    # pytest-benchmark (langchain-tests brings it) switches itself off under xdist and says
    # so after pytest's summary line, which must stay the last line; nothing here is timed
    # with it (its fixture still runs the code once).
    xdist = config.getoption("numprocesses", None) or hasattr(config, "workerinput")
    if xdist and config.pluginmanager.hasplugin("benchmark"):
        config.option.benchmark_disable = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if (run := config.stash.get(STATE, None)) is not None:
        run.close()


def pytest_itemcollected(item: pytest.Item) -> None:
    if _is_cell(item):
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser tests first, then the notebooks (each one's cells in order), then the
    tests that read the notebooks' run, then the rest: so that the checks reading the run
    come after it, and so that under pytest-xdist the two long scopes start at once."""
    rank = {"browser": 0, "notebooks": 1}
    order = {id(i): (rank.get(scope_of(i.nodeid), 2), not _is_cell(i)) for i in items}
    items.sort(key=lambda i: order[id(i)])  # stable: each group keeps its order


READERS = ("tests/test_binder.py", "tests/test_tutorials.py")
"""The modules whose tests read the notebooks' run (``tutorial_run``, ``binder_env``)."""


def scope_of(nodeid: str) -> str:
    """The tests one pytest-xdist worker runs together, in order (``--dist loadscope``):
    the notebooks and the modules that read their run (it is this process's); the browser
    tests (one JupyterLab, one chromium); otherwise a module (its module-scoped fixtures,
    a Dask cluster say, made once)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith("notebooks/") or path in READERS:
        return "notebooks"
    if path.startswith("tests/browser/"):
        return "browser"
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` with this suite's scopes (:func:`scope_of`), given to the
    workers in the order :func:`pytest_collection_modifyitems` put them, not by size.

    (``--dist loadgroup`` with ``xdist_group`` marks would say the same, but pytest-xdist
    3.8 writes its group into a node id field pytest 9.2 no longer reads, so the marks are
    silently ignored: pytest-xdist issue 1386.)"""
    if config.getoption("dist", None) != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScopes(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False
    return SuiteScopes(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    if not _is_cell(item):
        return (yield)
    run = item.config.stash[STATE]
    seen = run.cells_of(item)
    if seen.started is None:
        seen.started = time.perf_counter()
    seen.current = getattr(item, "cell_num", -1)
    # the kernel starts in the setup of a notebook's first cell, and takes this environment
    given = run.kernel_env()
    saved = {key: os.environ.get(key) for key in given}
    os.environ.update(given)
    try:
        outcome = yield
        kernel = getattr(item.parent, "kernel", None)
        if not seen.recording and kernel is not None:
            seen.record(kernel)
        return outcome
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if _is_cell(item) and call.when == "call":
        seen = item.config.stash[STATE].cells_of(item)
        seen.cells += 1
        seen.ended = time.perf_counter()
        if report.failed:
            text = _ANSI.sub("", str(report.longrepr))
            said = [ln for ln in text.splitlines() if ln.startswith(f"{item.name}:")]
            seen.failures.append(said[0] if said else f"{item.name}: {text.strip()[:200]}")
    return report


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    run = session.config.stash[STATE]
    if path := session.config.getoption("notebook_results"):
        run.write_results(Path(path))
    # Here, not only at unconfigure: a pytest-xdist worker may be ended once it has reported
    # its session finished, and deleting the copy's files takes a while on a busy machine.
    run.close()


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def binder_env(pytestconfig: pytest.Config) -> BinderEnv:
    """The Binder environment of this run (made once per run from the cached one)."""
    return pytestconfig.stash[STATE].binder()


@pytest.fixture(scope="session")
def tutorial_run(pytestconfig: pytest.Config) -> TutorialRun:
    """The tutorials, executed once (see the module's docstring)."""
    return pytestconfig.stash[STATE].tutorial_run()
