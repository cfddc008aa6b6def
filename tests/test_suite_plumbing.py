"""The suite's own machinery: environments built once per machine, the scopes the
pytest-xdist workers take, and a notebook as nbval's one execution leaves it
(``venvcache.py``, ``notebookkit.py``).

No environment is really built and no kernel started here: the builder, pip and the
kernel are stand-ins that record what they were asked to do, so these checks take no
network and a fraction of a second.
"""

from __future__ import annotations

import venv
from collections import deque
from pathlib import Path
from typing import Any

import nbformat
import pytest
import venvcache
from notebookkit import READERS, _Cells, notebooks, scope_of
from venvcache import VenvError, cached_venv, clone_venv, key_of


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Environments "built" under a cache in ``tmp_path``: one entry per build."""
    monkeypatch.setenv("TOOLLOOP_VENV_CACHE", str(tmp_path / "cache"))
    made: list[Path] = []

    def create(self: venv.EnvBuilder, prefix: str | Path) -> None:
        (Path(prefix) / "bin").mkdir(parents=True)
        made.append(Path(prefix))

    monkeypatch.setattr(venv.EnvBuilder, "create", create)
    monkeypatch.setattr(venvcache, "_run", lambda *a, **k: "pkg==1.0\n")
    return made


def test_an_environment_is_built_once_and_found_again_by_its_requirements(
    builds: list[Path],
) -> None:
    first = cached_venv("demo", ["pkg>=1"], timeout=5)
    again = cached_venv("demo", ["pkg>=1"], timeout=5)
    assert again == first
    assert builds == [first]
    assert (first / ".complete").read_text() == "pkg==1.0\n"  # what pip froze
    other = cached_venv("demo", ["pkg>=2"], timeout=5)
    assert other != first
    assert builds == [first, other]


def test_a_build_cut_short_is_done_again(builds: list[Path]) -> None:
    first = cached_venv("demo", ["pkg"], timeout=5)
    (first / ".complete").unlink()  # as if the run building it had been killed
    assert cached_venv("demo", ["pkg"], timeout=5) == first
    assert len(builds) == 2


def test_a_failed_install_is_never_taken_for_an_environment(
    builds: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any, **kwargs: Any) -> str:
        raise VenvError("pip install exited 1")

    monkeypatch.setattr(venvcache, "_run", fail)
    with pytest.raises(VenvError, match="exited 1"):
        cached_venv("demo", ["pkg"], timeout=5)
    assert not (builds[0] / ".complete").exists()


def test_the_key_names_the_requirements_not_their_order_or_spacing() -> None:
    assert key_of(["b>=1", "a"]) == key_of([" a ", "b>=1", ""])
    assert key_of(["a"]) != key_of(["a>=2"])


def test_a_copy_shares_the_files_and_is_not_marked_built(tmp_path: Path) -> None:
    source = tmp_path / "cached"
    (source / "lib").mkdir(parents=True)
    (source / "lib" / "module.py").write_text("x = 1\n")
    (source / ".complete").write_text("")
    copy = clone_venv(source, tmp_path / "runs" / "one")
    copied, cached = copy / "lib" / "module.py", source / "lib" / "module.py"
    assert copied.read_text() == "x = 1\n"
    assert copied.stat().st_ino == cached.stat().st_ino  # a hard link, not a second copy
    assert not (copy / ".complete").exists()
    assert (source / ".complete").exists()  # the cached environment is as it was


def test_the_notebooks_and_the_tests_reading_their_run_share_one_scope() -> None:
    scopes = {scope_of(f"notebooks/{name}::Cell 0") for name in notebooks()}
    scopes |= {scope_of(f"{path}::test_x[01_quickstart.ipynb]") for path in READERS}
    assert scopes == {"notebooks"}
    assert scope_of("tests/browser/test_widget_browser.py::test_x[lab]") == "browser"
    assert scope_of("tests/browser/test_runs_browser.py::test_y") == "browser"
    assert scope_of("tests/lab/test_dask.py::test_z") == "tests/lab/test_dask.py"


class _StandInKernel:
    """nbval's ``RunningKernel`` as far as nbval uses it: requests go out, messages come."""

    def __init__(self, messages: list[dict[str, Any]]) -> None:
        self.sent = 0
        self.waiting = deque(messages)

    def execute_cell_input(self, source: str, allow_stdin: bool | None = None) -> str:
        self.sent += 1
        return f"request-{self.sent - 1}"

    def get_message(self, stream: str, timeout: float | None = None) -> dict[str, Any]:
        return self.waiting.popleft()


def _msg(kind: str, request: str, **content: Any) -> dict[str, Any]:
    return {
        "msg_type": kind,
        "header": {"msg_type": kind, "date": "not JSON, as a real header's"},
        "parent_header": {"msg_id": request},
        "metadata": {},
        "content": content,
    }


def test_a_display_updated_by_a_later_cell_shows_its_update_as_executing_leaves_it() -> None:
    """nbval keeps a cell's outputs as the cell ends; the notebook the checks read is the
    one nbclient would leave: the first cell's display shows the second cell's update."""
    shown = {"display_id": "debugger"}
    kernel = _StandInKernel(
        [
            _msg(
                "display_data",
                "request-0",
                data={"text/plain": "idle"},
                metadata={},
                transient=shown,
            ),
            _msg("stream", "elsewhere", name="stdout", text="not this cell's\n"),
            _msg("status", "request-0", execution_state="idle"),
            _msg("stream", "request-1", name="stdout", text="ran\n"),
            _msg(
                "update_display_data",
                "request-1",
                data={"text/plain": "finished"},
                metadata={},
                transient=shown,
            ),
            _msg("status", "request-1", execution_state="idle"),
        ]
    )
    cells = _Cells()
    cells.record(kernel)
    for number in (0, 1):
        cells.current = number
        kernel.execute_cell_input(f"cell {number}")
        while kernel.get_message("iopub")["msg_type"] != "status":
            pass
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("dbg"),
            nbformat.v4.new_markdown_cell("between"),
            nbformat.v4.new_code_cell("run()"),
        ]
    )
    first, second = cells.executed_outputs(nb)
    assert [out["data"]["text/plain"] for out in first] == ["finished"]
    assert [(out["output_type"], out["text"]) for out in second] == [("stream", "ran\n")]
    assert cells.executed_outputs(nb) == [first, second]  # the same when made again
