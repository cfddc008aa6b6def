"""``compare``: any two runs side by side, round by round, by what each round did.

A round is the same only when its tool calls (names and arguments), the model's reply and
the tools' results are; spending the same tokens is not enough (issue 26: a skipped
``read_log`` that became an ``open_ticket`` call read "±0 tokens").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import IPython.lib.pretty
import pandas as pd
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import (
    AgentConfig,
    ForkResult,
    LLMAgent,
    PausePoint,
    RunComparison,
    ScriptedChatModel,
    ToolLoopResult,
    TraceWriter,
    compare,
    fork,
    read_trace,
)
from toolloop_lab._replay.compare import COMPARE_DTYPES
from toolloop_lab.errors import ConfigurationError, ToolLoopError, TraceError, UnknownRunError


@tool
def read_log(path: str) -> str:
    """Read a log file."""
    return f"contents of {path}"


@tool
def open_ticket(title: str) -> str:
    """Open a ticket."""
    return f"ticket opened: {title}"


TOOLS: list[BaseTool] = [read_log, open_ticket]


async def skip_read_log(point: PausePoint) -> None:
    """A person skips round 1's ``read_log`` call (id ``c1``), answering it by hand."""
    if point.stage == "tool_dispatch" and point.round == 1 and "read_log" in point.detail:
        point.skip("c1", "not needed")


def run(
    script: Sequence[AIMessage],
    config: AgentConfig | None = None,
    *,
    hooks: Sequence[Any] = (),
    observers: Sequence[Any] = (),
) -> ToolLoopResult:
    model = ScriptedChatModel(list(script), model_name=MODEL)
    agent = LLMAgent(model, TOOLS, config, pause_hooks=list(hooks), observers=list(observers))
    return agent.run("The disk is full.")


def log_run(text: str = "I will read the log.", answer: str = "done") -> ToolLoopResult:
    return run(
        [
            calls(tool_call("read_log", {"path": "app.log"}, "c1"), text=text, tokens=(100, 20)),
            final(answer, tokens=(150, 10)),
        ]
    )


def ticket_run() -> ToolLoopResult:
    return run(
        [
            calls(tool_call("open_ticket", {"title": "disk full"}, "c1"), tokens=(100, 20)),
            final("done", tokens=(150, 10)),
        ]
    )


# -- what a round did ----------------------------------------------------------------------


def test_a_skipped_call_that_became_another_call_is_marked_different() -> None:
    before = run(
        [
            calls(tool_call("read_log", {"path": "app.log"}, "c1"), tokens=(100, 20)),
            final("done", tokens=(150, 10)),
        ],
        hooks=[skip_read_log],
    )
    after = ticket_run()

    diff = compare(before, after)
    frame = diff.frame()

    first = frame.iloc[0]
    assert first["round"] == 1
    assert not first["same"]
    assert first["a_tools"] == "read_log(path='app.log')"
    assert first["b_tools"] == "open_ticket(title='disk full')"
    assert first["tokens_delta"] == 0  # the same spend: only what it did tells them apart
    assert "not needed" in first["a_results"]
    assert "ticket opened: disk full" in first["b_results"]
    assert frame["same"].tolist() == [False, True]
    assert not diff.same
    text = str(diff)
    assert "round 1: differs" in text
    assert "read_log(path='app.log') -> not run (skipped by you)" in text
    assert "open_ticket(title='disk full') -> success" in text
    assert "1 of 2 rounds differ" in text
    assert "round 2: same" in text
    html = diff._repr_html_()
    assert "round 1<br>differs" in html
    assert "<code>read_log(path=&#x27;app.log&#x27;)</code> → not run (skipped by you)" in html
    assert "<code>open_ticket(title=&#x27;disk full&#x27;)</code> → success" in html


def test_the_same_run_twice_is_the_same_in_every_round() -> None:
    diff = compare(log_run(), log_run())

    assert diff.same
    assert diff.differing == ()
    assert diff.frame()["same"].tolist() == [True, True]
    assert diff.token_delta == 0
    assert diff.cost_delta == 0
    assert "Every round did the same." in str(diff)


