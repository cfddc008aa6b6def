"""Budgets: the token budget from the config, and the USD budget held in ContextVars.

The USD budget is set only through :func:`usd_budget`, a context manager that resets the
ContextVar on exit, so nothing leaks to the caller. Its price overrides hold with or
without a limit (``usd_budget(None, prices=...)``); :func:`current_prices` reads them.
Asyncio tasks and ``asyncio.to_thread`` copy the context and see the budget. A bare thread
does not: rather than read that as "no limit", :func:`current_usd_budget` fails closed
while any budget is active elsewhere in the process, unless the thread says so explicitly
with ``usd_budget(None)``.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, Final, Literal

from toolloop_lab._spend.pricing import TokenPrice, call_price, known_price, to_decimal_usd
from toolloop_lab._spend.usage import Usage, format_usd
from toolloop_lab.errors import ConfigurationError, ExecutionError

DEFAULT_CONTEXT_WINDOW: Final = 128_000
"""Context window assumed when neither the config nor the model's profile gives one."""


@dataclass(frozen=True, slots=True)
class UsdBudget:
    """A USD limit for each loop run inside a :func:`usd_budget` block."""

    limit_usd: Decimal
    prices: Mapping[str, TokenPrice] | None = None


class _NoBudget:
    """Explicit "no USD limit here", set by ``usd_budget(None)``, with its price overrides."""

    __slots__ = ("prices",)

    def __init__(self, prices: Mapping[str, TokenPrice] | None = None) -> None:
        self.prices = prices


_NO_BUDGET: Final = _NoBudget()
_BUDGET: ContextVar[UsdBudget | _NoBudget | None] = ContextVar(
    "toolloop_lab_usd_budget", default=None
)
_active_lock = threading.Lock()
_active_by_thread: dict[int, int] = {}


def checked_prices(prices: Any) -> Mapping[str, TokenPrice] | None:
    """A read-only copy of ``prices`` (``None`` when empty); a wrong entry raises
    ``ConfigurationError(field="prices")`` here, not after a paid call."""
    if not prices:
        return None
    if not isinstance(prices, Mapping):
        raise ConfigurationError(
            f"prices must map model names to TokenPrice, got {type(prices).__name__}",
            field="prices",
        )
    for name, price in prices.items():
        if not isinstance(name, str) or not name or not isinstance(price, TokenPrice):
            raise ConfigurationError(
                f"prices must map model names to TokenPrice, got {name!r}: {type(price).__name__}",
                field="prices",
            )
    return MappingProxyType(dict(prices))


@contextmanager
def usd_budget(
    limit_usd: float | Decimal | str | None, *, prices: Mapping[str, TokenPrice] | None = None
) -> Iterator[UsdBudget | None]:
    """Cap the USD spend of every loop run inside the block (per loop run).

    ``prices`` overrides genai-prices (and an agent's own ``prices``) for the model names it
    holds, with or without a limit. ``usd_budget(None)`` declares "no limit" explicitly,
    which a bare worker thread needs while a budget is active elsewhere.
    """
    budget: UsdBudget | None
    frozen_prices = checked_prices(prices)
    if limit_usd is None:
        budget = None
        token = _BUDGET.set(_NoBudget(frozen_prices) if frozen_prices else _NO_BUDGET)
    else:
        budget = UsdBudget(to_decimal_usd(limit_usd), frozen_prices)
        token = _BUDGET.set(budget)
    release = hold(budget)
    try:
        yield budget
    finally:
        try:
            _BUDGET.reset(token)
        finally:
            release()  # even if the reset fails (exited from another context)


def hold(budget: UsdBudget | None) -> Callable[[], None]:
    """Mark ``budget`` as in force on this thread until the returned function is called.

    A ``usd_budget`` block holds its budget while it is open, and a loop run holds the
    budget it started under until it ends, even when the block has closed meanwhile (a
    task created inside it): as long as either is true, a bare thread fails closed.
    Releasing twice is harmless; ``None`` holds nothing.
    """
    if budget is None:
        return _nothing
    ident = threading.get_ident()
    with _active_lock:
        _active_by_thread[ident] = _active_by_thread.get(ident, 0) + 1
    released = False

    def release() -> None:
        nonlocal released
        with _active_lock:
            if released:
                return
            released = True
            left = _active_by_thread.get(ident, 0) - 1
            if left > 0:
                _active_by_thread[ident] = left
            else:
                _active_by_thread.pop(ident, None)

    return release


