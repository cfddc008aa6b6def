"""JSONL traces: one event per line, written as it happens, read back as typed events.

Why this shape:

* **One ``os.write`` per line on an ``O_APPEND`` descriptor.** The kernel positions every
  append at the end of the file atomically, so two runs writing to the same file never
  interleave inside a line, and nothing sits in a user-space buffer when the kernel dies.
* **No ``fsync`` by default.** Each ``os.write`` hands the line to the kernel at once, and
  the page cache survives the process: a killed kernel (even ``SIGKILL``) still leaves every
  completed round on disk. ``fsync`` only adds protection against losing the *machine*
  (power cut, OS crash) and costs a disk flush, milliseconds on ordinary disks, several
  times the cost of a whole round of an instant model. ``TraceWriter(path, fsync=True)``
  turns it on: the file is then synced at every round boundary (round start, synthesis,
  finish, failure) and on close, never on every event.
* **ASCII JSON**: ``Event.to_dict()`` is JSON-safe (pydantic serialises it), and lone
  surrogates survive as ``\\udXXX`` escapes; a line never contains a raw newline. Surrogate
  halves written as two code points are kept apart (:mod:`toolloop_lab._support.jsonl`),
  so every string reads back as exactly the same code points.
* **The reader forgives the tail**: lines are split on ``\\n`` only
  (:mod:`toolloop_lab._support.jsonl`) and each is parsed strictly by
  :func:`toolloop_lab.events.parse_event`; a partial last line (the writer was killed
  mid-run) is skipped and reported, as is any line that is
  not an event, so one bad write never hides the rest of a trace.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Final

from pydantic import ValidationError

from toolloop_lab._support.fields import dotted, where_message
from toolloop_lab._support.jsonl import dump_line, read_lines
from toolloop_lab.errors import TraceError
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    RoundStarted,
    SynthesisStarted,
    by_run,
    parse_event,
    run_ids,
    select_run,
    top_level_run_ids,
)

_log = logging.getLogger("toolloop_lab.trace")

_SYNC_ON: Final = (RoundStarted, SynthesisStarted, LoopFinished, LoopFailed)
"""Events that close a round: with ``fsync=True`` the file is synced after writing them."""

_SNIPPET: Final = 200


def encode_event(event: Event) -> bytes:
    """One trace line for ``event``: ASCII JSON plus a newline.

    :meth:`Event.to_json` writes the line in one pass; only a line holding non-ASCII text
    goes through ``json.dumps`` as well, to escape it. Text with surrogate code points
    cannot be UTF-8: such an event is written by
    :func:`~toolloop_lab._support.jsonl.dump_line`, which keeps surrogate halves apart."""
    raw = event.to_json()
    if raw is not None and raw.isascii():
        return raw + b"\n"
    if raw is None:
        text = dump_line(event.to_dict(), sort_keys=False, compact=True)
    else:  # no surrogate code point: pydantic wrote it, so escaping is all that is left
        text = json.dumps(json.loads(raw), allow_nan=False, separators=(",", ":"))
    return (text + "\n").encode("ascii")


class TraceWriter:
    """An observer that appends every event to a JSONL file as it happens.

    Use it as ``LLMAgent(..., observers=[TraceWriter(path)])`` or as a context manager.
    The file is opened once with ``O_APPEND``; every event is one ``os.write``, which
    survives a killed process. ``fsync=True`` also syncs at every round boundary and on
    close, for traces that must survive losing the machine (see the module notes).
    """

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self.lines = 0
        """Lines written by this writer."""
        self._lock = threading.Lock()
        self._fd: int | None = os.open(
            self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644
        )
        self._terminate_partial_line()

    def _terminate_partial_line(self) -> None:
        """If a killed writer left a line without its newline, end it before appending."""
        assert self._fd is not None
        try:
            size = os.fstat(self._fd).st_size
            if size == 0:
                return
            with open(self.path, "rb") as handle:
                handle.seek(size - 1)
                last = handle.read(1)
        except OSError:
            return
        if last and last != b"\n":
            os.write(self._fd, b"\n")

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._fd is None

    def __call__(self, event: Event) -> None:
        """Append one event (thread-safe; a closed writer raises ``ValueError``)."""
        data = encode_event(event)
        with self._lock:
            fd = self._fd
            if fd is None:
                raise ValueError(f"trace writer for {self.path} is closed")
            written = os.write(fd, data)
            if written != len(data):  # only on a full disk or a signal; never silently short
                _log.warning("short write to %s (%d of %d bytes)", self.path, written, len(data))
                rest = memoryview(data)[written:]
                while rest:
                    rest = rest[os.write(fd, rest) :]
            self.lines += 1
            if self.fsync and isinstance(event, _SYNC_ON):
                os.fsync(fd)

    def close(self) -> None:
        """Close the file (syncing it first with ``fsync=True``); safe to call twice."""
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            try:
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"TraceWriter({str(self.path)!r}, {state}, lines={self.lines})"


def write_trace(path: str | os.PathLike[str], events: Iterable[Event]) -> Path:
    """Append a whole event stream (``result.events``, say) to ``path``; returns the path."""
    with TraceWriter(path) as writer:
        for event in events:
            writer(event)
    return writer.path


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line the reader could not turn into an event, and why."""

    number: int
    """1-based line number."""
    reason: str
    """Why, in words (for people)."""
    text: str
    """The start of the line (at most 200 characters)."""
    problem: str = "partial_last_line"
    """Why, as a code (for programs): ``partial_last_line``, ``json_invalid`` or the
    check that failed (``int_type``, ``literal_error``, ``finite_number``, ``missing``...)."""
    field: str | None = None
    """The event field that failed its check (``tool_dispatch.status``), if one did."""
    run_id: str | None = None
    """The run the line names, when it is a JSON object with a text ``run_id`` (so a
    damaged line can be told apart from the lines of other runs); else ``None``."""


