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

import dataclasses
import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from pydantic import BaseModel

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._support.errortext import describe, explain
from toolloop_lab._support.escape import NAME_CHARS, clip
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ConfigurationError

ToolLike: TypeAlias = BaseTool | Callable[..., Any]
"""One tool as ``LLMAgent`` takes it: a ``BaseTool`` (``@tool`` functions are) or a plain
function, made a tool by langchain-core's ``tool()``."""

TOOLS_SHAPE: Final = (
    "tools= takes a list of tools (BaseTool, @tool functions or plain functions with a docstring)"
)
"""The start of every refusal of ``tools=``: the shape expected."""


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
        return f"got {shown(tools)}: pass its tools, tools=list(tools.values())"
    if isinstance(tools, (str, bytes, BaseModel)) or not isinstance(tools, Iterable):
        if callable(tools) and not isinstance(tools, type):
            return f"got the function {_named(tools)} on its own: pass tools=[{_named(tools)}]"
        return f"got {shown(tools)}"
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
            "function docs become tools with toolloop_lab._tools.schema.tools_from_schema)"
        )
    if isinstance(item, str):
        return f"{where} is {shown(item)}: pass the tool itself, not its name"
    return f"{where} is {shown(item)}"


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
    the shape expected for anything but a collection of tools and functions, and
    ``ConfigurationError`` for two that share a name (:func:`check_tool_names`)."""
    why = _whole_refusal(tools)
    if why is not None:
        raise TypeError(f"{TOOLS_SHAPE}, {why}")
    made = tuple(_tool_of(i, item) for i, item in enumerate(tools))
    check_tool_names(made)
    return made


def _origin(made: BaseTool) -> str:
    """What a tool was made from, as a person wrote it: a function, or a tool class."""
    func = getattr(made, "func", None) or getattr(made, "coroutine", None)
    name = getattr(func, "__name__", None)
    if isinstance(name, str) and name != made.name:
        return f"the function {clip(name, NAME_CHARS)}"
    if isinstance(name, str):
        return f"the tool {clip(name, NAME_CHARS)}"
    return f"a {type(made).__name__}"


def check_tool_names(tools: tuple[BaseTool, ...]) -> None:
    """Refuse two tools that share a name, naming both: the model calls a tool by its
    name, so one of them could never be called (every run used to fail in round 0)."""
    first: dict[str, int] = {}
    for index, made in enumerate(tools):
        earlier = first.setdefault(made.name, index)
        if earlier == index:
            continue
        name = clip(repr(made.name), NAME_CHARS)
        if tools[earlier] is made:
            text = (
                f"tools[{earlier}] and tools[{index}] are the same tool ({name}), given "
                "twice: pass it once"
            )
        else:
            text = (
                f"tools[{earlier}] ({_origin(tools[earlier])}) and tools[{index}] "
                f"({_origin(made)}) are both named {name}, and the model calls a tool by "
                'its name: give one of them another name (@tool("other_name") or '
                'StructuredTool.from_function(..., name="other_name")), or leave one out'
            )
        raise ConfigurationError(text, field="tools")


_RUNNABLE_CONFIG_KEYS: Final = frozenset(
    {"callbacks", "configurable", "max_concurrency", "recursion_limit", "run_id", "run_name"}
)
"""Keys of LangChain's ``RunnableConfig`` that are no field of ours: a sign that one was
passed as ``config=``."""


def _field_refusal(given: Iterable[str]) -> str | None:
    """Why a dict's keys are not fields of ``AgentConfig`` (``None`` when they all are)."""
    fields = [f.name for f in dataclasses.fields(AgentConfig)]
    unknown = [key for key in given if key not in fields]
    if not unknown:
        return None
    key = unknown[0]
    if not isinstance(key, str):
        return f"config= has no field {key!r}: its keys are AgentConfig's field names"
    if key in _RUNNABLE_CONFIG_KEYS:
        return (
            f"config= has no field {key!r}: it is this agent's AgentConfig, not a LangChain "
            "RunnableConfig (name a run with run(..., name=, tags=, metadata=))"
        )
    close = difflib.get_close_matches(key, fields, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"config= has no field {clip(repr(key), NAME_CHARS)}{hint}; its fields: {', '.join(fields)}"
    )


