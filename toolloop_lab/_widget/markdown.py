"""A run as Markdown: its figures and its whole transcript, to paste into an issue or a model.

:func:`to_markdown` (the package root's) calls :func:`run_markdown`. The figures are the
debugger's (:mod:`.figures`, the words file): the same status, outcome, rounds, tokens and cost
as every other view. Every text that came from a model, a tool, a person or an exception
sits in a fenced code block whose fence is longer than any run of backticks inside it, so
nothing it holds is read as Markdown or HTML where it is pasted (no link, no image, no tag);
control characters are shown as codes (:func:`~toolloop_lab._support.escape.plain`), and each
text is cut at ``max_chars`` with the ``… (N chars)`` marker every view uses.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from toolloop_lab._runview import RoundRow, RunView, ToolRow
from toolloop_lab._support.escape import plain
from toolloop_lab._support.words import ROUND_KIND, STATUS, estimated, shown_status, word
from toolloop_lab._widget import figures as fig
from toolloop_lab._widget.text import _tool_status
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Event

MARKDOWN_CHARS: Final = 4_000
"""Characters of one message, reply or tool result kept by default."""

_ROLE: Final = {"human": "User", "ai": "Assistant", "system": "System", "tool": "Tool"}
_TICKS: Final = re.compile("`+")
_SHOWN_BEFORE: Final = frozenset({"ai", "AIMessageChunk", "tool"})


def fenced(text: str) -> str:
    """``text`` in a fenced code block no backtick run inside can close."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _inline(text: str, limit: int) -> str:
    """A short untrusted label (a tool's name) as inline code on one line."""
    one = plain(text, limit).replace("\n", " ")
    longest = max((len(m) for m in _TICKS.findall(one)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if one.startswith("`") or one.endswith("`") else ""
    return f"{ticks}{pad}{one}{pad}{ticks}"


def _content(content: Any) -> str:
    """A message's content as text: a string, or its blocks' text (other blocks as JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            else:
                parts.append(json.dumps(block, default=str, ensure_ascii=False))
        return "\n".join(parts)
    return "" if content is None else json.dumps(content, default=str, ensure_ascii=False)


def _message(message: Any, limit: int) -> list[str]:
    """One message the model was sent (a langchain-core message dict)."""
    if not isinstance(message, dict):
        return []
    kind = str(message.get("type", "?"))
    raw = message.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else {}
    role = _ROLE.get(kind, kind)
    text = _content(data.get("content"))
    head = f"**{plain(role, 40)}**"
    if kind == "tool":
        head += f" (answer to {_inline(str(data.get('name') or 'a tool'), 80)})"
    out = [head, "", fenced(plain(text, limit)) if text else "_(no text)_", ""]
    return out


def _tool(tool: ToolRow, done: bool, limit: int) -> list[str]:
    args = json.dumps(tool.args, default=str, ensure_ascii=False)
    said = _tool_status(tool, done)
    took = f", {fig.seconds(tool.duration_s)}" if tool.duration_s is not None else ""
    out = [f"- tool call {_inline(tool.name, 80)}: {said}{took}", ""]
    out += ["  arguments:", "", _indent(fenced(plain(args, limit))), ""]
    if tool.ran and tool.status not in ("pending", "running"):
        out += ["  result:", "", _indent(fenced(plain(tool.content, limit))), ""]
    return out


def _indent(block: str) -> str:
    return "\n".join(f"  {line}" for line in block.split("\n"))


def _round(row: RoundRow, view: RunView, offset: int, limit: int) -> list[str]:
    if row.purpose == "synthesis":
        label = word(ROUND_KIND, "synthesis").capitalize()
    else:
        label = f"Round {row.number + offset:,}"
    usage = row.usage
    figures = [
        f"{fig.tokens(usage.input_tokens)} tokens in",
        f"{fig.tokens(usage.output_tokens)} out",
        fig.usd(row.cost_usd),
        f"model call {fig.seconds(row.latency_s)}",
    ]
    out = [f"### {label}", "", " · ".join(figures), ""]
    first = row is view.rounds[0]
    for message in row.sent:
        if not first and isinstance(message, dict) and message.get("type") in _SHOWN_BEFORE:
            continue  # the previous round's reply and tool results, shown under it
        out += _message(message, limit)
    reply = row.text or row.streamed_text
    out += ["**Assistant**", "", fenced(plain(reply, limit)) if reply else "_(no text)_", ""]
    for tool in row.tools:
        out += _tool(tool, view.done, limit)
    if row.interventions:
        out += ["_changed by you in this round_", ""]
    return out


def run_markdown(view: RunView, *, max_chars: int = MARKDOWN_CHARS, round_offset: int = 0) -> str:
    """The run ``view`` folded, as Markdown (see the module's docs)."""
    end = view.failure or view.finished
    status = word(STATUS, shown_status(view.status, end.outcome if end else None))
    start = view.started
    name = start.name if start is not None and start.name else "agent run"
    lines = [f"## Run {_inline(name, 200)}: {status.capitalize()}", ""]
    facts: list[str] = []
    if start is not None and start.model_name:
        facts.append(f"model: {_inline(start.model_name, 200)}")
    rounds = fig.rounds_said(view, round_offset)
    if rounds is not None:
        facts.append(f"rounds: {rounds}")
    usage = view.usage
    spend = (
        f"tokens: {fig.tokens(usage.input_tokens)} input "
        f"({fig.tokens(usage.cache_read_tokens)} from cache), "
        f"{fig.tokens(usage.output_tokens)} output · cost {fig.usd(usage.cost_usd)}"
    )
    said = estimated(usage.estimated)
    facts.append(spend + (f" ({said})" if said else ""))
    facts.append(f"took: {fig.seconds(view.active_s)}")
    if view.tool_errors:
        facts.append(f"tool calls that failed: {view.tool_errors:,}")
    outcome = fig.outcome(view, round_offset)
    if outcome is not None:
        facts.append(f"outcome: {outcome}")
    if view.run_id is not None:
        facts.append(f"run id: {_inline(view.run_id, 100)}")
    lines += [f"- {fact}" for fact in facts] + [""]
    for row in view.rounds:
        lines += _round(row, view, round_offset, max_chars)
    last = view.rounds[-1].text if view.rounds else None
    if view.final_text is not None and view.final_text != last:
        label = fig.final_label(view).capitalize()
        lines += [f"### {label}", "", fenced(plain(view.final_text, max_chars)), ""]
    if view.failure is not None:
        failure = view.failure
        what = f"{plain(failure.error_type, 200)}: {plain(failure.message, max_chars)}"
        lines += ["### Failure", "", fenced(what), ""]
    return "\n".join(_trimmed(lines)) + "\n"


def _trimmed(lines: Iterable[str]) -> list[str]:
    """No two blank lines in a row, none at the end."""
    out: list[str] = []
    for line in lines:
        if line == "" and (not out or out[-1] == ""):
            continue
        out.append(line)
    while out and out[-1] == "":
        out.pop()
    return out


def to_markdown(run: RunView | Iterable[Event], *, max_chars: int = MARKDOWN_CHARS) -> str:
    """A run as Markdown, to paste into an issue or a model: its status, rounds, tokens,
    cost and outcome as every view says them, then every round's messages, reply and tool
    calls with their results. Each text sits in a fenced code block (nothing in it renders
    as Markdown or HTML) and is cut at ``max_chars`` characters with the ``… (N chars)``
    marker. ``run`` is a :class:`~toolloop_lab.RunView` (``dbg.view``) or a run's events
    (``result.events``, a trace's events of one run)."""
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise ConfigurationError(
            f"to_markdown(max_chars={max_chars!r}): pass a whole number >= 1",
            field="max_chars",
        )
    view = run if isinstance(run, RunView) else RunView.from_events(run)
    return run_markdown(view, max_chars=max_chars)
