"""What ``LLMAgent(...)`` takes, checked when the agent is built.

A wrong argument used to be accepted and to fail inside ``run()`` ("tool loop failed in
round 0: AttributeError ..."), which reads like a bug of the loop and may come after a
paid call. Each function here turns what a person passed into what the loop runs, or
refuses it at once with a message that says what to pass instead.

Plain functions become tools the way ``create_agent`` and LangGraph's ``ToolNode`` make
them: langchain-core's own ``tool()`` (a ``StructuredTool`` whose schema comes from the
signature and whose description is the docstring), so a function is described to the
model exactly as ``bind_tools`` would describe it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab.errors import ConfigurationError, describe

__all__ = ["TOOLS_SHAPE", "ToolLike", "agent_tools"]

ToolLike: TypeAlias = BaseTool | Callable[..., Any]
"""One tool as ``LLMAgent`` takes it: a ``BaseTool`` (``@tool`` functions are) or a plain
function, made a tool by langchain-core's ``tool()``."""

TOOLS_SHAPE: Final = (
    "tools= takes a list of tools (BaseTool, @tool functions or plain functions with a docstring)"
)
"""The start of every refusal of ``tools=``: the shape expected."""


def _shown(value: Any) -> str:
    """A value as a refusal names it: its type, and its text when that is short."""
    if value is None:
        return "None"
    kind = type(value).__name__
    if isinstance(value, (str, int, float)):
        return f"the {kind} {clip(repr(value), NAME_CHARS)}"
    return f"a {kind}"


def _named(value: Any) -> str:
    """What to write in a list for ``value`` in a fix (its name, else a placeholder)."""
    name = getattr(value, "name", None) or getattr(value, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else "tool"


def _whole_refusal(tools: Any) -> str | None:
    """Why ``tools`` as a whole is not a collection of tools (``None`` when it may be)."""
    if tools is None:
        return "got None: leave tools= out for an agent without tools"
    if isinstance(tools, BaseTool):
        return f"got the tool {tools.name!r} on its own: pass tools=[{_named(tools)}]"
    if isinstance(tools, Mapping):
        return f"got {_shown(tools)}: pass its tools, tools=list(tools.values())"
    if isinstance(tools, (str, bytes, BaseModel)) or not isinstance(tools, Iterable):
        if callable(tools) and not isinstance(tools, type):
            return f"got the function {_named(tools)} on its own: pass tools=[{_named(tools)}]"
        return f"got {_shown(tools)}"
    return None


def _item_refusal(index: int, item: Any) -> str:
    """Why ``item`` (at ``tools[index]``) is no tool, and what to pass instead."""
    where = f"tools[{index}]"
    if isinstance(item, type):
        return f"{where} is the class {item.__name__}: pass an instance, {item.__name__}(...)"
    if isinstance(item, Mapping):
        return (
            f"{where} is a dict (a JSON schema or a provider's built-in tool): the loop runs "
            "every tool the model calls, so it needs the function itself (JSON-schema "
            "function docs become tools with toolloop_lab.schema_tools.tools_from_schema)"
        )
    if isinstance(item, str):
        return f"{where} is {_shown(item)}: pass the tool itself, not its name"
    return f"{where} is {_shown(item)}"


def _tool_of(index: int, item: Any) -> BaseTool:
    """``item`` as a tool: a ``BaseTool`` as it is, a function through ``tool()``."""
    if isinstance(item, BaseTool):
        return item
    if isinstance(item, type) or not callable(item) or isinstance(item, Mapping):
        raise TypeError(f"{TOOLS_SHAPE}; {_item_refusal(index, item)}")
    try:
        made: BaseTool = tool(item)
    except Exception as exc:  # noqa: BLE001 - langchain-core says why; the fix is ours
        name = getattr(item, "__name__", None) or type(item).__name__
        raise ConfigurationError(
            f"tools[{index}]: the function {clip(str(name), NAME_CHARS)} cannot be a tool as "
            f"it is ({describe(exc)}); the model reads a tool's docstring as its "
            "description: give it one, or wrap it with @tool(description=...)",
            field="tools",
        ) from None
    return made


def agent_tools(tools: Any) -> tuple[BaseTool, ...]:
    """The tools an agent runs, from what was passed as ``tools=``; ``TypeError`` naming
    the shape expected for anything but a collection of tools and functions."""
    why = _whole_refusal(tools)
    if why is not None:
        raise TypeError(f"{TOOLS_SHAPE}, {why}")
    return tuple(_tool_of(i, item) for i, item in enumerate(tools))