def test_changed_arguments_and_results_differ() -> None:
    other = run(
        [
            calls(tool_call("read_log", {"path": "db.log"}, "c1"), text="I will read the log."),
            final("done", tokens=(150, 10)),
        ]
    )

    frame = compare(log_run(), other).frame()

    assert frame["same"].tolist() == [False, True]
    assert frame.loc[0, "b_tools"] == "read_log(path='db.log')"
    text = str(compare(log_run(), other))
    assert "-contents of app.log" in text
    assert "+contents of db.log" in text


def test_a_changed_reply_is_shown_as_a_text_diff() -> None:
    a = log_run(text="Step one.\nI will read the log.\nThen decide.")
    b = log_run(text="Step one.\nI will open a ticket.\nThen decide.")

    diff = compare(a, b)

    assert diff.frame()["same"].tolist() == [False, True]
    assert diff.frame().loc[0, "b_text"] == "Step one.\nI will open a ticket.\nThen decide."
    lines = str(diff).splitlines()
    assert "      --- a" in lines
    assert "      +++ b" in lines
    assert "      -I will read the log." in lines
    assert "      +I will open a ticket." in lines
    assert "       Step one." in lines  # context, unchanged
    assert not any("results:" in line for line in lines)  # the results were the same


def test_rounds_of_either_run_and_the_synthesis_call_get_their_own_rows() -> None:
    script = [
        calls(tool_call("read_log", {"path": "a"}, "c1"), tokens=(100, 20)),
        calls(tool_call("read_log", {"path": "b"}, "c2"), tokens=(200, 20)),
        final("the disk is full", tokens=(300, 10)),
    ]
    capped = run([script[0], final("synthesised", tokens=(50, 5))], AgentConfig(tool_max_rounds=1))
    whole = run(script)

    diff = compare(capped, whole)
    frame = diff.frame()

    assert frame["purpose"].tolist() == ["round", "round", "round", "synthesis"]
    assert frame["round"].tolist()[:3] == [1, 2, 3]
    assert frame["round"].isna().tolist() == [False, False, False, True]
    assert frame["same"].tolist() == [True, False, False, False]
    # round 2 and 3 only in b, the synthesis call only in a
    assert frame["a_tools"].isna().tolist() == [False, True, True, False]
    assert frame["b_tools"].isna().tolist() == [False, False, False, True]
    assert frame.loc[3, "a_text"] == "synthesised"
    # the rounds' deltas add up to the runs' difference
    assert frame["tokens_delta"].sum() == diff.token_delta
    assert frame["a_tokens"].sum() == diff.a.total_tokens
    assert frame["b_tokens"].sum() == diff.b.total_tokens
    assert math.isclose(frame["b_cost_usd"].sum(), float(whole.cost_usd or 0))
    text = str(diff)
    assert "final-answer call: differs" in text
    assert "b: (no such round)" in text


def many_rounds(n: int, path: str) -> ToolLoopResult:
    script = [calls(tool_call("read_log", {"path": f"{path}{i}"}, f"c{i}")) for i in range(n)]
    return run([*script, final("done")], AgentConfig(tool_max_rounds=n + 1))


def test_rounds_that_did_the_same_read_as_one_line() -> None:
    diff = compare(many_rounds(3, "x"), many_rounds(3, "x"))

    assert "  rounds 1 to 4: same (60 tokens each run)" in str(diff).splitlines()
    assert diff._repr_html_().count("<tr") == 2  # the header and one row


def test_rounds_that_did_the_same_but_spent_differently_say_what_each_run_spent() -> None:
    # the same calls, replies and results; run b's prompt was longer, so each call cost more
    def priced(input_tokens: int) -> ToolLoopResult:
        script = [
            calls(tool_call("read_log", {"path": f"x{i}"}, f"c{i}"), tokens=(input_tokens, 5))
            for i in range(3)
        ]
        return run([*script, final("done", (input_tokens, 5))], AgentConfig(tool_max_rounds=4))

    diff = compare(priced(10), priced(70))
    assert diff.differing == ()  # every round did the same

    assert "  rounds 1 to 4: same (a: 60 tokens, b: 300 tokens)" in str(diff).splitlines()


