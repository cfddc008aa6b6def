"""``LLMAgent`` and its shared tool-loop helper ``_execute_tool_loop``.

The agent is the public face: it holds the model, the tools, the config, the observers
and the pause hooks, and turns a prompt (or a conversation) into a run of
:class:`~toolloop_lab._engine.loop.ToolLoop`. Its guard makes every ending the same shape: whatever
happens, the run ends with a final event, every tool call has its ``ToolMessage``, and the
partial counts, messages and events survive in the result or on the error.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import BaseTool

from toolloop_lab._engine.arguments import (
    ToolLike,
    agent_config,
    agent_tools,
    chat_model,
    check_prune_tools,
    check_tool_names,
)
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.hooks import PauseHook, checked_pause_hook, checked_pause_hooks, connect
from toolloop_lab._engine.inputs import history_input, run_input
from toolloop_lab._engine.loop import ToolLoop
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._engine.run_state import RunLabel, RunState
from toolloop_lab._engine.stopping import claim_stop, running, time_limit_reached
from toolloop_lab._spend import budget as _budget
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._stream import checked_observer, checked_observers, failure_fields
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, clip
from toolloop_lab._support.sync_runner import blocked_app_loop, run_sync
from toolloop_lab._tools.call_ids import block_calls
from toolloop_lab._tools.callers import tool_caller
from toolloop_lab._tools.dispatcher import ToolBox, skipped_outcomes
from toolloop_lab.errors import (
    ConfigurationError,
    ConversationError,
    ExecutionError,
    RunStopped,
    ToolLoopError,
)
from toolloop_lab.events import LoopFailed, Observer

_log = logging.getLogger("toolloop_lab")


def _remover(agent: LLMAgent, attribute: str, item: object) -> Callable[[], None]:
    """A function removing ``item`` (the last occurrence, by identity) from the tuple
    ``agent.<attribute>`` once. It holds the agent weakly: whoever keeps a remover (a
    debugger connected to many agents of a sweep) never keeps an agent alive."""
    ref = weakref.ref(agent)
    done = False

    def remove() -> None:
        nonlocal done
        owner = ref()
        if done or owner is None:
            return
        done = True
        items: tuple[object, ...] = getattr(owner, attribute)
        for i in range(len(items) - 1, -1, -1):
            if items[i] is item:
                setattr(owner, attribute, items[:i] + items[i + 1 :])
                return

    return remove


def _with_callers(own: tuple[Observer, ...]) -> tuple[Observer, ...]:
    """A run's observers: its agent's, then those of the run whose tool started it (a
    sub-agent's events reach whatever watches its parent, each observer once)."""
    caller = tool_caller()
    if caller is None or not caller.observers:
        return own
    return (*own, *(o for o in caller.observers if o not in own))


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """The same objects, in the same order (at once when it is the same tuple, as it is
    on every call of a run)."""
    return a is b or (len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True)))


def _bind(model: BaseChatModel, tools: tuple[BaseTool, ...]) -> Any:
    """``model`` with ``tools`` bound; a model that cannot take them is a setup error (the
    run starts by binding, so it fails before any call)."""
    if not tools:
        return model
    try:
        return model.bind_tools(list(tools))
    except Exception as exc:
        raise ConfigurationError(
            f"{type(model).__name__} could not take the tools ({explain(exc)})",
            field="tools",
        ) from exc


_RESULT_KEYS: Final = {"tool_result": "tool_use_id", "function_call_output": "call_id"}
"""Content-block types of a user message that answer a tool call, and the key holding its
id (Anthropic, OpenAI Responses)."""


def _answered_ids(message: BaseMessage) -> list[Any]:
    """The call ids ``message`` answers: a ``ToolMessage``'s, or a user message's result
    blocks' (any value: the checker names a bad one)."""
    if isinstance(message, ToolMessage):
        return [message.tool_call_id]
    if not isinstance(message, HumanMessage) or not isinstance(message.content, list):
        return []
    ids = []
    for block in message.content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        key = _RESULT_KEYS.get(kind) if isinstance(kind, str) else None
        if key:
            ids.append(block.get(key))
    return ids


