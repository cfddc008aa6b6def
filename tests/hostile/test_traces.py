"""Traces under fire: a process killed with SIGKILL mid-run, a cut or corrupted tail, two
runs appending to one file at once, values JSON has no form for, and lines someone
edited by hand.

Each case asserts exact events: everything written before the fault reads back, typed and
equal; whatever cannot be read is skipped *and reported* (line number and reason), never
silently dropped and never allowed to hide the lines around it.

Related cases elsewhere: writer-level interleaving across threads and processes, a killed
process that kills itself, fsync policy (tests/test_trace.py).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hostilekit import check_events, check_result, kinds, only
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool, tool
from loopkit import MODEL, calls, final, tool_call, usage

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    ToolLoopResult,
    TraceWriter,
    read_trace,
)
from toolloop_lab._trace import encode_event, write_trace
from toolloop_lab.errors import TraceError
from toolloop_lab.events import Event, ModelCalled, ToolDispatched, transcript
from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios

REPO = Path(__file__).resolve().parents[2]
SAFETY_S = 120.0
"""Only a deadlock guard for the subprocesses, never a timing assertion."""


def _run(*observers: Any, rounds: int = 2, output: str = "out") -> ToolLoopResult:
    """A scripted run of ``rounds`` echo rounds and a final answer (sync)."""

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    script: list[Any] = [
        calls(tool_call("echo", {"text": f"{output} {n}"}, f"c{n}"), text=f"round {n}")
        for n in range(1, rounds + 1)
    ]
    model = ScriptedChatModel([*script, final("done")], model_name=MODEL)
    agent = LLMAgent(
        model, [echo], AgentConfig(tool_max_rounds=rounds + 1), observers=list(observers)
    )
    return agent.run("go")


# -- SIGKILL mid-run ----------------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool
    from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
    from toolloop_lab import TraceWriter

    path, known, fsync = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"

    async def work(n: int) -> str:
        if n == known + 1:  # the round after the known ones: wait here to be killed
            await asyncio.Event().wait()
        return f"output of round {n} " + "x" * 3000

    tool = StructuredTool.from_function(coroutine=work, name="work", description="Work.")
    replies = [
        AIMessage(f"round {n}", tool_calls=[{"name": "work", "args": {"n": n}, "id": f"c{n}",
                  "type": "tool_call"}],
                  usage_metadata={"input_tokens": 10 * n, "output_tokens": n,
                                  "total_tokens": 11 * n})
        for n in range(1, known + 3)
    ]
    agent = LLMAgent(ScriptedChatModel(replies, model_name="gpt-4o-mini"), [tool],
                     AgentConfig(tool_max_rounds=known + 5),
                     observers=[TraceWriter(path, fsync=fsync)])
    asyncio.run(agent.arun("go"))
    """
)


def _round_kinds(events: tuple[Event, ...], number: int) -> list[str]:
    return [e.kind for e in events if e.round == number]


@pytest.mark.parametrize(("known", "fsync"), [(1, False), (3, True), (10, False)])
def test_sigkill_leaves_every_completed_round(known: int, fsync: bool, tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(path), str(known), "1" if fsync else "0"], cwd=REPO
    )
    try:
        deadline = time.monotonic() + SAFETY_S
        seen: tuple[Event, ...] = ()
        # the child is known to sit inside round known+1's tool call once that call's
        # tool_start is on disk (it comes after the round's model_call): nothing more is
        # written until the kill
        while not any(e.kind == "tool_start" and e.round == known + 1 for e in seen):
            assert child.poll() is None, "the child ended on its own"
            assert time.monotonic() < deadline, "the child never got there"
            time.sleep(0.01)
            seen = read_trace(path).events if path.exists() else ()
        child.send_signal(signal.SIGKILL)
        assert child.wait(SAFETY_S) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()

    read = read_trace(path)
    assert (read.partial_line, read.skipped) == (None, ())
    assert read.events == seen  # nothing written before the kill is lost
    assert kinds(read.events)[0] == "loop_start"
    for number in range(1, known + 1):
        assert _round_kinds(read.events, number) == [
            "round_start",
            "model_call_start",
            "model_call",
            "tool_start",
            "tool_dispatch",
        ]
        done = only(e for e in read.events if isinstance(e, ToolDispatched) and e.round == number)
        assert done.content == f"output of round {number} " + "x" * 3000
    assert _round_kinds(read.events, known + 1) == [
        "round_start",
        "model_call_start",
        "model_call",
        "tool_start",
    ]
    last = read.events[-2]
    assert isinstance(last, ModelCalled)
    assert last.accumulated.input_tokens == sum(10 * n for n in range(1, known + 2))


