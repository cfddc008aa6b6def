"""Two runs side by side in the debugger: the wire form, ``dbg.compare``, the page's request
and the fork's comparison (mock comm).

The page draws what :mod:`toolloop_lab._widget.comparison` writes, so what a person must be
able to read off it is asserted here on the data: a call that became another tool's is a
change (never "±0 tokens"), calls added and removed, text diffs that rebuild both texts,
rounds that did the same as one line, both runs' totals, clipping and a byte budget. The
page's request is untrusted: it names runs of this debugger only, never a file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import comm
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from loopkit import ALL, IN_A_LOOP, MODEL, MockComm, calls, channel, final, tool_call

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    PausePoint,
    RunComparison,
    ScriptedChatModel,
    ToolLoopResult,
    compare,
    fork,
)
from toolloop_lab._support.words import CALL_CHANGE, CALL_CHANGE_PART
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.comparison import COMPARE_CHARS, comparison_payload
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.textdiff import DIFF_OPS, text_opcodes
from toolloop_lab.errors import ConfigurationError, ToolLoopError, UnknownRunError


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def read_log(path: str) -> str:
    """Read a log file."""
    return f"contents of {path}"


@tool
def open_ticket(title: str) -> str:
    """Open a ticket."""
    return f"ticket opened: {title}"


TOOLS: list[BaseTool] = [read_log, open_ticket]
LOOK = calls(
    tool_call("read_log", {"path": "disk.log"}, "c1"), text="I will look.", tokens=(100, 20)
)
READ = calls(
    tool_call("read_log", {"path": "app.log"}, "c2"), text="I will read the log.", tokens=(200, 20)
)
TICKET = calls(
    tool_call("open_ticket", {"title": "disk full"}, "c2"),
    text="I will open a ticket.",
    tokens=(200, 20),
)


def agent(script: Sequence[AIMessage], cap: int = 6) -> LLMAgent:
    model = ScriptedChatModel(list(script), model_name=MODEL)
    return LLMAgent(model, TOOLS, AgentConfig(tool_max_rounds=cap))


def run(script: Sequence[AIMessage], name: str | None = None) -> ToolLoopResult:
    return agent(script).run("The disk is full.", name=name)


def reading() -> ToolLoopResult:
    return run([LOOK, READ, final("done", tokens=(300, 10))], name="reads the log")


def ticketing() -> ToolLoopResult:
    return run([LOOK, TICKET, final("done", tokens=(300, 10))], name="opens a ticket")


def payload(a: Any, b: Any, **options: Any) -> dict[str, Any]:
    data: dict[str, Any] = comparison_payload(
        compare(a, b), max_chars=options.pop("max_chars", 20_000), budget_bytes=256_000, **options
    )
    return data


def differing(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [row for row in data["rows"] if not row["same"]]


def joined(ops: list[list[str]], side: int) -> str:
    return "".join(op[side] for op in ops)


# -- the wire form -------------------------------------------------------------------------


def test_a_call_that_became_another_tool_is_a_change_with_both_sides_shown() -> None:
    data = payload(reading(), ticketing())

    assert data["kind"] == "runs"
    assert data["tokens_delta"] == 0  # the same spend: only what the runs did differs
    assert (data["same"], data["rounds"], data["differing"]) == (False, 3, 1)
    first, second, third = data["rows"]
    assert (first["same"], first["round"], first["last"], first["tools"]) == (
        True,
        1,
        1,
        ["read_log"],
    )
    assert (third["same"], third["round"]) == (True, 3)
    assert second["round"] == 2
    assert second["calls"] == [
        {
            "mark": "changed",
            "a": 0,
            "b": 0,
            "parts": ["tool"],
            "args_diff": None,
            "result_diff": None,
        }
    ]
    (a_call,) = second["a"]["calls"]
    (b_call,) = second["b"]["calls"]
    assert (a_call["name"], a_call["args"], a_call["result"]) == (
        "read_log",
        '{"path": "app.log"}',
        "contents of app.log",
    )
    assert (b_call["name"], b_call["args"], b_call["said"]) == (
        "open_ticket",
        '{"title": "disk full"}',
        "success",
    )
    assert second["text_diff"] == [
        ["equal", "I will ", "I will "],
        ["replace", "read the log.", "open a ticket."],
    ]
    assert second["tokens_delta"] == 0


def test_both_runs_totals_names_and_outcomes_head_the_comparison() -> None:
    a, b = reading(), ticketing()

    data = payload(a, b)

    assert data["a"] == {
        "label": "a",
        "run_id": a.run_id,
        "name": "reads the log",
        "outcome": "final_answer",
        "reason": None,
        "detail": None,
        "rounds": a.rounds,
        "calls": 3,
        "input_tokens": 600,
        "output_tokens": 50,
        "cost_usd": format(a.cost_usd, "f"),
    }
    assert (data["b"]["name"], data["b"]["run_id"]) == ("opens a ticket", b.run_id)
    assert "E" not in data["cost_delta_usd"]  # a decimal string, never an exponent
    assert Decimal(data["cost_delta_usd"]) == 0
    json.dumps(data)  # plain JSON


async def skip_read_log(point: PausePoint) -> None:
    if point.stage == "tool_dispatch" and point.round == 2:
        point.skip("c2", "not needed")


def test_a_skipped_call_reads_as_skipped_by_you_in_the_words_file() -> None:
    model = ScriptedChatModel([LOOK, READ, final("done", tokens=(300, 10))], model_name=MODEL)
    skipped = LLMAgent(model, TOOLS, pause_hooks=[skip_read_log]).run("go")

    row = differing(payload(skipped, ticketing()))[0]

    assert row["a"]["calls"][0]["said"] == "not run (skipped by you)"
    assert row["a"]["calls"][0]["ran"] is False
    assert row["calls"][0]["mark"] == "changed"


def test_changed_arguments_and_results_come_with_their_diffs() -> None:
    other = run(
        [
            LOOK,
            calls(tool_call("read_log", {"path": "db.log"}, "c2"), text="I will read the log."),
            final("done"),
        ]
    )

    row = differing(payload(reading(), other))[0]

    (pair,) = row["calls"]
    assert (pair["mark"], pair["parts"]) == ("changed", ["arguments", "result"])
    assert pair["args_diff"] == [
        ["equal", '{"path": ', '{"path": '],
        ["replace", '"app.log"}', '"db.log"}'],
    ]
    assert joined(pair["result_diff"], 1) == "contents of app.log"
    assert joined(pair["result_diff"], 2) == "contents of db.log"
    assert row["text_diff"] is None  # the replies were the same


def test_calls_added_and_removed_are_marked_with_the_side_that_has_them() -> None:
    both = calls(
        tool_call("read_log", {"path": "app.log"}, "c2"),
        tool_call("open_ticket", {"title": "disk full"}, "c3"),
        text="I will read the log.",
        tokens=(200, 20),
    )
    more = run([LOOK, both, final("done", tokens=(300, 10))])

    row = differing(payload(reading(), more))[0]
    back = differing(payload(more, reading()))[0]

    assert [(p["mark"], p["a"], p["b"]) for p in row["calls"]] == [
        ("same", 0, 0),
        ("added", None, 1),
    ]
    assert [(p["mark"], p["a"], p["b"]) for p in back["calls"]] == [
        ("same", 0, 0),
        ("removed", 1, None),
    ]


def test_runs_of_different_lengths_and_a_failed_run() -> None:
    model = ScriptedChatModel([LOOK, READ, RuntimeError("provider down")], model_name=MODEL)
    with pytest.raises(ToolLoopError) as raised:
        LLMAgent(model, TOOLS).run("go")
    longer = run([LOOK, READ, READ, final("done")])

    data = payload(raised.value, longer)

    assert data["a"]["outcome"] == "failed"
    rows = differing(data)
    assert [r["round"] for r in rows] == [3, 4]
    assert "RuntimeError: provider down" in rows[0]["a"]["errors"][0]
    assert rows[1]["a"] is None  # the failed run has no round 4
    assert [p["mark"] for p in rows[1]["calls"]] == []  # the final answer calls nothing
    assert rows[1]["b"]["text"] == "done"


def test_rounds_that_did_the_same_are_one_row_however_many() -> None:
    script = [calls(tool_call("read_log", {"path": f"{i}"}, f"c{i}")) for i in range(40)]
    a = agent([*script, final("done")], 41).run("go")
    b = agent([*script, final("done")], 41).run("go")

    data = payload(a, b)

    assert data["same"] is True
    (row,) = data["rows"]
    assert (row["round"], row["last"], row["count"], row["tools"]) == (1, 41, 41, ["read_log"])


def test_round_numbers_take_the_offset_the_person_saw() -> None:
    data = payload(reading(), ticketing(), offset=3, kind="fork", labels=("original", "fork"))

    assert [r["round"] for r in data["rows"]] == [4, 5, 6]
    assert (data["a"]["label"], data["b"]["label"], data["kind"]) == ("original", "fork", "fork")


# -- text diffs ----------------------------------------------------------------------------


def test_a_text_diff_rebuilds_both_texts_and_marks_only_what_changed() -> None:
    rng = random.Random(26)
    words = ["alpha ", "beta ", "gamma\n", "日本語 ", "🙂", " ", "\n", "x"]
    for _ in range(200):
        a = "".join(rng.choice(words) for _ in range(rng.randrange(0, 60)))
        b = "".join(rng.choice(words) for _ in range(rng.randrange(0, 60)))
        ops = text_opcodes(a, b)
        assert (joined(ops, 1), joined(ops, 2)) == (a, b)
        assert all(op[0] in {"equal", "replace", "delete", "insert"} for op in ops)
        assert all(op[1] == op[2] for op in ops if op[0] == "equal")
    assert text_opcodes("one\ntwo\nthree\n", "one\n2\nthree\n") == [
        ["equal", "one\n", "one\n"],
        ["replace", "two\n", "2\n"],
        ["equal", "three\n", "three\n"],
    ]
    assert text_opcodes("", "new") == [["insert", "", "new"]]


def test_a_diff_too_costly_to_compute_reads_as_replaced_whole() -> None:
    a, b = "x " * 3_000, "y " * 3_000  # 3,000 words a side: 9,000,000 comparisons

    ops = text_opcodes(a, b)

    assert ops == [["replace", a, b]]


# -- clipping and bounds --------------------------------------------------------------------


def test_model_controlled_text_is_clipped_with_the_one_marker() -> None:
    long = "<script>alert(1)</script>" + "x" * 10_000
    hostile = run(
        [
            LOOK,
            calls(tool_call("read_log", {"path": ALL}, "c2"), text=long, tokens=(200, 20)),
            final("done"),
        ]
    )

    row = differing(payload(hostile, reading()))[0]

    assert row["a"]["text"].startswith("<script>alert(1)</script>")  # data, drawn as text
    assert row["a"]["text"].endswith(f"… ({len(long):,} chars)")
    assert len(row["a"]["text"]) < COMPARE_CHARS + 30
    assert all(len(op[1]) <= COMPARE_CHARS + 30 for op in row["text_diff"])
    small = differing(payload(hostile, reading(), max_chars=50))[0]
    assert small["a"]["calls"][0]["args"].endswith("chars)")


def test_rows_stop_at_the_byte_budget_and_the_rest_are_counted() -> None:
    def many(path: str) -> ToolLoopResult:
        script = [
            calls(tool_call("read_log", {"path": path * 500}, f"c{i}"), text=path * 3_000)
            for i in range(60)
        ]
        return agent([*script, final("done")], 61).run("go")

    data = comparison_payload(compare(many("a"), many("b")), max_chars=20_000, budget_bytes=100_000)

    assert data["left_out"] > 0
    assert len(data["rows"]) + data["left_out"] == data["rounds"] == 61
    assert len(json.dumps(data)) <= 100_000


def test_every_mark_and_part_has_words_in_the_words_file() -> None:
    assert set(CALL_CHANGE) == {"same", "changed", "added", "removed"}
    assert set(CALL_CHANGE_PART) == {"tool", "arguments", "result", "status"}


# -- the debugger ----------------------------------------------------------------------------


async def watched_runs() -> tuple[LoopDebugger, str, str]:
    """A debugger attached to an agent that ran twice: the runs of ``dbg.runs``."""
    dbg = LoopDebugger()
    first = agent([LOOK, READ, final("done", tokens=(300, 10))])
    first.subscribe(dbg)
    await first.arun("go", name="reads")
    second = agent([LOOK, TICKET, final("done", tokens=(300, 10))])
    second.subscribe(dbg)
    await second.arun("go", name="tickets")
    a, b = (s.run_id for s in dbg.runs)
    return dbg, a, b


def sent_comparison(dbg: LoopDebugger) -> Any:
    """The ``comparison`` trait as the page last received it."""
    updates = [u["comparison"] for u in channel(dbg).updates() if "comparison" in u]
    return updates[-1] if updates else None


async def test_dbg_compare_shows_two_of_its_runs_and_returns_the_comparison() -> None:
    dbg, a, b = await watched_runs()

    result = dbg.compare(a, b)

    assert isinstance(result, RunComparison)
    assert (result.a_run_id, result.b_run_id) == (a, b)
    shown = dbg.comparison
    assert (shown["a"]["name"], shown["b"]["name"]) == ("reads", "tickets")
    assert differing(shown)[0]["calls"][0]["mark"] == "changed"
    assert sent_comparison(dbg) == shown  # synced to the page, and saved with the notebook
    dbg.close()


@pytest.mark.filterwarnings(IN_A_LOOP)  # runs made for the test, inside its loop
async def test_dbg_compare_takes_results_and_traces_too(tmp_path: Path) -> None:
    dbg, a, _ = await watched_runs()
    path = write_trace(tmp_path / "t.jsonl", ticketing().events)

    dbg.compare(a, ticketing())
    assert dbg.comparison["b"]["name"] == "opens a ticket"
    dbg.compare(reading(), str(path))
    assert dbg.comparison["a"]["name"] == "reads the log"
    assert differing(dbg.comparison)[0]["calls"][0]["mark"] == "changed"
    with pytest.raises(UnknownRunError) as raised:
        dbg.compare(a, "no-such-run")
    assert a in str(raised.value)  # it names the runs it holds
    dbg.close()


@pytest.mark.filterwarnings(IN_A_LOOP)  # runs made for the test, inside its loop
async def test_dbg_compare_takes_a_forks_result_lined_up_with_its_original() -> None:
    dbg, a, _ = await watched_runs()
    original = reading()
    ticketer = ScriptedChatModel([TICKET, final("done", tokens=(300, 10))], model_name=MODEL)
    forked = fork(original, 2, model=ticketer, tools=TOOLS)

    result = dbg.compare(original, forked)

    assert result.b_offset == forked.at_round - 1
    assert [r.round for r in result.rounds] == [2, 3]  # round 1 was taken as it was
    assert dbg.comparison["b"]["input_tokens"] == forked.forked.input_tokens
    assert differing(dbg.comparison)[0]["calls"][0]["mark"] == "changed"
    with pytest.raises(ConfigurationError, match="a string") as raised:
        dbg.compare(a, a, b_run_id=7)  # type: ignore[arg-type]
    assert raised.value.field == "b_run_id"
    dbg.close()


def ask(dbg: LoopDebugger, content: Any) -> dict[str, Any]:
    """Send ``content`` as the page; the answer the next message carries."""
    channel(dbg).from_browser(content)
    dbg.flush()
    dbg.redraw()
    answer: dict[str, Any] = channel(dbg).custom()[-1]["control"]["answer"]
    return answer


async def test_the_page_asks_for_a_comparison_of_two_runs_and_closes_it() -> None:
    dbg, a, b = await watched_runs()

    answer = ask(dbg, {"type": "compare", "request": 7, "a": a, "b": b})

    assert (answer["request"], answer["action"], answer["ok"]) == (7, "compare", True)
    assert differing(dbg.comparison)[0]["calls"][0]["mark"] == "changed"
    assert sent_comparison(dbg) == dbg.comparison
    closed = ask(dbg, {"type": "compare", "request": 8, "action": "close"})
    assert (closed["action"], closed["ok"]) == ("close", True)
    assert dbg.comparison == {}
    dbg.close()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ({"a": "nope", "b": "also-nope"}, "unknown_run"),
        ({"a": "/etc/passwd", "b": "/etc/passwd"}, "unknown_run"),  # never a file
        ({"a": "x"}, "bad_request"),
        ({"a": 1, "b": 2}, "bad_request"),
        ({"a": "", "b": "x"}, "bad_request"),
        ({"a": "x", "b": "y", "html": "<b>"}, "bad_request"),
        ({"a": "x" * 2_000, "b": "y"}, "bad_request"),
        ({"action": "open"}, "bad_request"),
        ({"a": "x" * 1_000_001, "b": "y"}, "too_large"),
    ],
)
async def test_a_request_that_names_no_two_runs_is_refused_with_a_reason(
    content: dict[str, Any], reason: str
) -> None:
    dbg, a, _ = await watched_runs()
    dbg.compare(a, a)
    before = dbg.comparison

    answer = ask(dbg, {"type": "compare", "request": 3, **content})

    assert (answer["ok"], answer["reason"], answer["request"]) == (False, reason, 3)
    assert dbg.comparison == before  # nothing changed
    dbg.close()


# -- Fork from here --------------------------------------------------------------------------


async def test_a_fork_that_changes_a_call_shows_the_comparison_from_the_fork_round_on() -> None:
    ticketer = agent([TICKET, final("done", tokens=(300, 10))])
    dbg = LoopDebugger(fork_with=ticketer)
    reader = agent([LOOK, READ, final("done", tokens=(300, 10))])
    await dbg.start(reader, "The disk is full.")

    child = dbg.fork(2, pause_on="off")
    result = await child.task  # type: ignore[misc]

    shown = child.comparison
    assert (shown["kind"], shown["from_round"]) == ("fork", 2)
    assert (shown["a"]["label"], shown["b"]["label"]) == ("original", "fork")
    # the whole runs' totals, as the fork's own summary says them
    assert shown["a"]["rounds"] == result.original.rounds
    assert shown["b"]["input_tokens"] == result.forked.input_tokens
    assert shown["tokens_delta"] == result.token_delta
    rows = shown["rows"]
    assert [r["round"] for r in rows] == [2, 3]  # round 1 was taken as it was
    assert rows[0]["calls"][0]["mark"] == "changed"
    assert rows[0]["a"]["calls"][0]["name"] == "read_log"
    assert rows[0]["b"]["calls"][0]["name"] == "open_ticket"
    assert rows[1]["same"] is True
    assert child.fork_info == {"at_round": 2, "source": "events"}
    assert result.summary in child.summary()
    child.close()
    dbg.close()


def test_a_diff_of_many_small_changes_is_cut_to_its_most_parts() -> None:
    a = " ".join(f"w{i}" for i in range(400))
    b = " ".join(f"w{i}" if i % 2 else f"v{i}" for i in range(400))

    ops = text_opcodes(a, b)

    assert len(ops) == DIFF_OPS
    assert (joined(ops, 1), joined(ops, 2)) == (a, b)
    assert ops[-1][0] == "replace"


@pytest.mark.filterwarnings(IN_A_LOOP)  # runs made for the test, inside its loop
async def test_the_page_may_ask_again_only_for_runs_the_debugger_holds() -> None:
    dbg, a, b = await watched_runs()

    dbg.compare(a, b)
    assert dbg.comparison["runs_held"] is True  # "Swap sides" asks for (b, a)
    dbg.compare(reading(), ticketing())
    assert dbg.comparison["runs_held"] is False
    dbg.close()
