"""What the debugger sends the browser, read off a mock comm (no browser, no kernel).

The widget's contract with its ES module is a stream of small messages (see
``toolloop_lab._widget.wire``): each event once, in order, in paced batches; everything
again after a front end says hello; the step state with each batch; a bounded tail of the
run in the saved state. Time is a fake clock with a timer queue the test advances, so the
pacing figures are exact.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import comm
import pytest
from browser.streams import PlaybackAgent, Stream, ToolSpec, long_run, sample_run, slow_run
from loopkit import FakeTime, MockComm, channel, received, until

from toolloop_lab import RunView
from toolloop_lab._spend.usage import format_usd
from toolloop_lab._tools.dispatcher import STOPPED_TEXT
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.coalesce import Coalescer
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.frontend import STATIC
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.events import Event, LoopFinished


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


def make(fake: FakeTime, **options: Any) -> LoopDebugger:
    return LoopDebugger(clock=fake.clock, schedule=fake.schedule, **options)


def expected(events: list[Event], max_chars: int = 20_000) -> list[dict[str, Any]]:
    return [event_payload(e, max_chars) for e in events]


# -- each event once, in order, paced ----------------------------------------------------
def test_every_event_reaches_the_browser_once_in_order(fake: FakeTime) -> None:
    dbg = make(fake)
    events = sample_run()
    for event in events:
        dbg(event)
        fake.advance(0.013)
    fake.advance(1.0)
    assert received(dbg) == expected(events)
    dbg.close()


def test_at_most_ten_messages_a_second_whatever_the_event_rate(fake: FakeTime) -> None:
    dbg = make(fake)
    mock = channel(dbg)
    stamps: list[float] = []
    publish = mock.publish_msg

    def stamped(msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        stamps.append(fake.now)
        publish(msg_type, data, *args, **kwargs)

    mock.publish_msg = stamped  # type: ignore[method-assign]
    events = long_run(400)  # 2,400 events, one every millisecond: 2.4 s
    for event in events:
        dbg(event)
        fake.advance(0.001)
    fake.advance(2.0)
    assert received(dbg) == expected(events)
    # every window of one second holds at most ten messages of any kind
    assert len(stamps) >= 20
    worst = max(sum(1 for t in stamps if s <= t < s + 1.0 - 1e-6) for s in stamps)
    assert worst <= 10, worst
    assert len(stamps) < len(events) / 20  # batched, not one per event
    dbg.close()


def test_a_hello_sends_everything_again_from_the_start(fake: FakeTime) -> None:
    dbg = make(fake)
    events = sample_run()
    for event in events:
        dbg(event)
    fake.advance(1.0)
    sent = len(channel(dbg).custom())
    channel(dbg).from_browser({"type": "hello"})
    fake.advance(1.0)
    again = channel(dbg).custom()[sent:]
    assert again
    assert again[0]["reset"] is True
    assert again[0]["first"] == 0
    assert [e for m in again for e in m["events"]] == expected(events)
    dbg.close()


def test_a_new_run_starts_the_browser_fold_over(fake: FakeTime) -> None:
    dbg = make(fake)
    first = sample_run()
    second = Stream(run_id="f6e5d4c3b2a1").start("Again?")
    second.full_round(1, "once more", [ToolSpec("x1", "echo", {"text": "x"})])
    second_events = second.finish("done", 1).events
    for event in [*first, *second_events]:
        dbg(event)
        fake.advance(0.05)
    fake.advance(1.0)
    assert received(dbg) == expected(second_events)
    assert dbg.view.run_id == "f6e5d4c3b2a1"
    dbg.close()


def test_long_strings_are_clipped_before_they_are_sent(fake: FakeTime) -> None:
    dbg = make(fake, max_text_chars=1_000)
    s = Stream().start("read it")
    huge = "x" * 50_000
    s.full_round(1, "reading", [ToolSpec("r1", "file_read", {"path": "big"}, huge)])
    for event in s.finish("ok", 1).events:
        dbg(event)
    fake.advance(1.0)
    dispatch = next(e for e in received(dbg) if e["kind"] == "tool_dispatch")
    assert dispatch["content"] == "x" * 1_000 + "… (50,000 chars)"
    dbg.close()


def test_old_traces_without_start_events_are_sent_as_they_are(fake: FakeTime) -> None:
    dbg = make(fake)
    events = sample_run(modern=False)
    assert not [e for e in events if e.kind in ("model_call_start", "tool_start")]
    for event in events:
        dbg(event)
    fake.advance(1.0)
    assert received(dbg) == expected(events)
    assert dbg.view.status == "finished"
    dbg.close()


# -- saved state -------------------------------------------------------------------------
def test_saved_state_keeps_the_newest_whole_rounds_within_its_budget(fake: FakeTime) -> None:
    dbg = make(fake, saved_state_bytes=60_000)
    events = long_run(2_000)
    for event in events:
        dbg(event)
    fake.advance(5.0)
    saved = dbg.saved_events
    assert len(json.dumps(saved)) <= 60_000
    assert saved[0]["kind"] == "loop_start"
    assert saved[-1]["kind"] == "loop_finish"
    rounds = {e["round"] for e in saved[1:-1]}
    assert dbg.saved_omitted == 2_001 - len(rounds)
    assert dbg.saved_omitted > 0
    for number in rounds:  # whole rounds only
        kinds = [e["kind"] for e in saved if e["round"] == number]
        assert kinds[0] == "round_start"
        assert "model_call" in kinds
    # the saved state reached the browser in one message of its own, after the last batch
    updates = [u for u in channel(dbg).updates() if "saved_events" in u]
    assert len(updates) == 1
    dbg.close()


def test_a_short_run_is_saved_whole(fake: FakeTime) -> None:
    dbg = make(fake)
    events = sample_run()
    for event in events:
        dbg(event)
    fake.advance(1.0)
    assert dbg.saved_events == expected(events)
    assert dbg.saved_omitted == 0
    dbg.close()


# -- replays -----------------------------------------------------------------------------
def test_a_replay_has_no_step_controls_and_shows_the_run(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "run.jsonl", sample_run())
    dbg = LoopDebugger.from_trace(path)
    assert dbg.live is False
    assert dbg.view.status == "finished"
    assert dbg.saved_events == expected(sample_run())
    dbg.close()


def test_a_replay_of_a_cut_trace_says_so(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "run.jsonl", sample_run())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    dbg = LoopDebugger.from_trace(path)
    assert dbg.view.status == "running"
    assert "partial last line" in dbg.summary()
    dbg.close()


# -- text and snapshot (hostile text: tests/hostile/test_rendering.py) ---------------
def test_the_text_summary_and_the_snapshot_show_the_run() -> None:
    dbg = LoopDebugger.from_trace(sample_run())
    bundle, _meta = dbg._repr_mimebundle_()
    assert bundle["text/plain"] == dbg.summary()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "LoopDebugger: finished" in bundle["text/plain"]
    html = dbg.snapshot_html()
    assert "Revenue rose 12%; churn is unknown." in html
    assert "not run (token budget)" in html  # a call that never ran is no failure
    dbg.close()


def test_the_snapshot_stays_small_for_a_long_run() -> None:
    dbg = LoopDebugger.from_trace(long_run(3_000))
    html = dbg.snapshot_html()
    assert len(html) < 20_000
    assert "the newest 20 of 3,001 rounds" in html
    dbg.close()


# -- step mode through the front end -----------------------------------------------------
async def test_step_continue_and_stop_arrive_as_browser_messages() -> None:
    dbg = LoopDebugger(pause_on="both")
    task = dbg.start(PlaybackAgent(slow_run(), speed=50), "go")
    await until(lambda: dbg.paused_at is not None)
    assert dbg.paused_at is not None
    assert dbg.paused_at.stage == "model_call"
    channel(dbg).from_browser({"type": "control", "action": "step"})
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.stage == "tool_dispatch")
    dbg.flush()
    control = channel(dbg).custom()[-1]["control"]
    assert control["paused_at"]["stage"] == "tool_dispatch"
    assert control["paused_at"]["detail"] == ["file_read", "echo"]
    assert control["running"] is True
    channel(dbg).from_browser({"type": "control", "action": "stop"})
    with pytest.raises(asyncio.CancelledError):
        await task
    assert dbg.view.status == "cancelled"
    # the header's round count and the partial counts agree
    assert dbg.view.failure is not None
    assert dbg.view.failure.rounds == dbg.view.rounds_run == 1
    dbg.flush()
    assert channel(dbg).custom()[-1]["control"]["stopped_by_user"] is True
    dbg.close()


async def test_continue_lets_this_run_finish_but_the_next_run_pauses_again() -> None:
    dbg = LoopDebugger(pause_on="model")
    task = dbg.start(PlaybackAgent(slow_run(), speed=50), "go")
    await until(lambda: dbg.paused_at is not None)
    dbg.flush()
    assert channel(dbg).custom()[-1]["control"]["continued"] is False
    channel(dbg).from_browser({"type": "control", "action": "continue"})
    dbg.flush()
    # the page is told this run will not pause again (its selector says so), mode unchanged
    assert channel(dbg).custom()[-1]["control"]["continued"] is True
    assert channel(dbg).custom()[-1]["control"]["running"] is True
    await task
    assert dbg.view.status == "finished"
    assert dbg.pause_on == "model"
    dbg.flush()
    assert channel(dbg).custom()[-1]["control"]["continued"] is False
    task = dbg.start(PlaybackAgent(slow_run(), speed=50), "again")
    await until(lambda: dbg.paused_at is not None)
    assert dbg.paused_at is not None
    dbg.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    dbg.close()


def test_pause_mode_follows_the_front_end_and_ignores_nonsense() -> None:
    dbg = LoopDebugger()
    dbg.set_state({"_pause_on": "tools"})
    assert dbg.pause_on == "tools"
    dbg.set_state({"_pause_on": "<script>"})
    assert dbg.pause_on == "tools"
    with pytest.raises(ValueError, match="pause_on"):
        dbg.pause_on = "sometimes"  # type: ignore[assignment]
    dbg.close()


# -- pacing, on its own --------------------------------------------------------------------
def test_coalescer_draws_at_most_at_its_rate_and_never_leaves_a_request(fake: FakeTime) -> None:
    draws: list[float] = []
    pacer = Coalescer(
        lambda: draws.append(fake.now), max_per_second=10, clock=fake.clock, schedule=fake.schedule
    )
    for _ in range(1_000):
        pacer.request()
        fake.advance(0.002)
    fake.advance(1.0)
    assert not pacer.dirty
    assert all(b - a >= 0.1 - 1e-9 for a, b in itertools.pairwise(draws))
    assert draws[-1] >= 100.0 + 1.998  # the last request was drawn
    assert 19 <= len(draws) <= 21


def test_a_finished_run_is_whole_in_the_view_after_the_last_event(fake: FakeTime) -> None:
    dbg = make(fake)
    events = sample_run()
    for event in events:
        dbg(event)
    fake.advance(1.0)
    assert isinstance(events[-1], LoopFinished)
    assert dbg.view.final_text == events[-1].final_text
    assert dbg.view.usage.cost_usd == events[-1].usage.cost_usd
    assert dbg.view.usage.cost_usd == Decimal("0.000560")
    dbg.close()


# -- time at a pause, a tool stopped while it ran: every view reads them alike ----------------
def paused_then_stopped() -> list[Event]:
    """The round of the report: a 548 ms model call and a 4 ms tool, with 6.2 s at a pause
    before the call and 0.25 s before the tools; then a round whose tool was stopped after
    1.5 s of running."""
    s = Stream().start("Check the figures.")
    quick = ToolSpec("c1", "echo", {"text": "a"}, "a", 0.004)
    s.round_start(1).pause(1, "model_call", "round", 6.2)
    s.call_start(1)
    s.t += 0.548
    s.call_end(1, "Checking.", [quick], latency=0.548)
    s.pause(1, "tool_dispatch", "tools", 0.25)
    s.tool_begin(1, quick)
    s.t += 0.004
    s.tool_end(1, quick)
    slow = ToolSpec(
        "c2",
        "file_read",
        {"path": "big.csv"},
        f"Error: {STOPPED_TEXT}",
        1.5,
        status="cancelled",
        reason="cancelled",
    )
    s.round_start(2).call_start(2)
    s.t += 0.3
    s.call_end(2, "Reading.", [slow], latency=0.3)
    s.tool_begin(2, slow)
    s.t += 1.5
    s.tool_end(2, slow)
    return s.fail(1, cancelled=True).events


def test_a_pause_is_its_own_time_and_a_stopped_tool_ran() -> None:
    view = RunView.from_events(paused_then_stopped())
    first, second = view.rounds
    assert first.paused_s == pytest.approx(6.45)
    assert first.duration_s == pytest.approx(0.552)  # 548 ms + 4 ms, not 7 s
    assert view.paused_s == pytest.approx(6.45)
    assert view.active_s == pytest.approx(view.elapsed_s - 6.45)
    (stopped,) = second.tools
    assert (stopped.status, stopped.ran, stopped.duration_s) == ("cancelled", True, 1.5)

    dbg = LoopDebugger.from_trace(paused_then_stopped())
    text = dbg.summary()
    assert "round 1: " in text
    assert "took 552 ms (+6.45 s paused)" in text
    assert "file_read: stopped while running after 1.50 s" in text
    html = dbg.snapshot_html()
    assert "took 552 ms (+6.45 s paused)" in html
    assert "file_read: stopped while running after 1.50 s" in html
    dbg.close()


FOLD_IN_NODE = """
const { createStore, fold, roundTime } = await import(process.argv[1]);
const events = JSON.parse(require("fs").readFileSync(0, "utf8"));
const s = createStore();
for (const e of events) fold(s.run, e);
const rounds = s.run.rounds.map((r) => ({
  n: r.n,
  paused: r.paused,
  own: roundTime(s, r),
  tools: r.tools.map((t) => [t.id, t.status, t.ran, t.duration]),
}));
console.log(JSON.stringify({ paused: s.run.paused, rounds }));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the page's module")
def test_the_pages_fold_agrees_with_runview_on_pauses_and_stopped_tools(tmp_path: Path) -> None:
    events = paused_then_stopped()
    module = tmp_path / "debugger.mjs"  # the page's own module, read by node as one
    module.write_text((STATIC / "debugger.js").read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run(
        ["node", "--input-type=commonjs", "-e", f"(async () => {{{FOLD_IN_NODE}}})()", module],
        input=json.dumps([e.to_dict() for e in events]),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    page = json.loads(done.stdout)
    view = RunView.from_events(events)
    assert page["paused"] == pytest.approx(view.paused_s)
    assert [r["n"] for r in page["rounds"]] == [r.number for r in view.rounds]
    for mine, row in zip(page["rounds"], view.rounds, strict=True):
        assert mine["paused"] == pytest.approx(row.paused_s)
        assert mine["own"] == pytest.approx(row.duration_s)
        assert [tuple(t) for t in mine["tools"]] == [
            (t.id, t.status, t.ran, t.duration_s) for t in row.tools
        ]


# -- one run reads the same in every view: outcome words and money ----------------------------
def stuck_run() -> list[Event]:
    """Two identical rounds, then a final-answer call because the model was stuck; one
    round costs $0.0002187 (more digits than six decimals keep)."""
    s = Stream().start("Summarise the report.")
    same = ToolSpec("c1", "echo", {"text": "a"}, "a", 0.004)
    s.full_round(1, "Checking.", [same], cost=Decimal("0.0002187"))
    s.full_round(2, "Checking.", [dataclasses.replace(same, id="c2")], cost=Decimal("0"))
    s.synthesis(3, "stuck").call_start(3, "synthesis")
    s.call_end(3, "Done.", purpose="synthesis", cost=Decimal("0"))
    s.finish("Done.", 2, synthesis=True)
    end = s.events[-1]
    assert isinstance(end, LoopFinished)
    s.events[-1] = dataclasses.replace(end, synthesis_reason="stuck")
    return s.events


LABELS_IN_NODE = """
const m = await import(process.argv[1]);
const { events, amounts } = JSON.parse(require("fs").readFileSync(0, "utf8"));
const s = m.createStore();
for (const e of events) m.fold(s.run, e);
console.log(JSON.stringify({ outcome: m.outcomeText(s.run), usd: amounts.map(m.usd) }));
"""


def _in_node(events: list[Event], amounts: list[Any], tmp_path: Path) -> Any:
    """What the shipped module (the live view and the static page) says of ``events``, and
    how it writes ``amounts`` of USD (under node: these need no page)."""
    if shutil.which("node") is None:
        pytest.skip("needs node to run the page's module")
    module = tmp_path / "debugger.mjs"
    module.write_text((STATIC / "debugger.js").read_text(encoding="utf-8"), encoding="utf-8")
    done = subprocess.run(
        ["node", "--input-type=commonjs", "-e", f"(async () => {{{LABELS_IN_NODE}}})()", module],
        input=json.dumps({"events": [event_payload(e, 4000) for e in events], "amounts": amounts}),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_a_stuck_run_reads_the_same_in_every_view(tmp_path: Path) -> None:
    said = "Answered by a final-answer call (model repeating itself)"
    dbg = LoopDebugger.from_trace(stuck_run())
    text, html = dbg.summary(), dbg.snapshot_html()
    live = _in_node(stuck_run(), [], tmp_path)["outcome"]
    assert live == said
    assert f"outcome: {said}" in text
    assert f"outcome: {said}" in html
    for view in (text, html, live):
        assert "round cap" not in view
    dbg.close()


def test_the_text_view_and_the_snapshot_write_a_cost_alike() -> None:
    dbg = LoopDebugger.from_trace(stuck_run())
    text, html = dbg.summary(), dbg.snapshot_html()
    assert "cost $0.0002187" in text
    assert "cost $0.0002187" in html
    assert "$0.000219<" not in html  # the round's own cell too
    dbg.close()


AMOUNTS: list[Any] = [
    0,
    1e-7,
    0.0002187,
    0.000219,
    0.00021875,
    1.5,
    1234.5678,
    -0.0042,
    99.995,
    123456789.125,
    None,
    "0.0002187",
]


def test_the_pages_money_formatter_writes_what_python_writes(tmp_path: Path) -> None:
    page = _in_node([], AMOUNTS, tmp_path)["usd"]
    assert page == [format_usd(a) for a in AMOUNTS]
    assert page[1] == "$0.0000001"  # never an exponent
