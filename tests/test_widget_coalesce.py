"""Redraws are coalesced to about 10 per second, and the final state is always drawn.

Time is a fake clock with a timer queue the test advances, so the figures are exact and
no assertion depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from decimal import Decimal
from typing import Any

import comm
import pytest
from test_widget_scenarios import (
    CountingComm,
    FakeTime,
    Scenario,
    call_reply,
    final_reply,
    no_widget_leaks,  # noqa: F401 - fixture
    run,
    text_of,
)

from toolloop_lab import AgentConfig
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.events import (
    BudgetGate,
    Event,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    RoundStarted,
    SynthesisStarted,
    ToolCallView,
    ToolDispatched,
)
from toolloop_lab.usage import Usage
from toolloop_lab.widget import Coalescer, LoopDebugger

pytestmark = pytest.mark.usefixtures("no_widget_leaks")


@pytest.fixture
def counting_comm(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Widgets made inside the test get a comm that records every message they send."""
    CountingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", CountingComm)
    return CountingComm.sent


STEP = 0.001
"""Simulated seconds between two events: 10,000 events take 10 s."""


def synthetic_run(total: int = 10_000, run_id: str = "big") -> list[Event]:
    """A finished run of exactly ``total`` events: 5 per round, then synthesis."""
    rounds = (total - 5) // 5
    assert 1 + rounds * 5 + 4 == total
    t = iter(i * STEP for i in range(total))
    events: list[Event] = [
        LoopStarted(
            run_id=run_id,
            round=0,
            t=next(t),
            model_name="gpt-4o-mini",
            tools=("echo",),
            max_rounds=rounds,
            token_budget=10_000_000,
            context_window=128_000,
            usd_limit=None,
            prune_tools=(),
            input_messages=1,
            started_at="2026-01-01T00:00:00+00:00",
        )
    ]
    spent = Usage()
    for n in range(1, rounds + 1):
        usage = Usage(100 + n, 10, requests=1, cost_usd=Decimal("0.0001"))
        spent = spent + usage
        calls = (ToolCallView(f"a{n}", "echo", {"text": "a"}), ToolCallView(f"b{n}", "echo", {}))
        events += [
            RoundStarted(run_id=run_id, round=n, t=next(t), max_rounds=rounds),
            ModelCalled(
                run_id=run_id,
                round=n,
                t=next(t),
                purpose="round",
                model_name="gpt-4o-mini",
                usage=usage,
                accumulated=spent,
                latency_s=0.2,
                text=f"round {n}",
                tool_calls=calls,
                finish_reason="tool_calls",
                stuck=False,
            ),
            *(
                ToolDispatched(
                    run_id=run_id,
                    round=n,
                    t=next(t),
                    tool_call_id=c.id,
                    name="echo",
                    args=c.args,
                    status="success",
                    error_reason=None,
                    duration_s=0.001,
                    output_chars=1,
                    content="a",
                )
                for c in calls
            ),
            BudgetGate(
                run_id=run_id,
                round=n,
                t=next(t),
                gate="token",
                stage="after_call",
                limit=Decimal(10_000_000),
                spent=Decimal(spent.total_tokens),
                passed=True,
            ),
        ]
    last = rounds + 1
    usage = Usage(50, 20, requests=1, cost_usd=Decimal("0.0001"))
    spent = spent + usage
    events += [
        SynthesisStarted(run_id=run_id, round=last, t=next(t), reason="round_cap", prompt="stop"),
        ModelCalled(
            run_id=run_id,
            round=last,
            t=next(t),
            purpose="synthesis",
            model_name="gpt-4o-mini",
            usage=usage,
            accumulated=spent,
            latency_s=0.1,
            text="the answer",
            tool_calls=(),
            finish_reason="stop",
            stuck=False,
        ),
        BudgetGate(
            run_id=run_id,
            round=last,
            t=next(t),
            gate="token",
            stage="after_call",
            limit=Decimal(10_000_000),
            spent=Decimal(spent.total_tokens),
            passed=True,
        ),
        LoopFinished(
            run_id=run_id,
            round=last,
            t=next(t),
            final_text="the answer",
            rounds=rounds,
            usage=spent,
            budget_exhausted=False,
            outcome="synthesis",
            synthesis_was_run=True,
            synthesis_reason="round_cap",
        ),
    ]
    assert len(events) == total
    return events


