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
    │   ├── ConversationError        kind="input": given messages a provider would refuse
    │   │                            (a call without its result, ...); ``position`` names one
    │   ├── McpServerError           kind="tool": an MCP server could not start, exited,
    │   │                            lost its connection or its session closed (``server``,
    │   │                            ``transport``, ``stderr``)
    │   └── TimeLimitError           reason="timeout": a model call kept silent too long
    │                                (kind="model") or a scenario ran too long
    │                                (kind="scenario"); also a TimeoutError
    ├── ToolLoopError (_ToolLoopError)   any other failure inside the loop; wraps ``cause``
    ├── RunStopped                   a person stopped the run (a debugger's Stop); no failure,
    │                                the partial counts are on it
    ├── InterventionError            a change at a pause was refused (the pause holds)
    ├── NoPauseError                 dbg.next_pause() waited for a pause that cannot come
    │                                (also a RuntimeError)
    ├── PauseTimeoutError            dbg.next_pause(timeout=...) ran out; the run goes on
    │                                (also a TimeoutError)
    ├── PaidCallError                a model call was paid for but failed after its reply
    │                                came back; ``reply`` holds it, and the loop keeps it
    ├── ScriptError                  a ScriptedChatModel script was misused or ran out
    ├── ChecksFailed                 verify(): a run does not pass its checks; ``failures``
    │                                holds each one's evidence (also an AssertionError)
    ├── TraceError                   a trace file could not be read
    └── RecordingError               base of everything record/replay raises
        ├── RecordingFormatError     the file is missing or not a recording
        │                            (path, line, field, reason)
        ├── RecordingWriteError      a reply came back but its line could not be written;
        │                            also a PaidCallError carrying the reply (path, call_index)
        ├── ReplayDivergedError      the conversation differs from the recording
        │                            (call_index, field, message_index, expected, received)
        ├── ReplayExhaustedError     a call the recording has no reply for
        │                            (call_index, recorded_calls, needed)
        └── RecordedCallError        the recorded call itself failed; replay raises this
                                     in its place (call_index, error_type, status_code)

This is the one drawing of the tree; other modules and the docs point here. This module is
every exception's one public home: import them from here (``from toolloop_lab.errors import
RunStopped``), never from the package root.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from toolloop_lab._support.errortext import describe

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, BaseMessage

__all__ = [
    "ChecksFailed",
    "ConfigurationError",
    "ConversationError",
    "DivergedField",
    "ExecutionError",
    "FormatProblem",
    "InterventionError",
    "McpServerError",
    "NoPauseError",
    "PaidCallError",
    "PartialRun",
    "PauseTimeoutError",
    "RecordedCallError",
    "RecordingError",
    "RecordingFormatError",
    "RecordingWriteError",
    "ReplayDivergedError",
    "ReplayExhaustedError",
    "RunStopped",
    "ScriptError",
    "TimeLimitError",
    "ToolLoopError",
    "ToolLoopLabError",
    "TraceError",
    "UnknownRunError",
]


class ToolLoopLabError(Exception):
    """Base class: catch this to catch every error the project raises on purpose."""


class PartialRun:
    """Mixin holding what a loop had done when it failed, so nothing is lost."""

    accumulated_prompt: int
    accumulated_completion: int
    cost_usd: Decimal | None
    any_invocation_made: bool
    rounds: int
    tool_rounds: int
    model_calls: int
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
        model_calls: int = 0,
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
        """Rounds completed when the run stopped, each ending in tool calls that were
        answered (a round cut short is not counted)."""
        self.tool_rounds = rounds
        """The same count as :attr:`rounds`, under the name a finished result gives it
        (:attr:`ToolLoopResult.tool_rounds`)."""
        self.model_calls = model_calls
        """Model calls the run had paid for (``usage.requests``): every round's, the
        final-answer call's and the pruning model's, the one a gate stopped it after
        included; a call that raised is not one."""
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


