"""An exception as a person reads it: what it says went wrong, never empty, never a crash.

Every reason the package writes for an exception (a failed run's ``loop_failure``, a tool's
error result, a refusal the page shows, a debugger's note) is made here, so a group of one,
an exception without a message or one whose ``__str__`` fails reads the same everywhere.
"""

from __future__ import annotations

from typing import Final

NO_MESSAGE: Final = "(no message)"
"""What :func:`describe` says of an exception that has no message and nothing behind it."""

_CHAIN_LINKS: Final = 6
"""How far a chain of causes is followed for an exception without a message."""
_GROUP_MEMBERS: Final = 3
"""Members of a group (of several) named in its reason; the rest are counted."""


def unwrap(exc: BaseException) -> BaseException:
    """The exception that says what went wrong: a group holding exactly one exception
    stands for that one, however deeply nested (anyio's and asyncio's task groups wrap
    every failure of an MCP or httpx client in such a group, whose own text says only
    "unhandled errors in a TaskGroup (1 sub-exception)")."""
    for _ in range(100):  # a bound: nesting is finite, but a hostile group is no proof
        members = getattr(exc, "exceptions", None) if isinstance(exc, BaseExceptionGroup) else None
        if not isinstance(members, tuple) or len(members) != 1:
            return exc
        if not isinstance(members[0], BaseException):
            return exc
        exc = members[0]
    return exc


def error_name(exc: BaseException) -> str:
    """The class name a reason gives ``exc``: its own, or the one exception's a group of
    one holds (:func:`unwrap`)."""
    return type(unwrap(exc)).__name__


def describe(exc: BaseException) -> str:
    """What ``exc`` says went wrong, never empty: its message (the one exception's, for a
    group of one, see :func:`unwrap`; a group of several names its members). An exception
    without a message says what it came out of (``caused by ConnectError: All connection
    attempts failed``, or ``while handling ...``, as Python's traceback tells them apart),
    and with nothing behind it either :data:`NO_MESSAGE`. A message whose ``__str__``
    fails reads ``<unprintable ValueError>``: a broken message must never replace the
    error it describes."""
    exc = unwrap(exc)
    return _message(exc, 0) or _behind(exc, 0) or NO_MESSAGE


def explain(exc: BaseException) -> str:
    """``exc`` as a reason names it: ``ConnectError: All connection attempts failed``,
    the class and the message of the exception that says what went wrong (see
    :func:`describe`). One without a message is named by its class and, where there is
    one, what it came out of: ``ClosedResourceError (caused by ConnectError: ...)``, or
    its class alone; never a class with an empty ``: `` after it."""
    return _explained(exc, 0)


def _explained(exc: BaseException, depth: int) -> str:
    exc = unwrap(exc)
    name = type(exc).__name__
    said = _message(exc, depth)
    if said:
        return f"{name}: {said}"
    behind = _behind(exc, depth)
    return f"{name} ({behind})" if behind else name


def _message(exc: BaseException, depth: int) -> str:
    """The exception's own text (a group's, with its members named), or ``""`` when it
    has none worth reading (empty or blank)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - any failure of a foreign __str__
        return f"<unprintable {type(exc).__name__}>"
    if not text.strip():
        return ""
    members = getattr(exc, "exceptions", None) if isinstance(exc, BaseExceptionGroup) else None
    if not isinstance(members, tuple) or not members or depth >= _CHAIN_LINKS:
        return text
    named = [_explained(m, depth + 1) for m in members[:_GROUP_MEMBERS]]
    if len(members) > _GROUP_MEMBERS:
        named.append(f"{len(members) - _GROUP_MEMBERS} more")
    return f"{text}: {'; '.join(named)}"


def _behind(exc: BaseException, depth: int) -> str:
    """What ``exc`` came out of, as a person reads it (``caused by X: m``), or ``""``. An
    interrupt or an exit (not an ``Exception``) came from outside, wherever the program
    happened to be: what it was handling then is no cause of it."""
    if depth >= _CHAIN_LINKS or not isinstance(exc, Exception):
        return ""
    if isinstance(exc.__cause__, BaseException):
        return f"caused by {_explained(exc.__cause__, depth + 1)}"
    context = exc.__context__
    if isinstance(context, BaseException) and not exc.__suppress_context__:
        return f"while handling {_explained(context, depth + 1)}"
    return ""