# -- a cut or corrupted tail --------------------------------------------------------------


def test_every_cut_inside_the_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    events = _run().events
    whole = b"".join(encode_event(e) for e in events)
    last = encode_event(events[-1])
    head = whole[: len(whole) - len(last)]
    path = tmp_path / "cut.jsonl"
    for keep in range(1, len(last) - 1):  # every byte of the last line but its newline
        path.write_bytes(head + last[:keep])
        read = read_trace(path)
        assert read.events == events[:-1], keep
        assert read.partial_line == last[:keep].decode("ascii")
        assert [(s.number, s.reason) for s in read.skipped] == [(len(events), "partial last line")]


def test_a_whole_last_line_without_its_newline_is_still_partial(tmp_path: Path) -> None:
    # the writer puts a line and its newline in one write: no newline means it was cut
    events = _run().events
    path = tmp_path / "no-newline.jsonl"
    path.write_bytes(b"".join(encode_event(e) for e in events)[:-1])
    read = read_trace(path)
    assert read.events == events[:-1]
    assert read.partial_line == encode_event(events[-1])[:-1].decode("ascii")


def test_a_tail_of_nul_bytes_after_a_crash(tmp_path: Path) -> None:
    # a filesystem can leave the last block zero-filled after a power cut
    events = _run().events
    path = write_trace(tmp_path / "zeros.jsonl", events)
    with path.open("ab") as handle:
        handle.write(b"\x00" * 4096 + b"\n" + b"\x00" * 100)
    read = read_trace(path)
    assert read.events == events
    assert [s.reason.split(":")[0] for s in read.skipped] == ["not JSON", "partial last line"]
    assert read.skipped[0].number == len(events) + 1
    assert len(read.skipped[0].text) == 200  # a snippet, not 4 KB of zeros


def test_a_new_writer_after_a_cut_line_keeps_both_runs_readable(tmp_path: Path) -> None:
    first = _run(output="first").events
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"".join(encode_event(e) for e in first)[:-25])  # the kill
    with TraceWriter(path) as writer:
        second = _run(writer, output="second").events
    read = read_trace(path)
    assert read.events == first[:-1] + second
    assert read.partial_line is None
    assert read.run(second[0].run_id) == second


# -- two runs writing at once -------------------------------------------------------------


async def test_two_concurrent_runs_in_one_process_two_writers_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    big = "y" * 70_000  # far over PIPE_BUF

    @tool
    async def slow_echo(text: str) -> str:
        """Echo, letting the other run write in between."""
        await asyncio.sleep(0)
        return text + big

    async def one(name: str) -> ToolLoopResult:
        script: list[Any] = [
            calls(tool_call("slow_echo", {"text": f"{name}{n}"}, f"{name}{n}"), text=name)
            for n in range(5)
        ]
        model = ScriptedChatModel([*script, final(name)], model_name=MODEL)
        with TraceWriter(path) as writer:
            agent = LLMAgent(model, [slow_echo], AgentConfig(tool_max_rounds=6), observers=[writer])
            return await agent.arun("go")

    a, b = await asyncio.gather(one("a"), one("b"))
    read = read_trace(path)
    assert read.skipped == ()
    assert read.run(a.run_id) == a.events
    assert read.run(b.run_id) == b.events
    check_result(a)
    check_result(b)
    # they really were interleaved in the file
    ids = [e.run_id for e in read.events]
    assert ids != sorted(ids, key=[a.run_id, b.run_id].index)


