"""What a :class:`~toolloop_lab.lab._scenario.Scenario` and its parts take, checked when
they are built.

A sweep runs every scenario before it reports any: a wrong field accepted when a scenario
was written became one failed row per scenario, after the whole sweep (5,000 scenarios
sharing a typo, 5,000 failures), or a bare Python error naming nothing. Each check here
refuses a field where it is written, with a ``ConfigurationError`` naming it and the fix.
"""

from __future__ import annotations

import difflib
import inspect
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from toolloop_lab._engine.arguments import agent_config
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.fields import Count, checked, shown
from toolloop_lab.errors import ConfigurationError

if TYPE_CHECKING:
    from toolloop_lab.lab._scenario import Reply

T = TypeVar("T")

REPLIES_SHAPE = "a list of Reply values (Reply.final(...), Reply.call(...))"
"""What a script of replies is, as a refusal says it."""


def text(value: Any, field: str, *, blank: str | None = None) -> str:
    """``value``, text; with ``blank`` (the fix), text with something besides spaces."""
    if not isinstance(value, str):
        raise ConfigurationError(f"{field} takes text, got {shown(value)}", field=field)
    if blank is not None and not value.strip():
        raise ConfigurationError(f"{field} is blank: {blank}", field=field)
    return value


def count(value: Any, field: str) -> int | None:
    """``value``, a token count (an int >= 0, never a bool) or ``None``."""
    return None if value is None else int(checked(Count, value, field=field))


def items_of(value: Any, field: str, kind: type[T], *, shape: str, fix: str) -> tuple[T, ...]:
    """``value`` (any collection, never a lone string) as a tuple of ``kind``."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ConfigurationError(f"{field} takes {shape}, got {shown(value)}", field=field)
    items = tuple(value)
    for index, item in enumerate(items):
        if not isinstance(item, kind):
            raise ConfigurationError(f"{field}[{index}] is {shown(item)}: {fix}", field=field)
    return items


def replies_of(value: Any, field: str) -> tuple[Reply, ...]:
    """A script's replies: at least one, each a ``Reply``."""
    from toolloop_lab.lab._scenario import Reply

    replies = items_of(value, field, Reply, shape=REPLIES_SHAPE, fix="each reply is a Reply")
    if not replies:
        raise ConfigurationError(
            f"a scripted model needs at least one Reply: give {field}=[Reply.final(...)]",
            field=field,
        )
    return replies


def unique_call_ids(replies: Iterable[tuple[str, Reply]], field: str) -> None:
    """Refuse one call id given to two calls (the run would refuse the conversation, once
    per scenario, after the sweep); ``replies`` are each with where it is."""
    seen: dict[str, str] = {}
    for where, reply in replies:
        for spec in reply.tool_calls:
            if spec.id is None:
                continue
            earlier = seen.setdefault(spec.id, where)
            if earlier != where:
                raise ConfigurationError(
                    f"the call id {clip(repr(spec.id), NAME_CHARS)} is used by {earlier} and "
                    f"{where}: each call needs an id of its own (or none: one is made)",
                    field=field,
                )


def _required(value: Any) -> list[str] | None:
    """The parameters ``value`` cannot be called without (``None``: it needs none, or its
    signature cannot be read)."""
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind()
    except TypeError:
        return [
            p.name
            for p in signature.parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
    return None


def factory(value: Any, where: str, *, field: str, makes: str, takes: str) -> None:
    """Refuse ``value`` (named ``where``) unless it is a zero-argument factory: a scenario
    builds fresh live objects for every run, so it holds what makes them, not them."""
    if isinstance(value, (BaseChatModel, BaseTool)):
        what = (
            f"the tool {clip(repr(value.name), NAME_CHARS)}"
            if isinstance(value, BaseTool)
            else f"a {type(value).__name__}"
        )
        raise ConfigurationError(
            f"{where} is {what} itself: a scenario builds a fresh {makes} for every run, so "
            f"it takes {takes} (importable, to run on an executor)",
            field=field,
        )
    if not callable(value):
        raise ConfigurationError(f"{where} takes {takes}, got {shown(value)}", field=field)
    needs = _required(value)
    if needs:
        name = getattr(value, "__name__", None)
        what = f"the function {name}" if inspect.isfunction(value) else shown(value)
        raise ConfigurationError(
            f"{where}: {what} needs arguments ({', '.join(needs)}), and a factory is called "
            f"with none: pass {takes}",
            field=field,
        )


def builtin_name(name: str, index: int, builtins: tuple[str, ...]) -> None:
    """Refuse a tool name that is no built-in, suggesting the closest."""
    if name in builtins:
        return
    close = difflib.get_close_matches(name, builtins, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigurationError(
        f"tools[{index}] is {clip(repr(name), NAME_CHARS)}, no built-in tool (built-ins: "
        f"{', '.join(builtins)}){hint}",
        field="tools",
    )


def data_dir_of(value: Any) -> str | None:
    """The root ``file_read`` reads, as text (a ``Path`` is kept as its text)."""
    if value is None:
        return None
    path = os.fspath(value) if isinstance(value, os.PathLike) else value
    if not isinstance(path, str) or not path:
        raise ConfigurationError(
            f"data_dir takes a directory path (a str or a Path), got {shown(value)}",
            field="data_dir",
        )
    return path


def config_of(value: Any) -> AgentConfig:
    """An ``AgentConfig``, or a dict of its fields, as ``LLMAgent(config=)`` takes it."""
    try:
        return agent_config(value)
    except TypeError as exc:
        raise ConfigurationError(str(exc), field="config") from None
