"""Given/When steps for the project's own features (dispatch, budgets, events, synthesis).

A scenario describes an agent ("a lab agent with the tools ..."), a script for the real
``ScriptedChatModel`` and optional budgets; the When step builds everything fresh and runs
the real ``LLMAgent``. State lives on ``context.lab`` so it never mixes with the spec's
steps in tool_loop_steps.py. Tools that coordinate through ``asyncio.Event`` are built per
run, inside the run's own event loop.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

from behave import given, when
from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, invalid_call, reference_cost, tool_call

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    TokenPrice,
    ToolLoopResult,
    usd_budget,
)
from toolloop_lab.errors import ExecutionError, ToolLoopError
from toolloop_lab.events import Event

DEFAULT_MODEL = MODEL


@dataclass
class LabRun:
    """One scenario's agent description, script and outcome."""

    tool_names: list[str]
    config: dict[str, Any] = field(default_factory=dict)
    script: list[tuple[str, Any]] = field(default_factory=list)
    tokens: tuple[int, int] = (10, 5)
    model_name: str = DEFAULT_MODEL
    profile: dict[str, int] | None = None
    usd_limit: Decimal | None = None
    usd_calls: int | None = None
    prices: dict[str, TokenPrice] = field(default_factory=dict)
    pruning: tuple[str, int, int] | None = None
    raising_observer: bool = False
    # outcome
    model: ScriptedChatModel | None = None
    pruning_model: ScriptedChatModel | None = None
    replies: list[AIMessage] = field(default_factory=list)
    result: ToolLoopResult | None = None
    error: BaseException | None = None
    events: list[Event] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    others: list[LabRun] = field(default_factory=list)
    warnings: list[logging.LogRecord] = field(default_factory=list)


class _Collect(logging.Handler):
    """Keeps the loop's log records for the Then steps (and out of the console)."""

    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.WARNING)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _reply(kind: str, payload: Any, tokens: tuple[int, int]) -> Any:
    if kind == "final":
        return final(payload, tokens)
    if kind == "fail":
        return RuntimeError(payload)
    text, rows = payload
    valid: list[ToolCall] = []
    invalid: list[InvalidToolCall] = []
    for row in rows:
        try:
            args = json.loads(row["args"])
        except json.JSONDecodeError:
            invalid.append(invalid_call(row["tool"], row["args"], row["id"]))
            continue
        valid.append(tool_call(row["tool"], args, row["id"]))
    return calls(*valid, text=text, tokens=tokens, invalid=invalid)


def _tools(lab: LabRun) -> list[BaseTool]:
    """The named tools, fresh for this run (their events bind to the running loop)."""
    ping_started, pong_started, second_done = asyncio.Event(), asyncio.Event(), asyncio.Event()
    never = asyncio.Event()

    @tool
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(reason)

    @tool
    async def ping() -> str:
        """Waits until pong has started."""
        ping_started.set()
        await pong_started.wait()
        return "ping saw pong"

    @tool
    async def pong() -> str:
        """Waits until ping has started."""
        pong_started.set()
        await ping_started.wait()
        return "pong saw ping"

    @tool
    async def slow_first() -> str:
        """Finishes only after fast_second."""
        await second_done.wait()
        lab.finished.append("slow_first")
        return "slow"

    @tool
    async def fast_second() -> str:
        """Finishes at once."""
        lab.finished.append("fast_second")
        second_done.set()
        return "fast"

    @tool
    def report() -> dict[str, Any]:
        """A structured, non-string result."""
        return {"zeta": {3, 1, 2}, "alpha": Decimal("0.10"), "day": date(2024, 1, 2)}

    @tool
    def fetch(size: int) -> str:
        """Return ``size`` characters."""
        return "x" * size

    @tool
    async def wait_forever() -> str:
        """Blocks until the run is cancelled."""
        lab.finished.append("wait_forever started")
        await never.wait()
        return "unreachable"

    every = (echo, add, explode, ping, pong, slow_first, fast_second, report, fetch, wait_forever)
    known = {t.name: t for t in every}
    return [known[name] for name in lab.tool_names]


def _build(lab: LabRun) -> LLMAgent:
    lab.replies = [_reply(kind, payload, lab.tokens) for kind, payload in lab.script]
    lab.model = ScriptedChatModel(lab.replies, model_name=lab.model_name, profile=lab.profile)
    if lab.pruning is not None:
        text, inp, out = lab.pruning
        lab.pruning_model = ScriptedChatModel([final(text, (inp, out))], model_name=DEFAULT_MODEL)
    observers: list[Any] = []
    if lab.raising_observer:

        def raising(event: Event) -> None:
            raise RuntimeError(f"observer failed on {event.kind}")

        observers.append(raising)
    observers.append(lab.events.append)
    return LLMAgent(
        lab.model,
        _tools(lab),
        AgentConfig(**lab.config),
        pruning_model=lab.pruning_model,
        observers=observers,
    )


