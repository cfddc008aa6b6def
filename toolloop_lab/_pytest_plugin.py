"""The pytest plugin: a test records a chat model once and replays it offline after.

Registered through the ``pytest11`` entry point, so installing the package is enough. Its
fixture, ``toolloop_recording``, wraps a chat model: ``toolloop_recording.model(make)``
is a :class:`~toolloop_lab.RecordingChatModel` of ``make()`` while recording, and a strict
:class:`~toolloop_lab.ReplayChatModel` of the test's recording after (``make`` is not even
called: no key, no network). It works wherever a chat model does: ``LLMAgent``, LangChain's
``create_agent``, a LangGraph graph, a run watched through the bridge.

pytest-recording's conventions: ``--record-mode=none`` (the default: replay only; a
missing recording fails with the command that records it), ``once`` (record what is
missing), ``rewrite`` (record again); ``new_episodes`` reads as ``once`` and ``all`` as
``rewrite``. Recordings sit beside the test file, in ``recordings/<module>/<test>.jsonl``.
When pytest-recording is installed it owns ``--record-mode`` and both plugins read that
one option. ``toolloop_recording.verify(run, checks)`` judges the run
(:func:`toolloop_lab.checks.verify`); while recording it keeps the run's events
(``<test>.trace.jsonl``) and its checks (``<test>.checks.json``, for ``toolloop-lab
check``) beside the recording, and after that a failed check shows the run round by round
against the recorded one. A replay that leaves its recording (a tool's output changed, a
prompt) fails with the request message that changed, that diff, and the command that
records the test again.

Nothing heavy is imported until a test asks for the fixture: pytest loads this module in
every session of every project that has the package installed.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest
from _pytest._code.code import ExceptionRepr

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from toolloop_lab.checks import CheckReport

RECORD_MODES: Final = ("once", "new_episodes", "none", "all", "rewrite")
"""pytest-recording's record modes (the same choices whichever plugin owns the option)."""
RECORDINGS_DIR: Final = "recordings"
"""The folder beside a test file that holds its module's recordings."""
_USED: Final = pytest.StashKey[list["RecordedTest"]]()


