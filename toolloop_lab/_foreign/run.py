"""``ForeignRun``: one run of an agent we did not write, told as the loop's typed events.

Two adapters feed it what they see: :mod:`.langchain` (LangChain callbacks) and
:mod:`.spans` (OpenTelemetry spans). Each decides which run a callback or a span belongs
to and reads the facts off it (a prompt, a reply, a tool's result, an error); this class
is the one lifecycle those facts follow, in the order the loop emits its own events, so a
run seen through callbacks and one seen through spans read alike:

* **start**: ``loop_start`` (``source`` names the adapter), with what the source says of
  the run (name, labels, the run and tool call a nested run answers); nothing a source
  cannot know is shown as known: no gate, round cap, token budget or context window;
* **model calls**: each call is ``model_call_start`` (a ``round_start`` first unless it is
  a retry, a call after one that failed, or not a round: a call without tools after calls
  with tools is synthesis-like, ``purpose="synthesis"``), coalesced ``model_delta`` while it
  streams, then ``model_call`` (usage as reported, else estimated and flagged ``estimated``;
  priced by genai-prices or ``prices``, else unpriced) or ``model_call_failed``;
* **the conversation carried**: each message once, the first time it is known: a call's
  start carries what its prompt holds that no event carried yet (when a source records a
  prompt only at the call's end, the next call's start carries it, and the tool results
  since the last reply); a reply is carried after its call, by the next call's start or the
  run's end, with the results that came after it;
* **tool calls**: ``tool_start`` and exactly one ``tool_dispatch`` per call the model asked
  for, by the rule below;
* **the end**: ``loop_finish`` (an ``interrupt()`` that paused the run ends it
  ``interrupted``) or ``loop_failure`` (partial counts, streamed text), always its last
  event: a tool still running or a call still out either lands first (a source that will
  still report it: callbacks, ``wait=True``) or is closed with the end (a source whose run
  has ended for good: spans): a tool as ``cancelled``, a call as ``model_call_failed``
  ``incomplete``, keeping what it streamed. A call still out when a run fails is closed
  at once: no source reports the end of a call its run cancelled. Nothing changes an
  ended run.

**One rule matches a result to its call.** The calls *open* for a result are those the
model asked for (by their id, in its replies) that no result has answered yet. A call's
answer is the first of:

1. a tool run that names the call's id (a callback's ``tool_call_id``, a span's
   ``gen_ai.tool.call.id``);
2. a tool run that names none (a classic ``AgentExecutor``, a loop calling
   ``tool.invoke(call["args"])``, OpenInference's tool spans): among the open calls no tool
   has started for, the newest reply's first, the one with the same tool name and
   arguments; else the one a framework's stand-in for an unknown tool (``invalid_tool``)
   names; else the first of the same tool name (a framework may have checked or filled in
   the arguments). A tool run that matches no call is a call of its own, under the id its
   adapter gives it. A tool that answers a call reads as the call the model asked for
   (its arguments, its round);
3. a result the framework sent the model without a tool run reporting it (a
   ``ToolMessage`` naming the call in a later prompt or a chain's output): ``ran=False``,
   an error result reading as ``unknown`` if the run had the tool bound, else as the loop
   reports a call to no tool: an error of the call (``not_available``, ``ran=True``).

A tool that raised without a result is answered by the framework's result when one comes
(3, with the tool's own timing and error type: it is what the model was told), else by its
error's text at the next call or the run's end. A result answers its call once; a later
one for the same call changes nothing. A result whose tool failed reads as an error in
every prompt that carries it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Final, Literal, TypeVar

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
from toolloop_lab._spend.pricing import PriceTable, call_price
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import finish_outcome, message_dicts, notify
from toolloop_lab._support.jsonsafe import freeze, frozen_json, json_safe
from toolloop_lab._tools.content import structured_of
from toolloop_lab._tools.servers import ServerIdentity, ServerSite, identity_of, site_of

from .conversation import Conversation

STAND_IN: Final = "invalid_tool"
"""The tool a classic ``AgentExecutor`` runs in place of one the model named but nobody has."""

E = TypeVar("E", bound=ev.Event)
Stamp = float
"""A time in the adapter's own unit (:attr:`ForeignRun.per_second` of them to a second):
the clock's seconds for callbacks, a span's nanoseconds since the epoch for spans."""
Clock = Callable[[], float]
Status = Literal["success", "error"]


@dataclass(frozen=True, slots=True)
class Counts:
    """Token counts a source reports beside a reply (a span's usage attributes); ``None``
    is unknown. A reply's own ``usage_metadata`` is read when this is not given."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """What ended a failed run: the fields of a ``loop_failure`` that say so."""

    error_type: str
    message: str
    error_kind: str | None = None
    reason: str | None = None
    cause_type: str | None = None
    cancelled: bool = False
    outcome: ev.Outcome = "failed"


@dataclass(frozen=True, slots=True)
class SourceError:
    """An error as a source reports it (a span's error status), not an exception of ours."""

    error_type: str
    message: str


INCOMPLETE: Final = SourceError("incomplete", "the run ended first")
"""A call still out when its run ended: closed with the run."""


@dataclass(frozen=True, slots=True)
class Said:
    """What a source says of the run's end that our events carry (our own export's
    ``toolloop.*`` attributes, read back); ``None`` is not said."""

    outcome: Any = None
    rounds: int | None = None
    budget_exhausted: bool = False
    synthesis_reason: Any = None


@dataclass(slots=True, eq=False)
class _Call:
    """A model call in flight."""

    number: int
    round: int
    purpose: ev.CallPurpose
    model_name: str | None
    prompt: Sequence[BaseMessage]
    started: Stamp
    deltas: DeltaBuffer | None
    first_token_s: float | None = None


@dataclass(slots=True, eq=False)
class _Tool:
    """A tool run in flight, or one that raised and waits for the framework's answer."""

    call_id: str
    name: str
    args: Any
    round: int
    started: Stamp
    stand_in: bool = False
    """The framework ran its stand-in for an unknown tool: the call itself never ran."""
    duration_s: float = 0.0
    status: ev.ToolStatus = "error"
    error_reason: str = "tool_error"
    error_type: str | None = None
    error_text: str = ""
    server: ServerIdentity | None = None
    """The MCP server its tool came from (the tool's metadata names it, ``mcp_tools``)."""
    site: ServerSite | None = None
    log_mark: int = 0
    """The server's log line count as the call began: what came after sits beside it."""


@dataclass(frozen=True, slots=True)
class _Asked:
    """A call a reply asked for that no result has answered yet."""

    round: int
    name: str
    args: Any


@dataclass(slots=True, eq=False)
class ForeignRun:
    """One run seen from outside; the module doc says what becomes which event."""

    observers: tuple[ev.Observer, ...]
    run_id: str
    source: Literal["langchain", "otel"]
    t0: Stamp
    per_second: float = 1.0
    clock: Clock = time.perf_counter
    """Read only for streamed fragments (coalesced by time), in the unit of ``t0``."""
    prices: PriceTable | None = None
    started_at: str = ""
    name: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Any = None
    """The run's labels as frozen JSON (LangChain's ``config={"metadata": ...}``)."""
    parent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    input_messages: int | None = None
    model_name: str | None = None
    """The model the run's start names."""
    started: bool = False
    ended: bool = False
    round: int = 0
    rounds_done: int = 0
    """Rounds whose model call replied (a retried call counts once)."""
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    synthesis_run: bool = False
    tools_bound: bool = False
    """Some call of this run had tools bound (a later call without tools is synthesis)."""
    retry_next: bool = False
    """The last model call failed: the next one is a retry of the same round."""
    last_reply: AIMessage | None = None
    partial_text: str | None = None
    asked: str | None = None
    """An ``interrupt()`` paused the run: what it asked; the run then ends ``interrupted``,
    waiting for a person, never as a failure."""
    conversation: Conversation = field(default_factory=Conversation)
    seen: list[BaseMessage] = field(default_factory=list)
    """The conversation as last read (a prompt, then it and its reply)."""
    pending: list[BaseMessage] = field(default_factory=list)
    """Messages learnt that no event carried yet (replies, prompts read at a call's end):
    the next call's start or the run's end carries them."""
    answers: dict[str, ToolMessage] = field(default_factory=dict)
    """Tool results no prompt has carried yet (the run's end carries those still here)."""
    _calls: dict[Hashable, _Call] = field(default_factory=dict)
    _tools: dict[Hashable, _Tool] = field(default_factory=dict)
    _asked: dict[str, _Asked] = field(default_factory=dict)
    _tool_ran: set[str] = field(default_factory=set)
    """Open calls a tool has started for."""
    _answered: set[str] = field(default_factory=set)
    _raised: dict[str, _Tool] = field(default_factory=dict)
    _failed: set[str] = field(default_factory=set)
    """Calls whose tool failed: their results in a later prompt read as errors."""
    _bound: set[str] = field(default_factory=set)
    _repeats: RepeatedCalls = field(default_factory=RepeatedCalls)
    _end_held: Callable[[Stamp], None] | None = None
    """The run's end, held until nothing it started is still out (:meth:`_settle`)."""

    # -- emitting -------------------------------------------------------------------------
    def seconds(self, since: Stamp, until: Stamp) -> float:
        """The seconds from ``since`` to ``until`` (never negative)."""
        return max(0.0, (until - since) / self.per_second)

    def emit(self, kind: Callable[..., E], at: Stamp, round: int | None = None, **fields: Any) -> E:
        """Make one event of this run at ``at`` and feed it to the observers."""
        event = kind(
            run_id=self.run_id,
            round=self.round if round is None else round,
            t=self.seconds(self.t0, at),
            **fields,
        )
        notify(self.observers, event)
        return event

    def _at(self, at: Stamp, round: int) -> Emit:
        """:meth:`emit` at ``at`` for events of ``round`` (a call or tool may land in a
        later round than the one it began in)."""
        return partial(self.emit, at=at, round=round)

    def _live(self, round: int) -> Emit:
        """:meth:`emit` at the clock's time, for streamed fragments sent as they coalesce."""

        def emit(kind: Callable[..., E], **fields: Any) -> E:
            return self.emit(kind, self.clock(), round=round, **fields)

        return emit

    def latest(self) -> Stamp:
        """The latest time this run knows: its start, or the start of a call or tool out."""
        starts = [c.started for c in self._calls.values()]
        starts += [t.started for t in self._tools.values()]
        return max([self.t0, *starts])

    # -- the start ----------------------------------------------------------------------
    def start(self, at: Stamp, *, model_name: str | None = None, tools: Sequence[str] = ()) -> None:
        """``loop_start``, once: the run began (a callback run announces itself at its
        first model or tool call)."""
        if self.started:
            return
        self.started = True
        self.model_name = model_name
        self.emit(
            ev.LoopStarted,
            at,
            model_name=model_name,
            tools=tuple(tools),
            max_rounds=None,
            token_budget=None,
            context_window=None,
            usd_limit=None,
            prune_tools=(),
            input_messages=self.input_messages or 0,
            started_at=self.started_at,
            source=self.source,
            name=self.name,
            tags=self.tags,
            metadata=self.metadata if self.metadata is not None else frozen_json({}),
            parent_run_id=self.parent_run_id,
            parent_tool_call_id=self.parent_tool_call_id,
        )

    # -- model calls --------------------------------------------------------------------
    def call_started(
        self,
        key: Hashable,
        at: Stamp,
        *,
        prompt: Sequence[BaseMessage] | None,
        model_name: str | None,
        tools: Sequence[str] = (),
        streaming: bool = False,
        purpose: ev.CallPurpose | None = None,
        pruned_call_id: str | None = None,
    ) -> None:
        """A model call was sent with ``prompt`` (``None``: not known at its start).
        ``purpose`` is what the source says the call is (else: a round, or synthesis-like
        after calls with tools); a pruning call's prompt is its own, not the conversation's,
        and ``pruned_call_id`` names the tool call whose result it prunes."""
        if self.ended:
            return
        if self.input_messages is None and prompt is not None:
            self.input_messages = len(prompt)
        self.start(at, model_name=model_name, tools=tools)
        if purpose == "pruning":
            self._aside_started(key, at, "pruning", prompt or [], model_name, pruned_call_id)
            return
        if purpose == "summarization":
            self._aside_started(key, at, "summarization", prompt or [], model_name)
            return
        fresh = self._fresh(prompt)
        self._answered_by(fresh, at)
        self._close_raised(at)
        if purpose is None:
            purpose = "synthesis" if self.tools_bound and not tools else "round"
        self.tools_bound = self.tools_bound or bool(tools)
        self._bound.update(tools)
        if not (self.retry_next and self.round):
            self.round += 1
            if purpose == "round":
                self.emit(ev.RoundStarted, at, max_rounds=None)
        self.retry_next = False
        self.calls += 1
        sent, self.pending = [*self.pending, *fresh], []
        model_call_started(
            self._at(at, self.round),
            self.calls,
            purpose=purpose,
            model_name=model_name,
            tools=tuple(tools) if purpose == "round" else (),
            messages=message_dicts(sent),
            streaming=streaming,
        )
        deltas = DeltaBuffer(delta_sink(self._live(self.round), self.calls), clock=self.clock)
        self._calls[key] = _Call(
            self.calls, self.round, purpose, model_name, prompt or [], at, deltas
        )

    def _aside_started(
        self,
        key: Hashable,
        at: Stamp,
        purpose: Literal["pruning", "summarization"],
        prompt: Sequence[BaseMessage],
        model: str | None,
        call_id: str | None = None,
    ) -> None:
        """A call beside the conversation (our own export's, read back): a pruning call
        (no round; ``call_id`` the tool call whose result it prunes) or a summarization
        call (LangChain's ``SummarizationMiddleware`` in a ``create_agent`` run, a call of
        the round). Numbered as a call; its prompt is its own, not the conversation's."""
        self.calls += 1
        self.emit(
            ev.ModelCallStarted,
            at,
            call=self.calls,
            purpose=purpose,
            model_name=model,
            tools=(),
            messages=message_dicts(prompt),
            tool_call_id=call_id,
        )
        self._calls[key] = _Call(self.calls, self.round, purpose, model, prompt, at, None)

    def call_summarized(
        self,
        key: Hashable,
        at: Stamp,
        reply: AIMessage,
        *,
        prompt: Sequence[BaseMessage],
        counts: Counts | None = None,
    ) -> None:
        """A summarization call returned: ``model_call``, its usage counted in the run's;
        the conversation is not touched (the summary is the framework's)."""
        call = self._landed(key)
        if call is None:
            return
        name, usage = self._usage(reply, list(prompt), counts, call.model_name)
        self.usage = self.usage + usage
        model_called(
            self._at(at, call.round),
            reply,
            call.number,
            CallTiming(self.seconds(call.started, at)),
            self._repeats,
            purpose="summarization",
            model_name=name,
            usage=usage,
            accumulated=self.usage,
        )
        self._settle(at)

    def purpose_of(self, key: Hashable) -> ev.CallPurpose | None:
        """What call ``key`` still out is (``None``: none is)."""
        call = self._calls.get(key)
        return call.purpose if call is not None else None

    def call_token(self, key: Hashable, chunk: AIMessageChunk) -> None:
        """A streamed fragment arrived (coalesced into ``model_delta`` events)."""
        call = self._calls.get(key)
        if call is None or call.deltas is None:
            return
        if call.first_token_s is None:
            call.first_token_s = self.seconds(call.started, self.clock())
        call.deltas.feed(chunk)

    def _landed(self, key: Hashable) -> _Call | None:
        """The call ``key`` that just returned or raised, its streamed fragments sent;
        ``None`` for a call this run never started (or closed already)."""
        call = self._calls.pop(key, None)
        if call is not None and call.deltas is not None:
            call.deltas.flush()
        return call

    def call_replied(
        self,
        key: Hashable,
        at: Stamp,
        reply: AIMessage,
        *,
        prompt: Sequence[BaseMessage] | None = None,
        counts: Counts | None = None,
        first_token_s: float | None = None,
    ) -> None:
        """A model call returned ``reply``: its usage, cost and event. ``prompt`` is the
        prompt when the source records it only now (else the one it was sent with);
        ``counts`` what the source reports beside the reply."""
        call = self._landed(key)
        if call is None:
            return
        sent = list(prompt) if prompt is not None else list(call.prompt)
        fresh = self._carried([*sent, reply])
        self._answered_by(fresh, at)
        self.pending.extend(fresh)
        name, usage = self._usage(reply, sent, counts, call.model_name)
        self.usage = self.usage + usage
        first = call.first_token_s if first_token_s is None else first_token_s
        event = model_called(
            self._at(at, call.round),
            reply,
            call.number,
            CallTiming(self.seconds(call.started, at), first),
            self._repeats,
            purpose="synthesis" if call.purpose == "synthesis" else "round",
            model_name=name,
            usage=usage,
            accumulated=self.usage,
        )
        for view in event.tool_calls:
            if view.id and view.id not in self._answered:
                self._asked[view.id] = _Asked(call.round, view.name, view.args)
        if call.purpose == "round":
            self.rounds_done += 1
        else:
            self.synthesis_run = True
        self.last_reply = reply
        self.partial_text = None
        self._settle(at)

    def call_pruned(
        self,
        key: Hashable,
        at: Stamp,
        reply: AIMessage,
        *,
        prompt: Sequence[BaseMessage],
        counts: Counts | None,
        tool_call_id: str,
        tool_name: str,
        tokens_before: int,
        tokens_after: int,
    ) -> None:
        """A pruning call returned: ``pruning``, its usage counted in the run's."""
        call = self._landed(key)
        if call is None:
            return
        name, usage = self._usage(reply, prompt, counts, call.model_name)
        self.usage = self.usage + usage
        self.emit(
            ev.Pruned,
            at,
            round=call.round,
            call=call.number,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            model_name=name,
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            usage=usage,
            latency_s=self.seconds(call.started, at),
            original="",
            pruned=reply.text,
        )
        self._settle(at)

    def call_failed(self, key: Hashable, at: Stamp, error: BaseException | SourceError) -> None:
        """A model call raised (or its source says it failed): no reply, no usage; the
        next call is its retry, in the same round."""
        call = self._landed(key)
        if call is None:
            return
        self._close_call(call, at, error)
        self._settle(at)

    def _close_call(self, call: _Call, at: Stamp, error: BaseException | SourceError) -> None:
        aside = call.purpose in ("pruning", "summarization")  # not a call of the conversation
        if not aside:
            self.retry_next = True
            self.partial_text = call.deltas.partial_text or None if call.deltas else None
        partial = self.partial_text if not aside else None
        latency = self.seconds(call.started, at)
        emit = self._at(at, call.round)
        if isinstance(error, BaseException):
            model_call_failed(
                emit,
                error,
                number=call.number,
                purpose=call.purpose,
                latency_s=latency,
                partial_text=partial,
            )
            return
        emit(
            ev.ModelCallFailed,
            call=call.number,
            purpose=call.purpose,
            error_type=error.error_type,
            message=error.message,
            latency_s=latency,
            partial_text=partial,
        )

    def _usage(
        self,
        reply: AIMessage,
        prompt: Sequence[BaseMessage],
        counts: Counts | None,
        fallback: str | None,
    ) -> tuple[str | None, Usage]:
        """A reply's usage: as the source reports it (``counts``, else the reply's own);
        what it does not report is estimated from the prompt and reply and flagged; priced
        by genai-prices or :attr:`prices`."""
        if counts is not None and None not in (counts.input_tokens, counts.output_tokens):
            reply = reply.model_copy(update={"usage_metadata": _usage_metadata(counts)})
        name, usage = priced_usage(reply, prompt, model=None, fallback=fallback, prices=self.prices)
        if counts is not None and reply.usage_metadata is None:  # keep the counts it gave
            known: dict[str, Any] = {k: v for k, v in _fields(counts).items() if v is not None}
            if known:
                usage = replace(usage, **known)
                usage = usage.with_cost(call_price(usage, (name, fallback), self.prices))
        return name, usage

    # -- the conversation ---------------------------------------------------------------
    def _fresh(self, prompt: Sequence[BaseMessage] | None) -> list[BaseMessage]:
        """What a call is sent that no event carried yet: the new part of its prompt, or,
        when the source records the prompt only at the call's end, the tool results since
        the last reply (a framework sends those next, so the round shows them as sent)."""
        if prompt is not None:
            return self._carried(list(prompt))
        answers = list(self.answers.values())
        return self._carried([*self.seen, *answers]) if answers else []

    def _carried(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        """The messages of ``messages`` (the conversation so far) no event carried yet,
        results of tools that failed marked as errors (a prompt may record a result's text
        without its status); the results they carry are no longer pending."""
        self.seen = messages
        out: list[BaseMessage] = []
        for m in self.conversation.new(messages):
            if isinstance(m, ToolMessage):
                self.answers.pop(m.tool_call_id, None)
                if m.tool_call_id in self._failed and m.status != "error":
                    m = m.model_copy(update={"status": "error"})
            out.append(m)
        return out

    # -- tools ----------------------------------------------------------------------------
    def tool_started(
        self,
        key: Hashable,
        at: Stamp,
        *,
        call_id: str | None,
        name: str,
        args: Any,
        own_id: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> str:
        """A tool began running; ``call_id`` is the call it names (``None``: none, and the
        rule of the module doc finds it; ``own_id`` when no open call matches); ``metadata``,
        the tool's, names its MCP server for a tool of ``mcp_tools``. Returns the call id the
        tool answers."""
        if self.ended:
            return call_id or own_id
        self.start(at)
        frozen = freeze(json_safe(args))
        stand_in = False
        if call_id is None:
            call_id, stand_in = self.match(name, frozen)
        call_id = call_id or own_id
        self._tool_ran.add(call_id)
        asked = self._asked.get(call_id)
        round, shown = (asked.round, asked.args) if asked else (self.round, frozen)
        if stand_in and asked is not None:
            name = asked.name
        tool = _Tool(call_id, name, shown, round, at, stand_in=stand_in)
        if not stand_in:
            tool.server, tool.site = identity_of(metadata), site_of(metadata)
            tool.log_mark = tool.site.log.count if tool.site is not None else 0
        self._tools[key] = tool
        if not stand_in:  # an unknown tool never starts
            tool_started(
                self._at(at, round),
                call_id=call_id,
                name=name,
                args=shown,
                server=tool.server,
                session_id=tool.site.session_id if tool.site is not None else None,
            )
        return call_id

    def match(self, name: str, args: Any) -> tuple[str | None, bool]:
        """The open call a tool run that names no call answers (the module doc's rule 2),
        and whether the tool is the framework's stand-in for an unknown tool."""
        waiting = [(i, a) for i, a in self._asked.items() if i not in self._tool_ran]
        waiting.sort(key=lambda item: -item[1].round)  # the newest reply first, in order
        for call_id, asked in waiting:
            if asked.name == name and asked.args == args:
                return call_id, False
        if name == STAND_IN and isinstance(args, Mapping):
            for call_id, asked in waiting:
                if args.get("requested_tool_name") == asked.name:
                    return call_id, True
        for call_id, asked in waiting:
            if asked.name == name:
                return call_id, False
        return None, False

    def tool_returned(
        self,
        key: Hashable,
        at: Stamp,
        content: str | list[Any],
        *,
        status: ev.ToolStatus = "success",
        error_reason: str | None = None,
        error_type: str | None = None,
        ran: bool = True,
        answer: ToolMessage | None = None,
    ) -> None:
        """A tool ended with ``content`` (``answer``: the message the framework made of
        it, carried by the run's end if no prompt carries it)."""
        tool = self._tools.pop(key, None)
        if tool is None:
            return
        if status != "success":
            self._failed.add(tool.call_id)
        if tool.call_id in self._asked:
            if answer is None and content:
                said: Status = "success" if status == "success" else "error"
                answer = ToolMessage(content, tool_call_id=tool.call_id, status=said)
            if answer is not None:
                self.answers[tool.call_id] = answer
        if tool.stand_in:  # the call named a tool nobody has: the loop's own error for it
            self._dispatch(tool, at, status="error", error_reason="not_available", content=content)
        else:
            self._dispatch(
                tool,
                at,
                status=status,
                error_reason=(error_reason or "tool_error") if status != "success" else None,
                content=content,
                duration_s=self.seconds(tool.started, at) if ran else 0.0,
                ran=ran,
                error_type=error_type if status == "error" else None,
                structured=structured_of(answer.artifact) if answer is not None else None,
            )
        self._settle(at)

    def tool_raised(
        self,
        key: Hashable,
        at: Stamp,
        *,
        text: str,
        error_reason: str = "tool_error",
        error_type: str | None = None,
        status: ev.ToolStatus = "error",
    ) -> None:
        """A tool raised without a result: answered by the framework's result when one
        comes, else by ``text`` (its error) at the next call or the run's end."""
        tool = self._tools.pop(key, None)
        if tool is None:
            return
        self._failed.add(tool.call_id)
        tool.duration_s = self.seconds(tool.started, at)
        tool.status, tool.error_reason, tool.error_text = status, error_reason, text
        tool.error_type = error_type
        self._raised[tool.call_id] = tool
        self._settle(at)

    def tool_left_open(self, key: Hashable, at: Stamp) -> None:
        """A tool stopped without an answer to its call (LangGraph's ``interrupt()`` or a
        hand-off): its call stays open, for the run that resumes it."""
        if self._tools.pop(key, None) is not None:
            self._settle(at)

    def answered_by(self, messages: Iterable[BaseMessage], at: Stamp) -> None:
        """Messages a framework produced (a chain's output): results there answer open
        calls no tool reported (the module doc's rule 3)."""
        if not self.ended:
            self._answered_by(messages, at)

    def _answered_by(self, messages: Iterable[BaseMessage], at: Stamp) -> None:
        if not (self._asked or self._raised):
            return
        for message in messages:
            if not isinstance(message, ToolMessage):
                continue
            call_id = message.tool_call_id
            status: Status = "error" if message.status == "error" else "success"
            raised = self._raised.get(call_id)
            if raised is not None:
                error = status == "error"
                self._dispatch(
                    raised,
                    at,
                    status=raised.status if error else "success",
                    error_reason=raised.error_reason if error else None,
                    content=message.content,
                    duration_s=raised.duration_s,
                    error_type=raised.error_type if error else None,
                )
                continue
            asked = self._asked.get(call_id)
            if asked is None or call_id in self._tool_ran:
                continue
            reason = None
            if status == "error":
                reason = "unknown" if asked.name in self._bound else "not_available"
            self._dispatch(
                _Tool(call_id, asked.name, asked.args, asked.round, at),
                at,
                status=status,
                error_reason=reason,
                content=message.content,
                ran=reason == "not_available",  # a call to no tool is an error of the call
            )

    def _close_raised(self, at: Stamp) -> None:
        """Tools that raised and got no answer from the framework: their error's text."""
        for tool in list(self._raised.values()):
            self._dispatch(
                tool,
                at,
                status=tool.status,
                error_reason=tool.error_reason,
                content=tool.error_text,
                duration_s=tool.duration_s,
                error_type=tool.error_type,
            )

    def _dispatch(
        self,
        tool: _Tool,
        at: Stamp,
        *,
        status: ev.ToolStatus,
        error_reason: str | None,
        content: str | list[Any],
        duration_s: float = 0.0,
        ran: bool = True,
        error_type: str | None = None,
        structured: Any = None,
    ) -> None:
        """``tool_dispatch``: ``tool``'s call is answered, once; what its MCP server wrote
        while it ran comes just before (``server_log``)."""
        self._raised.pop(tool.call_id, None)
        self._asked.pop(tool.call_id, None)
        if tool.call_id in self._answered:
            return
        self._answered.add(tool.call_id)
        said = tool.site.log.since(tool.log_mark) if tool.site is not None else None
        if tool.server is not None and said is not None:  # what its server said meanwhile
            server_logged(self._at(at, tool.round), tool.server.name, said, tool.call_id)
        tool_dispatched(
            self._at(at, tool.round),
            tool.call_id,
            content,
            name=tool.name,
            args=tool.args,
            status=status,
            error_reason=error_reason,
            duration_s=duration_s,
            ran=ran,
            error_type=error_type,
            server=tool.server.name if tool.server is not None else None,
            structured=structured,
        )

    # -- the end --------------------------------------------------------------------------
    def interrupt(self, asked: str) -> None:
        """An ``interrupt()`` paused the run, asking ``asked``: it ends ``interrupted``."""
        if self.asked is None:
            self.asked = asked

    @property
    def ending(self) -> bool:
        """The run has ended, or its end waits for what it started."""
        return self.ended or self._end_held is not None

    def finish(
        self,
        at: Stamp,
        *,
        text: str | None = None,
        messages: Sequence[BaseMessage] = (),
        said: Said | None = None,
        wait: bool,
    ) -> None:
        """The run returned: ``text`` its answer (``None``: its last reply's), ``messages``
        those its output holds (results there answer open calls). ``wait``: calls and
        tools still out will report, and the end waits for them; else they are closed."""
        if self.ending:
            return
        if not self.started:  # no model or tool call: no run at all
            self.ended = True
            return
        last = self.last_reply
        self._end_held = partial(self._finished, text, last, tuple(messages), said or Said())
        if not wait:
            self._close_open(at, INCOMPLETE)
        self._settle(at)

    def fail(
        self, at: Stamp, failure: Failure, *, said_rounds: int | None = None, wait: bool
    ) -> None:
        """The run raised: calls still out were cancelled with it and end here (keeping
        what they streamed); tools still running are waited for (``wait``) or closed."""
        if self.ending:
            return
        self.start(at)
        self._close_calls(at, INCOMPLETE)
        if not wait:
            self._close_open(at, INCOMPLETE)
        self._end_held = partial(self._failed_with, failure, said_rounds)
        self._settle(at)

    def _close_calls(self, at: Stamp, why: SourceError) -> None:
        partial_text = self.partial_text
        for call in list(self._calls.values()):
            if call.deltas is not None:
                call.deltas.flush()
            self._close_call(call, at, why)
            partial_text = self.partial_text or partial_text
        self._calls.clear()
        self.partial_text = partial_text

    def _close_open(self, at: Stamp, why: SourceError) -> None:
        """Calls and tools still out when the run ended for good: stopped with it."""
        self._close_calls(at, why)
        for tool in self._tools.values():
            self._dispatch(
                tool,
                at,
                status="cancelled",
                error_reason="cancelled",
                content="",
                duration_s=self.seconds(tool.started, at),
            )
        self._tools.clear()

    def _settle(self, at: Stamp) -> None:
        """Send the held end once no call or tool of the run is still out."""
        end = self._end_held
        if end is None or self._calls or self._tools:
            return
        self._end_held = None
        end(at)

    def _finished(
        self,
        text: str | None,
        last: AIMessage | None,
        messages: Sequence[BaseMessage],
        said: Said,
        at: Stamp,
    ) -> None:
        """``loop_finish``; ``last`` is the reply the run had when it returned (a call it
        did not wait for may land after it)."""
        self._answered_by(messages, at)
        self._close_raised(at)
        self.ended = True
        asked = self.asked
        if asked is not None:
            text = asked
        elif text is None:
            text = str(last.text) if last is not None else ""
        outcome = finish_outcome(
            budget_exhausted=False,
            synthesis_was_run=self.synthesis_run,
            interrupted=asked is not None,
        )
        if said.outcome in ev.OUTCOMES and said.outcome not in ev.FAILED_OUTCOMES:
            outcome = said.outcome
        reason = said.synthesis_reason
        self.emit(
            ev.LoopFinished,
            at,
            final_text=text,
            rounds=self.rounds_done if said.rounds is None else said.rounds,
            usage=self.usage,
            budget_exhausted=said.budget_exhausted,
            synthesis_was_run=self.synthesis_run,
            synthesis_reason=reason if reason in ("round_cap", "stuck", "token_budget") else None,
            outcome=outcome,
            final_empty=not text if asked is not None else last is None or is_empty(last),
            final_truncated=asked is None and last is not None and is_truncated(last),
            messages=message_dicts(self._carried_at_end()),
        )

    def _failed_with(self, failure: Failure, rounds: int | None, at: Stamp) -> None:
        """``loop_failure``, with the partial counts."""
        self._close_raised(at)
        self.ended = True
        self.emit(
            ev.LoopFailed,
            at,
            error_type=failure.error_type,
            error_kind=failure.error_kind,
            reason=failure.reason,
            message=failure.message,
            cause_type=failure.cause_type,
            cancelled=failure.cancelled,
            outcome=failure.outcome,
            rounds=self.rounds_done if rounds is None else rounds,
            usage=self.usage,
            any_invocation_made=self.calls > 0,
            messages=message_dicts(self._carried_at_end()),
            partial_text=self.partial_text,
        )

    def _carried_at_end(self) -> list[BaseMessage]:
        """What the end carries: the messages no event carried yet, then the results no
        prompt carried (a run that stopped after its tools, before another call)."""
        out = [*self.pending, *self.answers.values()]
        self.pending, self.answers = [], {}
        return out


def _usage_metadata(counts: Counts) -> dict[str, Any]:
    """``counts`` as a reply's ``usage_metadata`` (both token counts known)."""
    inp, out = counts.input_tokens or 0, counts.output_tokens or 0
    cached = (
        ("cache_read", counts.cache_read_tokens),
        ("cache_creation", counts.cache_write_tokens),
    )
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "total_tokens": inp + out,
        "input_token_details": {k: v for k, v in cached if v},
    }


def _fields(counts: Counts) -> dict[str, int | None]:
    return {
        "input_tokens": counts.input_tokens,
        "output_tokens": counts.output_tokens,
        "cache_read_tokens": counts.cache_read_tokens,
        "cache_write_tokens": counts.cache_write_tokens,
    }
