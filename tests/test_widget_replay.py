"""``LoopDebugger.from_trace`` renders a finished run exactly as the live view ended."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_widget_scenarios import (
    SCENARIO_NAMES,
    no_widget_leaks,  # noqa: F401 - fixture
    run,
    scenario_by_name,
    text_of,
)

from toolloop_lab.trace import TraceWriter, encode_event, read_trace
from toolloop_lab.widget import LoopDebugger

pytestmark = pytest.mark.usefixtures("no_widget_leaks")


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_replay_equals_the_live_end_state(name: str, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    live = LoopDebugger()
    with TraceWriter(path) as writer:
        outcome = run(scenario_by_name(name, tmp_path), live, writer)
    from_events = LoopDebugger.from_trace(outcome.events)
    from_file = LoopDebugger.from_trace(path)
    from_str = LoopDebugger.from_trace(str(path))
    try:
        assert live.view.done
        for replay in (from_events, from_file, from_str):
            assert replay.panels == live.panels
            assert repr(replay) == repr(live)
            assert replay.view.events == len(outcome.events)
        assert live.panels["timeline"].count("<tr") == 1 + len(live.view.rounds)
    finally:
        for d in (live, from_events, from_file, from_str):
            d.close()


def test_replay_shows_the_last_run_unless_told(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    live = LoopDebugger()
    with TraceWriter(path) as writer:
        first = run(scenario_by_name("single_round", tmp_path), live, writer)
        second = run(scenario_by_name("pruning", tmp_path), live, writer)
    replay = LoopDebugger.from_trace(path)
    mixed = LoopDebugger.from_trace([*first.events, *second.events])
    chosen = LoopDebugger.from_trace(path, run_id=first.events[0].run_id)
    only_first = LoopDebugger.from_trace(first.events)
    try:
        assert "Pruned answer" in text_of(live.panels["header"])  # live shows the newest run
        assert replay.panels == live.panels
        assert mixed.panels == live.panels
        assert chosen.panels == only_first.panels
        assert "Final answer from loop" in text_of(chosen.panels["header"])
        with pytest.raises(KeyError):
            LoopDebugger.from_trace(path, run_id="nope")
    finally:
        for d in (live, replay, mixed, chosen, only_first):
            d.close()


def test_replay_of_a_cut_trace_says_so(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    outcome = run(scenario_by_name("pruning", tmp_path))
    with TraceWriter(path) as writer:
        for event in outcome.events[:-1]:
            writer(event)
    with path.open("ab") as handle:
        handle.write(encode_event(outcome.events[-1])[:30])
    replay = LoopDebugger.from_trace(path)
    try:
        assert read_trace(path).partial_line is not None
        head = text_of(replay.panels["header"])
        assert "● RUNNING" in head  # the finish never reached the disk
        assert "1 unreadable trace line(s) skipped (a partial last line" in head
        assert "saved" in text_of(replay.panels["pruning"])  # the completed round is there
    finally:
        replay.close()


async def test_a_stepped_run_ends_like_its_replay(tmp_path: Path) -> None:
    live = LoopDebugger(pause_on="both")
    task = live.start(scenario_by_name("pruning", tmp_path).agent(), "read the report")
    while not task.done():
        await asyncio.sleep(0.0005)
        if live.paused_at is not None:
            live.step()
    result = await task
    replay = LoopDebugger.from_trace(result.events)
    try:
        # round 1's call, its dispatch, the pruning call, round 2's call
        assert live._controller.pauses == 4
        assert replay.panels == live.panels
    finally:
        live.close()
        replay.close()


async def test_a_sync_run_in_a_worker_thread_ends_like_its_replay(tmp_path: Path) -> None:
    """``agent.run`` inside a running loop (a notebook cell) runs the loop in a worker
    thread: events, redraws and timers then happen off the kernel's thread."""
    live = LoopDebugger()
    agent = scenario_by_name("pruning", tmp_path).agent([live])
    result = agent.run("read the report")  # sync, from inside this test's running loop
    replay = LoopDebugger.from_trace(result.events)
    try:
        assert result.final_response.text == "Pruned answer"
        assert live.view.status == "finished"
        assert replay.panels == live.panels
    finally:
        live.close()
        replay.close()
