"""A provider's "too many requests" read off the error its client raised: whether a failed
model call was refused for a rate limit (HTTP 429), and how long it asked the caller to wait.

Read by duck typing (``status_code`` and ``response.headers``, as the OpenAI and Anthropic
SDKs and httpx spell them), so the loop imports no provider's SDK. The wait is bounded: a
header asking for more than :data:`MAX_RETRY_AFTER_S` (or that cannot be read) waits that
long at most, never for ever.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final

MAX_RETRY_AFTER_S: Final = 60.0
"""The longest a rate-limited call waits before it is sent again."""

DEFAULT_RETRY_AFTER_S: Final = 1.0
"""The wait when a 429 names none."""


def _status(error: BaseException) -> int | None:
    for source in (error, getattr(error, "response", None)):
        code = getattr(source, "status_code", None)
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _headers(error: BaseException) -> Mapping[str, Any]:
    headers = getattr(getattr(error, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) else {}


def _seconds(value: Any, *, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` value in seconds: a number, or an HTTP date."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return seconds if math.isfinite(seconds) else None


def retry_after_s(error: BaseException) -> float | None:
    """How long to wait before sending a call the provider refused for a rate limit
    (bounded by :data:`MAX_RETRY_AFTER_S`), or ``None`` when ``error`` is no 429."""
    if _status(error) != 429:
        return None
    headers = _headers(error)
    ms = _seconds(headers.get("retry-after-ms"))
    asked = ms / 1000 if ms is not None else _seconds(headers.get("retry-after"))
    if asked is None:
        return DEFAULT_RETRY_AFTER_S
    return min(max(asked, 0.0), MAX_RETRY_AFTER_S)
