"""How numbers read in the debugger: one formatter per kind of figure (money and token
counts are the package's own, :mod:`toolloop_lab._spend.usage`); the words for why a tool
call is an error or never ran come from :mod:`toolloop_lab._support.words` (a reason code is
never shown as it is).

The static snapshot and the text repr share these, so a figure never reads two ways. They
return plain text made of digits and our own words only, never untrusted content; but
:func:`server_said` and :func:`undrawn`, which name a server and a result's parts: their
callers escape what they return.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Final

from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._support.words import (
    BUDGET_STOP,
    COUNTS,
    CUT_SHORT,
    GATE_STATE,
    MCP,
    ROUND_KIND,
    outcome_text,
    word,
)
from toolloop_lab._tools.content import block_text, is_data_block

if TYPE_CHECKING:
    from toolloop_lab._runview import RoundRow, RunView, ServerView, ToolRow

usd: Final = format_usd
"""``$0.0000117``, ``$0.00722``, ``$12.35``: the one formatter of money (see
:func:`toolloop_lab._spend.usage.format_usd`)."""
tokens: Final = format_tokens
"""``12,345``; ``—`` when unknown."""


TOOLS_SHOWN: Final = 8
"""Tool calls of one round a text view lists; the rest are counted (:func:`tools_shown`)."""


def tools_shown(tools: Sequence[ToolRow]) -> tuple[Sequence[ToolRow], str | None]:
    """The first :data:`TOOLS_SHOWN` of a round's tool calls, and ``… and 9,990 more tool
    calls (3 failed)`` for the rest (``None`` when none is left out): a round of thousands
    of calls stays a line, and a failure among those left out is still said."""
    shown, left = tools[:TOOLS_SHOWN], tools[TOOLS_SHOWN:]
    if not left:
        return shown, None
    said = COUNTS["more_tool_call" if len(left) == 1 else "more_tool_calls"].format(
        n=f"{len(left):,}"
    )
    failed = sum(1 for t in left if t.status == "error")
    if failed:
        said += " " + COUNTS["more_failed"].format(n=f"{failed:,}")
    return shown, said


def seconds(value: float | None) -> str:
    """``850 ms`` below a second, ``2.31 s`` above; ``—`` when unknown."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s"


def cut_short(reason: str | None, duration_s: float | None) -> str:
    """``stopped while running after 1.50 s``: a call whose tool the run's end cut short."""
    how = CUT_SHORT.get(reason or "", CUT_SHORT["cancelled"])
    return f"{how} after {seconds(duration_s)}"


def held(duration_s: float | None, paused_s: float | None) -> str | None:
    """``took 552 ms (+6.45 s paused)``: a round's own time and, beside it, the time pauses
    held it; ``None`` when no pause held it (``paused_s`` is ``None``). Any pause says so,
    however short: whether a round was held never depends on a clock."""
    if paused_s is None:
        return None
    return f"took {seconds(duration_s)} (+{seconds(paused_s)} paused)"


def pct(fraction: float | None) -> str:
    """``42.0%`` of a 0..1 share; ``—`` when unknown."""
    if fraction is None:
        return "—"
    return f"{fraction * 100:.1f}%"


def share(spent: Decimal | int, limit: Decimal | int | None) -> float | None:
    """``spent / limit`` as a float, or ``None`` without a (positive) limit."""
    if limit is None or limit <= 0:
        return None
    return float(Decimal(spent) / Decimal(limit))


def gate_label(state: str) -> str:
    """The word a gate state reads as: ``off``, ``passed`` or ``TRIPPED``."""
    return word(GATE_STATE, state)


def final_label(view: RunView) -> str:
    """What the run's final text is: its answer, or what an ``interrupt()`` asked."""
    interrupted = view.finished is not None and view.finished.outcome == "interrupted"
    return "interrupt() asked" if interrupted else "final answer"


def outcome(view: RunView, offset: int = 0) -> str | None:
    """How the run ended, in the words every view uses (a USD stop says what it cost and
    what never happened, :func:`budget_stop`); ``None`` until it has."""
    if view.failure is not None:
        return budget_stop(view, offset) or outcome_text(view.failure.outcome)
    if view.finished is not None:
        return outcome_text(view.finished.outcome, view.finished.synthesis_reason)
    return None


