"""The documented path of :mod:`toolloop_lab.engine.pruning` (kept so existing imports work)."""

from __future__ import annotations

from toolloop_lab.engine.pruning import (
    DEFAULT_PRUNING_PROMPT,
    PruneResult,
    prune_output,
    pruning_prompt,
    text_tokens,
)

__all__ = [
    "DEFAULT_PRUNING_PROMPT",
    "PruneResult",
    "prune_output",
    "pruning_prompt",
    "text_tokens",
]
