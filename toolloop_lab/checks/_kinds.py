"""The checks themselves: what a run did (its tool calls), what it spent, how it ended,
what it answered, and anything else as a predicate over its events.

Each constructor checks what it is given where it is written: a check that could not judge
a run (``max_tokens(-1)``, ``called(5)``, ``outcome("nope")``, a predicate that is no
function) raises :class:`~toolloop_lab.errors.ConfigurationError` naming the argument, so a
mistake fails on its line, never as a check that can never pass.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from toolloop_lab._spend.pricing import to_decimal_usd
from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.escape import NAME_CHARS, TEXT_CHARS, clip
from toolloop_lab._support.fields import Count, checked, shown
from toolloop_lab._support.words import estimated, outcome_text
from toolloop_lab.checks._base import Check, CheckResult, result
from toolloop_lab.checks._matchers import Matcher, compiled, matcher_from_json, matcher_of, said
from toolloop_lab.checks._run import CallSeen, CheckedRun
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import OUTCOMES, Event, LoopFinished, Outcome

ANSWER_CHARS: Final = 200
"""Characters of an answer a check's evidence shows."""
LISTED: Final = 3
"""Calls a check's evidence lists by name before it counts the rest."""


def tool_name(value: Any, field: str) -> str:
    """A tool's name: text with something in it."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(
            f"{field} takes a tool's name (a non-empty str), got {shown(value)}", field=field
        )
    return value


def _limit(value: Any, field: str) -> int:
    return int(checked(Count, value, field=field))


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'s' * (n != 1)}"


def _listed(calls: Iterable[CallSeen], said_of: Callable[[CallSeen], str]) -> str:
    """The first :data:`LISTED` calls, each as ``said_of`` says it, the rest counted."""
    items = list(calls)
    shown_ = [said_of(c) for c in items[:LISTED]]
    if len(items) > LISTED:
        shown_.append(f"and {len(items) - LISTED} more")
    return "; ".join(shown_)


def _names(run: CheckedRun) -> str:
    """The tools the run called, with how often: ``search (2 calls), open_ticket``."""
    counts = Counter(c.name for c in run.calls)
    if not counts:
        return "no tool at all"
    return ", ".join(
        clip(name, NAME_CHARS) + (f" ({n} calls)" if n > 1 else "") for name, n in counts.items()
    )


# -- what it did ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Called(Check):
    tool: str
    arguments: tuple[tuple[str, Matcher], ...] = ()

    def describe(self) -> str:
        args = "".join(f", {k}={m.describe()}" for k, m in self.arguments)
        return f"called({said(self.tool)}{args})"

    def _expected(self) -> str:
        if not self.arguments:
            return f"a call of {self.tool}"
        args = ", ".join(f"{k}={m.describe()}" for k, m in self.arguments)
        return f"a call of {self.tool} with {args}"

    def _mismatch(self, call: CallSeen) -> str | None:
        """Why ``call`` is not the call wanted (its first argument that is not), else
        ``None``."""
        for key, matcher in self.arguments:
            if key not in call.args:
                return f"it has no argument {key}"
            if not matcher.accepts(call.args[key]):
                return f"{key} is {said(call.args[key])}"
        return None

    def judge(self, run: CheckedRun) -> CheckResult:
        mine = [c for c in run.calls if c.name == self.tool]
        for call in mine:
            if self._mismatch(call) is None:
                return result(self, True, self._expected(), call.where, call=call)
        if not mine:
            seen = f"no call of {self.tool}; the run called {_names(run)}"
            return result(self, False, self._expected(), seen)
        seen = _listed(mine, lambda c: f"{c.where}, but {self._mismatch(c)}")
        return result(self, False, self._expected(), seen, call=mine[0])

    def to_json(self) -> dict[str, Any] | None:
        saved = {k: m.to_json() for k, m in self.arguments}
        if any(v is None for v in saved.values()):
            return None
        return {"check": "called", "tool": self.tool, "arguments": saved}


def called(tool: str, /, **arguments: Any) -> Check:
    """Some call of ``tool`` whose every argument named here matches: a value it equals
    (``called("lookup", ticket=7)``), or a matcher (``query=contains("refund")``,
    ``id=matches(r"^T-\\d+$")``, any predicate ``n=lambda v: v > 3``). A call counts
    whether or not its tool succeeded: the model made it."""
    name = tool_name(tool, "tool")
    matchers = tuple((key, matcher_of(value, key)) for key, value in arguments.items())
    return _Called(name, matchers)


@dataclass(frozen=True, slots=True)
class _NotCalled(Check):
    tool: str

    def describe(self) -> str:
        return f"not_called({said(self.tool)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"no call of {self.tool}"
        mine = [c for c in run.calls if c.name == self.tool]
        if not mine:
            return result(self, True, expected, f"the run called {_names(run)}")
        seen = f"{_plural(len(mine), 'call')} of it: {_listed(mine, lambda c: c.where)}"
        return result(self, False, expected, seen, call=mine[0])

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "not_called", "tool": self.tool}


def not_called(tool: str) -> Check:
    """No call of ``tool`` at all."""
    return _NotCalled(tool_name(tool, "tool"))


@dataclass(frozen=True, slots=True)
class _CalledInOrder(Check):
    tools: tuple[str, ...]

    def describe(self) -> str:
        return f"called_in_order({', '.join(said(t) for t in self.tools)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"calls of {', then '.join(self.tools)} in that order (others may come between)"
        matched: list[CallSeen] = []
        for call in run.calls:
            if len(matched) < len(self.tools) and call.name == self.tools[len(matched)]:
                matched.append(call)
        found = ", then ".join(c.where for c in matched)
        if len(matched) == len(self.tools):
            return result(self, True, expected, found, call=matched[-1])
        missing = self.tools[len(matched)]
        after = f"{found}, then no call of {missing} after it" if matched else ""
        order = ", ".join(clip(c.name, NAME_CHARS) for c in run.calls[:20])
        more = f", … ({len(run.calls) - 20} more)" if len(run.calls) > 20 else ""
        calls = f"the calls were {order}{more}" if run.calls else "the run called no tool"
        seen = f"{after}; {calls}" if after else f"no call of {missing}; {calls}"
        return result(self, False, expected, seen, call=matched[-1] if matched else None)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "called_in_order", "tools": list(self.tools)}


def called_in_order(*tools: str) -> Check:
    """Calls of ``tools`` in this order: a subsequence of the run's calls (others may come
    before, between and after them): ``called_in_order("lookup_ticket", "reply")``."""
    if not tools:
        raise ConfigurationError(
            "called_in_order takes the tools' names, in order: called_in_order('a', 'b')",
            field="tools",
        )
    return _CalledInOrder(tuple(tool_name(t, f"tools[{i}]") for i, t in enumerate(tools)))


@dataclass(frozen=True, slots=True)
class _NoToolErrors(Check):
    def describe(self) -> str:
        return "no_tool_errors()"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = "every tool call to succeed"
        bad = [c for c in run.calls if c.status in ("error", "cancelled")]
        if not bad:
            seen = f"{_plural(len(run.calls), 'tool call')}, none ended in an error"
            return result(self, True, expected, seen)
        said_ = _listed(bad, lambda c: f"{c.where}: {c.ended}")
        seen = f"{_plural(len(bad), 'tool call')} did not succeed: {said_}"
        return result(self, False, expected, seen, call=bad[0])

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "no_tool_errors"}


def no_tool_errors() -> Check:
    """Every tool call succeeded: none failed, was refused, timed out, was not run (a
    spent budget) or was cut short by a stop."""
    return _NoToolErrors()


# -- what it spent ----------------------------------------------------------------------


def _first_past(run: CheckedRun, amount: Callable[[Any], Any], limit: Any) -> int | None:
    """The first round at whose end the running total of ``amount`` (of each round's
    row) is past ``limit``."""
    total: Any = 0
    for row in run.view.rounds:
        value = amount(row)
        if value is None:
            return None
        total += value
        if total > limit:
            return int(row.number)
    return None


@dataclass(frozen=True, slots=True)
class _MaxToolRounds(Check):
    n: int

    def describe(self) -> str:
        return f"max_tool_rounds({self.n})"

    def judge(self, run: CheckedRun) -> CheckResult:
        took = run.view.tool_rounds
        expected = f"at most {_plural(self.n, 'tool round')}"
        seen = _plural(took, "tool round")
        if took <= self.n:
            return result(self, True, expected, seen)
        rounds = [r.number for r in run.view.rounds if r.purpose == "round" and r.tools]
        where = rounds[self.n] if len(rounds) > self.n else None
        return result(
            self,
            False,
            expected,
            f"{seen} (round {where} is the first past it)" if where is not None else seen,
            round=where,
        )

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "max_tool_rounds", "n": self.n}


def max_tool_rounds(n: int) -> Check:
    """At most ``n`` rounds that ended in tool calls (``ToolLoopResult.tool_rounds``)."""
    return _MaxToolRounds(_limit(n, "n"))


@dataclass(frozen=True, slots=True)
class _MaxModelCalls(Check):
    n: int

    def describe(self) -> str:
        return f"max_model_calls({self.n})"

    def judge(self, run: CheckedRun) -> CheckResult:
        made = run.view.model_calls
        expected = f"at most {_plural(self.n, 'model call')}"
        seen = f"{_plural(made, 'model call')} (pruning and final-answer calls included)"
        if made <= self.n:
            return result(self, True, expected, seen)
        where = _first_past(run, lambda r: (r.usage + r.pruning_usage).requests, self.n)
        return result(self, False, expected, seen, round=where)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "max_model_calls", "n": self.n}


def max_model_calls(n: int) -> Check:
    """At most ``n`` model calls paid for (``ToolLoopResult.model_calls``: every round's,
    the final-answer call's and the pruning model's)."""
    return _MaxModelCalls(_limit(n, "n"))


@dataclass(frozen=True, slots=True)
class _MaxTokens(Check):
    n: int

    def describe(self) -> str:
        return f"max_tokens({self.n})"

    def judge(self, run: CheckedRun) -> CheckResult:
        usage = run.view.usage
        expected = f"at most {format_tokens(self.n)} tokens"
        note = estimated(usage.estimated)
        seen = (
            f"{format_tokens(usage.total_tokens)} tokens ({format_tokens(usage.input_tokens)} "
            f"in, {format_tokens(usage.output_tokens)} out{'; ' + note if note else ''})"
        )
        if usage.total_tokens <= self.n:
            return result(self, True, expected, seen)
        where = _first_past(run, lambda r: (r.usage + r.pruning_usage).total_tokens, self.n)
        return result(self, False, expected, seen, round=where)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "max_tokens", "n": self.n}


def max_tokens(n: int) -> Check:
    """At most ``n`` tokens over the run, input and output, every call's (pruning
    included)."""
    return _MaxTokens(_limit(n, "n"))


@dataclass(frozen=True, slots=True)
class _MaxCost(Check):
    limit_usd: Decimal

    def describe(self) -> str:
        return f"max_cost_usd({self.limit_usd})"

    def judge(self, run: CheckedRun) -> CheckResult:
        cost = run.view.usage.cost_usd
        expected = f"at most {format_usd(self.limit_usd, exact=True)}"
        if cost is None:
            seen = "an unknown cost: a call of the run could not be priced"
            return result(self, False, expected, seen)
        shown_ = format_usd(cost)
        if cost > self.limit_usd and shown_ == format_usd(self.limit_usd):
            shown_ = format_usd(cost, exact=True)  # never read as equal to the limit
        if cost <= self.limit_usd:
            return result(self, True, expected, shown_)
        where = _first_past(run, lambda r: r.cost_usd, self.limit_usd)
        return result(self, False, expected, shown_, round=where)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "max_cost_usd", "limit_usd": str(self.limit_usd)}


def max_cost_usd(limit_usd: float | Decimal | str) -> Check:
    """At most ``limit_usd`` dollars over the run (every call's cost, genai-prices or the
    run's own prices); a run whose cost is unknown fails it, unknown never read as zero."""
    return _MaxCost(to_decimal_usd(limit_usd, field="limit_usd"))


# -- how it ended and what it answered ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Outcome(Check):
    name: Outcome

    def describe(self) -> str:
        return f"outcome({said(self.name)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"outcome {self.name} ({outcome_text(self.name)})"
        end = run.end
        if end is None:
            seen = "no outcome: the run's events stop before its end"
            return result(self, False, expected, seen, round=run.last_round)
        reason = end.synthesis_reason if isinstance(end, LoopFinished) else None
        seen = f"outcome {end.outcome} ({outcome_text(end.outcome, reason)})"
        if not isinstance(end, LoopFinished):
            seen += f": {clip(end.error_type, NAME_CHARS)}: {clip(end.message, TEXT_CHARS)}"
        return result(self, end.outcome == self.name, expected, seen, round=run.last_round)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "outcome", "name": self.name}


