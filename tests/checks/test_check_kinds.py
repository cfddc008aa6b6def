"""Each check passes on purpose and fails on purpose on one run whose every figure is known
from its script (``checkkit``), its evidence naming the round and the call; and each
refuses, where it is written, what it could not judge."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from checkkit import ANSWER, TICKET_FIGURES, ticket_run

from toolloop_lab import ToolLoopResult
from toolloop_lab.checks import (
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
    satisfies,
)
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Event, LoopFinished, ToolDispatched


@pytest.fixture(scope="module")
def run() -> ToolLoopResult:
    return ticket_run()


def judged(run: Any, check: Any) -> CheckResult:
    (only,) = evaluate(run, [check]).results
    return only


# -- what the run did ------------------------------------------------------------------------


def test_called_passes_on_the_call_it_names_and_points_at_it(run: ToolLoopResult) -> None:
    got = judged(run, called("lookup_ticket", ticket="T-7"))
    assert got.passed
    assert (got.round, got.tool_call_id) == (1, "c_look")
    assert got.seen == "lookup_ticket(ticket='T-7') in round 1 [c_look]"


def test_called_fails_naming_each_call_of_the_tool_and_its_wrong_argument(
    run: ToolLoopResult,
) -> None:
    got = judged(run, called("lookup_ticket", ticket="T-8"))
    assert not got.passed
    assert got.expected == "a call of lookup_ticket with ticket='T-8'"
    assert "[c_bad], but ticket is 'T-9'" in got.seen
    assert "[c_look], but ticket is 'T-7'" in got.seen
    assert (got.round, got.tool_call_id) == (1, "c_bad")
    assert got.where == "round 1, call lookup_ticket(ticket='T-9') [c_bad]"


def test_called_fails_when_the_tool_was_never_called_and_lists_what_was(
    run: ToolLoopResult,
) -> None:
    got = judged(run, called("open_ticket"))
    assert not got.passed
    assert got.seen == (
        "no call of open_ticket; the run called lookup_ticket (2 calls), search_docs, reply"
    )
    assert got.round is None
    assert got.call is None
    assert got.where == "the run as a whole"


def test_called_takes_matchers_and_predicates(run: ToolLoopResult) -> None:
    assert judged(run, called("search_docs", query=contains("api"))).passed
    assert judged(run, called("search_docs", query=matches(r"^rotate \w+ key$"))).passed
    assert judged(run, called("search_docs", limit=lambda n: n < 3)).passed
    assert not judged(run, called("search_docs", query=contains("refund"))).passed
    assert not judged(run, called("search_docs", query=matches(r"^key"))).passed
    assert not judged(run, called("search_docs", limit=lambda n: n > 3)).passed
    missing = judged(run, called("search_docs", page=1))
    assert not missing.passed
    assert "it has no argument page" in missing.seen


def test_called_never_takes_a_bool_for_a_number(run: ToolLoopResult) -> None:
    assert judged(run, called("search_docs", limit=2)).passed
    assert not judged(run, called("search_docs", limit=True)).passed


def test_not_called(run: ToolLoopResult) -> None:
    assert judged(run, not_called("delete_ticket")).passed
    got = judged(run, not_called("lookup_ticket"))
    assert not got.passed
    assert got.seen.startswith("2 calls of it: lookup_ticket(ticket='T-9') in round 1 [c_bad]")
    assert got.tool_call_id == "c_bad"


def test_called_in_order_is_a_subsequence_of_the_calls(run: ToolLoopResult) -> None:
    got = judged(run, called_in_order("lookup_ticket", "reply"))
    assert got.passed
    assert got.tool_call_id == "c_reply"
    assert got.round == 3
    assert judged(run, called_in_order("lookup_ticket", "lookup_ticket", "search_docs")).passed


def test_called_in_order_fails_saying_which_call_never_came_after(run: ToolLoopResult) -> None:
    got = judged(run, called_in_order("reply", "search_docs"))
    assert not got.passed
    assert got.seen.startswith(
        "reply(text='We are on it.') in round 3 [c_reply], then no call of search_docs after it"
    )
    assert got.seen.endswith("the calls were lookup_ticket, lookup_ticket, search_docs, reply")
    assert got.round == 3


def test_no_tool_errors_fails_on_the_call_that_raised(run: ToolLoopResult) -> None:
    got = judged(run, no_tool_errors())
    assert not got.passed
    assert got.seen == (
        "1 tool call did not succeed: lookup_ticket(ticket='T-9') in round 1 [c_bad]: "
        "raised ValueError"
    )
    assert got.tool_call_id == "c_bad"


def test_no_tool_errors_passes_on_a_run_without_one() -> None:
    from loopkit import calls, final, tool_call

    from toolloop_lab import LLMAgent, ScriptedChatModel
    from toolloop_lab._tools.builtin import echo_tool

    model = ScriptedChatModel([calls(tool_call("echo", {"text": "x"}, "e1")), final("x")])
    clean = LLMAgent(model, [echo_tool()]).run("echo x")
    got = judged(clean, no_tool_errors())
    assert got.passed
    assert got.seen == "1 tool call, none ended in an error"


# -- what it spent ---------------------------------------------------------------------------


def test_max_tool_rounds(run: ToolLoopResult) -> None:
    assert judged(run, max_tool_rounds(TICKET_FIGURES.tool_rounds)).passed
    got = judged(run, max_tool_rounds(TICKET_FIGURES.tool_rounds - 1))
    assert not got.passed
    assert got.seen == "3 tool rounds (round 3 is the first past it)"
    assert got.round == 3


def test_max_model_calls(run: ToolLoopResult) -> None:
    assert judged(run, max_model_calls(TICKET_FIGURES.model_calls)).passed
    got = judged(run, max_model_calls(1))
    assert not got.passed
    assert got.round == 2
    assert got.seen.startswith("4 model calls")


def test_max_tokens_points_at_the_round_that_went_past(run: ToolLoopResult) -> None:
    assert judged(run, max_tokens(TICKET_FIGURES.tokens)).passed
    limit = TICKET_FIGURES.tokens_after(2)  # spent by round 2's end: round 3 goes past
    got = judged(run, max_tokens(limit))
    assert not got.passed
    assert got.round == 3
    total = TICKET_FIGURES.tokens
    assert got.seen.startswith(f"{total:,} tokens ({TICKET_FIGURES.input_tokens:,} in")


def test_max_cost_usd(run: ToolLoopResult) -> None:
    assert judged(run, max_cost_usd(TICKET_FIGURES.cost)).passed
    got = judged(run, max_cost_usd(TICKET_FIGURES.cost - Decimal("0.0000001")))
    assert not got.passed
    assert got.round == 4


def test_a_cost_just_past_the_limit_never_reads_as_the_limit(run: ToolLoopResult) -> None:
    limit = TICKET_FIGURES.cost - Decimal("0.000000001")
    got = judged(run, max_cost_usd(limit))
    assert not got.passed
    assert got.seen == f"${TICKET_FIGURES.cost}"  # every digit: $0.000201 against $0.000200999


def test_max_cost_usd_fails_an_unpriced_run() -> None:
    from loopkit import final

    from toolloop_lab import LLMAgent, ScriptedChatModel

    unpriced = LLMAgent(ScriptedChatModel([final("hi")], model_name="nobody-knows-me"), []).run(
        "hi"
    )
    got = judged(unpriced, max_cost_usd(100))
    assert not got.passed
    assert got.seen == "an unknown cost: a call of the run could not be priced"


# -- how it ended and what it answered ---------------------------------------------------------


def test_outcome(run: ToolLoopResult) -> None:
    got = judged(run, outcome("final_answer"))
    assert got.passed
    assert got.round == 4
    assert got.seen == "outcome final_answer (Answered)"
    wrong = judged(run, outcome("synthesis"))
    assert not wrong.passed
    assert wrong.expected == "outcome synthesis (Answered by a final-answer call)"


def test_outcome_of_a_failed_run_says_how_it_failed() -> None:
    from toolloop_lab import LLMAgent, ScriptedChatModel
    from toolloop_lab.errors import ToolLoopError

    with pytest.raises(ToolLoopError) as caught:
        LLMAgent(ScriptedChatModel([RuntimeError("provider down")]), []).run("hi")
    got = judged(caught.value, outcome("final_answer"))
    assert not got.passed
    assert got.seen.startswith("outcome failed (Failed): ")
    assert "provider down" in got.seen
    assert judged(caught.value, outcome("failed")).passed


def test_answer_contains_and_matches(run: ToolLoopResult) -> None:
    assert judged(run, answer_contains("T-7 is open")).passed
    got = judged(run, answer_contains("closed"))
    assert not got.passed
    assert got.seen == f"the answer {ANSWER!r}"
    assert got.round == 4
    assert judged(run, answer_matches(r"(?i)ROTATE the key")).passed
    assert not judged(run, answer_matches(r"^closed")).passed


def test_answer_checks_fail_a_run_that_gave_no_answer() -> None:
    from toolloop_lab import LLMAgent, ScriptedChatModel
    from toolloop_lab.errors import ToolLoopError

    with pytest.raises(ToolLoopError) as caught:
        LLMAgent(ScriptedChatModel([RuntimeError("down")]), []).run("hi")
    got = judged(caught.value, answer_contains("x"))
    assert not got.passed
    assert got.seen == "no answer: the run ended failed (Failed)"


# -- anything else ---------------------------------------------------------------------------


def _answered_after_a_search(events: tuple[Event, ...]) -> bool:
    searched = [i for i, e in enumerate(events) if isinstance(e, ToolDispatched)]
    end = [i for i, e in enumerate(events) if isinstance(e, LoopFinished)]
    return bool(searched) and bool(end) and end[0] > searched[-1]


def test_satisfies_passes_and_fails_on_its_predicate(run: ToolLoopResult) -> None:
    got = judged(run, satisfies(_answered_after_a_search, "answers after its last tool"))
    assert got.passed
    assert got.seen == "yes"
    no = judged(run, satisfies(lambda events: len(events) > 1_000, "a long run"))
    assert not no.passed
    assert no.seen == "no"
    assert no.expected == "a long run"


def test_satisfies_fails_a_predicate_that_raises_or_answers_no_bool(run: ToolLoopResult) -> None:
    def broken(events: tuple[Event, ...]) -> bool:
        raise KeyError("boom")

    raised = judged(run, satisfies(broken, "broken"))
    assert not raised.passed
    assert raised.seen.startswith("the predicate raised KeyError")
    vague = judged(run, satisfies(lambda events: 1, "returns 1"))  # type: ignore[arg-type,return-value]
    assert not vague.passed
    assert vague.seen == "the predicate returned the int 1, not True or False"


# -- refused where written -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: called(5), "tool"),  # type: ignore[arg-type]
        (lambda: called(""), "tool"),
        (lambda: called("x", n=int), "n"),
        (lambda: not_called(None), "tool"),  # type: ignore[arg-type]
        (lambda: called_in_order(), "tools"),
        (lambda: called_in_order("a", 3), "tools[1]"),  # type: ignore[arg-type]
        (lambda: max_tool_rounds(-1), "n"),
        (lambda: max_tool_rounds(True), "n"),
        (lambda: max_model_calls(1.5), "n"),  # type: ignore[arg-type]
        (lambda: max_tokens(-1), "n"),
        (lambda: max_tokens("100"), "n"),  # type: ignore[arg-type]
        (lambda: max_cost_usd(-0.01), "limit_usd"),
        (lambda: max_cost_usd(float("nan")), "limit_usd"),
        (lambda: max_cost_usd(None), "limit_usd"),  # type: ignore[arg-type]
        (lambda: outcome("nope"), "name"),
        (lambda: outcome(None), "name"),  # type: ignore[arg-type]
        (lambda: answer_contains(""), "text"),
        (lambda: answer_matches("(unclosed"), "pattern"),
        (lambda: answer_matches(""), "pattern"),
        (lambda: matches("[z-a]"), "pattern"),
        (lambda: contains(""), "part"),
        (lambda: satisfies("not a function", "x"), "predicate"),  # type: ignore[arg-type]
        (lambda: satisfies(lambda e: True, " "), "description"),
    ],
)
def test_a_check_that_could_not_judge_is_refused_where_it_is_written(make: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make()
    assert caught.value.field == field


def test_a_misspelt_outcome_is_refused_with_the_word_it_means() -> None:
    with pytest.raises(ConfigurationError, match="did you mean 'final_answer'"):
        outcome("final_answr")  # type: ignore[arg-type]
