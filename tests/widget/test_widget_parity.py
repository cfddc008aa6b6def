"""One run reads the same in Python and in the browser.

The widget's fold (``toolloop_lab/_widget/src/fold.js``, run under Node) and
:class:`~toolloop_lab._runview.RunView` fold the same runs: every scenario of the lab's
catalog, the hostile cases of ``jskit`` and the browser tests' streams. The JS side gets
exactly the wire payloads Python sends. Each side writes its summary explicitly (below,
and in ``tests/js/fold_summary.mjs``), and both must agree on the status, outcome, number
of rounds, tokens (and whether any is estimated), cost, every call's status (model calls
and tool calls alike), the words a person reads for the run's status and ending, and each
MCP server's calls and log.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from browser.streams import failed_run, hostile_run, long_run, sample_run, summarized_run
from jskit import ROOT, all_cases, need_node, payloads

from toolloop_lab import RunView
from toolloop_lab._runview import RoundRow
from toolloop_lab._spend.usage import format_usd
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, clip
from toolloop_lab._support.words import STATUS, shown_status, tool_outcome, word
from toolloop_lab._widget import figures
from toolloop_lab.events import Event

CASES = {
    **all_cases(),
    # the browser tests' streams: pauses, interventions, pruning, hostile text, a long run
    "stream_sample": sample_run(),
    "stream_hostile": hostile_run(),
    "stream_failed": failed_run(),
    "stream_long": long_run(40),
    # a create_agent run with LangChain's SummarizationMiddleware: a summarization call
    "stream_summarized": summarized_run(),
}


def _call_status(row: RoundRow) -> str:
    """A round's model call: replied, failed (raised or stopped), unanswered, or none."""
    if row.calling:
        return "unanswered"
    failed = row.failed_calls
    if failed and (row.call_started_t is None or failed[-1].t >= row.call_started_t):
        return "failed"
    return "replied" if row.call_started_t is not None or row.latency_s is not None else "none"


def _tool_status(status: str, ran: bool) -> str:
    """RunView keeps a call that never ran under its event's status (``ran`` says it did
    not); the browser calls it ``not_run``. A call not dispatched yet is ``queued`` there."""
    return "not_run" if not ran else {"pending": "queued"}.get(status, status)


def _wire(text: str | None, limit: int) -> str | None:
    """A name, id or reason as the browser gets it: the wire cuts them (``wire.clip``)."""
    return None if text is None else clip(text, limit)


def python_summary(view: RunView) -> dict[str, Any]:
    """What RunView makes of a run, in the shape fold_summary.mjs writes."""
    end = view.finished or view.failure
    cost = view.usage.cost_usd
    return {
        "status": view.status,
        "outcome": end.outcome if end else None,
        # what a person reads: the status pill's word and how the run ended (a USD stop
        # says how many calls were paid for and what never ran)
        "said": [
            word(STATUS, shown_status(view.status, end.outcome if end else None)),
            figures.outcome(view),
        ],
        "rounds": len(view.rounds),
        "rounds_run": view.rounds_run,
        # names that say what they count, and how the header says them
        "tool_rounds": view.tool_rounds,
        "model_calls": view.model_calls,
        "rounds_said": figures.rounds_said(view) or "",
        "question": view.question,
        "input_tokens": view.usage.input_tokens,
        "output_tokens": view.usage.output_tokens,
        "estimated": view.usage.estimated,
        "cost": None if cost is None else float(cost),
        "cost_text": format_usd(cost),
        "per_round": [
            {
                "round": row.number,
                "purpose": row.purpose,
                "model_call": _call_status(row),
                "failed_calls": [_wire(f.error_type, NAME_CHARS) for f in row.failed_calls],
                "input_tokens": row.usage.input_tokens,
                "output_tokens": row.usage.output_tokens,
                # calls of the round that are not its own call (LangChain's summarization)
                "summarizations": [
                    [s.call, s.usage.input_tokens, s.usage.output_tokens]
                    for s in row.summarizations
                ],
                "round_cost": None if row.cost_usd is None else round(float(row.cost_usd), 10),
                "tools": [
                    [
                        _wire(t.id, ID_CHARS),
                        _wire(t.name, NAME_CHARS),
                        _tool_status(t.status, t.ran),
                        t.ran,
                        _wire(t.error_reason, NAME_CHARS),
                        _wire(t.error_type, NAME_CHARS),
                        tool_outcome(
                            _tool_status(t.status, t.ran),
                            _wire(t.error_reason, NAME_CHARS),
                            ran=t.ran,
                            error_type=_wire(t.error_type, NAME_CHARS),
                        ),
                        # an MCP tool's server, and what it logged while the call ran
                        _wire(t.server, NAME_CHARS),
                        [n for n, _ in t.server_log],
                        t.server_log_dropped,
                    ]
                    for t in row.tools
                ],
            }
            for row in view.rounds
        ],
        # each MCP server: how it was reached, its calls, and its log line by line
        "servers": [
            [
                _wire(v.name, NAME_CHARS),
                v.transport,
                v.calls,
                v.failed,
                v.last_line,
                [[n, text] for n, text in v.log],
            ]
            for v in view.servers.values()
        ],
    }


@pytest.fixture(scope="module")
def browser() -> dict[str, Any]:
    """Every case folded by the browser's fold, summarised (one node process)."""
    node = need_node()
    sent = json.dumps({name: payloads(events) for name, events in CASES.items()})
    done = subprocess.run(
        [node, str(ROOT / "tests" / "js" / "fold_summary.mjs")],
        input=sent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_cases_cover_every_ending() -> None:
    ends = {python_summary(RunView.from_events(e))["status"] for e in CASES.values()}
    assert ends == {"finished", "failed", "cancelled"}
    assert len(CASES) >= 15


@pytest.mark.parametrize("name", sorted(CASES))
def test_python_and_the_browser_fold_a_run_alike(name: str, browser: dict[str, Any]) -> None:
    events: list[Event] = CASES[name]
    mine = python_summary(RunView.from_events(events))
    theirs = browser[name]
    if mine["cost"] is not None and theirs["cost"] is not None:
        assert theirs["cost"] == pytest.approx(mine["cost"], rel=1e-9, abs=1e-15)
        theirs["cost"] = mine["cost"]
    assert theirs == mine