def test_two_threads_share_one_writer(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    results: list[ToolLoopResult] = []
    with TraceWriter(path) as writer:
        workers = [
            threading.Thread(
                target=lambda: results.append(_run(writer, rounds=8, output="z" * 50_000))
            )
            for _ in range(2)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(SAFETY_S)
    assert len(results) == 2
    read = read_trace(path)
    assert read.skipped == ()
    for result in results:
        assert read.run(result.run_id) == result.events


_WRITER_CHILD = textwrap.dedent(
    """
    import sys
    from langchain_core.messages import AIMessage
    from langchain_core.tools import StructuredTool
    from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
    from toolloop_lab import TraceWriter
    from toolloop_lab._trace import write_trace

    shared, own, name = sys.argv[1], sys.argv[2], sys.argv[3]
    tool = StructuredTool.from_function(lambda n: name * 100_000 + str(n), name="big",
                                        description="Big output.")
    replies = [AIMessage("", tool_calls=[{"name": "big", "args": {"n": n}, "id": f"c{n}",
                         "type": "tool_call"}]) for n in range(20)] + ["done"]
    with TraceWriter(shared) as writer:
        result = LLMAgent(ScriptedChatModel(replies, model_name="gpt-4o-mini"), [tool],
                          AgentConfig(tool_max_rounds=25), observers=[writer]).run("go")
    write_trace(own, result.events)
    """
)


def test_two_processes_running_agents_into_one_file(tmp_path: Path) -> None:
    shared = tmp_path / "shared.jsonl"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER_CHILD, str(shared), str(tmp_path / f"{n}.jsonl"), n],
            cwd=REPO,
        )
        for n in ("p", "q")
    ]
    assert [c.wait(SAFETY_S) for c in children] == [0, 0]
    read = read_trace(shared)
    assert read.skipped == ()
    for n in ("p", "q"):
        own = read_trace(tmp_path / f"{n}.jsonl").events
        assert read.run(own[0].run_id) == own
        outputs = [e.content for e in own if isinstance(e, ToolDispatched)]
        assert outputs == [n * 100_000 + str(i) for i in range(20)]


# -- values JSON has no form for ----------------------------------------------------------

AWKWARD_ARGS: dict[str, Any] = {
    "price": Decimal("0.1000000000000000055511151231257827"),
    "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    "raw": b"\xff\xfe",
    "utf8": b"caf\xc3\xa9",
    "nan": math.nan,
    "inf": -math.inf,
    "lone \ud800 key": "lone \udfff value",
    "set": {3, 1, 2},
    "nested": (Decimal("1E+2"), [math.inf]),
}
AWKWARD_JSON = {
    "price": "0.1000000000000000055511151231257827",
    "when": "2026-01-02T03:04:05+00:00",
    "raw": {"__bytes_base64__": "//4="},
    "utf8": "café",
    "nan": "NaN",
    "inf": "-Infinity",
    "lone \ud800 key": "lone \udfff value",
    "set": [1, 2, 3],
    "nested": ["1E+2", ["Infinity"]],
}
TEXT = "half a pair \ud83d, a NUL \x00, a newline \n, U+2028 \u2028, an escape \x1b[31m"


def test_awkward_values_from_a_real_run_serialise_and_read_back(tmp_path: Path) -> None:
    @tool
    def report(**kwargs: Any) -> dict[str, Any]:
        """Returns the awkward values themselves."""
        return {"echo": TEXT, **AWKWARD_ARGS}

    odd = AIMessage(TEXT, usage_metadata=usage(10, 5)).model_copy(
        update={
            "tool_calls": [
                {"name": "report", "args": AWKWARD_ARGS, "id": "a1", "type": "tool_call"}
            ]
        }
    )
    model = ScriptedChatModel([odd, final(TEXT)], model_name=MODEL)
    path = tmp_path / "awkward.jsonl"
    with TraceWriter(path) as writer:
        result = LLMAgent(model, [report], observers=[writer]).run("go")
    check_result(result)

    data = path.read_bytes()
    assert data.isascii()
    assert data.count(b"\n") == len(result.events)  # no raw newline inside a line
    read = read_trace(path)
    assert read.skipped == ()
    assert kinds(read.events) == kinds(result.events)
    called = [e for e in read.events if isinstance(e, ModelCalled)]
    assert [c.text for c in called] == [TEXT, TEXT]
    assert dict(called[0].tool_calls[0].args) == AWKWARD_JSON
    dispatched = only(e for e in read.events if isinstance(e, ToolDispatched))
    original = only(e for e in result.events if isinstance(e, ToolDispatched))
    assert dispatched.content == original.content  # surrogates and NUL kept, exactly
    assert json.loads(dispatched.content)["echo"] == TEXT
    assert dict(dispatched.args) == AWKWARD_JSON
    assert read.events[-1].to_dict()["final_text"] == TEXT


