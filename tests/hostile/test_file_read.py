"""The shipped ``file_read`` tool, confined to one root, against every way out of it.

The layout mirrors the classic mistakes: the root is ``<tmp>/x/data``; a sibling
``<tmp>/x/data-evil`` shares its name as a prefix; ``<tmp>/x/outside`` holds a secret. Each
case runs through the real loop and asserts the exact error ``ToolMessage`` (status
``error``, ``error_reason`` ``tool_error``, the refusal text), and that the secret appears
in no message and no event, whatever was asked. FIFOs must not block: a blocked read would
show up as a ``timeout`` error (the generous per-tool timeout is only a safety net).

Related cases elsewhere: the tool called directly, and a directory swapped for a symlink
between the check and the open (tests/tools/test_builtin_tools.py).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hostilekit import SAFETY_S, check_result, dispatched, dumped, only, tool_messages
from langchain_core.messages import ToolMessage
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopResult, file_read_tool

SECRET = "TOP-SECRET-0xC0FFEE"
LIMIT = 64


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """The root (returned) and everything around it; see the module doc."""
    base = tmp_path / "x"
    root, evil, outside = base / "data", base / "data-evil", base / "outside"
    for folder in (root / "sub", evil, outside):
        folder.mkdir(parents=True)
    (root / "ok.txt").write_text("fine")
    (root / "sub" / "in.txt").write_text("inner")
    (root / "big.txt").write_text("x" * (LIMIT + 1))
    (root / "bin.dat").write_bytes(b"ab\x00cd")
    (root / "latin.txt").write_bytes("café".encode("latin-1"))
    (root / "utf16.txt").write_text("hi", encoding="utf-16")
    (root / "swap.txt").write_text("inside")
    os.mkfifo(root / "fifo")
    (evil / "secret.txt").write_text(SECRET)
    (outside / "secret.txt").write_text(SECRET)
    os.mkfifo(outside / "fifo")
    links = {
        "link_file": outside / "secret.txt",
        "link_rel": Path("../outside/secret.txt"),
        "link_dir": outside,
        "link_evil_dir": evil,
        "link_evil_prefix": Path("../data-evil/secret.txt"),
        "link_chain": Path("link_file"),
        "loop_a": Path("loop_b"),
        "loop_b": Path("loop_a"),
        "zero": Path("/dev/zero"),
        "link_fifo_out": outside / "fifo",
        "link_in": Path("ok.txt"),
        "link_root": Path("."),
    }
    for name, target in links.items():
        os.symlink(target, root / name)
    return root


def _refused(message: str) -> str:
    return f"Error: tool 'file_read' raised ToolException: {message}"


async def _read(root: Path, path: Any, **patches: Any) -> tuple[ToolMessage, ToolLoopResult]:
    model = ScriptedChatModel(
        [calls(tool_call("file_read", {"path": path}, "f1")), final("done")], model_name=MODEL
    )
    agent = LLMAgent(
        model, [file_read_tool(root, max_bytes=LIMIT)], AgentConfig(tool_timeout_s=SAFETY_S)
    )
    result = await agent.arun("read it")
    check_result(result)
    message = only(tool_messages(result.messages).values())
    assert SECRET not in dumped(result.events, result.messages)
    assert SECRET not in str(model.calls[-1].messages)  # nor did the model ever see it
    return message, result


# -- every way out, refused -----------------------------------------------------------------

OUTSIDE = "points outside the readable directory"


def _cases(root: Path) -> list[tuple[str, Any, str]]:
    base = root.parent
    secret, evil = base / "outside" / "secret.txt", base / "data-evil" / "secret.txt"
    return [
        # absolute paths
        ("absolute", str(secret), f"absolute paths are not allowed: {str(secret)!r}"),
        ("absolute-sibling", str(evil), f"absolute paths are not allowed: {str(evil)!r}"),
        ("double-slash", "//etc/passwd", "absolute paths are not allowed: '//etc/passwd'"),
        (
            "unc",
            "\\\\server\\share\\x",
            "absolute paths are not allowed: '\\\\\\\\server\\\\share\\\\x'",
        ),
        ("drive", "C:secret.txt", "absolute paths are not allowed: 'C:secret.txt'"),
        # ..
        (
            "dotdot",
            "../outside/secret.txt",
            "'..' is not allowed in paths: '../outside/secret.txt'",
        ),
        (
            "dotdot-sibling",
            "../data-evil/secret.txt",
            "'..' is not allowed in paths: '../data-evil/secret.txt'",
        ),
        (
            "dotdot-inner",
            "sub/../../outside/secret.txt",
            "'..' is not allowed in paths: 'sub/../../outside/secret.txt'",
        ),
        (
            "dotdot-dot",
            "./../outside/secret.txt",
            "'..' is not allowed in paths: './../outside/secret.txt'",
        ),
        ("dotdot-alone", "..", "'..' is not allowed in paths: '..'"),
        # symlinks out: to a file, a directory, the prefix sibling, chains, loops
        ("link-file", "link_file", f"'link_file' {OUTSIDE}"),
        ("link-relative", "link_rel", f"'link_rel' {OUTSIDE}"),
        ("link-dir", "link_dir/secret.txt", f"'link_dir/secret.txt' {OUTSIDE}"),
        ("link-dir-itself", "link_dir", f"'link_dir' {OUTSIDE}"),
        ("link-sibling-dir", "link_evil_dir/secret.txt", f"'link_evil_dir/secret.txt' {OUTSIDE}"),
        ("link-sibling-file", "link_evil_prefix", f"'link_evil_prefix' {OUTSIDE}"),
        ("link-chain", "link_chain", f"'link_chain' {OUTSIDE}"),
        ("link-loop", "loop_a", "cannot resolve 'loop_a': symlink loop or unreadable link"),
        # NUL bytes
        ("nul-suffix", "ok.txt\x00../../outside/secret.txt", "path contains a NUL byte"),
        ("nul-only", "\x00", "path contains a NUL byte"),
        # FIFOs and devices
        ("fifo", "fifo", "'fifo' is not a regular file"),
        ("fifo-outside", "link_fifo_out", f"'link_fifo_out' {OUTSIDE}"),
        ("dev-zero-link", "zero", f"'zero' {OUTSIDE}"),
        # not files
        ("directory", "sub", "'sub' is not a regular file"),
        ("root-itself", ".", "'.' is not a regular file"),
        ("empty", "", "path must be a non-empty relative path"),
        ("missing", "nope.txt", "no such file: 'nope.txt'"),
        # too large, binary
        ("too-large", "big.txt", f"'big.txt' is {LIMIT + 1} bytes; the limit is {LIMIT}"),
        ("binary", "bin.dat", "'bin.dat' is a binary file"),
        ("utf-16", "utf16.txt", "'utf16.txt' is a binary file"),
        ("not-utf-8", "latin.txt", "'latin.txt' is not UTF-8 text"),
    ]


CASE_IDS = [c[0] for c in _cases(Path("/r/x/data"))]


@pytest.mark.parametrize("case", CASE_IDS)
async def test_refused(case: str, tree: Path) -> None:
    (_, path, message) = next(c for c in _cases(tree) if c[0] == case)
    answer, result = await _read(tree, path)
    assert (answer.status, answer.content) == ("error", _refused(message))
    assert dispatched(result.events)["f1"].error_reason == "tool_error"
    assert result.final_response.text == "done"  # the loop goes on


async def test_a_device_node_inside_the_root(tree: Path) -> None:
    try:
        os.mknod(tree / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, OSError):
        pytest.skip("cannot create a device node here")
    answer, _ = await _read(tree, "null")
    assert answer.content == _refused("'null' is not a regular file")


@pytest.mark.parametrize("path", [5, None, ["ok.txt"]], ids=["int", "none", "list"])
async def test_a_path_that_is_not_text(path: Any, tree: Path) -> None:
    answer, result = await _read(tree, path)
    assert answer.status == "error"
    assert answer.content == (
        "Error: invalid arguments for tool 'file_read': path: Input should be a valid string"
    )
    assert dispatched(result.events)["f1"].error_reason == "invalid_arguments"


# -- swaps between the check and the open ---------------------------------------------------


def _swap_after_stat(monkeypatch: pytest.MonkeyPatch, name: str, swap: Any) -> list[bool]:
    """Let ``os.stat`` see the regular file, then swap it before the tool opens it."""
    real_stat = os.stat
    done: list[bool] = []

    def stat_then_swap(target: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        result = real_stat(target, *args, **kwargs)
        # the tool's own check (path resolution stats the file too, earlier)
        if str(target).endswith(name) and kwargs.get("follow_symlinks") is False and not done:
            swap(Path(target))
            done.append(True)
        return result

    monkeypatch.setattr(os, "stat", stat_then_swap)
    return done


async def test_a_file_swapped_for_a_fifo_does_not_block(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def to_fifo(path: Path) -> None:
        path.unlink()
        os.mkfifo(path)

    swapped = _swap_after_stat(monkeypatch, "swap.txt", to_fifo)
    answer, _ = await _read(tree, "swap.txt")
    assert swapped == [True]
    assert answer.content == _refused("'swap.txt' changed while it was being opened")


async def test_a_file_swapped_for_a_symlink_out_is_not_followed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def to_link(path: Path) -> None:
        path.unlink()
        os.symlink(tree.parent / "outside" / "secret.txt", path)

    swapped = _swap_after_stat(monkeypatch, "swap.txt", to_link)
    answer, _ = await _read(tree, "swap.txt")
    assert swapped == [True]
    assert answer.content == _refused("cannot open 'swap.txt': Too many levels of symbolic links")


# -- what stays readable --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("ok.txt", "fine"),
        ("sub/./in.txt", "inner"),
        ("link_in", "fine"),
        ("link_root/ok.txt", "fine"),
    ],
)
async def test_inside_the_root_still_reads(path: str, content: str, tree: Path) -> None:
    answer, _ = await _read(tree, path)
    assert (answer.status, answer.content) == ("success", content)


async def test_every_refusal_in_one_parallel_reply_leaks_nothing(tree: Path) -> None:
    cases = _cases(tree)
    model = ScriptedChatModel(
        [
            calls(
                *(tool_call("file_read", {"path": p}, f"c{i}") for i, (_, p, _) in enumerate(cases))
            ),
            final("done"),
        ],
        model_name=MODEL,
    )
    agent = LLMAgent(
        model, [file_read_tool(tree, max_bytes=LIMIT)], AgentConfig(tool_timeout_s=SAFETY_S)
    )
    result = await agent.arun("read them all")
    check_result(result)
    answers = tool_messages(result.messages)
    assert [answers[f"c{i}"].content for i in range(len(cases))] == [
        _refused(m) for _, _, m in cases
    ]
    assert SECRET not in dumped(result.events, result.messages)
