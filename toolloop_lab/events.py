"""Typed, frozen events: the single source for the live view, traces and the lab.

Every event has ``kind`` (a literal tag), ``run_id``, ``round`` and ``t`` (seconds since the
loop started, from a monotonic clock). ``to_dict()`` gives JSON-safe data and
:func:`event_from_dict` rebuilds the same event, so a saved trace replays exactly.
Round 0 holds what happens before the first round; synthesis events carry the round after
the last tool round.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from typing import Any, Literal, TypeAlias, get_type_hints

from toolloop_lab.jsonsafe import json_safe
from toolloop_lab.usage import Usage

__all__ = [
    "EVENT_TYPES",
    "BudgetGate",
    "Event",
    "LoopFailed",
    "LoopFinished",
    "LoopStarted",
    "ModelCalled",
    "Observer",
    "Pruned",
    "RoundStarted",
    "SynthesisStarted",
    "ToolCallView",
    "ToolDispatched",
    "event_from_dict",
]

SynthesisReason: TypeAlias = Literal["round_cap", "stuck", "token_budget"]


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """One tool call as the model asked for it (``valid`` is False for invalid JSON)."""

    id: str
    name: str
    args: Mapping[str, Any]
    valid: bool = True
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    run_id: str
    round: int
    t: float
    """Seconds since the loop started (monotonic clock)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data: Decimal as string, nested values as dicts, no Python reprs."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Usage):
                out[f.name] = value.to_dict()
            else:
                out[f.name] = json_safe(value)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopStarted(_Base):
    """The loop accepted its config and is about to make its first call."""

    model_name: str | None
    tools: tuple[str, ...]
    max_rounds: int
    token_budget: int | None
    context_window: int | None
    usd_limit: Decimal | None
    prune_tools: tuple[str, ...]
    input_messages: int
    started_at: str
    """Wall-clock start, ISO 8601 UTC."""
    kind: Literal["loop_start"] = "loop_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundStarted(_Base):
    """A tool round begins: a model call with tools bound, then dispatch."""

    max_rounds: int
    kind: Literal["round_start"] = "round_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCalled(_Base):
    """A model call returned (a tool round's call or the synthesis call)."""

    purpose: Literal["round", "synthesis"]
    model_name: str | None
    usage: Usage
    """This call's tokens and cost."""
    accumulated: Usage
    """Everything spent by the loop so far, pruning included."""
    latency_s: float
    text: str
    tool_calls: tuple[ToolCallView, ...]
    finish_reason: str | None
    stuck: bool
    """Tool calls with no text."""
    kind: Literal["model_call"] = "model_call"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDispatched(_Base):
    """A tool call got its ``ToolMessage`` (success or error)."""

    tool_call_id: str
    name: str
    args: Mapping[str, Any]
    status: Literal["success", "error"]
    error_reason: str | None
    duration_s: float
    output_chars: int
    content: str
    """The tool's output text (a later ``Pruned`` event with this id may shorten it)."""
    kind: Literal["tool_dispatch"] = "tool_dispatch"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pruned(_Base):
    """The pruning model shortened a tool output before it entered the conversation."""

    tool_call_id: str
    tool_name: str
    model_name: str | None
    tokens_before: int
    tokens_after: int
    usage: Usage
    """The pruning call's own tokens and cost (they count as spend)."""
    latency_s: float
    original: str
    pruned: str
    kind: Literal["pruning"] = "pruning"

    @property
    def tokens_saved(self) -> int:
        """Tokens kept out of the conversation."""
        return self.tokens_before - self.tokens_after

    @property
    def net_saved(self) -> int:
        """Tokens saved minus what the pruning call itself spent."""
        return self.tokens_saved - self.usage.total_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetGate(_Base):
    """A budget check: token gates lead to synthesis, a tripped USD gate raises."""

    gate: Literal["token", "usd"]
    stage: Literal["before_call", "after_call"]
    limit: Decimal
    spent: Decimal
    passed: bool
    kind: Literal["budget_gate"] = "budget_gate"


@dataclass(frozen=True, slots=True, kw_only=True)
class SynthesisStarted(_Base):
    """The loop must stop early and asks once, without tools, for a final answer."""

    reason: SynthesisReason
    prompt: str
    kind: Literal["synthesis"] = "synthesis"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopFinished(_Base):
    """The loop returned a result."""

    final_text: str
    rounds: int
    usage: Usage
    budget_exhausted: bool
    synthesis_was_run: bool
    synthesis_reason: SynthesisReason | None
    kind: Literal["loop_finish"] = "loop_finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopFailed(_Base):
    """The loop raised; the partial counts are here too."""

    error_type: str
    error_kind: str | None
    reason: str | None
    message: str
    cause_type: str | None
    rounds: int
    usage: Usage
    any_invocation_made: bool
    cancelled: bool
    kind: Literal["loop_failure"] = "loop_failure"


Event: TypeAlias = (
    LoopStarted
    | RoundStarted
    | ModelCalled
    | ToolDispatched
    | Pruned
    | BudgetGate
    | SynthesisStarted
    | LoopFinished
    | LoopFailed
)
"""Everything the loop emits."""

Observer: TypeAlias = Callable[[Event], object]
"""A plain callable fed every event in order; one that raises never breaks the loop."""

EVENT_TYPES: Mapping[str, type[Event]] = {
    cls.__dataclass_fields__["kind"].default: cls  # type: ignore[misc]
    for cls in (
        LoopStarted,
        RoundStarted,
        ModelCalled,
        ToolDispatched,
        Pruned,
        BudgetGate,
        SynthesisStarted,
        LoopFinished,
        LoopFailed,
    )
}


@cache
def _converters(cls: type[Any]) -> dict[str, Callable[[Any], Any]]:
    hints = get_type_hints(cls)
    conv: dict[str, Callable[[Any], Any]] = {}
    for name, hint in hints.items():
        text = str(hint)
        if hint is Usage:
            conv[name] = Usage.from_dict
        elif "Decimal" in text:
            conv[name] = lambda v: None if v is None else Decimal(str(v))
        elif "ToolCallView" in text:
            conv[name] = lambda v: tuple(ToolCallView(**d) for d in v)
        elif "tuple" in text:
            conv[name] = tuple
    return conv


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild an event from :meth:`to_dict` output (e.g. one trace line)."""
    kind = data.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r}")
    conv = _converters(cls)  # type: ignore[arg-type]
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: conv.get(k, _same)(v) for k, v in data.items() if k in names}
    return cls(**kwargs)


def _same(value: Any) -> Any:
    return value