def outcome(name: Outcome) -> Check:
    """The run ended with outcome ``name``, one of :data:`toolloop_lab.events.OUTCOMES`
    (``final_answer``, ``synthesis``, ``token_budget_exhausted``, ...)."""
    if name not in OUTCOMES:
        close = difflib.get_close_matches(str(name), OUTCOMES, n=1) if isinstance(name, str) else []
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"outcome takes one of {', '.join(OUTCOMES)}, got {shown(name)}{hint}",
            field="name",
        )
    return _Outcome(name)


def _no_answer(run: CheckedRun) -> str:
    end = run.end
    if end is None:
        return "no answer: the run's events stop before its end"
    return f"no answer: the run ended {end.outcome} ({outcome_text(end.outcome)})"


def _answer_said(answer: str) -> str:
    return f"the answer {clip(repr(answer), ANSWER_CHARS)}"


@dataclass(frozen=True, slots=True)
class _AnswerContains(Check):
    text: str

    def describe(self) -> str:
        return f"answer_contains({said(self.text)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"an answer containing {said(self.text)}"
        answer = run.answer
        if answer is None:
            return result(self, False, expected, _no_answer(run), round=run.last_round)
        passed = self.text in answer
        return result(self, passed, expected, _answer_said(answer), round=run.last_round)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "answer_contains", "text": self.text}


