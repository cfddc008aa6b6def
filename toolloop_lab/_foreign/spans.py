"""The spans adapter: ``SpanSource`` and ``watch_spans``, OpenTelemetry GenAI spans in, a
:class:`~.run.ForeignRun` per agent fed from them, the loop's typed events out, live.

How spans become events is :class:`SpanSource`'s docstring; what a span says is read by
:mod:`.conventions` (in any of the three conventions frameworks speak). Every time comes
from the spans themselves (start and end times, in nanoseconds, relative to the agent
span's start), never from the clock when a span arrives, so a run read live and the same
spans read later give the same events. A run whose agent span ended has ended for good
(``wait=False``): what it started that is still open is closed with it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypeAlias

from langchain_core.messages import AIMessage
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import StatusCode

from toolloop_lab import events as ev
from toolloop_lab._otel_names import GEN_AI, TOOLLOOP
from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._stream import checked_observers
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer

from . import conventions as cv
from .run import Counts, Failure, ForeignRun, Said, SourceError

NS_PER_SECOND: Final = 1e9

_log = logging.getLogger("toolloop_lab")


Key: TypeAlias = tuple[int, int]
"""A span's trace id and span id: span ids alone repeat across traces (a deterministic id
generator gives each trace the same ones)."""


@dataclass(frozen=True, slots=True)
class DroppedSpans:
    """What a source let go, counted (each kind is logged too, as it grows), so nothing is
    passed over silently (:attr:`SpanSource.dropped`)."""

    late: int = 0
    """Spans that started under a run that had already ended: nothing is added to an
    ended run (its events would follow its end, its totals change after it)."""
    never_ended: int = 0
    """Spans still open when their run ended, forgotten once more than
    :attr:`SpanSource.ended_spans_held` spans of ended runs were held: a span that starts
    under one later is no longer known as late (a call or a tool then reads as a run of its
    own)."""
    unreadable: int = 0
    """Spans this source could not read (each logged with its error)."""


@dataclass(slots=True, eq=False)
class _Open:
    """One open span inside a run: the run, what the span is, and the tool call it
    stands under (a sub-agent started under it answers that call)."""

    run: ForeignRun
    role: cv.Role | None
    name: str
    tool_call_id: str | None = None
    root: bool = False
    """Its end ends ``run`` (the agent span, or a lone call's span)."""
    parent: ForeignRun | None = None
    """The run a sub-agent's run was started under (its root span only)."""
    memo: cv.PromptMemo = field(default_factory=cv.PromptMemo)
    """The run's last prompt read (one memo per run, shared by its spans)."""


class SpanSource(SpanProcessor):
    """A span processor that feeds ``observers`` the events of the agents it sees.
    ``prices`` overrides genai-prices per model name, as everywhere.

    Frameworks that report their work as spans (pydantic-ai natively, the OpenAI client
    through ``opentelemetry-instrumentation-openai-v2``, the OpenAI Agents SDK and smolagents
    through OpenInference) can be watched by the debugger, a ``TraceWriter`` or any observer::

        provider.add_span_processor(SpanSource(dbg, prices={...}))   # your own provider
        with watch_spans(provider, dbg):                             # or for a block
            agent.run_sync("...")

    How spans become events (``LoopStarted.source == "otel"``):

    * an **agent span** (``gen_ai.operation.name = invoke_agent``, OpenInference ``AGENT``)
      starts a run at its start and ends it at its end: ``loop_finish``, or ``loop_failure``
      when its status is an error. Its run id is 12 hex digits (the length of our loop's)
      drawn from the span's trace id and span id together (span ids alone repeat across
      traces), or the ``toolloop.run_id`` our own export wrote; spans are known by both ids;
    * a **chat span** (``chat``, ``text_completion``, ``generate_content``, OpenInference
      ``LLM``, or the older conventions' ``gen_ai.system``) is a model call: ``round_start`` and
      ``model_call_start`` at its start, ``model_call`` with usage, model, finish reason, cost
      and the reply at its end (``model_call_failed`` for an error status; the next call is its
      retry, in the same round). A chat span and the tool spans after it form a round;
    * a **tool span** (``execute_tool``, OpenInference ``TOOL``) is ``tool_start`` at its start
      and ``tool_dispatch`` at its end, an error status reading as the tool's error;
    * **parents give nesting**: an agent span under a tool span is a sub-agent, a run naming
      the parent run and the tool call that ran it; an agent span inside a run but under no
      tool call (the OpenAI Agents SDK's agent inside its "Agent workflow" span, the agent a
      hand-off passes to) is part of that run; spans of no kind we know (a framework's own
      steps) pass their run on to their children, and so does a chat span inside another (an
      instrumented client under an instrumented framework: the call is counted once, by the
      outer span); a chat or tool span under no agent span (a bare client call) is a run of
      its own, ended with it;
    * **a run that ended stays ended**: its calls and tools still open are closed with it
      (``cancelled``), and so are the sub-agents it started (a sub-agent cannot outlive the
      tool call that ran it); a span that starts under it later adds nothing (its events would
      follow the run's end). Such spans are passed over, and so is anything under them.

    What spans do not carry is never shown as known: a call span without usage has its tokens
    estimated from the prompt and reply it records and flagged ``estimated``, and so does one
    whose counts no event can hold (past the event schema's bounds, which the trace reader
    applies: unknown, never that number live and a refused line in the trace); a time no event
    can hold (a time to first chunk that is a bool, negative or infinite) is unknown; content
    that cannot be parsed (JSON nested too deep) is no content, and its call still counts with
    the usage its span gave; a name or id of another type than text is unknown (a tool call
    named by no text is an invalid call), never its ``str()``; a model
    genai-prices does not know (and ``prices`` does not name) is unpriced; a run has no round
    cap, budgets or gates (``None``: absent, not passed); messages are known only where the
    framework records content (pydantic-ai does; our own export with ``capture_content``); a
    framework that records a call's prompt only at its end (pydantic-ai) has the first call's
    prompt carried by the next call's start, which also carries the tool results since the last
    reply (they are what the framework sends next), so each round shows what it was sent and
    the transcript is whole, in order, once the run ends.
    Streamed fragments are not in spans: there are no ``model_delta`` events. Our own export's
    ``toolloop.*`` facts (call purpose, tool status, outcome) are read back where present.

    Spans start and end on any thread: every span takes one lock, which also keeps each run's
    events in order for its observers; an observer that raises is logged and skipped
    (:func:`~toolloop_lab.events.notify`), and a span this source cannot read is logged and
    passed over, never breaking the traced program.

    What a source holds is bounded: an ended run is let go at its end; it leaves only the ids
    of its spans (its agent span, and those still open) so that a span starting under one is
    known as late, at most :attr:`SpanSource.ended_spans_held` of them, the oldest forgotten
    first. Every span passed over or forgotten before it ended is counted in
    :attr:`SpanSource.dropped` and logged (at the 1st, 2nd, 4th, ... of its kind), never
    silently.
    """

    ended_spans_held: int = 4_096
    """Spans of ended runs kept (ended agent spans, and spans still open when their run
    ended), so a span that starts under one is known as late; past this the oldest is
    forgotten, and one that had not ended is counted in :attr:`dropped`."""

    def __init__(self, *observers: Observer, prices: PriceTable | None = None) -> None:
        self.observers = checked_observers(observers, spread="SpanSource")
        self.prices = prices
        self._lock = threading.RLock()
        self._open: dict[Key, _Open] = {}
        self._gone: dict[Key, tuple[str, str | None]] = {}
        """Spans of ended runs, oldest first: the run's id, and the span's name while it
        has not ended (``None`` once it has, or once it was reported as late)."""
        self._dropped: Counter[str] = Counter()
        self._stopped = False

    # -- the SDK's calls ------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """A span began: a run, a call or a tool starts now (live)."""
        if self._stopped:
            return
        try:
            with self._lock:
                self._started(span)
        except Exception:  # noqa: BLE001 - never break the traced program
            self._unreadable(span)

    def on_end(self, span: ReadableSpan) -> None:
        """A span ended: its call's reply, its tool's result, its run's outcome."""
        try:
            with self._lock:
                self._ended(span)
        except Exception:  # noqa: BLE001 - never break the traced program
            self._unreadable(span)

    def shutdown(self) -> None:
        """End every run still open (its spans never ended): nothing stays running."""
        with self._lock:
            for key, held in list(self._open.items()):
                if held.root and key in self._open:
                    self._end_run(
                        key,
                        held,
                        {},
                        int(held.run.latest()),
                        SourceError("incomplete", "shut down"),
                    )
            self._open.clear()
            self._gone.clear()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered: every event was handed on when its span started or ended."""
        return True

    def stop(self) -> None:
        """Start no new runs, calls or tools (those under way still end here). An SDK
        provider has no way to take a processor off: a stopped source stays on it, costing
        one check per span."""
        self._stopped = True

    @property
    def open_runs(self) -> tuple[str, ...]:
        """Runs started here whose agent span has not ended yet."""
        with self._lock:
            return tuple(h.run.run_id for h in self._open.values() if h.root)

    @property
    def dropped(self) -> DroppedSpans:
        """The spans this source let go so far, by why (each kind is logged too)."""
        with self._lock:
            return DroppedSpans(**self._dropped)

    # -- routing --------------------------------------------------------------------------
    def _started(self, span: Span) -> None:
        context = span.get_span_context()
        if context is None:
            return
        key = (context.trace_id, context.span_id)
        above = (span.parent.trace_id, span.parent.span_id) if span.parent is not None else None
        if above is not None and above in self._gone:
            self._late(key, span.name, self._gone[above][0])
            return
        parent = self._open.get(above) if above is not None else None
        attributes = span.attributes or {}
        role = cv.role_of(attributes)
        if role == "chat" and parent is not None and parent.role == "chat":
            role = None  # a wrapper's call around the real one (a fallback model): one call
        if role == "agent" and parent is not None and parent.tool_call_id is None:
            role = None  # an agent inside a workflow's agent span, not run by a tool: one run
        start = _ns(span.start_time, 0)
        if role == "agent" or (role is not None and parent is None):
            run = self._new_run(key, attributes, span.name, start, parent)
            own = parent.run if parent is not None else None
            self._open[key] = _Open(run, "agent", span.name, root=True, parent=own)
            if role == "agent":
                return
            parent = self._open[key]
        if parent is None:
            return  # a span of no agent: not ours
        held = _Open(
            parent.run,
            role,
            span.name,
            parent.tool_call_id,
            root=key in self._open,
            memo=parent.memo,
        )
        if role == "chat":
            _call_started(held, key[1], attributes, start)
        elif role == "tool":
            held.tool_call_id = _tool_started(held.run, key[1], attributes, span.name, start)
        self._open[key] = held

    def _new_run(
        self,
        key: Key,
        attributes: cv.Attributes,
        name: str,
        start: int,
        parent: _Open | None,
    ) -> ForeignRun:
        """``loop_start``: an agent span (or a lone call's) began."""
        said = attributes.get(TOOLLOOP.RUN_ID)  # our own export's run, read back
        run_id = said if isinstance(said, str) and said else _run_id(key)
        agent = cv.text(attributes, GEN_AI.AGENT_NAME, "agent_name", "agent.name")
        if agent is None and name.startswith(f"{GEN_AI.OP_INVOKE_AGENT} "):
            agent = name.removeprefix(f"{GEN_AI.OP_INVOKE_AGENT} ")
        run = ForeignRun(
            self.observers,
            run_id,
            "otel",
            start,
            per_second=NS_PER_SECOND,
            prices=self.prices,
            started_at=_iso(start),
            name=agent,
            tags=_strings(attributes.get(TOOLLOOP.TAGS)),
            parent_run_id=parent.run.run_id if parent is not None else None,
            parent_tool_call_id=parent.tool_call_id if parent is not None else None,
            input_messages=cv.count(attributes, (TOOLLOOP.INPUT_MESSAGES,)) or 0,
        )
        tools = _strings(attributes.get(TOOLLOOP.TOOLS))
        run.start(start, model_name=cv.model_name(attributes), tools=tools)
        return run

    def _ended(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        if context is None:
            return
        key = (context.trace_id, context.span_id)
        held = self._open.pop(key, None)
        if held is None:
            if key in self._gone:  # a span of an ended run ended: nothing to tell, or report
                self._gone[key] = (self._gone[key][0], None)
            return
        attributes = span.attributes or {}
        end = _ns(span.end_time, _ns(span.start_time, 0))
        failure = _failure(span)
        if held.role == "chat":
            _call_ended(held, key[1], attributes, end, failure)
        elif held.role == "tool":
            _tool_ended(held.run, key[1], attributes, end, failure)
        if held.root:
            self._end_run(key, held, attributes if held.role == "agent" else {}, end, failure)

    # -- runs that end, and what they leave -------------------------------------------
    def _end_run(
        self,
        key: Key,
        held: _Open,
        attributes: cv.Attributes,
        end: int,
        failure: SourceError | None,
    ) -> None:
        """``held``'s run ends: first the runs it started that are still open (a sub-agent
        cannot outlive the tool call that ran it), then it; then its spans still open are
        held as spans of an ended run, so nothing that starts under them is added to it."""
        self._open.pop(key, None)
        for below, other in list(self._open.items()):
            if other.root and other.parent is held.run and below in self._open:
                ended_first = SourceError("incomplete", "the run that called it ended first")
                self._end_run(below, other, {}, end, ended_first)
        _finish(held.run, attributes, end, failure)
        self._gone[key] = (held.run.run_id, None)
        for left, other in list(self._open.items()):
            if other.run is held.run:
                del self._open[left]
                self._gone[left] = (held.run.run_id, other.name)
        self._trim()

    def _late(self, key: Key, name: str, run_id: str) -> None:
        """A span started under a run that ended: passed over, with its own children."""
        self._gone[key] = (run_id, None)
        self._report(
            "late",
            "SpanSource passed over span %r: it started after its run %s ended",
            name,
            run_id,
        )
        self._trim()

    def _trim(self) -> None:
        """Forget the oldest spans of ended runs past the bound, reporting the unended."""
        while len(self._gone) > self.ended_spans_held:
            oldest = next(iter(self._gone))
            run_id, name = self._gone.pop(oldest)
            if name is not None:
                self._report(
                    "never_ended",
                    "SpanSource forgot span %r of run %s: it never ended, and spans of "
                    "ended runs are held at most %d at a time",
                    name,
                    run_id,
                    self.ended_spans_held,
                )

    def _unreadable(self, span: ReadableSpan) -> None:
        with self._lock:
            self._dropped["unreadable"] += 1
        _log.warning("SpanSource could not read span %r", span.name, exc_info=True)

    def _report(self, kind: str, message: str, *args: object) -> None:
        """Count one span let go; log it at the 1st, 2nd, 4th, 8th, ... of its kind (a
        program that leaves thousands gets a few lines, each with the count so far)."""
        self._dropped[kind] += 1
        count = self._dropped[kind]
        if count & (count - 1) == 0:
            _log.warning("%s (%d such so far: SpanSource.dropped)", message % args, count)


def _failure(span: ReadableSpan) -> SourceError | None:
    """What an error span says went wrong: ``error.type`` or the recorded exception's
    type (its class name), and the exception's message or the status's description."""
    if span.status.status_code is not StatusCode.ERROR:
        return None
    attributes = span.attributes or {}
    kind = cv.text(attributes, GEN_AI.ERROR_TYPE)
    message = None
    for event in span.events:
        if event.name == "exception":  # the exception's own words (a status adds its type)
            found = event.attributes or {}
            kind = kind or cv.text(found, "exception.type")
            message = cv.text(found, "exception.message")
    said = (kind or "error").rsplit(".", 1)[-1]
    return SourceError(said, message or span.status.description or "")


def _ns(value: Any, fallback: int) -> int:
    """A span's time as an event can hold it: nanoseconds since the epoch in OTLP's
    unsigned 64 bits; anything else (a float, infinity, a bool) is no time: ``fallback``."""
    return value if type(value) is int and 0 <= value < 2**64 else fallback


def _run_id(key: Key) -> str:
    """12 hex digits (the length of our loop's run ids) drawn from the span's trace id and
    span id together: span ids alone repeat across traces."""
    trace_id, span_id = key
    said = f"{trace_id:x}/{span_id:x}".encode("ascii")
    return hashlib.blake2b(said, digest_size=6).hexdigest()


@contextmanager
def watch_spans(
    tracer_provider: Any, *observers: Observer, prices: PriceTable | None = None
) -> Iterator[SpanSource]:
    """Feed ``observers`` the agents ``tracer_provider`` (an SDK ``TracerProvider``) traces
    inside the block; the source takes no new spans once the block ends
    (:meth:`SpanSource.stop`)."""
    if not isinstance(tracer_provider, TracerProvider):
        raise ConfigurationError(
            "watch_spans needs an OpenTelemetry SDK TracerProvider "
            "(opentelemetry.sdk.trace.TracerProvider)",
            field="tracer_provider",
        )
    source = SpanSource(*checked_observers(observers, spread="watch_spans"), prices=prices)
    tracer_provider.add_span_processor(source)
    try:
        yield source
    finally:
        source.stop()


# -- what a span says, handed to its run ---------------------------------------------------------


def _call_started(held: _Open, key: int, attributes: cv.Attributes, at: int) -> None:
    """A call span began: what it says the call is (our export says round, synthesis or
    pruning; else the run infers it), its model, tools and prompt (often only at its end)."""
    run = held.run
    said = attributes.get(TOOLLOOP.CALL_PURPOSE)
    model = cv.model_name(attributes) or run.model_name
    if said == "pruning":
        run.call_started(
            key,
            at,
            prompt=cv.input_messages(attributes) or [],
            model_name=model,
            purpose="pruning",
            pruned_call_id=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_CALL_ID),
        )
        return
    if said == "summarization":
        run.call_started(
            key,
            at,
            prompt=cv.input_messages(attributes) or [],
            model_name=model,
            purpose="summarization",
        )
        return
    run.call_started(
        key,
        at,
        prompt=cv.input_messages(attributes, held.memo),
        model_name=model,
        tools=_tool_names(attributes),
        streaming=attributes.get(GEN_AI.REQUEST_STREAM) is True,
        purpose="synthesis" if said == "synthesis" else "round" if said == "round" else None,
    )


def _call_ended(
    held: _Open, key: int, attributes: cv.Attributes, at: int, failure: SourceError | None
) -> None:
    """A call span ended: its reply, usage and time to first chunk, or its error."""
    run = held.run
    purpose = run.purpose_of(key)
    if purpose is None:
        return
    if failure is not None:
        run.call_failed(key, at, failure)
        return
    reply = _reply(attributes, run.model_name)
    if purpose == "pruning":
        before = cv.count(attributes, (TOOLLOOP.PRUNING_TOKENS_BEFORE,)) or 0
        run.call_pruned(
            key,
            at,
            reply,
            prompt=cv.input_messages(attributes) or [],
            counts=_counts(attributes),
            tool_call_id=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_CALL_ID) or "",
            tool_name=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_NAME) or "",
            tokens_before=before,
            tokens_after=cv.count(attributes, (TOOLLOOP.PRUNING_TOKENS_AFTER,)) or before,
        )
        return
    if purpose == "summarization":
        run.call_summarized(
            key, at, reply, prompt=cv.input_messages(attributes) or [], counts=_counts(attributes)
        )
        return
    run.call_replied(
        key,
        at,
        reply,
        prompt=cv.input_messages(attributes, held.memo),
        counts=_counts(attributes),
        first_token_s=cv.seconds(attributes, GEN_AI.RESPONSE_TIME_TO_FIRST_CHUNK),
    )


