"""``Derived``: a read-only attribute computed from its instance, declared in one line.

A result that reads every figure from its closing event, a view that reads its limits
from the run's start event, a fork that reads what its source said: each would otherwise
spell out a four-line property per figure. Declared as ``rounds = Derived(read)``
(usually through a small factory that says where it reads, such as ``result._closing``)
with the attribute's docstring under it, the attribute is typed by what ``read``
returns, computed on every access (so it never goes stale) and refuses assignment, as a
property does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, Self, TypeVar, overload

Owner = TypeVar("Owner")
T = TypeVar("T")


class Derived(Generic[Owner, T]):
    """A read-only attribute: ``read(instance)`` on every access."""

    def __init__(self, read: Callable[[Owner], T]) -> None:
        self._read = read
        self._name = "attribute"

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> Self: ...

    @overload
    def __get__(self, instance: Owner, owner: type[Any] | None = None) -> T: ...

    def __get__(self, instance: Owner | None, owner: type[Any] | None = None) -> T | Self:
        return self if instance is None else self._read(instance)

    def __set__(self, instance: Owner, value: object) -> None:
        raise AttributeError(f"{self._name} is read-only")
