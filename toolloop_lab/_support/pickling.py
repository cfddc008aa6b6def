"""Quick pickling for the frozen, slotted dataclasses a sweep ships between processes.

A sweep on a process pool or a Dask cluster sends every run's events back to the caller
pickled. ``dataclasses`` gives a slotted class a ``__setstate__`` that looks up the class's
fields again for every object, which made unpickling a five-round run (about 40 such
objects) cost the caller more than half a millisecond, a tenth of what running it costs.
:func:`quick_pickle` gives a class the same state (its field values, in field order)
with the field names looked up once.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, TypeVar

__all__ = ["quick_pickle"]

T = TypeVar("T")


def quick_pickle(cls: type[T]) -> type[T]:
    """``cls`` (a frozen dataclass with slots) pickled as the tuple of its field values."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    values = operator.attrgetter(*names) if len(names) > 1 else None
    assign = object.__setattr__  # the class is frozen: its own __setattr__ refuses

    def __getstate__(self: Any) -> tuple[Any, ...]:
        if values is None:
            return tuple(getattr(self, n) for n in names)
        state: tuple[Any, ...] = values(self)
        return state

    def __setstate__(self: Any, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state, strict=True):
            assign(self, name, value)

    setattr(cls, "__getstate__", __getstate__)  # noqa: B010 - a method set on a made class
    setattr(cls, "__setstate__", __setstate__)  # noqa: B010
    return cls
