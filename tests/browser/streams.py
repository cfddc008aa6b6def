"""Event streams built from the event dataclasses, for the widget's tests.

The widget must render streams of the new contract (``model_call_start``, ``model_delta``,
``tool_start``, ``tool_dispatch(ran=False)``, ``intervention``, outcomes) and old traces
without start events alike. :class:`Stream` writes either kind, with a clock the caller
moves, so a test says exactly what a run did and when.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from loopkit import ALL, PAYLOADS

from toolloop_lab import Usage
from toolloop_lab._stream import message_dicts
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab.events import (
    BudgetGate,
    Event,
    Intervention,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallFailed,
    ModelCallStarted,
    ModelDelta,
    Paused,
    Pruned,
    RoundStarted,
    SynthesisStarted,
    ToolCallView,
    ToolDispatched,
    ToolStarted,
)

__all__ = ["Stream", "ToolSpec", "four_round_run", "hostile_run", "long_run", "sample_run"]

MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class ToolSpec:
    """One tool call of a round and what came of it."""

    id: str
    name: str
    args: dict[str, Any]
    content: str = "ok"
    duration: float = 0.05
    status: Literal["success", "error", "cancelled"] = "success"
    ran: bool = True
    reason: str | None = None


@dataclass
class Stream:
    """Builds one run's events; ``modern=False`` writes the old contract (no start events)."""

    run_id: str = "a1b2c3d4e5f6"
    modern: bool = True
    t: float = 0.0
    events: list[Event] = field(default_factory=list)
    spent: Usage = field(default_factory=Usage)
    calls: int = 0
    pending: list[BaseMessage] = field(default_factory=list)

    def _base(self, round: int) -> dict[str, Any]:
        return {"run_id": self.run_id, "round": round, "t": round_t(self.t)}

    def start(
        self,
        prompt: str,
        *,
        system: str | None = "You are a careful analyst.",
        tools: Sequence[str] = ("file_read", "echo"),
        max_rounds: int | None = 6,
        token_budget: int | None = None,
        context_window: int | None = 128_000,
        usd_limit: Decimal | None = None,
        started_at: str = "2025-01-01T00:00:00+00:00",
        **more: Any,
    ) -> Stream:
        """The start event; ``more`` are further ``LoopStarted`` fields (``name``,
        ``parent_run_id``, ``parent_tool_call_id``, ``tags``...)."""
        self.pending = [*([SystemMessage(system)] if system else []), HumanMessage(prompt)]
        self.events.append(
            LoopStarted(
                **self._base(0),
                model_name=MODEL,
                tools=tuple(tools),
                max_rounds=max_rounds,
                token_budget=token_budget,
                context_window=context_window,
                usd_limit=usd_limit,
                prune_tools=(),
                input_messages=len(self.pending),
                started_at=started_at,
                **more,
            )
        )
        return self

    def round_start(self, n: int, max_rounds: int | None = 6) -> Stream:
        self.events.append(RoundStarted(**self._base(n), max_rounds=max_rounds))
        return self

    def call_start(
        self, n: int, purpose: Literal["round", "synthesis"] = "round", streaming: bool = False
    ) -> int:
        self.calls += 1
        if self.modern:
            self.events.append(
                ModelCallStarted(
                    **self._base(n),
                    call=self.calls,
                    purpose=purpose,
                    model_name=MODEL,
                    tools=("file_read", "echo") if purpose == "round" else (),
                    messages=message_dicts(self.pending),
                    streaming=streaming,
                )
            )
        self.pending = []
        return self.calls

    def delta(self, n: int, text: str) -> Stream:
        if self.modern:
            self.events.append(ModelDelta(**self._base(n), call=self.calls, text=text))
        return self

    def call_failed(self, n: int, error_type: str, message: str, *, latency: float) -> Stream:
        """The model call last started fails after ``latency`` seconds."""
        self.t += latency
        self.events.append(
            ModelCallFailed(
                **self._base(n),
                call=self.calls,
                purpose="round",
                error_type=error_type,
                message=message,
                latency_s=latency,
            )
        )
        return self

    def call_end(
        self,
        n: int,
        text: str,
        tools: Sequence[ToolSpec] = (),
        *,
        tokens: tuple[int, int] = (1000, 50),
        cost: Decimal | None = Decimal("0.000180"),
        latency: float = 0.8,
        purpose: Literal["round", "synthesis"] = "round",
        truncated: bool = False,
    ) -> Stream:
        usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1], requests=1, cost_usd=cost)
        self.spent = self.spent + usage
        views = tuple(ToolCallView(id=s.id, name=s.name, args=s.args) for s in tools)
        self.events.append(
            ModelCalled(
                **self._base(n),
                purpose=purpose,
                model_name=MODEL,
                usage=usage,
                accumulated=self.spent,
                latency_s=latency,
                text=text,
                tool_calls=views,
                finish_reason="length" if truncated else ("tool_calls" if tools else "stop"),
                stuck=False,
                truncated=truncated,
                call=self.calls if self.modern else 0,
            )
        )
        calls = [{"name": s.name, "args": s.args, "id": s.id, "type": "tool_call"} for s in tools]
        self.pending.append(AIMessage(text, tool_calls=calls))
        return self

    def tool_begin(self, n: int, spec: ToolSpec) -> Stream:
        if self.modern and spec.ran:
            self.events.append(
                ToolStarted(**self._base(n), tool_call_id=spec.id, name=spec.name, args=spec.args)
            )
        return self

    def tool_end(self, n: int, spec: ToolSpec) -> Stream:
        self.events.append(
            ToolDispatched(
                **self._base(n),
                tool_call_id=spec.id,
                name=spec.name,
                args=spec.args,
                status=spec.status,
                error_reason=spec.reason,
                duration_s=spec.duration if spec.ran else 0.0,
                output_chars=len(spec.content) if spec.ran else 0,
                content=spec.content,
                ran=spec.ran,
            )
        )
        status = "error" if spec.status == "cancelled" else spec.status
        self.pending.append(
            ToolMessage(spec.content, tool_call_id=spec.id, name=spec.name, status=status)
        )
        return self

    def pause(
        self, n: int, stage: Literal["model_call", "tool_dispatch"], purpose: str, held: float
    ) -> Stream:
        """A pause hook holds the loop ``held`` seconds; the loop goes on at the new time."""
        self.t += held
        self.events.append(Paused(**self._base(n), stage=stage, purpose=purpose, paused_s=held))
        return self

    def pruned(self, n: int, spec: ToolSpec, pruned: str, before: int, after: int) -> Stream:
        cost = Decimal("0.00002")
        usage = Usage(input_tokens=before, output_tokens=after, requests=1, cost_usd=cost)
        self.spent = self.spent + usage
        self.events.append(
            Pruned(
                **self._base(n),
                tool_call_id=spec.id,
                tool_name=spec.name,
                model_name=MODEL,
                tokens_before=before,
                tokens_after=after,
                usage=usage,
                latency_s=0.3,
                original=spec.content,
                pruned=pruned,
            )
        )
        self.pending[-1] = ToolMessage(pruned, tool_call_id=spec.id, name=spec.name)
        return self

    def gate(self, n: int, *, limit: int, spent: int, passed: bool) -> Stream:
        self.events.append(
            BudgetGate(
                **self._base(n),
                gate="token",
                stage="after_call",
                limit=Decimal(limit),
                spent=Decimal(spent),
                passed=passed,
            )
        )
        return self

    def synthesis(self, n: int, reason: Literal["round_cap", "stuck", "token_budget"]) -> Stream:
        prompt = "Answer now with what you have."
        self.events.append(SynthesisStarted(**self._base(n), reason=reason, prompt=prompt))
        self.pending.append(HumanMessage(prompt))
        return self

    def finish(self, text: str, rounds: int, *, synthesis: bool = False) -> Stream:
        self.events.append(
            LoopFinished(
                **self._base(rounds + (1 if synthesis else 0)),
                final_text=text,
                rounds=rounds,
                usage=self.spent,
                budget_exhausted=False,
                synthesis_was_run=synthesis,
                synthesis_reason="round_cap" if synthesis else None,
                outcome="synthesis" if synthesis else "final_answer",
            )
        )
        return self

    def fail(self, rounds: int, *, cancelled: bool = False, message: str = "boom") -> Stream:
        self.events.append(
            LoopFailed(
                **self._base(rounds),
                error_type="CancelledError" if cancelled else "RuntimeError",
                error_kind=None,
                reason=None,
                message="" if cancelled else message,
                cause_type=None,
                rounds=rounds,
                usage=self.spent,
                any_invocation_made=True,
                cancelled=cancelled,
                outcome="cancelled" if cancelled else "failed",
            )
        )
        return self

    def full_round(self, n: int, text: str, tools: Sequence[ToolSpec], **call: Any) -> Stream:
        """A whole round: start, call, every tool (started together, ended in order)."""
        self.round_start(n)
        self.call_start(n)
        self.t += call.get("latency", 0.8)
        self.call_end(n, text, tools, **call)
        for spec in tools:
            self.tool_begin(n, spec)
        for spec in tools:
            self.t += spec.duration if spec.ran else 0.0
            self.tool_end(n, spec)
        return self