def _asked_calls(message: AIMessage) -> list[tuple[Any, str]]:
    """``(id, name)`` of every call ``message`` asks for: parsed, unparsable, and those its
    content blocks carry (the same call listed both ways counts once, as sent)."""
    calls = [
        (call.get("id"), str(call.get("name") or "(unnamed)"))
        for listed in (message.tool_calls, message.invalid_tool_calls)
        for call in listed
    ]
    listed_ids = {cid for cid, _name in calls}
    calls += [pair for pair in block_calls(message.content) if pair[0] not in listed_ids]
    return calls


@dataclass(slots=True)
class _Pairing:
    """Reads a conversation as a provider does: an AI message's calls are answered by the
    results right after it, each exactly once. Raises ``ConversationError`` at the first
    message that breaks this."""

    asked: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    waiting: dict[str, str] = field(default_factory=dict)
    """The calls of the last AI message still without a result: id → tool name."""
    opener: tuple[str, int] = ("", 0)
    """Where that AI message is."""

    def read(self, source: str, index: int, message: BaseMessage) -> None:
        for cid in _answered_ids(message):
            self._answer(source, index, cid)
        if isinstance(message, ToolMessage):
            return
        self.close()
        if isinstance(message, AIMessage):
            self.opener = (source, index)
            for cid, name in _asked_calls(message):
                self._ask(source, index, cid, name)

    def close(self) -> None:
        """No more results may follow: every call of the last AI message needs one."""
        for cid, name in self.waiting.items():
            text = f"the call {_id(cid)} to {_name(name)} has no result right after it"
            _refuse("unanswered_call", *self.opener, cid, text)

    def _ask(self, source: str, index: int, cid: Any, name: str) -> None:
        if not isinstance(cid, str) or not cid:
            text = f"a call to {_name(name)} has no id, so no result can answer it"
            _refuse("unanswered_call", source, index, None, text)
        if cid in self.asked:
            text = f"the call id {_id(cid)} is used again, so its results cannot be told apart"
            _refuse("repeated_call_id", source, index, cid, text)
        self.asked.add(cid)
        self.waiting[cid] = name

    def _answer(self, source: str, index: int, cid: Any) -> None:
        if isinstance(cid, str) and self.waiting.pop(cid, None) is not None:
            self.answered.add(cid)
            return
        if isinstance(cid, str) and cid in self.answered:
            text = f"the call {_id(cid)} is answered again (an earlier result answered it)"
            _refuse("answered_twice", source, index, cid, text)
        text = f"a tool result for {_id(cid)} answers no call of the AI message right before it"
        _refuse("orphan_result", source, index, cid if isinstance(cid, str) else None, text)


def _id(cid: Any) -> str:
    return repr(clip(cid, ID_CHARS))


def _name(name: str) -> str:
    return repr(clip(name, NAME_CHARS))


def _refuse(reason: str, source: str, index: int, cid: str | None, text: str) -> None:
    raise ConversationError(
        f"{source}[{index}]: {text}; no provider takes such a conversation, so nothing was sent",
        reason=reason,
        source=source,
        index=index,
        call_id=cid,
    )


def check_conversation(parts: Iterable[tuple[str, Sequence[BaseMessage]]]) -> None:
    """Refuse, before any model call, messages whose tool calls and results do not pair up
    the way every provider requires (see :class:`ConversationError`). ``parts`` are the
    conversation's pieces in order, each with the name its positions are given in."""
    pairing = _Pairing()
    for source, messages in parts:
        for index, message in enumerate(messages):
            pairing.read(source, index, message)
    pairing.close()


def _stopped(run: RunState) -> RunStopped:
    """What a run a person stopped raises (see :mod:`.stopping`)."""
    done = run.rounds_done
    where = f"in round {run.round}" if run.round else "before its first round"
    rounds = (
        "no round" if done == 0 else "1 round" if done == 1 else f"{format_tokens(done)} rounds"
    )
    usage = run.usage
    return RunStopped(
        f"the run was stopped {where} ({rounds} done; {format_tokens(usage.input_tokens)} "
        f"input and {format_tokens(usage.output_tokens)} output tokens, "
        f"{format_usd(usage.cost_usd)}): its partial counts are on this error and in the "
        "debugger",
        **run.partial(),
    )


def _checked(messages: list[BaseMessage]) -> list[BaseMessage]:
    check_conversation((("messages", messages),))
    return messages


