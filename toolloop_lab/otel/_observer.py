"""``OTelObserver``: the event stream as OpenTelemetry GenAI spans, as it happens. The
mapping is the class's docstring."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from importlib import metadata
from typing import Any, Final, TypedDict

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from toolloop_lab import events as ev
from toolloop_lab._otel_names import GEN_AI, MCP, SCHEMA_URL, TOOLLOOP, TRACER_NAME
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.escape import NAME_CHARS, TEXT_CHARS, clip, scrub
from toolloop_lab._support.jsonsafe import dumps
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.otel._clean import CleanSpan, clean_attributes
from toolloop_lab.otel._content import (
    DEFAULT_CONTENT_LIMIT,
    finish_reason_of,
    input_messages,
    output_message,
    to_json,
    tool_definitions,
)

_ERROR_MESSAGE_LIMIT: Final = 1_000
_INCOMPLETE: Final = "incomplete"
_ENDED_MEMORY: Final = 4_096
"""Ended runs remembered per observer (only to drop their stray late events)."""

_PROVIDER_PREFIXES: Final = (
    ("gpt-", "openai"),
    ("chatgpt", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("gemini", "gcp.gen_ai"),
    ("mistral", "mistral_ai"),
    ("codestral", "mistral_ai"),
    ("deepseek", "deepseek"),
    ("grok", "x_ai"),
    ("command", "cohere"),
)


def provider_for_model(model_name: str | None) -> str:
    """The conventions' ``gen_ai.provider.name`` for a model name, as well as a name tells.

    Events name the model, not the client class, so the provider is read from well-known
    model-name prefixes; anything else is ``_OTHER``. Pass ``provider_name=`` to the
    observer when you know better (a proxy, a self-hosted model, a scripted one).
    """
    name = (model_name or "").lower().rsplit("/", 1)[-1]
    for prefix, provider in _PROVIDER_PREFIXES:
        if name.startswith(prefix):
            return provider
    return "_OTHER"


@dataclass(slots=True)
class _Call:
    span: Span
    purpose: str


@dataclass(slots=True)
class _Run:
    span: Span
    base_ns: int
    model_name: str | None
    last_ns: int
    calls: dict[int, _Call] = field(default_factory=dict)
    tools: dict[str, Span] = field(default_factory=dict)
    tool_contexts: dict[str, SpanContext] = field(default_factory=dict)
    conversation: list[Mapping[str, Any]] = field(default_factory=list)
    agent_input_set: bool = False
    synthesis_reason: str | None = None
    gates: dict[str, ev.BudgetGate] = field(default_factory=dict)
    pruning_calls: int = 0
    pruning_saved: int = 0
    pruning_net: int = 0
    interventions: int = 0
    paused_s: float = 0.0


class ExportOptions(TypedDict, total=False):
    """The options of :class:`OTelObserver` an export passes on (see it for each)."""

    capture_content: bool
    agent_name: str | None
    provider_name: str | None
    content_limit: int


class OTelObserver:
    """Feed it every event (``LLMAgent(..., observers=[OTelObserver()])``); it emits spans.

    ``tracer_provider``: any OpenTelemetry ``TracerProvider`` (default: the global one).
    ``capture_content``: also record messages, tool arguments and results (off by default).
    ``agent_name``: the ``gen_ai.agent.name`` of runs that do not name themselves.
    ``provider_name``: the ``gen_ai.provider.name`` (default: read from the model name, see
    :func:`provider_for_model`). ``content_limit``: characters kept of one captured text.
    ``use_current_context``: a run that is not nested becomes a child of the span current
    when it starts (a request handler's span, say); off, every run starts its own trace.

    One observer may watch many runs at once (a sweep); it is thread-safe.

    One run becomes one tree::

        invoke_agent {name}            INTERNAL   the run (an in-process agent)
          chat {model}                 CLIENT     each tool round's model call
          execute_tool {tool}          INTERNAL   each tool call, run or answered without running
          chat {model} pruning         CLIENT     a pruning call (linked to its tool's span)
          chat {model} synthesis       CLIENT     the synthesis call

    Span names follow the conventions' ``{operation} {model}`` / ``{operation} {tool}`` forms; a
    pruning or synthesis call adds its purpose, as the conventions let a framework do, so it is
    told apart at a glance (``toolloop.call.purpose`` says the same as an attribute).

    Why it is built this way:

    * **Timestamps come from the events**, never from the clock when an event arrives:
      ``LoopStarted.started_at`` plus each event's ``t``. A live run and the same run exported
      later from its trace file give identical spans.
    * **Usage on the model calls only.** ``gen_ai.usage.*`` sits on ``chat`` spans; the run's
      totals go on the ``invoke_agent`` span under ``toolloop.usage.*``, because backends such
      as Phoenix add a span's own counts to its children's and would count the run twice.
    * **Every span it opens, it ends**: a finish or failure ends the run's open calls and tools
      (failed ones with ``error.type``); :meth:`OTelObserver.close` ends what a stream that
      stopped early left open.
    * **Content is opt-in** (``capture_content=True``), as the conventions advise: messages,
      tool arguments and results, intervention values. Without it no model or tool text leaves
      the process, apart from a failure's exception message (clipped), as OpenTelemetry
      exception recording does.
    * **Every text is cleaned** (:mod:`toolloop_lab.otel._clean`): a lone surrogate becomes
      U+FFFD, as in reports, so an OTLP exporter never drops an attribute or a batch over one.
    * **A pause is no work**: the time a pause held the loop (step mode) is a ``toolloop.pause``
      span event at the moment it began, with its length, and the run's ``toolloop.paused_s``;
      it lies between spans, never inside a call's or a tool's.
    * **Nested runs nest**: a run whose ``parent_tool_call_id`` names a tool span still open in
      the same observer becomes that span's child, so a sub-agent sits under the tool call that
      ran it.
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        *,
        capture_content: bool = False,
        agent_name: str | None = None,
        provider_name: str | None = None,
        content_limit: int = DEFAULT_CONTENT_LIMIT,
        use_current_context: bool = True,
    ) -> None:
        if content_limit < 1:
            raise ConfigurationError("content_limit must be at least 1", field="content_limit")
        self.capture_content = capture_content
        self.agent_name = agent_name
        self.provider_name = provider_name
        self.content_limit = content_limit
        self.use_current_context = use_current_context
        self.spans_started = 0
        """Spans this observer has started (and, once its runs end, ended)."""
        self._tracer: Tracer = trace.get_tracer(
            TRACER_NAME, _version(), tracer_provider, schema_url=SCHEMA_URL
        )
        self._runs: dict[str, _Run] = {}
        self._ended_ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    # -- public -------------------------------------------------------------------------------

    def __call__(self, event: ev.Event) -> None:
        """Map one event to span starts, attributes and ends."""
        with self._lock:
            self._handle(event)

    def trace_id(self, run_id: str) -> str | None:
        """The trace id (32 hex digits) of a run still open here, else ``None``."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return None
            return format(run.span.get_span_context().trace_id, "032x")

    @property
    def open_runs(self) -> tuple[str, ...]:
        """Runs started here that have not finished or failed yet."""
        with self._lock:
            return tuple(self._runs)

    def close(self) -> None:
        """End every span still open, at the last time its run was heard of.

        For a stream that stopped without ``loop_finish`` / ``loop_failure`` (a killed
        kernel's trace, a detached observer): those spans end as errors of type
        ``incomplete``, so nothing stays open in a backend.
        """
        with self._lock:
            for run_id in list(self._runs):
                self._end_run_incomplete(run_id, "the run's events stopped early")

    # -- dispatch -----------------------------------------------------------------------------

    def _handle(self, event: ev.Event) -> None:
        if isinstance(event, ev.LoopStarted):
            self._loop_started(event)
            return
        if event.run_id in self._ended_ids and event.run_id not in self._runs:
            return  # a late event of a run that has ended: its spans are gone
        run = self._run_for(event)
        now = self._ns(run, event.t)
        run.last_ns = max(run.last_ns, now)
        handle = _HANDLERS.get(type(event))
        if handle is not None:
            handle(self, run, event, now)

    def _round(self, run: _Run, event: ev.RoundStarted, now: int) -> None:
        run.span.add_event(TOOLLOOP.EVENT_ROUND, {TOOLLOOP.ROUND: event.round}, now)

    def _synthesis(self, run: _Run, event: ev.SynthesisStarted, now: int) -> None:
        run.synthesis_reason = event.reason
        run.span.add_event(TOOLLOOP.EVENT_SYNTHESIS, {TOOLLOOP.SYNTHESIS_REASON: event.reason}, now)

    # -- runs ---------------------------------------------------------------------------------

    def _ns(self, run: _Run, t: float) -> int:
        return run.base_ns + round(t * 1e9)

    def _parent_context(self, event: ev.LoopStarted) -> otel_context.Context:
        parent = self._runs.get(event.parent_run_id) if event.parent_run_id else None
        if parent is not None:
            tool = parent.tools.get(event.parent_tool_call_id or "")
            return trace.set_span_in_context(tool if tool is not None else parent.span)
        if self.use_current_context:
            return otel_context.get_current()
        return otel_context.Context()

    def _loop_started(self, event: ev.LoopStarted) -> None:
        stale = self._runs.pop(event.run_id, None)
        if stale is not None:  # the same run id started twice: close the first honestly
            self._runs[event.run_id] = stale
            self._end_run_incomplete(event.run_id, "the run started again")
        base = _wall_ns(event.started_at) - round(event.t * 1e9)
        self._open_run(event, base)

    def _open_run(self, event: ev.LoopStarted, base_ns: int) -> _Run:
        name = event.name or self.agent_name
        attributes: dict[str, AttributeValue] = {
            GEN_AI.OPERATION_NAME: GEN_AI.OP_INVOKE_AGENT,
            GEN_AI.PROVIDER_NAME: self._provider(event.model_name),
            TOOLLOOP.RUN_ID: event.run_id,
            TOOLLOOP.SOURCE: event.source,
            TOOLLOOP.TOOLS: list(event.tools),
            TOOLLOOP.PRUNE_TOOLS: list(event.prune_tools),
            TOOLLOOP.INPUT_MESSAGES: event.input_messages,
        }
        _put(attributes, GEN_AI.AGENT_NAME, name)
        _put_label(attributes, event)
        _put(attributes, GEN_AI.REQUEST_MODEL, event.model_name)
        _put(attributes, TOOLLOOP.PARENT_RUN_ID, event.parent_run_id)
        _put(attributes, TOOLLOOP.MAX_ROUNDS, event.max_rounds)
        _put(attributes, TOOLLOOP.TOKEN_BUDGET, event.token_budget)
        _put(attributes, TOOLLOOP.CONTEXT_WINDOW, event.context_window)
        _put(attributes, TOOLLOOP.USD_LIMIT, _float(event.usd_limit))
        start = base_ns + round(event.t * 1e9)
        span = self._start_span(
            f"{GEN_AI.OP_INVOKE_AGENT} {name}" if name else GEN_AI.OP_INVOKE_AGENT,
            self._parent_context(event),
            SpanKind.INTERNAL,
            attributes,
            start,
        )
        run = _Run(span=span, base_ns=base_ns, model_name=event.model_name, last_ns=start)
        self._runs[event.run_id] = run
        return run

    def _run_for(self, event: ev.Event) -> _Run:
        """The run of ``event``; one never seen starting is opened now (a late observer)."""
        run = self._runs.get(event.run_id)
        if run is not None:
            return run
        base = time.time_ns() - round(event.t * 1e9)
        placeholder = ev.LoopStarted(
            run_id=event.run_id,
            round=0,
            t=0.0,
            model_name=getattr(event, "model_name", None),
            tools=(),
            max_rounds=None,
            token_budget=None,
            context_window=None,
            usd_limit=None,
            prune_tools=(),
            input_messages=0,
            started_at="",
        )
        run = self._open_run(placeholder, base)
        run.span.set_attribute(TOOLLOOP.INCOMPLETE, True)
        return run

    def _start_span(
        self,
        name: str,
        context: otel_context.Context,
        kind: SpanKind,
        attributes: Mapping[str, AttributeValue],
        start: int,
        links: Sequence[Link] = (),
    ) -> Span:
        """Start a span whose every text is cleaned (:mod:`toolloop_lab.otel._clean`): its
        name and attributes now, whatever is set on it later by :class:`CleanSpan`."""
        span = self._tracer.start_span(
            scrub(name),
            context=context,
            kind=kind,
            attributes=clean_attributes(attributes),
            links=links,
            start_time=start,
        )
        self.spans_started += 1
        return CleanSpan(span)

    def _provider(self, model_name: str | None) -> str:
        return self.provider_name or provider_for_model(model_name)

    # -- model calls --------------------------------------------------------------------------

    def _call_attributes(
        self,
        event: ev.ModelCallStarted | ev.ModelCalled | ev.Pruned,
        purpose: str,
        model: str | None,
    ) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            GEN_AI.OPERATION_NAME: GEN_AI.OP_CHAT,
            GEN_AI.PROVIDER_NAME: self._provider(model),
            TOOLLOOP.CALL_PURPOSE: purpose,
            TOOLLOOP.ROUND: event.round,
        }
        _put(attributes, GEN_AI.REQUEST_MODEL, model)
        if event.call:
            attributes[TOOLLOOP.CALL_NUMBER] = event.call
        return attributes

    def _start_call(
        self,
        run: _Run,
        event: ev.ModelCallStarted | ev.ModelCalled | ev.Pruned,
        purpose: str,
        model: str | None,
        start: int,
        *,
        links: Sequence[Link] = (),
        extra: Mapping[str, AttributeValue] | None = None,
    ) -> Span:
        name = f"{GEN_AI.OP_CHAT} {model}" if model else GEN_AI.OP_CHAT
        if purpose != "round":
            name = f"{name} {purpose}"
        attributes = self._call_attributes(event, purpose, model)
        if purpose == "synthesis" and run.synthesis_reason:
            attributes[TOOLLOOP.SYNTHESIS_REASON] = run.synthesis_reason
        attributes.update(extra or {})
        context = trace.set_span_in_context(run.span)
        return self._start_span(name, context, SpanKind.CLIENT, attributes, start, links)

    def _call_started(self, run: _Run, event: ev.ModelCallStarted, now: int) -> None:
        extra: dict[str, AttributeValue] = {}
        if event.streaming:
            extra[GEN_AI.REQUEST_STREAM] = True
        links: list[Link] = []
        if event.purpose == "pruning" and event.tool_call_id:
            extra[TOOLLOOP.PRUNING_TOOL_CALL_ID] = event.tool_call_id
            tool_context = run.tool_contexts.get(event.tool_call_id)
            if tool_context is not None:
                links.append(Link(tool_context))
        if self.capture_content:
            if event.purpose == "pruning":
                sent = input_messages(event.messages, self.content_limit)
            else:
                run.conversation.extend(event.messages)
                sent = input_messages(run.conversation, self.content_limit)
                if not run.agent_input_set:
                    run.span.set_attribute(GEN_AI.INPUT_MESSAGES, to_json(sent))
                    run.agent_input_set = True
            extra[GEN_AI.INPUT_MESSAGES] = to_json(sent)
            if event.tools:
                extra[GEN_AI.TOOL_DEFINITIONS] = to_json(tool_definitions(event.tools))
        model = event.model_name or run.model_name
        stale = run.calls.pop(event.call, None)
        if stale is not None:
            _end_error(stale.span, now, _INCOMPLETE, "the call number was reused")
        span = self._start_call(run, event, event.purpose, model, now, links=links, extra=extra)
        run.calls[event.call] = _Call(span, event.purpose)

    def _call_span(
        self, run: _Run, event: ev.ModelCalled | ev.Pruned, purpose: str, now: int
    ) -> Span:
        """The open span of this call, or (traces without start events) one started now."""
        call = run.calls.pop(event.call, None) if event.call else None
        if call is not None:
            return call.span
        start = max(run.base_ns, now - round(event.latency_s * 1e9))
        return self._start_call(run, event, purpose, event.model_name or run.model_name, start)

    def _call_ended(self, run: _Run, event: ev.ModelCalled, now: int) -> None:
        span = self._call_span(run, event, event.purpose, now)
        reason = finish_reason_of(
            event.finish_reason, truncated=event.truncated, tool_calls=bool(event.tool_calls)
        )
        span.set_attributes(_usage_attributes(event.usage))
        _put_span(span, GEN_AI.RESPONSE_MODEL, event.model_name)
        span.set_attribute(GEN_AI.RESPONSE_FINISH_REASONS, [reason])
        if event.first_token_s is not None:
            span.set_attribute(GEN_AI.RESPONSE_TIME_TO_FIRST_CHUNK, event.first_token_s)
        span.set_attributes(
            {
                TOOLLOOP.REPLY_STUCK: event.stuck,
                TOOLLOOP.REPLY_EMPTY: event.empty,
                TOOLLOOP.REPLY_TRUNCATED: event.truncated,
                TOOLLOOP.REPLY_TOOL_CALLS: len(event.tool_calls),
            }
        )
        if self.capture_content:
            message = output_message(event.text, event.tool_calls, reason, self.content_limit)
            span.set_attribute(GEN_AI.OUTPUT_MESSAGES, to_json([message]))
        span.end(end_time=now)

    def _call_failed(self, run: _Run, event: ev.ModelCallFailed, now: int) -> None:
        """A call that raised instead of replying: its span ends as an error, now (a
        framework may go on and retry it as a new call), with the usage its provider had
        reported, if any."""
        call = run.calls.pop(event.call, None)
        if call is not None:  # a failure is always announced by its call's start
            if event.usage is not None:  # reported before it failed (a cut stream): billed
                call.span.set_attributes(_usage_attributes(event.usage))
            _end_error(call.span, now, event.error_type, event.message)

    def _pruned(self, run: _Run, event: ev.Pruned, now: int) -> None:
        span = self._call_span(run, event, "pruning", now)
        span.set_attributes(_usage_attributes(event.usage))
        _put_span(span, GEN_AI.RESPONSE_MODEL, event.model_name)
        span.set_attributes(
            {
                TOOLLOOP.PRUNING_TOOL_CALL_ID: event.tool_call_id,
                TOOLLOOP.PRUNING_TOOL_NAME: event.tool_name,
                TOOLLOOP.PRUNING_TOKENS_BEFORE: event.tokens_before,
                TOOLLOOP.PRUNING_TOKENS_AFTER: event.tokens_after,
                TOOLLOOP.PRUNING_TOKENS_SAVED: event.tokens_saved,
                TOOLLOOP.PRUNING_NET_SAVED: event.net_saved,
            }
        )
        if self.capture_content:
            message = output_message(event.pruned, (), "stop", self.content_limit)
            span.set_attribute(GEN_AI.OUTPUT_MESSAGES, to_json([message]))
        run.pruning_calls += 1
        run.pruning_saved += event.tokens_saved
        run.pruning_net += event.net_saved
        span.end(end_time=now)

    # -- tools --------------------------------------------------------------------------------

    def _start_tool(self, run: _Run, event: ev.ToolStarted | ev.ToolDispatched, start: int) -> Span:
        attributes: dict[str, AttributeValue] = {
            GEN_AI.OPERATION_NAME: GEN_AI.OP_EXECUTE_TOOL,
            GEN_AI.TOOL_NAME: event.name,
            GEN_AI.TOOL_CALL_ID: event.tool_call_id,
            GEN_AI.TOOL_TYPE: "function",
            TOOLLOOP.ROUND: event.round,
        }
        if self.capture_content:
            attributes[GEN_AI.TOOL_CALL_ARGUMENTS] = clip(to_json(event.args), self.content_limit)
        if event.server is not None:  # an MCP server's tool: the MCP conventions too
            attributes[TOOLLOOP.MCP_SERVER] = event.server
            attributes[MCP.METHOD_NAME] = MCP.METHOD_TOOLS_CALL
            transport = getattr(event, "transport", None)
            if transport is not None:
                attributes[MCP.NETWORK_TRANSPORT] = (
                    MCP.TRANSPORT_PIPE if transport == "stdio" else MCP.TRANSPORT_TCP
                )
            session = getattr(event, "session_id", None)
            if session is not None:
                attributes[MCP.SESSION_ID] = session
        name = f"{GEN_AI.OP_EXECUTE_TOOL} {event.name}"
        context = trace.set_span_in_context(run.span)
        return self._start_span(name, context, SpanKind.INTERNAL, attributes, start)

    def _tool_started(self, run: _Run, event: ev.ToolStarted, now: int) -> None:
        stale = run.tools.pop(event.tool_call_id, None)
        if stale is not None:
            _end_error(stale, now, _INCOMPLETE, "the tool call started twice")
        run.tools[event.tool_call_id] = self._start_tool(run, event, now)

    def _tool_dispatched(self, run: _Run, event: ev.ToolDispatched, now: int) -> None:
        span = run.tools.pop(event.tool_call_id, None)
        if span is None:  # never started (unknown tool, skipped, stopped) or an old trace
            ran_ns = round(event.duration_s * 1e9) if event.ran else 0
            span = self._start_tool(run, event, max(run.base_ns, now - ran_ns))
        span.set_attributes(
            {
                TOOLLOOP.TOOL_RAN: event.ran,
                TOOLLOOP.TOOL_STATUS: event.status,
                TOOLLOOP.TOOL_OUTPUT_CHARS: event.output_chars,
            }
        )
        if self.capture_content:
            span.set_attribute(GEN_AI.TOOL_CALL_RESULT, clip(event.content, self.content_limit))
        run.tool_contexts[event.tool_call_id] = span.get_span_context()
        if event.status != "success":  # an error, or stopped while it ran ("cancelled")
            error_type = event.error_reason or "tool_error"
            span.set_attribute(TOOLLOOP.TOOL_ERROR_REASON, error_type)
            _end_error(span, now, error_type, error_type)
        else:
            span.end(end_time=now)

    def _server_logged(self, run: _Run, event: ev.ServerLogged, now: int) -> None:
        """What an MCP server logged: an event on the span of the call it ran beside (still
        open: its ``tool_dispatch`` comes after), else on the run's."""
        span = run.tools.get(event.tool_call_id or "") or run.span
        attributes: dict[str, AttributeValue] = {
            TOOLLOOP.MCP_SERVER: event.server,
            TOOLLOOP.MCP_LOG_FIRST_LINE: event.first_line,
            TOOLLOOP.MCP_LOG_DROPPED: event.dropped,
        }
        if self.capture_content:
            attributes[TOOLLOOP.MCP_LOG_LINES] = [
                clip(line, self.content_limit) for line in event.lines
            ]
        span.add_event(TOOLLOOP.EVENT_SERVER_LOG, attributes, now)

    # -- gates, interventions ------------------------------------------------------------------

    def _gate(self, run: _Run, event: ev.BudgetGate, now: int) -> None:
        run.gates[event.gate] = event
        run.span.add_event(
            TOOLLOOP.EVENT_GATE,
            {
                TOOLLOOP.GATE: event.gate,
                TOOLLOOP.GATE_STAGE: event.stage,
                TOOLLOOP.GATE_LIMIT: float(event.limit),
                TOOLLOOP.GATE_SPENT: float(event.spent),
                TOOLLOOP.GATE_PASSED: event.passed,
                TOOLLOOP.ROUND: event.round,
            },
            now,
        )

    def _intervention(self, run: _Run, event: ev.Intervention, now: int) -> None:
        run.interventions += 1
        attributes: dict[str, AttributeValue] = {
            TOOLLOOP.INTERVENTION_ACTION: event.action,
            TOOLLOOP.INTERVENTION_STAGE: event.stage,
            TOOLLOOP.ROUND: event.round,
        }
        _put(attributes, TOOLLOOP.INTERVENTION_TOOL_CALL_ID, event.tool_call_id)
        if self.capture_content:
            limit = self.content_limit
            attributes[TOOLLOOP.INTERVENTION_BEFORE] = clip(to_json(event.before), limit)
            attributes[TOOLLOOP.INTERVENTION_AFTER] = clip(to_json(event.after), limit)
        run.span.add_event(TOOLLOOP.EVENT_INTERVENTION, attributes, now)

    def _paused(self, run: _Run, event: ev.Paused, now: int) -> None:
        run.paused_s += event.paused_s
        began = max(run.base_ns, now - round(event.paused_s * 1e9))
        attributes: dict[str, AttributeValue] = {
            TOOLLOOP.PAUSE_STAGE: event.stage,
            TOOLLOOP.PAUSE_PURPOSE: event.purpose,
            TOOLLOOP.PAUSE_SECONDS: event.paused_s,
            TOOLLOOP.ROUND: event.round,
        }
        run.span.add_event(TOOLLOOP.EVENT_PAUSE, attributes, began)

    # -- the end ------------------------------------------------------------------------------

    def _end_open_children(self, run: _Run, now: int, error_type: str, message: str) -> None:
        for call in run.calls.values():
            _end_error(call.span, now, error_type, message)
        for span in run.tools.values():
            _end_error(span, now, error_type, message)
        run.calls.clear()
        run.tools.clear()

    def _end_run_incomplete(self, run_id: str, why: str) -> None:
        run = self._runs.pop(run_id)
        self._end_open_children(run, run.last_ns, _INCOMPLETE, why)
        run.span.set_attribute(TOOLLOOP.INCOMPLETE, True)
        self._ended(run_id)
        _end_error(run.span, run.last_ns, _INCOMPLETE, why)

    def _ended(self, run_id: str) -> None:
        """Remember a run that ended, so a stray late event cannot reopen it."""
        self._ended_ids[run_id] = None
        if len(self._ended_ids) > _ENDED_MEMORY:
            self._ended_ids.popitem(last=False)

    def _run_summary(self, run: _Run, event: ev.LoopFinished | ev.LoopFailed) -> None:
        span = run.span
        usage = event.usage
        span.set_attributes(
            {
                TOOLLOOP.OUTCOME: event.outcome,
                TOOLLOOP.ROUNDS: event.rounds,
                TOOLLOOP.USAGE_INPUT_TOKENS: usage.input_tokens,
                TOOLLOOP.USAGE_OUTPUT_TOKENS: usage.output_tokens,
                TOOLLOOP.USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_tokens,
                TOOLLOOP.USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write_tokens,
                TOOLLOOP.USAGE_REQUESTS: usage.requests,
                TOOLLOOP.USAGE_ESTIMATED: usage.estimated,
                TOOLLOOP.COST_KNOWN: usage.cost_usd is not None,
                TOOLLOOP.PRUNING_CALLS: run.pruning_calls,
                TOOLLOOP.PRUNING_TOKENS_SAVED: run.pruning_saved,
                TOOLLOOP.PRUNING_NET_SAVED: run.pruning_net,
                TOOLLOOP.INTERVENTIONS: run.interventions,
                TOOLLOOP.PAUSED_S: run.paused_s,
            }
        )
        _put_span(span, TOOLLOOP.COST_USD, _float(usage.cost_usd))
        _put_span(span, TOOLLOOP.SYNTHESIS_REASON, run.synthesis_reason)
        for gate, (limit, spent, passed) in _GATE_NAMES.items():
            last = run.gates.get(gate)
            if last is not None:
                span.set_attributes(
                    {limit: float(last.limit), spent: float(last.spent), passed: last.passed}
                )

    def _finished(self, run: _Run, event: ev.LoopFinished, now: int) -> None:
        if event.outcome == "interrupted":  # an interrupt() paused them: no error
            for span in run.tools.values():
                span.set_attribute(TOOLLOOP.INTERRUPTED, True)
                span.end(end_time=now)
            run.tools.clear()
        self._end_open_children(run, now, _INCOMPLETE, "the run finished with this open")
        self._run_summary(run, event)
        run.span.set_attributes(
            {
                TOOLLOOP.BUDGET_EXHAUSTED: event.budget_exhausted,
                TOOLLOOP.FINAL_EMPTY: event.final_empty,
                TOOLLOOP.FINAL_TRUNCATED: event.final_truncated,
            }
        )
        if self.capture_content:
            reason = "length" if event.final_truncated else "stop"
            message = output_message(event.final_text, (), reason, self.content_limit)
            run.span.set_attribute(GEN_AI.OUTPUT_MESSAGES, to_json([message]))
        del self._runs[event.run_id]
        self._ended(event.run_id)
        run.span.end(end_time=now)

    def _failed(self, run: _Run, event: ev.LoopFailed, now: int) -> None:
        if self.capture_content and event.partial_text:
            for call in run.calls.values():
                message = output_message(event.partial_text, (), "error", self.content_limit)
                call.span.set_attribute(GEN_AI.OUTPUT_MESSAGES, to_json([message]))
        self._end_open_children(run, now, event.error_type, event.error_type)
        self._run_summary(run, event)
        span = run.span
        span.set_attribute(TOOLLOOP.ANY_INVOCATION_MADE, event.any_invocation_made)
        _put_span(span, TOOLLOOP.ERROR_KIND, event.error_kind)
        _put_span(span, TOOLLOOP.ERROR_REASON, event.reason)
        _put_span(span, TOOLLOOP.ERROR_CAUSE_TYPE, event.cause_type)
        del self._runs[event.run_id]
        self._ended(event.run_id)
        _end_error(span, now, event.error_type, clip(event.message, _ERROR_MESSAGE_LIMIT))


_HANDLERS: Final[Mapping[type[ev.Event], Callable[[OTelObserver, _Run, Any, int], None]]] = {
    ev.RoundStarted: OTelObserver._round,
    ev.ModelCallStarted: OTelObserver._call_started,
    ev.ModelCalled: OTelObserver._call_ended,
    ev.ModelCallFailed: OTelObserver._call_failed,
    ev.Pruned: OTelObserver._pruned,
    ev.ToolStarted: OTelObserver._tool_started,
    ev.ToolDispatched: OTelObserver._tool_dispatched,
    ev.ServerLogged: OTelObserver._server_logged,
    ev.BudgetGate: OTelObserver._gate,
    ev.SynthesisStarted: OTelObserver._synthesis,
    ev.Intervention: OTelObserver._intervention,
    ev.Paused: OTelObserver._paused,
    ev.LoopFinished: OTelObserver._finished,
    ev.LoopFailed: OTelObserver._failed,
}
"""What each kind of event does to its run's spans (``loop_start`` opens the run first;
``model_delta`` does nothing: the reply's own event carries what spans need)."""

_GATE_NAMES: Final = {
    "token": (TOOLLOOP.GATE_TOKEN_LIMIT, TOOLLOOP.GATE_TOKEN_SPENT, TOOLLOOP.GATE_TOKEN_PASSED),
    "usd": (TOOLLOOP.GATE_USD_LIMIT, TOOLLOOP.GATE_USD_SPENT, TOOLLOOP.GATE_USD_PASSED),
}


def _usage_attributes(usage: Usage) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        GEN_AI.USAGE_INPUT_TOKENS: usage.input_tokens,
        GEN_AI.USAGE_OUTPUT_TOKENS: usage.output_tokens,
        GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS: usage.cache_read_tokens,
        GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS: usage.cache_write_tokens,
        TOOLLOOP.USAGE_ESTIMATED: usage.estimated,
        TOOLLOOP.COST_KNOWN: usage.cost_usd is not None,
    }
    _put(attributes, TOOLLOOP.COST_USD, _float(usage.cost_usd))
    return attributes


def _end_error(span: Span, end_ns: int, error_type: str, description: str) -> None:
    span.set_attribute(GEN_AI.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, description))
    span.end(end_time=end_ns)


