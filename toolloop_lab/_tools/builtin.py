"""Tools the project ships: ``echo`` and a ``file_read`` confined to one root directory.

``file_read`` never returns content from outside its root: the path is resolved with every
symlink followed and must stay under the resolved root (a path component boundary, so
``/data-evil`` is not inside ``/data``); absolute paths, ``..``, NUL bytes, non-regular
files (FIFOs, devices, directories), files over the size limit and binary files are
refused with a clear message. The file is opened with ``O_NOFOLLOW`` and checked again with
``fstat`` on the open descriptor, so a swap between check and open is caught; where the OS
names an open descriptor's file (``/proc/self/fd`` on Linux), that real path must be under
the root too, which also catches a directory on the way swapped for a symlink.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Final

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from toolloop_lab._support.paths import resolved

DEFAULT_MAX_BYTES: Final = 1_000_000


def _echo(text: str) -> str:
    return text


async def _aecho(text: str) -> str:
    return text


def echo_tool() -> BaseTool:
    """A tool that returns its ``text`` argument unchanged (async: no thread hop)."""
    return StructuredTool.from_function(
        _echo, coroutine=_aecho, name="echo", description="Return the given text unchanged."
    )


def _refuse(message: str) -> ToolException:
    return ToolException(message)


def _opened_path(fd: int) -> Path | None:
    """The real path of an open descriptor, where the OS tells (Linux ``/proc``)."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return None


def _target(root: Path, path: str) -> Path:
    """Where ``path`` leads, every link followed, refused unless it stays inside ``root``."""
    if not isinstance(path, str) or not path:
        raise _refuse("path must be a non-empty relative path")
    if "\x00" in path:
        raise _refuse("path contains a NUL byte")
    pure = PurePosixPath(path)
    if not pure.parts:  # "." or "./": the root directory itself
        raise _refuse(f"{path!r} is not a regular file")
    if pure.is_absolute() or path.startswith(("/", "\\")) or ":" in pure.parts[0]:
        raise _refuse(f"absolute paths are not allowed: {path!r}")
    if ".." in pure.parts:
        raise _refuse(f"'..' is not allowed in paths: {path!r}")
    try:
        target = resolved(root / pure)
    except OSError:
        target = None
    if target is None:
        # an exception would name the real root; the model only needs to know why
        raise _refuse(f"cannot resolve {path!r}: symlink loop or unreadable link")
    if not target.is_relative_to(root):
        raise _refuse(f"{path!r} points outside the readable directory")
    return target


def _read_confined(root: Path, path: str, max_bytes: int) -> str:
    target = _target(root, path)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        st = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        raise _refuse(f"no such file: {path!r}") from None
    except OSError as exc:
        raise _refuse(f"cannot read {path!r}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(f"{path!r} is not a regular file")
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        raise _refuse(f"cannot open {path!r}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        fst = os.fstat(handle.fileno())
        if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise _refuse(f"{path!r} changed while it was being opened")
        opened = _opened_path(handle.fileno())
        if opened is not None and not opened.is_relative_to(root):
            raise _refuse(f"{path!r} changed while it was being opened")
        if fst.st_size > max_bytes:
            raise _refuse(f"{path!r} is {fst.st_size} bytes; the limit is {max_bytes}")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _refuse(f"{path!r} is larger than the limit of {max_bytes} bytes")
    if b"\x00" in data:
        raise _refuse(f"{path!r} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse(f"{path!r} is not UTF-8 text") from None


def file_read_tool(root: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_BYTES) -> BaseTool:
    """A ``file_read(path)`` tool that reads UTF-8 text files under ``root`` only."""
    resolved = Path(root).resolve(strict=True)
    if not resolved.is_dir():
        raise NotADirectoryError(str(resolved))

    def file_read(path: str) -> str:
        return _read_confined(resolved, path, max_bytes)

    return StructuredTool.from_function(
        file_read,
        name="file_read",
        description="Read a UTF-8 text file by its path relative to the project directory.",
    )
