"""From a debugged run to a test in one step: its recording, and checks read off it.

:func:`save_test` writes three files beside each other, in the pytest plugin's layout, so
the same recording serves the written test, the ``toolloop_recording`` fixture and
``toolloop-lab check``::

    tests/test_triage.py                                 the test, for a person to edit
    tests/recordings/test_triage/test_<name>.jsonl       the run's recording
    tests/recordings/test_triage/test_<name>.checks.json its checks, for toolloop-lab check

The checks are what the run did, with headroom on what it spent (:func:`checks_read_off`):
its tool sequence (``called_in_order``), ``no_tool_errors`` when it had none, its outcome,
its tool rounds + 1, its model calls + 1, its tokens and cost x1.5 rounded up. They are a
starting point: the person keeps the ones that say what must stay true.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from typing import Any, Final

from toolloop_lab._replay.from_events import recording_of_events
from toolloop_lab._replay.recorded_run import ReplaySettings
from toolloop_lab._replay.recording_file import append_call
from toolloop_lab._support.fields import shown
from toolloop_lab.checks._base import Check
from toolloop_lab.checks._kinds import (
    called_in_order,
    max_cost_usd,
    max_model_calls,
    max_tokens,
    max_tool_rounds,
    no_tool_errors,
    outcome,
)
from toolloop_lab.checks._run import CheckedRun, read_run
from toolloop_lab.checks._saved import checks_path, save_checks
from toolloop_lab.errors import ConfigurationError

HEADROOM: Final = Decimal("1.5")
"""Tokens and cost a saved test allows: what the run spent, times this, rounded up."""
RECORDINGS_DIR: Final = "recordings"
"""The folder beside a test file holding its module's recordings (the plugin's layout)."""


@dataclass(frozen=True, slots=True)
class SavedTest:
    """What :func:`save_test` wrote."""

    test_file: Path
    recording: Path
    checks_file: Path
    checks: tuple[Check, ...]
    test_name: str


def _up(value: Decimal) -> Decimal:
    """``value`` rounded up to two significant figures (0.000302 -> 0.00031)."""
    if value <= 0:
        return Decimal("0.000001")
    exponent = value.adjusted() - 1
    return value.scaleb(-exponent).to_integral_value(ROUND_CEILING).scaleb(exponent)


def checks_read_off(run: CheckedRun) -> tuple[Check, ...]:
    """The checks a saved test starts with: what the run did, its spend with headroom."""
    view = run.view
    made: list[Check] = []
    if run.calls:
        made.append(called_in_order(*(call.name for call in run.calls)))
        if all(call.status != "error" for call in run.calls):
            made.append(no_tool_errors())
    if run.outcome is not None:
        made.append(outcome(run.outcome))
    made.append(max_tool_rounds(view.tool_rounds + 1))
    made.append(max_model_calls(view.model_calls + 1))
    usage = view.usage
    made.append(max_tokens(math.ceil(usage.total_tokens * HEADROOM)))
    if usage.cost_usd is not None:
        made.append(max_cost_usd(_up(usage.cost_usd * HEADROOM)))
    return tuple(made)


def _identifier(text: str) -> str:
    name = re.sub(r"\W+", "_", text).strip("_").lower()
    return name if name and not name[0].isdigit() else f"run_{name}"


def _source(module: str, recording: str, test_name: str, run: CheckedRun, checks: Any) -> str:
    names = sorted({c.describe().split("(", 1)[0] for c in checks} | {"verify"})
    lines = "".join(f"    {c.describe()},\n" for c in checks)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    run_id = re.sub(r"[^0-9A-Za-z_-]", "", run.run_id)
    return (
        f'"""Saved from a debugged run ({run_id}, {when}): {run.said}.\n'
        "\n"
        "The checks were read off the run: keep the ones that say what must stay true and\n"
        "edit the bounds. The test replays the run's recording offline, each tool call\n"
        "answered by its recorded result; to replay with your real tools, build your agent\n"
        "on ``ReplayChatModel.from_file(RECORDING)`` (or use the ``toolloop_recording``\n"
        "fixture). From a shell: ``toolloop-lab check`` on the recordings folder.\n"
        '"""\n'
        "\n"
        "from pathlib import Path\n"
        "\n"
        "from toolloop_lab.checks import (\n" + "".join(f"    {n},\n" for n in names) + ")\n"
        "\n"
        f'RECORDING = Path(__file__).parent / "{RECORDINGS_DIR}" / "{module}" / "{recording}"\n'
        "\n"
        f"CHECKS = [\n{lines}]\n"
        "\n"
        "\n"
        f"def {test_name}() -> None:\n"
        "    verify(RECORDING, CHECKS)\n"
    )


def save_test(
    path: str | os.PathLike[str],
    run: Any,
    *,
    name: str | None = None,
    run_id: str | None = None,
    overwrite: bool = False,
) -> SavedTest:
    """Write ``run``'s recording, its checks and a pytest file at ``path`` that replays it
    and verifies them (see the module's docs). ``run`` is anything checks read, made by
    ``LLMAgent`` (a run watched through the bridge or spans, or changed at a pause, is
    refused: record it instead). ``name`` names the test (default: ``test_<run id>``).
    An existing test file is refused unless ``overwrite``."""
    target = Path(path)
    if target.suffix != ".py" or not target.stem.startswith("test_"):
        raise ConfigurationError(
            f"save_test(path={shown(str(target))}): a test file is named test_<something>.py "
            "so that pytest collects it",
            field="path",
        )
    if target.exists() and not overwrite:
        raise ConfigurationError(
            f"{target} exists: pass another path, or overwrite=True to replace it",
            field="path",
        )
    checked = read_run(run, run_id)
    recording = recording_of_events(checked.events)
    test_name = _identifier(name or f"test_{checked.run_id}")
    if not test_name.startswith("test_"):
        test_name = f"test_{test_name}"
    module = target.stem
    folder = target.parent / RECORDINGS_DIR / module
    recorded = folder / f"{test_name}.jsonl"
    checks = checks_read_off(checked)
    recorded.unlink(missing_ok=True)
    for call in recording.calls:
        append_call(recorded, call)
    save_checks(recorded, checks, settings=ReplaySettings.of_events(checked.events))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(_source(module, recorded.name, test_name, checked, checks), encoding="utf-8")
    return SavedTest(target, recorded, checks_path(recorded), checks, test_name)