def _put(attributes: dict[str, AttributeValue], key: str, value: AttributeValue | None) -> None:
    if value is not None:
        attributes[key] = value


def _put_label(attributes: dict[str, AttributeValue], event: ev.LoopStarted) -> None:
    """The run's tags and metadata (its name is ``gen_ai.agent.name``), clipped: a
    caller's values, but a span is no place for a megabyte."""
    if event.tags:
        attributes[TOOLLOOP.TAGS] = [clip(tag, NAME_CHARS) for tag in event.tags]
    for key, value in event.metadata.items():
        attributes[f"{TOOLLOOP.METADATA}.{clip(key, NAME_CHARS)}"] = _metadata_value(value)
    conversation = next(
        (event.metadata[k] for k in CONVERSATION_KEYS if isinstance(event.metadata.get(k), str)),
        None,
    )
    if conversation:
        attributes[GEN_AI.CONVERSATION_ID] = clip(conversation, NAME_CHARS)


CONVERSATION_KEYS: Final = ("conversation_id", "thread_id", "session_id")
"""Metadata keys that name the conversation a run belongs to (``gen_ai.conversation.id``):
ours by choice, LangGraph's thread id, and the common session id."""


def _metadata_value(value: Any) -> AttributeValue:
    """A metadata value as an attribute: a scalar as it is (an int OpenTelemetry cannot
    carry, as text), anything else as JSON text."""
    if isinstance(value, bool | float) or (isinstance(value, int) and -(2**63) <= value < 2**63):
        return value
    text = value if isinstance(value, str) else dumps(value, sort_keys=False)
    return clip(text, TEXT_CHARS)


def _put_span(span: Span, key: str, value: AttributeValue | None) -> None:
    if value is not None:
        span.set_attribute(key, value)


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _version() -> str | None:
    try:
        return metadata.version("toolloop-lab")
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        return None


def _wall_ns(started_at: str) -> int:
    """Epoch nanoseconds of an ISO 8601 start (naive means UTC); now when unreadable."""
    try:
        moment = datetime.fromisoformat(started_at)
    except ValueError:
        return time.time_ns()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
