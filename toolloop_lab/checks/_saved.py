"""Checks saved beside a recording, for ``toolloop-lab check`` to replay them.

A recording ``triage.jsonl`` has its checks in ``triage.checks.json``, one JSON object::

    {"format": "toolloop_lab.checks", "version": 1,
     "checks": [{"check": "called_in_order", "tools": ["lookup", "reply"]},
                {"check": "max_tool_rounds", "n": 3}, ...],
     "replay": {"config": {"tool_max_rounds": 10, ...}, "usd_limit": null},
     "agent": null}

``checks`` are :meth:`~toolloop_lab.checks.Check.to_json` of each (a check that holds code
or a model, ``satisfies`` or ``llm_judge``, has no such form and is refused when saving);
``replay`` is how the loop that made the recording was set up
(:class:`~toolloop_lab._replay.recorded_run.ReplaySettings`); ``agent``, when given, is
``"module:function"``, a function that takes the replay's chat model and returns the
``LLMAgent`` to replay with (your real tools, so a change in them shows), else the
recording's own tool results answer the calls. The file is untrusted input: each field is
checked, and a wrong one named with the file.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from toolloop_lab._replay.recorded_run import ReplaySettings
from toolloop_lab._support.fields import shown
from toolloop_lab.checks._base import Check
from toolloop_lab.checks._kinds import check_from_json
from toolloop_lab.errors import ConfigurationError

FORMAT: Final = "toolloop_lab.checks"
VERSION: Final = 1
SUFFIX: Final = ".checks.json"
"""What a recording's checks file is named: ``triage.jsonl`` has ``triage.checks.json``."""


def checks_path(recording: str | os.PathLike[str]) -> Path:
    """Where the checks of ``recording`` are saved (beside it)."""
    path = Path(recording)
    return path.with_name(path.name.removesuffix(".jsonl") + SUFFIX)


def recording_path(checks_file: str | os.PathLike[str]) -> Path:
    """The recording a checks file belongs to."""
    path = Path(checks_file)
    return path.with_name(path.name.removesuffix(SUFFIX) + ".jsonl")


@dataclass(frozen=True, slots=True)
class SavedChecks:
    """A recording's checks file, read."""

    path: Path
    checks: tuple[Check, ...]
    settings: ReplaySettings | None
    agent: str | None
    """``module:function`` making the agent to replay with, or ``None``."""


def saved_json(check: Check, index: int) -> dict[str, Any]:
    """``check`` as the file holds it; one with no such form is refused, naming it."""
    data = check.to_json()
    if data is None:
        raise ConfigurationError(
            f"checks[{index}] ({check.describe()}) holds code or a model, which a checks "
            "file cannot: keep it in a test (verify(run, [...]))",
            field="checks",
        )
    return data


def save_checks(
    recording: str | os.PathLike[str],
    checks: Sequence[Check],
    *,
    settings: ReplaySettings | None = None,
    agent: str | None = None,
) -> Path:
    """Write the checks file of ``recording`` (replacing one there); returns its path."""
    data = {
        "format": FORMAT,
        "version": VERSION,
        "checks": [saved_json(c, i) for i, c in enumerate(checks)],
        "replay": None if settings is None else settings.to_json(),
        "agent": agent,
    }
    target = checks_path(recording)
    text = json.dumps(data, indent=2, ensure_ascii=True, allow_nan=False) + "\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=".toolloop-", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            out.write(text)
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return target


def _agent_of(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and value.count(":") == 1 and all(value.split(":")):
        return value
    raise ConfigurationError(
        f"{where}: agent takes 'module:function' (a function of the replay's model that "
        f"returns the LLMAgent), got {shown(value)}",
        field="agent",
    )


def load_checks(path: str | os.PathLike[str]) -> SavedChecks:
    """Read a checks file; anything wrong is a ``ConfigurationError`` naming the file and
    the field."""
    file = Path(path)
    where = str(file)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigurationError(
            f"{where}: cannot read it ({exc.strerror})", field="path"
        ) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigurationError(f"{where}: not JSON ({exc})", field="path") from None
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise ConfigurationError(
            f"{where}: not a checks file (its 'format' must be {FORMAT!r})", field="format"
        )
    if data.get("version") != VERSION:
        raise ConfigurationError(
            f"{where}: unsupported checks file version {data.get('version')!r}", field="version"
        )
    raw = data.get("checks")
    if not isinstance(raw, list) or not raw:
        raise ConfigurationError(f"{where}: 'checks' takes a list of checks", field="checks")
    checks = tuple(check_from_json(item, f"{where}: checks[{i}]") for i, item in enumerate(raw))
    replay = data.get("replay")
    settings = None if replay is None else ReplaySettings.from_json(replay, where=where)
    return SavedChecks(file, checks, settings, _agent_of(data.get("agent"), where))


def saved_settings(recording: str | os.PathLike[str]) -> ReplaySettings | None:
    """The replay settings saved with ``recording``'s checks, if it has a checks file."""
    path = checks_path(recording)
    if not path.exists():
        return None
    return load_checks(path).settings