def _tool_started(
    run: ForeignRun, key: int, attributes: cv.Attributes, span_name: str, at: int
) -> str:
    """A tool span began; returns the call id the tool answers."""
    return run.tool_started(
        key,
        at,
        call_id=cv.tool_call_id(attributes),
        name=cv.tool_name(attributes, span_name),
        args=cv.tool_args(attributes),
        own_id=f"{key:016x}",
    )


def _tool_ended(
    run: ForeignRun, key: int, attributes: cv.Attributes, at: int, failure: SourceError | None
) -> None:
    """A tool span ended, with the status it says (our export's, else its error status)
    and its result; one that failed without a result waits for the framework's."""
    said = attributes.get(TOOLLOOP.TOOL_STATUS)
    status: ev.ToolStatus = "error" if failure is not None else "success"
    if said in ("success", "error", "cancelled"):
        status = said
    reason = cv.text(attributes, TOOLLOOP.TOOL_ERROR_REASON)
    result = cv.tool_result(attributes)
    ran = attributes.get(TOOLLOOP.TOOL_RAN) is not False
    error_type = failure.error_type if failure is not None and status == "error" else None
    text = f"{failure.error_type}: {failure.message}" if failure is not None else ""
    if result is None and failure is not None and ran and status != "success":
        run.tool_raised(
            key,
            at,
            text=text,
            error_reason=reason or "tool_error",
            error_type=error_type,
            status=status,
        )
        return
    run.tool_returned(
        key,
        at,
        text if result is None else result,
        status=status,
        error_reason=reason,
        error_type=error_type,
        ran=ran,
    )