def _utf16_text(units: list[int]) -> str:
    """Text assembled from UTF-16 code units one by one, as some tools do: a pair of
    halves stays two code points."""
    return "".join(chr(u) for u in units)


def test_surrogate_halves_from_a_real_run_read_back_as_the_same_transcript(
    tmp_path: Path,
) -> None:
    halves = _utf16_text([0x68, 0xDBFF, 0xDC00, 0x20, 0xD83D, 0xDE00])  # "h", two pairs

    @tool
    def decode(units: str) -> str:
        """Decode UTF-16 code units."""
        return halves + units

    model = ScriptedChatModel(
        [calls(tool_call("decode", {"units": halves}, "d1"), text=halves), final(halves)],
        model_name=MODEL,
    )
    path = tmp_path / "halves.jsonl"
    with TraceWriter(path) as writer:
        result = LLMAgent(model, [decode], observers=[writer]).run(halves)
    check_result(result)
    read = read_trace(path)
    assert read.skipped == ()
    assert read.events == result.events
    assert [m.content for m in transcript(read.events)] == [m.content for m in result.messages]
    check_events(read.events)


# -- lines edited by hand -----------------------------------------------------------------


def _line(event: Event, **changes: Any) -> dict[str, Any]:
    data = json.loads(encode_event(event))
    data.update(changes)
    return data


def _tampered(events: tuple[Event, ...]) -> list[tuple[str, Any, tuple[str | None, str]]]:
    """(case, replacement for the line of ``events[1]``, (the field, the check) it fails)."""
    start, round_start = events[0], events[1]
    finished = events[-1]
    called = next(e for e in events if isinstance(e, ModelCalled))
    done = next(e for e in events if isinstance(e, ToolDispatched))
    usage = finished.usage.to_dict()  # type: ignore[union-attr]
    return [
        ("int-as-text", _line(round_start, round="1"), ("round_start.round", "int_type")),
        ("int-as-bool", _line(round_start, round=True), ("round_start.round", "int_type")),
        ("literal", _line(done, status="maybe"), ("tool_dispatch.status", "literal_error")),
        (
            "markup-literal",
            _line(done, status="<b>x</b>"),
            ("tool_dispatch.status", "literal_error"),
        ),
        ("decimal-nan", _line(start, usd_limit="NaN"), ("loop_start.usd_limit", "finite_number")),
        (
            "decimal-text",
            _line(start, usd_limit="abc"),
            ("loop_start.usd_limit", "decimal_parsing"),
        ),
        (
            "negative-usage",
            _line(finished, usage={**usage, "input_tokens": -1}),
            ("loop_finish.usage.input_tokens", "greater_than_equal"),
        ),
        (
            "usage-cost",
            _line(finished, usage={**usage, "cost_usd": "Infinity"}),
            ("loop_finish.usage.cost_usd", "finite_number"),
        ),
        ("time-nan", _line(round_start, t=math.nan), ("round_start.t", "finite_number")),
        ("args-list", _line(done, args=[1, 2]), ("tool_dispatch.args", "dict_type")),
        (
            "view-args",
            _line(called, tool_calls=[{"id": "x", "name": "n", "args": "s"}]),
            ("model_call.tool_calls.0.args", "dict_type"),
        ),
        ("tuple-of-int", _line(start, tools=[1]), ("loop_start.tools.0", "string_type")),
        (
            "unknown-kind",
            {"kind": "from_the_future", "run_id": "r"},
            (None, "union_tag_invalid"),
        ),
    ]


CASES = [
    "int-as-text",
    "int-as-bool",
    "literal",
    "markup-literal",
    "decimal-nan",
    "decimal-text",
    "negative-usage",
    "usage-cost",
    "time-nan",
    "args-list",
    "view-args",
    "tuple-of-int",
    "unknown-kind",
]


