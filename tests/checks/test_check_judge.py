"""``llm_judge``: a chat model's yes or no about the answer, its spend counted apart from the
run's, its call bounded, anything but yes or no a failure that says what it replied."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from checkkit import ANSWER, ticket_run
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatResult
from loopkit import MODEL, final, reference_cost

from toolloop_lab import ScriptedChatModel, ToolLoopResult
from toolloop_lab.checks import evaluate, llm_judge, verify
from toolloop_lab.errors import ChecksFailed, ConfigurationError, ToolLoopError

QUESTION = "Does the answer tell the customer how to rotate the key?"


@pytest.fixture(scope="module")
def run() -> ToolLoopResult:
    return ticket_run()


def test_a_judge_that_says_yes_passes_and_its_spend_is_its_own(run: ToolLoopResult) -> None:
    judge = ScriptedChatModel([final("Yes.", tokens=(90, 1))], model_name=MODEL)
    report = verify(run, [llm_judge(judge, QUESTION)])
    (got,) = report.results
    assert got.passed
    assert got.seen == "the judge replied 'Yes.'"
    assert got.usage is not None
    assert (got.usage.input_tokens, got.usage.output_tokens, got.usage.requests) == (90, 1, 1)
    assert got.usage.cost_usd == reference_cost([(90, 1)])
    assert report.judging_usage == got.usage
    assert report.run.view.usage == run.usage  # the run's totals: exactly what it paid
    assert "apart from the run's totals" in report.text()


def test_the_judge_is_sent_the_question_and_the_answer(run: ToolLoopResult) -> None:
    judge = ScriptedChatModel(["yes"], model_name=MODEL)
    evaluate(run, [llm_judge(judge, QUESTION)])
    (call,) = judge.calls
    system, human = call.messages
    assert isinstance(system, SystemMessage)
    assert "yes or no" in system.text
    assert isinstance(human, HumanMessage)
    assert QUESTION in human.text
    assert ANSWER in human.text


@pytest.mark.parametrize(
    ("reply", "seen"),
    [
        ("No, it only says the ticket is open.", "the judge replied 'No, it only says"),
        ("Maybe", "the judge replied 'Maybe', neither yes nor no"),
        ("", "the judge replied '', neither yes nor no"),
    ],
)
def test_a_judge_that_does_not_say_yes_fails_saying_what_it_replied(
    run: ToolLoopResult, reply: str, seen: str
) -> None:
    judge = ScriptedChatModel([reply], model_name=MODEL)
    with pytest.raises(ChecksFailed) as caught:
        verify(run, [llm_judge(judge, QUESTION)])
    (failure,) = caught.value.failures
    assert failure.seen.startswith(seen)
    assert failure.round == 4
    assert failure.usage is not None
    assert failure.usage.requests == 1


def test_a_judge_that_raises_fails_its_check_and_no_other(run: ToolLoopResult) -> None:
    from toolloop_lab.checks import outcome

    judge = ScriptedChatModel([RuntimeError("judge is down")], model_name=MODEL)
    report = evaluate(run, [llm_judge(judge, QUESTION), outcome("final_answer")])
    broken, fine = report.results
    assert not broken.passed
    assert "judge is down" in broken.seen
    assert fine.passed


class _Silent(BaseChatModel):
    """A model whose reply never comes."""

    @property
    def _llm_type(self) -> str:
        return "silent"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_judge_that_never_replies_is_given_up_after_its_timeout(run: ToolLoopResult) -> None:
    report = evaluate(run, [llm_judge(_Silent(), QUESTION, timeout_s=0.2)])
    (got,) = report.results
    assert not got.passed
    assert got.seen == "no reply from the judge within 0.2 s"


def test_a_run_without_an_answer_fails_without_asking_the_judge() -> None:
    from toolloop_lab import LLMAgent

    with pytest.raises(ToolLoopError) as caught:
        LLMAgent(ScriptedChatModel([RuntimeError("down")]), []).run("hi")
    judge = ScriptedChatModel(["yes"], model_name=MODEL)
    (got,) = evaluate(caught.value, [llm_judge(judge, QUESTION)]).results
    assert not got.passed
    assert got.seen.startswith("no answer")
    assert judge.calls == ()


def test_the_judges_reply_is_read_in_a_notebook_cell_too(run: ToolLoopResult) -> None:
    async def inside_a_running_loop() -> bool:
        judge = ScriptedChatModel([AIMessage("yes")], model_name=MODEL)
        return evaluate(run, [llm_judge(judge, QUESTION)]).passed

    assert asyncio.run(inside_a_running_loop())


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: llm_judge("gpt-4o-mini", QUESTION), "model"),  # type: ignore[arg-type]
        (lambda: llm_judge(ScriptedChatModel(["yes"]), ""), "question"),
        (lambda: llm_judge(ScriptedChatModel(["yes"]), QUESTION, timeout_s=0), "timeout_s"),
        (lambda: llm_judge(ScriptedChatModel(["yes"]), QUESTION, timeout_s=-1.0), "timeout_s"),
    ],
)
def test_a_judge_that_could_not_judge_is_refused_where_it_is_written(make: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make()
    assert caught.value.field == field