def test_a_long_comparison_lists_the_first_rounds_and_counts_the_rest() -> None:
    diff = compare(many_rounds(70, "a"), many_rounds(70, "b"))
    text = str(diff)

    assert len(diff.frame()) == 71
    assert "70 of 71 rounds differ:" in text
    assert "round 60: differs" in text
    assert "round 61: differs" not in text
    assert "  … 11 more rounds: see frame()" in text.splitlines()
    assert "… 11 more rounds: see frame()" in diff._repr_html_()


def test_the_frame_has_its_documented_columns_and_types() -> None:
    frame = compare(log_run(), ticket_run()).frame()

    assert list(frame.columns) == list(COMPARE_DTYPES)
    assert {c: str(t) for c, t in frame.dtypes.items()} == COMPARE_DTYPES
    assert isinstance(frame, pd.DataFrame)


def test_the_headline_shows_both_runs_figures() -> None:
    a, b = log_run(), ticket_run()

    text = str(compare(a, b))

    assert text.startswith(f"Comparing a (run {a.run_id}, Answered) with b (run {b.run_id}")
    lines = text.splitlines()
    assert lines[2].split() == ["outcome", "Answered", "Answered"]
    assert any(line.split()[:2] == ["input", "tokens"] for line in lines)
    assert any(line.startswith("cost (USD)") for line in lines)


def test_ipython_shows_the_summary() -> None:
    diff = compare(log_run(), ticket_run())

    assert IPython.lib.pretty.pretty(diff) == diff.summary


# -- what a run may be given as ---------------------------------------------------------------


def test_every_kind_of_source_reads_the_same_run(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with TraceWriter(path) as writer:
        a = run(
            [calls(tool_call("read_log", {"path": "x"}, "c1")), final("done")],
            observers=[writer],
        )
    b = ticket_run()
    expected = compare(a, b).frame()

    for source in (a.events, list(a.events), path, str(path), read_trace(path)):
        pd.testing.assert_frame_equal(compare(source, b).frame(), expected)


def test_two_runs_of_one_trace_are_picked_by_run_id(tmp_path: Path) -> None:
    path = tmp_path / "run_list.jsonl"
    with TraceWriter(path) as writer:
        first = run(
            [calls(tool_call("read_log", {"path": "x"}, "c1")), final("one")], observers=[writer]
        )
        second = run([final("two")], observers=[writer])

    by_default = compare(path, path, a_run_id=first.run_id)
    assert by_default.a_run_id == first.run_id
    assert by_default.b_run_id == second.run_id  # the newest top-level run
    assert by_default.frame()["a_tools"].tolist() == ["read_log(path='x')", ""]
    assert by_default.frame()["b_text"].fillna("<none>").tolist() == ["two", "<none>"]


def test_a_failed_run_is_compared_from_its_error() -> None:
    model = ScriptedChatModel(
        [calls(tool_call("read_log", {"path": "x"}, "c1")), RuntimeError("provider down")],
        model_name=MODEL,
    )
    with pytest.raises(ToolLoopError) as raised:
        LLMAgent(model, TOOLS).run("go")

    diff = compare(raised.value, ticket_run())

    assert diff.a.outcome == "failed"
    assert diff.frame().loc[0, "a_tools"] == "read_log(path='x')"
    assert "RuntimeError: provider down" in str(diff)
    assert diff.frame().loc[0, "b_tools"] == "open_ticket(title='disk full')"


@pytest.mark.parametrize("bad", [42, "", b"bytes", [1, 2], None])
def test_something_that_is_not_a_run_is_refused(bad: Any) -> None:
    with pytest.raises((ConfigurationError, TraceError)) as raised:
        compare(log_run(), bad)
    if isinstance(raised.value, ConfigurationError):
        assert raised.value.field == "b"


def test_every_documented_kind_of_run_is_taken() -> None:
    """Each kind ``RunSource`` names reads the run it holds (a path, a ``TraceRead`` and
    events: :func:`test_every_kind_of_source_reads_the_same_run`)."""
    finished = log_run()
    with pytest.raises(ToolLoopError) as raised:
        LLMAgent(ScriptedChatModel([RuntimeError("down")], model_name=MODEL), TOOLS).run("go")
    _original, forked = three_rounds_and_a_fork_at_2()
    sources: list[tuple[Any, str | None]] = [
        (finished, finished.run_id),
        (finished.events, finished.run_id),
        (list(finished.events), finished.run_id),
        (raised.value, raised.value.run_id),
        (forked, forked.events[0].run_id),
    ]
    for source, run_id in sources:
        assert compare(source, finished).a_run_id == run_id


def test_an_empty_event_list_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="holds no events") as raised:
        compare([], log_run())
    assert raised.value.field == "a"


