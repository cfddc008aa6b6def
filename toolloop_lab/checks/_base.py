"""What a check is, and what judging one says: :class:`Check` and :class:`CheckResult`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolloop_lab._spend.usage import Usage, format_tokens, format_usd
from toolloop_lab._support.escape import plain

if TYPE_CHECKING:
    from toolloop_lab.checks._run import CallSeen, CheckedRun


class Check(ABC):
    """A check of a run: a frozen value that says what it wants (:meth:`describe`) and
    judges a run (:meth:`judge`).

    The constructors of :mod:`toolloop_lab.checks` make them (``called("lookup")``,
    ``max_tool_rounds(3)``, ...), each refusing what it could not judge where it is
    written. A check of your own subclasses this (a frozen dataclass) or, simpler, is
    :func:`~toolloop_lab.checks.satisfies` with a predicate over the run's events.
    """

    __slots__ = ()

    @abstractmethod
    def describe(self) -> str:
        """The check as code reads: ``called('lookup', ticket=7)``."""

    @abstractmethod
    def judge(self, run: CheckedRun) -> CheckResult:
        """Judge ``run``: passed or not, with the evidence (expected, seen, where)."""

    def to_json(self) -> dict[str, Any] | None:
        """The check as JSON (saved beside a recording for ``toolloop-lab check``), or
        ``None`` when it holds code or a model, which no file can."""
        return None

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True, slots=True)
class CheckResult:
    """How one check judged one run: passed or not, what it expected, what it saw, and
    where (the round, the tool call and its id) when one place says it."""

    check: Check
    passed: bool
    expected: str
    """What the check wants, in words (``a call of lookup with ticket=7``)."""
    seen: str
    """What the run did instead, or what satisfied the check, in words; untrusted text
    (a model's answer, a tool's arguments) shown with its controls as codes, clipped."""
    round: int | None = None
    """The round the evidence points at (``None``: the run as a whole)."""
    call: CallSeen | None = None
    """The tool call the evidence points at, if one."""
    usage: Usage | None = None
    """What judging cost, for a check that asks a model (never part of the run's totals)."""

    @property
    def description(self) -> str:
        """The check as code reads (:meth:`Check.describe`)."""
        return self.check.describe()

    @property
    def tool_call_id(self) -> str | None:
        """The id of the call the evidence points at."""
        return None if self.call is None else self.call.id

    @property
    def where(self) -> str:
        """Where the evidence is: ``round 2, call lookup(ticket=7) [call_x1]``, ``round 3``
        or ``the run as a whole``."""
        if self.call is not None:
            return f"round {self.call.round}, call {self.call.text} [{self.call.id}]"
        if self.round is not None:
            return f"round {self.round}"
        return "the run as a whole"

    @property
    def verdict(self) -> str:
        """``passed`` or ``failed``."""
        return "passed" if self.passed else "failed"

    def lines(self) -> list[str]:
        """The result as a pytest assertion reads: the check, then what was expected,
        what was seen and where, each on its own line (plain text, safe for a terminal)."""
        out = [
            f"{plain(self.description)}: {self.verdict}",
            f"  expected: {plain(self.expected)}",
            f"  seen:     {plain(self.seen)}",
            f"  where:    {plain(self.where)}",
        ]
        if self.usage is not None:
            spent = f"{format_tokens(self.usage.total_tokens)} tokens, "
            out.append(f"  judging cost: {spent}{format_usd(self.usage.cost_usd)} (not the run's)")
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines())


def result(
    check: Check,
    passed: bool,
    expected: str,
    seen: str,
    *,
    round: int | None = None,
    call: CallSeen | None = None,
    usage: Usage | None = None,
) -> CheckResult:
    """A result whose ``round`` is its call's when it points at one."""
    if call is not None and round is None:
        round = call.round
    return CheckResult(check, passed, expected, seen, round, call, usage)