def _nothing() -> None:
    return None


def current_usd_budget() -> UsdBudget | None:
    """The budget in force here, or ``None`` for "no limit".

    Raises ``ExecutionError(kind="cost", reason="budget_unavailable")`` when this context
    never saw a budget but another thread has one active: a bare thread must not read that
    as "no limit".
    """
    value = _BUDGET.get()
    if isinstance(value, UsdBudget):
        return value
    if isinstance(value, _NoBudget):
        return None
    ident = threading.get_ident()
    with _active_lock:
        elsewhere = any(n > 0 for t, n in _active_by_thread.items() if t != ident)
    if elsewhere:
        raise ExecutionError(
            "A USD budget is active in another thread but not in this context; "
            "run this code with contextvars.copy_context() or declare usd_budget(None).",
            kind="cost",
            reason="budget_unavailable",
        )
    return None


def current_prices() -> Mapping[str, TokenPrice] | None:
    """The price overrides of the innermost ``usd_budget`` block here, limit or not."""
    value = _BUDGET.get()
    if isinstance(value, (UsdBudget, _NoBudget)):
        return value.prices
    return None


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """The token budget of one loop: ``percent`` % of ``context_window``."""

    limit: int
    percent: float
    context_window: int
    source: str
    """Where the context window came from: "config", "profile" or "default"."""


def resolve_context_window(context_window: int | None, model: Any) -> tuple[int, str]:
    """The window from the config, else the model profile's ``max_input_tokens``, else the
    documented default, with where it came from ("config", "profile" or "default")."""
    if isinstance(context_window, int) and context_window > 0:
        return context_window, "config"
    profile = getattr(model, "profile", None)
    window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window, "profile"
    return DEFAULT_CONTEXT_WINDOW, "default"


def resolve_token_budget(
    percent: float | None, context_window: int | None, model: Any
) -> TokenBudget | None:
    """``percent`` % of the resolved context window, or ``None`` when no budget is set."""
    if percent is None:
        return None
    window, source = resolve_context_window(context_window, model)
    return TokenBudget(int(window * percent / 100), percent, window, source)


def snapshot_context() -> contextvars.Context:
    """A copy of the current context with the USD budget resolved explicitly.

    Run work for this caller in another thread with ``snapshot_context().run(...)``: the
    thread then sees exactly the caller's budget, or an explicit "no limit".
    """
    budget = current_usd_budget()
    ctx = contextvars.copy_context()
    if budget is None and not isinstance(_BUDGET.get(), _NoBudget):
        ctx.run(_BUDGET.set, _NO_BUDGET)
    return ctx


def caller_context() -> contextvars.Context:
    """The context a sync run started by this caller sees (``agent.run``, ``Fork.run``):
    :func:`snapshot_context`, or, in a bare thread while a budget is active elsewhere, a
    plain copy: the run then reads the budget again, fails closed the same way and records
    why (``LoopFailed``) for observers."""
    try:
        return snapshot_context()
    except ExecutionError:
        return contextvars.copy_context()


@dataclass(frozen=True, slots=True)
class GateCheck:
    """One budget check's figures; the loop turns it into a ``BudgetGate`` event, whose
    fields these are."""

    gate: Literal["token", "usd"]
    stage: Literal["before_call", "after_call"]
    limit: Decimal
    spent: Decimal
    passed: bool


GateSink = Callable[[GateCheck], None]
"""Where a run's gate checks go (the loop emits each as an event, in order)."""


def unpriced_error(model_name: str | None) -> ExecutionError:
    """The error for a USD budget over a model nobody can price, saying how to fix it."""
    if model_name is None:
        text = (
            "A USD budget is set but the model declares no name, so it cannot be priced. "
            "Give it one (most chat models take model_name=... or model=...), then price it "
            "with prices={name: TokenPrice(...)} on usd_budget() or LLMAgent."
        )
    else:
        text = (
            f"A USD budget is set but model {model_name!r} has no known price; pass "
            f"prices={{{model_name!r}: TokenPrice(...)}} to usd_budget() or LLMAgent."
        )
    return ExecutionError(text, kind="cost", reason="unpriced")


