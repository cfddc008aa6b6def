"""``Scenario``: one run described as data, so a sweep can be pickled and shipped anywhere.

A scenario holds no live objects: the model is a zero-argument factory (a
:class:`ScriptedModel` or :class:`ScriptedTurns`, themselves plain data, or any importable
callable), tools are built-in names, importable factories, or one ``tools_factory`` that
builds every tool of a run around one shared backend, and the USD limit and prices are
values. Everything live (the chat model with its call counter, the tools and their backend,
the agent) is built fresh for each run by :meth:`Scenario.build_agent`, so the same scenario
can run twice, concurrently, or on another machine and behave the same.

A scenario holds one or more user **turns**. Each turn runs the loop once, on the transcript
so far plus the turn's message, with the same agent, so the model and the tools' backend
carry over from turn to turn (a file moved in turn 1 is still moved in turn 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, TypeAlias

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.arguments import check_pruning
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._mcp.server import McpServer
from toolloop_lab._mcp.tools import checked_servers
from toolloop_lab._models.scripted import ScriptedChatModel
from toolloop_lab._spend.budget import checked_prices
from toolloop_lab._spend.pricing import TokenPrice, to_decimal_usd
from toolloop_lab._support.escape import TEXT_CHARS, clip
from toolloop_lab._support.fields import shown
from toolloop_lab._support.pickling import quick_pickle
from toolloop_lab._tools.builtin import echo_tool, file_read_tool
from toolloop_lab.checks._base import Check
from toolloop_lab.checks._report import checks_of
from toolloop_lab.errors import ConfigurationError, ScriptError
from toolloop_lab.events import Observer
from toolloop_lab.lab._checks import (
    builtin_name,
    config_of,
    count,
    data_dir_of,
    factory,
    items_of,
    replies_of,
    text,
    unique_call_ids,
)

DEFAULT_MODEL_NAME: Final = "gpt-4o-mini"
"""Scripted models report this name, so genai-prices prices them like the real model."""

DEFAULT_PROMPT: Final = "Use the tools, then answer."
"""The one user message of a scenario that gives neither ``prompt`` nor ``turns``."""

BUILTIN_TOOLS: Final = ("echo", "file_read")
"""Tool names a scenario may list as plain strings."""

ModelFactory: TypeAlias = Callable[[], BaseChatModel]
"""Builds a fresh chat model for one run; must be importable (or plain data) to pickle."""

ToolSource: TypeAlias = str | Callable[[], BaseTool]
"""A built-in tool name from :data:`BUILTIN_TOOLS`, or an importable tool factory."""

ToolsFactory: TypeAlias = Callable[[], Iterable[BaseTool]]
"""Builds all of one run's tools at once, around one fresh backend they share; must be
picklable (a module-level function or a frozen dataclass instance) to run on an executor."""


def sample_data_dir() -> Path:
    """The packaged directory ``file_read`` reads when a scenario names no ``data_dir``."""
    return Path(__file__).resolve().parent / "data"


@lru_cache(maxsize=32)
def _builtin_tool(name: str, root: Path) -> BaseTool:
    """One instance per (tool, root) for the process: built-ins hold no per-run state, and
    building one costs more than a scripted round (langchain-core makes pydantic models)."""
    return echo_tool() if name == "echo" else file_read_tool(root)


@quick_pickle
@dataclass(frozen=True, slots=True)
class ToolCallSpec:
    """One tool call a scripted reply makes."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    """``None`` gives ``call_<reply>_<n>``, unique within the run."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ConfigurationError(
                f"name takes the tool's name (text), got {shown(self.name)}", field="name"
            )
        text(self.name, "name", blank="name the tool the call is for")
        if not isinstance(self.args, Mapping):
            raise ConfigurationError(
                f"args takes a dict of the call's arguments by name, got {shown(self.args)}",
                field="args",
            )
        for key in self.args:
            if not isinstance(key, str):
                raise ConfigurationError(
                    f"args keys are argument names (text), got {shown(key)}", field="args"
                )
        object.__setattr__(self, "args", dict(self.args))
        if self.id is not None:
            text(self.id, "id", blank="give the call an id, or None to have one made")


