"""Virtual environments the slow tests need, built once per machine and reused.

The Binder test and the Phoenix test each need an environment of their own (what
``binder/requirements.txt`` installs; a Phoenix server, which must stay out of the test
environment). Building one takes a minute or more, so it is built once, outside the
checkout, and found again by a key: a hash of its requirements and of the interpreter
that builds it. A change to the requirements, or another Python, makes a new one; a clean
clone of the repository finds the one an earlier run built.

Where: ``$TOOLLOOP_VENV_CACHE`` if set, else ``$XDG_CACHE_HOME/toolloop_lab/venvs``, else
``~/.cache/toolloop_lab/venvs``. Delete a folder there to have it built again.

An environment is used only once its build finished (a ``.complete`` file, holding what
``pip freeze`` listed, is written last); a build cut short is removed and done again.
Runs in parallel (two worktrees, say) wait for each other's build under a file lock,
for a bounded time.

A test that must install something of its own into such an environment takes a copy
first (:func:`clone_venv`, hard links, a second or two) and installs there: the cached
environment itself is never written to after its build.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import time
import venv
from collections.abc import Iterator, Sequence
from pathlib import Path

BUILD_VERSION = "1"
"""Part of every key: raise it when the way environments are built changes."""
LOCK_POLL_S = 1.0


class VenvError(RuntimeError):
    """An environment could not be built or copied; the message says why."""


def cache_root() -> Path:
    """The folder the environments live in (see the module's docstring)."""
    if given := os.environ.get("TOOLLOOP_VENV_CACHE"):
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "toolloop_lab" / "venvs"


def venv_python(prefix: Path) -> Path:
    return prefix / ("Scripts" if os.name == "nt" else "bin") / "python"


def clean_env(prefix: Path | None = None, **extra: str) -> dict[str, str]:
    """This process's environment without what would make another Python see our packages
    (and, given an environment's ``prefix``, with that environment first on ``PATH``)."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if prefix is not None:
        env["PATH"] = os.pathsep.join([str(venv_python(prefix).parent), env.get("PATH", "")])
        env["VIRTUAL_ENV"] = str(prefix)
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return {**env, **extra}


def key_of(requirements: Sequence[str]) -> str:
    """The key of an environment: its requirements, this interpreter, the build's version."""
    facts = [
        BUILD_VERSION,
        sys.version,
        sys.base_prefix,
        platform.machine(),
        *sorted(r.strip() for r in requirements if r.strip()),
    ]
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def requirement_lines(path: Path) -> list[str]:
    """A requirements file's requirements, comments and blank lines left out."""
    lines = (ln.split("#", 1)[0].strip() for ln in path.read_text("utf-8").splitlines())
    return [ln for ln in lines if ln]


@contextlib.contextmanager
def _locked(lock: Path, timeout: float) -> Iterator[None]:
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise VenvError(f"{lock} stayed locked for {timeout:.0f} s") from None
                time.sleep(LOCK_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(cmd: list[str], *, env: dict[str, str], timeout: float, cwd: Path) -> str:
    try:
        done = subprocess.run(
            cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise VenvError(f"{' '.join(cmd)} took over {timeout:.0f} s") from exc
    if done.returncode != 0:
        raise VenvError(
            f"{' '.join(cmd)} exited {done.returncode}\n"
            f"--- stdout ---\n{done.stdout[-4_000:]}\n--- stderr ---\n{done.stderr[-4_000:]}"
        )
    return done.stdout


def cached_venv(name: str, requirements: Sequence[str], *, timeout: float) -> Path:
    """The prefix of an environment with ``requirements`` installed, built if no earlier
    run built it. Raises :class:`VenvError` (with pip's output) when the build fails."""
    prefix = cache_root() / f"{name}-{key_of(requirements)}"
    done = prefix / ".complete"
    if done.is_file():
        return prefix
    with _locked(prefix.with_name(prefix.name + ".lock"), timeout):
        if done.is_file():  # another run built it while this one waited
            return prefix
        shutil.rmtree(prefix, ignore_errors=True)  # a build cut short
        venv.EnvBuilder(with_pip=True, clear=True).create(prefix)
        python = str(venv_python(prefix))
        env = clean_env(prefix)
        _run(
            [python, "-m", "pip", "install", "--quiet", *requirements],
            env=env,
            timeout=timeout,
            cwd=prefix,
        )
        frozen = _run([python, "-m", "pip", "freeze"], env=env, timeout=120, cwd=prefix)
        done.write_text(frozen, encoding="utf-8")
    return prefix


def clone_venv(source: Path, target: Path, *, timeout: float = 300) -> Path:
    """A copy of the environment at ``source`` at ``target``: hard links where the two are
    on one file system (pip and Python replace files rather than write into them, so the
    source stays as it was), a plain copy elsewhere. Its Python runs as ``target``'s."""
    target.parent.mkdir(parents=True, exist_ok=True)
    link = ["cp", "-a", "--link", str(source), str(target)]
    try:
        _run(link, env=dict(os.environ), timeout=timeout, cwd=target.parent)
    except VenvError:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target, symlinks=True)
    (target / ".complete").unlink(missing_ok=True)
    os.utime(target)  # cp -a kept the source's time; the copy's age is its own
    return target
