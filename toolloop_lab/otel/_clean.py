"""Every text the observer hands OpenTelemetry, cleaned the way traces' views and reports are.

Span names, attribute values, event attributes and status descriptions carry text from
models, tools and people: tool names and call ids, messages, results, error messages. A
lone surrogate in any of them cannot be encoded as UTF-8, so an OTLP exporter drops the
attribute with only a log line (or fails the whole batch, for a span's name). Here each
such text goes through :func:`toolloop_lab._support.escape.scrub` (a lone surrogate becomes U+FFFD,
as in reports and the debugger) before it reaches the SDK: :class:`CleanSpan` wraps a
span, so no call the observer makes can miss it.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from types import TracebackType
from typing import Any

from opentelemetry.trace import Span, SpanContext, Status, StatusCode
from opentelemetry.util import types

from toolloop_lab._support.errortext import describe, explain, unwrap
from toolloop_lab._support.escape import scrub


def clean(value: Any) -> Any:
    """``value`` with every string in it (keys too) scrubbed; other values as they are."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(clean(v) for v in value)
    return value


def clean_attributes(attributes: types.Attributes) -> dict[str, Any] | None:
    """Attributes with every key and text value scrubbed (``None`` stays ``None``)."""
    if attributes is None:
        return None
    return {scrub(key): clean(value) for key, value in attributes.items()}


class CleanSpan(Span):
    """A span that scrubs every text it is given before the real span sees it."""

    __slots__ = ("inner",)

    def __init__(self, inner: Span) -> None:
        self.inner = inner
        """The SDK's (or any provider's) own span."""

    def end(self, end_time: int | None = None) -> None:
        self.inner.end(end_time)

    def get_span_context(self) -> SpanContext:
        return self.inner.get_span_context()

    def set_attributes(self, attributes: Mapping[str, types.AnyValue]) -> None:
        self.inner.set_attributes(clean_attributes(attributes) or {})

    def set_attribute(self, key: str, value: types.AnyValue) -> None:
        self.inner.set_attribute(scrub(key), clean(value))

    def add_event(
        self, name: str, attributes: types.Attributes = None, timestamp: int | None = None
    ) -> None:
        self.inner.add_event(scrub(name), clean_attributes(attributes), timestamp)

    def add_link(self, context: SpanContext, attributes: types.Attributes = None) -> None:
        self.inner.add_link(context, clean_attributes(attributes))

    def update_name(self, name: str) -> None:
        self.inner.update_name(scrub(name))

    def is_recording(self) -> bool:
        return self.inner.is_recording()

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        if isinstance(status, Status) and status.description is not None:
            status = Status(status.status_code, scrub(status.description))
        self.inner.set_status(status, None if description is None else scrub(description))

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """The exception's own texts, as the SDK would record them, cleaned too; the
        message of a group of one names the exception inside (the type stays the group's)."""
        inner = unwrap(exception)
        message = describe(exception) if inner is exception else explain(inner)
        texts = {
            "exception.message": scrub(message),
            "exception.stacktrace": scrub(_stacktrace(exception)),
        }
        cleaned = {**texts, **(clean_attributes(attributes) or {})}
        self.inner.record_exception(exception, cleaned, timestamp, escaped)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.inner.__exit__(exc_type, exc_val, exc_tb)


def _stacktrace(exception: BaseException) -> str:
    try:
        return "".join(traceback.format_exception(exception))
    except Exception:  # noqa: BLE001 - a hostile __str__ inside the chain
        return explain(exception)