_BLOCKS_LOOP: Final = (
    "agent.run() was called inside a running event loop (an asyncio app, not a notebook): "
    "it blocks that loop until the whole run ends, so nothing else on it runs meanwhile. "
    "In async code use `await agent.arun(...)` (this is said once per event loop)."
)


class LLMAgent:
    """Drives any langchain-core chat model through tool-call rounds, with events.

    What it is given is checked when it is built (and when ``model``, ``tools`` or
    ``config`` is set later, or an observer or a pause hook added), so a mistake never
    reaches a run: ``model`` is a chat model or a ``"provider:model"`` name; ``tools`` a
    list of tools or plain functions, no two with one name; ``config`` an ``AgentConfig``
    or a dict of its fields, its ``prune_tools`` naming tools the agent has, with a
    ``pruning_model``; ``observers`` and ``pause_hooks`` lists of callables. Anything else
    raises ``TypeError`` (a wrong kind) or ``ConfigurationError`` (a wrong value), naming
    the fix.
    """

    def __init__(
        self,
        model: BaseChatModel | str,
        tools: Iterable[ToolLike] = (),
        config: AgentConfig | Mapping[str, Any] | None = None,
        *,
        pruning_model: BaseChatModel | str | None = None,
        observers: Iterable[Observer] = (),
        pause_hooks: Iterable[PauseHook] = (),
        prices: Mapping[str, TokenPrice] | None = None,
    ) -> None:
        self.model = model
        self.prices = prices
        self.tools = tools
        self.config = config
        self.pruning_model = pruning_model
        check_prune_tools(self.config, self.tools, pruning_model=self.pruning_model)
        self._observers = checked_observers(observers)
        self._pause_hooks = checked_pause_hooks(pause_hooks)
        self._bound: tuple[BaseChatModel, tuple[BaseTool, ...], Any] | None = None
        self._box: tuple[tuple[BaseTool, ...], ToolBox] | None = None
        for observer in self._observers:  # a debugger among them drives these runs too
            connect(observer, self)

    # -- wiring -----------------------------------------------------------------------
    @property
    def model(self) -> BaseChatModel:
        """The chat model each round calls (a ``"provider:model"`` name given here became
        the model langchain's ``init_chat_model`` makes of it)."""
        return self._model

    @model.setter
    def model(self, value: BaseChatModel | str) -> None:
        self._model = chat_model(value)

    @property
    def pruning_model(self) -> BaseChatModel | None:
        """The chat model that shortens large outputs of ``config.prune_tools``."""
        return self._pruning_model

    @pruning_model.setter
    def pruning_model(self, value: BaseChatModel | str | None) -> None:
        self._pruning_model = None if value is None else chat_model(value, field="pruning_model")

    @property
    def tools(self) -> tuple[BaseTool, ...]:
        """The tools the model is offered and the loop runs, in the order given."""
        return self._tools

    @tools.setter
    def tools(self, value: Iterable[ToolLike]) -> None:
        # checked here, so a wrong shape is refused where it was written, not in a run;
        # plain functions become tools once, so the bound model and toolbox are reused
        self._tools = agent_tools(value)

    @property
    def config(self) -> AgentConfig:
        """How the next run goes (a dict given here became ``AgentConfig(**dict)``)."""
        return self._config

    @config.setter
    def config(self, value: AgentConfig | Mapping[str, Any] | None) -> None:
        self._config = agent_config(value)

    @property
    def prices(self) -> Mapping[str, TokenPrice] | None:
        """Price overrides by model name, used to price every call of every run (with or
        without a USD budget); a ``usd_budget(prices=...)`` entry wins for its name."""
        return self._prices

    @prices.setter
    def prices(self, value: Mapping[str, TokenPrice] | None) -> None:
        # checked here, like usd_budget's, so a wrong entry fails before a paid call
        self._prices = _budget.checked_prices(value)

    @property
    def observers(self) -> tuple[Observer, ...]:
        """The observers the next run will feed."""
        return self._observers

    @property
    def pause_hooks(self) -> tuple[PauseHook, ...]:
        """The pause hooks the next run will await."""
        return self._pause_hooks

    def subscribe(self, callback: Observer) -> Callable[[], None]:
        """Add an observer for later runs; returns a function that removes it again. An
        observer that drives the runs it sees (a debugger) is connected to this agent here,
        as one given to the constructor is, and disconnected by the remover."""
        observer = checked_observer(callback)
        self._observers = (*self._observers, observer)
        remove = _remover(self, "_observers", observer)
        detach = connect(observer, self)
        if detach is None:
            return remove

        def remove_and_detach() -> None:
            remove()
            detach()

        return remove_and_detach

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]:
        """Add a step-mode hook awaited at every pause point; returns its remover."""
        self._pause_hooks = (*self._pause_hooks, checked_pause_hook(hook))
        return _remover(self, "_pause_hooks", hook)

    def bound_model(self) -> Any:
        """The model with the tools bound (reused while the model and tools stay the same
        objects: binding builds every tool's schema)."""
        cached, model, tools = self._bound, self.model, self.tools
        if cached is None or cached[0] is not model or not _same(cached[1], tools):
            cached = self._bound = (model, tools, _bind(model, tools))
        return cached[2]

    def toolbox(self) -> ToolBox:
        """The tools prepared for the loop to run (reused while they stay the same objects)."""
        cached, tools = self._box, self.tools
        if cached is None or not _same(cached[0], tools):
            cached = self._box = (tools, ToolBox(tools))
        return cached[1]

    # -- entry points -----------------------------------------------------------------
    async def arun(
        self,
        prompt_or_messages: str | Sequence[Any] | Mapping[str, Any],
        *,
        history: Sequence[Any] | Mapping[str, Any] = (),
        name: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolLoopResult:
        """Run the loop on a prompt (with the config's system prompt) or on messages.

        Messages may come as LangGraph's input, ``{"messages": [...]}``; any other mapping
        raises ``TypeError`` before anything runs (a mapping is never read as messages).
        ``history`` continues a conversation (``previous.messages``): the new turn runs on
        it plus the new message, and the result's counts cover this turn only.
        ``name``, ``tags`` and ``metadata`` (JSON data) label the run: its ``loop_start``
        event carries them, so traces, debuggers and exports tell many runs apart. A
        wrong type raises ``TypeError`` before anything runs.
        """
        label = RunLabel.checked(name, tags, metadata)
        given, earlier = run_input(prompt_or_messages), history_input(history)
        return await self._guarded(lambda: self._initial_messages(given, earlier), label)

    def run(
        self,
        prompt_or_messages: str | Sequence[Any] | Mapping[str, Any],
        *,
        history: Sequence[Any] | Mapping[str, Any] = (),
        name: str | None = None,
        tags: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolLoopResult:
        """Synchronous :meth:`arun`; also works where an event loop already runs (notebooks).

        Runs reuse one event loop per calling thread (inside a running loop: one background
        loop), so a chat model whose client pools connections per loop keeps working across
        calls. The run sees a copy of the caller's context, USD budget included.

        Called inside a running event loop outside a notebook (an asyncio app), it blocks
        that loop until the run ends: a ``RuntimeWarning`` says so, once per loop, and
        points to ``await agent.arun(...)``. Its result cannot be awaited either.
        """
        # refused here, in the caller's thread, before anything runs
        RunLabel.checked(name, tags, metadata)
        run_input(prompt_or_messages)
        history_input(history)
        if blocked_app_loop() is not None:
            warnings.warn(_BLOCKS_LOOP, RuntimeWarning, stacklevel=2)
        ctx = _budget.caller_context()
        return run_sync(
            lambda: self.arun(
                prompt_or_messages, history=history, name=name, tags=tags, metadata=metadata
            ),
            ctx,
        )

    async def _execute_tool_loop(self, messages: Sequence[BaseMessage]) -> ToolLoopResult:
        """Drive the model through tool rounds and return the result (see module doc)."""
        return await self._guarded(lambda: _checked(list(messages)))

    def _initial_messages(
        self, prompt_or_messages: str | Sequence[Any], history: Sequence[Any]
    ) -> list[BaseMessage]:
        earlier = convert_to_messages(history)
        if not isinstance(prompt_or_messages, str):
            given = convert_to_messages(prompt_or_messages)
            check_conversation((("history", earlier), ("messages", given)))
            return earlier + given
        check_conversation((("history", earlier),))
        messages: list[BaseMessage] = earlier
        if self.config.system_prompt and not any(isinstance(m, SystemMessage) for m in earlier):
            messages.insert(0, SystemMessage(self.config.system_prompt))  # first, as providers ask
        messages.append(HumanMessage(prompt_or_messages))
        return messages

    # -- the guard --------------------------------------------------------------------
    async def _guarded(
        self, build: Callable[[], list[BaseMessage]], label: RunLabel | None = None
    ) -> ToolLoopResult:
        """Check the setup, build the input messages and run the loop; on failure keep the
        partial state on the error. Setup problems surface as ``ToolLoopError`` too, before
        any model call."""
        run = RunState(_with_callers(self._observers))
        if label is not None:
            run.label = label
        with running(run.run_id):
            return await self._run_guarded(run, build)

    async def _run_guarded(
        self, run: RunState, build: Callable[[], list[BaseMessage]]
    ) -> ToolLoopResult:
        """:meth:`_guarded`'s body: every ending of the run, one shape."""
        try:
            config = self.config.validated()
            self._check_tools(config)
            run.messages = build()
            return await ToolLoop(self, config, run).execute()
        except ExecutionError as exc:
            self._end(run, exc, exc.reason, f"not run: {exc}", cancelled=False)
            exc.set_partial(**run.partial())
            raise
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit) as exc:
            ran_out = time_limit_reached() if isinstance(exc, asyncio.CancelledError) else None
            if ran_out is not None:  # a time limit around the run: it timed out, no stop
                self._end(run, ran_out, "timeout", f"not run: {ran_out}", cancelled=False)
                raise
            text = "the loop was stopped before this call ran"
            self._end(run, exc, "cancelled", text, cancelled=True)
            if isinstance(exc, asyncio.CancelledError) and claim_stop(run.run_id):
                raise _stopped(run) from None
            raise
        except Exception as exc:
            self._end(run, exc, "loop_failed", "not run: the loop failed", cancelled=False)
            raise ToolLoopError(
                f"tool loop failed in round {run.round}: {explain(exc)}",
                cause=exc,
                **run.partial(),
            ) from exc
        except BaseException as exc:
            # Not an Exception, yet not an interrupt either (a library's own control flow,
            # a tool's custom abort): it propagates as it is, but the run still ends with
            # every call answered and a final event.
            text = f"not run: the loop was stopped by {type(exc).__name__}"
            self._end(run, exc, "loop_failed", text, cancelled=False)
            raise
        finally:
            run.release()

    def _check_tools(self, config: AgentConfig) -> None:
        # checked when they were given; again here, for what changed past the setters
        # (a tool renamed in place, a config changed with object.__setattr__)
        check_tool_names(self.tools)
        check_prune_tools(config, self.tools, pruning_model=self.pruning_model)

    def _end(
        self, run: RunState, exc: BaseException, reason: str, text: str, *, cancelled: bool
    ) -> None:
        """Close the calls a stop left open, then emit what its MCP servers logged between
        its calls and the run's ``LoopFailed``."""
        self._close_open_calls(run, reason, text)
        run.emit_server_logs()
        kind = exc.kind if isinstance(exc, ExecutionError) else None
        why = exc.reason if isinstance(exc, ExecutionError) else None
        run.emit(
            LoopFailed,
            **failure_fields(exc, kind=kind, reason=why, cancelled=cancelled),
            rounds=run.rounds_done,
            usage=run.usage,
            any_invocation_made=run.any_invocation,
            messages=run.unsent_messages(),
            partial_text=run.partial_text,
        )

    def _close_open_calls(self, run: RunState, reason: str, text: str) -> None:
        """Answer tool calls left open by a stop, so the transcript stays resumable."""
        answered = run.answered()
        last = next((m for m in reversed(run.messages) if isinstance(m, AIMessage)), None)
        if last is None:
            return
        for skipped in skipped_outcomes(last, reason, text):
            call_id = skipped.message.tool_call_id
            if call_id in answered:
                continue
            # a call that finished before the stop ran: its real result is kept
            outcome = run.finished.get(call_id, skipped)
            run.messages.append(outcome.message)
            if not run.reported(call_id):
                run.emit_dispatch(outcome)
