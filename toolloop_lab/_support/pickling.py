"""Quick pickling for the frozen, slotted dataclasses a sweep ships between processes.

A sweep on a process pool or a Dask cluster sends every scenario out and every run's events
back pickled. ``dataclasses`` gives a slotted class a ``__setstate__`` that looks up the
class's fields again for every object, which made unpickling a five-round run (about 40
such objects) cost the caller more than half a millisecond, a tenth of what running it
costs; on a Dask cluster the scheduler unpickled every scenario (a dozen such objects) too.
:func:`quick_pickle` gives a class the same state (its field values, in field order) and a
``__setstate__`` written for that class alone: one unpacking of the state and one slot
store per field, with no loop and no name look-ups (a third less time per object than a
loop over the fields).
"""

from __future__ import annotations

import dataclasses
import operator
import types
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def quick_pickle(cls: type[T]) -> type[T]:
    """``cls`` (a frozen dataclass with slots) pickled as the tuple of its field values."""
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    values = operator.attrgetter(*names) if len(names) > 1 else None

    def __getstate__(self: Any) -> tuple[Any, ...]:
        if values is None:
            return tuple(getattr(self, n) for n in names)
        state: tuple[Any, ...] = values(self)
        return state

    setattr(cls, "__getstate__", __getstate__)  # noqa: B010 - a method set on a made class
    setattr(cls, "__setstate__", _setstate_for(cls, names))  # noqa: B010
    return cls


def _setstate_for(cls: type[Any], names: tuple[str, ...]) -> Callable[[Any, tuple[Any, ...]], None]:
    """A ``__setstate__`` storing ``state`` into ``names``, unrolled for this class: each
    field's slot descriptor stores its value (the class is frozen: its own ``__setattr__``
    refuses). A field that is no slot goes through ``object.__setattr__``."""
    store: dict[str, Any] = {}
    for i, name in enumerate(names):
        slot = cls.__dict__.get(name)
        store[f"_set{i}"] = (
            slot.__set__
            if isinstance(slot, types.MemberDescriptorType)
            else lambda obj, value, name=name: object.__setattr__(obj, name, value)
        )
    unpack = "".join(f"v{i}, " for i in range(len(names)))
    stores = "".join(f"    _set{i}(self, v{i})\n" for i in range(len(names))) or "    pass\n"
    source = f"def __setstate__(self, state):\n    ({unpack}) = state\n{stores}"
    exec(compile(source, f"<quick_pickle {cls.__qualname__}>", "exec"), store)
    setstate: Callable[[Any, tuple[Any, ...]], None] = store["__setstate__"]
    setstate.__qualname__ = f"{cls.__qualname__}.__setstate__"
    return setstate