def answer_contains(text: str) -> Check:
    """The final answer contains ``text`` (case matters); a run with no answer fails."""
    if not isinstance(text, str) or not text:
        raise ConfigurationError(
            f"answer_contains takes the text to find (a non-empty str), got {shown(text)}",
            field="text",
        )
    return _AnswerContains(text)


@dataclass(frozen=True, slots=True)
class _AnswerMatches(Check):
    pattern: str
    _compiled: Any = field(compare=False, repr=False, hash=False)

    def describe(self) -> str:
        return f"answer_matches({said(self.pattern)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        expected = f"an answer in which {said(self.pattern)} is found"
        answer = run.answer
        if answer is None:
            return result(self, False, expected, _no_answer(run), round=run.last_round)
        passed = self._compiled.search(answer) is not None
        return result(self, passed, expected, _answer_said(answer), round=run.last_round)

    def to_json(self) -> dict[str, Any] | None:
        return {"check": "answer_matches", "pattern": self.pattern}

    def __reduce__(self) -> tuple[Any, ...]:
        return (answer_matches, (self.pattern,))


def answer_matches(pattern: str) -> Check:
    """``pattern`` (a regular expression, RE2 syntax: linear time on any answer) is found
    in the final answer: ``answer_matches(r"(?i)refund(ed)?")``."""
    return _AnswerMatches(pattern, compiled(pattern, "pattern"))


