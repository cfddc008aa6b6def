"""The whole exception tree of toolloop_lab.

Errors carry structured fields (``kind``, ``reason``, partial counts) so callers and tests
never have to match on message text. Constructing an error has no side effects.

::

    ToolLoopLabError                 base of everything raised on purpose
    ├── ConfigurationError           bad AgentConfig / arguments (also a ValueError)
    │   └── UnknownRunError          no run with that ``run_id`` (also a KeyError)
    ├── ExecutionError               typed failure with ``kind`` and ``reason``
    │   │ kind="tool"  reason="not_available" | "invalid_call" | "tool_error" | "timeout" ...
    │   │ kind="cost"  reason="budget_exhausted" | "unpriced"
    │   └── ConversationError        kind="input": given messages a provider would refuse
    │                                (a call without its result, ...); ``position`` names one
    ├── ToolLoopError (_ToolLoopError)   any other failure inside the loop; wraps ``cause``
    ├── InterventionError            a change at a pause was refused (the pause holds)
    ├── PaidCallError                a model call was paid for but failed after its reply
    │                                came back; ``reply`` holds it, and the loop keeps it
    ├── ScriptError                  a ScriptedChatModel script was misused or ran out
    └── TraceError                   a trace file could not be read
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

__all__ = [
    "ConfigurationError",
    "ConversationError",
    "ExecutionError",
    "InterventionError",
    "PaidCallError",
    "PartialRun",
    "ScriptError",
    "ToolLoopError",
    "ToolLoopLabError",
    "TraceError",
    "UnknownRunError",
    "_ToolLoopError",
    "describe",
]


def describe(exc: BaseException) -> str:
    """``str(exc)``, or a placeholder when the exception's own ``__str__`` fails: a broken
    message must never replace the error it describes."""
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - any failure of a foreign __str__
        return f"<unprintable {type(exc).__name__}>"


class ToolLoopLabError(Exception):
    """Base class: catch this to catch every error the project raises on purpose."""


class PartialRun:
    """Mixin holding what a loop had done when it failed, so nothing is lost."""

    accumulated_prompt: int
    accumulated_completion: int
    cost_usd: Decimal | None
    any_invocation_made: bool
    rounds: int
    messages: list[BaseMessage]
    events: tuple[Any, ...]
    run_id: str | None
    partial_text: str | None

    def set_partial(
        self,
        *,
        accumulated_prompt: int = 0,
        accumulated_completion: int = 0,
        cost_usd: Decimal | None = Decimal(0),
        any_invocation_made: bool = False,
        rounds: int = 0,
        messages: Sequence[BaseMessage] = (),
        events: Sequence[Any] = (),
        run_id: str | None = None,
        partial_text: str | None = None,
    ) -> None:
        """Record what the run had done (the loop calls this as the error passes through
        it, so an error raised deep inside still carries the whole partial state)."""
        self.accumulated_prompt = accumulated_prompt
        self.accumulated_completion = accumulated_completion
        self.cost_usd = cost_usd
        self.any_invocation_made = any_invocation_made
        self.rounds = rounds
        self.messages = list(messages)
        self.events = tuple(events)
        self.run_id = run_id
        self.partial_text = partial_text
        """Text a model was streaming when the run stopped, if any."""


class ConfigurationError(ToolLoopLabError, ValueError):
    """A configuration value is invalid; ``field`` names it."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownRunError(ConfigurationError, KeyError):
    """A ``run_id`` was asked for that the events (a trace, a result) do not hold.

    ``available`` names the runs they do hold, in the order they started, so the caller
    can pick one; ``field`` is ``"run_id"``. A ``KeyError`` too, as a missing key is."""

    def __init__(self, run_id: str, available: Sequence[str], *, where: str = "the events") -> None:
        self.run_id = run_id
        self.available: tuple[str, ...] = tuple(available)
        self.where = where
        held = ", ".join(repr(i) for i in self.available) if self.available else "none"
        super().__init__(f"no run {run_id!r} in {where} (runs held: {held})", field="run_id")

    def __str__(self) -> str:
        return ToolLoopLabError.__str__(self)  # KeyError's own __str__ would quote the text

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_unknown_run, (self.run_id, self.available, self.where))


