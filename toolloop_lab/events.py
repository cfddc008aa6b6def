"""Typed, frozen events: the single source for the live view, traces and the lab.

Every event has ``kind`` (a literal tag), ``run_id``, ``round`` and ``t`` (seconds since the
loop started, from a monotonic clock). ``to_dict()`` gives JSON-safe data and
:func:`event_from_dict` rebuilds the same event, so a saved trace replays exactly. A trace
is a file anyone can edit, so :func:`event_from_dict` checks every field's type against the
event's annotations (a count is an int, a stage one of its literals): what reaches a view
is exactly what the loop could have emitted.
Round 0 holds what happens before the first round; synthesis events carry the round after
the last tool round.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from types import UnionType
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin, get_type_hints

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
    "notify",
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
    """Why the provider says the reply ended, as it spells it ("stop", "length", ...)."""
    stuck: bool
    """Tool calls with no text."""
    empty: bool = False
    """No text and no tool call: an empty or thinking-only reply."""
    truncated: bool = False
    """Cut off by the provider's output-token limit (finish reason "length"/"max_tokens");
    its tool calls are answered with errors instead of being run."""
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
    final_empty: bool = False
    """The final answer has no text (an empty or thinking-only reply): the loop ends on
    it, as the model asked, but says so."""
    final_truncated: bool = False
    """The final answer was cut off by the provider's output-token limit."""
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

_log = logging.getLogger("toolloop_lab")


def notify(observers: Iterable[Observer], event: Event) -> None:
    """Feed ``event`` to each observer: the one policy for the loop and for sweeps.

    An observer that raises is logged and skipped, never breaking the run; one that returns
    an awaitable (an ``async def`` observer) would silently never run, so it is closed and
    logged instead.
    """
    for observer in observers:
        try:
            outcome = observer(event)
        except Exception:  # noqa: BLE001 - an observer never breaks the loop
            _log.warning("observer %r raised on %s", observer, event.kind, exc_info=True)
            continue
        if inspect.isawaitable(outcome):
            if inspect.iscoroutine(outcome):
                outcome.close()
            _log.warning(
                "observer %r returned an awaitable on %s; observers are plain callables "
                "(schedule async work yourself)",
                observer,
                event.kind,
            )


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


class _BadField(ValueError):
    """A field of an event read back does not have the type the event declares."""


Converter: TypeAlias = Callable[[Any], Any]


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadField(f"expected an int, got {type(value).__name__}")
    return value


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _BadField(f"expected a finite number, got {value!r:.40}")
    return float(value)


def _exact(kind: type[Any]) -> Converter:
    def check(value: Any) -> Any:
        if not isinstance(value, kind):
            raise _BadField(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return check


def _decimal(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _BadField(f"expected a decimal number, got {type(value).__name__}")
    try:
        amount = Decimal(str(value))
    except ArithmeticError:
        raise _BadField(f"expected a decimal number, got {str(value)[:40]!r}") from None
    if not amount.is_finite():
        raise _BadField(f"expected a finite decimal number, got {amount}")
    return amount


def _usage(value: Any) -> Usage:
    if not isinstance(value, Mapping):
        raise _BadField(f"expected a usage object, got {type(value).__name__}")
    counts = {}
    for name in (
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "requests",
    ):
        count = _int(value.get(name, 0))
        if count < 0:
            raise _BadField(f"{name} must be >= 0, got {count}")
        counts[name] = count
    cost = value.get("cost_usd")
    return Usage(
        **counts,
        estimated=_exact(bool)(value.get("estimated", False)),
        cost_usd=None if cost is None else _decimal(cost),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise _BadField(f"expected an object, got {type(value).__name__}")
    return value


def _converter(hint: Any) -> Converter:
    """Check (and convert from JSON) one value of the annotated type."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Usage:
        return _usage
    if hint is Decimal:
        return _decimal
    if hint is bool or hint is str:
        return _exact(hint)
    if hint is int:
        return _int
    if hint is float:
        return _float
    if hint is ToolCallView:
        fields = _converters(ToolCallView)

        def view(value: Any) -> ToolCallView:
            return ToolCallView(**_fields_of(ToolCallView, fields, _mapping(value)))

        return view
    if origin is Literal:
        allowed = frozenset(args)

        def literal(value: Any) -> Any:
            if not isinstance(value, str) or value not in allowed:
                raise _BadField(f"expected one of {sorted(allowed)}, got {str(value)[:40]!r}")
            return value

        return literal
    if origin in (Union, UnionType):
        inner = [a for a in args if a is not type(None)]
        convert = _converter(inner[0] if len(inner) == 1 else Union[tuple(inner)])  # noqa: UP007
        return lambda value: None if value is None else convert(value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item = _converter(args[0])

        def items(value: Any) -> tuple[Any, ...]:
            if not isinstance(value, (list, tuple)):
                raise _BadField(f"expected a list, got {type(value).__name__}")
            return tuple(item(v) for v in value)

        return items
    if origin is Mapping:
        return _mapping
    raise TypeError(f"no converter for {hint!r}")  # a new field type: teach this function


@cache
def _converters(cls: type[Any]) -> dict[str, Converter]:
    return {name: _converter(hint) for name, hint in get_type_hints(cls).items()}


def _fields_of(
    cls: type[Any], converters: Mapping[str, Converter], data: Mapping[str, Any]
) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key not in names:
            continue  # a field from a newer version: ignored
        try:
            kwargs[key] = converters[key](value)
        except _BadField as exc:
            raise _BadField(f"field {key!r}: {exc}") from None
    return kwargs


def event_from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild an event from :meth:`to_dict` output (e.g. one trace line).

    Raises ``ValueError`` for an unknown kind or a field of the wrong type, ``TypeError``
    for a missing field.
    """
    kind = data.get("kind")
    cls = EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event kind {kind!r}")
    return cls(**_fields_of(cls, _converters(cls), data))  # type: ignore[arg-type]