def test_10000_events_redraw_about_10_times_a_second(
    counting_comm: list[dict[str, Any]],
) -> None:
    fake = FakeTime()
    events = synthetic_run()
    dbg = LoopDebugger(clock=fake.clock, schedule=fake.schedule)
    replay = None
    try:
        drawn_at: list[float] = []
        dbg._header.observe(lambda _c: drawn_at.append(fake.now), names="value")
        before = dbg.draws
        sent_before = len(counting_comm)
        for event in events:
            fake.advance(STEP)
            dbg(event)
        simulated = fake.now
        draws = dbg.draws - before
        messages = len(counting_comm) - sent_before
        rate = draws / simulated
        print(
            f"\n{len(events):,} events over {simulated:.1f} simulated s: {draws} redraws "
            f"({rate:.1f}/s), {messages:,} comm messages ({messages / simulated:.0f}/s)"
        )
        assert simulated == pytest.approx(10.0)
        assert dbg.redraw_requests == len(events)  # every event asked for one
        # at most one redraw per 0.1 s, plus the final state drawn at once
        assert draws <= 10 * simulated + 2
        assert draws >= 9 * simulated  # and the view kept moving during the run
        gaps = [b - a for a, b in itertools.pairwise(drawn_at[:-1])]
        assert min(gaps) >= 0.1 - 1e-9
        # the frontend gets a bounded number of messages: far below ~1,000 per second
        assert messages / simulated < 200
        # the final state is complete: every event counted, the last page, the answer
        head = text_of(dbg.panels["header"])
        assert "● FINISHED" in head
        assert "10,000 events" in head
        assert "the answer" in head
        assert dbg.panels["pager"] == "rows 1981 to 2000 of 2000 · following the newest"
        assert not dbg._coalescer.dirty
        replay = LoopDebugger.from_trace(events)
        assert dbg.panels == replay.panels
    finally:
        dbg.close()
        if replay is not None:
            replay.close()


def test_a_burst_is_drawn_when_the_interval_ends() -> None:
    fake = FakeTime()
    events = synthetic_run(105)
    dbg = LoopDebugger(clock=fake.clock, schedule=fake.schedule)
    try:
        fake.advance(1.0)
        start = dbg.draws
        for event in events[:50]:  # a burst with no time passing, and no final event
            dbg(event)
        assert dbg.draws == start + 1  # only the leading edge
        assert "1 events" in text_of(dbg.panels["header"])
        assert fake.pending == 1  # one trailing timer, not one per event
        fake.advance(0.05)
        assert dbg.draws == start + 1
        fake.advance(0.06)
        assert dbg.draws == start + 2
        assert "50 events" in text_of(dbg.panels["header"])
        assert fake.pending == 0
    finally:
        dbg.close()


def test_coalescer_keeps_pace_after_a_flush() -> None:
    fake = FakeTime()
    drawn: list[float] = []
    coalescer = Coalescer(lambda: drawn.append(fake.now), clock=fake.clock, schedule=fake.schedule)
    coalescer.request()  # draws at 0.0
    fake.advance(0.05)
    coalescer.request()  # arms a timer for 0.1
    fake.advance(0.01)
    coalescer.flush()  # draws at 0.06 (a pause, say)
    coalescer.request()  # dirty again
    fake.advance(0.05)  # the timer fires at 0.1, too soon after 0.06: it waits
    assert drawn == pytest.approx([0.0, 0.06])
    fake.advance(0.1)
    assert drawn == pytest.approx([0.0, 0.06, 0.16])
    with pytest.raises(ValueError, match="max_per_second"):
        Coalescer(lambda: None, max_per_second=0)


def test_real_loop_and_clock_still_end_complete() -> None:
    """The default clock and timers (asyncio's), on a real 300-round run."""
    script: list[Any] = [call_reply(n, text=f"r{n}") for n in range(1, 301)]
    script.append(final_reply("three hundred", 301))
    scenario = Scenario("long", script, [echo_tool()], AgentConfig(tool_max_rounds=301))
    dbg = LoopDebugger()
    replay = None
    try:
        started = time.perf_counter()
        outcome = run(scenario, dbg)
        elapsed = time.perf_counter() - started
        assert outcome.error is None
        print(
            f"\nreal clock: {len(outcome.events):,} events in {elapsed:.2f} s, "
            f"{dbg.draws} redraws ({dbg.draws / elapsed:.1f}/s)"
        )
        assert dbg.draws < dbg.redraw_requests
        replay = LoopDebugger.from_trace(outcome.events)
        assert dbg.panels == replay.panels
        assert "three hundred" in text_of(dbg.panels["header"])
    finally:
        dbg.close()
        if replay is not None:
            replay.close()


async def test_10000_events_on_a_real_loop() -> None:
    """The same 10,000 events fed from a coroutine, with asyncio's clock and timers."""
    events = synthetic_run()
    dbg = LoopDebugger()
    try:
        started = time.perf_counter()
        for i, event in enumerate(events):
            dbg(event)
            if i % 100 == 0:
                await asyncio.sleep(0)  # let armed timers fire, as a real loop would
        elapsed = time.perf_counter() - started
        print(
            f"\nreal clock: {len(events):,} events in {elapsed:.2f} s, {dbg.draws} redraws "
            f"({dbg.draws / elapsed:.1f}/s)"
        )
        assert dbg.draws < len(events) / 10
        assert "10,000 events" in text_of(dbg.panels["header"])
    finally:
        dbg.close()
