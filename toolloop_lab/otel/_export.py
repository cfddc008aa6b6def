"""Send finished runs (events in memory, or a JSONL trace file) to any tracer provider.

Replaying the events through :class:`~toolloop_lab.otel._observer.OTelObserver` gives the
spans a live observer would have given, with the original timestamps (the events carry
them). Every replayed run starts its own trace, whatever span is current in the caller.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Unpack

from opentelemetry import trace

from toolloop_lab._trace import SkippedLine, read_trace
from toolloop_lab.events import Event, LoopStarted
from toolloop_lab.otel._observer import ExportOptions, OTelObserver

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider


@dataclass(frozen=True, slots=True)
class ExportedTrace:
    """What an export sent: each run's trace id, the span count, the trace lines skipped."""

    runs: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Run id -> trace id (32 hex digits), in the order the runs started."""
    spans: int = 0
    skipped: tuple[SkippedLine, ...] = ()
    """Lines of the trace file that were not events (a partial last line, say)."""


def export_events(
    events: Iterable[Event],
    tracer_provider: trace.TracerProvider | None = None,
    **options: Unpack[ExportOptions],
) -> ExportedTrace:
    """Emit the spans of ``events`` (``result.events``, or a trace's events) and flush.

    ``options`` are the observer's (``capture_content``, ``agent_name``,
    ``provider_name``, ``content_limit``; see :class:`OTelObserver`). Runs that never
    finish in ``events`` end as ``incomplete`` errors at their last event.
    """
    observer = OTelObserver(tracer_provider, **options, use_current_context=False)
    runs: dict[str, str] = {}
    for event in events:
        observer(event)
        if isinstance(event, LoopStarted):
            trace_id = observer.trace_id(event.run_id)
            if trace_id is not None:
                runs[event.run_id] = trace_id
    observer.close()
    _flush(tracer_provider)
    return ExportedTrace(MappingProxyType(runs), observer.spans_started)


def export_trace(
    path: str | os.PathLike[str],
    tracer_provider: trace.TracerProvider | None = None,
    **options: Unpack[ExportOptions],
) -> ExportedTrace:
    """Send a saved JSONL trace (every run in it) as spans with its original timestamps;
    ``options`` as for :func:`export_events`.

    Raises :class:`~toolloop_lab.errors.TraceError` when the file cannot be read or is not a
    trace; unreadable lines are skipped and reported in the result.
    """
    read = read_trace(path)
    exported = export_events(read.events, tracer_provider, **options)
    return ExportedTrace(exported.runs, exported.spans, read.skipped)


def otlp_tracer_provider(
    endpoint: str = "http://127.0.0.1:6006/v1/traces",
    *,
    service_name: str = "toolloop-lab",
    resource_attributes: Mapping[str, Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> SdkTracerProvider:
    """An SDK ``TracerProvider`` that batches spans to an OTLP/HTTP endpoint.

    The default endpoint is a local Phoenix (``phoenix serve``); Langfuse, MLflow, Jaeger
    and Tempo take their own OTLP/HTTP traces URL. Phoenix files traces under the project
    named by the ``openinference.project.name`` resource attribute.
    """
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service_name, **(resource_attributes or {})})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(endpoint=endpoint, headers=dict(headers or {}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _flush(tracer_provider: trace.TracerProvider | None) -> None:
    provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
    flush = getattr(provider, "force_flush", None)
    if callable(flush):
        flush()
