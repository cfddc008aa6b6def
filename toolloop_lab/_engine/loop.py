"""``ToolLoop``: one run of the tool loop, in four steps that each read on one screen.

``start`` resolves the budgets and announces the run; ``rounds`` is a plain bounded ``for``
over tool rounds (a model call with tools bound, then dispatch of its calls, then
pruning); ``synthesise`` asks once, without tools, for a final answer when the loop must
stop early (round cap, a stuck model, a spent token budget); ``finish`` announces the
outcome. Everything a user sees is derived from the events emitted here, in order; the
loop knows nothing about widgets, files, pandas or matplotlib.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolCall

from toolloop_lab import events as ev
from toolloop_lab._engine.call_events import (
    delta_sink,
    model_call_failed,
    model_call_started,
    model_called,
    priced_usage,
    tool_started,
)
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.hooks import PauseEditor, PauseHook, PausePoint, holding
from toolloop_lab._engine.interventions import MessageEdits, ToolCallEdits
from toolloop_lab._engine.model_call import (
    CallTiming,
    DeltaBuffer,
    RepeatedCalls,
    invoke,
    is_empty,
    is_truncated,
    should_stream,
    stream_kwargs,
)
from toolloop_lab._engine.pruning import PruneResult, prune_output, pruning_prompt
from toolloop_lab._engine.rate_limit import retry_after_s
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._engine.run_state import RunState
from toolloop_lab._engine.servers import RunServers
from toolloop_lab._spend.budget import GateCheck, RunBudget
from toolloop_lab._spend.pricing import TokenPrice, model_name_of
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import finish_outcome, message_dicts
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab._tools.call_ids import normalize_tool_call_ids
from toolloop_lab._tools.callers import RunCaller, tool_caller
from toolloop_lab._tools.content import text_only
from toolloop_lab._tools.dispatcher import (
    DispatchHooks,
    DispatchOutcome,
    ToolBox,
    dispatch,
    invalid_outcomes,
    skipped_outcomes,
)
from toolloop_lab.errors import PaidCallError


class _RateLimited(Exception):
    """A model call the provider refused for a rate limit, to be sent again after
    ``wait_s`` seconds (its ``model_call_failed`` event is already out)."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(f"rate limited: send again in {wait_s:g} s")
        self.wait_s = wait_s


class LoopAgent(Protocol):
    """What a run needs of its agent (``LLMAgent`` has it; the loop never imports it)."""

    model: BaseChatModel
    pruning_model: BaseChatModel | None

    @property
    def prices(self) -> Mapping[str, TokenPrice] | None: ...

    @property
    def pause_hooks(self) -> tuple[PauseHook, ...]: ...

    def bound_model(self) -> Any: ...

    def toolbox(self) -> ToolBox: ...


Send = Callable[[list[BaseMessage]], Awaitable[tuple[Any, CallTiming]]]
"""Sends one model call's messages and returns its reply and timing: how a driver other
than the loop's own makes the call (``ToolLoopMiddleware`` hands it to LangChain)."""

TRUNCATED_TEXT: Final = (
    "not run: the reply was cut off by the output-token limit, so this call's arguments "
    "may be incomplete. Make the call again (shorter, or fewer calls at once)."
)
Purpose = Literal["round", "synthesis"]


