"""Callables a person hands over (observers, pause hooks), checked where they are given.

An observer given as a string used to be accepted, and recorded nothing while the run
reported success; one function given where a list belongs failed inside the run
("'function' object is not iterable"); a pause hook of ``42`` failed in round 1. Every
place that takes observers or pause hooks (the agent, the sweeps, the bridge, the span
source, the debugger) checks them here, so each is refused the same way, when it is
given, naming the argument and the fix.

One callable where a list belongs is refused, not taken as a list of one, as ``tools=``
refuses one tool: ``observers=fn`` reads like a typo of ``observers=[fn]``, and the
message says so. Functions that take their callables one per argument
(``watch(dbg, writer)``) check each and refuse a list given as one of them.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from toolloop_lab._support.fields import shown


def _name(value: Any) -> str | None:
    """A function's own name, when it has one a fix may be written with."""
    if not (inspect.isfunction(value) or inspect.isbuiltin(value)):
        return None
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else None


@dataclass(frozen=True, slots=True)
class Role:
    """What the callables of one argument are, as a refusal says it."""

    field: str
    """The argument: ``"observers"``."""
    one: str
    """One of them: ``"observer"``."""
    does: str
    """What each is: ``"a callable given every event"``."""

    def shape(self, spread: str | None) -> str:
        """The start of every refusal: the shape expected."""
        if spread is not None:
            return f"{spread}(*{self.field}) takes each {self.one} ({self.does}) as an argument"
        return f"{self.field}= takes a list of {self.one}s (each {self.does})"


def _whole_refusal(value: Any, role: Role) -> str | None:
    """Why ``value`` as a whole is no collection of callables (``None`` when it may be)."""
    if value is None:
        return f"got None: leave {role.field}= out for none"
    if isinstance(value, type):
        return (
            f"got {shown(value)}: pass an instance in a list, {role.field}=[{value.__name__}(...)]"
        )
    if callable(value) and not isinstance(value, (list, tuple, set, frozenset)):
        name = _name(value)
        what = f"the function {name}" if name else f"{shown(value)}"
        return f"got {what} on its own: pass a list, {role.field}=[{name or role.one}]"
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        return f"got {shown(value)}"
    return None


def _item_refusal(value: Any, role: Role, where: str, spread: str | None) -> str | None:
    """Why ``value`` (named ``where``) is no callable of ``role`` (``None`` when it is)."""
    if isinstance(value, type):
        return f"{where} is {shown(value)}: pass an instance, {value.__name__}(...)"
    if callable(value):
        return None
    if isinstance(value, str):
        return f"{where} is {shown(value)}: pass the {role.one} itself, not its name"
    if spread is not None and isinstance(value, (list, tuple)):
        return (
            f"{where} is {shown(value)}: pass each {role.one} as its own argument, "
            f"{spread}(*{role.field})"
        )
    return f"{where} is {shown(value)}, which cannot be called"


def callables(value: Any, role: Role, *, spread: str | None = None) -> tuple[Any, ...]:
    """``value`` as a tuple of callables, or a ``TypeError`` naming the argument and the fix.

    ``spread`` names the function when its callables come one per argument (``value`` is
    then its ``*args``), so a list passed as one of them is told apart.
    """
    if spread is None:
        why = _whole_refusal(value, role)
        if why is not None:
            raise TypeError(f"{role.shape(spread)}, {why}")
    items = tuple(value)
    for index, item in enumerate(items):
        why = _item_refusal(item, role, f"{role.field}[{index}]", spread)
        if why is not None:
            raise TypeError(f"{role.shape(spread)}; {why}")
    return items


def one_callable(value: Any, role: Role, *, where: str) -> Any:
    """``value``, one callable of ``role`` given as ``where`` (``subscribe(callback)``), or
    a ``TypeError`` naming it and the fix."""
    why = _item_refusal(value, role, where, None)
    if why is not None:
        raise TypeError(f"{where} takes one {role.one} ({role.does}); {why}")
    return value
