"""JSONL traces: written as events happen, durable per round, never interleaved, read back
exactly; a partial last line is skipped and reported."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import tool
from loopkit import CATALOG_NAMES, MODEL, calls, catalog_run, final, tool_call

from toolloop_lab import (
    LLMAgent,
    RunView,
    ScriptedChatModel,
    ToolLoopResult,
    TraceWriter,
    Usage,
    echo_tool,
    fork,
    read_trace,
)
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._trace import encode_event, write_trace
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.errors import TraceError, UnknownRunError
from toolloop_lab.events import (
    Event,
    LoopFinished,
    LoopStarted,
    RoundStarted,
    SynthesisStarted,
    ToolDispatched,
    select_run,
    top_level_run_ids,
    transcript,
)

REPO = Path(__file__).resolve().parents[1]


def dispatched(run_id: str, n: int, content: str, args: dict[str, Any] | None = None) -> Event:
    return ToolDispatched(
        run_id=run_id,
        round=n,
        t=0.001 * n,
        tool_call_id=f"call_{n}",
        name="echo",
        args=args or {"text": content},
        status="success",
        error_reason=None,
        duration_s=0.0,
        output_chars=len(content),
        content=content,
    )


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_a_run_reads_back_exactly(name: str, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        outcome = catalog_run(name, writer)
    assert writer.lines == len(outcome.events)
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(outcome.events)
    assert [json.loads(line)["kind"] for line in lines] == [e.kind for e in outcome.events]
    read = read_trace(path)
    assert read.events == outcome.events  # typed, Decimal and Usage included
    assert read.skipped == ()
    assert read.partial_line is None


def test_each_event_is_on_disk_before_the_next_one_happens(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    on_disk: list[int] = []
    with TraceWriter(path) as writer:
        catalog_run(
            "pruning",
            writer,
            lambda _e: on_disk.append(len(path.read_bytes().splitlines())),
        )
    assert on_disk == list(range(1, len(on_disk) + 1))


def test_no_fsync_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    path = tmp_path / "nosync.jsonl"
    with TraceWriter(path) as writer:
        outcome = catalog_run("round_cap", writer)
    assert synced == []
    assert read_trace(path).events == outcome.events


def test_fsync_at_every_round_boundary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    path = tmp_path / "sync.jsonl"
    writer = TraceWriter(path, fsync=True)
    outcome = catalog_run("round_cap", writer)
    boundaries = [
        e for e in outcome.events if isinstance(e, (RoundStarted, SynthesisStarted, LoopFinished))
    ]
    assert len(boundaries) == 3
    assert len(synced) == len(boundaries)
    writer.close()
    assert len(synced) == len(boundaries) + 1
    writer.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        writer(outcome.events[0])


def test_awkward_values_serialise(tmp_path: Path) -> None:
    awkward = {
        "price": Decimal("0.1000000000000000055511151231257827"),
        "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "raw": b"\xff\xfe bytes",
        "text": b"plain bytes",
        "nan": math.nan,
        "inf": -math.inf,
    }
    surrogate = "half a pair: \ud83d, newline:\n, tab:\t, nul:\x00"
    event = dispatched("r1", 1, surrogate, awkward)
    path = write_trace(tmp_path / "awkward.jsonl", [event])
    data = path.read_bytes()
    assert data.count(b"\n") == 1  # the newline inside the content is escaped
    assert data.isascii()
    back = read_trace(path).events[0]
    assert isinstance(back, ToolDispatched)
    assert back.content == surrogate
    assert back.args == {
        "price": "0.1000000000000000055511151231257827",
        "when": "2026-01-02T03:04:05+00:00",
        "raw": {"__bytes_base64__": "//4gYnl0ZXM="},
        "text": "plain bytes",
        "nan": "NaN",
        "inf": "-Infinity",
    }


SPLIT_HALVES = (
    "two halves, not one character: \udbff\udc00; one character: \U0010fc00; "
    "halves around a noncharacter: \ud800\ufdd0\udc00, \ud800\ufdd0\ufdd0\udfff; "
    "backwards: \udc00\udbff; three: \ud800\ud800\udc00\udc00; at the end \udbff"
)
"""Surrogate code points as tools that assemble UTF-16 halves leave them."""


def test_surrogate_halves_read_back_as_the_same_code_points(tmp_path: Path) -> None:
    event = dispatched("r1", 1, SPLIT_HALVES, {SPLIT_HALVES: [SPLIT_HALVES, "\udbff\udc00"]})
    path = write_trace(tmp_path / "halves.jsonl", [event])
    assert path.read_bytes().isascii()
    back = read_trace(path).events[0]
    assert isinstance(back, ToolDispatched)
    assert back.content == SPLIT_HALVES
    assert back.args == {SPLIT_HALVES: [SPLIT_HALVES, "\udbff\udc00"]}
    assert back == event


def test_a_trace_written_before_halves_were_kept_apart_reads_as_it_did(tmp_path: Path) -> None:
    """Older writers escaped every surrogate alone, and JSON joins a pair of escapes."""
    event = dispatched("r1", 1, "x \ud83d\ude00 \ufdd0 \ud800")
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(event.to_dict()) + "\n", encoding="ascii")
    back = read_trace(path).events[0]
    assert isinstance(back, ToolDispatched)
    assert back.content == "x \U0001f600 \ufdd0 \ud800"


def test_partial_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    outcome = catalog_run("single_round")
    write_trace(path, outcome.events[:-1])
    cut = encode_event(outcome.events[-1])[:40]
    with path.open("ab") as handle:
        handle.write(cut)  # a writer killed in the middle of a line
    read = read_trace(path)
    assert read.events == outcome.events[:-1]
    assert read.partial_line == cut.decode()
    assert [(s.number, s.reason) for s in read.skipped] == [
        (len(outcome.events), "partial last line")
    ]


def test_a_new_writer_ends_a_partial_line_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "resumed.jsonl"
    first = catalog_run("single_round").events
    second = catalog_run("unknown_tool").events
    write_trace(path, first)
    with path.open("ab") as handle:
        handle.write(b'{"kind": "round_st')
    write_trace(path, second)
    read = read_trace(path)
    assert read.events == first + second
    assert read.partial_line is None
    assert len(read.skipped) == 1
    assert read.skipped[0].reason.startswith("not JSON")
    assert read.run_ids == (first[0].run_id, second[0].run_id)
    assert read.run() == second
    assert read.run(first[0].run_id) == first


def test_lines_that_are_not_events_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    events = catalog_run("single_round").events
    write_trace(path, events[:2])
    with path.open("ab") as handle:
        handle.write(b'["a list"]\n{"kind": "from_the_future", "run_id": "x"}\n\n')
    write_trace(path, events[2:])
    read = read_trace(path)
    assert read.events == events
    assert [(s.number, s.problem) for s in read.skipped] == [
        (3, "model_attributes_type"),  # an array, not an object
        (4, "union_tag_invalid"),  # a kind no version of the loop emits
    ]


def test_the_reader_says_where_each_event_was_and_whose_a_skipped_line_is(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mixed.jsonl"
    events = catalog_run("single_round").events
    write_trace(path, events[:2])
    with path.open("ab") as handle:
        handle.write(b'{"run_id": "r9", "kind": "round_start"}\nnot json\n\n')
    write_trace(path, events[2:])
    read = read_trace(path)
    assert read.lines == (1, 2, *range(6, 4 + len(events)))
    assert [(s.number, s.run_id) for s in read.skipped] == [(3, "r9"), (4, None)]


def test_not_a_trace(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read trace"):
        read_trace(tmp_path / "missing.jsonl")
    other = tmp_path / "notes.txt"
    other.write_text("dear diary\nnothing here\n")
    with pytest.raises(TraceError, match="not a toolloop_lab trace"):
        read_trace(other)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert read_trace(empty).events == ()


def test_threads_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    writer = TraceWriter(path, fsync=False)
    big = "x" * 100_000  # far over PIPE_BUF

    def work(i: int) -> None:
        for n in range(50):
            writer(dispatched(f"thread{i}", n, big + str(n)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    read = read_trace(path)
    assert read.skipped == ()
    assert len(read.events) == 400
    for i in range(8):
        mine = [e for e in read.events if e.run_id == f"thread{i}"]
        assert [e.round for e in mine] == list(range(50))


_WRITER = textwrap.dedent(
    """
    import sys
    from toolloop_lab.events import ToolDispatched
    from toolloop_lab import TraceWriter

    run_id, path = sys.argv[1], sys.argv[2]
    writer = TraceWriter(path, fsync=False)
    for n in range(200):
        text = run_id * 20_000 + str(n)
        writer(ToolDispatched(run_id=run_id, round=n, t=0.0, tool_call_id=str(n), name="echo",
               args={}, status="success", error_reason=None, duration_s=0.0,
               output_chars=len(text), content=text))
    writer.close()
    """
)


def test_concurrent_processes_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, f"p{i}", str(path)], cwd=REPO)
        for i in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    read = read_trace(path)
    assert read.skipped == ()
    assert len(read.events) == 800
    for i in range(4):
        mine = [e for e in read.events if e.run_id == f"p{i}"]
        assert [e.round for e in mine] == list(range(200))
        assert all(isinstance(e, ToolDispatched) and e.content.startswith(f"p{i}") for e in mine)


_KILLED = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool
    from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
    from toolloop_lab import TraceWriter

    def work(text: str) -> str:
        if text == "die":
            os.kill(os.getpid(), signal.SIGKILL)  # the kernel dies mid-round
        return text

    tool = StructuredTool.from_function(work, name="work", description="work")
    calls = [
        AIMessage(content="", tool_calls=[{"name": "work", "args": {"text": t}, "id": t,
                  "type": "tool_call"}], usage_metadata={"input_tokens": 10,
                  "output_tokens": 5, "total_tokens": 15})
        for t in ("one", "two", "die")
    ]
    agent = LLMAgent(ScriptedChatModel(calls), [tool], AgentConfig(tool_max_rounds=5),
                     observers=[TraceWriter(sys.argv[1])])
    asyncio.run(agent.arun("go"))
    """
)


