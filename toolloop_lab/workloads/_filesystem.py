"""``FileSystem``: a small in-memory file system with a working directory, as a tool backend.

It is the kind of backend a function-calling benchmark ships: plain methods with plain
arguments, state that later calls depend on (``cd`` changes what ``mv notes.txt archive``
means), and failures as exceptions whose text the model reads (a ``FileSystemError``
becomes an error ``ToolMessage``). :data:`FILE_FUNCTIONS` describes the methods as
JSON-schema function docs in the OpenAI tools format, for
:func:`toolloop_lab._tools.schema.tools_from_schema`.

Paths are POSIX-style, absolute (``/logs/app.log``) or relative to the working directory;
files hold text. Every method holds one lock, so calls from concurrent tool threads never
see half an operation (their order is still whatever the threads make it: use
``AgentConfig(parallel_tool_calls=False)`` when it matters).
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Mapping
from typing import Any, Final


class FileSystemError(Exception):
    """An operation the file system cannot do; its text is what the model reads."""


def function_doc(
    name: str, description: str, properties: Mapping[str, Any], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One function doc in the OpenAI tools format."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": dict(properties),
                "required": list(required),
                "additionalProperties": False,
            },
        },
    }


_PATH: Final = {"type": "string", "minLength": 1}

FILE_FUNCTIONS: Final[tuple[dict[str, Any], ...]] = (
    function_doc("pwd", "Print the working directory.", {}),
    function_doc(
        "ls",
        "List a directory (default: the working directory); directories end with '/'.",
        {"path": {**_PATH, "default": "."}},
    ),
    function_doc("cd", "Change the working directory.", {"folder": _PATH}, ("folder",)),
    function_doc("mkdir", "Create a directory.", {"dir_name": _PATH}, ("dir_name",)),
    function_doc("cat", "Print a file's text.", {"file_name": _PATH}, ("file_name",)),
    function_doc(
        "write",
        "Write text to a file, creating it; append=true adds to the end instead.",
        {
            "file_name": _PATH,
            "content": {"type": "string"},
            "append": {"type": "boolean", "default": False},
        },
        ("file_name", "content"),
    ),
    function_doc(
        "mv",
        "Move or rename a file or directory; into it when the destination is a directory.",
        {"source": _PATH, "destination": _PATH},
        ("source", "destination"),
    ),
    function_doc("rm", "Remove a file or an empty directory.", {"name": _PATH}, ("name",)),
    function_doc(
        "grep",
        "The lines of a file that contain the pattern (plain text, case-sensitive).",
        {"file_name": _PATH, "pattern": {"type": "string", "minLength": 1}},
        ("file_name", "pattern"),
    ),
)
"""The docs of every public method, as a model is given them."""


class FileSystem:
    """An in-memory file system; ``files`` seeds it (path → text, parents made as needed)."""

    def __init__(self, files: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self._dirs: set[str] = {"/"}
        self._files: dict[str, str] = {}
        self._cwd = "/"
        for path, text in (files or {}).items():
            full = self._resolve(path)
            self._make_parents(full)
            self._files[full] = text

    # -- paths ------------------------------------------------------------------------
    def _resolve(self, path: str) -> str:
        full = posixpath.normpath(posixpath.join(self._cwd, path))
        return "/" + full.lstrip("/")

    def _make_parents(self, full: str) -> None:
        parent = posixpath.dirname(full)
        while parent not in self._dirs:
            self._dirs.add(parent)
            parent = posixpath.dirname(parent)

    def _dir(self, path: str) -> str:
        full = self._resolve(path)
        if full not in self._dirs:
            kind = "a file, not a directory" if full in self._files else "no such directory"
            raise FileSystemError(f"{path}: {kind}")
        return full

    def _children(self, full: str) -> list[str]:
        prefix = full.rstrip("/") + "/"
        names = {
            p[len(prefix) :].split("/", 1)[0] + ("/" if p in self._dirs else "")
            for p in (*self._dirs, *self._files)
            if p.startswith(prefix) and p != full and "/" not in p[len(prefix) :]
        }
        return sorted(names)

    # -- the methods a model calls ------------------------------------------------------
    def pwd(self) -> str:
        with self._lock:
            return self._cwd

    def ls(self, path: str = ".") -> list[str]:
        with self._lock:
            return self._children(self._dir(path))

    def cd(self, folder: str) -> str:
        with self._lock:
            self._cwd = self._dir(folder)
            return self._cwd

    def mkdir(self, dir_name: str) -> str:
        with self._lock:
            full = self._resolve(dir_name)
            if full in self._dirs or full in self._files:
                raise FileSystemError(f"{dir_name}: already exists")
            self._dir(posixpath.dirname(full))
            self._dirs.add(full)
            return f"created {full}/"

    def cat(self, file_name: str) -> str:
        with self._lock:
            full = self._resolve(file_name)
            if full not in self._files:
                kind = "a directory" if full in self._dirs else "no such file"
                raise FileSystemError(f"{file_name}: {kind}")
            return self._files[full]

    def write(self, file_name: str, content: str, /, append: bool = False) -> str:
        with self._lock:
            full = self._resolve(file_name)
            if full in self._dirs:
                raise FileSystemError(f"{file_name}: a directory")
            self._dir(posixpath.dirname(full))
            text = self._files.get(full, "") + content if append else content
            self._files[full] = text
            return f"{full}: {len(text)} characters"

    def mv(self, source: str, destination: str, /) -> str:
        with self._lock:
            src = self._resolve(source)
            if src not in self._files and src not in self._dirs:
                raise FileSystemError(f"{source}: no such file or directory")
            if src == "/":
                raise FileSystemError("/: cannot move the root")
            dst = self._resolve(destination)
            if dst in self._dirs:
                dst = posixpath.join(dst, posixpath.basename(src))
            if dst in self._files or dst in self._dirs:
                raise FileSystemError(f"{destination}: already exists")
            if dst.startswith(src.rstrip("/") + "/"):
                raise FileSystemError(f"{destination}: inside {source}")
            self._dir(posixpath.dirname(dst))
            if src in self._files:
                self._files[dst] = self._files.pop(src)
            else:
                self._move_dir(src, dst)
            if self._cwd == src or self._cwd.startswith(src + "/"):
                self._cwd = dst + self._cwd[len(src) :]
            return f"moved {src} to {dst}"

    def _move_dir(self, src: str, dst: str) -> None:
        inside = src + "/"
        self._dirs = {
            dst + d[len(src) :] if d == src or d.startswith(inside) else d for d in self._dirs
        }
        self._files = {
            (dst + p[len(src) :] if p.startswith(inside) else p): text
            for p, text in self._files.items()
        }

    def rm(self, name: str) -> str:
        with self._lock:
            full = self._resolve(name)
            if full in self._files:
                del self._files[full]
            elif full in self._dirs and full != "/":
                if self._children(full):
                    raise FileSystemError(f"{name}: directory not empty")
                if self._cwd == full:
                    raise FileSystemError(f"{name}: is the working directory")
                self._dirs.discard(full)
            else:
                raise FileSystemError(f"{name}: no such file or directory")
            return f"removed {full}"

    def grep(self, file_name: str, pattern: str) -> list[str]:
        text = self.cat(file_name)
        return [line for line in text.splitlines() if pattern in line]

    # -- for tests and notebooks ------------------------------------------------------
    def snapshot(self) -> dict[str, str]:
        """Every file (absolute path → text), sorted by path."""
        with self._lock:
            return dict(sorted(self._files.items()))
