"""Two runs side by side in a debugger: ``dbg.compare(a, b)``, the page's request, and the
form the page draws.

:func:`toolloop_lab.compare` says, round by round, what each of two runs did.
:class:`Comparisons` is the debugger's side of it: it compares two runs (run ids of the
debugger's runs, or anything ``compare`` takes) and shows them; the page asks for two of
the debugger's runs with ``{"type": "compare", "a", "b"}`` (the run list, "Swap sides")
and closes the comparison with ``"action": "close"``: untrusted input, checked by
:func:`~.requests.parse_compare`, naming runs the debugger holds, never a file. A fork's
debugger shows one when the fork ends (:mod:`.forks`).

The page gets it through one synced trait, ``comparison``, saved with the notebook, so it
must be plain JSON, clipped and bounded (:func:`comparison_payload`):

``{"kind", "a", "b", "same", "rounds", "differing", "tokens_delta", "cost_delta_usd",
"from_round", "runs_held", "rows", "left_out"}``

* ``kind``: ``runs`` (any two runs) or ``fork`` (a fork against its original, from the
  fork's round on); ``a`` / ``b``: each run's ``label`` (``a``, ``original``, ...),
  ``run_id``, ``name``, ``outcome`` and ``reason`` (codes, read through ``words.json`` by
  the page), ``rounds``, ``calls``, tokens and ``cost_usd`` (a decimal string, ``None``
  when unpriced); ``from_round``: the first round compared (a fork's), else ``None``;
  ``runs_held``: both runs are the debugger's own, so the page may ask for them again
  (sides swapped).
* ``rows``, in order: a round that differs, ``{"round", "purpose", "same": false, "a",
  "b", "calls", "text_diff", "notes", "tokens_delta", "cost_delta_usd"}``, or consecutive
  rounds that did the same, ``{"same": true, "round", "last", "count", "tools",
  "tokens", "tokens_b"}`` (one line on the page, however long the run; what each run's
  rounds spent, which may differ). ``round`` is numbered as the person saw the run
  (``None``: the final-answer call).
* A side is ``None`` when that run has no such round, else ``{"text", "tokens",
  "cost_usd", "errors", "calls"}``, each call ``{"name", "args"`` (JSON text) ``, "result",
  "status", "ran", "said"}`` (``said``: how it ended, in the words every view uses).
* ``calls`` pairs the two sides' calls (by tool name, in order): ``{"mark", "a", "b",
  "parts", "args_diff", "result_diff"}``, ``mark`` one of ``same`` / ``changed`` /
  ``added`` / ``removed``, ``a`` / ``b`` the call's index on each side (``None`` on the
  side that lacks it), ``parts`` what changed (``tool``, ``arguments``, ``result``,
  ``status``). A call that became another tool's is ``changed`` (part ``tool``): a
  skipped ``read_log`` that became an ``open_ticket`` call reads as a change.
* A text diff is a list of ``[tag, a_part, b_part]`` (``difflib``'s opcodes with their
  text: ``equal``, ``replace``, ``delete``, ``insert``; :mod:`.textdiff`), by lines and
  then by words, so the page marks what was deleted and inserted without counting
  characters itself.

Every string from a run (texts, arguments, results, names, ids) is clipped with the one
marker (``… (N chars)``); rows stop at ``budget_bytes`` of JSON, and ``left_out`` counts
the rounds not sent (``compare(...).frame()`` has every one).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal

from toolloop_lab._replay.compare import (
    CallSide,
    RoundPair,
    RoundSide,
    RunComparison,
    RunSource,
    compare,
)
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, TEXT_CHARS, clip
from toolloop_lab._support.jsonsafe import dumps
from toolloop_lab._widget.requests import Answer, CloseComparison, parse_compare
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.textdiff import Effort, Ops, text_opcodes
from toolloop_lab.errors import ToolLoopLabError, UnknownRunError
from toolloop_lab.events import Event

Kind = Literal["runs", "fork"]

COMPARE_CHARS: Final = 4_000
"""Characters of one text (a reply, a call's arguments or result) a comparison shows, as
the run's own view previews 4,000 before "show all"; the frame keeps every text whole."""
SAME_TOOLS: Final = 12
"""Tool names a line of rounds that did the same lists (the rest are counted)."""


# -- one round -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Clips:
    """How much of each text is sent, and what the diffs may still cost."""

    chars: int
    effort: Effort

    def text(self, value: str) -> str:
        return clip(value, self.chars)

    def diff(self, a: str, b: str) -> Ops | None:
        """The diff of two texts as sent (clipped), ``None`` when they are the same."""
        return None if a == b else text_opcodes(self.text(a), self.text(b), self.effort)


def _usd(value: Decimal | None) -> str | None:
    """A decimal string (never an exponent: ``0E-7`` reads ``0.0000000``); ``None``:
    unpriced."""
    return None if value is None else format(value, "f")


def _args_text(call: CallSide) -> str:
    return dumps(call.args, sort_keys=False, ascii_only=False)


def _call(call: CallSide, clips: _Clips) -> dict[str, Any]:
    return {
        "name": clip(call.name, NAME_CHARS),
        "args": clips.text(_args_text(call)),
        "result": clips.text(call.content),
        "status": call.status,
        "ran": call.ran,
        "said": clip(call.status_text, TEXT_CHARS),
    }


def _side(side: RoundSide | None, clips: _Clips) -> dict[str, Any] | None:
    if side is None:
        return None
    return {
        "text": clips.text(side.text),
        "tokens": side.usage.total_tokens,
        "cost_usd": _usd(side.usage.cost_usd),
        "errors": [clip(e, TEXT_CHARS) for e in side.errors],
        "calls": [_call(c, clips) for c in side.calls],
    }


def _parts(a: CallSide, b: CallSide) -> list[str]:
    """What differs between two calls, in the order a person reads a call."""
    if a.name != b.name:  # another tool: its arguments and result are its own
        return ["tool"]
    parts = []
    if a.args != b.args:
        parts.append("arguments")
    if (a.content, a.data) != (b.content, b.data):  # an image's words hide its bytes
        parts.append("result")
    if (a.status, a.error_reason, a.ran) != (b.status, b.error_reason, b.ran):
        parts.append("status")
    return parts


def _pair(
    a: CallSide | None, b: CallSide | None, ia: int | None, ib: int | None, clips: _Clips
) -> dict[str, Any]:
    if a is None or b is None:
        mark = "added" if a is None else "removed"
        return {"mark": mark, "a": ia, "b": ib, "parts": [], "args_diff": None, "result_diff": None}
    parts = _parts(a, b)
    same_tool = "tool" not in parts
    return {
        "mark": "changed" if parts else "same",
        "a": ia,
        "b": ib,
        "parts": parts,
        "args_diff": clips.diff(_args_text(a), _args_text(b)) if same_tool else None,
        "result_diff": clips.diff(a.content, b.content) if same_tool else None,
    }


def _call_pairs(
    a: Sequence[CallSide], b: Sequence[CallSide], clips: _Clips
) -> list[dict[str, Any]]:
    """The calls of both sides paired by tool name, in order; where the names part ways,
    calls at the same place are one call changed, the rest added or removed."""
    matcher = difflib.SequenceMatcher(
        None, [c.name for c in a], [c.name for c in b], autojunk=False
    )
    out = []
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            ia = i1 + k if i1 + k < i2 else None
            ib = j1 + k if j1 + k < j2 else None
            ca = None if ia is None else a[ia]
            cb = None if ib is None else b[ib]
            out.append(_pair(ca, cb, ia, ib, clips))
    return out


def _notes(pair: RoundPair, text_diff: Ops | None, clips: _Clips) -> list[str]:
    """What the diffs cannot show: replies that differ past what is sent."""
    a, b = pair.a, pair.b
    if a is None or b is None or a.text == b.text or text_diff is None:
        return []
    if all(op[0] == "equal" for op in text_diff):
        return [f"the replies differ after their first {clips.chars:,} characters"]
    return []


def _round_row(pair: RoundPair, offset: int, clips: _Clips) -> dict[str, Any]:
    a, b = pair.a, pair.b
    text_diff = clips.diff(a.text, b.text) if a is not None and b is not None else None
    return {
        "round": None if pair.round is None else pair.round + offset,
        "purpose": pair.purpose,
        "same": False,
        "a": _side(a, clips),
        "b": _side(b, clips),
        "calls": _call_pairs(a.calls if a else (), b.calls if b else (), clips),
        "text_diff": text_diff,
        "notes": _notes(pair, text_diff, clips),
        "tokens_delta": pair.tokens_delta,
        "cost_delta_usd": _usd(pair.cost_delta),
    }


def _same_row(span: Sequence[RoundPair], offset: int) -> dict[str, Any]:
    names: dict[str, None] = {}
    for pair in span:
        for call in pair.a.calls if pair.a else ():
            names[clip(call.name, NAME_CHARS)] = None
    tools = list(names)
    first, last = span[0].round, span[-1].round
    return {
        "same": True,
        "round": None if first is None else first + offset,
        "last": None if last is None else last + offset,
        "count": len(span),
        "tools": tools[:SAME_TOOLS],
        "more_tools": max(0, len(tools) - SAME_TOOLS),
        "tokens": sum(p.a.usage.total_tokens for p in span if p.a is not None),
        "tokens_b": sum(p.b.usage.total_tokens for p in span if p.b is not None),
    }


# -- the whole comparison --------------------------------------------------------------------


def _spans(rounds: Sequence[RoundPair]) -> Iterator[tuple[RoundPair, ...]]:
    """Each round that differs on its own; consecutive rounds that did the same together."""
    run: list[RoundPair] = []
    for pair in rounds:
        if pair.same:
            run.append(pair)
            continue
        if run:
            yield tuple(run)
            run = []
        yield (pair,)
    if run:
        yield tuple(run)


def _head(label: str, run_id: str | None, name: str | None, figures: RunFigures) -> dict[str, Any]:
    return {
        "label": label,
        "run_id": None if run_id is None else clip(run_id, ID_CHARS),
        "name": None if name is None else clip(name, NAME_CHARS),
        "outcome": figures.outcome,
        "reason": figures.synthesis_reason,
        "detail": figures.detail,
        "rounds": figures.rounds,
        "calls": figures.calls,
        "input_tokens": figures.input_tokens,
        "output_tokens": figures.output_tokens,
        "cost_usd": _usd(figures.cost_usd),
    }


def _size(value: Any) -> int:
    """Bytes of ``value`` as JSON (ASCII, as the saved state measures it), and the
    ``", "`` that parts it from the next."""
    return len(json.dumps(value)) + 2


def comparison_payload(
    comparison: RunComparison,
    *,
    max_chars: int,
    budget_bytes: int,
    kind: Kind = "runs",
    labels: tuple[str, str] = ("a", "b"),
    offset: int = 0,
    from_round: int | None = None,
    runs_held: bool = False,
) -> dict[str, Any]:
    """``comparison`` as the page draws it (see the module's docs): texts cut to
    ``max_chars`` (at most :data:`COMPARE_CHARS`), rows while they fit ``budget_bytes``
    of JSON, round numbers plus ``offset`` (the numbers the person saw)."""
    head: dict[str, Any] = {
        "kind": kind,
        "a": _head(labels[0], comparison.a_run_id, comparison.a_name, comparison.a),
        "b": _head(labels[1], comparison.b_run_id, comparison.b_name, comparison.b),
        "same": comparison.same,
        "rounds": len(comparison.rounds),
        "differing": len(comparison.differing),
        "tokens_delta": comparison.token_delta,
        "cost_delta_usd": _usd(comparison.cost_delta),
        "from_round": from_round,
        "runs_held": runs_held,
        "left_out": 0,
    }
    rows, left_out = _rows(comparison, offset, max_chars, budget_bytes - _size(head) - 20)
    return {**head, "rows": rows, "left_out": left_out}


def _rows(
    comparison: RunComparison, offset: int, max_chars: int, budget_bytes: int
) -> tuple[list[dict[str, Any]], int]:
    """The rows that fit ``budget_bytes`` of JSON, and how many rounds did not."""
    clips = _Clips(min(max_chars, COMPARE_CHARS), Effort())
    rows: list[dict[str, Any]] = []
    spans = list(_spans(comparison.rounds))
    used = 0
    for i, span in enumerate(spans):
        row = _same_row(span, offset) if span[0].same else _round_row(span[0], offset, clips)
        used += _size(row)
        if used > budget_bytes:
            return rows, sum(len(s) for s in spans[i:])
        rows.append(row)
    return rows, 0


class Comparisons:
    """What a debugger compares, and how it answers the page; the debugger's ``compare``
    hands its work here. ``show`` sets the synced ``comparison`` trait the page draws
    (``{}``: none); strings are clipped at ``max_chars``, rows stop at ``budget_bytes``."""

    def __init__(
        self,
        run: ShownRun,
        show: Callable[[dict[str, Any]], None],
        *,
        max_chars: int,
        budget_bytes: int,
    ) -> None:
        self._run = run
        self._show = show
        self._max_chars = max_chars
        self._budget_bytes = budget_bytes

    def compare(
        self,
        a: RunSource,
        b: RunSource,
        *,
        a_run_id: str | None = None,
        b_run_id: str | None = None,
    ) -> RunComparison:
        """Compare ``a`` and ``b`` and show them (see :meth:`LoopDebugger.compare`)."""
        sources = [self._source(side) for side in (a, b)]
        result = compare(sources[0], sources[1], a_run_id=a_run_id, b_run_id=b_run_id)
        self._show_comparison(result)
        return result

    def _source(self, value: RunSource) -> RunSource:
        """A run id of this debugger's runs (a ``str``) is that run's events; a ``str``
        naming no run but a file is a trace's path; anything else is for
        :func:`~toolloop_lab.compare` to read (or refuse)."""
        if not isinstance(value, str):
            return value
        events = self._run_events(value)
        if events:
            return events
        if os.path.isfile(value):
            return value
        with self._run.lock:
            ids = [s.run_id for s in self._run.session.summaries()]
        raise UnknownRunError(value, ids, where="this debugger's runs")

    def _run_events(self, run_id: str) -> tuple[Event, ...]:
        with self._run.lock:
            return tuple(self._run.session.events(run_id))

    def _show_comparison(self, result: RunComparison) -> None:
        ids = (result.a_run_id, result.b_run_id)
        held = all(i is not None and self._run_events(i) for i in ids)
        self._show(
            comparison_payload(
                result,
                max_chars=self._max_chars,
                budget_bytes=self._budget_bytes,
                runs_held=held,
            )
        )

    def request(self, content: dict[Any, Any]) -> Answer:
        """The page's ``compare`` request, checked and carried out: the runs it names must
        be this debugger's; never a file."""
        request = parse_compare(content)
        if isinstance(request, Answer):
            return request
        if isinstance(request, CloseComparison):
            self._show({})
            return Answer(request.request, "close", True)
        sides = [self._run_events(run_id) for run_id in (request.a, request.b)]
        for run_id, side in zip((request.a, request.b), sides, strict=True):
            if not side:
                said = f"no run {run_id!r} among this debugger's runs"
                return Answer(request.request, "compare", False, "unknown_run", said)
        try:
            self._show_comparison(compare(sides[0], sides[1]))
        except ToolLoopLabError as exc:  # a run with no events, say
            reason = getattr(exc, "field", None) or type(exc).__name__
            return Answer(request.request, "compare", False, str(reason), describe(exc))
        return Answer(request.request, "compare", True, message="the comparison is shown")