def round_t(t: float) -> float:
    return round(t, 6)


XSS = PAYLOADS[0]
"""The payload the sample runs carry (from the one list in ``loopkit``): a browser that ever
ran it would open an ``alert`` dialog, which the browser tests listen for."""


def sample_run(modern: bool = True, *, xss: str = XSS) -> list[Event]:
    """Three rounds: parallel tools, an error, a not-run call, pruning, then an answer."""
    s = Stream(modern=modern).start("How did revenue and churn do last quarter?")
    read = ToolSpec("call_read", "file_read", {"path": "report.txt"}, "revenue up 12%. " * 300, 1.4)
    note = ToolSpec("call_echo", "echo", {"text": xss}, xss, 0.2)
    s.full_round(1, "Reading the report and echoing a note.", [read, note], tokens=(1200, 60))
    s.pruned(1, read, "revenue up 12% (quarterly figures)", 1300, 12)
    broken = ToolSpec(
        "call_churn",
        "churn",
        {"quarter": "Q3"},
        "KeyError: 'Q3'",
        0.4,
        status="error",
        reason="tool_error",
    )
    skipped = ToolSpec(
        "call_more",
        "echo",
        {"text": "more"},
        "not run: token budget spent",
        ran=False,
        status="error",
        reason="token_budget",
    )
    s.full_round(2, "", [broken, skipped], tokens=(2600, 40))
    s.round_start(3)
    s.call_start(3)
    s.t += 0.9
    answer = '{"revenue": "+12%", "churn": "unknown"}\nRevenue rose 12%; churn is unknown.'
    s.call_end(3, answer, (), tokens=(2800, 90))
    return [*s.finish("Revenue rose 12%; churn is unknown.", 3).events]