def test_a_killed_process_leaves_every_completed_round(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED, str(path)], cwd=REPO, timeout=120, check=False
    )
    assert proc.returncode == -9
    read = read_trace(path)
    assert read.partial_line is None
    kinds = [(e.kind, e.round) for e in read.events]
    assert kinds[0] == ("loop_start", 0)
    for n in (1, 2):  # both completed rounds are there, every event of them
        assert [k for k, r in kinds if r == n] == [
            "round_start",
            "model_call_start",
            "model_call",
            "tool_start",
            "tool_dispatch",
        ]
    assert [k for k, r in kinds if r == 3][:3] == ["round_start", "model_call_start", "model_call"]
    assert not any(isinstance(e, LoopFinished) for e in read.events)
    assert isinstance(read.events[0], LoopStarted)


def test_usage_survives_the_round_trip(tmp_path: Path) -> None:
    finished = LoopFinished(
        run_id="r",
        round=3,
        t=1.5,
        final_text="done",
        rounds=2,
        usage=Usage(12, 6, requests=2, estimated=True, cost_usd=None),
        budget_exhausted=False,
        synthesis_was_run=False,
        synthesis_reason=None,
        outcome="final_answer",
    )
    path = write_trace(tmp_path / "u.jsonl", [finished])
    assert read_trace(path).events == (finished,)