class McpServerError(ExecutionError):
    """An MCP server failed its client: why, in words that name it and the cause.

    ``reason`` says what happened: ``server_start`` (it could not start: its command, its
    handshake, or it exited first; raised by ``mcp_tools`` before any model call),
    ``server_exited`` (its process ended while a call ran or before it), ``connection_lost``
    (its HTTP connection broke) or ``session_closed`` (the session was closed: the block
    that opened it ended). ``server`` is its name, ``transport`` ``"stdio"`` or
    ``"streamable_http"``, and ``stderr`` the last lines its process wrote to its stderr
    (empty over HTTP). A call of a tool whose server failed becomes an error
    ``ToolMessage`` with these words, its ``tool_dispatch`` the reason.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        server: str,
        transport: str,
        stderr: Sequence[str] = (),
        **partial: Any,
    ) -> None:
        super().__init__(message, kind="tool", reason=reason, **partial)
        self.server = server
        self.transport = transport
        self.stderr: tuple[str, ...] = tuple(stderr)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_mcp_server_error, (str(self), self.__dict__))


def _rebuild_mcp_server_error(message: str, state: dict[str, Any]) -> McpServerError:
    err = McpServerError(message, reason="", server="", transport="")
    err.__dict__.update(state)
    return err


class TimeLimitError(ExecutionError, TimeoutError):
    """A time limit ran out, so the run ended there with what it had: ``kind="model"``, a
    model call sent nothing for ``AgentConfig.model_timeout_s`` seconds (the call's
    ``model_call_failed`` and the run's ``loop_failure`` say so; the calls paid for before
    it are counted); ``kind="scenario"``, a sweep's scenario ran past its
    ``scenario_timeout_s`` and its run was cancelled (every open call answered). ``reason``
    is ``"timeout"`` and ``limit_s`` the limit; a ``TimeoutError`` too."""

    def __init__(self, message: str, *, kind: str, limit_s: float, **partial: Any) -> None:
        super().__init__(message, kind=kind, reason="timeout", **partial)
        self.limit_s = limit_s

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_time_limit_error, (str(self), self.__dict__))


def _rebuild_time_limit_error(message: str, state: dict[str, Any]) -> TimeLimitError:
    err = TimeLimitError(message, kind="", limit_s=0.0)
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


class NoPauseError(ToolLoopLabError, RuntimeError):
    """``dbg.next_pause()`` waited for a pause that cannot come: no run the debugger can
    pause goes on, the run will not pause again (``pause_on="off"``, or Continue let it
    go), or it ended without pausing. The message says which, and what to do."""


class PauseTimeoutError(ToolLoopLabError, TimeoutError):
    """``dbg.next_pause(timeout=...)`` waited ``timeout`` seconds and the run, still going,
    had not paused; it goes on (wait again, or Stop it)."""


class RunStopped(ToolLoopLabError, PartialRun):
    """A person stopped the run (the Stop button of a debugger holding it): what the cell
    that awaited ``agent.arun(...)`` or called ``agent.run(...)`` raises instead of
    ``CancelledError``, so it reads as what happened and keeps what the run had done
    (``rounds``, the token counts, ``cost_usd``, ``messages``, ``events``, ``run_id``).
    The run's events end with its ``loop_failure`` (``cancelled``, outcome ``cancelled``)."""

    def __init__(self, message: str, **partial: Any) -> None:
        super().__init__(message)
        self.set_partial(**partial)

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it in a notebook: one line, no traceback (a stop is no
        bug to trace; the debugger shows where the run was)."""
        return [f"RunStopped: {describe(self)}"]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_run_stopped, (str(self), self.__dict__))


def _rebuild_run_stopped(message: str, state: dict[str, Any]) -> RunStopped:
    err = RunStopped(message)
    err.__dict__.update(state)
    return err


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


class ChecksFailed(ToolLoopLabError, AssertionError):
    """:func:`~toolloop_lab.checks.verify` found checks the run does not pass.

    ``failures`` holds the result of each failed check (a
    :class:`~toolloop_lab.checks.CheckResult`: what was expected, what was seen, and where:
    the round, the tool call and its id); ``report`` every check's
    (:class:`~toolloop_lab.checks.CheckReport`). Its message reads as a pytest assertion
    does, and pytest reports it as one (it is an ``AssertionError`` too); a test that
    compares the run with a recorded one adds the round-by-round diff (``diff``).
    """

    def __init__(
        self, message: str, *, failures: Sequence[Any], report: Any, diff: str | None = None
    ) -> None:
        super().__init__(message)
        self.failures: tuple[Any, ...] = tuple(failures)
        self.report = report
        self.diff = diff
        """The run compared round by round with the recorded run it replays, as text, when
        a test has one to compare with (``None`` otherwise)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_checks_failed, (str(self), self.__dict__))