def four_round_run() -> list[Event]:
    """Four rounds, 13.5 s: a pause before round 2's call, a tool that raises in round 2,
    two tools side by side in round 3 (the slowest, 6.2 s), then the answer."""
    s = Stream().start("How did revenue and churn do last quarter?")
    read = ToolSpec("c1", "file_read", {"path": "report.txt"}, "revenue up 12%", 1.0)
    s.full_round(1, "Reading the report.", [read], latency=2.0)
    s.round_start(2)
    s.pause(2, "model_call", "round", 0.2)
    s.call_start(2)
    s.t += 2.0
    churn = ToolSpec(
        "c2", "churn", {"quarter": "Q3"}, "ValueError: no Q3", 0.5, "error", reason="tool_error"
    )
    s.call_end(2, "Looking up churn.", [churn], latency=2.0)
    s.tool_begin(2, churn)
    s.t += 0.5
    s.tool_end(2, churn)
    dispatched = s.events[-1]
    assert isinstance(dispatched, ToolDispatched)
    s.events[-1] = dataclasses.replace(dispatched, error_type="ValueError")
    slow = ToolSpec("c3", "file_read", {"path": "churn.csv"}, "churn 3%", 2.7)
    fast = ToolSpec("c4", "echo", {"text": "noted"}, "noted", 0.8)
    s.round_start(3)
    s.call_start(3)
    s.t += 3.5
    s.call_end(3, "Reading churn and noting it.", [slow, fast], latency=3.5)
    s.tool_begin(3, slow).tool_begin(3, fast)
    s.t += 0.8
    s.tool_end(3, fast)
    s.t += 1.9
    s.tool_end(3, slow)
    s.round_start(4)
    s.call_start(4)
    s.t += 1.6
    s.call_end(4, "Revenue rose 12%; churn was 3%.", (), latency=1.6)
    return [*s.finish("Revenue rose 12%; churn was 3%.", 4).events]


