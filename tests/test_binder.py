"""Binder: install only what ``binder/`` lists into a fresh virtual environment, then run
every tutorial notebook in it.

This is what repo2docker does on Binder: ``pip install -r binder/requirements.txt``, then
``binder/postBuild`` from the repository root (it installs the package itself). The test
then checks that JupyterLab and the widgets' lab extension are there, registers an
ipykernel kernelspec for the new environment in a temporary ``JUPYTER_PATH``, and executes
each notebook in ``notebooks/`` with nbclient on that kernel. A notebook passes when no cell
raises and, for the tutorials, when a cell known to print a given figure printed it.

It installs from the package index through the machine's pip configuration and cache (a
minute or two when cached). Under ``CI=true`` it always runs; elsewhere set
``TOOLLOOP_SKIP_BINDER_TEST=1`` to skip it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import tomllib
import venv
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
NOTEBOOKS = REPO / "notebooks"
KERNEL = "toolloop-binder"
SKIP_ENV = "TOOLLOOP_SKIP_BINDER_TEST"
INSTALL_TIMEOUT_S = 1_200
CELL_TIMEOUT_S = 300

# Text a notebook's outputs must contain: the figure each tutorial is about. A notebook in
# notebooks/ that is not listed here must still run without an error.
EXPECTED: dict[str, tuple[str, ...]] = {
    "01_quickstart.ipynb": (
        "Final answer: revenue grew 12% quarter on quarter and churn fell to 2.1%.",
        "input tokens:     6000",
        # the debugger displayed before the run ends showing it (dbg.start, awaited later)
        "LoopDebugger: finished · 2 tool rounds, 4 model calls (at most 6 rounds)",
    ),
    "02_budgets_and_synthesis.ipynb": (
        "reason=round_cap",
        "USD budget exhausted: spent $0.00057 of $0.0005",
        "unpriced | any_invocation_made = False",
    ),
    "03_pruning.ipynb": (
        "tokens saved:   3092",
        "cost change with pruning",
    ),
    "04_scenario_sweeps.ipynb": (
        "11 runs",
        "same runs after loading: True",
        "<Figure size",
    ),
    "05_debugging_failures.ipynb": (
        "tool loop failed in round 2: RuntimeError: 503 Service Unavailable",
        "round 1: before tool dispatch of order_status",
        "the run was cancelled",
        "partial last line",
    ),
    "06_dask_sweeps.ipynb": ("runs, rounds and events equal the local run's",),
    "07_record_and_replay.ipynb": (
        "same usage:  True",
        "ReplayDivergedError",
        "beyond_recording | ToolLoopError caused by ReplayExhaustedError",
    ),
    "08_opentelemetry.ipynb": (
        "input tokens over the chat spans: 1560 | the run's: 1560",
        "same names and timestamps as live: True",
    ),
    "09_watch_langchain_agents.ipynb": (
        "input tokens:  2850 = 2850",
        "replay matches the live view: True",
    ),
    "10_multi_turn_workloads.ipynb": (
        "turn 2: 2 rounds, 890 prompt tokens, 9 messages so far",
        "tidy_notes[tight]",
    ),
    "11_intervene_and_fork.ipynb": (
        "rebuilt from events: True",
        "first request == the fixed run's round-2 request: True",
    ),
    "12_many_runs.ipynb": (
        "tuesday    final_answer  rounds=4 tokens=2,300",
        "analyst  final_answer  own tokens=1,425  nested under triage's call triage_1",
        "triage with its sub-agent: tokens=2,065",
        "the debugger above shows monday against tuesday: 4 of 4 rounds differ",
    ),
    "13_watch_any_framework.ipynb": (
        "support   from otel  final_answer  rounds=2 tokens=998",
        "LLMAgent  from loop  final_answer  rounds=2 tokens=998",
        "Every round did the same.",
    ),
    "16_mcp_servers.ipynb": (
        "reindex [inventory]: error (the MCP server exited)",
        "call_reindex | FATAL: index file corrupted, cannot continue",
        "server_start | broken | ('inventory database not found',)",
    ),
}


def _requirement_names(path: Path) -> set[str]:
    names = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(_canonical(re.split(r"[\s\[<>=!~;]", line, maxsplit=1)[0]))
    return names


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project_dependencies() -> set[str]:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    deps = tomllib.loads(text)["project"]["dependencies"]
    return {_canonical(re.split(r"[\s\[<>=!~;]", d, maxsplit=1)[0]) for d in deps}


# -- cheap checks of the Binder files (no install) ----------------------------------------
def test_binder_files_are_what_repo2docker_reads() -> None:
    assert (BINDER / "runtime.txt").read_text(encoding="utf-8").strip() == "python-3.11"
    post_build = BINDER / "postBuild"
    assert os.access(post_build, os.X_OK), "repo2docker runs postBuild as an executable"
    assert post_build.read_text(encoding="utf-8").startswith("#!")
    required = _requirement_names(BINDER / "requirements.txt")
    missing = _project_dependencies() - required
    assert not missing, f"binder/requirements.txt lacks project dependencies: {sorted(missing)}"
    # JupyterLab, a kernel and the widgets' lab extension (ipywidgets 8 brings it)
    assert {"jupyterlab", "ipykernel", "ipywidgets"} <= required


def test_notebooks_reference_no_issue_numbers() -> None:
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            assert not re.search(r"\bissues?\s*#?\d", cell.source, re.I), (path.name, cell.source)


# -- the fresh environment ----------------------------------------------------------------
def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the Binder test cannot run under CI: {reason}")
    pytest.skip(reason)


def _clean_env(bin_dir: Path) -> dict[str, str]:
    """The caller's environment with the new venv first on PATH and nothing that would
    make its Python see another environment's packages."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONUSERBASE"}
    }
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(cmd: list[str], *, env: dict[str, str], cwd: Path, timeout: float) -> str:
    done = subprocess.run(
        cmd,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd)} exited {done.returncode}\n"
            f"--- stdout ---\n{done.stdout[-4_000:]}\n--- stderr ---\n{done.stderr[-4_000:]}"
        )
    return done.stdout