class ToolLoop:
    """One run of ``agent`` under ``config``, changing ``run`` as it goes."""

    def __init__(self, agent: LoopAgent, config: AgentConfig, run: RunState) -> None:
        self.agent = agent
        self.cfg = config
        self.run = run
        self.tools: ToolBox = agent.toolbox()
        self.tool_names = tuple(self.tools)
        self.model_name = model_name_of(agent.model)
        self.budget: RunBudget | None = None
        self.request = ""
        """The run's question (for the pruning model), read from its input when it starts."""
        self._views: tuple[ev.ToolCallView, ...] = ()
        """The last reply's calls as its event holds them (frozen arguments, made once)."""
        self._truncated = False
        """The last reply was cut off by the output-token limit, as its event says."""
        self._repeats = RepeatedCalls()
        """Rounds that repeated the one before (a stuck round), judged reply by reply."""

    async def execute(self) -> ToolLoopResult:
        """Run to the end and return the result (errors propagate to the agent's guard)."""
        budget = self.start()
        final, reason = await self.rounds(budget)
        if reason is not None:
            final = await self.synthesise(budget, reason)
        assert final is not None
        return self.finish(final, reason)

    # -- the four steps ---------------------------------------------------------------
    def start(self) -> RunBudget:
        """Resolve the budgets (refusing an unpriceable model under a USD cap before
        anything is spent), bind the tools (a tool no model can be told about fails here,
        before any call) and announce the run."""
        cfg, agent, run = self.cfg, self.agent, self.run
        budget = self.budget = RunBudget.resolve(
            percent=cfg.token_budget_percent,
            context_window=cfg.context_window,
            model=agent.model,
            agent_prices=agent.prices,
        )
        run.release = budget.release
        self.request = _request_of(run.messages)
        budget.require_price(self.model_name)
        if agent.pruning_model is not None and cfg.prune_tools:
            budget.require_price(model_name_of(agent.pruning_model))
        agent.bound_model()  # every tool's schema built before the first (paid) call
        run.servers = RunServers.of(self.tools)  # what MCP servers say is read from here
        parent = tool_caller()  # a sub-agent: the run and tool call it answers
        run.emit(
            ev.LoopStarted,
            model_name=self.model_name,
            tools=self.tool_names,
            max_rounds=cfg.tool_max_rounds,
            token_budget=budget.token_limit,
            context_window=budget.context_window,
            usd_limit=budget.usd_limit,
            prune_tools=cfg.prune_tools,
            input_messages=len(run.messages),
            started_at=datetime.now(UTC).isoformat(),
            name=run.label.name,
            tags=run.label.tags,
            metadata=run.label.metadata,
            parent_run_id=None if parent is None else parent.run_id,
            parent_tool_call_id=None if parent is None else parent.tool_call_id,
        )
        return budget

    async def rounds(self, budget: RunBudget) -> tuple[AIMessage | None, ev.SynthesisReason | None]:
        """Tool rounds until the model answers (its reply) or the loop must stop early
        (the synthesis reason)."""
        run = self.run
        for number in range(1, self.cfg.tool_max_rounds + 1):
            self.begin_round(number)
            reply = await self.call(budget, "round")
            if not reply.tool_calls and not reply.invalid_tool_calls:
                run.rounds_done = number
                return reply, None
            await self.answer(budget, reply)
            reason = self.end_round(budget, number)
            if reason is not None:
                return None, reason
        return None, "round_cap"  # pragma: no cover - end_round says so at the last round

    def begin_round(self, number: int) -> None:
        """Tool round ``number`` begins (its model call comes next)."""
        self.run.round = number
        self.run.emit(ev.RoundStarted, max_rounds=self.cfg.tool_max_rounds)

    def end_round(self, budget: RunBudget, number: int) -> ev.SynthesisReason | None:
        """Tool round ``number`` had every call answered: count it, and say why the loop
        must now stop early (a spent token budget, a stuck model, the round cap), if it
        must."""
        cfg = self.cfg
        self.run.rounds_done = number
        if budget.token_tripped:
            return "token_budget"
        if cfg.max_stuck_rounds is not None and self._repeats.count >= cfg.max_stuck_rounds:
            return "stuck"
        return "round_cap" if number >= cfg.tool_max_rounds else None

    async def synthesise(self, budget: RunBudget, reason: ev.SynthesisReason) -> AIMessage:
        """One call without tools asking for a final answer."""
        self.begin_synthesis(reason)
        final = await self.call(budget, "synthesis")
        self.end_synthesis(final)
        return final

    def begin_synthesis(self, reason: ev.SynthesisReason) -> HumanMessage:
        """The loop must stop early: announce it and ask for a final answer (the prompt
        added to the conversation is returned)."""
        run = self.run
        run.round = run.rounds_done + 1
        run.emit(ev.SynthesisStarted, reason=reason, prompt=self.cfg.synthesis_prompt)
        prompt = HumanMessage(self.cfg.synthesis_prompt)
        run.messages.append(prompt)
        return prompt

    def end_synthesis(self, final: AIMessage) -> list[DispatchOutcome]:
        """A model may still ask for tools in its final answer; they are not run, but
        every call id gets its ToolMessage (returned) so the transcript stays valid to
        continue."""
        text = "not run: a final answer without tools was requested"
        outcomes = skipped_outcomes(final, "synthesis", text)
        for outcome in outcomes:
            self.run.messages.append(outcome.message)
            self.emit_dispatch(outcome)
        return outcomes

    def finish(self, final: AIMessage, reason: ev.SynthesisReason | None) -> ToolLoopResult:
        """Announce the outcome and hand back the result."""
        run = self.run
        exhausted = reason == "token_budget"
        run.emit_server_logs()
        run.emit(
            ev.LoopFinished,
            final_text=str(final.text),  # a plain str, not langchain's TextAccessor
            rounds=run.rounds_done,
            usage=run.usage,
            budget_exhausted=exhausted,
            synthesis_was_run=reason is not None,
            synthesis_reason=reason,
            outcome=finish_outcome(
                budget_exhausted=exhausted, synthesis_was_run=reason is not None
            ),
            final_empty=is_empty(final),
            final_truncated=is_truncated(final),
            messages=run.unsent_messages(),
        )
        return ToolLoopResult(final, tuple(run.messages), tuple(run.events))

    # -- a model call -----------------------------------------------------------------
    async def call(
        self, budget: RunBudget, purpose: Purpose, send: Send | None = None
    ) -> AIMessage:
        """One model call of the conversation: pause, gate, send, account, gate. ``send``
        makes the call instead of the loop's own model (a framework that calls the model
        itself); it is handed the messages to send, as they stand after the pause. A call
        the provider refused for a rate limit is sent again after the wait it asked for,
        while ``rate_limit_retries`` allow (each refusal an event saying how long it
        waited)."""
        run, agent = self.run, self.agent
        hooks = holding(agent.pause_hooks, "model_call")
        if hooks:  # most runs have none: no coroutine, no closure made for them
            await self.pause(hooks, "model_call", purpose, (), MessageEdits(run))
        retries = self.cfg.rate_limit_retries
        while True:
            try:
                return await self._send(budget, purpose, retry=retries > 0, send=send)
            except _RateLimited as limited:
                retries -= 1
                await asyncio.sleep(limited.wait_s)

    async def _send(
        self, budget: RunBudget, purpose: Purpose, *, retry: bool, send: Send | None = None
    ) -> AIMessage:
        """Gate, send and account one model call; with ``retry``, a rate limit's refusal
        raises :class:`_RateLimited` (after its event) instead of the provider's error."""
        run, agent = self.run, self.agent
        budget.before_call(run.usage, self.gate)
        tools_bound = purpose == "round" and bool(self.tools)
        stream = send is None and should_stream(
            self.cfg.streaming, agent.model, tools_bound=tools_bound
        )
        number = run.next_call()
        model_call_started(
            run.emit,
            number,
            purpose=purpose,
            model_name=self.model_name,
            tools=self.tool_names if tools_bound else (),
            messages=run.unsent_messages(),
            streaming=stream,
        )
        deltas = DeltaBuffer(delta_sink(run.emit, number)) if stream else None
        prompt = list(run.messages)
        sent = time.perf_counter()
        try:
            if send is not None:
                reply, timing = await send(prompt)
            else:
                reply, timing = await invoke(
                    agent.bound_model() if purpose == "round" else agent.model,
                    prompt,
                    stream=stream,
                    kwargs=stream_kwargs(agent.model) if stream else {},  # a stream reads it
                    deltas=deltas,
                    limit_s=self.cfg.model_timeout_s,
                )
        except PaidCallError as exc:
            if isinstance(exc.reply, AIMessage):  # paid for: counted and kept, then raised
                self.account(budget, exc.reply, prompt, number, purpose, CallTiming(0.0))
            raise
        except BaseException as exc:
            run.partial_text = deltas.partial_text if deltas and deltas.text else None
            billed = self._billed(budget, deltas, prompt)
            wait = retry_after_s(exc) if retry and isinstance(exc, Exception) else None
            latency = time.perf_counter() - sent
            self.call_failed(number, purpose, exc, latency, billed, retry_after_s=wait)
            if wait is not None:
                raise _RateLimited(wait) from exc
            raise
        if not isinstance(reply, AIMessage):
            raise TypeError(f"model returned {type(reply).__name__}, not an AIMessage")
        return self.account(budget, reply, prompt, number, purpose, timing)

    def account(
        self,
        budget: RunBudget,
        reply: AIMessage,
        prompt: Sequence[BaseMessage],
        number: int,
        purpose: Purpose,
        timing: CallTiming,
    ) -> AIMessage:
        """Keep a paid reply: transcript, usage and cost, its event, then the gates."""
        run, agent = self.run, self.agent
        reply = normalize_tool_call_ids(reply, run.tool_call_ids())
        run.messages.append(reply)  # paid for, so kept even if a gate below raises
        name, usage = priced_usage(
            reply, prompt, model=agent.model, fallback=self.model_name, prices=budget.prices
        )
        run.usage = run.usage + usage
        event = model_called(
            run.emit,
            reply,
            number,
            timing,
            self._repeats,
            purpose=purpose,
            model_name=name,
            usage=usage,
            accumulated=run.usage,
        )
        self._views, self._truncated = event.tool_calls, event.truncated
        budget.after_call(run.usage, name, self.gate)
        return reply

    def side_call_started(
        self, budget: RunBudget, prompt: Sequence[BaseMessage], model_name: str | None
    ) -> int:
        """A summarization call another middleware makes (LangChain's
        ``SummarizationMiddleware``): gated as any model call, then announced with its own
        prompt (not part of the conversation); its number."""
        run = self.run
        budget.before_call(run.usage, self.gate)
        number = run.next_call()
        model_call_started(
            run.emit,
            number,
            purpose="summarization",
            model_name=model_name or self.model_name,
            tools=(),
            messages=message_dicts(prompt),
            streaming=False,
        )
        return number

    def side_call_done(
        self,
        budget: RunBudget,
        reply: AIMessage,
        prompt: Sequence[BaseMessage],
        number: int,
        latency_s: float,
        model_name: str | None,
    ) -> None:
        """The summarization call ``number`` replied: counted and priced as a model call
        (its reply stays out of the transcript), its event, then the gates."""
        run = self.run
        name, usage = priced_usage(
            reply, prompt, model=None, fallback=model_name or self.model_name, prices=budget.prices
        )
        run.usage = run.usage + usage
        model_called(
            run.emit,
            reply,
            number,
            CallTiming(latency_s),
            self._repeats,
            purpose="summarization",
            model_name=name,
            usage=usage,
            accumulated=run.usage,
        )
        budget.after_call(run.usage, name, self.gate)

    def call_failed(
        self,
        number: int,
        purpose: ev.CallPurpose,
        exc: BaseException,
        latency_s: float,
        usage: Usage | None = None,
        *,
        retry_after_s: float | None = None,
    ) -> None:
        """Emit the end of a call that raised (or was stopped) instead of replying; the
        ``usage`` its provider had reported by then is counted first."""
        run = self.run
        if usage is not None:
            run.usage = run.usage + usage
        model_call_failed(
            run.emit,
            exc,
            number=number,
            purpose=purpose,
            latency_s=latency_s,
            partial_text=run.partial_text if purpose != "pruning" else None,
            usage=usage,
            accumulated=run.usage if usage is not None else None,
            retry_after_s=retry_after_s,
        )

    def _billed(
        self, budget: RunBudget, deltas: DeltaBuffer | None, prompt: Sequence[BaseMessage]
    ) -> Usage | None:
        """The tokens and cost a failed stream's provider had reported, if any (read as a
        reply's are, priced by the model the provider named)."""
        billed = deltas.billed if deltas is not None else None
        if billed is None:
            return None
        _name, usage = priced_usage(
            billed, prompt, model=self.agent.model, fallback=self.model_name, prices=budget.prices
        )
        return usage

    def gate(self, check: GateCheck) -> None:
        """Emit one budget check as a ``BudgetGate`` event (the check's fields are the
        event's own)."""
        self.run.emit(ev.BudgetGate, **dataclasses.asdict(check))

    async def pause(
        self,
        hooks: tuple[PauseHook, ...],
        stage: Literal["model_call", "tool_dispatch"],
        purpose: str,
        detail: tuple[str, ...],
        editor: PauseEditor | None,
    ) -> None:
        """Let ``hooks`` (those that may hold at ``stage``, see ``hooks.holding``) hold the
        loop here, and change the run through the point. The time held is the person's:
        a ``pause`` event records it on its own, however the pause ends (a stop too)."""
        point = PausePoint(self.run.run_id, self.run.round, stage, purpose, detail, editor)
        began = time.perf_counter()
        try:
            for hook in hooks:
                await hook(point)
        finally:
            if isinstance(editor, (MessageEdits, ToolCallEdits)):
                editor.close()
            held = time.perf_counter() - began
            self.run.emit(ev.Paused, stage=stage, purpose=purpose, paused_s=held)

    # -- a round's calls --------------------------------------------------------------
    async def answer(self, budget: RunBudget, reply: AIMessage) -> None:
        """Give every call of ``reply`` its ``ToolMessage`` (run, skipped or refused),
        then prune what needs pruning."""
        run = self.run
        if budget.token_tripped:
            outcomes = self.skip_all(reply, "token_budget", "not run: the token budget is spent")
        elif self._truncated:  # read off this reply by ``account`` (its event's flag)
            # A reply cut off by the output-token limit may hold half-parsed calls
            # (a streamed '{"path": "rep' parses as {"path": "rep"}): none of them runs.
            outcomes = self.skip_all(reply, "truncated", TRUNCATED_TEXT)
        else:
            outcomes = await self.dispatch(len(run.messages) - 1)
        first = len(run.messages)
        run.messages.extend(o.message for o in outcomes)
        if not budget.token_tripped:
            await self.prune(budget, [(first + i, o) for i, o in enumerate(outcomes)])

    def skip_all(self, reply: AIMessage, reason: str, text: str) -> list[DispatchOutcome]:
        outcomes = skipped_outcomes(reply, reason, text)
        for outcome in outcomes:
            self.emit_dispatch(outcome)
        return outcomes

    async def dispatch(self, index: int) -> list[DispatchOutcome]:
        """Pause (a person may edit or answer calls), then run the rest; outcomes come
        back in call order, events in completion order."""
        run = self.run
        reply, written = await self.hold_calls(index)
        for outcome in written.values():
            self.emit_dispatch(outcome)
        run.finished = dict(written)
        frozen: dict[str, Any] = {v.id: v.args for v in self._views}  # FrozenDicts: dicts
        pending: list[ToolCall] = [
            # the arguments as the events hold them (frozen once), unless edited since
            {**c, "args": frozen[c["id"] or ""]} if frozen.get(c["id"] or "") == c["args"] else c
            for c in reply.tool_calls
            if c.get("id") not in written
        ]
        cfg = self.cfg
        await dispatch(
            pending,
            self.tools,
            timeout_s=cfg.tool_timeout_s,
            parallel=cfg.parallel_tool_calls,
            # made per dispatch: kept on the loop, its bound methods would make the loop a
            # cycle, and a whole run (its events, messages) would wait for the collector
            hooks=DispatchHooks(started=self.tool_started, done=self.emit_dispatch),
            finished=run.finished,
            caller=RunCaller(run.run_id, run.observers),
        )
        invalid = invalid_outcomes(reply)
        for outcome in invalid:
            self.emit_dispatch(outcome)
        by_id, run.finished = run.finished, {}
        return [by_id[str(c.get("id"))] for c in reply.tool_calls] + invalid

    async def hold_calls(self, index: int) -> tuple[AIMessage, dict[str, DispatchOutcome]]:
        """The reply and the calls answered by hand, after a pause (if anyone pauses)."""
        reply = self.run.messages[index]
        assert isinstance(reply, AIMessage)
        hooks = holding(self.agent.pause_hooks, "tool_dispatch")
        if not hooks:
            return reply, {}
        edits = ToolCallEdits(self.run, index, self.tools)
        names = tuple(str(c.get("name") or "") for c in reply.tool_calls)
        await self.pause(hooks, "tool_dispatch", "tools", names, edits)
        return edits.reply, edits.written

    @property
    def truncated(self) -> bool:
        """The last reply was cut off by the output-token limit (its event says so)."""
        return self._truncated

    def tool_started(self, call: Any) -> None:
        """Emit a call's ``tool_start`` as its tool begins."""
        args = frozen_json(call.get("args") or {})
        name, servers = call["name"], self.run.servers
        site = servers.site(name)
        tool_started(
            self.run.emit,
            call_id=call.get("id") or "",
            name=name,
            args=args,
            server=servers.by_tool.get(name),
            session_id=None if site is None else site.session_id,
        )

    def emit_dispatch(self, outcome: DispatchOutcome) -> None:
        """Emit one call's ``ToolDispatched`` event."""
        self.run.emit_dispatch(outcome)

    # -- pruning ----------------------------------------------------------------------
    async def prune(
        self, budget: RunBudget, answered: Sequence[tuple[int, DispatchOutcome]]
    ) -> None:
        """Shorten large outputs of ``prune_tools``: ``answered`` pairs each of a round's
        outcomes with where its message sits in the transcript."""
        cfg, model = self.cfg, self.agent.pruning_model
        if model is None or not cfg.prune_tools:
            return
        todo = [
            (index, o)
            for index, o in answered
            if o.status == "success"
            and o.name in cfg.prune_tools
            and len(text_only(o.message.content) or "") > cfg.prune_min_chars
        ]
        if not todo:
            return
        hooks = holding(self.agent.pause_hooks, "model_call")
        if hooks:
            await self.pause(hooks, "model_call", "pruning", (), None)
        budget.before_call(self.run.usage, self.gate)
        calls = [(index, o, *self._pruning_call(o)) for index, o in todo]
        # return_exceptions: a failed pruning call must neither orphan its siblings nor
        # lose their spend; the first failure is raised once every success is counted.
        sent = time.perf_counter()
        try:
            results = await asyncio.gather(
                *(prune_output(model, p, _text(o), cfg.model_timeout_s) for _, o, _, p in calls),
                return_exceptions=True,
            )
        except BaseException as exc:  # stopped while the pruning calls ran: each one ends
            for _i, _o, number, _p in calls:
                self.call_failed(number, "pruning", exc, time.perf_counter() - sent)
            raise
        failure: BaseException | None = None
        for (index, outcome, number, _prompt), res in zip(calls, results, strict=True):
            if isinstance(res, BaseException):
                failure = failure or res
                self.call_failed(number, "pruning", res, 0.0)
                continue
            self._keep_pruned(budget, outcome, index, number, res)
        if failure is not None:
            raise failure
        budget.after_call(self.run.usage, model_name_of(model), self.gate)

    def _pruning_call(self, outcome: DispatchOutcome) -> tuple[int, list[BaseMessage]]:
        """Number and announce one pruning call; its prompt."""
        run = self.run
        prompt = pruning_prompt(
            outcome.name,
            _text(outcome),
            instruction=self.cfg.pruning_prompt,
            request=self.request,
        )
        number = run.next_call()
        run.emit(
            ev.ModelCallStarted,
            call=number,
            purpose="pruning",
            model_name=model_name_of(self.agent.pruning_model),
            tools=(),
            messages=message_dicts(prompt),
            tool_call_id=outcome.message.tool_call_id,
        )
        return number, prompt

    def _keep_pruned(
        self,
        budget: RunBudget,
        outcome: DispatchOutcome,
        index: int,
        number: int,
        res: PruneResult,
    ) -> None:
        """Count a pruning call's spend, emit its saving, and put the shorter text in the
        transcript (the original stays in the message's artifact)."""
        run, name = self.run, model_name_of(self.agent.pruning_model)
        reported = model_name_of(self.agent.pruning_model, res.reply.response_metadata) or name
        usage = budget.price(res.usage, reported, name)
        run.usage = run.usage + usage
        original = outcome.message
        run.emit(
            ev.Pruned,
            call=number,
            tool_call_id=original.tool_call_id,
            tool_name=outcome.name,
            model_name=reported,
            tokens_before=res.tokens_before,
            tokens_after=res.tokens_after,
            usage=usage,
            latency_s=res.latency_s,
            original=_text(outcome),
            pruned=res.pruned,
        )
        artifact = {"original": original.content, "artifact": original.artifact, "pruned": True}
        run.messages[index] = original.model_copy(
            update={"content": res.pruned, "artifact": artifact}
        )


def _text(outcome: DispatchOutcome) -> str:
    """The text of a result pruning shortens (text alone: a result holding an image or a
    file is never pruned, its words are not all of it)."""
    return text_only(outcome.message.content) or ""


def _request_of(messages: Sequence[BaseMessage]) -> str:
    """What this run was asked: the last human message of its input (a later turn of a
    conversation prunes against its own question, not the first turn's)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""
