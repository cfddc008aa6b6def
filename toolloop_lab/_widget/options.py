"""What ``LoopDebugger(...)`` and its step-mode calls take, checked before anything is made.

A bad argument raises one :class:`~toolloop_lab.errors.ConfigurationError` (a
``ValueError``) naming the argument, what it got and what to pass instead, before the
widget opens a comm or registers itself, so a failed constructor leaves nothing behind
that could raise later (from ``__del__``, say).
"""

from __future__ import annotations

import difflib
import math
from typing import TypeGuard

from toolloop_lab._widget.step import PAUSE_MODES, PauseMode
from toolloop_lab.errors import ConfigurationError

_LIMITS = {
    "max_text_chars": "the longest text sent to the page, in characters",
    "saved_state_bytes": "what the notebook file keeps of a finished run, in bytes",
    "max_runs": "how many runs the run list keeps",
}


def _is_mode(mode: object) -> TypeGuard[PauseMode]:
    return isinstance(mode, str) and mode in PAUSE_MODES


def check_mode(mode: object, where: str) -> PauseMode:
    """``mode`` when it is one of :data:`~.step.PAUSE_MODES`; otherwise a
    ``ConfigurationError`` saying ``where`` (the call as written), the modes, and the one a
    typo meant, if one is close."""
    if _is_mode(mode):
        return mode
    choices = ", ".join(repr(m) for m in PAUSE_MODES)
    close = difflib.get_close_matches(mode, PAUSE_MODES, n=1) if isinstance(mode, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigurationError(f"{where}: pause_on must be one of {choices}{hint}", field="pause_on")


def check_limits(*, max_messages_per_second: object, **limits: object) -> None:
    """Refuse a limit that is not a whole number >= 1, or a send rate that is not a
    positive number, naming the argument, what it is for, and what it got."""
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(
                f"LoopDebugger({name}={value!r}): {name} is {_LIMITS[name]}; "
                "pass a whole number >= 1",
                field=name,
            )
    rate = max_messages_per_second
    if (
        isinstance(rate, bool)
        or not isinstance(rate, (int, float))
        or not math.isfinite(rate)
        or rate <= 0
    ):
        raise ConfigurationError(
            f"LoopDebugger(max_messages_per_second={rate!r}): how often the page is sent "
            "new events; pass a number > 0 (10 is the default)",
            field="max_messages_per_second",
        )