def _rebuild_unknown_run(run_id: str, available: Sequence[str], where: str) -> UnknownRunError:
    return UnknownRunError(run_id, available, where=where)


class ExecutionError(ToolLoopLabError, PartialRun):
    """A typed failure: ``kind`` says which part failed, ``reason`` says how.

    Tool errors are usually caught by the loop and returned to the model as an error
    ``ToolMessage``; cost errors propagate to the caller with the partial counts.
    """

    def __init__(self, message: str, *, kind: str, reason: str, **partial: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason
        self.set_partial(**partial)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_execution_error, (str(self), self.kind, self.reason, self.__dict__))


def _rebuild_execution_error(
    message: str, kind: str, reason: str, state: dict[str, Any]
) -> ExecutionError:
    err = ExecutionError(message, kind=kind, reason=reason)
    err.__dict__.update(state)
    return err


class ConversationError(ExecutionError):
    """Messages given to a run (its ``history``, or the messages passed as its prompt) that
    a provider would refuse, found before any model call: a tool call without its result
    right after it (``unanswered_call``), a result that answers no call of the AI message
    before it (``orphan_result``), a call answered twice (``answered_twice``), or one call
    id asked for twice (``repeated_call_id``). ``source`` (``"history"`` or ``"messages"``)
    and ``index`` name the message at fault; ``call_id`` the call.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        source: str,
        index: int,
        call_id: str | None = None,
        **partial: Any,
    ) -> None:
        super().__init__(message, kind="input", reason=reason, **partial)
        self.source = source
        self.index = index
        self.call_id = call_id

    @property
    def position(self) -> str:
        """The message at fault, as ``history[3]`` or ``messages[0]``."""
        return f"{self.source}[{self.index}]"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_conversation_error, (str(self), self.__dict__))


def _rebuild_conversation_error(message: str, state: dict[str, Any]) -> ConversationError:
    err = ConversationError(message, reason="", source="", index=0)
    err.__dict__.update(state)
    return err


class ToolLoopError(ToolLoopLabError, PartialRun):
    """Any unexpected failure inside the loop, with the partial counts and the cause."""

    def __init__(self, message: str, *, cause: BaseException, **partial: Any) -> None:
        super().__init__(message)
        self.cause = cause
        self.__cause__ = cause
        self.set_partial(**partial)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_tool_loop_error, (str(self), self.cause, self.__dict__))


def _rebuild_tool_loop_error(
    message: str, cause: BaseException, state: dict[str, Any]
) -> ToolLoopError:
    err = ToolLoopError(message, cause=cause)
    err.__dict__.update(state)
    return err


_ToolLoopError = ToolLoopError
"""The name the behaviour spec uses."""


class InterventionError(ToolLoopLabError, ValueError):
    """A person's change at a pause was refused; the run is as it was and the pause holds.

    ``action`` is what was tried (``edit_args``, ``skip``, ``append_message``,
    ``edit_result``); ``reason`` why not: ``unknown_call``, ``invalid_args``,
    ``not_allowed``, ``already_sent``, ``wrong_stage`` or ``expired`` (the loop went on).
    """

    def __init__(
        self, message: str, *, action: str, reason: str, call_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.action = action
        self.reason = reason
        self.call_id = call_id


class PaidCallError(ToolLoopLabError):
    """A model call failed *after* its reply came back (a recorder could not write it, say).

    The reply was paid for, so whoever catches this keeps ``reply``: the loop counts its
    tokens and cost, appends it to the transcript and emits its event before it fails.
    """

    def __init__(self, message: str, *, reply: Any) -> None:
        super().__init__(message)
        self.reply = reply
        """The ``AIMessage`` the provider returned."""


class ScriptError(ToolLoopLabError):
    """A scripted model ran out of replies or was given something it cannot play."""


class TraceError(ToolLoopLabError):
    """A trace file is missing, not a toolloop_lab trace, or lacks lines a use needs.

    ``lines`` names the 1-based lines at fault, when some are (a fork whose rounds taken
    touch lines the reader had to skip, say)."""

    def __init__(self, message: str, *, lines: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.lines: tuple[int, ...] = tuple(lines)
