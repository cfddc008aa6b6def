"""``ToolLoopMiddleware``: the tool loop's rules and events for LangChain's ``create_agent``.

``create_agent(model, tools, middleware=[ToolLoopMiddleware(config, observers=[dbg])])``
runs as LangChain builds it (its graph calls the model and its ``ToolNode`` runs the tools),
and this middleware drives it from its own hooks with the loop's own parts
(:class:`~toolloop_lab._engine.loop.ToolLoop`, the dispatcher's ``run_call``,
:mod:`~toolloop_lab._engine.ending`), so a run emits the events an ``LLMAgent`` run emits, at
the same moments, and keeps the same rules:

* ``before_agent`` opens the run (its config checked);
* ``wrap_model_call`` is the loop between two model calls: the round that ended is counted,
  its tool results pruned, and the stopping rules asked (round cap, stuck model, token
  budget); then the next round (or the one final-answer call without tools) is announced,
  the step hooks may hold it, the budgets are checked and the call goes to LangChain's
  handler; after the reply, the hooks may hold the round's tool calls (edit, skip). What the
  loop changed (an added message, a pruned or edited result, an answer given by hand)
  goes back to the graph's state with the reply;
* ``wrap_tool_call`` runs each call through LangChain's handler the way the loop runs a
  tool (events, time limit, a stop answering it);
* ``after_agent`` ends the run. Where the graph goes after the final answer (its end) is
  said with the reply (``jump_to``), so the middleware adds no graph step to a round.

Any error in these hooks ends the run as ``LLMAgent``'s guard does: every open call
answered, one ``loop_failure`` event, the typed error with the partial counts.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, NoReturn, NotRequired
from uuid import UUID

from langchain.agents.middleware.types import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command

from toolloop_lab._engine.arguments import agent_config, chat_model, check_prune_tools
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.ending import Running, end_run, stopped_error
from toolloop_lab._engine.graph_watch import WATCH
from toolloop_lab._engine.hooks import (
    PauseHook,
    checked_pause_hook,
    checked_pause_hooks,
    connect,
)
from toolloop_lab._engine.loop import TRUNCATED_TEXT, Purpose, ToolLoop
from toolloop_lab._engine.model_call import CallTiming, silence_limit
from toolloop_lab._engine.run_state import RunState
from toolloop_lab._engine.stopping import (
    claim_stop,
    close_spanning,
    open_spanning,
    running,
    take_stop,
)
from toolloop_lab._spend import budget as _budget
from toolloop_lab._spend.budget import RunBudget
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._stream import checked_observer, checked_observers
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab._support.sync_runner import run_sync
from toolloop_lab._tools.callers import RunCaller, tool_caller
from toolloop_lab._tools.dispatcher import (
    DispatchHooks,
    DispatchOutcome,
    ToolBox,
    invalid_outcomes,
    output_of,
    refusal,
    run_call,
)
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import Observer, SynthesisReason


class ToolLoopState(AgentState[Any]):
    """The graph state with the run this middleware drives (private: never in the agent's
    input or output)."""

    toolloop_run: NotRequired[Annotated[str | None, PrivateStateAttr]]


@dataclass(eq=False)
class _Run:
    """One ``create_agent`` run this middleware drives, between its hooks."""

    run: RunState
    config: AgentConfig
    loop: ToolLoop | None = None
    budget: RunBudget | None = None
    system: SystemMessage | None = None
    """The system message each call sends (LangChain's, else the config's prompt)."""
    reply_index: int | None = None
    """Where the last round's reply sits in ``run.messages`` (its calls are answered by
    the next model call)."""
    outcomes: dict[str, DispatchOutcome] = field(default_factory=dict)
    """The last round's answered calls by id (run, refused, skipped or answered by hand)."""
    tools_going: dict[str, Running] = field(default_factory=dict)
    """Calls whose tools run now (a stop answers them as stopped while running)."""
    reason: SynthesisReason | None = None
    """Why the loop asked for a final answer without tools, once it did."""
    done: bool = False
    """The final answer came: the graph ends after it."""
    again: bool = False
    """The reply asked for calls the loop could only refuse (unreadable ones), which
    LangChain would take as a final answer: the graph goes back to the model."""
    ended: bool = False
    """The run ended (its last event was emitted)."""
    early: list[tuple[list[BaseMessage], AIMessage, float, str | None]] = field(
        default_factory=list
    )
    """Summarization calls made before the run's first model call (the loop starts with
    it): counted and announced then, before that call is sent."""
    stop: BaseException | None = None
    """A budget a summarization call spent: the run ends with it at its next model call,
    before that call is sent (raised in the summarizing middleware's call, it would be
    retried there: LangChain wraps its summary model with ``with_retry``)."""


