"""Constrained field types shared by events, the config and scenarios, declared once.

Each is an ``Annotated`` type that pydantic enforces wherever a value is parsed or
validated (a trace line, a saved lab, an ``AgentConfig``), so "a count is an int >= 0, not a
bool" is written here and nowhere else. Every scalar is ``Strict`` (no ``"1"`` for ``1``,
no ``1`` for ``true``); containers take JSON's shapes (an array becomes a tuple) and a
Decimal takes JSON's number or string. Constructing a dataclass in Python does not
validate (the loop builds events at full speed); parsing untrusted input always does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from functools import cache
from typing import Annotated, Any, Final, TypeAlias

from annotated_types import Ge, Gt, Le
from pydantic import AfterValidator, AllowInfNan, Strict, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.jsonsafe import freeze
from toolloop_lab.errors import ConfigurationError

MAX_INT: Final = 2**53
"""Largest integer a setting may take: every int up to it is exact as a float, so no later
arithmetic with it overflows or rounds (``10**400`` rounds is refused up front)."""

Text: TypeAlias = Annotated[str, Strict()]
"""A string, never a number or bytes spelled as one."""


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError(
            "blank_text", "should hold text, not only whitespace: providers refuse blank text"
        )
    return text


Prompt: TypeAlias = Annotated[str, Strict(), AfterValidator(_not_blank)]
"""Text a model is sent as it is (a prompt, a system prompt, a turn's message): something
besides whitespace, since providers refuse blank text (``""`` and ``"   "`` alike)."""

Count: TypeAlias = Annotated[int, Strict(), Ge(0), Le(MAX_INT)]
"""A non-negative int (never a bool): tokens, rounds, lengths."""

PositiveInt: TypeAlias = Annotated[int, Strict(), Gt(0), Le(MAX_INT)]
"""An int >= 1 (never a bool): round caps, context windows, concurrency."""

MAX_TIMEOUT_S: Final = 7 * 24 * 3600.0
"""Longest time limit accepted (a week): anything longer is a mistake, not a limit."""

TimeoutSeconds: TypeAlias = Annotated[float, Strict(), AllowInfNan(False), Gt(0), Le(MAX_TIMEOUT_S)]
"""A time limit in seconds: more than 0, finite, at most :data:`MAX_TIMEOUT_S` (``None``,
where a setting takes it, is no limit)."""

Flag: TypeAlias = Annotated[bool, Strict()]
"""``true`` or ``false``, never ``1`` or ``"yes"``."""

Seconds: TypeAlias = Annotated[float, Strict(), AllowInfNan(False), Ge(0)]
"""A finite, non-negative duration or offset in seconds."""

FiniteDecimal: TypeAlias = Annotated[Decimal, AllowInfNan(False)]
"""A finite Decimal (USD amounts, gate figures); JSON carries it as a string."""

JsonValue: TypeAlias = Annotated[Any, AfterValidator(freeze)]
"""Any JSON value, frozen once parsed (objects become ``FrozenDict``, arrays ``FrozenList``)."""

JsonObject: TypeAlias = Annotated[Mapping[str, Any], AfterValidator(freeze)]
"""A JSON object with string keys, frozen once parsed."""


@cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _taken(kind: Any, value: Any) -> Any:
    """``value`` as ``kind`` takes it, or ``None`` when it does not."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError:
        return None


def reported_count(value: Any) -> int | None:
    """A count someone else reported (a provider's tokens, a span's attribute), read with
    the event schema's own :data:`Count` bounds, the ones the trace reader applies; ``None``
    (unknown) when it is no count an event can hold: a bool, text, a negative, NaN, or past
    :data:`MAX_INT`. Every producer reads such numbers here, so nothing it emits is refused
    when read back. An integral float (``12.0``, as some proxies send) is the int it spells."""
    if type(value) is float and value.is_integer():
        value = int(value)
    taken: int | None = _taken(Count, value)
    return taken


def reported_seconds(value: Any) -> float | None:
    """A duration someone else reported (a span's time to first chunk), read with the event
    schema's :data:`Seconds` bounds; ``None`` (unknown) for a bool, text, a negative, NaN or
    infinity."""
    taken: float | None = _taken(Seconds, value)
    return taken


def checked(kind: Any, value: Any, *, field: str) -> Any:
    """``value`` checked as one of the types above (an argument that is no field of a
    validated model: a sweep's ``concurrency``, say); ``ConfigurationError(field=...)`` if
    it is not one."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as exc:
        raise refused(field, exc.errors()[0]["msg"], value) from None


def shown(value: Any) -> str:
    """A value as a refusal names it: its type, and its text when that is short."""
    if value is None:
        return "None"
    kind = type(value).__name__
    if isinstance(value, bool):
        return f"the bool {value}"
    if isinstance(value, int) and abs(value) >= 10**20:
        return "a huge int"
    if isinstance(value, (str, int, float)):
        return f"the {kind} {clip(repr(value), NAME_CHARS)}"
    if isinstance(value, type):
        return f"the class {clip(value.__name__, NAME_CHARS)}"
    return f"a {kind}"


def refused(field: str | None, problem: str, value: Any) -> ConfigurationError:
    """The error for a refused setting: which one, why, and (briefly) what it was."""
    huge = isinstance(value, int) and abs(value) >= 10**20
    shown = "a huge int" if huge else f"{value!r:.80}"
    return ConfigurationError(f"{where_message(field or '', problem)} (got {shown})", field=field)


def dotted(loc: Iterable[str | int]) -> str:
    """A place inside a value as a person reads it (``messages.0.content``); empty for the
    value as a whole."""
    return ".".join(str(part) for part in loc)


def where_message(loc: str | Iterable[str | int], message: str, *, whole: str = "") -> str:
    """``where: message``, the one way a problem inside a value is spelled (a pydantic
    error's ``loc`` and ``msg``, a JSON-schema error's path and message). ``loc`` is a path
    or an already dotted place; an empty one is ``whole`` (``"(arguments)"``, say), and with
    no ``whole`` the message stands alone rather than after an empty place."""
    where = (loc if isinstance(loc, str) else dotted(loc)) or whole
    return f"{where}: {message}" if where else message


def validation_text(error: ValidationError, *, whole: str = "", every: bool = False) -> str:
    """:func:`where_message` of pydantic's first problem with a value (``every``: of each,
    joined by ``"; "``)."""
    problems = error.errors(include_url=False, include_input=False)
    return "; ".join(
        where_message(p["loc"], p["msg"], whole=whole) for p in problems[: None if every else 1]
    )