def agent_config(config: Any) -> AgentConfig:
    """The config an agent runs under: ``None`` is the default, a dict is
    ``AgentConfig(**dict)`` (checked as the constructor checks it); anything else is a
    ``TypeError``."""
    if config is None:
        return AgentConfig()
    if isinstance(config, AgentConfig):
        return config
    if isinstance(config, Mapping):
        why = _field_refusal(config)
        if why is not None:
            raise TypeError(why)
        return AgentConfig(**config)
    raise TypeError(f"config= takes an AgentConfig (or a dict of its fields), got {shown(config)}")


PRUNING_FIX: Final = "pass pruning_model= (a chat model, or a 'provider:model' name)"
"""How to give an agent its pruning model, as a refusal says it."""


def check_pruning(config: AgentConfig, pruning_model: object, *, fix: str) -> None:
    """Refuse ``prune_tools`` with no pruning model: nothing would ever be pruned, and
    nothing would say so. ``fix`` says how to give one where the mistake was made."""
    given = config.prune_tools
    if not given or pruning_model is not None:
        return
    names = ", ".join(clip(repr(n), NAME_CHARS) for n in given[:3])
    more = f" and {len(given) - 3} more" if len(given) > 3 else ""
    raise ConfigurationError(
        f"prune_tools names {names}{more}, but there is no pruning model, so nothing would "
        f"ever be pruned: {fix}, or leave prune_tools out",
        field="prune_tools",
    )


def check_prune_tools(
    config: AgentConfig, tools: Iterable[BaseTool], *, pruning_model: object
) -> None:
    """Refuse ``prune_tools`` naming a tool the agent does not have, or with no
    ``pruning_model`` (either way its outputs would never be pruned, silently). A
    ``prune_tools`` that is no tuple of names (a config changed past its constructor) is
    left to the check a run makes of its config."""
    given = config.prune_tools
    if not isinstance(given, tuple) or not all(isinstance(n, str) and n for n in given):
        return
    names = [t.name for t in tools]
    missing = [name for name in given if name not in names]
    if missing:
        have = ", ".join(names) if names else "none"
        raise ConfigurationError(
            f"prune_tools: {missing[0]!r} is not one of the agent's tools ({have}); "
            "name tools the agent has, or give it the tool",
            field="prune_tools",
        )
    check_pruning(config, pruning_model, fix=PRUNING_FIX)


def _model_shape(field: str) -> str:
    return (
        f"{field}= takes a langchain-core chat model (BaseChatModel, e.g. "
        "ChatOpenAI(model=...)) or a 'provider:model' string"
    )


def _from_name(name: str, field: str) -> BaseChatModel:
    """The chat model langchain's ``init_chat_model`` makes of ``name``."""
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        raise TypeError(
            f"{_model_shape(field)}; a name becomes a model through langchain's "
            f"init_chat_model, and the langchain package is not installed: pip install "
            f"langchain, or pass {field}=ChatOpenAI(model=...) (or another provider's model)"
        ) from None
    try:
        made = init_chat_model(name)
    except Exception as exc:  # its own words say why; we add where and how
        raise ConfigurationError(
            f"{field}={clip(repr(name), NAME_CHARS)}: init_chat_model could not make a chat "
            f"model ({explain(exc)}); name it as 'provider:model' "
            "(say 'openai:gpt-4o-mini'), with that provider's package and credentials, or "
            "pass the chat model itself",
            field=field,
        ) from exc
    if not isinstance(made, BaseChatModel):
        raise ConfigurationError(
            f"{field}={clip(repr(name), NAME_CHARS)}: init_chat_model made a "
            f"{type(made).__name__}, not a chat model",
            field=field,
        )
    return made


def chat_model(model: Any, *, field: str = "model") -> BaseChatModel:
    """The chat model an agent calls: a ``BaseChatModel`` as it is, a ``"provider:model"``
    name through langchain's ``init_chat_model`` when it is installed; anything else is a
    ``TypeError`` (it used to fail inside a run, claiming a call was made)."""
    if isinstance(model, BaseChatModel):
        return model
    if isinstance(model, str):
        return _from_name(model, field)
    if isinstance(model, type):
        why = f"got the class {model.__name__}: pass an instance, {model.__name__}(...)"
    elif isinstance(model, Runnable):
        why = (
            f"got a {type(model).__name__}: pass the chat model itself (the agent binds "
            "its tools, and calls it as it is)"
        )
    else:
        why = f"got {shown(model)}"
    raise TypeError(f"{_model_shape(field)}, {why}")
