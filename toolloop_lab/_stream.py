"""How a run's events are made and fed: the machinery every producer of the stream shares.

:mod:`toolloop_lab.events` is what a reader of a stream needs (the event types, the
vocabulary, the parser, which run is which). This module is what a *producer* needs, the
loop, the LangChain bridge and the spans-in source alike, so they describe a run the same
way: the observers given to anything that takes them, checked where they are given, and fed
each event under one policy (:func:`notify`); the outcome a run's end reads as
(:func:`finish_outcome`, :func:`failure_outcome`, :func:`failure_fields`); and the messages
an event carries, as frozen JSON-safe dicts and back (:func:`message_dicts`,
:func:`message_from_dict`).

It sits below :mod:`toolloop_lab.events` (which rebuilds old traces' outcomes and a run's
transcript with it) and imports it for types only.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from pydantic import ValidationError

from toolloop_lab._support.callables import Role, callables, one_callable
from toolloop_lab._support.errortext import describe, error_name, unwrap
from toolloop_lab._support.jsonsafe import FrozenDict, frozen_json

if TYPE_CHECKING:
    from toolloop_lab.events import Event, Observer, Outcome

# -- observers -----------------------------------------------------------------------

OBSERVERS: Final = Role("observers", "observer", "a callable given every event")
"""What an observer is, as a refusal of one says it."""


def checked_observers(value: Any, *, spread: str | None = None) -> tuple[Observer, ...]:
    """``value`` as the observers of whatever takes them, checked where they are given (an
    observer that cannot be called would record nothing, silently); a ``TypeError`` names
    the argument and the fix. ``spread`` names a function taking them one per argument."""
    return callables(value, OBSERVERS, spread=spread)


def checked_observer(value: Any, *, where: str = "callback") -> Observer:
    """One observer given on its own (``agent.subscribe(callback)``), checked likewise."""
    observer: Observer = one_callable(value, OBSERVERS, where=where)
    return observer


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
        if outcome is not None and inspect.isawaitable(outcome):
            if inspect.iscoroutine(outcome):
                outcome.close()
            _log.warning(
                "observer %r returned an awaitable on %s; observers are plain callables "
                "(schedule async work yourself)",
                observer,
                event.kind,
            )


# -- how a run ended -------------------------------------------------------------------


def finish_outcome(
    *, budget_exhausted: bool, synthesis_was_run: bool, interrupted: bool = False
) -> Outcome:
    """The outcome of a run that returned a result (or, bridged, paused at an interrupt)."""
    if interrupted:
        return "interrupted"
    if budget_exhausted:
        return "token_budget_exhausted"
    return "synthesis" if synthesis_was_run else "final_answer"


def failure_outcome(*, cancelled: bool, error_kind: str | None, reason: str | None) -> Outcome:
    """The outcome of a run that raised."""
    if cancelled:
        return "cancelled"
    if (error_kind, reason) == ("cost", "budget_exhausted"):
        return "usd_budget_exhausted"
    return "failed"


def failure_fields(
    error: BaseException, *, kind: str | None, reason: str | None, cancelled: bool
) -> dict[str, Any]:
    """The fields of a :class:`~toolloop_lab.events.LoopFailed` that say what ended the
    run, so the loop and the bridge describe an error the same way (the run's counts are
    theirs to add): a group of one as the exception it holds
    (:func:`~toolloop_lab._support.errortext.unwrap`)."""
    cause = unwrap(error).__cause__
    return {
        "error_type": error_name(error),
        "error_kind": kind,
        "reason": reason,
        "message": describe(error),
        "cause_type": type(cause).__name__ if cause is not None else None,
        "cancelled": cancelled,
        "outcome": failure_outcome(cancelled=cancelled, error_kind=kind, reason=reason),
    }


# -- messages in events --------------------------------------------------------------


def message_from_dict(data: dict[str, Any]) -> BaseMessage:
    """One message back from its dict. A reply that was never a valid message (a test
    double or a broken client can hand the loop such a thing, and the loop keeps what it
    was given) is rebuilt field for field, without validation, so it equals the original."""
    try:
        return messages_from_dict([data])[0]
    except ValidationError:
        kind = _MESSAGE_TYPES.get(data.get("type", ""))
        if kind is None:
            raise
        return kind.model_construct(**data["data"])


_MESSAGE_TYPES: Final[Mapping[str, type[BaseMessage]]] = {
    "ai": AIMessage,
    "human": HumanMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
    "chat": ChatMessage,
}


def message_dicts(messages: Iterable[BaseMessage]) -> tuple[Mapping[str, Any], ...]:
    """Messages as frozen, JSON-safe langchain-core dicts (what events carry): the shape of
    ``message_to_dict``, without pydantic's warnings for a reply that was never valid (the
    loop keeps what it was given, and says so elsewhere)."""
    return tuple(_plain_tool_result(m) or _message_dict(m) for m in messages)


def _message_dict(message: BaseMessage) -> FrozenDict:
    # frozen_json({"type": ..., "data": ...}) without the dict in between (same depth)
    return FrozenDict(
        type=frozen_json(message.type), data=frozen_json(message.model_dump(warnings=False), 1)
    )


def _plain_tool_result(message: BaseMessage) -> FrozenDict | None:
    """:func:`_message_dict` of a tool result as the loop makes one (a ``ToolMessage`` with
    text content and nothing else set), built straight from its fields: the same dict, keys
    in the same order, in a quarter of the time of a pydantic dump walked again to freeze it
    (one a round, on the loop's hot path). ``None`` for any other message."""
    if type(message) is not ToolMessage or not _TOOL_FIELDS_KNOWN:
        return None
    data = message.__dict__
    content, name, id_ = data["content"], data["name"], data["id"]
    if (
        type(content) is not str
        or data["additional_kwargs"]
        or data["response_metadata"]
        or data["artifact"] is not None
        or message.__pydantic_extra__
        or type(data["tool_call_id"]) is not str
        or not (name is None or type(name) is str)
        or not (id_ is None or type(id_) is str)
        or type(data["status"]) is not str
        or data["type"] != "tool"
    ):
        return None
    return FrozenDict(
        type="tool",
        data=FrozenDict(
            content=content,
            additional_kwargs=frozen_json(data["additional_kwargs"]),  # {}: the shared one
            response_metadata=frozen_json(data["response_metadata"]),
            type="tool",
            name=name,
            id=id_,
            tool_call_id=data["tool_call_id"],
            artifact=None,
            status=data["status"],
        ),
    )


_TOOL_FIELDS_KNOWN: Final = (
    tuple(ToolMessage.model_fields)
    == (
        "content",
        "additional_kwargs",
        "response_metadata",
        "type",
        "name",
        "id",
        "tool_call_id",
        "artifact",
        "status",
    )
    and not ToolMessage.model_computed_fields
)
"""The fields :func:`_plain_tool_result` writes are all a ``ToolMessage`` has (a release of
langchain-core that adds one gets the pydantic dump instead)."""
