"""A builder of event streams for the OpenTelemetry tests, and the checks that keep it honest.

:class:`RunBuilder` writes what the loop emits, event by event, with the loop's own types,
so the export tests can cover shapes a scripted run cannot easily reach (a failure while a
tool runs, a nested run, an old trace). The tests below prove a built stream is one the
loop could have emitted: every event survives the strict trace parser unchanged, and the
finish event's totals are the sums of the calls.

It is also the pytest plugin of the OpenTelemetry fixtures (``exporter``, ``provider``): a
module that needs them says ``pytest_plugins = ("otelkit",)``, so the shared conftest
imports no optional extra and ``pytest tests/test_events.py`` runs without it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolloop_lab import Usage
from toolloop_lab._stream import message_dicts
from toolloop_lab.events import (
    BudgetGate,
    CallPurpose,
    Event,
    Intervention,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    Outcome,
    Paused,
    PauseStage,
    Pruned,
    RoundStarted,
    SynthesisReason,
    SynthesisStarted,
    ToolCallView,
    ToolDispatched,
    ToolStarted,
)

STARTED_AT = "2026-03-01T12:00:00.250000+00:00"
STARTED_NS = 1_772_366_400_250_000_000
"""``STARTED_AT`` in epoch nanoseconds, worked out by hand (not by the code under test)."""


def usage(inp: int, out: int, cost: str | None = "0.001", **kw: Any) -> Usage:
    """One call's usage; ``cost=None`` is an unpriced call."""
    return Usage(inp, out, requests=1, cost_usd=None if cost is None else Decimal(cost), **kw)


@dataclass
class RunBuilder:
    """Appends one run's events to ``events`` with a clock that moves 0.5 s per step."""

    run_id: str = "run-1"
    model: str = "gpt-4o-mini"
    events: list[Event] = field(default_factory=list)
    t: float = 0.0
    step: float = 0.5
    calls: int = 0
    rounds: int = 0
    spent: Usage = field(default_factory=lambda: Usage(cost_usd=Decimal(0)))
    pending: list[Any] = field(default_factory=list)
    """Messages appended since the last model call (what the next call start carries)."""

    def _tick(self) -> float:
        self.t = round(self.t + self.step, 6)
        return self.t

    def _base(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "round": self.rounds, "t": self.t}

    def start(self, prompt: str = "What is 2+2?", **fields: Any) -> RunBuilder:
        values: dict[str, Any] = {
            "model_name": self.model,
            "tools": ("echo",),
            "max_rounds": 5,
            "token_budget": None,
            "context_window": 128_000,
            "usd_limit": None,
            "prune_tools": (),
            "input_messages": 1,
            "started_at": STARTED_AT,
        }
        values.update(fields)
        self.events.append(LoopStarted(**self._base(), **values))
        self.pending = [HumanMessage(prompt)]
        return self

    def round(self) -> RoundStarted:
        self.rounds += 1
        self._tick()
        event = RoundStarted(**self._base(), max_rounds=5)
        self.events.append(event)
        return event

    def call_start(
        self,
        purpose: CallPurpose = "round",
        *,
        tools: Sequence[str] = ("echo",),
        streaming: bool = False,
        tool_call_id: str | None = None,
        messages: Sequence[Any] | None = None,
    ) -> int:
        self.calls += 1
        self._tick()
        if messages is None:
            sent, self.pending = self.pending, []
        else:
            sent = list(messages)
        self.events.append(
            ModelCallStarted(
                **self._base(),
                call=self.calls,
                purpose=purpose,
                model_name=self.model,
                tools=tuple(tools) if purpose == "round" else (),
                messages=message_dicts(sent),
                streaming=streaming,
                tool_call_id=tool_call_id,
            )
        )
        return self.calls

    def reply(
        self,
        call: int | None,
        spend: Usage,
        *,
        text: str = "",
        tool_calls: Sequence[ToolCallView] = (),
        purpose: str = "round",
        finish_reason: str | None = None,
        truncated: bool = False,
        latency: float = 0.5,
        first_token_s: float | None = None,
    ) -> ModelCalled:
        self._tick()
        self.spent = self.spent + spend
        event = ModelCalled(
            **self._base(),
            purpose="synthesis" if purpose == "synthesis" else "round",
            model_name=self.model,
            usage=spend,
            accumulated=self.spent,
            latency_s=latency,
            text=text,
            tool_calls=tuple(tool_calls),
            finish_reason=finish_reason,
            stuck=False,
            empty=not text and not tool_calls,
            truncated=truncated,
            call=call or 0,
            first_token_s=first_token_s,
        )
        self.events.append(event)
        calls = [{"name": c.name, "args": dict(c.args), "id": c.id} for c in tool_calls]
        self.pending.append(AIMessage(content=text, tool_calls=calls))
        return event

    def tool_start(self, call_id: str, name: str = "echo", **args: Any) -> ToolStarted:
        self._tick()
        event = ToolStarted(**self._base(), tool_call_id=call_id, name=name, args=args)
        self.events.append(event)
        return event

    def tool_done(
        self,
        call_id: str,
        name: str = "echo",
        content: str = "ok",
        *,
        status: str = "success",
        error_reason: str | None = None,
        ran: bool = True,
        duration: float = 0.5,
        args: dict[str, Any] | None = None,
    ) -> ToolDispatched:
        self._tick()
        event = ToolDispatched(
            **self._base(),
            tool_call_id=call_id,
            name=name,
            args=args or {},
            status=status,  # type: ignore[arg-type]
            error_reason=error_reason,
            duration_s=duration if ran else 0.0,
            output_chars=len(content) if ran else 0,
            content=content,
            ran=ran,
        )
        self.events.append(event)
        said = "error" if status == "cancelled" else status  # the model reads a failed call
        self.pending.append(ToolMessage(content, tool_call_id=call_id, status=said))
        return event

    def pause(self, stage: PauseStage, purpose: str, held: float) -> Paused:
        """A pause hook holds the loop ``held`` seconds; the loop goes on at the new time."""
        self.t = round(self.t + held, 6)
        event = Paused(**self._base(), stage=stage, purpose=purpose, paused_s=held)
        self.events.append(event)
        return event

    def prune(
        self, call: int | None, call_id: str, spend: Usage, *, before: int, after: int
    ) -> Pruned:
        self._tick()
        self.spent = self.spent + spend
        event = Pruned(
            **self._base(),
            tool_call_id=call_id,
            tool_name="file_read",
            model_name="pruner-1",
            tokens_before=before,
            tokens_after=after,
            usage=spend,
            latency_s=0.5,
            original="x" * 400,
            pruned="short",
            call=call or 0,
        )
        self.events.append(event)
        return event

    def gate(self, gate: str, limit: str, spent: str, *, passed: bool) -> BudgetGate:
        self._tick()
        event = BudgetGate(
            **self._base(),
            gate=gate,  # type: ignore[arg-type]
            stage="after_call",
            limit=Decimal(limit),
            spent=Decimal(spent),
            passed=passed,
        )
        self.events.append(event)
        return event

    def synthesis(self, reason: SynthesisReason) -> SynthesisStarted:
        self._tick()
        event = SynthesisStarted(**self._base(), reason=reason, prompt="Answer now.")
        self.events.append(event)
        self.pending.append(HumanMessage("Answer now."))
        return event

    def intervene(self, call_id: str) -> Intervention:
        self._tick()
        event = Intervention(
            **self._base(),
            action="edit_args",
            stage="tool_dispatch",
            tool_call_id=call_id,
            before={"text": "secret-before"},
            after={"text": "secret-after"},
        )
        self.events.append(event)
        return event

    def finish(
        self,
        text: str = "4",
        *,
        outcome: Outcome = "final_answer",
        synthesis_reason: SynthesisReason | None = None,
    ) -> LoopFinished:
        self._tick()
        event = LoopFinished(
            **self._base(),
            final_text=text,
            rounds=self.rounds,
            usage=self.spent,
            budget_exhausted=outcome == "token_budget_exhausted",
            synthesis_was_run=synthesis_reason is not None,
            synthesis_reason=synthesis_reason,
            outcome=outcome,
        )
        self.events.append(event)
        return event

    def fail(
        self,
        error_type: str = "RuntimeError",
        message: str = "model exploded",
        *,
        cancelled: bool = False,
        partial_text: str | None = None,
        error_kind: str | None = None,
        reason: str | None = None,
    ) -> LoopFailed:
        self._tick()
        event = LoopFailed(
            **self._base(),
            error_type=error_type,
            error_kind=error_kind,
            reason=reason,
            message=message,
            cause_type=None,
            rounds=self.rounds,
            usage=self.spent,
            any_invocation_made=self.calls > 0,
            cancelled=cancelled,
            outcome="cancelled" if cancelled else "failed",
            partial_text=partial_text,
        )
        self.events.append(event)
        return event