def rounds_said(view: RunView, offset: int = 0) -> str | None:
    """A header's rounds (``header.js`` says the same): ``round 2 of 10`` while the run goes
    on; once it ended, what it did, ``3 tool rounds, 4 model calls (at most 10 rounds)``, where
    the answering call is a model call and no tool round. ``offset`` (a fork's rounds taken
    from its source, one call each) is added; ``None`` without the run's start."""
    cap = view.max_rounds
    if cap is None:
        return None
    if not view.done:
        return COUNTS["round_of"].format(n=f"{view.rounds_run + offset:,}", max=f"{cap + offset:,}")
    tools, calls = view.tool_rounds + offset, view.model_calls + offset
    said = ", ".join(
        (
            COUNTS["tool_round" if tools == 1 else "tool_rounds"].format(n=f"{tools:,}"),
            COUNTS["model_call" if calls == 1 else "model_calls"].format(n=f"{calls:,}"),
        )
    )
    return f"{said} ({COUNTS['cap'].format(max=f'{cap + offset:,}')})"


def budget_stop(view: RunView, offset: int = 0) -> str | None:
    """``Stopped by the USD limit after 4 paid calls; round 4's 2 tool calls did not run``:
    a run the USD limit stopped, from its events (the closing usage's request count, the
    gate that tripped, the calls answered unrun); ``None`` for any other run. ``offset`` is
    added to the round number (a fork's rounds read as the original's). The browser's
    ``budgetStop`` (``widget/src/budget.js``) says the same from the same table."""
    failure = view.failure
    if failure is None or failure.outcome != "usd_budget_exhausted":
        return None
    said = outcome_text(failure.outcome)
    paid = failure.usage.requests
    if paid:
        calls = BUDGET_STOP["call" if paid == 1 else "calls"].format(n=f"{paid:,}")
        said += " " + BUDGET_STOP["after"].format(calls=calls)
    tripped = next(
        (
            (row, gate)
            for row in reversed(view.rounds)
            for gate in reversed(row.gates)
            if gate.gate == "usd" and not gate.passed
        ),
        None,
    )
    missed = None if tripped is None else _not_done(tripped[0], tripped[1].stage, offset)
    return f"{said}; {missed}" if missed else said


def _not_done(row: RoundRow, stage: str, offset: int) -> str | None:
    """What of the round where the USD gate tripped never happened, in words."""
    where = (
        f"the {word(ROUND_KIND, 'synthesis')}"
        if row.purpose == "synthesis"
        else f"round {row.number + offset:,}"
    )
    if stage == "before_call":
        return BUDGET_STOP["not_sent"].format(round=where)
    unrun = sum(1 for t in row.tools if not t.ran and t.error_reason == "budget_exhausted")
    if unrun:
        key = "tool_not_run" if unrun == 1 else "tools_not_run"
        return BUDGET_STOP[key].format(round=where, n=f"{unrun:,}")
    if not row.tools and row.usage.requests:
        return BUDGET_STOP["reply_unused"].format(round=where)
    return None


def overshoot(spent: Decimal | int | None, limit: Decimal | int | None) -> str | None:
    """``over the limit by 26.0%: the budget is checked after each call, so the last call
    can overshoot it``: why a figure reads over 100 % of its limit; ``None`` when it does
    not. The browser's ``overshoot`` (``widget/src/budget.js``) says the same."""
    fraction = None if spent is None else share(spent, limit)
    if fraction is None or fraction <= 1:
        return None
    return f"over the limit by {pct(fraction - 1)}: {BUDGET_STOP['overshoot']}"


def server_said(server: ServerView) -> str:
    """An MCP server in a line: ``MCP server inventory (stdio) · 4 calls, 1 failed · 12
    lines logged`` (its name as it is: the caller escapes it)."""
    transport = word(MCP, server.transport) if server.transport else "?"
    calls = MCP["call"] if server.calls == 1 else MCP["calls"].format(n=f"{server.calls:,}")
    if server.failed:
        calls += ", " + MCP["failed"].format(n=f"{server.failed:,}")
    kept, total = len(server.lines), server.last_line
    if total == 0:
        logged = MCP["log_none"]
    elif kept < total:
        logged = MCP["log_kept"].format(n=f"{total:,}", kept=f"{kept:,}")
    else:
        logged = MCP["log_lines"].format(n=f"{total:,}")
    head = MCP["server"].format(name=server.name, transport=transport)
    return f"{head} · {calls} · {logged}"


def undrawn(tool: ToolRow) -> str | None:
    """What of a tool's result a view without images leaves out, in words (``not drawn
    here: [image: image/png, 12 KB], structured content``); ``None`` when nothing."""
    parts = [block_text(b) for b in tool.blocks or () if is_data_block(b)]
    if tool.structured is not None:
        parts.append(MCP["structured"])
    return MCP["undrawn"].format(what=", ".join(parts)) if parts else None
