"""OpenTelemetry export of runs, named by the GenAI semantic conventions (v1.41.0).

Live, one observer::

    from toolloop_lab.otel import OTelObserver, otlp_tracer_provider

    agent = LLMAgent(model, tools, observers=[OTelObserver(otlp_tracer_provider())])

or later, from a saved trace: ``export_trace("run.jsonl", provider)``. Spans per run: one
``invoke_agent``, a ``chat`` per model call (pruning and synthesis calls named as such), an
``execute_tool`` per tool call; the loop's own facts under ``toolloop.*``. Content only with
``capture_content=True`` (:class:`ExportOptions`). :class:`OTelObserver` documents the
mapping; every attribute name is in this package's ``_names.py``.

The other way, spans in: :class:`SpanSource` is a span processor that turns the GenAI spans
of any framework (pydantic-ai, the OpenAI client, OpenInference instrumentations) into our
events, live: ``with watch_spans(provider, dbg): ...``, or
``provider.add_span_processor(SpanSource(dbg))`` for a provider you keep; see
:class:`SpanSource`.

Needs the ``otel`` extra (``pip install 'toolloop-lab[otel]'``); the loop itself never
imports OpenTelemetry.
"""

from __future__ import annotations

try:
    import opentelemetry.trace  # noqa: F401 - fail early, with the fix in the message
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "toolloop_lab.otel needs OpenTelemetry: pip install 'toolloop-lab[otel]'"
    ) from exc

from toolloop_lab.otel._export import (
    ExportedTrace,
    export_events,
    export_trace,
    otlp_tracer_provider,
)
from toolloop_lab.otel._names import SEMCONV_VERSION
from toolloop_lab.otel._observer import ExportOptions, OTelObserver
from toolloop_lab.otel._spans import SpanSource, watch_spans

__all__ = [
    "SEMCONV_VERSION",
    "ExportOptions",
    "ExportedTrace",
    "OTelObserver",
    "SpanSource",
    "export_events",
    "export_trace",
    "otlp_tracer_provider",
    "watch_spans",
]