# -- traces written before the start events and outcomes existed (issue 14) ---------------

LEGACY = Path(__file__).parent / "data" / "trace_v0_1.jsonl"
"""Written by toolloop_lab 0.1 (before ``model_call_start``, ``tool_start`` and outcomes):
the catalog's token_budget, pruning, model_exception and usd_budget scenarios."""


def test_an_old_trace_still_loads_every_line() -> None:
    read = read_trace(LEGACY)
    assert read.skipped == ()
    assert len(read.events) == LEGACY.read_bytes().count(b"\n")
    assert len(read.run_ids) == 4
    assert not any(e.kind in ("model_call_start", "tool_start") for e in read.events)


def test_an_old_trace_gets_its_outcomes_from_its_other_fields() -> None:
    read = read_trace(LEGACY)
    ends = [read.run(run_id)[-1] for run_id in read.run_ids]
    assert [e.outcome for e in ends] == [  # type: ignore[union-attr]
        "token_budget_exhausted",
        "final_answer",
        "failed",
        "usd_budget_exhausted",
    ]


def test_an_old_trace_folds_into_the_same_view_as_before() -> None:
    read = read_trace(LEGACY)
    views = [RunView.from_events(read.run(run_id)) for run_id in read.run_ids]
    assert [v.status for v in views] == ["finished", "finished", "failed", "failed"]
    pruning = views[1]
    assert pruning.tokens_saved > 1_000
    assert [len(r.tools) for r in pruning.rounds] == [1, 0]
    assert views[0].token_gate == "tripped"
    assert transcript(read.run(read.run_ids[0])) == []  # no messages were written then