def long_run(rounds: int, run_id: str = "a1b2c3d4e5f6", **start: Any) -> list[Event]:
    """A long run: one echo per round, an error every 97th round (``start``: more
    ``Stream.start`` arguments, a name say)."""
    s = Stream(run_id=run_id).start("Count to a big number.", max_rounds=rounds + 1, **start)
    for n in range(1, rounds + 1):
        bad = n % 97 == 0
        spec = ToolSpec(
            f"c{n}",
            "echo",
            {"n": n},
            "error: flaky" if bad else str(n),
            0.001,
            status="error" if bad else "success",
            reason="tool_error" if bad else None,
        )
        s.full_round(n, f"step {n}", [spec], tokens=(100 + n, 5), latency=0.002)
    s.round_start(rounds + 1)
    s.call_start(rounds + 1)
    s.call_end(rounds + 1, "done", (), tokens=(200, 5))
    return [*s.finish("done", rounds + 1).events]


def _with_nested(parent: Stream, i: int, when: datetime) -> list[Event]:
    """``parent``'s first round calls ``research``, whose tool runs a nested agent (two
    rounds, one ``search``); then the parent answers."""
    research = ToolSpec(f"r{i}", "research", {"topic": f"topic {i}"}, "found it", 1.2)
    parent.round_start(1)
    parent.call_start(1)
    parent.t += 0.8
    parent.call_end(1, "Looking it up.", [research], tokens=(400, 30))
    parent.tool_begin(1, research)
    head = len(parent.events)
    sub = Stream(run_id=f"sub{i:04d}").start(
        f"Research topic {i}",
        name="researcher",
        parent_run_id=parent.run_id,
        parent_tool_call_id=research.id,
        started_at=(when + timedelta(seconds=parent.t + 0.01)).isoformat(),
    )
    search = ToolSpec(f"s{i}", "search", {"q": f"topic {i}"}, "a hit", 0.3)
    sub.full_round(1, "searching", [search], tokens=(200, 10), latency=0.4)
    sub.round_start(2)
    sub.call_start(2)
    sub.t += 0.3
    sub.call_end(2, "found it", (), tokens=(250, 15), latency=0.3)
    sub.finish("found it", 1)
    parent.t += research.duration
    parent.tool_end(1, research)
    parent.round_start(2)
    parent.call_start(2)
    parent.t += 0.5
    parent.call_end(2, f"answer {i}", (), tokens=(500, 40), latency=0.5)
    parent.finish(f"answer {i}", 1)
    return [*parent.events[:head], *sub.events, *parent.events[head:]]