class _Driven:
    """What the loop needs of its agent (``LoopAgent``), for one model call's request."""

    def __init__(self, owner: ToolLoopMiddleware, model: BaseChatModel, tools: ToolBox) -> None:
        self.model = model
        self.pruning_model = owner.pruning_model
        self._owner = owner
        self._tools = tools

    @property
    def prices(self) -> Mapping[str, TokenPrice] | None:
        return self._owner.prices

    @property
    def pause_hooks(self) -> tuple[PauseHook, ...]:
        return self._owner.pause_hooks

    def bound_model(self) -> Any:
        return self.model  # LangChain binds the tools itself, in its handler

    def toolbox(self) -> ToolBox:
        return self._tools


class ToolLoopMiddleware(AgentMiddleware[ToolLoopState, Any, Any]):
    """Drive a LangChain ``create_agent`` agent as ``LLMAgent`` drives its model: the same
    events, budgets, round cap and final answer, pruning, typed errors, and a debugger's
    pause, step, edit, skip and Stop.

    ``create_agent(model, tools, middleware=[ToolLoopMiddleware(config, observers=[dbg])])``
    takes what ``LLMAgent`` takes besides the model and tools (``create_agent`` has those):
    ``config`` (an ``AgentConfig`` or a dict of its fields), ``pruning_model``,
    ``observers`` (a ``LoopDebugger`` among them is connected and drives the runs),
    ``pause_hooks`` and ``prices``. Put it first in ``middleware``: it then sees every
    model call and tool call as LangChain's own middleware after it shape them (see the
    how-to page "Drive a LangChain agent" for the order and where LangChain's behaviour
    differs).
    """

    state_schema = ToolLoopState
    tools: Sequence[BaseTool] = ()

    def __init__(
        self,
        config: AgentConfig | Mapping[str, Any] | None = None,
        *,
        pruning_model: BaseChatModel | str | None = None,
        observers: Iterable[Observer] = (),
        pause_hooks: Iterable[PauseHook] = (),
        prices: Mapping[str, TokenPrice] | None = None,
    ) -> None:
        super().__init__()
        self.config = agent_config(config)
        self.pruning_model = (
            None if pruning_model is None else chat_model(pruning_model, field="pruning_model")
        )
        self.prices = _budget.checked_prices(prices)
        self._observers = checked_observers(observers)
        self._pause_hooks = checked_pause_hooks(pause_hooks)
        self._runs: dict[str, _Run] = {}
        self._seen: tuple[BaseChatModel, tuple[BaseTool, ...]] | None = None
        for observer in self._observers:  # a debugger among them drives these runs too
            connect(observer, self)

    # -- what a debugger connects through (as on LLMAgent) ----------------------------------
    @property
    def observers(self) -> tuple[Observer, ...]:
        """The observers the next run will feed."""
        return self._observers

    @property
    def pause_hooks(self) -> tuple[PauseHook, ...]:
        """The pause hooks the next run will await."""
        return self._pause_hooks

    def subscribe(self, callback: Observer) -> Callable[[], None]:
        """Add an observer for later runs; returns its remover (a debugger is connected
        here, and disconnected by the remover, as with ``LLMAgent.subscribe``)."""
        observer = checked_observer(callback)
        self._observers = (*self._observers, observer)
        detach = connect(observer, self)
        me = weakref.ref(self)

        def remove() -> None:
            owner = me()
            if owner is not None:
                owner._observers = tuple(o for o in owner._observers if o is not observer)
            if detach is not None:
                detach()

        return remove

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]:
        """Add a step-mode hook awaited at every pause point; returns its remover."""
        checked = checked_pause_hook(hook)
        self._pause_hooks = (*self._pause_hooks, checked)
        me = weakref.ref(self)

        def remove() -> None:
            owner = me()
            if owner is not None:
                owner._pause_hooks = tuple(h for h in owner._pause_hooks if h is not checked)

        return remove

    def _run_tools(self) -> tuple[BaseTool, ...]:
        """The tools ``create_agent`` gave its runs (a debugger checks an edit of a call's
        arguments against them); ``tools`` stays the middleware's own, none."""
        return () if self._seen is None else self._seen[1]

    def _fork_parts(self) -> tuple[Any, ...] | None:
        """What a fork of this middleware's last run runs with (a debugger's "Fork from
        here"): the model and tools ``create_agent`` gave it, and this middleware's config,
        pruning model and prices; ``None`` before any run. The fork runs as an
        ``LLMAgent`` on them, its rounds before the fork replayed from the run's events."""
        if self._seen is None:
            return None
        model, tools = self._seen
        return (model, tools, self.config, self.pruning_model, self.prices)

    # -- the hooks, async ---------------------------------------------------------------
    async def abefore_agent(
        self, state: ToolLoopState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Open a run for this invocation of the graph (its config checked again)."""
        caller = tool_caller()
        own = self._observers
        if caller is not None and caller.observers:
            own = (*own, *(o for o in caller.observers if o not in own))
        run = RunState(own)
        rec = _Run(run, self.config)
        self._runs[run.run_id] = rec
        WATCH.follow(_node_run(), _Follow(self, rec))
        open_spanning(run.run_id)
        with running(run.run_id):
            try:
                rec.config = self.config.validated()
            except BaseException as exc:  # noqa: BLE001 - re-raised, typed, below
                run.messages = list(state.get("messages", []))
                _raise(exc, self._end(rec, exc))
        return {"toolloop_run": run.run_id}

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any] | AIMessage:
        """One model call of the loop (see the module doc)."""
        return await self._model_call(request, handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """One tool call of the round, run as the loop runs a tool."""
        return await self._tool_call(request, handler)

    async def aafter_agent(
        self, state: ToolLoopState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """End the run: its ``loop_end`` when LangChain ended it before the loop's final
        answer (a middleware jumped to the end), then let it go."""
        rec = self._rec(state)
        if rec is None or rec.ended:
            return None
        try:
            if not rec.done and rec.loop is not None:
                now: list[BaseMessage] = list(state.get("messages", []))
                self._sync_messages(rec, now, rec.system)
                last = next(
                    (m for m in reversed(rec.run.messages) if isinstance(m, AIMessage)), None
                )
                rec.loop.finish(last or AIMessage(""), None)
        finally:
            self._release(rec)
        return None

    # -- the hooks, sync (graph.invoke): the async ones on the calling thread's loop ------
    def before_agent(self, state: ToolLoopState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """:meth:`abefore_agent` for a graph run with ``invoke``."""
        ctx = _budget.caller_context()
        return run_sync(lambda: self.abefore_agent(state, runtime), ctx)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Any],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any] | AIMessage:
        """:meth:`awrap_model_call` for a graph run with ``invoke`` (the handler runs in a
        worker thread, as LangChain's sync handler must)."""

        async def ahandler(req: ModelRequest[Any]) -> Any:
            return await run_in_executor(None, handler, req)

        ctx = _budget.caller_context()
        return run_sync(lambda: self._model_call(request, ahandler), ctx)

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        """:meth:`awrap_tool_call` for a graph run with ``invoke``."""

        async def ahandler(req: ToolCallRequest) -> ToolMessage | Command[Any]:
            return await run_in_executor(None, handler, req)

        ctx = _budget.caller_context()
        return run_sync(lambda: self._tool_call(request, ahandler), ctx)

    def after_agent(self, state: ToolLoopState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """:meth:`aafter_agent` for a graph run with ``invoke``."""
        return run_sync(lambda: self.aafter_agent(state, runtime))

    # -- a model call -------------------------------------------------------------------
    async def _model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[Any]],
    ) -> ModelResponse[Any] | ExtendedModelResponse[Any] | AIMessage:
        rec = self._rec(request.state)
        if rec is None or rec.ended:  # not a run of ours (or one that ended): untouched
            return await handler(request)  # type: ignore[no-any-return]
        run = rec.run
        WATCH.follow(_node_run(), _Follow(self, rec))  # a graph resumed after an interrupt
        with running(run.run_id):
            try:
                self._take_stop(rec)
                if rec.stop is not None:
                    raise rec.stop
                base: list[BaseMessage] = list(request.messages)
                if rec.loop is None:
                    loop, budget = self._start(rec, request, base)
                    purpose: Purpose = "round"
                    loop.begin_round(1)
                    for prompt, reply, latency, model in rec.early:
                        number = loop.side_call_started(budget, prompt, model)
                        loop.side_call_done(budget, reply, prompt, number, latency, model)
                    rec.early.clear()
                else:
                    loop = rec.loop
                    assert rec.budget is not None
                    budget = rec.budget
                    self._sync_messages(rec, base, rec.system)
                    purpose = await self._next_round(rec, loop, budget)
                structured: list[Any] = []

                async def send(prompt: list[BaseMessage]) -> tuple[Any, CallTiming]:
                    began = time.perf_counter()
                    messages = prompt[1:] if rec.system is not None else prompt
                    changes: dict[str, Any] = {"messages": messages, "system_message": rec.system}
                    if purpose == "synthesis":
                        changes["tools"] = []
                    async with silence_limit(rec.config.model_timeout_s):
                        response = await handler(request.override(**changes))
                    reply, found = _reply_of(response)
                    structured.append(found)
                    return reply, CallTiming(time.perf_counter() - began)

                reply = await loop.call(budget, purpose, send)
                await self._after_reply(rec, loop, budget, purpose, reply)
                offset = 1 if rec.system is not None else 0
                ours = run.messages[offset:]
                changed = [m for i, m in enumerate(ours) if i >= len(base) or m is not base[i]]
                response = ModelResponse(
                    result=changed, structured_response=structured[-1] if structured else None
                )
                jump = _jump(rec)
                if jump is None:
                    return response
                # where the graph goes next, decided here (no node of its own per round)
                return ExtendedModelResponse(response, Command(update={"jump_to": jump}))
            except BaseException as exc:  # noqa: BLE001 - re-raised, typed, below
                _raise(exc, self._end(rec, exc))

    def _start(
        self, rec: _Run, request: ModelRequest[Any], base: list[BaseMessage]
    ) -> tuple[ToolLoop, RunBudget]:
        """The run's first model call: the loop made for LangChain's model and tools, and
        the run announced (as ``LLMAgent`` announces it)."""
        cfg = rec.config
        tools = tuple(t for t in request.tools if isinstance(t, BaseTool))
        check_prune_tools(cfg, tools, pruning_model=self.pruning_model)
        system = request.system_message
        if system is None and cfg.system_prompt:
            system = SystemMessage(cfg.system_prompt)
        rec.system = system
        rec.run.messages = [*([system] if system is not None else []), *base]
        self._seen = (request.model, tools)  # what a fork of this run runs with
        loop = ToolLoop(_Driven(self, request.model, ToolBox(tools)), cfg, rec.run)
        rec.loop = loop
        rec.budget = loop.start()
        return loop, rec.budget

    async def _next_round(self, rec: _Run, loop: ToolLoop, budget: RunBudget) -> Purpose:
        """The round before was answered (by the tools node): count it, prune its results,
        and ask the stopping rules; announce what comes next."""
        run = rec.run
        answered = self._answered(rec, loop)
        if not budget.token_tripped:
            await loop.prune(budget, answered)
        number = run.round
        reason = loop.end_round(budget, number)
        rec.outcomes, rec.reply_index = {}, None
        if reason is not None:
            loop.begin_synthesis(reason)
            rec.reason = reason
            return "synthesis"
        loop.begin_round(number + 1)
        return "round"

    def _answered(self, rec: _Run, loop: ToolLoop) -> list[tuple[int, DispatchOutcome]]:
        """The last round's calls with their answers, in call order, and where each answer
        sits; an answer some other middleware gave (a rejection, a limit) is reported now."""
        run, index = rec.run, rec.reply_index
        if index is None or index >= len(run.messages):
            return []
        reply = run.messages[index]
        if not isinstance(reply, AIMessage):
            return []
        where = {
            m.tool_call_id: i
            for i, m in enumerate(run.messages)
            if i > index and isinstance(m, ToolMessage)
        }
        found: list[tuple[int, DispatchOutcome]] = []
        for call in reply.tool_calls:
            call_id = str(call.get("id") or "")
            at = where.get(call_id)
            if at is None:
                continue
            message = run.messages[at]
            assert isinstance(message, ToolMessage)
            outcome = rec.outcomes.get(call_id)
            if outcome is None or outcome.message.content != message.content:
                outcome = _answered_elsewhere(message, str(call.get("name") or ""), call)
                if not run.reported(call_id):
                    loop.emit_dispatch(outcome)
            found.append((at, outcome))
        return found

    async def _after_reply(
        self, rec: _Run, loop: ToolLoop, budget: RunBudget, purpose: Purpose, reply: AIMessage
    ) -> None:
        """The reply was kept and counted: the final answer ends the run; a round's calls
        are held for the step hooks (edit, skip), or answered as not run when the token
        budget is spent or the reply was cut off."""
        run = rec.run
        if purpose == "synthesis":
            loop.end_synthesis(reply)
            loop.finish(reply, rec.reason)
            rec.done = True
            return
        if not reply.tool_calls and not reply.invalid_tool_calls:
            run.rounds_done = run.round
            loop.finish(reply, None)
            rec.done = True
            return
        index = len(run.messages) - 1
        rec.reply_index = index
        if budget.token_tripped:
            outcomes = loop.skip_all(reply, "token_budget", "not run: the token budget is spent")
        elif loop.truncated:  # read off this reply by ``account`` (its event's flag)
            outcomes = loop.skip_all(reply, "truncated", TRUNCATED_TEXT)
        else:
            rec.outcomes = {}
            # the step hooks may hold the round's calls: edited ones go to the tools node
            # as edited (the reply is replaced in the state), skipped ones are answered
            edited, written = await loop.hold_calls(index)
            if edited is not run.messages[index]:
                run.messages[index] = edited
            for outcome in written.values():
                loop.emit_dispatch(outcome)
            outcomes = list(written.values())
            invalid = invalid_outcomes(run.messages[index])  # type: ignore[arg-type]
            rec.again = bool(invalid) and not reply.tool_calls
            for outcome in invalid:
                loop.emit_dispatch(outcome)
            outcomes += invalid
        for outcome in outcomes:
            rec.outcomes[outcome.message.tool_call_id] = outcome
        run.messages.extend(o.message for o in outcomes)

    # -- a tool call --------------------------------------------------------------------
    async def _tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        rec = self._rec(request.state)
        if rec is None or rec.ended or rec.loop is None:
            return await handler(request)
        run, loop = rec.run, rec.loop
        call = request.tool_call
        call_id = str(call.get("id") or "")
        with running(run.run_id):
            try:
                self._take_stop(rec)
                refused = refusal(call, loop.tools)
                if refused is not None:
                    self._record(rec, loop, refused)
                    return refused.message
                passed: list[Command[Any]] = []

                async def body() -> Any:
                    answer = await handler(request)
                    if isinstance(answer, Command):  # a tool that changes the graph's state
                        passed.append(answer)
                        return output_of(_command_text(answer, call_id))
                    return output_of(answer)

                rec.tools_going[call_id] = Running(
                    str(call.get("name") or ""), call.get("args") or {}, time.perf_counter()
                )
                try:
                    outcome = await run_call(
                        call,
                        body,
                        timeout_s=rec.config.tool_timeout_s,
                        hooks=DispatchHooks(
                            started=loop.tool_started,
                            done=lambda o: self._record(rec, loop, o),
                        ),
                        caller=RunCaller(run.run_id, run.observers),
                    )
                finally:
                    rec.tools_going.pop(call_id, None)
                self._record(rec, loop, outcome)  # a stop's outcome was recorded already
                if passed and outcome.status == "success":
                    return passed[0]
                return outcome.message
            except BaseException as exc:  # noqa: BLE001 - re-raised, typed, below
                _raise(exc, self._end(rec, exc))

    def _record(self, rec: _Run, loop: ToolLoop, outcome: DispatchOutcome) -> None:
        """A call of the round ended: its event (once), kept for the round's count and for
        a stop that comes before the round ends."""
        call_id = outcome.message.tool_call_id
        if rec.ended or rec.run.reported(call_id):
            return
        rec.outcomes[call_id] = outcome
        rec.run.finished[call_id] = outcome
        loop.emit_dispatch(outcome)

    # -- the run's state ----------------------------------------------------------------
    def _rec(self, state: Mapping[str, Any]) -> _Run | None:
        run_id = state.get("toolloop_run") if isinstance(state, Mapping) else None
        return self._runs.get(run_id) if isinstance(run_id, str) else None

    def _sync_messages(
        self, rec: _Run, base: list[BaseMessage], system: SystemMessage | None
    ) -> None:
        """The run's transcript, as the graph's state holds it now (the tools node and
        other middleware added to it since the last call)."""
        rec.run.messages = [*([system] if system is not None else []), *base]

    def _take_stop(self, rec: _Run) -> None:
        """A stop asked for while LangChain was between two hooks: the run ends here."""
        if take_stop(rec.run.run_id):
            raise _StopTaken

    def _end(self, rec: _Run, exc: BaseException) -> BaseException:
        """End the run that raised ``exc`` (see :mod:`.ending`); what the hook raises."""
        if rec.ended:
            # another of the run's tasks ended it (a stop cancels every call that runs):
            # this one raises the same kind of error, whichever the graph reports
            if isinstance(exc, asyncio.CancelledError) and claim_stop(rec.run.run_id):
                return stopped_error(rec.run)
            return exc
        stopped: bool | None = None
        if isinstance(exc, _StopTaken):
            exc, stopped = asyncio.CancelledError(), True
        try:
            return end_run(rec.run, exc, stopped=stopped, running=dict(rec.tools_going))
        finally:
            self._release(rec)

    def _release(self, rec: _Run) -> None:
        rec.ended = True
        close_spanning(rec.run.run_id)
        rec.run.release()
        self._runs.pop(rec.run.run_id, None)


class _Follow:
    """A run as the graph watch reports to it (:mod:`.graph_watch`): another middleware's
    summarization calls, counted and gated as the loop's model calls, and a graph that
    raised outside our hooks, which ends the run as any error does."""

    def __init__(self, owner: ToolLoopMiddleware, rec: _Run) -> None:
        self._owner = owner
        self._rec = rec
        self._open: dict[UUID, tuple[int | None, list[BaseMessage], float, str | None]] = {}

    def summary_started(self, call: UUID, prompt: Sequence[BaseMessage], model: str | None) -> None:
        rec = self._rec
        if rec.ended:
            return
        began = time.perf_counter()
        number: int | None = None
        if rec.loop is not None and rec.budget is not None:
            try:
                number = rec.loop.side_call_started(rec.budget, prompt, model)
            except Exception as exc:  # noqa: BLE001 - a gate: the run ends at its next call
                rec.stop = rec.stop or exc
                return
        self._open[call] = (number, list(prompt), began, model)

    def summary_ended(self, call: UUID, reply: BaseMessage | None) -> None:
        rec, entry = self._rec, self._open.pop(call, None)
        if entry is None or rec.ended:
            return
        number, prompt, began, model = entry
        latency = time.perf_counter() - began
        answer = reply if isinstance(reply, AIMessage) else AIMessage("")
        if number is None or rec.loop is None or rec.budget is None:
            rec.early.append((prompt, answer, latency, model))
            return
        try:
            rec.loop.side_call_done(rec.budget, answer, prompt, number, latency, model)
        except Exception as exc:  # noqa: BLE001 - a gate: the run ends at its next call
            rec.stop = rec.stop or exc

    def summary_failed(self, call: UUID, error: BaseException) -> None:
        rec, entry = self._rec, self._open.pop(call, None)
        if entry is None or rec.ended or rec.loop is None or entry[0] is None:
            return
        rec.loop.call_failed(entry[0], "summarization", error, time.perf_counter() - entry[2])

    def graph_failed(self, error: BaseException) -> None:
        if not self._rec.ended:
            self._owner._end(self._rec, error)


def _node_run() -> UUID | None:
    """The chain run of the graph node a hook runs in (its parent is the graph's run)."""
    try:
        callbacks = get_config().get("callbacks")
    except RuntimeError:  # not inside a graph
        return None
    found = getattr(callbacks, "parent_run_id", None)
    return found if isinstance(found, UUID) else None


class _StopTaken(Exception):
    """A stop asked for between two hooks, taken by the next (ends the run as stopped)."""


def _raise(exc: BaseException, raised: BaseException) -> NoReturn:
    """Raise what ending the run made of ``exc`` (``exc`` itself, or its typed error)."""
    if raised is exc:
        raise exc
    raise raised from (exc if isinstance(raised, ToolLoopError) else None)


def _jump(rec: _Run) -> str | None:
    """Where the graph goes after a model call, when the loop decides it: to its end after
    the final answer (whose calls, if it asked for any, were answered as not run, as the
    loop answers them), back to the model after a reply of unreadable calls only (each
    answered with why), as the loop asks it again."""
    if rec.done:
        return "end"
    if rec.again:
        rec.again = False
        return "model"
    return None


def _reply_of(response: Any) -> tuple[Any, Any]:
    """The reply in what LangChain's handler returned, and its structured response."""
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    if isinstance(response, ModelResponse):
        ai = [m for m in response.result if isinstance(m, AIMessage)]
        return (ai[-1] if ai else None), response.structured_response
    return response, None


def _answered_elsewhere(
    message: ToolMessage, name: str, call: Mapping[str, Any]
) -> DispatchOutcome:
    """A call some other middleware answered without running it here (a human's
    rejection, a call limit): its answer, as an outcome the loop reports."""
    failed = message.status == "error"
    return DispatchOutcome(
        message,
        name or (message.name or ""),
        frozen_json(call.get("args") or {}),
        "error" if failed else "success",
        "unknown",  # "answered by the framework"
        0.0,
        ran=False,
    )


def _command_text(command: Command[Any], call_id: str) -> Any:
    """The text a tool's ``Command`` answers its call with (its ``ToolMessage``)."""
    update = command.update if isinstance(command.update, Mapping) else {}
    for message in update.get("messages", ()) if isinstance(update, Mapping) else ():
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return message
    return "(the tool updated the agent's state)"