def test_the_default_run_of_a_trace_is_the_last_top_level_one(tmp_path: Path) -> None:
    def started(run_id: str, parent: str | None) -> LoopStarted:
        return LoopStarted(
            run_id=run_id,
            round=0,
            t=0.0,
            model_name=None,
            tools=(),
            max_rounds=None,
            token_budget=None,
            context_window=None,
            usd_limit=None,
            prune_tools=(),
            input_messages=1,
            started_at="2026-01-01T00:00:00+00:00",
            source="langchain",
            parent_run_id=parent,
        )

    # the outer run starts, calls a sub-agent (which starts later), and goes on
    events = [started("outer", None), started("inner", "outer")]
    path = write_trace(tmp_path / "nested.jsonl", events)
    read = read_trace(path)
    assert read.run_ids == ("outer", "inner")
    assert read.top_level_run_ids == ("outer",)
    assert read.run() == (events[0],)
    assert read.run("inner") == (events[1],)
    # a trace only the sub-agent wrote: its parent is not there, so it is the trace's run
    assert select_run(events[1:]) == (events[1],)
    assert top_level_run_ids(events[1:]) == ("inner",)


# -- which run (issue 25): one rule for every reader ------------------------------------------
def _helper_and_boss(
    writer: TraceWriter, *, blocking: bool = False
) -> tuple[LLMAgent, LLMAgent, list[ToolLoopResult]]:
    """A boss agent whose tool awaits a helper agent (or, ``blocking``, runs it from a
    plain function, in a worker thread); both write to one trace."""
    helper = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("echo", {"text": "1+1"}, "h1"), tokens=(30, 3)), final("two")],
            model_name=MODEL,
        ),
        [echo_tool()],
        observers=[writer],
    )
    helped: list[ToolLoopResult] = []

    @tool
    async def ask_helper(question: str) -> str:
        """Ask the helper agent."""
        result = await helper.arun(question)
        helped.append(result)
        return str(result.final_response.content)

    @tool("ask_helper")
    def ask_helper_blocking(question: str) -> str:
        """Ask the helper agent."""
        result = helper.run(question)
        helped.append(result)
        return str(result.final_response.content)

    boss = LLMAgent(
        ScriptedChatModel(
            [
                calls(tool_call("ask_helper", {"question": "1+1?"}, "o1"), tokens=(90, 9)),
                final("It is two.", tokens=(120, 12)),
            ],
            model_name=MODEL,
        ),
        [ask_helper_blocking if blocking else ask_helper],
        observers=[writer],
    )
    return boss, helper, helped


def _every_reader_picks(path: Path, run_id: str | None = None) -> dict[str, RunFigures]:
    """The run each entry point takes from ``path``, as figures (with ``run_id`` if given)."""
    read = read_trace(path)
    picked = {
        "TraceRead.run": RunFigures.of_view(RunView.from_events(read.run(run_id))),
        "select_run": RunFigures.of_view(RunView.from_events(select_run(read.events, run_id))),
        "fork": fork(
            path, 1, model=ScriptedChatModel([final("again")]), tools=[echo_tool()], run_id=run_id
        ).original,
        "from_trace": RunFigures.of_view(LoopDebugger.from_trace(path, run_id=run_id).view),
    }
    return picked


def _transcript_is(path: Path, result: ToolLoopResult, run_id: str | None = None) -> None:
    assert transcript(read_trace(path).events, run_id) == list(result.messages)


