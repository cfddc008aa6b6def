"""The suite's own machinery: environments built once per machine, and the scopes the
pytest-xdist workers take (``venvcache.py``, ``notebookkit.py``).

No environment is really built here: the builder and pip are stand-ins that record what
they were asked to do, so these checks take no network and a fraction of a second.
"""

from __future__ import annotations

import venv
from pathlib import Path
from typing import Any

import pytest
import venvcache
from notebookkit import READERS, notebooks, scope_of
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
