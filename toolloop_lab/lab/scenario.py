"""``Scenario``: one run described as data, so a sweep can be pickled and shipped anywhere.

A scenario holds no live objects: the model is a zero-argument factory (a
:class:`ScriptedModel`, itself plain data, or any importable callable), tools are built-in
names or importable factories, and the USD limit and prices are values. Everything live
(the chat model with its call counter, the tools, the agent) is built fresh for each run by
:meth:`Scenario.build_agent`, so the same scenario can run twice, concurrently, or on
another machine (see issue 9's executors) and behave the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool

from toolloop_lab.agent import AgentConfig, LLMAgent
from toolloop_lab.budget import checked_prices, to_decimal_usd
from toolloop_lab.builtin_tools import echo_tool, file_read_tool
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Observer
from toolloop_lab.models import ScriptedChatModel
from toolloop_lab.pricing import TokenPrice

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_MODEL_NAME",
    "ModelFactory",
    "Reply",
    "Scenario",
    "ScriptedModel",
    "ToolCallSpec",
    "ToolSource",
    "sample_data_dir",
]

DEFAULT_MODEL_NAME: Final = "gpt-4o-mini"
"""Scripted models report this name, so genai-prices prices them like the real model."""

BUILTIN_TOOLS: Final = ("echo", "file_read")
"""Tool names a scenario may list as plain strings."""

ModelFactory: TypeAlias = Callable[[], BaseChatModel]
"""Builds a fresh chat model for one run; must be importable (or plain data) to pickle."""

ToolSource: TypeAlias = str | Callable[[], BaseTool]
"""A built-in tool name from :data:`BUILTIN_TOOLS`, or an importable tool factory."""


def sample_data_dir() -> Path:
    """The packaged directory ``file_read`` reads when a scenario names no ``data_dir``."""
    return Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=32)
def _builtin_tool(name: str, root: Path) -> BaseTool:
    """One instance per (tool, root) for the process: built-ins hold no per-run state, and
    building one costs more than a scripted round (langchain-core makes pydantic models)."""
    return echo_tool() if name == "echo" else file_read_tool(root)


def _count(value: int | None, name: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigurationError(f"{name} must be an int >= 0 or None, got {value!r}", field=name)


@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call a scripted reply makes."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    """``None`` gives ``call_<reply>_<n>``, unique within the run."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", dict(self.args))


