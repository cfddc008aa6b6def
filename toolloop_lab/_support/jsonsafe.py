"""One converter from arbitrary Python values to deterministic, JSON-safe data.

Used for tool results, event ``to_dict()`` and trace lines, so every place that turns a
value into JSON agrees: no Python reprs, no memory addresses, no NaN, sorted sets.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import datetime as dt
import enum
import json
import math
from collections.abc import Mapping
from decimal import Decimal
from pathlib import PurePath
from typing import Any, Final

_MAX_DEPTH = 64


def is_mapping(value: Any) -> bool:
    """``isinstance(value, Mapping)``, answered at C speed for dicts (``FrozenDict``
    included): every ``dict`` is a ``Mapping``, and only other types pay for the ABC check
    (a Python-level ``ABCMeta.__instancecheck__`` call)."""
    return isinstance(value, (dict, Mapping))  # dict first: tried in order


def json_safe(value: Any, _depth: int = 0) -> Any:
    """Convert ``value`` to data ``json.dumps`` accepts with ``allow_nan=False``.

    Decimals become strings (no precision lost), non-finite floats become the strings
    "NaN", "Infinity", "-Infinity", bytes become text (or base64 when not UTF-8), objects
    without a JSON form become ``{"__type__": ..., "attributes": ...}``. Text is kept
    exactly, lone surrogates included (pydantic's ``to_jsonable_python`` refuses those and
    keeps NaN as a float, which is why this converter exists).
    """
    if _depth > _MAX_DEPTH:
        return "<nested too deep>"
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {_key(k, _depth): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v, _depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [json_safe(v, _depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    scalar = _scalar(value)
    if scalar is not _NOT_SCALAR:
        return scalar
    if isinstance(value, enum.Enum):
        return json_safe(value.value, _depth + 1)
    return _object(value, _depth)


_NOT_SCALAR: Any = object()


def _scalar(value: Any) -> Any:
    """The JSON form of a float, Decimal, date, time, bytes or path; else ``_NOT_SCALAR``."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, (Decimal, PurePath)):
        return str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return {"__bytes_base64__": base64.b64encode(raw).decode("ascii")}
    return _NOT_SCALAR


def _object(value: Any, depth: int) -> Any:
    """Any other object: its own JSON form if it has one, else its type and attributes."""
    for name, call in (("model_dump", {"mode": "json"}), ("to_dict", {})):
        method = _attribute(value, name)
        if callable(method) and not isinstance(value, type):
            try:
                return json_safe(method(**call), depth + 1)
            except Exception:  # noqa: BLE001 - fall through to the generic form
                pass
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return json_safe(fields, depth + 1)
    kind = type(value)
    out: dict[str, Any] = {"__type__": f"{kind.__module__}.{kind.__qualname__}"}
    if getattr(kind, "__str__", None) is not getattr(object, "__str__", None):
        with contextlib.suppress(Exception):
            out["str"] = str(value)
    attrs = _attribute(value, "__dict__")
    if isinstance(attrs, dict) and attrs:
        out["attributes"] = json_safe(attrs, depth + 1)
    return out


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses changes: events and tool calls hold their data in these, so
    an observer or a tool can never rewrite what the loop keeps. A ``dict`` subclass,
    so ``json.dumps`` and pydantic serialise it as an object with no conversion."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise TypeError("this mapping is frozen; thaw() gives a mutable copy")

    __setitem__ = __delitem__ = _refuse
    update = pop = popitem = clear = setdefault = __ior__ = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))


class FrozenList(list[Any]):
    """A ``list`` that refuses changes (see :class:`FrozenDict`); it still equals the list
    it was made from, so ``call.args == {"ids": [1, 2]}`` reads as it should."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise TypeError("this list is frozen; thaw() gives a mutable copy")

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = remove = pop = clear = sort = reverse = _refuse

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenList, (list(self),))


_EMPTY_DICT: Final = FrozenDict()
_EMPTY_LIST: Final = FrozenList()


def freeze(value: Any) -> Any:
    """A deep, frozen copy of JSON-like data: mappings become :class:`FrozenDict`, lists
    and tuples :class:`FrozenList`; anything else is kept as it is."""
    if isinstance(value, Mapping):
        return FrozenDict({_key(k, 0): freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return FrozenList([freeze(v) for v in value])
    return value


def frozen_json(value: Any, _depth: int = 0) -> Any:
    """``freeze(json_safe(value))`` in one pass: what events hold (JSON data nobody may
    rewrite), made once per value on the loop's hot path (hence the exact-type checks by
    identity, and leaves of a container kept inline instead of through a call each)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is FrozenDict or kind is FrozenList:
        return value  # deep-frozen JSON already: these are made only here and by freeze()
    if kind is float and math.isfinite(value):
        return value
    if _depth <= _MAX_DEPTH:
        inner = _depth + 1
        if not value and (kind is list or kind is tuple or kind is dict):
            return _EMPTY_LIST if kind is not dict else _EMPTY_DICT  # shared: never changes
        if kind is list or kind is tuple:
            return FrozenList(
                [
                    v
                    if (t := type(v)) is str or t is int or t is bool or v is None
                    else frozen_json(v, inner)
                    for v in value
                ]
            )
        if kind is dict or isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                if type(k) is not str:
                    k = _key(k, _depth)
                t = type(v)
                out[k] = (
                    v if t is str or t is int or t is bool or v is None else frozen_json(v, inner)
                )
            return FrozenDict(out)
    return freeze(json_safe(value, _depth))


def thaw(value: Any) -> Any:
    """A deep, mutable copy of frozen (or any JSON-like) data: dicts and lists, so a tool
    may change its arguments without reaching back into the transcript or the events."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value  # a leaf: neither a mapping nor a list (skips the ABC check)
    if is_mapping(value):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def _attribute(value: Any, name: str) -> Any:
    """``getattr(value, name, None)`` for objects whose ``__getattr__`` raises anything."""
    try:
        return getattr(value, name, None)
    except Exception:  # noqa: BLE001 - a hostile object has no such attribute, then
        return None


def _key(key: Any, depth: int) -> str:
    """A mapping key as JSON text would spell it; never ``str()`` of an arbitrary object,
    whose default form is a repr with a memory address."""
    if isinstance(key, str):
        return key
    safe = json_safe(key, depth + 1)
    if isinstance(safe, str):
        return safe
    return json.dumps(safe, sort_keys=True, allow_nan=False)


def dumps(value: Any, *, sort_keys: bool = True, ascii_only: bool = True) -> str:
    """Deterministic JSON text; ASCII-escaped by default so lone surrogates survive I/O."""
    return json.dumps(
        json_safe(value), sort_keys=sort_keys, allow_nan=False, ensure_ascii=ascii_only
    )