def test_every_edit_has_a_case() -> None:
    assert [c[0] for c in _tampered(_run().events)] == CASES


@pytest.mark.parametrize("case", CASES)
def test_an_edited_line_is_skipped_and_reported(case: str, tmp_path: Path) -> None:
    events = _run().events
    _, replacement, (field, problem) = next(c for c in _tampered(events) if c[0] == case)
    lines = [encode_event(e) for e in events]
    lines.insert(2, (json.dumps(replacement) + "\n").encode())
    path = tmp_path / "edited.jsonl"
    path.write_bytes(b"".join(lines))
    read = read_trace(path)
    assert read.events == events  # every genuine line, in order
    skipped = only(read.skipped)
    assert (skipped.number, skipped.field, skipped.problem) == (3, field, problem)
    assert skipped.reason.startswith("not an event: ")


def test_a_line_missing_a_field_is_skipped(tmp_path: Path) -> None:
    events = _run().events
    broken = _line(events[-1])
    del broken["rounds"]
    path = write_trace(tmp_path / "missing.jsonl", events)
    with path.open("ab") as handle:
        handle.write(json.dumps(broken).encode() + b"\n")
    skipped = only(read_trace(path).skipped)
    assert (skipped.field, skipped.problem) == ("loop_finish.rounds", "missing")


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"\xff\xfe not utf-8\n", "json_invalid"),
        (b"[1, 2, 3]\n", "model_attributes_type"),
        (b"x" * 5_000_000 + b"\n", "json_invalid"),
        (b"[" * 100_000 + b"\n", "json_invalid"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n", "json_invalid"),
    ],
    ids=["invalid-utf8", "array", "huge-garbage", "nested-too-deep", "objects-too-deep"],
)
def test_garbage_between_good_lines(raw: bytes, problem: str, tmp_path: Path) -> None:
    events = _run().events
    lines = [encode_event(e) for e in events]
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"".join(lines[:2]) + raw + b"".join(lines[2:]))
    read = read_trace(path)
    assert read.events == events
    skipped = only(read.skipped)
    assert (skipped.number, skipped.problem) == (3, problem)
    assert len(skipped.text) <= 200


def test_crlf_line_endings_still_read(tmp_path: Path) -> None:
    events = _run().events
    path = tmp_path / "windows.jsonl"
    path.write_bytes(b"".join(encode_event(e) for e in events).replace(b"\n", b"\r\n"))
    read = read_trace(path)
    assert (read.events, read.skipped) == (events, ())


def test_only_edited_lines_is_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "all-bad.jsonl"
    path.write_text(json.dumps(_line(_run().events[1], round="1")) + "\n")
    with pytest.raises(TraceError, match="not a toolloop_lab trace"):
        read_trace(path)


def test_a_saved_sweep_with_an_edited_event_is_a_trace_error(tmp_path: Path) -> None:
    results = run_scenarios([Scenario.scripted("s", [Reply.final("x")])], progress=False)
    path = results.save(tmp_path / "sweep.jsonl")
    text = path.read_text()
    assert '"usd_limit": null' in text
    path.write_text(text.replace('"usd_limit": null', '"usd_limit": "abc"', 1))
    with pytest.raises(TraceError, match=r"bad event: .*usd_limit"):
        LabResults.load(path)


def test_the_completeness_checks_hold_for_a_read_back_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        result = _run(writer, rounds=3)
    check_events(read_trace(path).events)
    assert read_trace(path).events == result.events


def test_a_writer_that_cannot_write_never_breaks_the_run(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "closed.jsonl")
    writer.close()  # every write now raises: the observer fails, the loop does not
    result = _run(writer)
    check_result(result)
    assert os.path.getsize(tmp_path / "closed.jsonl") == 0


def test_a_tool_named_like_markup_round_trips(tmp_path: Path) -> None:
    name = "<b>tool</b>"
    odd = StructuredTool.from_function(lambda: "ok", name=name, description="Odd name.")
    model = ScriptedChatModel([calls(tool_call(name, {}, "t1")), final("done")], model_name=MODEL)
    path = tmp_path / "named.jsonl"
    with TraceWriter(path) as writer:
        result = LLMAgent(model, [odd], observers=[writer]).run("go")
    assert read_trace(path).events == result.events
