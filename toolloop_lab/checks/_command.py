"""``toolloop-lab check PATH...``: replay each recording with the checks saved beside it.

A path is a recording (``triage.jsonl``, whose checks are ``triage.checks.json``), a checks
file, or a folder searched for checks files. Each recording is played back through the loop
(its recorded replies, and its recorded tool results or the agent its checks file names)
and judged by its checks. The report says, per recording, PASS, FAIL with each failed
check's expected, seen and where (and the request message a diverged replay changed), or
ERROR with why it could not be judged; ``--junit-xml`` writes the same as JUnit XML, one
test case per check, for CI systems. Exit status: 0 every check passed, 1 one failed or a
recording could not be judged, 2 bad arguments.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from toolloop_lab._replay.recorded_run import PlayedBack, replay_recording
from toolloop_lab._replay.recording_file import Recording
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.escape import TEXT_CHARS, clip, plain, scrub
from toolloop_lab._support.sync_runner import run_sync
from toolloop_lab.checks._report import CheckReport, evaluate
from toolloop_lab.checks._run import CheckedRun
from toolloop_lab.checks._saved import SUFFIX, checks_path, load_checks, recording_path
from toolloop_lab.errors import (
    ConfigurationError,
    RecordingError,
    ToolLoopLabError,
)
from toolloop_lab.events import select_run


@dataclass(frozen=True, slots=True)
class Case:
    """One recording, judged (``report``), or why it could not be (``error``)."""

    recording: Path
    seconds: float
    report: CheckReport | None = None
    error: str | None = None
    diverged: str | None = None
    """Why the replay left the recording (a changed request, a call past its end)."""

    @property
    def passed(self) -> bool:
        return self.report is not None and self.report.passed and self.diverged is None


def collect(paths: Iterable[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The recordings the paths name, in order, each once; and the paths that name none."""
    found: dict[Path, None] = {}
    problems: list[str] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(path.rglob(f"*{SUFFIX}"))
            if not inside:
                problems.append(f"{path}: no checks file ({'*' + SUFFIX}) in this folder")
            for item in inside:
                found.setdefault(recording_path(item), None)
        elif path.name.endswith(SUFFIX) and path.is_file():
            found.setdefault(recording_path(path), None)
        elif path.is_file():
            found.setdefault(path, None)
        else:
            problems.append(f"{path}: no such file or folder")
    return list(found), problems


def agent_factory(spec: str) -> Callable[[Any], Any]:
    """The function ``module:function`` names (the current folder importable first)."""
    module_name, _, name = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"agent {spec!r}: cannot import {module_name} ({exc})") from None
    found = getattr(module, name, None)
    if not callable(found):
        raise ConfigurationError(f"agent {spec!r}: {module_name} has no function {name}")
    return found  # type: ignore[no-any-return]


def _diverged(played: PlayedBack) -> str | None:
    """Why the replay left the recording, when it did."""
    error: BaseException | None = played.run.error
    while error is not None:
        if isinstance(error, RecordingError):
            return f"the replay left the recording: {describe(error)}"
        error = error.__cause__
    return None


def judge_recording(recording: Path, agent: str | None = None) -> Case:
    """Replay ``recording`` and judge it by its saved checks (``agent``: ``module:function``
    overriding the one they name)."""
    started = time.perf_counter()

    def stopped(why: str) -> Case:
        return Case(recording, time.perf_counter() - started, error=why)

    checks_file = checks_path(recording)
    if not checks_file.exists():
        return stopped(f"no checks saved beside it (looked for {checks_file.name})")
    try:
        saved = load_checks(checks_file)
        rec = Recording.from_file(recording)
        spec = agent or saved.agent
        make = agent_factory(spec) if spec else None
        played = run_sync(lambda: replay_recording(rec, saved.settings, make_agent=make))
    except (ToolLoopLabError, OSError) as exc:
        return stopped(describe(exc))
    events = played.run.events
    if not events:
        return stopped("the replay made no events")
    if played.unused and played.run.result is not None:
        return stopped(
            f"it holds {played.unused} more model call(s) than its run made (several runs "
            "recorded in one file cannot be replayed as one)"
        )
    source = f"recording {clip(str(recording), TEXT_CHARS)!r}, played back"
    run = CheckedRun.of(select_run(events), source)
    report = evaluate(run, saved.checks)
    return Case(recording, time.perf_counter() - started, report=report, diverged=_diverged(played))