def session_runs(count: int, long_rounds: int, nest_every: int = 25) -> list[Event]:
    """A session of ``count`` top-level runs in start order, ten seconds apart: short
    named runs of one echo round each, every ``nest_every``-th calling a nested agent
    through its ``research`` tool, and last a run of ``long_rounds`` rounds."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    out: list[Event] = []
    for i in range(count - 1):
        when = base + timedelta(seconds=10 * i)
        s = Stream(run_id=f"run{i:04d}").start(
            f"Question {i}", name=f"job {i}", started_at=when.isoformat()
        )
        if i % nest_every == nest_every - 1:
            out.extend(_with_nested(s, i, when))
            continue
        echo = ToolSpec(f"e{i}", "echo", {"text": str(i)}, str(i), 0.05)
        s.full_round(1, f"echo {i}", [echo], tokens=(300 + i, 20), latency=0.3)
        s.round_start(2)
        s.call_start(2)
        s.t += 0.2
        s.call_end(2, f"answer {i}", (), tokens=(350 + i, 25), latency=0.2)
        out.extend(s.finish(f"answer {i}", 1).events)
    when = base + timedelta(seconds=10 * count)
    out.extend(long_run(long_rounds, "long", name="the long one", started_at=when.isoformat()))
    return out


def mixed_session(count: int) -> list[Event]:
    """``count`` short runs, ten seconds apart, that a run list must tell apart: each 7th
    failed (its model call raised), each 5th had a tool call fail (its error told the model),
    each 3rd tagged ``nightly``; their tokens (and so costs) and durations vary with their
    number, so each sort puts a different run first. ``run{i:05d}``, named ``job {i}``."""
    base = datetime(2025, 1, 1, tzinfo=UTC)
    out: list[Event] = []
    for i in range(count):
        when = base + timedelta(seconds=10 * i)
        tags = ("nightly",) if i % 3 == 0 else ()
        s = Stream(run_id=f"run{i:05d}").start(
            f"How did region {i} do?", name=f"job {i}", tags=tags, started_at=when.isoformat()
        )
        spent = (200 + (i * 7919) % 5000, 20 + i % 40)
        failed_tool = i % 5 == 4
        echo = ToolSpec(
            f"e{i}",
            "echo",
            {"text": str(i)},
            "no such region" if failed_tool else str(i),
            0.05 + (i * 31 % 100) / 100,
            status="error" if failed_tool else "success",
            reason="ValueError: no such region" if failed_tool else None,
        )
        cost = Decimal(spent[0] * 15 + spent[1] * 60) / Decimal(100_000_000)  # gpt-4o-mini's
        s.full_round(1, f"echo {i}", [echo], tokens=spent, cost=cost, latency=0.3)
        s.round_start(2)
        s.call_start(2)
        s.t += 0.2 + (i * 13 % 50) / 10
        if i % 7 == 6:
            out.extend(s.fail(1, message="RuntimeError: upstream model returned HTTP 500").events)
            continue
        s.call_end(2, f"answer {i}", (), tokens=(spent[0] + 50, 25), cost=cost, latency=0.2)
        out.extend(s.finish(f"answer {i}", 1).events)
    return out


def slow_run() -> list[Event]:
    """A live-looking run: a 1.5 s streamed model call, then a 3 s tool beside a fast one."""
    s = Stream().start("How did revenue and churn do last quarter?")
    read = ToolSpec("call_read", "file_read", {"path": "report.txt"}, "revenue up 12%. " * 40, 3.0)
    note = ToolSpec("call_echo", "echo", {"text": XSS}, XSS, 0.2)
    s.round_start(1)
    s.call_start(1, streaming=True)
    for word in ("Reading ", "the report ", "and echoing ", "a note."):
        s.t += 0.375
        s.delta(1, word)
    s.call_end(1, "Reading the report and echoing a note.", [read, note], latency=1.5)
    s.tool_begin(1, read).tool_begin(1, note)
    s.t += 0.2
    s.tool_end(1, note)
    s.t += 2.8
    s.tool_end(1, read)
    s.round_start(2)
    s.call_start(2)
    s.t += 0.5
    s.call_end(2, "Revenue rose 12% this quarter.", (), tokens=(1800, 40), latency=0.5)
    return [*s.finish("Revenue rose 12% this quarter.", 2).events]


@dataclass
class _Editor:
    """What a pause point of a played run can show (nothing here can be changed)."""

    messages_: tuple[BaseMessage, ...] = ()
    calls_: tuple[ToolCallView, ...] = ()

    def __init__(
        self,
        messages: tuple[BaseMessage, ...] = (),
        calls: tuple[ToolCallView, ...] = (),
    ) -> None:
        self.messages_ = messages
        self.calls_ = calls

    def messages(self) -> tuple[BaseMessage, ...]:
        return self.messages_

    def calls(self) -> tuple[ToolCallView, ...]:
        return self.calls_


class PlaybackAgent:
    """Plays a stream in real time through the debugger's agent API (observers, pause
    hooks, ``arun``), restamping each event with the time it is really emitted, so step
    mode, Stop and the browser's timers work as with a live loop."""

    __test__ = False

    def __init__(self, events: Sequence[Event], *, speed: float = 1.0) -> None:
        self.events = list(events)
        self.speed = speed
        self._observers: list[Any] = []
        self._hooks: list[Any] = []

    @property
    def observers(self) -> tuple[Any, ...]:
        return tuple(self._observers)

    def subscribe(self, callback: Any) -> Any:
        self._observers.append(callback)
        return lambda: self._observers.remove(callback)

    def add_pause_hook(self, hook: Any) -> Any:
        self._hooks.append(hook)
        return lambda: self._hooks.remove(hook)

    async def _pause(self, point: Any) -> None:
        for hook in list(self._hooks):
            await hook(point)

    def _emit(self, event: Event) -> None:
        for observer in list(self._observers):
            observer(event)

    async def arun(self, prompt: Any) -> list[Event]:
        import asyncio
        import dataclasses

        from toolloop_lab import PausePoint

        loop = asyncio.get_running_loop()
        start = loop.time()
        script_prev = 0.0
        emitted: list[Event] = []
        spent = Usage()
        dispatched: set[int] = set()
        sent: list[Any] = []
        try:
            for event in self.events:
                await asyncio.sleep(max(0.0, (event.t - script_prev) / self.speed))
                script_prev = event.t
                if isinstance(event, ModelCallStarted):  # as the loop: pause, then send
                    sent.extend(event.messages)
                    editor = _Editor(messages=tuple(messages_from_dict(thaw(list(sent)))))
                    point = PausePoint(
                        event.run_id, event.round, "model_call", event.purpose, (), editor
                    )
                    await self._pause(point)
                if isinstance(event, ToolStarted) and event.round not in dispatched:
                    dispatched.add(event.round)
                    starts = [
                        e
                        for e in self.events
                        if isinstance(e, ToolStarted) and e.round == event.round
                    ]
                    calls = tuple(
                        ToolCallView(id=e.tool_call_id, name=e.name, args=e.args) for e in starts
                    )
                    names = tuple(e.name for e in starts)
                    point = PausePoint(
                        event.run_id,
                        event.round,
                        "tool_dispatch",
                        "tools",
                        names,
                        _Editor(calls=calls),
                    )
                    await self._pause(point)
                event = dataclasses.replace(event, t=round_t(loop.time() - start))
                if isinstance(event, ModelCalled):
                    spent = event.accumulated
                emitted.append(event)
                self._emit(event)
        except asyncio.CancelledError:
            last = emitted[-1] if emitted else self.events[0]
            rounds = sum(1 for e in emitted if isinstance(e, RoundStarted))
            self._emit(
                LoopFailed(
                    run_id=last.run_id,
                    round=last.round,
                    t=round_t(loop.time() - start),
                    error_type="CancelledError",
                    error_kind=None,
                    reason=None,
                    message="",
                    cause_type=None,
                    rounds=rounds,
                    usage=spent,
                    any_invocation_made=bool(rounds),
                    cancelled=True,
                    outcome="cancelled",
                )
            )
            raise
        return emitted