def _finish(
    run: ForeignRun, attributes: cv.Attributes, at: int, failure: SourceError | None
) -> None:
    """The run's agent span ended: ``loop_finish``, or ``loop_failure`` for an error status
    (our export's outcome, rounds and reasons read back where present)."""
    outcome = attributes.get(TOOLLOOP.OUTCOME)
    rounds = cv.count(attributes, (TOOLLOOP.ROUNDS,))
    if failure is not None:
        failed: ev.Outcome = "failed"
        if outcome in ev.FAILED_OUTCOMES:
            failed = outcome
        said = Failure(
            error_type=failure.error_type,
            message=failure.message,
            error_kind=cv.text(attributes, TOOLLOOP.ERROR_KIND),
            reason=cv.text(attributes, TOOLLOOP.ERROR_REASON),
            cause_type=cv.text(attributes, TOOLLOOP.ERROR_CAUSE_TYPE),
            cancelled=failed == "cancelled",
            outcome=failed,
        )
        run.fail(at, said, said_rounds=rounds, wait=False)
        return
    final = cv.output_messages(attributes)
    run.finish(
        at,
        text=final[-1].text if final else None,
        said=Said(
            outcome=outcome,
            rounds=rounds,
            budget_exhausted=attributes.get(TOOLLOOP.BUDGET_EXHAUSTED) is True,
            synthesis_reason=attributes.get(TOOLLOOP.SYNTHESIS_REASON),
        ),
        wait=False,
    )