class BinderEnv:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.prefix = root / "venv"
        self.bin = self.prefix / ("Scripts" if os.name == "nt" else "bin")
        self.python = self.bin / "python"
        self.env = _clean_env(self.bin)
        self.timings: dict[str, float] = {}


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BinderEnv]:
    if os.environ.get(SKIP_ENV) and os.environ.get("CI") != "true":
        pytest.skip(f"{SKIP_ENV} is set")
    if shutil.which("bash") is None:
        _skip_or_fail("bash is needed to run binder/postBuild")
    benv = BinderEnv(tmp_path_factory.mktemp("binder"))

    started = time.perf_counter()
    venv.EnvBuilder(with_pip=True, clear=True).create(benv.prefix)
    benv.timings["venv"] = time.perf_counter() - started

    started = time.perf_counter()
    _run(
        [
            str(benv.python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "-r",
            str(BINDER / "requirements.txt"),
        ],
        env=benv.env,
        cwd=benv.root,
        timeout=INSTALL_TIMEOUT_S,
    )
    benv.timings["requirements"] = time.perf_counter() - started

    # repo2docker runs postBuild from the repository root; pip then builds the package
    # from a copy of the sources, so the work tree is left as it was.
    started = time.perf_counter()
    _run(["bash", str(BINDER / "postBuild")], env=benv.env, cwd=REPO, timeout=INSTALL_TIMEOUT_S)
    benv.timings["postBuild"] = time.perf_counter() - started
    yield benv
    print(f"binder environment timings (s): {json.dumps(benv.timings)}")
    shutil.rmtree(benv.prefix, ignore_errors=True)  # several hundred MB; pytest keeps tmp dirs


def test_package_comes_from_the_binder_environment(binder_env: BinderEnv) -> None:
    out = _run(
        [
            str(binder_env.python),
            "-c",
            "import json, sys, toolloop_lab, ipywidgets, jupyterlab; "
            "from toolloop_lab.lab._scenario import sample_data_dir; "
            "print(json.dumps({'file': toolloop_lab.__file__, 'prefix': sys.prefix, "
            "'ipywidgets': ipywidgets.__version__, "
            "'data': (sample_data_dir() / 'report.txt').is_file()}))",
        ],
        env=binder_env.env,
        cwd=binder_env.root,  # not the repo: the import must come from site-packages
        timeout=120,
    )
    facts = json.loads(out.strip().splitlines()[-1])
    assert Path(facts["file"]).resolve().is_relative_to(binder_env.prefix.resolve())
    assert facts["ipywidgets"].startswith("8.")
    assert facts["data"], "the packaged sample data is missing from the installed package"


def test_jupyterlab_has_the_widgets_extension(binder_env: BinderEnv) -> None:
    done = subprocess.run(
        [str(binder_env.python), "-m", "jupyter", "labextension", "list"],
        env=binder_env.env,
        cwd=binder_env.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listing = done.stdout + done.stderr  # the listing goes to stderr on JupyterLab 4
    line = next(
        (ln for ln in listing.splitlines() if "@jupyter-widgets/jupyterlab-manager" in ln), None
    )
    assert line is not None, listing
    assert "enabled" in line
    assert "OK" in line


@pytest.fixture(scope="module")
def kernel_path(binder_env: BinderEnv, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernelspec running the Binder environment's Python, in a temporary JUPYTER_PATH."""
    prefix = tmp_path_factory.mktemp("kernel")
    _run(
        [
            str(binder_env.python),
            "-m",
            "ipykernel",
            "install",
            "--prefix",
            str(prefix),
            "--name",
            KERNEL,
            "--display-name",
            "Python (Binder environment)",
        ],
        env=binder_env.env,
        cwd=binder_env.root,
        timeout=120,
    )
    jupyter_path = prefix / "share" / "jupyter"
    spec = json.loads((jupyter_path / "kernels" / KERNEL / "kernel.json").read_text())
    assert Path(spec["argv"][0]).resolve() == binder_env.python.resolve()
    return jupyter_path


def _notebooks() -> list[str]:
    return sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def _output_text(nb: nbformat.NotebookNode) -> str:
    """Every cell's text output, one part per output, a stream's pieces joined as written:
    the kernel may send one ``print`` as several stream outputs (it flushes on a timer),
    and a line break put between them would split the line a test looks for."""
    parts: list[str] = []
    for cell in nb.cells:
        stream: str | None = None  # the stream the previous output of this cell was on
        for out in cell.get("outputs", []):
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


def test_every_tutorial_has_expectations() -> None:
    ours = {n for n in _notebooks() if re.match(r"\d\d_", n)}
    assert ours == set(EXPECTED), "list the tutorial's expected output in EXPECTED"


@pytest.mark.parametrize("name", _notebooks())
def test_notebook_runs_in_the_binder_environment(
    name: str,
    binder_env: BinderEnv,
    kernel_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A copy, away from the repo: the notebook sees only the installed package, and
    # anything it writes next to itself stays out of the work tree.
    workdir = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, workdir)
    for key in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(kernel_path))
    monkeypatch.setenv("PATH", binder_env.env["PATH"])
    monkeypatch.setenv("VIRTUAL_ENV", str(binder_env.prefix))
    monkeypatch.setenv("PYTHONNOUSERSITE", "1")

    nb = nbformat.read(workdir / name, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        record_timing=False,
        resources={"metadata": {"path": str(workdir)}},
    )
    started = time.perf_counter()
    client.execute()  # raises CellExecutionError, naming the cell, if any cell raises
    took = time.perf_counter() - started

    errors = [
        out
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
    assert errors == []
    text = _output_text(nb)
    assert text.strip(), f"{name} produced no output at all"
    for expected in EXPECTED.get(name, ()):
        assert expected in text, f"{name}: no output contains {expected!r}"
    if name in EXPECTED:
        assert took < 60, f"{name} took {took:.1f} s; a tutorial must run in under a minute"
