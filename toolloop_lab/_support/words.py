"""The words a person reads for the codes of the event vocabulary, from ``words.json``.

One file holds them (outcomes, synthesis reasons, why a call never ran or failed, a call
cut short, interventions, gates), so the text view, the snapshot, the report and the
browser's bundle (which imports the same file) cannot say one run two ways. A code without
words (a newer version's, an edited trace's) reads as itself, for the caller to clip and
escape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib.resources import files
from types import MappingProxyType
from typing import Final


def _load() -> Mapping[str, Mapping[str, str]]:
    """Every table of the file, read-only; ``_about`` is the file's own note."""
    text = files("toolloop_lab").joinpath("words.json").read_text(encoding="utf-8")
    raw = json.loads(text)
    return MappingProxyType(
        {name: MappingProxyType(dict(table)) for name, table in raw.items() if name != "_about"}
    )


TABLES: Final = _load()
"""Every table by name, as the file holds them."""
STATUS: Final = TABLES["status"]
OUTCOME: Final = TABLES["outcome"]
SYNTHESIS_REASON: Final = TABLES["synthesis_reason"]
NOT_RUN: Final = TABLES["not_run"]
"""Why a call the loop answered without running it never ran, by its error reason."""
FAILED: Final = TABLES["failed"]
"""Why a call that was dispatched is an error, by its error reason."""
TOOL_OUTCOME: Final = TABLES["tool_outcome"]
"""How one tool call ended, in a few words (a chip's tooltip, a text view's line): the
words of its status, and the parts :func:`tool_outcome` puts together."""
CUT_SHORT: Final = TABLES["cut_short"]
"""A call whose tool had begun when the run stopped, by its reason: it ran, for as long
as it did."""
INTERVENTION: Final = TABLES["intervention"]
INTERVENTION_SUMMARY: Final = TABLES["intervention_summary"]
GATE: Final = TABLES["gate"]
GATE_NAME: Final = TABLES["gate_name"]
GATE_STATE: Final = TABLES["gate_state"]
ROUND_KIND: Final = TABLES["round_kind"]
"""What a round that is not numbered is called (the final-answer call)."""
CALL_CHANGE: Final = TABLES["call_change"]
"""How a tool call of one run reads next to the other run's, in a comparison of two runs."""
CALL_CHANGE_PART: Final = TABLES["call_change_part"]
"""What of a changed call changed (its tool, its arguments, its result, how it ended)."""
REACH: Final = TABLES["reach"]
"""Why a debugger's controls cannot act on the run it shows, by code (a tooltip)."""
REACH_HINT: Final = TABLES["reach_hint"]
"""The same, short (the hint next to the controls)."""
GATE_TRIPPED: Final = TABLES["gate_tripped"]
"""A gate that tripped, by gate, as the round where it tripped is marked: a budget doing
its job, never an error of the round."""
COUNTS: Final = TABLES["counts"]
"""How a run's rounds and calls read in a header: the round under way of the cap while it
runs; once it ended, its tool rounds and its model calls, names that say what they count;
and how a round's tool calls a view leaves out are counted (``more_tool_calls``)."""
USAGE: Final = TABLES["usage"]
"""What a run's token counts are, beside its totals: ``estimated`` when some call's were
(a provider that reported none, a span without usage), on the one condition every view
uses (the run's total ``Usage.estimated``); ``estimated_hint`` says why, where a tooltip
can."""
CONTENT_BLOCK: Final = TABLES["content_block"]
"""How a content block that is no text reads (an image a tool returned, say): templates
filled in with its kind and details (MIME type, size, where it is)."""
MCP: Final = TABLES["mcp"]
"""How an MCP server reads: its transport's name, its calls and its log, and what a view
that draws no images says of a result it cannot draw."""
BUDGET_STOP: Final = TABLES["budget_stop"]
"""How a run the USD limit stopped reads: templates whose ``{names}`` both sides fill in
from the events (how many calls were paid for, what of the last round never happened)."""

TIME_LIMIT: Final = TABLES["time_limit"]
"""Why a run ended at a time limit, by the limit's kind (a model call's, a scenario's):
templates filled with ``{limit}``, the message of its ``TimeLimitError`` and events."""


def time_limit_text(kind: str, limit_s: float) -> str:
    """The message of a time limit of ``kind`` that ran out after ``limit_s`` seconds."""
    return word(TIME_LIMIT, kind).replace("{limit}", f"{limit_s:g} s")


def word(table: Mapping[str, str], code: str) -> str:
    """``code`` in words from ``table``, or ``code`` itself when it has none."""
    return table.get(code, code)


def reason_words(code: str | None) -> str | None:
    """A tool call's error reason in words (never run, failed, then cut short)."""
    if code is None:
        return None
    return NOT_RUN.get(code) or FAILED.get(code) or CUT_SHORT.get(code) or code


def tool_outcome(
    status: str,
    error_reason: str | None,
    *,
    ran: bool = True,
    error_type: str | None = None,
) -> str:
    """What happened to one tool call, as a person says it: ``ok``, ``raised ValueError``,
    ``unknown tool``, ``bad arguments``, ``timed out``, ``stopped while running``,
    ``not run (token budget)``, ``answered by you``. The browser's ``toolOutcome``
    (``_widget/src/words.js``) says the same from the same table."""
    if status == "cancelled" and ran:
        return CUT_SHORT.get(error_reason or "", CUT_SHORT["cancelled"])
    if not ran or status == "not_run":
        if error_reason == "skipped":
            return TOOL_OUTCOME["answered_by_you"]
        why = reason_words(error_reason)
        return f"{TOOL_OUTCOME['not_run']} ({why})" if why else TOOL_OUTCOME["not_run"]
    if status == "error":
        if error_type and error_reason in (None, "tool_error"):
            return f"{TOOL_OUTCOME['raised']} {error_type}"
        return reason_words(error_reason) or TOOL_OUTCOME["error"]
    return word(TOOL_OUTCOME, "queued" if status == "pending" else status)


def estimated(flag: bool) -> str | None:
    """The words for estimated counts (the file's ``usage.estimated``), said beside a run's
    totals when ``flag``: its total usage's ``Usage.estimated`` (some call's provider or
    span reported no counts; the lab's ``usage_estimated`` column); ``None`` when every
    count is a provider's. The text view,
    the snapshot, the lab's tables and report say it from here, and the browser's header
    on the same condition from the same table (``header.js``)."""
    return USAGE["estimated"] if flag else None


def outcome_text(outcome: str, synthesis_reason: str | None = None) -> str:
    """How a run ended, with why a final-answer call ran when one did:
    the outcome's words, then the reason's in parentheses."""
    said = word(OUTCOME, outcome)
    if outcome == "synthesis" and synthesis_reason:
        return f"{said} ({word(SYNTHESIS_REASON, synthesis_reason)})"
    return said


def shown_status(status: str, outcome: str | None) -> str:
    """The code of the status table a run's status reads as: a run the USD limit stopped
    has its own (the limit did its job; the run did not fail), every other its status.
    The browser's ``statusCode`` (``_widget/src/words.js``) says the same."""
    if status == "failed" and outcome == "usd_budget_exhausted":
        return outcome
    return status