def _rebuild_checks_failed(message: str, state: dict[str, Any]) -> ChecksFailed:
    err = ChecksFailed(message, failures=(), report=None)
    err.__dict__.update(state)
    return err


class TraceError(ToolLoopLabError):
    """A trace file is missing, not a toolloop_lab trace, or lacks lines a use needs.

    ``lines`` names the 1-based lines at fault, when some are (a fork whose rounds taken
    touch lines the reader had to skip, say)."""

    def __init__(self, message: str, *, lines: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.lines: tuple[int, ...] = tuple(lines)


# -- record and replay ----------------------------------------------------------------

DivergedField = Literal["messages", "tools", "task"]
"""What differed: the request messages, the bound tool names, or (relaxed replay) the task."""

FormatProblem = Literal[
    "unreadable",
    "empty",
    "not_utf8",
    "not_json",
    "not_a_recording",
    "unsupported_version",
    "invalid_field",
]
"""Why a file is not a usable recording: it cannot be read; it has no calls; a line is not
UTF-8, not JSON, not a recording line or of an unknown version; or a field is wrong."""


class RecordingError(ToolLoopLabError):
    """Base of every record/replay error; fields are attributes, never only message text."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_recording_error, (type(self), str(self), dict(self.__dict__)))


def _rebuild_recording_error(
    cls: type[RecordingError], message: str, state: dict[str, Any]
) -> RecordingError:
    err = Exception.__new__(cls)
    Exception.__init__(err, message)
    err.__dict__.update(state)
    return err


class RecordingFormatError(RecordingError):
    """The file is missing, unreadable or not a toolloop_lab recording."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        line: int | None = None,
        field: str | None = None,
        reason: FormatProblem = "invalid_field",
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        """1-based line number of the bad line, ``None`` for the file as a whole."""
        self.field = field
        """Dotted path of the bad field in the line (``"tools"``, ``"request.2.data.content"``),
        ``None`` when the line as a whole is bad."""
        self.reason: FormatProblem = reason


class RecordingWriteError(RecordingError, PaidCallError):
    """A reply came back (and was paid for) but its line could not be written.

    It is a :class:`~toolloop_lab.errors.PaidCallError`: ``reply`` holds the reply, usage
    included, so the loop keeps its tokens and cost. The ``OSError`` (or other failure) is
    the ``__cause__``; the recorder's numbering does not advance, so the file stays valid.
    """

    def __init__(self, message: str, *, path: str, call_index: int, reply: AIMessage) -> None:
        PaidCallError.__init__(self, message, reply=reply)
        self.path = path
        self.call_index = call_index
        """The ``call`` number the line would have had."""


class ReplayDivergedError(RecordingError):
    """The replayed conversation is not the recorded one at ``call_index``.

    ``expected`` and ``received`` describe the first differing message (or the tool
    names), as recorded and as received; ``message_index`` is its position in the request.
    """

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        field: DivergedField,
        expected: str,
        received: str,
        message_index: int | None = None,
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.field: DivergedField = field
        self.message_index = message_index
        self.expected = expected
        self.received = received


class ReplayExhaustedError(RecordingError):
    """A call needed a reply the recording does not have (it ran past the recording).

    ``needed`` is ``"call"`` in strict replay; relaxed replay says which kind was missing:
    ``"round"`` (a call with tools bound) or ``"synthesis"`` (a call without tools).
    """

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        recorded_calls: int,
        needed: Literal["call", "round", "synthesis"],
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.recorded_calls = recorded_calls
        self.needed: Literal["call", "round", "synthesis"] = needed


class RecordedCallError(RecordingError):
    """The recorded call failed (e.g. an HTTP 429); replay raises this in its place."""

    def __init__(
        self,
        message: str,
        *,
        call_index: int,
        error_type: str,
        error_message: str,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.call_index = call_index
        self.error_type = error_type
        """Dotted name of the original exception class, e.g. ``openai.RateLimitError``."""
        self.error_message = error_message
        self.status_code = status_code
