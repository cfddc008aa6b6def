"""``LLMAgent`` and its shared tool-loop helper ``_execute_tool_loop``.

The loop is a plain bounded ``for`` over rounds. It knows nothing about widgets, files,
pandas or matplotlib: everything a user sees is derived from the events it emits to its
observers, in order. Budgets are gates checked around each model call; a round cap, a
stuck model or a spent token budget lead to one synthesis call without tools; a spent USD
budget raises ``ExecutionError(kind="cost")``. Whatever happens, the partial counts,
messages and events survive in the result or on the error.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Final, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import BaseTool

from toolloop_lab import budget as _budget
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError, describe
from toolloop_lab.events import (
    BudgetGate,
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    Observer,
    Pruned,
    RoundStarted,
    SynthesisReason,
    SynthesisStarted,
    ToolCallView,
    ToolDispatched,
    notify,
)
from toolloop_lab.hooks import PauseHook, PausePoint
from toolloop_lab.pricing import TokenPrice, call_cost, known_price, model_name_of
from toolloop_lab.pruning import DEFAULT_PRUNING_PROMPT, prune_output
from toolloop_lab.sync_runner import run_sync
from toolloop_lab.tools import (
    DispatchOutcome,
    dispatch,
    normalize_tool_call_ids,
    skipped_outcomes,
)
from toolloop_lab.usage import Usage

__all__ = ["DEFAULT_SYNTHESIS_PROMPT", "AgentConfig", "LLMAgent", "ToolLoopResult"]

_log = logging.getLogger("toolloop_lab")

DEFAULT_SYNTHESIS_PROMPT: Final = (
    "Stop calling tools now. Using only what the conversation above already contains, "
    "give your best final answer to the original request, and say briefly what is still "
    "missing, if anything."
)


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How the loop runs. Immutable; checked by :meth:`validate` when a loop starts."""

    tool_max_rounds: int = 10
    """Tool rounds before the loop stops calling tools and runs synthesis."""
    token_budget_percent: float | None = None
    """Token budget as % of the context window; ``None`` means no token budget."""
    context_window: int | None = None
    """Overrides the model profile's ``max_input_tokens`` (default 128,000 if neither)."""
    prune_tools: tuple[str, ...] = ()
    """Tools whose large outputs the pruning model shortens."""
    prune_min_chars: int = 2_000
    """Only outputs longer than this many characters are pruned."""
    pruning_prompt: str = DEFAULT_PRUNING_PROMPT
    synthesis_prompt: str = DEFAULT_SYNTHESIS_PROMPT
    max_stuck_rounds: int | None = None
    """Stop early after this many consecutive stuck rounds; ``None``: only at the cap."""
    tool_timeout_s: float | None = None
    """Per-tool-call timeout; a call that takes longer gets an error ToolMessage."""
    system_prompt: str | None = None
    """Prepended when :meth:`LLMAgent.arun` is given a plain prompt."""

    def validate(self) -> None:
        """Raise :class:`ConfigurationError` naming the first bad field."""
        _positive_int(self.tool_max_rounds, "tool_max_rounds")
        pct = self.token_budget_percent
        if pct is not None and (
            isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 100
        ):
            raise ConfigurationError(
                f"token_budget_percent must be in (0, 100] or None, got {pct!r}",
                field="token_budget_percent",
            )
        if self.context_window is not None:
            _positive_int(self.context_window, "context_window")
        tools = self.prune_tools
        if not isinstance(tools, (tuple, list, frozenset, set)) or not all(
            isinstance(t, str) and t for t in tools
        ):
            raise ConfigurationError(
                f"prune_tools must be a tuple of tool names, got {tools!r}", field="prune_tools"
            )
        chars = self.prune_min_chars
        if isinstance(chars, bool) or not isinstance(chars, int) or chars < 0:
            raise ConfigurationError(
                f"prune_min_chars must be an int >= 0, got {chars!r}", field="prune_min_chars"
            )
        if self.max_stuck_rounds is not None:
            _positive_int(self.max_stuck_rounds, "max_stuck_rounds")
        t = self.tool_timeout_s
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < math.inf
        ):
            raise ConfigurationError(
                f"tool_timeout_s must be a finite number > 0 or None, got {t!r}",
                field="tool_timeout_s",
            )
        for name in ("pruning_prompt", "synthesis_prompt"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ConfigurationError(f"{name} must be a non-empty string", field=name)
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise ConfigurationError(
                f"system_prompt must be a string or None, got {type(self.system_prompt).__name__}",
                field="system_prompt",
            )


def _positive_int(value: Any, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive int, got {value!r}", field=name)


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """What a finished loop returns: the answer, the transcript, the events and the spend."""

    final_response: AIMessage
    messages: tuple[BaseMessage, ...]
    """The whole transcript, input messages included."""
    events: tuple[Event, ...]
    usage: Usage
    """Every model call of the loop, synthesis and pruning included."""
    rounds: int
    """Tool rounds run (synthesis not counted)."""
    budget_exhausted: bool
    synthesis_was_run: bool
    synthesis_reason: SynthesisReason | None
    run_id: str
    final_empty: bool = False
    """The final answer has no text (an empty or thinking-only reply); see ``LoopFinished``."""
    final_truncated: bool = False
    """The final answer was cut off by the provider's output-token limit."""

    @property
    def accumulated_prompt(self) -> int:
        """Sum of input tokens over every model call of the loop."""
        return self.usage.input_tokens

    @property
    def accumulated_completion(self) -> int:
        """Sum of output tokens over every model call of the loop."""
        return self.usage.output_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        """Total USD cost, or ``None`` when any call was unpriced."""
        return self.usage.cost_usd

    @property
    def usage_estimated(self) -> bool:
        """True when some provider reported no usage and counts were estimated."""
        return self.usage.estimated


class _TokenGateTripped(Exception):
    """Internal: the token budget is spent."""


@dataclass(slots=True)
class _Run:
    """Mutable state of one loop run; never leaves this module except as snapshots."""

    agent: LLMAgent
    messages: list[BaseMessage]
    observers: tuple[Observer, ...]
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    t0: float = field(default_factory=time.perf_counter)
    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    round: int = 0
    rounds_done: int = 0
    any_invocation: bool = False
    budget_exhausted: bool = False
    usd: _budget.UsdBudget | None = None
    token_limit: int | None = None
    token_tripped: bool = False
    prices: Mapping[str, TokenPrice] | None = None
    """The agent's prices overlaid with the USD budget's, by model name."""
    release: Callable[[], None] = field(default=lambda: None)
    """Ends this run's hold on its USD budget (see ``budget.hold``)."""
    finished: dict[str, DispatchOutcome] = field(default_factory=dict)
    """Outcomes of the current dispatch that completed, by tool-call id (kept on a stop)."""
    call_ids: set[str] = field(default_factory=set)
    """Tool-call ids in ``messages[:ids_scanned]``, asked for or answered."""
    ids_scanned: int = 0

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def tool_call_ids(self) -> set[str]:
        """Every tool-call id in the transcript so far. Messages are only ever appended
        (pruning replaces a ToolMessage with one of the same id), so only the new ones are
        scanned: O(1) per round instead of O(transcript)."""
        if self.ids_scanned > len(self.messages):  # the transcript was replaced: rescan
            self.call_ids, self.ids_scanned = set(), 0
        self.call_ids |= _tool_call_ids(self.messages[self.ids_scanned :])
        self.ids_scanned = len(self.messages)
        return self.call_ids

    def emit(self, event: Event) -> None:
        self.events.append(event)
        notify(self.observers, event)

    def partial(self) -> dict[str, Any]:
        return {
            "accumulated_prompt": self.usage.input_tokens,
            "accumulated_completion": self.usage.output_tokens,
            "cost_usd": self.usage.cost_usd,
            "any_invocation_made": self.any_invocation,
            "rounds": self.rounds_done,
            "messages": list(self.messages),
            "events": tuple(self.events),
            "run_id": self.run_id,
        }


class LLMAgent:
    """Drives any langchain-core chat model through tool-call rounds, with events."""

    def __init__(
        self,
        model: BaseChatModel,
        tools: Iterable[BaseTool] = (),
        config: AgentConfig | None = None,
        *,
        pruning_model: BaseChatModel | None = None,
        observers: Iterable[Observer] = (),
        pause_hooks: Iterable[PauseHook] = (),
        prices: Mapping[str, TokenPrice] | None = None,
    ) -> None:
        self.model = model
        self.prices = prices
        self.tools: tuple[BaseTool, ...] = tuple(tools)
        self.config = config if config is not None else AgentConfig()
        self.pruning_model = pruning_model
        self._observers: tuple[Observer, ...] = tuple(observers)
        self._pause_hooks: tuple[PauseHook, ...] = tuple(pause_hooks)
        self._bound: tuple[BaseChatModel, tuple[BaseTool, ...], Any] | None = None

    # -- wiring -----------------------------------------------------------------------
    @property
    def prices(self) -> Mapping[str, TokenPrice] | None:
        """Price overrides by model name, used to price every call of every run (with or
        without a USD budget); a ``usd_budget(prices=...)`` entry wins for its name."""
        return self._prices

    @prices.setter
    def prices(self, value: Mapping[str, TokenPrice] | None) -> None:
        # checked here, like usd_budget's, so a wrong entry fails before a paid call
        self._prices = _budget.checked_prices(value)

    def subscribe(self, callback: Observer) -> Callable[[], None]:
        """Add an observer for later runs; returns a function that removes it again."""
        self._observers = (*self._observers, callback)
        done = False

        def unsubscribe() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._observers = _without_one(self._observers, callback)

        return unsubscribe

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]:
        """Add a step-mode hook awaited at every pause point; returns its remover."""
        self._pause_hooks = (*self._pause_hooks, hook)
        done = False

        def remove() -> None:
            nonlocal done
            if done:
                return
            done = True
            self._pause_hooks = _without_one(self._pause_hooks, hook)

        return remove

    @property
    def observers(self) -> tuple[Observer, ...]:
        """The observers the next run will feed."""
        return self._observers

    # -- entry points -----------------------------------------------------------------
    async def arun(self, prompt_or_messages: str | Sequence[Any]) -> ToolLoopResult:
        """Run the loop on a prompt (with the config's system prompt) or on messages."""
        return await self._guarded(lambda: self._initial_messages(prompt_or_messages))

    def _initial_messages(self, prompt_or_messages: str | Sequence[Any]) -> list[BaseMessage]:
        if isinstance(prompt_or_messages, str):
            messages: list[BaseMessage] = []
            if self.config.system_prompt:
                messages.append(SystemMessage(self.config.system_prompt))
            messages.append(HumanMessage(prompt_or_messages))
            return messages
        return convert_to_messages(prompt_or_messages)

    def run(self, prompt_or_messages: str | Sequence[Any]) -> ToolLoopResult:
        """Synchronous :meth:`arun`; also works where an event loop already runs (notebooks).

        Runs reuse one event loop per calling thread (inside a running loop: one background
        loop), so a chat model whose client pools connections per loop keeps working across
        calls. The run sees a copy of the caller's context, USD budget included.
        """
        try:
            ctx = _budget.snapshot_context()
        except ExecutionError:
            # A bare thread while a budget is active elsewhere: the run reads the budget
            # again, fails closed the same way and records why (LoopFailed) for observers.
            ctx = contextvars.copy_context()
        return run_sync(lambda: self.arun(prompt_or_messages), ctx)

    # -- the loop ---------------------------------------------------------------------
    async def _execute_tool_loop(self, messages: Sequence[BaseMessage]) -> ToolLoopResult:
        """Drive the model through tool rounds and return the result (see module doc)."""
        return await self._guarded(lambda: list(messages))

    async def _guarded(self, build: Callable[[], list[BaseMessage]]) -> ToolLoopResult:
        """Check the setup, build the input messages and run the loop; on failure keep the
        partial state on the error. Setup problems surface as ``ToolLoopError`` too, before
        any model call."""
        run = _Run(self, [], self._observers)
        try:
            self.config.validate()
            self._check_tools()
            run.messages = build()
            return await self._loop(run)
        except ExecutionError as exc:
            self._close_open_calls(run, exc.reason, f"not run: {exc}")
            self._fail(run, exc, cancelled=False)
            exc._set_partial(**run.partial())
            raise
        except (asyncio.CancelledError, KeyboardInterrupt, SystemExit) as exc:
            self._close_open_calls(run, "cancelled", "the loop was stopped before this call ran")
            self._fail(run, exc, cancelled=True)
            raise
        except Exception as exc:
            self._close_open_calls(run, "loop_failed", "not run: the loop failed")
            self._fail(run, exc, cancelled=False)
            raise ToolLoopError(
                f"tool loop failed in round {run.round}: {type(exc).__name__}: {describe(exc)}",
                cause=exc,
                **run.partial(),
            ) from exc
        except BaseException as exc:
            # Not an Exception, yet not an interrupt either (a library's own control flow,
            # a tool's custom abort): it propagates as it is, but the run still ends with
            # every call answered and a final event.
            self._close_open_calls(
                run, "loop_failed", f"not run: the loop was stopped by {type(exc).__name__}"
            )
            self._fail(run, exc, cancelled=False)
            raise
        finally:
            run.release()

    def _bind(self, tools: tuple[BaseTool, ...]) -> Any:
        """The model with ``tools`` bound, reused while ``self.model`` and ``self.tools``
        stay the same objects."""
        cached = self._bound
        model = self.model
        if (
            cached is None
            or cached[0] is not model
            or len(cached[1]) != len(tools)
            or any(a is not b for a, b in zip(cached[1], tools, strict=True))
        ):
            runnable = model.bind_tools(list(tools)) if tools else model
            cached = self._bound = (model, tools, runnable)
        return cached[2]

    def _check_tools(self) -> None:
        names = [t.name for t in self.tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(
                f"tool names must be unique; repeated: {', '.join(duplicates)}", field="tools"
            )

    def _fail(self, run: _Run, exc: BaseException, *, cancelled: bool) -> None:
        run.emit(
            LoopFailed(
                run_id=run.run_id,
                round=run.round,
                t=run.now(),
                error_type=type(exc).__name__,
                error_kind=getattr(exc, "kind", None) if isinstance(exc, ExecutionError) else None,
                reason=getattr(exc, "reason", None) if isinstance(exc, ExecutionError) else None,
                message=describe(exc),
                cause_type=type(exc.__cause__).__name__ if exc.__cause__ else None,
                rounds=run.rounds_done,
                usage=run.usage,
                any_invocation_made=run.any_invocation,
                cancelled=cancelled,
            )
        )

    async def _loop(self, run: _Run) -> ToolLoopResult:
        cfg = self.config
        run.usd = _budget.current_usd_budget()
        run.release = _budget.hold(run.usd)  # in force until the run ends, block or not
        run.prices = _merged_prices(self._prices, _budget.current_prices())
        window, _source = _budget.resolve_context_window(cfg.context_window, self.model)
        token_budget = _budget.resolve_token_budget(
            cfg.token_budget_percent, cfg.context_window, self.model
        )
        run.token_limit = token_budget.limit if token_budget else None
        tools = {t.name: t for t in self.tools}
        model_name = model_name_of(self.model)
        if run.usd is not None:
            # Fail before spending anything: a call that cannot be priced cannot be capped.
            if not known_price(model_name, run.prices):
                raise self._unpriced(model_name)
            if self.pruning_model is not None and cfg.prune_tools:
                pruning_name = model_name_of(self.pruning_model)
                if not known_price(pruning_name, run.prices):
                    raise self._unpriced(pruning_name)
        bound = self._bind(self.tools)
        run.emit(
            LoopStarted(
                run_id=run.run_id,
                round=0,
                t=run.now(),
                model_name=model_name,
                tools=tuple(tools),
                max_rounds=cfg.tool_max_rounds,
                token_budget=run.token_limit,
                context_window=window,
                usd_limit=run.usd.limit_usd if run.usd else None,
                prune_tools=tuple(cfg.prune_tools),
                input_messages=len(run.messages),
                started_at=datetime.now(UTC).isoformat(),
            )
        )
        synthesis: SynthesisReason | None = None
        stuck_streak = 0
        all_stuck = True
        final: AIMessage | None = None
        for number in range(1, cfg.tool_max_rounds + 1):
            run.round = number
            run.emit(
                RoundStarted(
                    run_id=run.run_id, round=number, t=run.now(), max_rounds=cfg.tool_max_rounds
                )
            )
            reply = await self._call_model(run, bound, "round")
            if not reply.tool_calls and not reply.invalid_tool_calls:
                run.rounds_done = number
                final = reply
                break
            stuck = not reply.text.strip()
            stuck_streak = stuck_streak + 1 if stuck else 0
            all_stuck = all_stuck and stuck
            if run.token_tripped:
                outcomes = skipped_outcomes(
                    reply, "token_budget", "not run: the token budget is spent"
                )
            elif _truncated(reply):
                # A reply cut off by the output-token limit may hold half-parsed calls
                # (a streamed '{"path": "rep' parses as {"path": "rep"}): none of them runs.
                outcomes = skipped_outcomes(reply, "truncated", _TRUNCATED_TEXT)
            else:
                names = tuple(str(c.get("name") or "") for c in reply.tool_calls)
                await self._pause(run, "tool_dispatch", "tools", names)
                run.finished = {}
                outcomes = await dispatch(
                    reply, tools, timeout_s=cfg.tool_timeout_s, finished=run.finished
                )
                run.finished = {}
            first = len(run.messages)
            for outcome in outcomes:
                run.messages.append(outcome.message)
                self._emit_dispatch(run, outcome)
            if not run.token_tripped:
                await self._prune(run, outcomes, first)
            run.rounds_done = number
            if run.token_tripped:
                run.budget_exhausted = True
                synthesis = "token_budget"
                break
            if cfg.max_stuck_rounds is not None and stuck_streak >= cfg.max_stuck_rounds:
                synthesis = "stuck"
                break
        else:
            synthesis = "stuck" if all_stuck else "round_cap"

        if synthesis is not None:
            run.round = run.rounds_done + 1
            prompt = cfg.synthesis_prompt
            run.emit(
                SynthesisStarted(
                    run_id=run.run_id, round=run.round, t=run.now(), reason=synthesis, prompt=prompt
                )
            )
            run.messages.append(HumanMessage(prompt))
            final = await self._call_model(run, self.model, "synthesis")
            # A model may still ask for tools here; they are not run, but every call id
            # gets its ToolMessage so the transcript stays valid to continue.
            for outcome in skipped_outcomes(
                final, "synthesis", "not run: a final answer without tools was requested"
            ):
                run.messages.append(outcome.message)
                self._emit_dispatch(run, outcome)
        assert final is not None
        final_empty = _empty(final)
        final_truncated = _truncated(final)
        run.emit(
            LoopFinished(
                run_id=run.run_id,
                round=run.round,
                t=run.now(),
                final_text=final.text,
                rounds=run.rounds_done,
                usage=run.usage,
                budget_exhausted=run.budget_exhausted,
                synthesis_was_run=synthesis is not None,
                synthesis_reason=synthesis,
                final_empty=final_empty,
                final_truncated=final_truncated,
            )
        )
        return ToolLoopResult(
            final_response=final,
            messages=tuple(run.messages),
            events=tuple(run.events),
            usage=run.usage,
            rounds=run.rounds_done,
            budget_exhausted=run.budget_exhausted,
            synthesis_was_run=synthesis is not None,
            synthesis_reason=synthesis,
            run_id=run.run_id,
            final_empty=final_empty,
            final_truncated=final_truncated,
        )

    # -- pieces of a round ------------------------------------------------------------
    async def _pause(
        self,
        run: _Run,
        stage: Literal["model_call", "tool_dispatch"],
        purpose: str,
        detail: tuple[str, ...] = (),
    ) -> None:
        if not self._pause_hooks:
            return
        point = PausePoint(run.run_id, run.round, stage, purpose, detail)
        for hook in self._pause_hooks:
            await hook(point)

    def _unpriced(self, model_name: str | None) -> ExecutionError:
        return ExecutionError(
            f"A USD budget is set but model {model_name!r} has no known price; "
            "pass prices={...} to usd_budget().",
            kind="cost",
            reason="unpriced",
        )

    def _usd_gate_before(self, run: _Run) -> None:
        usd = run.usd
        if usd is None:
            return
        spent = run.usage.cost_usd
        if spent is None:
            raise self._unpriced(None)
        if spent >= usd.limit_usd:
            run.emit(
                BudgetGate(
                    run_id=run.run_id,
                    round=run.round,
                    t=run.now(),
                    gate="usd",
                    stage="before_call",
                    limit=usd.limit_usd,
                    spent=spent,
                    passed=False,
                )
            )
            raise ExecutionError(
                f"USD budget exhausted: spent ${spent} of ${usd.limit_usd} before the next call",
                kind="cost",
                reason="budget_exhausted",
            )

    def _gates_after(self, run: _Run, model_name: str | None) -> None:
        usd = run.usd
        if usd is not None:
            spent = run.usage.cost_usd
            if spent is None:
                raise self._unpriced(model_name)
            passed = spent <= usd.limit_usd
            run.emit(
                BudgetGate(
                    run_id=run.run_id,
                    round=run.round,
                    t=run.now(),
                    gate="usd",
                    stage="after_call",
                    limit=usd.limit_usd,
                    spent=spent,
                    passed=passed,
                )
            )
            if not passed:
                raise ExecutionError(
                    f"USD budget exhausted: spent ${spent} of ${usd.limit_usd}",
                    kind="cost",
                    reason="budget_exhausted",
                )
        if run.token_limit is not None:
            spent_tokens = run.usage.total_tokens
            passed = spent_tokens <= run.token_limit
            run.emit(
                BudgetGate(
                    run_id=run.run_id,
                    round=run.round,
                    t=run.now(),
                    gate="token",
                    stage="after_call",
                    limit=Decimal(run.token_limit),
                    spent=Decimal(spent_tokens),
                    passed=passed,
                )
            )
            if not passed:
                run.token_tripped = True

    def _price(self, run: _Run, usage: Usage, *names: str | None) -> Usage:
        return usage.with_cost(call_cost(usage, names, run.prices))

    async def _call_model(
        self, run: _Run, runnable: Any, purpose: Literal["round", "synthesis"]
    ) -> AIMessage:
        await self._pause(run, "model_call", purpose)
        self._usd_gate_before(run)
        prompt = list(run.messages)
        run.any_invocation = True
        started = time.perf_counter()
        reply = await runnable.ainvoke(prompt)
        latency = time.perf_counter() - started
        if not isinstance(reply, AIMessage):
            raise TypeError(f"model returned {type(reply).__name__}, not an AIMessage")
        reply = normalize_tool_call_ids(reply, run.tool_call_ids())
        # Paid for, so it belongs to the transcript even if a gate below raises.
        run.messages.append(reply)
        model_name = model_name_of(self.model, reply.response_metadata)
        usage = self._price(
            run, Usage.from_ai_message(reply, prompt=prompt), model_name, model_name_of(self.model)
        )
        run.usage = run.usage + usage
        views = tuple(_call_view(c) for c in reply.tool_calls) + tuple(
            ToolCallView(
                _text_or_empty(c.get("id")),
                _text_or_empty(c.get("name")),
                {"raw": c.get("args")},
                False,
                c.get("error") if isinstance(c.get("error"), str) else None,
            )
            for c in reply.invalid_tool_calls
        )
        run.emit(
            ModelCalled(
                run_id=run.run_id,
                round=run.round,
                t=run.now(),
                purpose=purpose,
                model_name=model_name,
                usage=usage,
                accumulated=run.usage,
                latency_s=latency,
                text=reply.text,
                tool_calls=views,
                finish_reason=_finish_reason(reply.response_metadata),
                stuck=bool(views) and not reply.text.strip(),
                empty=_empty(reply),
                truncated=_truncated(reply),
            )
        )
        self._gates_after(run, model_name)
        return reply

    async def _prune(self, run: _Run, outcomes: list[DispatchOutcome], first: int) -> None:
        """Shorten large outputs of ``prune_tools``; their messages sit at ``first + i``."""
        cfg = self.config
        model = self.pruning_model
        if model is None or not cfg.prune_tools:
            return
        todo = [
            i
            for i, o in enumerate(outcomes)
            if o.status == "success"
            and o.name in cfg.prune_tools
            and len(str(o.message.content)) > cfg.prune_min_chars
        ]
        if not todo:
            return
        await self._pause(run, "model_call", "pruning")
        self._usd_gate_before(run)
        request = _first_human_text(run.messages)
        run.any_invocation = True
        # return_exceptions: a failed pruning call must neither orphan its siblings nor
        # lose their spend; the first failure is raised once every success is counted.
        results = await asyncio.gather(
            *(
                prune_output(
                    model,
                    outcomes[i].name,
                    str(outcomes[i].message.content),
                    instruction=cfg.pruning_prompt,
                    request=request,
                )
                for i in todo
            ),
            return_exceptions=True,
        )
        pruning_name = model_name_of(model)
        failure: BaseException | None = None
        for i, res in zip(todo, results, strict=True):
            if isinstance(res, BaseException):
                failure = failure or res
                continue
            name = model_name_of(model, res.reply.response_metadata) or pruning_name
            usage = self._price(run, res.usage, name, pruning_name)
            run.usage = run.usage + usage
            original = outcomes[i].message
            run.emit(
                Pruned(
                    run_id=run.run_id,
                    round=run.round,
                    t=run.now(),
                    tool_call_id=original.tool_call_id,
                    tool_name=outcomes[i].name,
                    model_name=name,
                    tokens_before=res.tokens_before,
                    tokens_after=res.tokens_after,
                    usage=usage,
                    latency_s=res.latency_s,
                    original=str(original.content),
                    pruned=res.pruned,
                )
            )
            message = original.model_copy(
                update={
                    "content": res.pruned,
                    "artifact": {
                        "original": original.content,
                        "artifact": original.artifact,
                        "pruned": True,
                    },
                }
            )
            run.messages[first + i] = message
        if failure is not None:
            raise failure
        self._gates_after(run, pruning_name)

    def _emit_dispatch(self, run: _Run, outcome: DispatchOutcome) -> None:
        content = str(outcome.message.content)
        run.emit(
            ToolDispatched(
                run_id=run.run_id,
                round=run.round,
                t=run.now(),
                tool_call_id=outcome.message.tool_call_id,
                name=outcome.name,
                args=outcome.args,
                status=outcome.status,
                error_reason=outcome.error_reason,
                duration_s=outcome.duration_s,
                output_chars=len(content),
                content=content,
            )
        )

    def _close_open_calls(self, run: _Run, reason: str, text: str) -> None:
        """Answer tool calls left open by a stop, so the transcript stays resumable."""
        answered = {m.tool_call_id for m in run.messages if isinstance(m, ToolMessage)}
        for message in reversed(run.messages):
            if isinstance(message, AIMessage):
                for skipped in skipped_outcomes(message, reason, text):
                    call_id = skipped.message.tool_call_id
                    if call_id in answered:
                        continue
                    # a call that finished before the stop ran: its real result is kept
                    outcome = run.finished.get(call_id, skipped)
                    run.messages.append(outcome.message)
                    self._emit_dispatch(run, outcome)
                break
        run.finished = {}


def _tool_call_ids(messages: Sequence[BaseMessage]) -> set[str]:
    """Every tool-call id already in a transcript (asked for or answered)."""
    ids: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            ids.add(message.tool_call_id)
        elif isinstance(message, AIMessage):
            for call in (*message.tool_calls, *message.invalid_tool_calls):
                if call.get("id"):
                    ids.add(str(call.get("id")))
    return ids


def _without_one(items: tuple[Any, ...], item: Any) -> tuple[Any, ...]:
    """``items`` without the last occurrence of ``item`` (identity)."""
    for i in range(len(items) - 1, -1, -1):
        if items[i] is item:
            return items[:i] + items[i + 1 :]
    return items


def _first_human_text(messages: Sequence[BaseMessage]) -> str:
    for message in messages:
        if isinstance(message, HumanMessage):
            return message.text
    return ""


_TRUNCATED_TEXT: Final = (
    "not run: the reply was cut off by the output-token limit, so this call's arguments "
    "may be incomplete. Make the call again (shorter, or fewer calls at once)."
)
_FINISH_KEYS: Final = ("finish_reason", "stop_reason", "stopReason", "done_reason")
"""Where providers put why a reply ended (OpenAI, Anthropic, Bedrock, Ollama)."""
_LENGTH_STOPS: Final = frozenset({"length", "max_tokens", "max_output_tokens"})
"""Finish reasons meaning "cut off by the output-token limit", lower-cased."""


def _finish_reason(meta: Mapping[str, Any]) -> str | None:
    """Why the provider says the reply ended, as it spells it."""
    for key in _FINISH_KEYS:
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value
    details = meta.get("incomplete_details")  # OpenAI Responses API
    reason = details.get("reason") if isinstance(details, Mapping) else None
    return reason if isinstance(reason, str) and reason else None


def _truncated(reply: AIMessage) -> bool:
    """The provider cut the reply off at its output-token limit."""
    reason = _finish_reason(reply.response_metadata)
    return reason is not None and reason.lower() in _LENGTH_STOPS


def _empty(reply: AIMessage) -> bool:
    """No text a person can read and no tool call (a thinking-only reply is empty too)."""
    return not reply.text.strip() and not reply.tool_calls and not reply.invalid_tool_calls


def _text_or_empty(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _call_view(call: ToolCall) -> ToolCallView:
    """A tool call as the model asked for it; odd names or arguments are shown, not trusted."""
    args: Any = call.get("args")
    return ToolCallView(
        _text_or_empty(call.get("id")),
        _text_or_empty(call.get("name")),
        args if isinstance(args, Mapping) else {"raw": args},
    )


def _merged_prices(
    agent: Mapping[str, TokenPrice] | None, budget: Mapping[str, TokenPrice] | None
) -> Mapping[str, TokenPrice] | None:
    """The agent's prices with the budget's on top (name by name)."""
    if not agent:
        return budget
    if not budget:
        return agent
    return MappingProxyType({**agent, **budget})