@dataclass(frozen=True, slots=True)
class TraceRead:
    """What :func:`read_trace` found: the events, and every line it had to skip."""

    path: Path
    events: tuple[Event, ...]
    skipped: tuple[SkippedLine, ...] = ()
    partial_line: str | None = None
    """The unfinished last line (the writer was killed mid-write), if there was one."""
    lines: tuple[int, ...] = ()
    """The 1-based line number of each event, in the order of ``events`` (a reader
    built by hand may leave it empty: then no event's line is known)."""

    @property
    def run_ids(self) -> tuple[str, ...]:
        """The runs in the trace, in the order they started."""
        return run_ids(self.events)

    @property
    def runs(self) -> Mapping[str, tuple[Event, ...]]:
        """Every run in the trace: its id to its events, the runs in the order they
        started (a cell run twice, a sub-agent after the run that called it); read-only,
        worked out on each read."""
        return by_run(self.events)

    @property
    def top_level_run_ids(self) -> tuple[str, ...]:
        """The runs nothing else in the trace started, in order (a sub-agent called as a
        tool is a run of its own, with a ``parent_run_id``: it is left out here)."""
        return top_level_run_ids(self.events)

    def run(self, run_id: str | None = None) -> tuple[Event, ...]:
        """The events of one run: ``run_id``'s, by default the newest top-level run (the
        rule of :func:`~toolloop_lab.events.select_run`); an empty trace gives ``()``, and
        a run it does not hold raises :class:`~toolloop_lab.errors.UnknownRunError`."""
        return select_run(self.events, run_id, where=repr(str(self.path)))


def read_trace(path: str | os.PathLike[str]) -> TraceRead:
    """Read a JSONL trace back into typed events.

    A partial last line is skipped and reported in ``partial_line`` (and ``skipped``);
    other unreadable lines are skipped and reported in ``skipped``. Raises
    :class:`TraceError` when the file is missing or holds no event at all but has lines
    that are not events (it is not a toolloop_lab trace).
    """
    file = Path(path)
    try:
        read = read_lines(file, forgiving=True)
    except OSError as exc:
        raise TraceError(f"cannot read trace {str(file)!r}: {exc.strerror or exc}") from exc
    events: list[Event] = []
    numbers: list[int] = []
    skipped: list[SkippedLine] = []
    for line in read.lines:
        try:
            events.append(parse_event(line.data))
        except ValidationError as exc:
            skipped.append(_skipped(line.number, exc, line.data))
        else:
            numbers.append(line.number)
    partial: str | None = None
    if read.partial is not None:
        partial = read.partial.data.decode("utf-8", "replace")
        skipped.append(
            SkippedLine(read.partial.number, "partial last line", _snippet(read.partial.data))
        )
    if not events and any(s.reason != "partial last line" for s in skipped):
        raise TraceError(f"{str(file)!r} is not a toolloop_lab trace: {skipped[0].reason}")
    return TraceRead(file, tuple(events), tuple(skipped), partial, tuple(numbers))


def _skipped(number: int, exc: ValidationError, data: bytes) -> SkippedLine:
    """The first problem pydantic found: where, what, and in words."""
    first = exc.errors()[0]
    where = dotted(first["loc"]) or None
    if first["type"] == "json_invalid":
        reason = f"not JSON: {first['msg']}"
    else:
        reason = f"not an event: {where_message(first['loc'], first['msg'])}"
    return SkippedLine(number, reason, _snippet(data), first["type"], where, _run_id(data))


def _run_id(data: bytes) -> str | None:
    """The ``run_id`` a skipped line names, if it is a JSON object naming one."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    run_id = value.get("run_id") if isinstance(value, dict) else None
    return run_id if isinstance(run_id, str) else None


def _snippet(line: bytes) -> str:
    return line[:_SNIPPET].decode("utf-8", "replace")
