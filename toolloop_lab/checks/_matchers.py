"""What an argument of :func:`~toolloop_lab.checks.called` must be: a value it equals, or a
matcher (:func:`contains`, :func:`matches`, any predicate).

Patterns are compiled with RE2 (``google-re2``, as the tool schemas' patterns are): what
they search is a model's or a tool's text, of any length, and RE2 runs in linear time
where a backtracking engine can take minutes on one crafted string.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import re2  # type: ignore[import-untyped]

from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ConfigurationError

SHOWN_CHARS: Final = 80
"""Characters of a value a check's description shows."""


def said(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A value as a check's words show it: ``'x'``, ``42``, ``{'a': 1}``, clipped."""
    return clip(repr(value), limit)


class Matcher(ABC):
    """What a value must be for a check to accept it (an argument of a tool call, say):
    :func:`contains`, :func:`matches`, a predicate, or equality with a value."""

    __slots__ = ()

    @abstractmethod
    def accepts(self, value: Any) -> bool:
        """True when ``value`` is what this matcher wants (never raises: a value of
        another type is simply not accepted)."""

    @abstractmethod
    def describe(self) -> str:
        """What it wants, as code reads (``contains('refund')``)."""

    def to_json(self) -> dict[str, Any] | None:
        """The matcher as JSON (saved beside a recording), or ``None`` when it has none
        (a predicate is code)."""
        return None


@dataclass(frozen=True, slots=True)
class _Equals(Matcher):
    value: Any

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool) or isinstance(self.value, bool):
            return value is self.value  # JSON's true is no 1, and 1 no true
        try:
            return bool(value == self.value)
        except Exception:  # noqa: BLE001 - a value whose == raises is not equal
            return False

    def describe(self) -> str:
        return said(self.value)

    def to_json(self) -> dict[str, Any] | None:
        try:
            json.dumps(self.value, allow_nan=False)
        except (TypeError, ValueError):
            return None
        return {"equals": self.value}


@dataclass(frozen=True, slots=True)
class _Contains(Matcher):
    part: Any

    def accepts(self, value: Any) -> bool:
        if isinstance(self.part, str):
            return isinstance(value, str) and self.part in value
        try:
            return isinstance(value, (list, tuple)) and self.part in value
        except Exception:  # noqa: BLE001
            return False

    def describe(self) -> str:
        return f"contains({said(self.part)})"

    def to_json(self) -> dict[str, Any] | None:
        return {"contains": self.part}


@dataclass(frozen=True, slots=True)
class _Matches(Matcher):
    pattern: str
    _compiled: Any = field(compare=False, repr=False, hash=False)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and self._compiled.search(value) is not None

    def describe(self) -> str:
        return f"matches({said(self.pattern)})"

    def to_json(self) -> dict[str, Any] | None:
        return {"matches": self.pattern}

    def __reduce__(self) -> tuple[Any, ...]:
        return (matches, (self.pattern,))  # the compiled pattern does not pickle


@dataclass(frozen=True, slots=True)
class _Predicate(Matcher):
    test: Callable[[Any], object] = field(hash=False)

    def accepts(self, value: Any) -> bool:
        try:
            return self.test(value) is True
        except Exception:  # noqa: BLE001 - a predicate that raises does not accept
            return False

    def describe(self) -> str:
        name = getattr(self.test, "__name__", None) or type(self.test).__name__
        return f"<{clip(name, NAME_CHARS)}>"


def compiled(pattern: Any, field: str) -> Any:
    """``pattern`` compiled with RE2; anything else, or a pattern RE2 refuses, is a
    ``ConfigurationError`` naming ``field``."""
    if not isinstance(pattern, str) or not pattern:
        raise ConfigurationError(
            f"{field} takes a regular expression (a non-empty str), got {shown(pattern)}",
            field=field,
        )
    try:
        return re2.compile(pattern)
    except re2.error as exc:
        raise ConfigurationError(
            f"{field}: {said(pattern)} is no regular expression RE2 accepts ({exc})",
            field=field,
        ) from None


def contains(part: str | Any) -> Matcher:
    """A matcher of text holding ``part`` (a list holding it, for anything else):
    ``called("search", query=contains("refund"))``."""
    if isinstance(part, str) and not part:
        raise ConfigurationError("contains() takes something to look for, not ''", field="part")
    return _Contains(part)


def matches(pattern: str) -> Matcher:
    """A matcher of text in which ``pattern`` (a regular expression, RE2 syntax) is found
    anywhere: ``called("open_ticket", id=matches(r"^T-\\d+$"))``."""
    return _Matches(pattern, compiled(pattern, "pattern"))


def matcher_of(value: Any, field: str) -> Matcher:
    """``value`` as a matcher: a matcher as it is, a function as a predicate, anything
    else as a value to equal (a class is refused: it names a type, not a value)."""
    if isinstance(value, Matcher):
        return value
    if isinstance(value, type):
        raise ConfigurationError(
            f"{field} is {shown(value)}: give a value to equal, contains(...), matches(...) "
            f"or a predicate (lambda v: isinstance(v, {value.__name__}))",
            field=field,
        )
    if callable(value):
        return _Predicate(value)
    return _Equals(value)


def matcher_from_json(data: Any, field: str) -> Matcher:
    """A matcher saved by :meth:`Matcher.to_json`."""
    if isinstance(data, Mapping) and len(data) == 1:
        ((kind, value),) = data.items()
        if kind == "equals":
            return _Equals(value)
        if kind == "contains":
            return contains(value)
        if kind == "matches":
            return matches(value)
    raise ConfigurationError(
        f"{field} takes {{'equals': v}}, {{'contains': v}} or {{'matches': pattern}}, "
        f"got {said(data)}",
        field=field,
    )
