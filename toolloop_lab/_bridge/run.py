"""``BridgedRun``: one LangChain run, told as the loop's typed events.

The callback handler (:mod:`.handler`) decides which run a callback belongs to; this class
turns the facts of that run into events, in the order the loop emits them, and keeps what
it must to do so (the conversation carried so far, the tool calls still open, the spend).

How callbacks become events:

* the run announces itself (``loop_start``, ``source="langchain"``) at its first chat-model
  or tool call, so a chain that never calls a model is no run at all;
* each chat-model call with tools bound is a round (``round_start``, ``model_call_start``,
  coalesced ``model_delta``, ``model_call``); a call without tools after calls with tools is
  a synthesis-like final call (``purpose="synthesis"``, no ``synthesis`` event: the
  framework's reason is not in the callbacks); a call after a call that failed is a retry,
  a new call of the same round;
* each tool call gets exactly one ``tool_dispatch``: from the tool's own end or error, or,
  for calls the framework answered without running a tool, from the ``ToolMessage`` found
  in a chain's output or in the next prompt (``ran=False``); a call to a tool the agent does
  not have reads as the loop reports its own: an error of the call (``not_available``,
  ``ran=True``, no ``tool_start``), never a call left unrun; a tool that raised is reported
  with the framework's error ``ToolMessage`` when one follows, and with the exception's
  text when none does;
* the run ends with ``loop_finish`` or ``loop_failure`` (partial counts, streamed text),
  always as its last event: when its root ends while calls or tools it started are still
  out (a tool thread a failed run could not stop, a call a chain started and did not wait
  for), the end waits for them, so their events come first and its totals include them.
  At a failure, a model call still out was cancelled with the run (langchain-core reports
  no end for a call it cancelled): the failure closes it, keeping what it streamed.
  Callbacks for a run whose end was sent change nothing.

What a bridge cannot know is never shown as known: no gate, no round cap, no token budget
or context window (all ``None``: absent, not passed); a reply without usage is estimated
and flagged ``estimated``; a model without a known price has cost ``None`` (unknown).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, Literal, TypeVar
from uuid import UUID

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage

from toolloop_lab import events as ev
from toolloop_lab._engine.call_events import (
    Emit,
    delta_sink,
    model_call_failed,
    model_call_started,
    model_called,
    priced_usage,
    server_logged,
    tool_dispatched,
    tool_started,
)
from toolloop_lab._engine.model_call import (
    CallTiming,
    DeltaBuffer,
    RepeatedCalls,
    is_empty,
    is_truncated,
)
from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import failure_fields, finish_outcome, message_dicts, notify
from toolloop_lab._support.errortext import error_name, explain
from toolloop_lab._support.jsonsafe import dumps, freeze, frozen_json, json_safe
from toolloop_lab._tools.content import is_blocks, structured_of
from toolloop_lab._tools.servers import ServerIdentity, ServerSite, identity_of, site_of

from .conversation import Conversation, messages_in

_STAND_IN: Final = "invalid_tool"
"""The tool a classic ``AgentExecutor`` runs in place of one the model named but nobody has."""

E = TypeVar("E", bound=ev.Event)
Clock = Callable[[], float]
Purpose = Literal["round", "synthesis"]


@dataclass(slots=True, eq=False)
class _Call:
    """A chat-model call in flight."""

    number: int
    round: int
    purpose: Purpose
    model_name: str | None
    prompt: Sequence[BaseMessage]
    started: float
    deltas: DeltaBuffer
    first_token_s: float | None = None


@dataclass(slots=True, eq=False)
class _Tool:
    """A tool run in flight (or one that raised, waiting for the framework's answer)."""

    call_id: str
    name: str
    args: Any
    round: int
    started: float
    duration_s: float = 0.0
    error_reason: str = "tool_error"
    error_type: str | None = None
    """The class name of the exception it raised, for a ``tool_error``."""
    error_text: str = ""
    stand_in: bool = False
    """The framework ran its stand-in for an unknown tool: the call itself never ran."""
    server: ServerIdentity | None = None
    """The MCP server its tool came from (the tool's metadata names it, ``mcp_tools``)."""
    site: ServerSite | None = None
    log_mark: int = 0
    """The server's log line count as the call began: what came after sits beside it."""


@dataclass(slots=True, eq=False)
class BridgedRun:
    """One run seen through callbacks; see the module doc for what becomes which event."""

    observers: tuple[ev.Observer, ...]
    run_id: str
    clock: Clock = time.perf_counter
    name: str | None = None
    tags: tuple[str, ...] = ()
    """The root chain's LangChain tags (``config={"tags": [...]}``)."""
    metadata: Any = None
    """The root chain's LangChain metadata as frozen JSON (``config={"metadata": ...}``;
    LangGraph adds the thread id and other configurable values there)."""
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    input_messages: int | None = None
    prices: PriceTable | None = None
    t0: float = 0.0
    started_at: str = ""
    started: bool = False
    ended: bool = False
    round: int = 0
    rounds_done: int = 0
    """Rounds whose model call returned (a retried call counts once)."""
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    _end_held: Callable[[], None] | None = None
    """The run's root ended while calls or tools it started were still out: its end, sent
    when the last of them lands (:meth:`_settle`)."""
    synthesis_run: bool = False
    tools_bound: bool = False
    """Some call of this run had tools bound (a later call without tools is synthesis)."""
    retry_next: bool = False
    """The last model call failed: the next one is a retry of the same round."""
    last_reply: AIMessage | None = None
    partial_text: str | None = None
    asked: str | None = None
    """LangGraph's ``interrupt()`` paused the run: what it asked (its values, as text); the
    run then ends ``interrupted``, waiting for a person, never as a failure."""
    conversation: Conversation = field(default_factory=Conversation)
    pending: list[BaseMessage] = field(default_factory=list)
    """Replies and tool results since the last ``model_call_start`` carried messages."""
    _in_flight: dict[UUID, _Call] = field(default_factory=dict)
    _tools: dict[UUID, _Tool] = field(default_factory=dict)
    _requested: dict[str, tuple[int, str, Any]] = field(default_factory=dict)
    """Tool calls asked for and not yet reported: id -> (round, name, args)."""
    _raised: dict[str, _Tool] = field(default_factory=dict)
    """Tool runs that raised, waiting for the framework's error ``ToolMessage``."""
    _reported: set[str] = field(default_factory=set)
    _started: set[str] = field(default_factory=set)
    _bound: set[str] = field(default_factory=set)
    _repeats: RepeatedCalls = field(default_factory=RepeatedCalls)

    def __post_init__(self) -> None:
        if not self.t0:
            self.t0 = self.clock()
        if not self.started_at:
            self.started_at = datetime.now(UTC).isoformat()

    # -- emitting ---------------------------------------------------------------------
    def emit(self, kind: Callable[..., E], round: int | None = None, **fields: Any) -> E:
        """Make one event of this run and feed it to the observers."""
        event = kind(
            run_id=self.run_id,
            round=self.round if round is None else round,
            t=max(0.0, self.clock() - self.t0),
            **fields,
        )
        notify(self.observers, event)
        return event

    def ensure_started(self, *, model_name: str | None = None, tools: tuple[str, ...] = ()) -> None:
        """Announce the run (once), at its first model or tool call."""
        if self.started:
            return
        self.started = True
        self.emit(
            ev.LoopStarted,
            model_name=model_name,
            tools=tools,
            max_rounds=None,
            token_budget=None,
            context_window=None,
            usd_limit=None,
            prune_tools=(),
            input_messages=self.input_messages or 0,
            started_at=self.started_at,
            source="langchain",
            name=self.name,
            tags=self.tags,
            metadata=self.metadata if self.metadata is not None else frozen_json({}),
            parent_run_id=self.parent_run_id,
            parent_tool_call_id=self.parent_tool_call_id,
        )

    # -- model calls ------------------------------------------------------------------
    def model_start(
        self,
        key: UUID,
        prompt: Sequence[BaseMessage],
        *,
        model_name: str | None,
        tools: tuple[str, ...],
        streaming: bool,
    ) -> None:
        """A chat-model call was sent."""
        if self.ended:
            return
        if self.input_messages is None:
            self.input_messages = len(prompt)
        self.ensure_started(model_name=model_name, tools=tools)
        fresh = self.conversation.new(prompt)
        self._answered_by(fresh)
        self._close_raised()
        purpose: Purpose = "synthesis" if self.tools_bound and not tools else "round"
        self.tools_bound = self.tools_bound or bool(tools)
        self._bound.update(tools)
        if not (self.retry_next and self.round):
            self.round += 1
            if purpose == "round":
                self.emit(ev.RoundStarted, max_rounds=None)
        self.retry_next = False
        self.calls += 1
        number = self.calls
        model_call_started(
            self.emit,
            number,
            purpose=purpose,
            model_name=model_name,
            tools=tools if purpose == "round" else (),
            messages=message_dicts(fresh),
            streaming=streaming,
        )
        self.pending = []
        self._in_flight[key] = _Call(
            number,
            self.round,
            purpose,
            model_name,
            prompt,
            self.clock(),
            DeltaBuffer(delta_sink(self._at(self.round), number), clock=self.clock),
        )

    def _at(self, round: int) -> Emit:
        """:meth:`emit` for events of ``round`` (a call or tool may land in a later one)."""
        return partial(self.emit, round=round)

    def model_token(self, key: UUID, chunk: AIMessageChunk) -> None:
        """A streamed fragment arrived (coalesced into ``model_delta`` events)."""
        call = self._in_flight.get(key)
        if call is None:
            return
        if call.first_token_s is None:
            call.first_token_s = self.clock() - call.started
        call.deltas.feed(chunk)

    def _landed(self, key: UUID) -> _Call | None:
        """The call ``key`` that just returned or raised (no longer in flight), its
        streamed fragments sent; ``None`` for a call this run never started."""
        call = self._in_flight.pop(key, None)
        if call is not None:
            call.deltas.flush()
        return call

    def model_end(self, key: UUID, reply: AIMessage) -> None:
        """A chat-model call returned ``reply``: its usage, cost and event."""
        call = self._landed(key)
        if call is None:
            return
        timing = CallTiming(self.clock() - call.started, call.first_token_s)
        name, usage = priced_usage(
            reply, call.prompt, model=None, fallback=call.model_name, prices=self.prices
        )
        self.usage = self.usage + usage
        event = model_called(
            self._at(call.round),
            reply,
            call.number,
            timing,
            self._repeats,
            purpose=call.purpose,
            model_name=name,
            usage=usage,
            accumulated=self.usage,
        )
        for view in event.tool_calls:
            if view.id and view.id not in self._reported:
                self._requested[view.id] = (call.round, view.name, view.args)
        if call.purpose == "round":
            self.rounds_done += 1
        else:
            self.synthesis_run = True
        self.last_reply = reply
        self.partial_text = None
        self.pending.append(reply)
        self._settle()

    def model_error(self, key: UUID, error: BaseException) -> None:
        """A chat-model call raised: no reply, no usage; the next call is its retry."""
        call = self._landed(key)
        if call is None:
            return
        self.partial_text = call.deltas.partial_text or None
        self.retry_next = True
        model_call_failed(
            self._at(call.round),
            error,
            number=call.number,
            purpose=call.purpose,
            latency_s=self.clock() - call.started,
            partial_text=self.partial_text,
        )
        self._settle()

    # -- tools ------------------------------------------------------------------------
    def tool_start(
        self,
        key: UUID,
        call_id: str | None,
        name: str,
        args: Any,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """A tool began running. ``call_id`` is ``None`` when the framework ran the tool
        without its tool call (a classic ``AgentExecutor``, a loop calling
        ``tool.invoke(call["args"])``): the open call with the same name and arguments is
        the one it answers, and a framework's stand-in for an unknown tool (``invalid_tool``)
        answers the call that named it. ``metadata``, the tool's, names its MCP server
        for a tool of ``mcp_tools``. Returns the call id the tool answers."""
        if self.ended:
            return call_id or str(key)
        self.ensure_started()
        frozen = freeze(json_safe(args))
        stand_in = False
        if call_id is None:
            call_id, stand_in = self._match(name, frozen)
        if call_id is None:
            call_id = str(key)
        self._started.add(call_id)
        asked = self._requested.get(call_id)
        round, shown = (asked[0], asked[2]) if asked else (self.round, frozen)
        if stand_in:
            assert asked is not None
            name = asked[1]
        tool = _Tool(call_id, name, shown, round, self.clock(), stand_in=stand_in)
        if not stand_in:
            tool.server, tool.site = identity_of(metadata), site_of(metadata)
            tool.log_mark = tool.site.log.count if tool.site is not None else 0
        self._tools[key] = tool
        if not stand_in:  # an unknown tool never starts
            tool_started(
                self._at(round),
                call_id=call_id,
                name=name,
                args=shown,
                server=tool.server,
                session_id=tool.site.session_id if tool.site is not None else None,
            )
        return call_id

    def _match(self, name: str, args: Any) -> tuple[str | None, bool]:
        for call_id, (_round, asked_name, asked_args) in self._requested.items():
            if call_id in self._started:
                continue
            if asked_name == name and asked_args == args:
                return call_id, False
            stand_in = name == _STAND_IN and isinstance(args, Mapping)
            if stand_in and args.get("requested_tool_name") == asked_name:
                return call_id, True
        return None, False

    def tool_end(self, key: UUID, output: Any) -> None:
        """A tool returned ``output`` (a ``ToolMessage`` when it was given a tool call)."""
        tool = self._tools.pop(key, None)
        if tool is None:
            return
        message = _tool_message(output, tool.call_id)
        status: Literal["success", "error"]
        content: str | list[Any]
        if message is not None:
            self.pending.append(message)
            status = "error" if message.status == "error" else "success"
            content = message.content
        else:
            status = "success"
            content = output if isinstance(output, str) or is_blocks(output) else dumps(output)
        if tool.stand_in:  # the call named a tool nobody has: the loop's own error for it
            self._dispatch(
                tool,
                status="error",
                error_reason="not_available",
                content=content,
                duration_s=0.0,
            )
        else:
            self._dispatch(
                tool,
                status=status,
                error_reason="tool_error" if status == "error" else None,
                content=content,
                duration_s=self.clock() - tool.started,
                structured=structured_of(message.artifact) if message is not None else None,
            )
        self._settle()

    def tool_error(self, key: UUID, error: BaseException) -> None:
        """A tool raised. The framework may answer the call with an error ``ToolMessage``
        (reported then, with its text) or let the error end the run."""
        tool = self._tools.pop(key, None)
        if tool is None:
            return
        self.interrupted_by(error)
        if not _bubbles_up(error):  # an interrupt or hand-off leaves the call unanswered
            tool.duration_s = self.clock() - tool.started
            tool.error_reason = _error_reason(error)
            if tool.error_reason == "tool_error":
                tool.error_type = error_name(error)
            tool.error_text = explain(error)
            self._raised[tool.call_id] = tool
        self._settle()

    def chain_output(self, outputs: Any) -> None:
        """A chain inside the run ended: answers to open calls may be in its output."""
        if not self.ended and (self._requested or self._raised):
            self._answered_by(messages_in(outputs))

    def _answered_by(self, messages: Any) -> None:
        """Report calls answered by ``ToolMessage``s no tool callback reported."""
        if not (self._requested or self._raised):
            return
        for message in messages:
            if not isinstance(message, ToolMessage):
                continue
            call_id = message.tool_call_id
            raised = self._raised.pop(call_id, None)
            status: Literal["success", "error"]
            status = "error" if message.status == "error" else "success"
            if raised is not None:
                self._dispatch(
                    raised,
                    status=status,
                    error_reason=raised.error_reason if status == "error" else None,
                    content=message.content,
                    duration_s=raised.duration_s,
                    error_type=raised.error_type if status == "error" else None,
                )
                continue
            asked = self._requested.get(call_id)
            if asked is None or call_id in self._reported:
                continue
            round, name, args = asked
            reason = None
            if status == "error":
                reason = "unknown" if name in self._bound else "not_available"
            self._dispatch(
                _Tool(call_id, name, args, round, 0.0),
                status=status,
                error_reason=reason,
                content=message.content,
                duration_s=0.0,
                ran=reason == "not_available",  # a call to no tool is an error of the call
            )

    def _close_raised(self) -> None:
        """Tools that raised and got no error ``ToolMessage``: report the exception."""
        for tool in list(self._raised.values()):
            self._dispatch(
                tool,
                status="error",
                error_reason=tool.error_reason,
                content=tool.error_text,
                duration_s=tool.duration_s,
                error_type=tool.error_type,
            )
        self._raised.clear()

    def _dispatch(
        self,
        tool: _Tool,
        *,
        status: Literal["success", "error"],
        error_reason: str | None,
        content: str | list[Any],
        duration_s: float,
        ran: bool = True,
        error_type: str | None = None,
        structured: Any = None,
    ) -> None:
        self._raised.pop(tool.call_id, None)
        self._requested.pop(tool.call_id, None)
        self._reported.add(tool.call_id)
        said = tool.site.log.since(tool.log_mark) if tool.site is not None else None
        if tool.server is not None and said is not None:  # what its server said meanwhile
            server_logged(self._at(tool.round), tool.server.name, said, tool.call_id)
        tool_dispatched(
            self._at(tool.round),
            tool.call_id,
            content,
            name=tool.name,
            args=tool.args,
            status=status,
            error_reason=error_reason,
            duration_s=max(0.0, duration_s),
            ran=ran,
            error_type=error_type,
            server=tool.server.name if tool.server is not None else None,
            structured=structured,
        )

    # -- the end ----------------------------------------------------------------------
    def finish(self, outputs: Any) -> None:
        """The run returned ``outputs``; its end is sent once nothing it started is out."""
        if self.ended or self._end_held is not None:
            return
        if not self.started:
            self.ended = True
            return
        self._end_held = partial(self._finished, outputs, self.last_reply)
        self._settle()

    def interrupted_by(self, error: BaseException) -> None:
        """A chain or tool of the run raised ``error``: an ``interrupt()`` pauses the run
        (the graph returns, or raises it to its caller), so it ends ``interrupted``."""
        if "GraphInterrupt" in _names(error) and self.asked is None:
            self.asked = _asked(error)

    def fail(self, error: BaseException, *, announce: bool = False) -> None:
        """The run raised ``error``; ``announce`` reports a run that failed before its
        first model or tool call too (a top-level run). Model calls still out were
        cancelled with it and end here; its end waits for the tools still running. An
        ``interrupt()`` that reached the run's root is no failure: the run finishes."""
        if self.ended or self._end_held is not None:
            return
        self.interrupted_by(error)
        if self.asked is not None and not _is_cancel(error):
            self.finish(None)
            return
        if not (self.started or announce):
            self.ended = True
            return
        self.ensure_started()
        for call in self._in_flight.values():  # a stop mid-call: keep what had streamed
            call.deltas.flush()
            self.partial_text = call.deltas.partial_text or self.partial_text
        self._in_flight.clear()
        self._end_held = partial(self._failed, error)
        self._settle()

    def _settle(self) -> None:
        """Send the held end once no call or tool of the run is still out."""
        end = self._end_held
        if end is None or self._in_flight or self._tools:
            return
        self._end_held = None
        end()

    def _finished(self, outputs: Any, last: AIMessage | None) -> None:
        """``loop_finish``; ``last`` is the reply the run had when its root returned (a
        call it did not wait for may land after it)."""
        self.chain_output(outputs)
        self._close_raised()
        self.ended = True
        asked = self.asked
        text = _final_text(outputs, last) if asked is None else asked
        self.emit(
            ev.LoopFinished,
            final_text=text,
            rounds=self.rounds_done,
            usage=self.usage,
            budget_exhausted=False,
            synthesis_was_run=self.synthesis_run,
            synthesis_reason=None,
            outcome=finish_outcome(
                budget_exhausted=False,
                synthesis_was_run=self.synthesis_run,
                interrupted=asked is not None,
            ),
            final_empty=not text if asked is not None else last is None or is_empty(last),
            final_truncated=asked is None and last is not None and is_truncated(last),
            messages=message_dicts(self.pending),
        )

    def _failed(self, error: BaseException) -> None:
        """``loop_failure``, with the partial counts."""
        self._close_raised()
        self.ended = True
        cancelled = _is_cancel(error)
        kind = _str_attr(error, "kind")
        reason = _str_attr(error, "reason")
        self.emit(
            ev.LoopFailed,
            **failure_fields(error, kind=kind, reason=reason, cancelled=cancelled),
            rounds=self.rounds_done,
            usage=self.usage,
            any_invocation_made=self.calls > 0,
            messages=message_dicts(self.pending),
            partial_text=self.partial_text,
        )


def _tool_message(output: Any, call_id: str) -> ToolMessage | None:
    """The ``ToolMessage`` answering ``call_id`` in a tool's output, if there is one."""
    if isinstance(output, ToolMessage):
        return output
    for message in messages_in(output):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return message
    return None


def _final_text(outputs: Any, last: AIMessage | None) -> str:
    """The run's answer: the text it returned, else the last message of its output (a
    ``return_direct`` tool's result), else the last reply."""
    if isinstance(outputs, str):
        return outputs
    final: BaseMessage | None = None
    for message in messages_in(outputs):
        final = message
    if final is None:
        final = last
    return str(final.text) if final is not None else ""  # not a TextAccessor


def _names(error: BaseException) -> set[str]:
    return {kind.__name__ for kind in type(error).__mro__}


def _asked(error: BaseException) -> str:
    """What an ``interrupt()`` asked: its values as text, one a line (a string as it is,
    anything else as JSON)."""
    found = error.args[0] if error.args else ()
    values = found if isinstance(found, (list, tuple)) else (found,)
    said = []
    for item in values:
        value = getattr(item, "value", item)
        said.append(value if isinstance(value, str) else dumps(json_safe(value)))
    return "\n".join(said)


def _bubbles_up(error: BaseException) -> bool:
    """LangGraph's control flow (an interrupt, a hand-off), not a failure."""
    return "GraphBubbleUp" in _names(error)


def _is_cancel(error: BaseException) -> bool:
    """The run was stopped: a cancelled task, Ctrl-C, or a consumer that closed the stream
    before it ended (``GeneratorExit``)."""
    stops = {"CancelledError", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
    return bool(_names(error) & stops)


def _error_reason(error: BaseException) -> str:
    """Why a tool run raised, in the loop's words where they fit."""
    if _is_cancel(error):
        return "cancelled"
    names = _names(error)
    if names & {"ValidationError", "ToolInvocationError"}:
        return "invalid_call"
    if "TimeoutError" in names:
        return "timeout"
    return "tool_error"


def _str_attr(error: BaseException, name: str) -> str | None:
    value = getattr(error, name, None)
    return value if isinstance(value, str) else None