def failed_run() -> list[Event]:
    """Two rounds, then the model call of round 2 raises."""
    s = Stream().start("Look up the order status of order 5.")
    spec = ToolSpec("c1", "order_status", {"order": 5}, '{"status": "shipped", "eta": "2 days"}')
    s.full_round(1, "Looking it up.", [spec], tokens=(400, 30))
    s.round_start(2)
    s.call_start(2)
    s.t += 1.2
    return [*s.fail(1, message="RuntimeError: upstream model returned HTTP 500").events]


def hostile_run() -> list[Event]:
    """One run with the hostile text (``loopkit.ALL``) in every string field an event
    has: prompt, system prompt, model and tool names, ids, arguments (keys and values),
    reply text, finish reason, invalid-call error, tool output and error reason, pruning,
    a person's change, the synthesis prompt, and the failure's type, message and partial
    text. Names and ids arrive clipped (the widget cuts them), content whole."""
    s = Stream(run_id="hostile-run").start(ALL, system=ALL, tools=(ALL, "echo"))
    started = s.events[0]
    assert isinstance(started, LoopStarted)
    s.events[0] = dataclasses.replace(started, model_name=ALL, prune_tools=(ALL,))
    s.round_start(1)
    s.call_start(1)
    s.t += 0.5
    s.delta(1, ALL)
    spec = ToolSpec(ALL[:90], ALL, {ALL: ALL}, ALL, 0.2, status="error", reason=ALL)
    s.call_end(1, ALL, [spec])
    called = s.events[-1]
    assert isinstance(called, ModelCalled)
    invalid = ToolCallView(id="bad-1", name=ALL, args={}, valid=False, error=ALL)
    s.events[-1] = dataclasses.replace(
        called, finish_reason=ALL, model_name=ALL, tool_calls=(*called.tool_calls, invalid)
    )
    s.events.append(
        Intervention(
            **s._base(1),
            action="edit_args",
            stage="tool_dispatch",
            tool_call_id=spec.id,
            before={ALL: ALL},
            after={ALL: ALL},
        )
    )
    s.tool_begin(1, spec)
    s.t += 0.2
    s.tool_end(1, spec)
    s.pruned(1, spec, ALL, 300, 30)
    pruned = s.events[-1]
    assert isinstance(pruned, Pruned)
    s.events[-1] = dataclasses.replace(pruned, tool_name=ALL, model_name=ALL)
    s.synthesis(2, "round_cap")
    synth = s.events[-1]
    assert isinstance(synth, SynthesisStarted)
    s.events[-1] = dataclasses.replace(synth, prompt=ALL)
    s.call_start(2, "synthesis")
    s.t += 0.3
    failed = s.fail(1, message=ALL).events[-1]
    assert isinstance(failed, LoopFailed)
    s.events[-1] = dataclasses.replace(
        failed, error_type=ALL, error_kind=ALL, reason=ALL, cause_type=ALL, partial_text=ALL
    )
    return list(s.events)