def _reply(attributes: cv.Attributes, fallback: str | None) -> AIMessage:
    """The reply a call span records, as a message (empty text when not recorded), with
    its finish reason and model in the metadata where usage and cost are read."""
    said = cv.output_messages(attributes) or []
    replies = [m for m in said if isinstance(m, AIMessage)]
    base = replies[-1] if replies else AIMessage(content="")
    meta: dict[str, Any] = {}
    model = cv.model_name(attributes) or fallback
    if model:
        meta["model_name"] = model
    reason = cv.finish_reasons(attributes)
    if reason:
        meta["finish_reason"] = reason
    if attributes.get(TOOLLOOP.USAGE_ESTIMATED) is True:
        meta["usage_estimated"] = True
    return AIMessage(
        content=base.content,
        tool_calls=base.tool_calls,
        invalid_tool_calls=base.invalid_tool_calls,
        response_metadata=meta,
    )


def _counts(attributes: cv.Attributes) -> Counts:
    """The token counts a call span reports, in any convention (each ``None`` if not)."""
    return Counts(
        input_tokens=cv.count(attributes, cv.INPUT_TOKENS),
        output_tokens=cv.count(attributes, cv.OUTPUT_TOKENS),
        cache_read_tokens=cv.count(attributes, cv.CACHE_READ_TOKENS),
        cache_write_tokens=cv.count(attributes, cv.CACHE_WRITE_TOKENS),
    )


def _tool_names(attributes: cv.Attributes) -> tuple[str, ...]:
    """The tools bound to a call, when the span lists them."""
    raw = attributes.get(GEN_AI.TOOL_DEFINITIONS)
    if not isinstance(raw, str):
        return ()
    data = cv.parse_json(raw)
    if not isinstance(data, list):
        return ()
    names = (d.get("name") for d in data if isinstance(d, Mapping))
    return tuple(n for n in names if isinstance(n, str))


def _strings(value: Any) -> tuple[str, ...]:
    """The texts of a list attribute (tags, tool names); items of another type are no
    text, and are left out rather than made one by ``str()``."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()