@dataclass(frozen=True, slots=True)
class Reply:
    """One scripted model reply as plain data: text, tool calls and usage, or a failure.

    Usage is given as both token counts or neither; with neither, the scripted model
    estimates it and the run is marked ``usage_estimated``.
    """

    text: str = ""
    tool_calls: tuple[ToolCallSpec, ...] = ()
    input_tokens: int | None = None
    output_tokens: int | None = None
    raises: str | None = None
    """When set, this call raises ``RuntimeError(raises)`` instead of replying."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        _count(self.input_tokens, "input_tokens")
        _count(self.output_tokens, "output_tokens")
        if (self.input_tokens is None) != (self.output_tokens is None):
            raise ConfigurationError(
                "give both input_tokens and output_tokens, or neither", field="input_tokens"
            )

    @classmethod
    def final(
        cls, text: str, *, input_tokens: int | None = None, output_tokens: int | None = None
    ) -> Reply:
        """A final answer (no tool calls)."""
        return cls(text, (), input_tokens, output_tokens)

    @classmethod
    def call(
        cls,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        text: str = "",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
    ) -> Reply:
        """A reply making one tool call (empty ``text`` makes it a stuck round)."""
        return cls(text, (ToolCallSpec(name, args or {}),), input_tokens, output_tokens)

    @classmethod
    def failure(cls, message: str) -> Reply:
        """A model call that raises ``RuntimeError(message)``, like a provider outage."""
        return cls(raises=message)

    def to_script_item(self, index: int) -> AIMessage | BaseException:
        """What :class:`ScriptedChatModel` plays for this reply (``index`` names call ids)."""
        if self.raises is not None:
            return RuntimeError(self.raises)
        usage = None
        if self.input_tokens is not None and self.output_tokens is not None:
            usage = {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.input_tokens + self.output_tokens,
            }
        calls = [
            {
                "name": c.name,
                "args": dict(c.args),
                "id": c.id or f"call_{index}_{n}",
                "type": "tool_call",
            }
            for n, c in enumerate(self.tool_calls, start=1)
        ]
        return AIMessage(content=self.text, tool_calls=calls, usage_metadata=usage)


@dataclass(frozen=True, slots=True)
class ScriptedModel:
    """A :class:`ScriptedChatModel` as data: calling it builds a fresh model for one run."""

    replies: tuple[Reply, ...]
    model_name: str = DEFAULT_MODEL_NAME

    def __post_init__(self) -> None:
        object.__setattr__(self, "replies", tuple(self.replies))

    def __call__(self) -> ScriptedChatModel:
        items = [r.to_script_item(i) for i, r in enumerate(self.replies, start=1)]
        return ScriptedChatModel(items, model_name=self.model_name)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One run of the tool loop, described declaratively and picklably.

    ``usd_limit`` and ``prices`` apply to this scenario only: a sweep never inherits a
    ``usd_budget`` block around it, so a scenario reads the same wherever it runs.
    """

    name: str
    model: ModelFactory
    """A :class:`ScriptedModel` or an importable zero-argument chat-model factory."""
    prompt: str = "Use the tools, then answer."
    tools: tuple[ToolSource, ...] = ("echo",)
    config: AgentConfig = field(default_factory=AgentConfig)
    pruning_model: ModelFactory | None = None
    usd_limit: Decimal | None = None
    prices: Mapping[str, TokenPrice] | None = None
    """Price overrides by model name, with or without ``usd_limit`` (``LLMAgent(prices=)``)."""
    data_dir: str | None = None
    """Root directory of ``file_read``; ``None`` is the packaged sample data."""
    tags: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError("a scenario needs a non-empty name", field="name")
        if not callable(self.model):
            raise ConfigurationError("model must be a ScriptedModel or a factory", field="model")
        if self.pruning_model is not None and not callable(self.pruning_model):
            raise ConfigurationError("pruning_model must be callable", field="pruning_model")
        tools: Iterable[ToolSource] = (
            (self.tools,) if isinstance(self.tools, str) else tuple(self.tools)
        )
        object.__setattr__(self, "tools", tuple(tools))
        tags = (self.tags,) if isinstance(self.tags, str) else tuple(self.tags)
        object.__setattr__(self, "tags", tuple(str(t) for t in tags))
        if self.usd_limit is not None:
            object.__setattr__(self, "usd_limit", to_decimal_usd(self.usd_limit, field="usd_limit"))
        if self.prices is not None:
            # checked here, like the agent does, so a bad table fails when it is written
            checked = checked_prices(self.prices)
            object.__setattr__(self, "prices", dict(checked) if checked else None)

    @classmethod
    def scripted(
        cls,
        name: str,
        replies: Iterable[Reply],
        *,
        model_name: str = DEFAULT_MODEL_NAME,
        pruning_replies: Iterable[Reply] | None = None,
        **fields: Any,
    ) -> Scenario:
        """A scenario on a scripted model (and, optionally, a scripted pruning model)."""
        pruning = (
            ScriptedModel(tuple(pruning_replies), model_name)
            if pruning_replies is not None
            else fields.pop("pruning_model", None)
        )
        return cls(name, ScriptedModel(tuple(replies), model_name), pruning_model=pruning, **fields)

    def build_tools(self) -> list[BaseTool]:
        """Fresh tool objects for one run; unknown names raise ``ConfigurationError``."""
        built: list[BaseTool] = []
        for source in self.tools:
            if source == "echo":
                built.append(_builtin_tool("echo", Path()))
            elif source == "file_read":
                root = Path(self.data_dir) if self.data_dir is not None else sample_data_dir()
                built.append(_builtin_tool("file_read", root.resolve()))
            elif isinstance(source, str):
                raise ConfigurationError(
                    f"unknown built-in tool {source!r}; built-ins are {', '.join(BUILTIN_TOOLS)}",
                    field="tools",
                )
            else:
                tool = source()
                if not isinstance(tool, BaseTool):
                    raise ConfigurationError(
                        f"tool factory returned {type(tool).__name__}, not a BaseTool",
                        field="tools",
                    )
                built.append(tool)
        return built

    def build_agent(self, observers: Iterable[Observer] = ()) -> LLMAgent:
        """A fresh agent (model, tools, pruning model) wired to ``observers``."""
        model = self.model()
        if not isinstance(model, BaseChatModel):
            raise ConfigurationError(
                f"model factory returned {type(model).__name__}, not a BaseChatModel",
                field="model",
            )
        pruning = self.pruning_model() if self.pruning_model is not None else None
        if pruning is not None and not isinstance(pruning, BaseChatModel):
            raise ConfigurationError(
                f"pruning model factory returned {type(pruning).__name__}",
                field="pruning_model",
            )
        return LLMAgent(
            model,
            self.build_tools(),
            self.config,
            pruning_model=pruning,
            observers=observers,
            prices=self.prices,
        )