def _recording_plugin_will_load(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording is (or is about to be) registered: it adds
    ``--record-mode`` unconditionally, so this plugin must not add it too."""
    if pluginmanager.has_plugin("recording") or pluginmanager.has_plugin("pytest_recording.plugin"):
        return True
    if pluginmanager.is_blocked("recording") or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(
        ep.value.split(":")[0] == "pytest_recording.plugin"
        for ep in importlib.metadata.entry_points(group="pytest11")
    )


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    if _recording_plugin_will_load(pluginmanager):
        return  # pytest-recording's --record-mode is the one both read
    group = parser.getgroup("toolloop_lab", "toolloop_lab: recorded chat models")
    with contextlib.suppress(ValueError):  # another plugin added it first: read theirs
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=RECORD_MODES,
            help='none (the default): replay recorded chat models, offline; "once": record '
            'what is missing; "rewrite": record again (as pytest-recording reads it).',
        )


def record_mode(config: pytest.Config) -> str:
    """The record mode in force (``none`` unless ``--record-mode`` says otherwise)."""
    try:
        mode = config.getoption("record_mode")
    except ValueError:
        mode = None
    return str(mode or "none")


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "test"


@dataclass
class RecordedTest:
    """One test's recordings: what ``toolloop_recording`` is."""

    node: pytest.Item
    mode: str
    folder: Path
    stem: str
    models: int = 0
    recording_now: list[Path] = field(default_factory=list)
    replaying: list[Path] = field(default_factory=list)

    @property
    def path(self) -> Path:
        """The test's (first) recording."""
        return self.folder / f"{self.stem}.jsonl"

    @property
    def record_command(self) -> str:
        """The command that records this test."""
        return f"pytest {self.node.nodeid} --record-mode=once"

    @property
    def rewrite_command(self) -> str:
        return f"pytest {self.node.nodeid} --record-mode=rewrite"

    def _path_of(self, index: int) -> Path:
        return self.path if index == 1 else self.folder / f"{self.stem}.{index}.jsonl"

    def model(self, make: Callable[[], BaseChatModel] | BaseChatModel) -> BaseChatModel:
        """``make()`` (a chat model, or what makes one) recorded to this test's recording,
        or the recording replayed strictly, offline, without calling ``make``."""
        from langchain_core.language_models import BaseChatModel

        from toolloop_lab._replay.chat_models import RecordingChatModel, ReplayChatModel
        from toolloop_lab.checks._saved import checks_path

        self.models += 1
        path = self._path_of(self.models)
        rewrite = self.mode in ("rewrite", "all")
        if path.exists() and not rewrite:
            self.replaying.append(path)
            return ReplayChatModel.from_file(path)
        if self.mode == "none":
            where = os.path.relpath(path)
            pytest.fail(
                f"no recording {where} to replay (--record-mode=none): record it once, "
                f"against the real model, with\n    {self.record_command}",
                pytrace=False,
            )
        for stale in (path, _trace_path(path), checks_path(path)):
            stale.unlink(missing_ok=True)
        model = make if isinstance(make, BaseChatModel) else make()
        if not isinstance(model, BaseChatModel):
            raise TypeError(
                f"toolloop_recording.model() takes a chat model or a function making one, "
                f"and that made a {type(model).__name__}"
            )
        self.recording_now.append(path)
        return RecordingChatModel(model, path)

    def verify(self, run: Any, checks: Any, *, run_id: str | None = None) -> CheckReport:
        """:func:`toolloop_lab.checks.verify`, and: while recording, keep the run's events
        and its checks beside the recording; when replaying, a failed check shows the run
        round by round against the recorded one."""
        from toolloop_lab._replay.recorded_run import ReplaySettings
        from toolloop_lab._trace import write_trace
        from toolloop_lab.checks._report import evaluate, failed_error
        from toolloop_lab.checks._saved import save_checks

        report = evaluate(run, checks, run_id=run_id)
        if self.recording_now:
            path = self.recording_now[0]
            write_trace(_trace_path(path), report.run.events)
            saveable = [c for c in (r.check for r in report.results) if c.to_json() is not None]
            if saveable:
                settings = ReplaySettings.of_events(report.run.events)
                save_checks(path, saveable, settings=settings)
        if report.passed:
            return report
        raise failed_error(report, diff=self._diff(report.run.events))

    def _diff(self, events: Any) -> str | None:
        """The run round by round against the recorded run, when one is kept."""
        if not self.replaying:
            return None
        trace = _trace_path(self.replaying[0])
        if not trace.exists():
            return None
        from toolloop_lab._replay.compare import compare

        try:
            comparison = compare(trace, list(events))
        except Exception:  # noqa: BLE001 - no diff is better than a second failure
            return None
        if comparison.same:
            return (
                "Every round did what the recorded run did: the checks changed since it was "
                f"recorded (record it again: {self.rewrite_command})."
            )
        return comparison.summary


def _trace_path(recording: Path) -> Path:
    return recording.with_name(recording.name.removesuffix(".jsonl") + ".trace.jsonl")


@pytest.fixture
def toolloop_recording(request: pytest.FixtureRequest) -> RecordedTest:
    """Record a chat model once, replay it offline after (see the module's docs)::

    def test_triage(toolloop_recording):
        model = toolloop_recording.model(lambda: ChatOpenAI(model="gpt-4o-mini"))
        result = LLMAgent(model, tools).run("Ticket T-7?")
        toolloop_recording.verify(result, [called("lookup_ticket"), max_tool_rounds(3)])
    """
    node = request.node
    module = Path(str(node.path))
    stem = _safe(node.name)
    cls = getattr(node, "cls", None)
    if cls is not None:
        stem = f"{_safe(cls.__name__)}.{stem}"
    folder = module.parent / RECORDINGS_DIR / _safe(module.stem)
    recorded = RecordedTest(node, record_mode(request.config), folder, stem)
    node.stash[_USED] = [recorded]
    return recorded


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A replay that left its recording: say where (the request message that changed),
    show the run round by round against the recorded one, and how to record it again; a
    test that failed while recording keeps no recording (it would replay a failure)."""
    report = yield
    used = item.stash.get(_USED, None)
    if not used or call.when != "call" or not report.failed or call.excinfo is None:
        return report
    recorded = used[0]
    if recorded.recording_now:
        from toolloop_lab.checks._saved import checks_path

        for path in recorded.recording_now:
            for made in (path, _trace_path(path), checks_path(path)):
                made.unlink(missing_ok=True)
        _add_section(
            report,
            "toolloop_lab recording",
            "The test failed while recording, so its recording was not kept: fix it and "
            f"record again ({recorded.record_command}).",
        )
        return report
    text = _left_recording(recorded, call.excinfo.value)
    if text is not None:
        _add_section(report, "toolloop_lab replay", text)
    return report


def _add_section(report: pytest.TestReport, title: str, text: str) -> None:
    longrepr = report.longrepr
    if isinstance(longrepr, ExceptionRepr):
        longrepr.addsection(title, text)
    else:
        report.sections.append((title, text))


def _left_recording(recorded: RecordedTest, error: BaseException) -> str | None:
    """What to say of a replay that left its recording, or ``None`` when it did not."""
    from toolloop_lab.errors import PartialRun, RecordingError

    found: RecordingError | None = None
    partial: PartialRun | None = None
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        exc = stack.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, RecordingError) and found is None:
            found = exc
        if isinstance(exc, PartialRun) and partial is None and exc.events:
            partial = exc
        stack += [exc.__cause__, exc.__context__]
        stack += list(getattr(exc, "exceptions", ()))
    if found is None:
        return None
    where = os.path.relpath(recorded.replaying[0]) if recorded.replaying else "its recording"
    lines = [f"The replay of {where} left the recording: {found}"]
    if partial is not None:
        diff = recorded._diff(partial.events)
        if diff:
            lines += ["", "The run, round by round, against the recorded run (a: recorded):", diff]
    lines += ["", f"If the change is intended, record the test again: {recorded.rewrite_command}"]
    return "\n".join(lines)
