"""``compare``: any two runs side by side, round by round, with what changed marked.

::

    from toolloop_lab import compare

    diff = compare(before, after)    # results, event sequences, traces (path or TraceRead)
    diff = compare(result, forked)   # a run and what fork(result, ...) returned
    print(diff)                      # both runs' figures, then each round that differs
    diff.frame()                     # one row per round: tools, replies, results, spend

Tokens and cost alone hide what changed: a round whose skipped ``read_log`` became an
``open_ticket`` call can spend exactly what it did. So each round is compared on what it
*did*: its tool calls (names and arguments), the model's reply text and the tools' results
(status and content); ``same`` holds only when all three match. Rounds are paired by
number, the synthesis (final-answer) call with the other run's synthesis call.

A fork's own run numbers its rounds from 1 though it starts at the original's round
``at_round``: what :func:`~toolloop_lab._replay.fork.fork` returned (a
:class:`~toolloop_lab._replay.fork.ForkResult`) is lined up with its original by itself, its
rounds numbered as the original's; its events alone need ``b_offset=at_round - 1`` (see
:func:`compare`).

Each run is read with the one fold (:class:`~toolloop_lab._runview.RunView`) and its
figures with :class:`~toolloop_lab._replay.figures.RunFigures`, as a fork's and a
what-if's are; a stream of several runs is narrowed by the one rule
(:func:`~toolloop_lab.events.select_run`, ``a_run_id=`` / ``b_run_id=`` pick another).
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeGuard, cast

from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._replay.figures import ComparedRuns, RunFigures, comparison_lines, usd_change
from toolloop_lab._replay.fork.result import ForkResult
from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._spend.usage import Usage, format_usd
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, TEXT_CHARS, esc, esc_clip, plain
from toolloop_lab._support.jsonsafe import dumps, thaw
from toolloop_lab._support.words import (
    CUT_SHORT,
    INTERVENTION,
    outcome_text,
    reason_words,
    word,
)
from toolloop_lab._tools.content import is_data_block
from toolloop_lab._trace import TraceRead, read_trace
from toolloop_lab.errors import ConfigurationError, PartialRun
from toolloop_lab.events import EVENT_TYPES, Event, select_run

if TYPE_CHECKING:
    import pandas as pd

RunSource: TypeAlias = (
    "ToolLoopResult | Sequence[Event] | TraceRead | str | os.PathLike[str] | PartialRun"
    " | ForkResult"
)
"""What :func:`compare` accepts for each run: a finished run, its events (one run, or a
stream a run is picked from), a trace (path or :class:`~toolloop_lab._trace.TraceRead`),
the error a failed run raised (its ``events``), or what
:func:`~toolloop_lab._replay.fork.fork` returned (its own run, lined up with its original)."""

_TAKES: Final = (
    "a ToolLoopResult, its events (a list or tuple of events), a trace (a path or a "
    "TraceRead), the error a failed run raised, or what fork() returned (a ForkResult)"
)
"""What :func:`compare` takes, as its refusal says it."""

CALL_CHARS: Final = 300
"""Characters the text and HTML views show of one call (name and arguments)."""
DIFF_LINE_CHARS: Final = 300
"""Characters shown of one line of a diff."""
DIFF_LINES: Final = 40
"""Lines of one diff the views show; the rest is counted."""
SHOWN_SPANS: Final = 60
"""Rounds that differ (and spans of rounds that did the same) the text and HTML views
list; the rest is counted (the frame holds them all)."""
DIFF_INPUT_LINES: Final = 2_000
"""Lines of each text the diff reads (difflib's time grows with their product); a
difference further down is still reported, as such."""
DATA_DIFFERS: Final = "(the same words; the data of an image or file differs)"
"""What a results diff says when the results read the same and their data does not."""

_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())
_SIDES: Final = ("a", "b")


@dataclass(frozen=True, slots=True)
class CallSide:
    """One tool call of a round: what the model asked for and what came back."""

    name: str
    args: Mapping[str, Any] = field(hash=False)
    """The arguments it ran with (a person's edit at a pause included), as plain data."""
    status: str
    """``success``, ``error``, ``cancelled``, or ``pending`` (no result in the events)."""
    error_reason: str | None
    ran: bool
    content: str
    """The result the model read (content blocks in words: ``[image: image/png, 12 KB]``)."""
    changed: tuple[str, ...] = ()
    """What a person changed of this call at a pause, in words (``edited the arguments``)."""
    data: tuple[str, ...] = field(default=(), repr=False)
    """A fingerprint of each block of its result that is more than its words (an image, a
    file): two images of one size read alike, and still differ."""

    @property
    def call_text(self) -> str:
        """``read_log(path='x')``: the call as a person reads it."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({args})"

    @property
    def status_text(self) -> str:
        """How the call ended, in the words every view uses."""
        said = self._ended()
        return f"{said}, {', '.join(self.changed)}" if self.changed else said

    def _ended(self) -> str:
        why = reason_words(self.error_reason)
        if self.status == "cancelled" and self.ran:
            return CUT_SHORT.get(self.error_reason or "", CUT_SHORT["cancelled"])
        if not self.ran:
            return f"not run ({why})" if why else "not run"
        if self.status == "error":
            return f"error ({why})" if why else "error"
        return self.status

    @property
    def result_text(self) -> str:
        """The call, how it ended, then the result (the lines a results diff reads)."""
        return f"{self.call_text} -> {self.status_text}\n{self.content}"

    def _key(self) -> tuple[Any, ...]:
        return (self.name, self.args)

    def _result_key(self) -> tuple[Any, ...]:
        return (self.status, self.error_reason, self.ran, self.content, self.data)


@dataclass(frozen=True, slots=True)
class RoundSide:
    """One run's side of a round: the reply, the calls and their results, the spend."""

    number: int
    purpose: Literal["round", "synthesis"]
    text: str
    """The model's reply text."""
    calls: tuple[CallSide, ...]
    usage: Usage
    """The round's model call and its pruning calls."""
    errors: tuple[str, ...] = ()
    """Model calls of the round that raised (a framework may have retried them): each
    one's error type and message."""

    @property
    def tools_text(self) -> str:
        """Every call of the round, ``name(args)``, joined by ``; ``."""
        return "; ".join(c.call_text for c in self.calls)

    @property
    def results_text(self) -> str:
        """Every call's result (see :attr:`CallSide.result_text`), one after another."""
        return "\n".join(c.result_text for c in self.calls)

    def same_calls(self, other: RoundSide) -> bool:
        return [c._key() for c in self.calls] == [c._key() for c in other.calls]

    def same_results(self, other: RoundSide) -> bool:
        return [c._result_key() for c in self.calls] == [c._result_key() for c in other.calls]

    def same_as(self, other: RoundSide) -> bool:
        """Same calls with the same arguments, the same reply and the same results."""
        return (
            self.purpose == other.purpose
            and self.text == other.text
            and self.errors == other.errors
            and self.same_calls(other)
            and self.same_results(other)
        )


@dataclass(frozen=True, slots=True)
class RoundPair:
    """The same round of both runs; a side is ``None`` when that run has no such round."""

    round: int | None
    """The round's number; ``None`` for the synthesis call (its own row)."""
    a: RoundSide | None
    b: RoundSide | None

    @property
    def purpose(self) -> Literal["round", "synthesis"]:
        return "synthesis" if self.round is None else "round"

    @property
    def label(self) -> str:
        return "final-answer call" if self.round is None else f"round {self.round}"

    @property
    def same(self) -> bool:
        """Both runs have the round and it did the same (see :meth:`RoundSide.same_as`)."""
        return self.a is not None and self.b is not None and self.a.same_as(self.b)

    @property
    def tokens_delta(self) -> int:
        """b's tokens minus a's (a missing round spent none)."""
        return _tokens(self.b) - _tokens(self.a)

    @property
    def cost_delta(self) -> Decimal | None:
        """b's cost minus a's; ``None`` when either is unpriced."""
        return usd_change(_cost(self.a), _cost(self.b))


def _tokens(side: RoundSide | None) -> int:
    return 0 if side is None else side.usage.total_tokens


def _cost(side: RoundSide | None) -> Decimal | None:
    return Decimal(0) if side is None else side.usage.cost_usd


COMPARE_DTYPES: Final[dict[str, str]] = {
    "round": "Int64",
    "purpose": "string",
    "same": "bool",
    "a_tools": "string",
    "b_tools": "string",
    "a_text": "string",
    "b_text": "string",
    "a_results": "string",
    "b_results": "string",
    "a_tokens": "Int64",
    "b_tokens": "Int64",
    "tokens_delta": "int64",
    "a_cost_usd": "float64",
    "b_cost_usd": "float64",
    "cost_delta_usd": "float64",
}
"""Columns of :meth:`RunComparison.frame`. ``round`` is ``<NA>`` on the synthesis row
(``purpose`` says ``synthesis``); a round one run lacks has ``<NA>`` on its side (costs:
NaN) and counts as nothing spent in the deltas; an unpriced cost is NaN. Texts are whole,
never clipped: the frame is data."""


@dataclass(frozen=True, slots=True)
class RunComparison(ComparedRuns):
    """Two runs side by side (``token_delta`` and ``cost_delta``: b's minus a's)."""

    a: RunFigures
    b: RunFigures
    a_run_id: str | None
    b_run_id: str | None
    rounds: tuple[RoundPair, ...] = field(repr=False)
    """Every round of either run, in order; the synthesis call last."""
    a_name: str | None = None
    """What a's caller called the run (``run(..., name=)``), else ``None``."""
    b_name: str | None = None
    b_offset: int = 0
    """Added to b's round numbers to pair them with a's (``compare(..., b_offset=)``, or
    a fork's result's ``at_round - 1``)."""
    a_offset: int = 0
    """Added to a's round numbers (a fork's result's ``at_round - 1``, else 0)."""

    @property
    def same(self) -> bool:
        """Every round of both runs did the same."""
        return all(pair.same for pair in self.rounds)

    @property
    def differing(self) -> tuple[RoundPair, ...]:
        """The rounds that differ (or that one run lacks)."""
        return tuple(pair for pair in self.rounds if not pair.same)

    def _runs(self) -> tuple[RunFigures, RunFigures]:
        return self.a, self.b

    def frame(self) -> pd.DataFrame:
        """One row per round of either run (see :data:`COMPARE_DTYPES`)."""
        import pandas as pd

        cols: dict[str, list[Any]] = {name: [] for name in COMPARE_DTYPES}
        for pair in self.rounds:
            for name, value in _frame_row(pair).items():
                cols[name].append(value)
        return pd.DataFrame(
            {name: pd.Series(cols[name], dtype=dtype) for name, dtype in COMPARE_DTYPES.items()}
        )

    @property
    def summary(self) -> str:
        """Both runs' figures, then round by round what differs (plain text, clipped)."""
        figures = [plain(line) for line in comparison_lines(_SIDES, self.a, self.b)]
        lines = [_head(self), *figures, ""]
        differing = len(self.differing)
        lines.append(
            "Every round did the same."
            if not differing
            else f"{differing} of {len(self.rounds)} rounds differ:"
        )
        spans = _spans(self.rounds)
        for span in spans[:SHOWN_SPANS]:
            lines += _pair_lines(span[0]) if len(span) == 1 else [_same_span(span)]
        left = spans[SHOWN_SPANS:]
        if left:
            n = sum(len(span) for span in left)
            lines.append(f"  … {n:,} more rounds: see frame()")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The same comparison as an HTML table; every text from a run is escaped."""
        return _html(self)


def _head(comparison: RunComparison) -> str:
    def run(side: str, run_id: str | None, figures: RunFigures) -> str:
        said = outcome_text(figures.outcome, figures.synthesis_reason)
        return f"{side} (run {plain(run_id, ID_CHARS)}, {plain(said, NAME_CHARS)})"

    a = run("a", comparison.a_run_id, comparison.a)
    b = run("b", comparison.b_run_id, comparison.b)
    return f"Comparing {a} with {b}:"


def _frame_row(pair: RoundPair) -> dict[str, Any]:
    def side(s: RoundSide | None) -> tuple[Any, ...]:
        if s is None:
            return None, None, None, None, float("nan")
        cost = float("nan") if s.usage.cost_usd is None else float(s.usage.cost_usd)
        return s.tools_text, s.text, s.results_text, s.usage.total_tokens, cost

    a_tools, a_text, a_results, a_tokens, a_cost = side(pair.a)
    b_tools, b_text, b_results, b_tokens, b_cost = side(pair.b)
    delta = pair.cost_delta
    return {
        "round": pair.round,
        "purpose": pair.purpose,
        "same": pair.same,
        "a_tools": a_tools,
        "b_tools": b_tools,
        "a_text": a_text,
        "b_text": b_text,
        "a_results": a_results,
        "b_results": b_results,
        "a_tokens": a_tokens,
        "b_tokens": b_tokens,
        "tokens_delta": pair.tokens_delta,
        "a_cost_usd": a_cost,
        "b_cost_usd": b_cost,
        "cost_delta_usd": float("nan") if delta is None else float(delta),
    }


# -- the text view --------------------------------------------------------------------


def _spans(rounds: Sequence[RoundPair]) -> list[tuple[RoundPair, ...]]:
    """The rounds in order, each round that differs on its own and consecutive rounds that
    did the same together (a long run that mostly agrees reads in a few lines)."""
    spans: list[list[RoundPair]] = []
    for pair in rounds:
        if pair.same and spans and spans[-1][-1].same:
            spans[-1].append(pair)
        else:
            spans.append([pair])
    return [tuple(span) for span in spans]


def _same_span(span: Sequence[RoundPair]) -> str:
    first, last = span[0], span[-1]
    end = "the final-answer call" if last.round is None else str(last.round)
    a, b = sum(_tokens(p.a) for p in span), sum(_tokens(p.b) for p in span)
    spent = f"{a:,} tokens each run" if a == b else f"a: {a:,} tokens, b: {b:,} tokens"
    return f"  rounds {first.round} to {end}: same ({spent})"


def _spend_text(pair: RoundPair) -> str:
    def one(side: str, s: RoundSide | None) -> str:
        if s is None:
            return f"{side}: no such round"
        return f"{side}: {s.usage.total_tokens:,} tokens, {format_usd(s.usage.cost_usd)}"

    delta = pair.cost_delta
    cost = "" if delta is None else f", {'+' if delta >= 0 else ''}{format_usd(delta)}"
    return f"{one('a', pair.a)} · {one('b', pair.b)} ({pair.tokens_delta:+,} tokens{cost})"


def _same_spend(pair: RoundPair) -> str:
    """What a round that did the same spent: once when both runs spent the same."""
    if pair.a is None or pair.b is None or pair.a.usage != pair.b.usage:
        return _spend_text(pair)
    usage = pair.a.usage
    return f"{usage.total_tokens:,} tokens, {format_usd(usage.cost_usd)} each"


def _calls_text(s: RoundSide | None) -> str:
    if s is None:
        return "(no such round)"
    said = [f"{plain(c.call_text, CALL_CHARS)} -> {c.status_text}" for c in s.calls]
    said += [f"model call failed: {plain(e, TEXT_CHARS)}" for e in s.errors]
    return "; ".join(said) or "(no tool calls)"


def _pair_lines(pair: RoundPair) -> list[str]:
    """One line for a round that did the same; for one that differs, both sides' calls and
    a diff of the replies and of the results."""
    if pair.same:
        return [f"  {pair.label}: same: {_calls_text(pair.a)} ({_same_spend(pair)})"]
    lines = [f"  {pair.label}: differs", f"    tools    a: {_calls_text(pair.a)}"]
    lines.append(f"             b: {_calls_text(pair.b)}")
    a, b = pair.a, pair.b
    if a is None or b is None or a.text != b.text:
        lines += _diff_block("reply", _text(a, "text"), _text(b, "text"))
    if a is None or b is None or a.results_text != b.results_text:
        lines += _diff_block("results", _text(a, "results_text"), _text(b, "results_text"))
    elif not a.same_results(b):
        lines += ["    results:", f"      {DATA_DIFFERS}"]
    lines.append(f"    spend    {_spend_text(pair)}")
    return lines


def _text(side: RoundSide | None, attr: str) -> str | None:
    return None if side is None else str(getattr(side, attr))


def _diff_block(title: str, a: str | None, b: str | None) -> list[str]:
    """A unified diff of two texts under ``title``, each line clipped and made safe for a
    terminal; at most :data:`DIFF_LINES` lines, the rest counted."""
    lines = [f"    {title}:"]
    lines += [f"      {plain(line, DIFF_LINE_CHARS)}" for line in text_diff(a, b)]
    return lines


def text_diff(a: str | None, b: str | None, limit: int = DIFF_LINES) -> list[str]:
    """``difflib.unified_diff`` of ``a`` and ``b`` by lines (``None``: the run has no such
    round), cut to ``limit`` lines with the rest counted; unclipped, unescaped."""
    a_lines = [] if a is None else a.splitlines()
    b_lines = [] if b is None else b.splitlines()
    cut = len(a_lines) > DIFF_INPUT_LINES or len(b_lines) > DIFF_INPUT_LINES
    diff = list(
        difflib.unified_diff(
            a_lines[:DIFF_INPUT_LINES],
            b_lines[:DIFF_INPUT_LINES],
            fromfile="a" if a is not None else "a (no such round)",
            tofile="b" if b is not None else "b (no such round)",
            lineterm="",
            n=1,
        )
    )
    if not diff and a != b:
        diff = [f"(the texts differ after line {DIFF_INPUT_LINES:,})" if cut else "(whitespace)"]
    if len(diff) > limit:
        diff = [*diff[:limit], f"… ({len(diff) - limit:,} more diff lines)"]
    return diff


# -- the HTML view --------------------------------------------------------------------

_STYLE: Final = (
    "<style>.tll-cmp td,.tll-cmp th{vertical-align:top;text-align:left;padding:2px 8px}"
    ".tll-cmp .differs{background:rgba(255,200,0,.15)}.tll-cmp pre{margin:0;"
    "white-space:pre-wrap}.tll-cmp .del{color:#b00}.tll-cmp .add{color:#070}</style>"
)


def _html(comparison: RunComparison) -> str:
    head = "\n".join([_head(comparison), *comparison_lines(_SIDES, comparison.a, comparison.b)])
    spans = _spans(comparison.rounds)
    rows = "".join(_html_span(span) for span in spans[:SHOWN_SPANS])
    left = sum(len(span) for span in spans[SHOWN_SPANS:])
    if left:
        rows += f'<tr><td colspan="4">… {left:,} more rounds: see frame()</td></tr>'
    return (
        f'{_STYLE}<div class="tll-cmp"><pre>{esc(head)}</pre>'
        "<table><thead><tr><th>round</th><th></th><th>a</th><th>b</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def _html_span(span: Sequence[RoundPair]) -> str:
    if len(span) == 1:
        return _html_pair(span[0])
    return f'<tr class="same"><td colspan="4">{esc(_same_span(span).strip())}</td></tr>'


def _html_pair(pair: RoundPair) -> str:
    """A round that did the same in one row; one that differs side by side, row by row
    (tools, reply, results, spend), then the diffs of its replies and results."""
    label = esc(pair.label)
    if pair.same:
        said = f"{_html_calls(pair.a)} · {_html_spend(pair.a)} each"
        return f'<tr class="same"><th>{label}</th><td>same</td><td colspan="2">{said}</td></tr>'
    cells = [
        ("tools", _html_calls(pair.a), _html_calls(pair.b)),
        ("reply", _html_text(pair.a, "text"), _html_text(pair.b, "text")),
        ("results", _html_text(pair.a, "results_text"), _html_text(pair.b, "results_text")),
        ("spend", _html_spend(pair.a), _html_spend(pair.b)),
    ]
    diff = _html_diffs(pair)
    if diff:
        cells.append(("diff", f'<td colspan="2">{diff}</td>', ""))
    out = []
    for i, (what, a, b) in enumerate(cells):
        head = f'<th rowspan="{len(cells)}">{label}<br>differs</th>' if i == 0 else ""
        row = a if what == "diff" else f"<td>{a}</td><td>{b}</td>"
        out.append(f'<tr class="differs">{head}<td>{what}</td>{row}</tr>')
    return "".join(out)


def _html_calls(side: RoundSide | None) -> str:
    if side is None:
        return "<em>no such round</em>"
    said = [
        f"<code>{esc_clip(c.call_text, CALL_CHARS)}</code> → {esc(c.status_text)}"
        for c in side.calls
    ]
    said += [f"<em>model call failed:</em> {esc_clip(e, TEXT_CHARS)}" for e in side.errors]
    return "<br>".join(said) or "<em>no tool calls</em>"


def _html_text(side: RoundSide | None, attr: str) -> str:
    text = _text(side, attr)
    return "" if text is None else f"<pre>{esc_clip(text, TEXT_CHARS)}</pre>"


def _html_spend(side: RoundSide | None) -> str:
    if side is None:
        return "<em>no such round</em>"
    return esc(f"{side.usage.total_tokens:,} tokens, {format_usd(side.usage.cost_usd)}")


def _html_diffs(pair: RoundPair) -> str:
    out = []
    for title, attr in (("reply", "text"), ("results", "results_text")):
        a, b = _text(pair.a, attr), _text(pair.b, attr)
        if a == b:
            if attr == "results_text" and not _same_results(pair):
                out.append(f"<div>{title}:</div><pre>{esc(DATA_DIFFERS)}</pre>")
            continue
        lines = "\n".join(_html_diff_line(line) for line in text_diff(a, b))
        out.append(f"<div>{title}:</div><pre>{lines}</pre>")
    return "".join(out)


def _same_results(pair: RoundPair) -> bool:
    return pair.a is None or pair.b is None or pair.a.same_results(pair.b)


def _html_diff_line(line: str) -> str:
    text = esc_clip(line, DIFF_LINE_CHARS)
    if line.startswith("-") and not line.startswith("---"):
        return f'<span class="del">{text}</span>'
    if line.startswith("+") and not line.startswith("+++"):
        return f'<span class="add">{text}</span>'
    return text


# -- reading the runs -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Side:
    """One run as :func:`compare` reads it."""

    view: RunView
    figures: RunFigures
    fork_offset: int | None = None
    """A fork's result: its ``at_round - 1``, added to its own rounds' numbers."""


def _read_side(source: object, run_id: str | None, side: str) -> _Side:
    """``source``'s run: a fork's result as its whole run's figures (the rounds it took
    included, as its summary says them), its own run's rounds numbered as its original's."""
    view = RunView.from_events(_run_events(source, run_id, side=side))
    if isinstance(source, ForkResult):
        return _Side(view, source.forked, source.at_round - 1)
    return _Side(view, RunFigures.of_view(view))


def _is_sequence(source: object) -> TypeGuard[Sequence[object]]:
    """A list or tuple, say, of what may be events (a string or bytes is none)."""
    return isinstance(source, Sequence) and not isinstance(source, (str, bytes, bytearray))


def _source_events(source: object, side: str) -> tuple[tuple[Event, ...], str]:
    """The events ``source`` holds and how to name it; anything else is refused."""
    if isinstance(source, ToolLoopResult):
        return source.events, f"result {side}"
    if isinstance(source, ForkResult):
        return source.events, f"the fork's result {side}"
    if isinstance(source, PartialRun):
        return tuple(getattr(source, "events", ())), f"error {side}"
    if isinstance(source, TraceRead):
        return source.events, repr(str(source.path))
    if isinstance(source, (str, os.PathLike)):
        read = read_trace(source)
        return read.events, repr(str(read.path))
    if _is_sequence(source):
        events = tuple(source)
        stray = next((i for i, e in enumerate(events) if not isinstance(e, _EVENT_CLASSES)), -1)
        if stray < 0:
            return cast(tuple[Event, ...], events), f"the events of {side}"
        got = (
            f"got a {type(source).__name__} whose item {stray} is a "
            f"{type(events[stray]).__name__}, not an event"
        )
    else:
        got = f"not {type(source).__name__}"
    raise ConfigurationError(f"compare needs a run for {side}: {_TAKES}; {got}", field=side)


def _run_events(source: object, run_id: str | None = None, *, side: str = "a") -> tuple[Event, ...]:
    """One run's events from ``source`` (see :data:`RunSource`), by the one rule
    (:func:`~toolloop_lab.events.select_run`): ``run_id``'s, else the newest top-level
    run. No events raise a ``ConfigurationError``; an unknown ``run_id`` an
    :class:`~toolloop_lab.errors.UnknownRunError`, one that is no string a
    ``ConfigurationError`` naming ``a_run_id`` or ``b_run_id``."""
    events, where = _source_events(source, side)
    if not events:
        raise ConfigurationError(f"{where} holds no events: there is no run to compare", field=side)
    return select_run(events, run_id, where=where, field=f"{side}_run_id")


def _call_side(tool: ToolRow, row: RoundRow) -> CallSide:
    """One call of ``row``; a call a person answered by hand reads ``skipped``, as in
    every other view, and what a person changed of it is said in words."""
    actions = [i.action for i in row.interventions if i.tool_call_id == tool.id]
    skipped = not tool.ran and tool.error_reason is None and "skip" in actions
    return CallSide(
        name=tool.name,
        args=thaw(tool.args),
        status=tool.status,
        error_reason="skipped" if skipped else tool.error_reason,
        ran=tool.ran,
        content=tool.content,
        changed=tuple(word(INTERVENTION, a) for a in dict.fromkeys(actions) if a != "skip"),
        data=_fingerprints(tool.blocks),
    )


def _fingerprints(blocks: Sequence[Any] | None) -> tuple[str, ...]:
    """A short hash of each data block (an image, a file) of a result: its words say its
    kind and size, not its bytes."""
    return tuple(
        hashlib.sha256(dumps(b).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        for b in blocks or ()
        if is_data_block(b)
    )


def _round_side(row: RoundRow) -> RoundSide:
    return RoundSide(
        number=row.number,
        purpose=row.purpose,
        text=row.text,
        calls=tuple(_call_side(t, row) for t in row.tools),
        usage=row.usage + row.pruning_usage,
        errors=tuple(f"{f.error_type}: {f.message}" for f in row.failed_calls),
    )


def _sides(view: RunView) -> Iterator[tuple[int | None, RoundSide]]:
    """Each round of a fold keyed by its number; the synthesis call keyed ``None``."""
    for row in view.rounds:
        if row.number > 0:
            yield (None if row.purpose == "synthesis" else row.number), _round_side(row)


def _numbered(view: RunView, offset: int, start: int) -> dict[int | None, RoundSide]:
    """The rounds of ``view`` numbered ``offset`` on, but those up to ``start``."""
    out: dict[int | None, RoundSide] = {}
    for k, side in _sides(view):
        if k is None or k + offset > start:
            out[k if k is None else k + offset] = side
    return out


def _pairs(a: RunView, b: RunView, b_offset: int = 0, a_offset: int = 0) -> tuple[RoundPair, ...]:
    """The rounds of ``a`` and ``b`` paired by number, each run's ``offset`` later; the
    rounds before the later run's first (a fork took them as they were) are left out."""
    start = max(a_offset, b_offset)
    a_sides = _numbered(a, a_offset, start)
    b_sides = _numbered(b, b_offset, start)
    numbers = sorted(k for k in a_sides.keys() | b_sides.keys() if k is not None)
    keys: list[int | None] = [*numbers]
    if None in a_sides or None in b_sides:
        keys.append(None)
    return tuple(RoundPair(k, a_sides.get(k), b_sides.get(k)) for k in keys)


def _offset(b_offset: object) -> int:
    if type(b_offset) is not int or b_offset < 0:
        raise ConfigurationError(
            f"b_offset must be a whole number of rounds, 0 or more, not {b_offset!r}",
            field="b_offset",
        )
    return b_offset


def _b_offset(b: _Side, given: int) -> int:
    """b's offset: a fork's result's own, which a ``b_offset`` given may only repeat."""
    if b.fork_offset is None:
        return given
    if given not in (0, b.fork_offset):
        raise ConfigurationError(
            f"b is a fork's result: its rounds line up with its original's by themselves "
            f"(from round {b.fork_offset + 1}); leave b_offset out, not {given}",
            field="b_offset",
        )
    return b.fork_offset


def _name(view: RunView) -> str | None:
    return view.started.name if view.started is not None else None


def compare(
    a: RunSource,
    b: RunSource,
    *,
    a_run_id: str | None = None,
    b_run_id: str | None = None,
    b_offset: int = 0,
) -> RunComparison:
    """Runs ``a`` and ``b`` side by side, round by round (see the module's docs).

    Each is a :class:`~toolloop_lab._engine.result.ToolLoopResult`, a sequence of events,
    a trace (path or :class:`~toolloop_lab._trace.TraceRead`), the error a failed run
    raised, or what :func:`~toolloop_lab._replay.fork.fork` returned; of several runs,
    ``a_run_id`` / ``b_run_id`` (strings) pick one (by default the newest top-level run).

    A fork's own run starts at the original's round ``at_round`` yet numbers its rounds
    from 1. Given as its :class:`~toolloop_lab._replay.fork.ForkResult`
    (``compare(original, forked)``, either side), its rounds are numbered as its
    original's, the rounds it took as they were are left out, and its figures are the
    whole fork's (the rounds taken included, as ``forked.summary`` says them). Given as
    its events, ``b_offset`` does it: b's round ``n`` is paired with a's round
    ``n + b_offset``, so ``compare(original, forked.events, b_offset=forked.at_round - 1)``
    pairs the same rounds (each run's figures then its own).

    Raises :class:`~toolloop_lab.errors.ConfigurationError` for anything that is not a
    run or holds no events (naming what it takes), a run id that is no string, a negative
    ``b_offset`` or one at odds with a fork's result;
    :class:`~toolloop_lab.errors.UnknownRunError` for a run id it does not hold,
    :class:`~toolloop_lab.errors.TraceError` for a trace that cannot be read.
    """
    offset = _offset(b_offset)
    a_side = _read_side(a, a_run_id, "a")
    b_side = _read_side(b, b_run_id, "b")
    offset = _b_offset(b_side, offset)
    a_offset = a_side.fork_offset or 0
    a_view, b_view = a_side.view, b_side.view
    return RunComparison(
        a=a_side.figures,
        b=b_side.figures,
        a_run_id=a_view.run_id,
        b_run_id=b_view.run_id,
        rounds=_pairs(a_view, b_view, offset, a_offset),
        a_name=_name(a_view),
        b_name=_name(b_view),
        b_offset=offset,
        a_offset=a_offset,
    )
