"""A check that asks a chat model a yes/no question about the run's answer.

The judge's call is its own spend, not the run's: its tokens and cost are on the check's
result (``CheckResult.usage``) and the report's ``judging_usage``, never added to the
run's totals, which stay exactly what the run paid. The call is bounded
(``timeout_s``), and a judge that replies neither yes nor no fails the check, saying
what it replied.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from toolloop_lab._spend.pricing import model_name_of, price_of
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.escape import NAME_CHARS, TEXT_CHARS, clip
from toolloop_lab._support.fields import TimeoutSeconds, checked, shown
from toolloop_lab._support.sync_runner import run_sync
from toolloop_lab.checks._base import Check, CheckResult, result
from toolloop_lab.checks._kinds import _no_answer
from toolloop_lab.checks._matchers import said
from toolloop_lab.checks._run import CheckedRun
from toolloop_lab.errors import ConfigurationError

JUDGE_INSTRUCTIONS: Final = (
    "You judge the answer an AI agent gave. Read the question about it, then reply with "
    "one word: yes or no."
)
"""What the judge model is told before the question (a system message)."""
DEFAULT_JUDGE_TIMEOUT_S: Final = 120.0
"""How long a judge's reply may take by default."""


def judge_messages(question: str, answer: str) -> list[BaseMessage]:
    """What the judge model is sent: its instructions, then the question and the answer."""
    return [
        SystemMessage(JUDGE_INSTRUCTIONS),
        HumanMessage(
            f"Question: {question}\n\nThe agent's answer:\n<answer>\n{answer}\n</answer>\n\n"
            "Reply yes or no."
        ),
    ]


def verdict_of(text: str) -> bool | None:
    """``True`` for a reply that says yes, ``False`` for no, ``None`` for anything else
    (its first word, without case or punctuation)."""
    words = text.strip().split(maxsplit=1)
    first = words[0].strip(".,!:;\"'*`").lower() if words else ""
    return {"yes": True, "no": False}.get(first)


@dataclass(frozen=True, slots=True, eq=False)
class _Judged(Check):
    model: BaseChatModel = field(repr=False)
    question: str
    timeout_s: float

    def describe(self) -> str:
        name = model_name_of(self.model) or type(self.model).__name__
        return f"llm_judge({clip(name, NAME_CHARS)}, {said(self.question)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"the judge to answer yes to {said(self.question)}"
        answer = run.answer
        if answer is None:
            return result(self, False, expected, _no_answer(run), round=run.last_round)
        messages = judge_messages(self.question, answer)
        try:
            reply = run_sync(lambda: self._ask(messages))
        except TimeoutError:
            seen = f"no reply from the judge within {self.timeout_s:g} s"
            return result(self, False, expected, seen, round=run.last_round)
        except Exception as exc:  # noqa: BLE001 - the judge's failure fails its check
            seen = clip(f"the judge's call raised {explain(exc)}", TEXT_CHARS)
            return result(self, False, expected, seen, round=run.last_round)
        usage = Usage.from_ai_message(reply, prompt=messages)
        name = model_name_of(self.model, reply.response_metadata)
        usage = usage.with_cost(price_of(usage, name))
        said_ = clip(repr(reply.text), 200)
        verdict = verdict_of(reply.text)
        if verdict is None:
            seen = f"the judge replied {said_}, neither yes nor no"
            return result(self, False, expected, seen, round=run.last_round, usage=usage)
        return result(
            self, verdict, expected, f"the judge replied {said_}", round=run.last_round, usage=usage
        )

    async def _ask(self, messages: list[BaseMessage]) -> AIMessage:
        reply = await asyncio.wait_for(self.model.ainvoke(messages), self.timeout_s)
        if not isinstance(reply, AIMessage):
            raise TypeError(f"the judge model returned {shown(reply)}, not an AIMessage")
        return reply


def llm_judge(
    model: BaseChatModel, question: str, *, timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S
) -> Check:
    """Ask ``model`` (any chat model) a yes/no ``question`` about the run's final answer
    (``llm_judge(judge_model, "Does the answer give the refund's amount?")``): the check
    passes when it says yes. Its call is counted apart (the result's ``usage``), never in
    the run's totals; a reply that is neither yes nor no, a call that raises or takes more
    than ``timeout_s`` seconds fails the check, saying so."""
    if not isinstance(model, BaseChatModel):
        raise ConfigurationError(
            f"llm_judge takes a chat model (a langchain-core BaseChatModel), got {shown(model)}",
            field="model",
        )
    if not isinstance(question, str) or not question.strip():
        raise ConfigurationError(
            f"llm_judge takes a yes/no question (a non-empty str), got {shown(question)}",
            field="question",
        )
    limit: Any = checked(TimeoutSeconds, timeout_s, field="timeout_s")
    return _Judged(model, question, float(limit))
