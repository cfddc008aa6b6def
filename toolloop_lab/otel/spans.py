"""``SpanSource``: OpenTelemetry GenAI spans in, the loop's typed events out, live.

Frameworks that report their work as spans (pydantic-ai natively, the OpenAI client
through ``opentelemetry-instrumentation-openai-v2``, the OpenAI Agents SDK and smolagents
through OpenInference) can be watched by the debugger, a ``TraceWriter`` or any observer::

    provider.add_span_processor(SpanSource(dbg, prices={...}))   # your own provider
    with dbg.watch_spans(provider):                              # or for a block
        agent.run_sync("...")

How spans become events (``LoopStarted.source == "otel"``):

* an **agent span** (``gen_ai.operation.name = invoke_agent``, OpenInference ``AGENT``)
  starts a run at its start and ends it at its end: ``loop_finish``, or ``loop_failure``
  when its status is an error. Its run id is the last 12 hex digits of the span's id (the
  length of our loop's), or the ``toolloop.run_id`` our own export wrote;
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
  its own, ended with it.

What spans do not carry is never shown as known: a call span without usage has its tokens
estimated from the prompt and reply it records and flagged ``estimated``; a model
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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import StatusCode

from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer, checked_observers
from toolloop_lab.otel import conventions as cv
from toolloop_lab.otel.names import GEN_AI, TOOLLOOP
from toolloop_lab.otel.span_run import Failure, SpanRun
from toolloop_lab.spend.pricing import PriceTable

__all__ = ["SpanSource", "watch_spans"]

_log = logging.getLogger("toolloop_lab")


@dataclass(slots=True, eq=False)
class _Open:
    """One open span inside a run: the run, what the span is, and the tool call it
    stands under (a sub-agent started under it answers that call)."""

    run: SpanRun
    role: cv.Role | None
    tool_call_id: str | None = None
    root: bool = False
    """Its end ends ``run`` (the agent span, or a lone call's span)."""


class SpanSource(SpanProcessor):
    """A span processor that feeds ``observers`` the events of the agents it sees (module
    doc). ``prices`` overrides genai-prices per model name, as everywhere."""

    def __init__(self, *observers: Observer, prices: PriceTable | None = None) -> None:
        self.observers = checked_observers(observers, spread="SpanSource")
        self.prices = prices
        self._lock = threading.RLock()
        self._open: dict[int, _Open] = {}
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
            _log.warning("SpanSource could not read span %r", span.name, exc_info=True)

    def on_end(self, span: ReadableSpan) -> None:
        """A span ended: its call's reply, its tool's result, its run's outcome."""
        try:
            with self._lock:
                self._ended(span)
        except Exception:  # noqa: BLE001 - never break the traced program
            _log.warning("SpanSource could not read span %r", span.name, exc_info=True)

    def shutdown(self) -> None:
        """End every run still open (its spans never ended): nothing stays running."""
        with self._lock:
            for key, held in list(self._open.items()):
                if held.root and not held.run.ended:
                    held.run.finish({}, _last_ns(held.run), Failure("incomplete", "shut down"))
                self._open.pop(key, None)

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

    # -- routing --------------------------------------------------------------------------
    def _started(self, span: Span) -> None:
        context = span.get_span_context()
        if context is None:
            return
        key = context.span_id
        parent = self._open.get(span.parent.span_id) if span.parent is not None else None
        attributes = span.attributes or {}
        role = cv.role_of(attributes)
        if role == "chat" and parent is not None and parent.role == "chat":
            role = None  # a wrapper's call around the real one (a fallback model): one call
        if role == "agent" and parent is not None and parent.tool_call_id is None:
            role = None  # an agent inside a workflow's agent span, not run by a tool: one run
        start = span.start_time or 0
        if role == "agent" or (role is not None and parent is None):
            run = self._new_run(key, attributes, span.name, start, parent)
            self._open[key] = _Open(run, "agent", root=True)
            if role == "agent":
                return
            parent = self._open[key]
        if parent is None:
            return  # a span of no agent: not ours
        held = _Open(parent.run, role, parent.tool_call_id, root=key in self._open)
        if role == "chat":
            parent.run.call_started(key, attributes, start)
        elif role == "tool":
            name = cv.tool_name(attributes, span.name)
            held.tool_call_id = parent.run.tool_started(key, attributes, name, start)
        self._open[key] = held

    def _new_run(
        self,
        key: int,
        attributes: cv.Attributes,
        name: str,
        start: int,
        parent: _Open | None,
    ) -> SpanRun:
        said = attributes.get(TOOLLOOP.RUN_ID)  # our own export's run, read back
        run_id = said if isinstance(said, str) and said else f"{key:016x}"[-12:]
        run = SpanRun(self.observers, run_id, start, prices=self.prices)
        run.start(
            attributes,
            name,
            parent_run_id=parent.run.run_id if parent is not None else None,
            parent_tool_call_id=parent.tool_call_id if parent is not None else None,
        )
        return run

    def _ended(self, span: ReadableSpan) -> None:
        context = span.get_span_context()
        held = self._open.pop(context.span_id, None) if context is not None else None
        if held is None:
            return
        attributes = span.attributes or {}
        end = span.end_time or span.start_time or 0
        failure = _failure(span)
        if held.role == "chat":
            held.run.call_ended(context.span_id, attributes, end, failure)  # type: ignore[union-attr]
        elif held.role == "tool":
            held.run.tool_ended(context.span_id, attributes, end, failure)  # type: ignore[union-attr]
        if held.root:
            held.run.finish(attributes if held.role == "agent" else {}, end, failure)


def _failure(span: ReadableSpan) -> Failure | None:
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
    return Failure((kind or "error").rsplit(".", 1)[-1], message or span.status.description or "")


def _last_ns(run: SpanRun) -> int:
    starts = [c.start_ns for c in run.open_calls.values()]
    starts += [t.start_ns for t in run.open_tools.values()]
    return max([run.t0_ns, *starts])


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
