"""What judging says: the report (text, one frame row per check), ``ChecksFailed`` read as a
pytest assertion, a check of one's own that breaks, hostile text made safe, and checks that
travel pickled (a sweep's workers get them so)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pytest
from checkkit import ticket_run
from loopkit import MODEL

from toolloop_lab import LLMAgent, ScriptedChatModel, ToolLoopResult
from toolloop_lab.checks import (
    Check,
    CheckedRun,
    CheckResult,
    answer_contains,
    answer_matches,
    called,
    called_in_order,
    contains,
    evaluate,
    matches,
    max_cost_usd,
    max_model_calls,
    max_tokens,
    max_tool_rounds,
    no_tool_errors,
    not_called,
    outcome,
    verify,
)
from toolloop_lab.errors import ChecksFailed, ToolLoopLabError


@pytest.fixture(scope="module")
def run() -> ToolLoopResult:
    return ticket_run()


def test_checks_failed_reads_as_a_pytest_assertion(run: ToolLoopResult) -> None:
    with pytest.raises(ChecksFailed) as caught:
        verify(
            run,
            [called("lookup_ticket", ticket="T-8"), max_tool_rounds(2), outcome("final_answer")],
        )
    error = caught.value
    assert isinstance(error, ToolLoopLabError)
    assert isinstance(error, AssertionError)
    text = str(error)
    head, *rest = text.split("\n")
    assert head == (
        f"2 of 3 checks failed on run {run.run_id} from result (Answered: 3 tool rounds, "
        "4 model calls, 995 tokens, $0.000201)"
    )
    assert "called('lookup_ticket', ticket='T-8'): failed" in rest
    assert "  expected: a call of lookup_ticket with ticket='T-8'" in rest
    assert "  where:    round 1, call lookup_ticket(ticket='T-9') [c_bad]" in rest
    assert "max_tool_rounds(2): failed" in rest
    assert "  seen:     3 tool rounds (round 3 is the first past it)" in rest
    assert "outcome('final_answer')" not in text  # only the failures
    assert len(error.report.results) == 3
    assert error.diff is None


def test_the_report_is_one_frame_row_per_check(run: ToolLoopResult) -> None:
    checks = [called("reply"), no_tool_errors(), max_tokens(10)]
    frame = evaluate(run, checks).to_frame()
    assert list(frame["check"]) == ["called('reply')", "no_tool_errors()", "max_tokens(10)"]
    assert list(frame["passed"]) == [True, False, False]
    assert list(frame["round"].astype("object")) == [3, 1, 1]
    assert list(frame["tool_call_id"].astype("object")) == ["c_reply", "c_bad", pd.NA]
    assert list(frame["tool"].astype("object")) == ["reply", "lookup_ticket", pd.NA]
    assert frame["judging_tokens"].isna().all()
    assert frame["judging_cost_usd"].isna().all()
    assert str(frame["round"].dtype) == "Int64"
    assert str(frame["passed"].dtype) == "bool"


@dataclass(frozen=True, slots=True)
class _Broken(Check):
    def describe(self) -> str:
        return "broken()"

    def judge(self, run: CheckedRun) -> CheckResult:
        raise ZeroDivisionError("oops")


@dataclass(frozen=True, slots=True)
class _AtMostTwoLookups(Check):
    """A check of one's own: a frozen dataclass with describe() and judge()."""

    def describe(self) -> str:
        return "at_most_two_lookups()"

    def judge(self, run: CheckedRun) -> CheckResult:
        lookups = [c for c in run.calls if c.name == "lookup_ticket"]
        return CheckResult(self, len(lookups) <= 2, "at most 2 lookups", f"{len(lookups)}")


def test_a_check_of_ones_own_is_judged_and_one_that_raises_fails_alone(run: ToolLoopResult) -> None:
    report = evaluate(run, [_Broken(), _AtMostTwoLookups(), called("reply")])
    broken, own, other = report.results
    assert not broken.passed
    assert broken.seen.startswith("the check raised ZeroDivisionError")
    assert own.passed
    assert own.seen == "2"
    assert other.passed


def test_hostile_text_in_the_evidence_cannot_move_a_terminal() -> None:
    nasty = "done\x1b[2J\x1b[31m\u202eevil"
    hostile = LLMAgent(ScriptedChatModel([nasty], model_name=MODEL), []).run("hi")
    report = evaluate(hostile, [answer_contains("fine")])
    text = report.text()
    assert "\x1b" not in text
    assert "\u202e" not in text
    assert "\\x1b[2J" in text
    assert "\\u202e" in text
    assert report.results[0].seen == f"the answer {nasty!r}"  # the data itself is kept


def test_a_long_answer_is_clipped_in_the_evidence() -> None:
    long = "x" * 10_000
    run = LLMAgent(ScriptedChatModel([long], model_name=MODEL), []).run("hi")
    (got,) = evaluate(run, [answer_contains("y")]).results
    assert len(got.seen) < 400
    assert "10,002 chars" in got.seen


SAVEABLE = [
    called("search_docs", query=contains("key"), limit=2),
    called("lookup_ticket", ticket=matches(r"^T-\d+$")),
    not_called("delete"),
    called_in_order("lookup_ticket", "reply"),
    no_tool_errors(),
    max_tool_rounds(3),
    max_model_calls(4),
    max_tokens(1_000),
    max_cost_usd("0.01"),
    outcome("final_answer"),
    answer_contains("T-7"),
    answer_matches(r"(?i)rotate"),
]


@pytest.mark.parametrize("check", SAVEABLE, ids=lambda c: c.describe())
def test_a_check_pickles_and_judges_the_same_after(check: Check, run: ToolLoopResult) -> None:
    copy = pickle.loads(pickle.dumps(check))
    assert copy == check
    assert copy.describe() == check.describe()
    (a,) = evaluate(run, [check]).results
    (b,) = evaluate(run, [copy]).results
    assert (a.passed, a.seen) == (b.passed, b.seen)


def test_checks_failed_pickles_with_its_message(run: ToolLoopResult) -> None:
    with pytest.raises(ChecksFailed) as caught:
        verify(run, [max_tokens(1)])
    copy: Any = pickle.loads(pickle.dumps(caught.value))
    assert str(copy) == str(caught.value)
    assert [f.description for f in copy.failures] == ["max_tokens(1)"]