def echo_call(call_id: str, text: str = "hi") -> ToolCallView:
    return ToolCallView(id=call_id, name="echo", args={"text": text})


def two_round_run(builder: RunBuilder | None = None) -> RunBuilder:
    """Two echo rounds, then a final answer: 3 chat spans, 2 tool spans."""
    b = builder or RunBuilder()
    b.start()
    for n, tokens in ((1, (100, 20)), (2, (150, 25))):
        b.round()
        call = b.call_start()
        b.reply(call, usage(*tokens, cost="0.0011"), tool_calls=[echo_call(f"c{n}", f"v{n}")])
        b.tool_start(f"c{n}", text=f"v{n}")
        b.tool_done(f"c{n}", content=f"v{n}", args={"text": f"v{n}"})
    b.round()
    call = b.call_start()
    b.reply(call, usage(210, 8, cost="0.0013"), text="4", finish_reason="stop")
    b.finish("4")
    return b


# -- the builder's own checks ----------------------------------------------------------------


def shape(spans: tuple[ReadableSpan, ...], *, times: bool = True) -> list[tuple[object, ...]]:
    """Everything a backend sees of ``spans`` but their ids (and, with ``times=False``,
    their clock, for runs seen without a start, which only the receiving clock places)."""
    names = {s.context.span_id: s.name for s in spans}
    return sorted(
        (
            s.name,
            s.kind,
            names.get(s.parent.span_id) if s.parent else None,
            s.start_time if times else None,
            s.end_time if times else None,
            s.status.status_code,
            tuple(sorted((s.attributes or {}).items())),
            tuple((e.name, e.timestamp if times else None) for e in s.events),
        )
        for s in spans
    )


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    """Where ``provider`` puts every finished span (``exporter.get_finished_spans()``)."""
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """A tracer provider that hands each span to ``exporter`` as it ends; shut down after."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield tracer_provider
    tracer_provider.shutdown()