@pytest.mark.parametrize("blocking", [False, True], ids=["async_tool", "sync_tool"])
def test_a_trace_with_a_sub_agent_opens_on_the_parent_run_everywhere(
    tmp_path: Path, blocking: bool
) -> None:
    path = tmp_path / "nested.jsonl"
    with TraceWriter(path) as writer:
        boss, _, helped = _helper_and_boss(writer, blocking=blocking)
        outer = boss.run("What is 1+1?")
    (inner,) = helped
    read = read_trace(path)
    assert read.run_ids == (outer.events[0].run_id, inner.events[0].run_id)
    (_, nested) = (e for e in read.events if isinstance(e, LoopStarted))
    assert nested.parent_run_id == outer.events[0].run_id  # the loop says who called it
    assert nested.parent_tool_call_id == "o1"
    assert read.top_level_run_ids == (outer.events[0].run_id,)
    picked = _every_reader_picks(path)
    assert picked == dict.fromkeys(picked, RunFigures.of_result(outer))
    _transcript_is(path, outer)
    chosen = _every_reader_picks(path, inner.events[0].run_id)
    assert chosen == dict.fromkeys(chosen, RunFigures.of_result(inner))
    _transcript_is(path, inner, inner.events[0].run_id)


def test_a_trace_a_cell_appended_to_twice_opens_on_the_newest_run_everywhere(
    tmp_path: Path,
) -> None:
    path = tmp_path / "twice.jsonl"
    runs = []
    for tokens in ((10, 1), (20, 2)):  # the same cell run twice, one trace
        with TraceWriter(path) as writer:
            agent = LLMAgent(
                ScriptedChatModel(
                    [calls(tool_call("echo", {"text": "x"}, "c1"), tokens=tokens), final("ok")],
                    model_name=MODEL,
                ),
                [echo_tool()],
                observers=[writer],
            )
            runs.append(agent.run("Echo x."))
    first, newest = runs
    picked = _every_reader_picks(path)
    assert picked == dict.fromkeys(picked, RunFigures.of_result(newest))
    _transcript_is(path, newest)
    chosen = _every_reader_picks(path, first.events[0].run_id)
    assert chosen == dict.fromkeys(chosen, RunFigures.of_result(first))
    _transcript_is(path, first, first.events[0].run_id)


def test_a_run_the_trace_does_not_hold_is_refused_naming_the_runs_it_holds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.jsonl"
    with TraceWriter(path) as writer:
        model = ScriptedChatModel([final("ok")], model_name=MODEL)
        result = LLMAgent(model, [echo_tool()], observers=[writer]).run("Hi.")
    held = result.events[0].run_id
    read = read_trace(path)
    attempts = {
        "select_run": lambda: select_run(read.events, "nope"),
        "TraceRead.run": lambda: read.run("nope"),
        "transcript": lambda: transcript(read.events, "nope"),
        "fork": lambda: fork(
            path, 1, model=ScriptedChatModel([]), tools=[echo_tool()], run_id="nope"
        ),
        "from_trace": lambda: LoopDebugger.from_trace(path, run_id="nope"),
    }
    for where, attempt in attempts.items():
        with pytest.raises(UnknownRunError) as info:
            attempt()
        assert (info.value.run_id, info.value.available) == ("nope", (held,)), where
        assert held in str(info.value), where
        assert info.value.field == "run_id", where


def test_a_trace_lists_every_run_with_its_events_in_start_order(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    with TraceWriter(path) as writer:
        boss, _, helped = _helper_and_boss(writer)
        outer = boss.run("What is 1+1?", name="boss")
        model = ScriptedChatModel([final("four")], model_name=MODEL)
        again = LLMAgent(model, observers=[writer]).run("And 2+2?", name="again")
    read = read_trace(path)
    inner = helped[0]
    ids = tuple(r.events[0].run_id for r in (outer, inner, again))
    assert tuple(read.runs) == ids == read.run_ids  # the sub-agent started after its parent
    for result in (outer, inner, again):
        assert read.runs[result.events[0].run_id] == result.events
    names = [getattr(read.runs[i][0], "name", "?") for i in ids]
    assert names == ["boss", None, "again"]
    with pytest.raises(TypeError):
        read.runs["x"] = ()  # type: ignore[index]
    assert read_trace(write_trace(tmp_path / "none.jsonl", [])).runs == {}
