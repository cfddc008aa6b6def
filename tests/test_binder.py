"""Binder: only what ``binder/`` lists, installed the way repo2docker does, runs every
tutorial notebook.

The environment is what repo2docker builds: ``pip install -r binder/requirements.txt``,
then ``binder/postBuild`` from the repository root (it installs the package itself). The
first is built once per machine and reused while the requirements stay the same
(``venvcache.py``); each run copies it and runs ``postBuild`` in the copy
(``notebookkit.py``). The tests check that the package and JupyterLab's widgets extension
come from that environment, and that every notebook ran in a kernel of it: no cell raised
and, for the tutorials, a cell known to print a given figure printed it.

The notebooks are not executed here: nbval executes them once, in this environment's kernel
(``--nbval-kernel-name toolloop-binder``), and these checks read what it ran (fixture
``tutorial_run``; run alone, it runs nbval once itself). Under ``CI=true`` they always
run; elsewhere ``TOOLLOOP_SKIP_BINDER_TEST=1`` skips them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from notebookkit import KERNEL, STATE, BinderEnv, TutorialRun, notebooks

REPO = Path(__file__).resolve().parents[1]
BINDER = REPO / "binder"
NOTEBOOKS = REPO / "notebooks"

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
    "14_checks_and_recorded_tests.ipynb": (
        "requests the server answered: 2",
        "ReplayDivergedError",
        "+T-7: closed, 'API key leaked', customer Acme",
        "max_tool_rounds(0): failed",
        "def test_ticket_lookup() -> None:",
    ),
    "15_tune_budgets_and_pruning.ipynb": (
        "<LabResults: 48 scenarios (32 final_answer, 16 synthesis)",
        "8 regressed, 0 fixed of 48 paired runs (pass rate 67% -> 50%, McNemar exact p = 0.00781)",
        "REGRESSED: research_3 [tool_max_rounds=4, prune_tools=()] run 1",
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


# -- the Binder environment ---------------------------------------------------------------
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


@pytest.mark.slow
def test_package_comes_from_the_binder_environment(binder_env: BinderEnv, tmp_path: Path) -> None:
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
        cwd=tmp_path,  # not the repo: the import must come from site-packages
        timeout=120,
    )
    facts = json.loads(out.strip().splitlines()[-1])
    assert Path(facts["file"]).resolve().is_relative_to(binder_env.prefix.resolve())
    assert facts["ipywidgets"].startswith("8.")
    assert facts["data"], "the packaged sample data is missing from the installed package"


@pytest.mark.slow
def test_jupyterlab_has_the_widgets_extension(binder_env: BinderEnv, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(binder_env.python), "-m", "jupyter", "labextension", "list"],
        env=binder_env.env,
        cwd=tmp_path,
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


@pytest.mark.slow
def test_the_notebooks_kernel_is_the_binder_environments_python(
    binder_env: BinderEnv, pytestconfig: pytest.Config
) -> None:
    """The kernel nbval runs the notebooks in (found as nbval finds it) is that Python."""
    manager = KernelSpecManager()
    manager.kernel_dirs = [str(pytestconfig.stash[STATE].kernel_path() / "kernels")]
    spec = manager.get_kernel_spec(KERNEL)
    assert Path(spec.argv[0]) == binder_env.python
    assert "-E" in spec.argv  # PYTHONPATH does not reach it: the package is the installed one


def test_every_tutorial_has_expectations() -> None:
    ours = {n for n in notebooks() if re.match(r"\d\d_", n)}
    assert ours == set(EXPECTED), "list the tutorial's expected output in EXPECTED"


@pytest.mark.slow
@pytest.mark.parametrize("name", notebooks())
def test_notebook_runs_in_the_binder_environment(name: str, tutorial_run: TutorialRun) -> None:
    ran = tutorial_run.notebooks[name]
    assert ran.kernel == KERNEL
    assert ran.errors() == []
    text = ran.output_text()
    assert text.strip(), f"{name} produced no output at all"
    for expected in EXPECTED.get(name, ()):
        assert expected in text, f"{name}: no output contains {expected!r}"
