"""The shipped tools: ``echo`` and the confined ``file_read``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.tools import ToolException

from toolloop_lab import echo_tool, file_read_tool


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("fine")
    (root / "sub" / "in.txt").write_text("inner")
    (tmp_path / "data-evil").mkdir()
    (tmp_path / "data-evil" / "in.txt").write_text("secret")
    (tmp_path / "outside.txt").write_text("outside")
    os.symlink(tmp_path / "outside.txt", root / "link_out")
    os.symlink(root / "ok.txt", root / "link_in")
    os.symlink(tmp_path, root / "dirlink")
    os.mkfifo(root / "fifo")
    (root / "bin.dat").write_bytes(b"a\x00b")
    (root / "latin.txt").write_bytes("café".encode("latin-1"))
    (root / "big.txt").write_text("x" * 11)
    return root


def test_echo_returns_its_text() -> None:
    assert echo_tool().invoke({"text": "same <text>"}) == "same <text>"


@pytest.mark.parametrize(
    ("path", "content"),
    [("ok.txt", "fine"), ("sub/in.txt", "inner"), ("sub/./in.txt", "inner"), ("link_in", "fine")],
)
def test_file_read_reads_text_under_the_root(tree: Path, path: str, content: str) -> None:
    assert file_read_tool(tree, max_bytes=10).invoke({"path": path}) == content


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("link_out", "points outside the readable directory"),
        ("dirlink/outside.txt", "points outside the readable directory"),
        ("../data-evil/in.txt", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:/x", "absolute paths are not allowed"),
        ("fifo", "is not a regular file"),
        ("sub", "is not a regular file"),
        ("bin.dat", "is a binary file"),
        ("latin.txt", "is not UTF-8 text"),
        ("big.txt", "is 11 bytes; the limit is 10"),
        ("nope.txt", "no such file"),
        ("a\x00b", "NUL byte"),
        ("", "non-empty relative path"),
    ],
)
def test_file_read_refuses(tree: Path, path: str, message: str) -> None:
    with pytest.raises(ToolException, match=message):
        file_read_tool(tree, max_bytes=10).invoke({"path": path})


def test_a_directory_swapped_for_a_symlink_after_the_check_is_caught(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Swap sub/ for a symlink to a directory outside the root between the path check and
    # the open: stat and open both follow the swapped path, so only the real path of the
    # opened descriptor shows the escape.
    real_stat = os.stat
    outside = tree.parent / "data-evil"

    def swapping_stat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        if str(target).endswith("sub/in.txt") and not (tree / "sub").is_symlink():
            (tree / "sub").rename(tree / "sub_before")
            os.symlink(outside, tree / "sub")
        return real_stat(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", swapping_stat)
    reader = file_read_tool(tree)
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("the OS does not name open descriptors")
    with pytest.raises(ToolException, match="changed while it was being opened"):
        reader.invoke({"path": "sub/in.txt"})
    assert (tree / "sub").is_symlink()  # the swap really happened