def summarized_run() -> list[Event]:
    """A ``create_agent`` run driven by ``ToolLoopMiddleware`` with LangChain's
    ``SummarizationMiddleware`` after it: two tool rounds, a summarization call after the
    second, then the answer (made by the real middleware on scripted models)."""
    import asyncio

    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.tools import tool
    from loopkit import calls, final, tool_call

    from toolloop_lab import ScriptedChatModel, ToolLoopMiddleware

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    main = ScriptedChatModel(
        [
            calls(tool_call("lookup", {"key": "a"}, "c1"), tokens=(1_000, 100)),
            calls(tool_call("lookup", {"key": "b"}, "c2"), tokens=(2_000, 100)),
            final("done", (3_000, 100)),
        ],
        model_name="gpt-4o-mini",
    )
    summary = ScriptedChatModel(
        [final("a and b were looked up", (700, 30))], model_name="gpt-4o-mini"
    )
    events: list[Event] = []
    agent = create_agent(
        main,
        [lookup],
        middleware=[
            ToolLoopMiddleware(observers=[events.append]),
            SummarizationMiddleware(summary, trigger=("messages", 4), keep=("messages", 2)),
        ],
    )
    asyncio.run(agent.ainvoke({"messages": [HumanMessage("look a and b up")]}))
    return events