def _indented(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


def report_text(cases: Sequence[Case]) -> str:
    """The readable report: per recording PASS, FAIL with the failed checks' evidence, or
    ERROR with why; then the counts."""
    lines: list[str] = []
    for case in cases:
        name = plain(str(case.recording))
        if case.report is None:
            lines.append(f"ERROR {name}: {plain(case.error)}")
            continue
        report = case.report
        if case.passed:
            lines.append(f"PASS  {name} ({len(report.results)} checks; {plain(report.run.said)})")
            continue
        lines.append(f"FAIL  {name}")
        if case.diverged:
            lines.append(_indented(plain(case.diverged)))
        lines.append(_indented(report.text(failures_only=True)))
    passed = sum(1 for c in cases if c.passed)
    errors = sum(1 for c in cases if c.report is None)
    failed = len(cases) - passed - errors
    said = f"{len(cases)} recording{'s' * (len(cases) != 1)}: {passed} passed, {failed} failed"
    lines += ["", said + (f", {errors} could not be judged" if errors else "")]
    return "\n".join(lines)


def _xml_text(value: str) -> str:
    """Text XML 1.0 can hold: no control characters but tab and newline, no surrogates."""
    return "".join(
        ch if ch in "\t\n\r" or ord(ch) >= 0x20 else f"\\x{ord(ch):02x}" for ch in scrub(value)
    )


def _case_name(recording: Path) -> str:
    parts = recording.with_suffix("").parts
    return ".".join(p for p in parts if p not in ("", ".", "/"))


def junit_xml(cases: Sequence[Case], *, when: datetime | None = None) -> bytes:
    """The cases as JUnit XML (Apache Ant's schema, which CI systems read): a
    ``testsuite`` per recording, a ``testcase`` per check (``failure`` when it failed), a
    ``replay`` test case with an ``error`` for a recording that could not be judged, and a
    ``replay`` failure for a replay that left its recording."""
    stamp = (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")
    host = _xml_text(socket.gethostname() or "localhost")
    root = ET.Element("testsuites", name="toolloop-lab check")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    total_time = 0.0
    for case in cases:
        suite = ET.SubElement(root, "testsuite", name=_xml_text(str(case.recording)))
        ET.SubElement(suite, "properties")
        counts = {"tests": 0, "failures": 0, "errors": 0}
        classname = _xml_text(_case_name(case.recording))
        if case.report is None:
            item = ET.SubElement(suite, "testcase", name="replay", classname=classname)
            item.set("time", f"{case.seconds:.3f}")
            error = ET.SubElement(item, "error", type="ReplayError")
            error.set("message", _xml_text(clip(case.error or "", TEXT_CHARS)))
            error.text = _xml_text(case.error or "")
            counts["tests"] += 1
            counts["errors"] += 1
        else:
            results = case.report.results
            each = case.seconds / max(len(results) + (1 if case.diverged else 0), 1)
            if case.diverged:
                item = ET.SubElement(suite, "testcase", name="replay", classname=classname)
                item.set("time", f"{each:.3f}")
                failure = ET.SubElement(item, "failure", type="ReplayDiverged")
                failure.set("message", _xml_text(clip(case.diverged, TEXT_CHARS)))
                failure.text = _xml_text(case.diverged)
                counts["tests"] += 1
                counts["failures"] += 1
            for got in results:
                item = ET.SubElement(
                    suite, "testcase", name=_xml_text(got.description), classname=classname
                )
                item.set("time", f"{each:.3f}")
                counts["tests"] += 1
                if not got.passed:
                    failure = ET.SubElement(item, "failure", type="ChecksFailed")
                    failure.set("message", _xml_text(clip(f"expected {got.expected}", TEXT_CHARS)))
                    failure.text = _xml_text(str(got))
                    counts["failures"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
        suite.set("skipped", "0")
        suite.set("time", f"{case.seconds:.3f}")
        suite.set("timestamp", stamp)
        suite.set("hostname", host)
        ET.SubElement(suite, "system-out")
        ET.SubElement(suite, "system-err")
        total_time += case.seconds
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("time", f"{total_time:.3f}")
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body


def run_command(
    paths: Sequence[str],
    *,
    junit: Path | None = None,
    agent: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """What ``toolloop-lab check`` does; returns the exit status."""
    out = out or sys.stdout
    err = err or sys.stderr
    recordings, problems = collect(paths)
    if problems or not recordings:
        for problem in problems or ["no recording to check"]:
            print(f"toolloop-lab check: error: {problem}", file=err)
        return 2
    cases = [judge_recording(path, agent) for path in recordings]
    print(report_text(cases), file=out)
    if junit is not None:
        try:
            junit.write_bytes(junit_xml(cases))
        except OSError as exc:
            print(f"toolloop-lab check: error: --junit-xml {junit}: {exc.strerror}", file=err)
            return 2
    return 0 if all(c.passed for c in cases) else 1