def test_an_unknown_run_id_names_the_runs_held() -> None:
    a = log_run()

    with pytest.raises(UnknownRunError) as raised:
        compare(a, a, b_run_id="no-such-run")

    assert raised.value.field == "run_id"
    assert a.run_id in str(raised.value)


NOT_RUNS: dict[str, tuple[Any, str]] = {
    "a number": (42, "not int"),
    "nothing": (None, "not NoneType"),
    "a dict": ({"events": []}, "not dict"),
    "a set": (set(), "not set"),
}


@pytest.mark.parametrize("case", [*NOT_RUNS, "a generator of events", "a list with a str"])
def test_what_is_not_a_run_is_refused_naming_what_compare_takes(case: str) -> None:
    events = log_run().events
    if case == "a generator of events":
        bad, said = (e for e in events), "not generator"
    elif case == "a list with a str":
        bad, said = [events[0], "loop_start"], "item 1 is a str, not an event"
    else:
        bad, said = NOT_RUNS[case]

    with pytest.raises(ConfigurationError) as raised:
        compare(events, bad)

    message = str(raised.value)
    assert raised.value.field == "b"
    assert said in message
    for kind in ("ToolLoopResult", "ForkResult", "TraceRead", "path", "events", "error"):
        assert kind in message


# -- untrusted text ------------------------------------------------------------------------


def hostile_run() -> ToolLoopResult:
    return run(
        [
            calls(
                tool_call("read_log", {"path": "<img src=x onerror=alert(1)>"}, "c1"),
                text="<script>alert(1)</script>\x1b[31mred" + "x" * 10_000,
            ),
            final("done"),
        ]
    )


def test_html_escapes_every_text_from_the_runs() -> None:
    html = compare(hostile_run(), log_run())._repr_html_()

    assert "<script>" not in html
    assert "<img" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "chars)" in html  # the long reply is clipped, with the one marker


def test_text_is_clipped_and_safe_for_a_terminal() -> None:
    diff = compare(hostile_run(), log_run())
    text = str(diff)

    assert "\x1b" not in text
    assert "\\x1b[31mred" in text
    assert max(len(line) for line in text.splitlines()) < 400
    assert diff.frame().loc[0, "a_text"].endswith("x" * 10_000)  # the frame keeps it whole


def test_the_comparison_is_frozen() -> None:
    diff = compare(log_run(), ticket_run())

    assert isinstance(diff, RunComparison)
    with pytest.raises(AttributeError):
        diff.a = diff.b  # type: ignore[misc]


# -- a fork's own run, lined up with its original -------------------------------------------


def test_a_forks_own_run_lines_up_with_its_original_by_b_offset() -> None:
    original = run(
        [
            calls(tool_call("read_log", {"path": "app.log"}, "c1"), tokens=(100, 20)),
            calls(tool_call("read_log", {"path": "db.log"}, "c2"), tokens=(200, 20)),
            final("done", tokens=(300, 10)),
        ]
    )
    forked = fork(
        original,
        2,
        model=ScriptedChatModel(
            [
                calls(tool_call("open_ticket", {"title": "disk full"}, "c2"), tokens=(200, 20)),
                final("done", tokens=(300, 10)),
            ],
            model_name=MODEL,
        ),
        tools=TOOLS,
    )
    assert [e.round for e in forked.events if e.kind == "model_call"] == [1, 2]  # its own

    unaligned = compare(original, forked.events)
    diff = compare(original, forked.events, b_offset=forked.at_round - 1)

    assert unaligned.frame()["same"].tolist() == [False, False, False]
    frame = diff.frame()
    assert frame["round"].tolist() == [2, 3]  # round 1 was taken as it was: left out
    assert frame["same"].tolist() == [False, True]
    assert frame.loc[0, "a_tools"] == "read_log(path='db.log')"
    assert frame.loc[0, "b_tools"] == "open_ticket(title='disk full')"
    assert diff.b_offset == 1
    assert "round 2: differs" in str(diff)


