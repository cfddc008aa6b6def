"""The documented path of :mod:`toolloop_lab.replay.fork` (kept so existing imports work)."""

from __future__ import annotations

from toolloop_lab.replay.fork import (
    COMPARISON_DTYPES,
    Fork,
    ForkResult,
    ForkSource,
    RoundComparison,
    RoundFigures,
    RoundOutcome,
    SourceKind,
    afork,
    fork,
    prepare_fork,
)

__all__ = [
    "COMPARISON_DTYPES",
    "Fork",
    "ForkResult",
    "ForkSource",
    "RoundComparison",
    "RoundFigures",
    "RoundOutcome",
    "SourceKind",
    "afork",
    "fork",
    "prepare_fork",
]