# -- anything else ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Satisfies(Check):
    predicate: Callable[[tuple[Event, ...]], object] = field(hash=False)
    description: str

    def describe(self) -> str:
        return f"satisfies({said(self.description)})"

    def judge(self, run: CheckedRun) -> CheckResult:
        try:
            answer = self.predicate(run.events)
        except Exception as exc:  # noqa: BLE001 - a predicate that raises fails, saying so
            seen = f"the predicate raised {explain(exc)}"
            return result(self, False, self.description, clip(seen, TEXT_CHARS))
        if answer is True or answer is False:
            return result(self, answer, self.description, "yes" if answer else "no")
        seen = f"the predicate returned {shown(answer)}, not True or False"
        return result(self, False, self.description, seen)


def satisfies(predicate: Callable[[tuple[Event, ...]], bool], description: str) -> Check:
    """``predicate(events)`` is ``True`` for the run's events (a tuple of
    :mod:`toolloop_lab.events` values, in order): for anything the other checks do not
    say. ``description`` is what it checks, in words; a predicate that raises or returns
    anything but a bool fails, saying so."""
    if isinstance(predicate, type) or not callable(predicate):
        raise ConfigurationError(
            f"satisfies takes a function of the run's events, got {shown(predicate)}",
            field="predicate",
        )
    if not isinstance(description, str) or not description.strip():
        raise ConfigurationError(
            f"satisfies takes a description of what it checks (a non-empty str), got "
            f"{shown(description)}",
            field="description",
        )
    return _Satisfies(predicate, description)


# -- saved checks -----------------------------------------------------------------------

_SAVED: Final[Mapping[str, Callable[[Mapping[str, Any]], Check]]] = {
    "called": lambda d: called(
        d["tool"],
        **{k: matcher_from_json(v, k) for k, v in dict(d.get("arguments") or {}).items()},
    ),
    "not_called": lambda d: not_called(d["tool"]),
    "called_in_order": lambda d: called_in_order(*d["tools"]),
    "no_tool_errors": lambda d: no_tool_errors(),
    "max_tool_rounds": lambda d: max_tool_rounds(d["n"]),
    "max_model_calls": lambda d: max_model_calls(d["n"]),
    "max_tokens": lambda d: max_tokens(d["n"]),
    "max_cost_usd": lambda d: max_cost_usd(d["limit_usd"]),
    "outcome": lambda d: outcome(d["name"]),
    "answer_contains": lambda d: answer_contains(d["text"]),
    "answer_matches": lambda d: answer_matches(d["pattern"]),
}
"""How each kind of check is read back from :meth:`Check.to_json`."""


def check_from_json(data: Any, where: str) -> Check:
    """A check saved by :meth:`Check.to_json`; anything else is a ``ConfigurationError``
    naming ``where``."""
    kind = data.get("check") if isinstance(data, Mapping) else None
    make = _SAVED.get(kind) if isinstance(kind, str) else None
    if make is None:
        raise ConfigurationError(
            f"{where}: not a saved check (its 'check' is one of {', '.join(_SAVED)})",
            field="checks",
        )
    try:
        return make(data)
    except KeyError as exc:
        raise ConfigurationError(f"{where}: {kind} needs {exc.args[0]!r}", field="checks") from None
    except TypeError as exc:
        raise ConfigurationError(f"{where}: {exc}", field="checks") from None
    except ConfigurationError as exc:
        raise ConfigurationError(f"{where}: {exc}", field="checks") from None