@quick_pickle
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
        text(self.text, "text")
        calls = items_of(
            self.tool_calls,
            "tool_calls",
            ToolCallSpec,
            shape="a list of ToolCallSpec values",
            fix="pass ToolCallSpec(name, args), or make the reply with Reply.call(name, args)",
        )
        object.__setattr__(self, "tool_calls", calls)
        count(self.input_tokens, "input_tokens")
        count(self.output_tokens, "output_tokens")
        if (self.input_tokens is None) != (self.output_tokens is None):
            raise ConfigurationError(
                "give both input_tokens and output_tokens, or neither", field="input_tokens"
            )
        if self.raises is not None:
            text(self.raises, "raises", blank="say what the failing call raises")
            if self.text or calls:
                raise ConfigurationError(
                    "a reply that raises has no text or tool calls (the call fails instead "
                    "of replying): make it with Reply.failure(message)",
                    field="raises",
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


_MODEL_NAME_FIX: Final = (
    "name the model the replies are priced as (the default is a real model's name)"
)


@quick_pickle
@dataclass(frozen=True, slots=True)
class ScriptedModel:
    """A :class:`ScriptedChatModel` as data: calling it builds a fresh model for one run."""

    replies: tuple[Reply, ...]
    model_name: str = DEFAULT_MODEL_NAME

    def __post_init__(self) -> None:
        replies = replies_of(self.replies, "replies")
        object.__setattr__(self, "replies", replies)
        unique_call_ids(((f"replies[{i}]", r) for i, r in enumerate(replies)), "replies")
        text(self.model_name, "model_name", blank=_MODEL_NAME_FIX)

    def __call__(self) -> ScriptedChatModel:
        items = [r.to_script_item(i) for i, r in enumerate(self.replies, start=1)]
        return ScriptedChatModel(items, model_name=self.model_name)


@quick_pickle
@dataclass(frozen=True, slots=True)
class Turn:
    """One user turn of a scripted scenario: the user's message and the replies to it."""

    message: str
    replies: tuple[Reply, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.message, str) or not self.message.strip():
            raise ConfigurationError("a turn needs a non-empty message", field="turns")
        try:
            replies = replies_of(self.replies, "replies")
        except ConfigurationError as exc:
            raise ConfigurationError(f"turn {self.message!r:.60}: {exc}", field="turns") from None
        object.__setattr__(self, "replies", replies)


@quick_pickle
@dataclass(frozen=True, slots=True)
class ScriptedTurns:
    """A scripted model whose replies are grouped by turn, as data.

    Each call plays the next reply of the turn the conversation is in (the turn whose
    message is the latest one in the transcript), so a turn cut short by a round cap or a
    spent budget never shifts the next turn's replies. A call without tools bound (the
    loop's synthesis call) plays the turn's last reply, its answer.
    """

    turns: tuple[Turn, ...]
    model_name: str = DEFAULT_MODEL_NAME

    def __post_init__(self) -> None:
        turns = items_of(
            self.turns,
            "turns",
            Turn,
            shape="a list of Turn values",
            fix="pass Turn(message, replies)",
        )
        if not turns:
            raise ConfigurationError(
                "a scripted conversation needs at least one Turn: give "
                "turns=[Turn(message, [Reply.final(...)])]",
                field="turns",
            )
        object.__setattr__(self, "turns", turns)
        unique_call_ids(
            (
                (f"turns[{t}].replies[{i}]", r)
                for t, turn in enumerate(turns)
                for i, r in enumerate(turn.replies)
            ),
            "turns",
        )
        text(self.model_name, "model_name", blank=_MODEL_NAME_FIX)

    def __call__(self) -> ScriptedChatModel:
        # At most every reply once plus one synthesis call per turn: a bounded script.
        calls = sum(len(t.replies) + 1 for t in self.turns)
        return ScriptedChatModel([self._play] * calls, model_name=self.model_name)

    def _turn(self, messages: Sequence[BaseMessage]) -> tuple[int, int]:
        """``(turn index, index of its message)``: turn messages are matched in order, so a
        message repeated in a later turn is told apart from the earlier one."""
        turn, start = -1, -1
        for i, message in enumerate(messages):
            if (
                isinstance(message, HumanMessage)
                and turn + 1 < len(self.turns)
                and message.content == self.turns[turn + 1].message
            ):
                turn, start = turn + 1, i
        if turn < 0:
            raise ScriptError("the conversation holds no turn message of this script")
        return turn, start

    def _play(self, messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
        turn, start = self._turn(messages)
        replies = self.turns[turn].replies
        played = sum(1 for m in messages[start + 1 :] if isinstance(m, AIMessage))
        position = played if tools else len(replies) - 1
        if position >= len(replies):
            raise ScriptError(
                f"turn {turn + 1} has {len(replies)} scripted replies and call "
                f"{position + 1} of that turn was made"
            )
        before = sum(len(t.replies) for t in self.turns[:turn])
        item = replies[position].to_script_item(before + position + 1)  # ids unique per run
        if isinstance(item, BaseException):
            raise item
        return item


_MODEL_TAKES: Final = (
    "a ScriptedModel, a ScriptedTurns or a zero-argument function returning a chat model"
)
_TOOL_TAKES: Final = "a built-in tool name or a zero-argument function returning the tool"
_TOOLS_TAKES: Final = (
    f"tools takes a list of built-in tool names ({', '.join(BUILTIN_TOOLS)}) and tool factories"
)
_PRUNING_FIX: Final = (
    "give the scenario pruning_model= (a ScriptedModel or a factory; Scenario.scripted takes "
    "pruning_replies=)"
)
_PROMPT_FIX: Final = "or leave prompt out for the default, " + repr(DEFAULT_PROMPT)


@quick_pickle
@dataclass(frozen=True, slots=True)
class Scenario:
    """One run of the tool loop (one loop run per user turn), described declaratively and
    picklably.

    ``usd_limit`` and ``prices`` apply to this scenario only: a sweep never inherits a
    ``usd_budget`` block around it, so a scenario reads the same wherever it runs. The limit
    caps the whole scenario: each turn runs under what the turns before it left of it.
    """

    name: str
    model: ModelFactory
    """A :class:`ScriptedModel`, :class:`ScriptedTurns` or an importable zero-argument
    chat-model factory."""
    prompt: str | None = None
    """The user message of a one-turn scenario (``None``: :data:`DEFAULT_PROMPT`)."""
    tools: tuple[ToolSource, ...] | None = None
    """Built-in names and tool factories; ``None`` is ``("echo",)`` without a
    ``tools_factory`` and nothing with one."""
    config: AgentConfig = field(default_factory=AgentConfig)
    pruning_model: ModelFactory | None = None
    usd_limit: Decimal | None = None
    prices: Mapping[str, TokenPrice] | None = None
    """Price overrides by model name, with or without ``usd_limit`` (``LLMAgent(prices=)``)."""
    data_dir: str | None = None
    """Root directory of ``file_read``; ``None`` is the packaged sample data."""
    tags: tuple[str, ...] = ()
    description: str = ""
    turns: tuple[str, ...] = ()
    """The user message of each turn, in order, for a scenario of several turns (give
    ``turns`` or ``prompt``, not both)."""
    tools_factory: ToolsFactory | None = None
    """Called once per run; returns that run's tools (added after ``tools``), all sharing
    one fresh backend that lives for every turn of the run."""
    checks: tuple[Check, ...] = ()
    """Checks of :mod:`toolloop_lab.checks` the scenario's run is judged by (its last turn,
    the run that answered): ``passed`` and ``failed_checks`` in ``LabResults.runs``. They are
    judged where the sweep was started, so a check holding code or a model never travels to
    a worker."""
    mcp_servers: tuple[McpServer, ...] = ()
    """MCP servers whose tools the run has too (added last), as plain data
    (:class:`toolloop_lab.mcp.McpServer`): wherever the scenario runs (here, a process
    pool, a Dask worker) the run starts or connects to them, and stops them after; one
    that cannot start fails the row (kind ``tool``, reason ``server_start``) before any
    model call."""

    def __post_init__(self) -> None:
        # every field checked where it is written (module lab.checks): a mistake accepted
        # here became one failed row per scenario, after the whole sweep had run
        if not isinstance(self.name, str) or not self.name.strip():
            raise ConfigurationError("a scenario needs a non-empty name", field="name")
        self._check_factories()
        self._check_turns()
        self._set("tools", self._checked_tools())
        if self.mcp_servers:
            self._set("mcp_servers", checked_servers(self.mcp_servers, field="mcp_servers"))
        self._set("config", config_of(self.config))
        self._check_pruning()
        self._set("data_dir", data_dir_of(self.data_dir))
        tags = (self.tags,) if isinstance(self.tags, str) else self.tags
        self._set("tags", items_of(tags, "tags", str, shape="a list of str", fix="a tag is text"))
        text(self.description, "description")
        if self.usd_limit is not None:
            self._set("usd_limit", to_decimal_usd(self.usd_limit, field="usd_limit"))
        if self.prices is not None:
            # checked here, like the agent does, so a bad table fails when it is written
            checked = checked_prices(self.prices)
            self._set("prices", dict(checked) if checked else None)
        given: Any = self.checks
        empty = isinstance(given, tuple | list) and not given
        self._set("checks", () if empty else checks_of(given))

    def _set(self, name: str, value: Any) -> None:
        """Keep a field's checked value (the dataclass is frozen)."""
        object.__setattr__(self, name, value)

    def _check_factories(self) -> None:
        factory(
            self.model,
            "model",
            field="model",
            makes="chat model",
            takes=_MODEL_TAKES,
        )
        if self.pruning_model is not None:
            factory(
                self.pruning_model,
                "pruning_model",
                field="pruning_model",
                makes="chat model",
                takes=_MODEL_TAKES,
            )
        if self.tools_factory is not None:
            factory(
                self.tools_factory,
                "tools_factory",
                field="tools_factory",
                makes="set of tools",
                takes="a zero-argument function returning the run's tools",
            )

    def _checked_tools(self) -> tuple[ToolSource, ...]:
        """``tools`` as a tuple, each a built-in name (listed once) or a tool factory."""
        given = self.tools
        if given is None:
            return () if self.tools_factory is not None else ("echo",)
        if isinstance(given, str):
            given = (given,)
        if isinstance(given, (bytes, Mapping)) or not isinstance(given, Iterable):
            raise ConfigurationError(f"{_TOOLS_TAKES}, got {shown(given)}", field="tools")
        tools = tuple(given)
        for index, source in enumerate(tools):
            if not isinstance(source, str):
                factory(source, f"tools[{index}]", field="tools", makes="tool", takes=_TOOL_TAKES)
                continue
            builtin_name(source, index, BUILTIN_TOOLS)
            if (first := tools.index(source)) != index:
                raise ConfigurationError(
                    f"tools[{first}] and tools[{index}] are both {source!r}: list it once",
                    field="tools",
                )
        return tools

    def _check_pruning(self) -> None:
        """``prune_tools`` with a pruning model, naming tools the scenario has (when its
        tools are all built-in names, known before a run)."""
        check_pruning(self.config, self.pruning_model, fix=_PRUNING_FIX)
        names = self.tools or ()
        if self.tools_factory is not None or not all(isinstance(n, str) for n in names):
            return
        missing = [n for n in self.config.prune_tools if n not in names]
        if missing:
            raise ConfigurationError(
                f"prune_tools: {missing[0]!r} is not one of the scenario's tools "
                f"({', '.join(map(str, names)) or 'none'}); name tools it has, or give it the tool",
                field="prune_tools",
            )

    def _check_turns(self) -> None:
        turns = (self.turns,) if isinstance(self.turns, str) else tuple(self.turns)
        object.__setattr__(self, "turns", turns)
        if self.prompt is not None:
            text(self.prompt, "prompt", blank=f"give the user's message ({_PROMPT_FIX})")
        if turns and self.prompt is not None:
            raise ConfigurationError(
                "give turns or prompt, not both (to switch, set the other to None)",
                field="turns",
            )
        for turn in turns:
            if not isinstance(turn, str) or not turn.strip():
                raise ConfigurationError(
                    "each turn is a non-empty user message (Turn objects go to Scenario.scripted)",
                    field="turns",
                )
        if isinstance(self.model, ScriptedTurns):
            scripted = tuple(t.message for t in self.model.turns)
            if scripted != self.messages:
                raise ConfigurationError(
                    f"the model's script is for the turns {clip(repr(scripted), TEXT_CHARS)}, "
                    f"and the scenario's messages are {clip(repr(self.messages), TEXT_CHARS)}: "
                    "build it with Scenario.scripted(name, turns=[Turn(message, replies), ...])",
                    field="turns",
                )

    @property
    def messages(self) -> tuple[str, ...]:
        """The user message of each turn, in order (one for a one-turn scenario)."""
        if self.turns:
            return self.turns
        return (self.prompt if self.prompt is not None else DEFAULT_PROMPT,)

    @classmethod
    def scripted(
        cls,
        name: str,
        replies: Iterable[Reply] = (),
        *,
        turns: Iterable[str | Turn] = (),
        model_name: str = DEFAULT_MODEL_NAME,
        pruning_replies: Iterable[Reply] | None = None,
        **fields: Any,
    ) -> Scenario:
        """A scenario on a scripted model (and, optionally, a scripted pruning model).

        ``turns`` as :class:`Turn` values group the replies by turn (a
        :class:`ScriptedTurns` model: a turn cut short never shifts the next); as plain
        messages they share one script, ``replies``, played in order across the turns.
        """
        pruning = (
            ScriptedModel(replies_of(pruning_replies, "pruning_replies"), model_name)
            if pruning_replies is not None
            else fields.pop("pruning_model", None)
        )
        given = (turns,) if isinstance(turns, str | Turn) else tuple(turns)
        model: ModelFactory
        if given and all(isinstance(t, Turn) for t in given):
            if tuple(replies):
                raise ConfigurationError(
                    "Turn values carry their own replies; give no replies beside them",
                    field="replies",
                )
            scripted_turns = tuple(t for t in given if isinstance(t, Turn))
            model = ScriptedTurns(scripted_turns, model_name)
            messages: tuple[Any, ...] = tuple(t.message for t in scripted_turns)
        elif any(isinstance(t, Turn) for t in given):
            raise ConfigurationError("turns are all Turn values or all messages", field="turns")
        else:
            model, messages = ScriptedModel(replies_of(replies, "replies"), model_name), given
        return cls(name, model, pruning_model=pruning, turns=messages, **fields)

    def build_tools(self) -> list[BaseTool]:
        """Fresh tool objects for one run: ``tools``, then ``tools_factory``'s (called once,
        here); unknown names and a factory that gives no tools raise ``ConfigurationError``."""
        built: list[BaseTool] = []
        for source in self.tools or ():
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
        if self.tools_factory is not None:
            made = self.tools_factory()
            if isinstance(made, BaseTool | str | bytes) or not isinstance(made, Iterable):
                raise ConfigurationError(
                    f"tools_factory returned {type(made).__name__}, not a list of tools",
                    field="tools_factory",
                )
            for tool in made:
                if not isinstance(tool, BaseTool):
                    raise ConfigurationError(
                        f"tools_factory gave a {type(tool).__name__}, not a BaseTool",
                        field="tools_factory",
                    )
                built.append(tool)
        return built

    def build_agent(self, observers: Iterable[Observer] = ()) -> LLMAgent:
        """A fresh agent (model, tools, pruning model) wired to ``observers`` (without
        its MCP servers' tools: a sweep opens the servers around the run, see
        :func:`agent_with`)."""
        return agent_with(self, observers, ())


def agent_with(
    scenario: Scenario, observers: Iterable[Observer], served: Sequence[BaseTool]
) -> LLMAgent:
    """A fresh agent of ``scenario`` whose tools are its own, then ``served`` (the tools
    of its MCP servers, opened by the sweep's worker)."""
    model = scenario.model()
    if not isinstance(model, BaseChatModel):
        raise ConfigurationError(
            f"model factory returned {type(model).__name__}, not a BaseChatModel",
            field="model",
        )
    pruning = scenario.pruning_model() if scenario.pruning_model is not None else None
    if pruning is not None and not isinstance(pruning, BaseChatModel):
        raise ConfigurationError(
            f"pruning model factory returned {type(pruning).__name__}",
            field="pruning_model",
        )
    return LLMAgent(
        model,
        [*scenario.build_tools(), *served],
        scenario.config,
        pruning_model=pruning,
        observers=observers,
        prices=scenario.prices,
    )