def _limit(lab: LabRun) -> Decimal | None:
    if lab.usd_calls is None:
        return lab.usd_limit
    priced = [r for r in lab.replies if isinstance(r, AIMessage)][: lab.usd_calls]
    counts = [
        (r.usage_metadata["input_tokens"], r.usage_metadata["output_tokens"])
        for r in priced
        if r.usage_metadata
    ]
    return reference_cost(counts, lab.model_name)


async def _run(lab: LabRun) -> None:
    agent = _build(lab)
    limit = _limit(lab)
    logger = logging.getLogger("toolloop_lab")
    handler = _Collect(lab.warnings)
    logger.addHandler(handler)
    propagate, logger.propagate = logger.propagate, False
    try:
        if limit is None:
            lab.result = await agent.arun("Please help.")
        else:
            with usd_budget(limit, prices=lab.prices or None):
                lab.result = await agent.arun("Please help.")
    except (ExecutionError, ToolLoopError) as exc:
        lab.error = exc
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


# -- Given ------------------------------------------------------------------------------
@given('a lab agent with the tools "{names}"')
def step_lab_agent(context: Any, names: str) -> None:
    context.lab = LabRun([n.strip() for n in names.split(",") if n.strip()])


@given("the lab agent config sets {key} to {value}")
def step_lab_config(context: Any, key: str, value: str) -> None:
    parsed = json.loads(value)
    context.lab.config[key] = tuple(parsed) if isinstance(parsed, list) else parsed


@given("the scripted model asks in one reply for")
def step_lab_asks(context: Any) -> None:
    rows = [{h: row[h] for h in context.table.headings} for row in context.table]
    texts = {row.get("text", "") for row in rows}
    context.lab.script.append(("calls", (max(texts, key=len), rows)))


@given('the scripted model then answers "{text}"')
def step_lab_answers(context: Any, text: str) -> None:
    context.lab.script.append(("final", text))


@given('the scripted model then fails with "{message}"')
def step_lab_fails(context: Any, message: str) -> None:
    context.lab.script.append(("fail", message))


@given("every scripted reply reports {inp:d} input and {out:d} output tokens")
def step_lab_tokens(context: Any, inp: int, out: int) -> None:
    context.lab.tokens = (inp, out)


@given('the scripted model is named "{name}"')
def step_lab_model_name(context: Any, name: str) -> None:
    context.lab.model_name = name


@given("the scripted model's profile gives a context window of {n:d} tokens")
def step_lab_profile(context: Any, n: int) -> None:
    context.lab.profile = {"max_input_tokens": n}


@given('a pruning model that answers "{text}" reporting {inp:d} input and {out:d} output tokens')
def step_lab_pruning(context: Any, text: str, inp: int, out: int) -> None:
    context.lab.pruning = (text, inp, out)


@given("a USD budget of {amount} dollars")
def step_lab_usd(context: Any, amount: str) -> None:
    context.lab.usd_limit = Decimal(amount)


@given('a USD price of {inp} and {out} dollars per million tokens for "{model}"')
def step_lab_price(context: Any, inp: str, out: str, model: str) -> None:
    context.lab.prices[model] = TokenPrice(Decimal(inp), Decimal(out))


@given("an observer that raises on every event")
def step_lab_raising_observer(context: Any) -> None:
    context.lab.raising_observer = True


# -- When -------------------------------------------------------------------------------
@when("the lab agent runs")
def step_lab_runs(context: Any) -> None:
    asyncio.run(_run(context.lab))


@when('the lab agent run is cancelled while "{name}" is running')
def step_lab_cancelled(context: Any, name: str) -> None:
    lab: LabRun = context.lab

    async def cancel_midway() -> None:
        agent = _build(lab)
        task = asyncio.create_task(agent.arun("Please help."))
        while f"{name} started" not in lab.finished:
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:
            lab.error = exc

    asyncio.run(cancel_midway())


@when("two lab agents run at once, with USD budgets covering {a:d} and {b:d} calls")
def step_lab_two_at_once(context: Any, a: int, b: int) -> None:
    template: LabRun = context.lab
    runs = []
    for covered in (a, b):
        run = LabRun(
            template.tool_names,
            dict(template.config),
            list(template.script),
            template.tokens,
            template.model_name,
            usd_calls=covered,
        )
        runs.append(run)

    async def both() -> None:
        await asyncio.gather(*(_run(r) for r in runs))

    asyncio.run(both())
    template.others = runs