def three_rounds_and_a_fork_at_2() -> tuple[ToolLoopResult, ForkResult]:
    """A run of two ``read_log`` rounds and an answer, and a fork of it at round 2 whose
    round 2 opens a ticket instead (its round 3 answers as the original's did)."""
    original = run(
        [
            calls(tool_call("read_log", {"path": "app.log"}, "c1"), tokens=(100, 20)),
            calls(tool_call("read_log", {"path": "db.log"}, "c2"), tokens=(200, 20)),
            final("done", tokens=(300, 10)),
        ]
    )
    forked = fork(
        original,
        2,
        model=ScriptedChatModel(
            [
                calls(tool_call("open_ticket", {"title": "disk full"}, "c2"), tokens=(200, 20)),
                final("done", tokens=(300, 10)),
            ],
            model_name=MODEL,
        ),
        tools=TOOLS,
    )
    return original, forked


def test_a_forks_result_is_compared_with_its_original_round_by_round() -> None:
    """``compare(original, fork(...))``: the result ``fork`` returned is a run ``compare``
    takes, its rounds lined up with the original's and its figures the whole fork's (the
    rounds it took included), as its own summary says them."""
    original, forked = three_rounds_and_a_fork_at_2()

    diff = compare(original, forked)

    by_hand = compare(original, forked.events, b_offset=forked.at_round - 1)
    pd.testing.assert_frame_equal(diff.frame(), by_hand.frame())
    assert diff.frame()["round"].tolist() == [2, 3]
    assert diff.frame()["same"].tolist() == [False, True]
    assert diff.b_offset == forked.at_round - 1
    assert (diff.a, diff.b) == (forked.original, forked.forked)
    assert diff.b_run_id == forked.events[0].run_id
    assert "round 2: differs" in str(diff)
    assert compare(original, forked, b_offset=forked.at_round - 1).frame().equals(diff.frame())


def test_a_forks_result_lines_up_on_either_side() -> None:
    original, forked = three_rounds_and_a_fork_at_2()

    diff = compare(forked, original)

    frame = diff.frame()
    assert frame["round"].tolist() == [2, 3]
    assert frame.loc[0, "a_tools"] == "open_ticket(title='disk full')"
    assert frame.loc[0, "b_tools"] == "read_log(path='db.log')"
    assert diff.a == forked.forked
    assert compare(forked, forked).same


def test_a_b_offset_at_odds_with_a_forks_result_is_refused() -> None:
    original, forked = three_rounds_and_a_fork_at_2()

    with pytest.raises(ConfigurationError, match="fork") as raised:
        compare(original, forked, b_offset=3)

    assert raised.value.field == "b_offset"


@pytest.mark.parametrize("side", ["a_run_id", "b_run_id"])
@pytest.mark.parametrize("bad", [5, 1.5, True, b"abc", ["id"]])
def test_a_run_id_that_is_not_a_string_is_refused_as_such(side: str, bad: Any) -> None:
    result = log_run()

    with pytest.raises(ConfigurationError, match="a string") as raised:
        compare(result, result, **{side: bad})

    assert raised.value.field == side
    assert type(bad).__name__ in str(raised.value)


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
def test_a_b_offset_that_is_no_count_of_rounds_is_refused(bad: Any) -> None:
    with pytest.raises(ConfigurationError) as raised:
        compare(log_run(), log_run(), b_offset=bad)
    assert raised.value.field == "b_offset"


def test_the_comparison_keeps_each_runs_name() -> None:
    a = LLMAgent(ScriptedChatModel([final("one")], model_name=MODEL)).run("go", name="first")
    b = LLMAgent(ScriptedChatModel([final("two")], model_name=MODEL)).run("go")

    diff = compare(a, b)

    assert (diff.a_name, diff.b_name) == ("first", None)