@dataclass(slots=True)
class RunBudget:
    """Every budget of one run, resolved once when it starts: the token limit, the USD
    limit, the prices and the context window. The loop's gates each call one method.

    Like pydantic-ai's ``UsageLimits.check_before_request`` / ``check_tokens``: the checks
    read the run's spend so far and either pass, report, or raise. Tripping the token
    budget does not raise: it sets :attr:`token_tripped`, and the loop runs synthesis.
    """

    usd: UsdBudget | None
    token: TokenBudget | None
    context_window: int
    window_source: str
    prices: Mapping[str, TokenPrice] | None
    """The agent's prices with the ``usd_budget`` block's on top, by model name."""
    token_tripped: bool = False
    release: Callable[[], None] = field(default=lambda: None)
    """Ends this run's hold on its USD budget (see :func:`hold`)."""

    @classmethod
    def resolve(
        cls,
        *,
        percent: float | None,
        context_window: int | None,
        model: Any,
        agent_prices: Mapping[str, TokenPrice] | None,
    ) -> RunBudget:
        """Read the USD budget in force here and resolve the token budget for ``model``;
        the run holds its USD budget until :attr:`release` is called."""
        usd = current_usd_budget()
        window, source = resolve_context_window(context_window, model)
        budget = cls(
            usd=usd,
            token=resolve_token_budget(percent, context_window, model),
            context_window=window,
            window_source=source,
            prices=_merged(agent_prices, current_prices()),
        )
        budget.release = hold(usd)
        return budget

    @property
    def token_limit(self) -> int | None:
        """The token limit, or ``None`` without a token budget."""
        return self.token.limit if self.token else None

    @property
    def usd_limit(self) -> Decimal | None:
        """The USD limit, or ``None`` without a USD budget."""
        return self.usd.limit_usd if self.usd else None

    def require_price(self, model_name: str | None) -> None:
        """Under a USD budget, refuse (before anything is spent) a model nobody can price:
        a call that cannot be priced cannot be capped."""
        if self.usd is not None and not known_price(model_name, self.prices):
            raise unpriced_error(model_name)

    def price(self, usage: Usage, *names: str | None) -> Usage:
        """``usage`` with its cost, priced by the first of ``names`` anybody can price."""
        return usage.with_cost(call_price(usage, names, self.prices))

    def before_call(self, spent: Usage, sink: GateSink) -> None:
        """Before a model call: a USD budget already spent stops the run here."""
        usd = self.usd
        if usd is None:
            return
        cost = spent.cost_usd
        if cost is None:
            raise unpriced_error(None)
        if cost >= usd.limit_usd:
            sink(GateCheck("usd", "before_call", usd.limit_usd, cost, passed=False))
            raise ExecutionError(
                f"USD budget exhausted: spent {format_usd(cost, exact=True)} of "
                f"{format_usd(usd.limit_usd, exact=True)} before the next call",
                kind="cost",
                reason="budget_exhausted",
            )

    def after_call(self, spent: Usage, model_name: str | None, sink: GateSink) -> None:
        """After a model call: check both budgets against the spend so far. A USD budget
        exceeded raises; a token budget exceeded sets :attr:`token_tripped`."""
        usd = self.usd
        if usd is not None:
            cost = spent.cost_usd
            if cost is None:
                raise unpriced_error(model_name)
            passed = cost <= usd.limit_usd
            sink(GateCheck("usd", "after_call", usd.limit_usd, cost, passed))
            if not passed:
                raise ExecutionError(
                    f"USD budget exhausted: spent {format_usd(cost, exact=True)} of "
                    f"{format_usd(usd.limit_usd, exact=True)}",
                    kind="cost",
                    reason="budget_exhausted",
                )
        limit = self.token_limit
        if limit is not None:
            passed = spent.total_tokens <= limit
            sink(
                GateCheck(
                    "token", "after_call", Decimal(limit), Decimal(spent.total_tokens), passed
                )
            )
            self.token_tripped = self.token_tripped or not passed


def _merged(
    agent: Mapping[str, TokenPrice] | None, block: Mapping[str, TokenPrice] | None
) -> Mapping[str, TokenPrice] | None:
    """The agent's prices with the budget block's on top (name by name)."""
    if not agent:
        return block
    if not block:
        return agent
    return MappingProxyType({**agent, **block})
