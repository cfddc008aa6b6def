"""Fold an event stream into the state a person looks at: header, gauges, round rows.

The live widget, a replayed trace, the HTML report and the lab's per-round frame all read
this one fold, so they can never disagree. ``RunView.apply`` takes one event at a time
(live) and ``RunView.from_events`` takes a whole stream (replay); both end in the same
state. No UI, pandas or matplotlib here.

Where a debugger holds the loop right now (step mode) is not an event: a debugger marks it
with :meth:`RunView.pause` and :meth:`RunView.resume`, and the end state of a run never
depends on it. How long a pause held the loop is (a ``pause`` event): it is a round's
``paused_s``, its own segment, never part of the round's ``duration_s``.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from itertools import islice
from typing import Any, Final, Literal, NamedTuple, TypeVar

from toolloop_lab import events as ev
from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.derived import Derived
from toolloop_lab._support.escape import clip
from toolloop_lab._support.words import shown_status

T = TypeVar("T")

RunStatus = Literal["idle", "running", "paused", "finished", "failed", "cancelled"]
GateState = Literal["off", "passed", "tripped"]


@dataclass(slots=True)
class ToolRow:
    """One tool call of a round, with its outcome and pruning (if any)."""

    id: str
    name: str
    args: dict[str, object]
    status: str = "pending"
    """``pending``, ``running`` (its ``tool_start`` came), then ``success`` or ``error``,
    or ``cancelled``: the run was stopped (or ended) while it ran, so it did run, for
    ``duration_s`` so far."""
    error_reason: str | None = None
    duration_s: float | None = None
    output_chars: int = 0
    content: str = ""
    """Its result as text (content blocks in words, see ``blocks``)."""
    blocks: tuple[Any, ...] | None = None
    """Its result's content blocks as the model was sent them, when it was blocks."""
    pruning: ev.Pruned | None = None
    started_t: float | None = None
    """Run time its tool began (``tool_start``), for a live timer."""
    ran: bool = True
    """False for a call answered without running it (no duration, no size of its own)."""
    error_type: str | None = None
    """The class name of the exception its tool raised (a ``tool_error`` that was one)."""
    server: str | None = None
    """The MCP server its tool came from (``None``: not an MCP tool)."""
    server_log: list[LogLine] = field(default_factory=list)
    """What that server logged while the call ran (numbered as in its log)."""
    server_log_dropped: int = 0
    """Lines of that span the bound left out (before the first kept)."""
    structured: Mapping[str, Any] | None = None
    """Its MCP result's structured content (a JSON object), when the server sent one."""


class LogLine(NamedTuple):
    """One line of an MCP server's log: its number there (from 1) and its text."""

    n: int
    text: str


SERVER_LOG_LINES: Final = 500
"""Lines of each server's log a view keeps (the newest); the browser's fold keeps as many."""


@dataclass(slots=True)
class ServerView:
    """One MCP server of a run: how it was reached, its calls, and its log as the run's
    ``server_log`` events tell it (each line once, by number; the newest
    :data:`SERVER_LOG_LINES` kept)."""

    name: str
    transport: str | None = None
    session_id: str | None = None
    calls: int = 0
    """Calls of its tools answered (run or not)."""
    failed: int = 0
    """... of which ended in an error."""
    lines: dict[int, str] = field(default_factory=dict)
    """Its log's lines by number, in order."""
    last_line: int = 0
    """The number of the newest line seen: how long its log was, as far as the run knows."""

    @property
    def log(self) -> list[LogLine]:
        """The kept lines, in order."""
        return [LogLine(n, text) for n, text in self.lines.items()]

    def take(self, first: int, lines: Sequence[str]) -> None:
        """Lines ``first``, ``first + 1``, ... of its log (each kept once)."""
        for offset, text in enumerate(lines):
            self.lines.setdefault(first + offset, text)
        self.last_line = max(self.last_line, first + len(lines) - 1)
        if any(a > b for a, b in itertools.pairwise(self.lines)):
            self.lines = dict(sorted(self.lines.items()))
        if len(self.lines) > SERVER_LOG_LINES:
            self.lines = dict(list(self.lines.items())[-SERVER_LOG_LINES:])


@dataclass(slots=True)
class RoundRow:
    """One round (or the synthesis call) as the timeline shows it."""

    number: int
    purpose: Literal["round", "synthesis"] = "round"
    usage: Usage = field(default_factory=Usage)
    """The round's own model call (pruning calls are in ``pruning_usage``)."""
    pruning_usage: Usage = field(default_factory=Usage)
    summarizations: list[ev.ModelCalled] = field(default_factory=list)
    """Summarization calls made after this round's tools (LangChain's
    ``SummarizationMiddleware`` on a ``create_agent`` run), before the next round's call."""
    summarization_usage: Usage = field(default_factory=Usage)
    latency_s: float | None = None
    text: str = ""
    finish_reason: str | None = None
    stuck: bool = False
    tool_calls: tuple[ev.ToolCallView, ...] = ()
    tools: list[ToolRow] = field(default_factory=list)
    gates: list[ev.BudgetGate] = field(default_factory=list)
    synthesis_reason: str | None = None
    synthesis_prompt: str | None = None
    sent: tuple[object, ...] = ()
    """Messages this round's model call added to the conversation (message dicts)."""
    call_started_t: float | None = None
    """Run time the model call was sent; ``latency_s`` is ``None`` while it runs."""
    first_token_s: float | None = None
    streamed_text: str = ""
    """Text streamed so far (the whole reply's text replaces it when the call returns)."""
    interventions: list[ev.Intervention] = field(default_factory=list)
    """What a person changed in this round."""
    failed_calls: list[ev.ModelCallFailed] = field(default_factory=list)
    """Calls of this round that raised (a framework may have retried them)."""
    pauses: list[ev.Paused] = field(default_factory=list)
    """Where and how long a pause held the loop in this round (each ends at its ``t``)."""
    started_t: float | None = None
    """Run time of the round's first event (a reply without a start: when it was sent)."""
    ended_t: float | None = None
    """Run time of the round's last event (or of the run's end, for a tool it cut short)."""

    @property
    def paused_s(self) -> float:
        """Seconds pauses held the loop in this round: a person's time, not the round's."""
        return sum(p.paused_s for p in self.pauses)

    @property
    def duration_s(self) -> float | None:
        """How long the round took, the time pauses held it left out; ``None`` before its
        first event."""
        if self.started_t is None or self.ended_t is None:
            return None
        return max(self.ended_t - self.started_t - self.paused_s, 0.0)

    def _began(self, event: ev.Event) -> None:
        """The round's first event opens its time span (as the browser's fold does: a
        reply seen without its start began when it was sent)."""
        latency = event.latency_s if isinstance(event, ev.ModelCalled) else 0.0
        self.started_t = max(event.t - latency, 0.0)
        self.ended_t = event.t

    @property
    def calling(self) -> bool:
        """The model call was sent and has not returned yet."""
        return self.call_started_t is not None and self.latency_s is None

    @property
    def cost_usd(self) -> Decimal | None:
        """The round's model call plus its pruning and summarization calls; ``None`` when
        unpriced."""
        return (self.usage + self.pruning_usage + self.summarization_usage).cost_usd

    @property
    def tokens_saved(self) -> int:
        """Tokens pruning kept out of the conversation in this round."""
        return sum(t.pruning.tokens_saved for t in self.tools if t.pruning)

    @property
    def net_saved(self) -> int:
        """Tokens saved minus the pruning calls' own tokens."""
        return sum(t.pruning.net_saved for t in self.tools if t.pruning)

    def gate(self, kind: Literal["token", "usd"]) -> GateState:
        """The last state of that gate in this round."""
        states = [g.passed for g in self.gates if g.gate == kind]
        if not states:
            return "off"
        return "passed" if states[-1] else "tripped"


def _from_start(read: Callable[[ev.LoopStarted], T | None]) -> Derived[RunView, T | None]:
    """A limit of the run, read from its start event (``None`` before it came)."""
    return Derived(lambda view: read(view.started) if view.started else None)


_RUN_EVENTS: frozenset[type[ev.Event]] = frozenset(
    {ev.LoopStarted, ev.LoopFinished, ev.LoopFailed, ev.ServerLogged}
)
"""Events of the run as a whole: they belong to no round's time (what a server logged
is its own, not the run's)."""

_FOLDS: dict[type[ev.Event], Callable[[Any, Any], None]] = {}
"""How each kind of event changes a :class:`RunView`: one small method per kind, found by
the event's exact type (a dict lookup: the fold runs on every event of a live run)."""

F = TypeVar("F", bound=Callable[..., None])


def _folds(kind: type[ev.Event]) -> Callable[[F], F]:
    def register(method: F) -> F:
        _FOLDS[kind] = method
        return method

    return register


@dataclass(slots=True)
class RunView:
    """Everything a person sees about one run, derived from its events only."""

    run_id: str | None = None
    status: RunStatus = "idle"
    started: ev.LoopStarted | None = None
    rounds: list[RoundRow] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    """Accumulated spend (every call, pruning included), as of the last event."""
    final_text: str | None = None
    finished: ev.LoopFinished | None = None
    failure: ev.LoopFailed | None = None
    last_context_tokens: int = 0
    """Input tokens of the most recent agent model call (how full the window was)."""
    token_gate: GateState = "off"
    usd_gate: GateState = "off"
    events: int = 0
    elapsed_s: float = 0.0
    """Run time of the last event seen (the run's duration once it ended)."""
    paused_at: PausePoint | None = None
    """Where a debugger holds the loop right now (step mode), else ``None``."""
    paused_s: float = 0.0
    """Seconds pauses held the loop over the run (``pause`` events so far)."""
    servers: dict[str, ServerView] = field(default_factory=dict)
    """The MCP servers the run's tools came from, in the order the run first named them."""
    _by_number: dict[int, RoundRow] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    # -- folding ----------------------------------------------------------------------
    @classmethod
    def from_events(cls, events: Iterable[ev.Event]) -> RunView:
        """The view at the end of ``events`` (a finished run or a trace)."""
        view = cls()
        for event in events:
            view.apply(event)
        return view

    def _index(self) -> dict[int, RoundRow]:
        """Rows by number, kept in step with ``rounds`` (rebuilt if it was set from outside),
        so finding a row is O(1) however long the run: a new round must not scan them all."""
        index = self._by_number
        if len(index) != len(self.rounds):
            index.clear()
            for row in self.rounds:
                index[row.number] = row  # the last row of a number wins, as a reverse scan
        return index

    def _row(self, number: int) -> RoundRow:
        rows = self.rounds
        if rows and rows[-1].number == number:
            return rows[-1]
        index = self._index()
        row = index.get(number)
        if row is None:
            row = RoundRow(number)
            rows.append(row)
            index[number] = row
        return row

    def apply(self, event: ev.Event) -> None:
        """Fold one event in; events of another run are ignored once a run is known."""
        if self.run_id is None:
            self.run_id = event.run_id
        elif event.run_id != self.run_id:
            return
        self.events += 1
        t = event.t
        if t > self.elapsed_s:
            self.elapsed_s = t
        kind = type(event)
        fold = _FOLDS.get(kind)
        if fold is not None:
            fold(self, event)
        if kind in _RUN_EVENTS:  # the run's start and end are no round's time
            return
        rows = self.rounds  # the round's span widens to this event (inline: every event)
        row = rows[-1] if rows and rows[-1].number == event.round else None
        if row is None and rows:
            row = self._index().get(event.round)
        if row is None:
            return
        if row.ended_t is None:
            row._began(event)
        elif t > row.ended_t:
            row.ended_t = t

    @_folds(ev.LoopStarted)
    def _loop_started(self, event: ev.LoopStarted) -> None:
        self.started = event
        self.status = "running"
        self.token_gate = "off" if event.token_budget is None else "passed"
        self.usd_gate = "off" if event.usd_limit is None else "passed"

    @_folds(ev.RoundStarted)
    def _round_started(self, event: ev.RoundStarted) -> None:
        self._row(event.round)
        self.status = "running"

    @_folds(ev.ModelCallStarted)
    def _call_started(self, event: ev.ModelCallStarted) -> None:
        purpose = event.purpose
        if purpose == "pruning" or purpose == "summarization":  # two tests: mypy narrows
            return  # a call of the round, not the round's own call
        row = self._row(event.round)
        row.purpose = purpose
        row.sent = event.messages
        row.call_started_t = event.t
        row.latency_s = None
        row.streamed_text = ""

    @_folds(ev.ModelDelta)
    def _delta(self, event: ev.ModelDelta) -> None:
        self._row(event.round).streamed_text += event.text

    @_folds(ev.ModelCalled)
    def _called(self, event: ev.ModelCalled) -> None:
        row = self._row(event.round)
        if event.purpose == "summarization":
            row.summarizations.append(event)
            row.summarization_usage = row.summarization_usage + event.usage
            self.usage = event.accumulated
            return
        row.purpose = event.purpose
        row.first_token_s = event.first_token_s
        row.usage = event.usage
        row.latency_s = event.latency_s
        row.text = event.text
        row.finish_reason = event.finish_reason
        row.stuck = event.stuck
        row.tool_calls = event.tool_calls
        row.tools = [ToolRow(c.id, c.name, dict(c.args)) for c in event.tool_calls]
        self.usage = event.accumulated
        self.last_context_tokens = event.usage.input_tokens

    @_folds(ev.ModelCallFailed)
    def _call_failed(self, event: ev.ModelCallFailed) -> None:
        row = self._row(event.round)
        if event.usage is not None:  # the provider had reported it: paid for, so counted
            if event.purpose == "pruning":
                row.pruning_usage = row.pruning_usage + event.usage
            elif event.purpose == "summarization":
                row.summarization_usage = row.summarization_usage + event.usage
            else:
                row.usage = row.usage + event.usage
            self.usage = event.accumulated or self.usage + event.usage
        if event.purpose in ("pruning", "summarization"):
            return
        row.latency_s = event.latency_s  # not calling any more
        row.failed_calls.append(event)

    @_folds(ev.ToolStarted)
    def _tool_started(self, event: ev.ToolStarted) -> None:
        tool = self._tool(event.round, event.tool_call_id, event.name, event.args)
        tool.status = "running"
        tool.started_t = event.t
        if event.server is not None:
            tool.server = event.server
            server = self._server(event.server)
            server.transport = event.transport or server.transport
            server.session_id = event.session_id or server.session_id

    @_folds(ev.ToolDispatched)
    def _tool_dispatched(self, event: ev.ToolDispatched) -> None:
        tool = self._tool(event.round, event.tool_call_id, event.name, event.args)
        tool.ran = event.ran
        tool.status = event.status
        tool.error_reason = event.error_reason
        tool.error_type = event.error_type
        tool.duration_s = event.duration_s
        tool.output_chars = event.output_chars
        tool.content = event.content
        tool.blocks = event.blocks
        tool.structured = event.structured
        if event.server is not None:
            tool.server = event.server
            server = self._server(event.server)
            server.calls += 1
            server.failed += event.status != "success"

    @_folds(ev.ServerLogged)
    def _server_logged(self, event: ev.ServerLogged) -> None:
        self._server(event.server).take(event.first_line, event.lines)
        if event.tool_call_id is None:
            return
        row = self._index().get(event.round)
        tool = next((t for t in row.tools if t.id == event.tool_call_id), None) if row else None
        if tool is not None:
            lines = enumerate(event.lines, start=event.first_line)
            tool.server_log.extend(LogLine(n, text) for n, text in lines)
            tool.server_log_dropped += event.dropped
            tool.server = tool.server or event.server

    def _server(self, name: str) -> ServerView:
        server = self.servers.get(name)
        if server is None:
            server = self.servers[name] = ServerView(name)
        return server

    @_folds(ev.Pruned)
    def _pruned(self, event: ev.Pruned) -> None:
        row = self._row(event.round)
        row.pruning_usage = row.pruning_usage + event.usage
        self.usage = self.usage + event.usage
        for tool in row.tools:
            if tool.id == event.tool_call_id:
                tool.pruning = event

    @_folds(ev.BudgetGate)
    def _gate(self, event: ev.BudgetGate) -> None:
        self._row(event.round).gates.append(event)
        state: GateState = "passed" if event.passed else "tripped"
        if event.gate == "token":
            self.token_gate = state
        else:
            self.usd_gate = state

    @_folds(ev.Intervention)
    def _intervention(self, event: ev.Intervention) -> None:
        self._row(event.round).interventions.append(event)

    @_folds(ev.Paused)
    def _paused(self, event: ev.Paused) -> None:
        self._row(event.round).pauses.append(event)
        self.paused_s += event.paused_s

    @_folds(ev.SynthesisStarted)
    def _synthesis(self, event: ev.SynthesisStarted) -> None:
        row = self._row(event.round)
        row.purpose = "synthesis"
        row.synthesis_reason = event.reason
        row.synthesis_prompt = event.prompt

    @_folds(ev.LoopFinished)
    def _finished(self, event: ev.LoopFinished) -> None:
        self.paused_at = None
        self.finished = event
        self.final_text = event.final_text
        self.usage = event.usage
        self.status = "finished"
        # a LangGraph interrupt() paused the tool that called it: it waits for input
        self._cut_short(event.t, "interrupted" if event.outcome == "interrupted" else "unfinished")

    @_folds(ev.LoopFailed)
    def _failed(self, event: ev.LoopFailed) -> None:
        self.paused_at = None
        self.failure = event
        self.usage = event.usage
        self.status = "cancelled" if event.cancelled else "failed"
        self._cut_short(event.t, "cancelled" if event.cancelled else "unfinished")

    def _cut_short(self, t: float, reason: str) -> None:
        """Tools of the last round still running when the run ended (a stream that lacks
        their result) ran until then: ``cancelled``, never "not run"."""
        if not self.rounds:
            return
        row = self.rounds[-1]
        for tool in row.tools:
            if tool.status == "running" and tool.started_t is not None:
                tool.status, tool.error_reason = "cancelled", reason
                tool.duration_s = max(t - tool.started_t, 0.0)
                if row.ended_t is None or t > row.ended_t:
                    row.ended_t = t

    def _tool(self, number: int, call_id: str, name: str, args: object) -> ToolRow:
        """The row of a call, with the arguments it really ran with (a person may have
        edited the model's at a pause)."""
        row = self._row(number)
        tool = next((t for t in row.tools if t.id == call_id), None)
        if tool is None:
            tool = ToolRow(call_id, name, {})
            row.tools.append(tool)
        tool.args = dict(args) if isinstance(args, dict) else {}
        return tool

    # -- step mode --------------------------------------------------------------------
    def pause(self, point: PausePoint) -> None:
        """A debugger holds the loop at ``point`` (ignored for another run or when done)."""
        if self.run_id is not None and point.run_id != self.run_id:
            return
        if self.status in ("finished", "failed", "cancelled"):
            return
        self.paused_at = point
        self.status = "paused"

    def resume(self) -> None:
        """The debugger let the loop go on."""
        self.paused_at = None
        if self.status == "paused":
            self.status = "running"

    # -- derived figures --------------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once the run finished, failed or was cancelled."""
        return self.status in ("finished", "failed", "cancelled")

    def row(self, number: int) -> RoundRow | None:
        """The row of round ``number`` (synthesis included), or ``None``."""
        return self._index().get(number)

    @property
    def active_s(self) -> float:
        """Run time of the last event less the time pauses held the loop: how long the
        run itself took."""
        return max(self.elapsed_s - self.paused_s, 0.0)

    @property
    def rounds_run(self) -> int:
        """Rounds seen so far, the one whose reply answered included (a final-answer call
        is not a round): what the closing event's ``rounds`` counts once the run ends."""
        return sum(1 for r in self.rounds if r.purpose == "round")

    @property
    def tool_rounds(self) -> int:
        """Rounds that ended in tool calls (the answering round is not one; see
        :func:`~toolloop_lab.events.tool_rounds_of`): from
        the closing event once the run ended, the rounds with tool calls so far before."""
        end = self.finished or self.failure
        if end is not None:
            return ev.tool_rounds_of(end)
        return sum(1 for r in self.rounds if r.purpose == "round" and r.tools)

    @property
    def model_calls(self) -> int:
        """Model calls the run paid for so far: every round's, the final-answer call's
        and the pruning model's (``usage.requests``)."""
        return self.usage.requests

    max_rounds = _from_start(lambda e: e.max_rounds)
    """The round cap from the loop's start event."""
    token_budget = _from_start(lambda e: e.token_budget)
    """The token budget, or ``None`` when the loop has none."""
    usd_limit = _from_start(lambda e: e.usd_limit)
    """The USD limit, or ``None`` when no USD budget was set."""
    context_window = _from_start(lambda e: e.context_window)
    """The context window the loop resolved."""

    @property
    def context_fill(self) -> float | None:
        """Share of the context window the last call used (0..1+), if known."""
        window = self.context_window
        if not window:
            return None
        return self.last_context_tokens / window

    @property
    def tokens_saved(self) -> int:
        """Tokens pruning kept out of the conversation over the run."""
        return sum(r.tokens_saved for r in self.rounds)

    @property
    def net_saved(self) -> int:
        """Pruning savings net of the pruning calls' own tokens."""
        return sum(r.net_saved for r in self.rounds)

    @property
    def prunings(self) -> list[ev.Pruned]:
        """Every pruning event of the run, in order."""
        return [t.pruning for r in self.rounds for t in r.tools if t.pruning]

    @property
    def tool_errors(self) -> int:
        """Tool calls that ended in an error (raised, unknown, invalid, timed out, refused:
        every call whose ``ToolMessage`` told the model it failed, but a call a stop cut
        short): what the run list marks a run by."""
        return sum(1 for r in self.rounds for t in r.tools if t.status == "error")

    @property
    def question(self) -> str | None:
        """The run's first user message as text (what it was asked), cut to
        :data:`QUESTION_CHARS`; ``None`` before the first model call, or when no call was
        sent a user message (the browser's header reads the same from its own fold)."""
        for row in self.rounds:
            text = first_user_text(row.sent)
            if text is not None:
                return clip(text, QUESTION_CHARS)
        return None


QUESTION_CHARS: Final = 200
"""How much of a run's question a summary, a row and the header keep."""


def _block_text(block: object) -> str | None:
    if isinstance(block, str):
        return block
    if isinstance(block, Mapping) and isinstance(block.get("text"), str):
        return str(block["text"])
    return None


def first_user_text(messages: Iterable[object]) -> str | None:
    """The text of the first user message among ``messages`` (langchain-core message
    dicts, as a ``model_call_start`` carries them): a string content as it is, content
    blocks' text parts joined by newlines (an image says nothing here); ``None`` when none
    is a user message."""
    for message in messages:
        if not isinstance(message, Mapping) or message.get("type") not in _USER_TYPES:
            continue
        data = message.get("data")
        content = data.get("content") if isinstance(data, Mapping) else None
        if isinstance(content, str):
            return content
        if isinstance(content, (list, tuple)):
            parts = (_block_text(b) for b in content)
            return "\n".join(p for p in parts if p is not None)
        return ""
    return None


_USER_TYPES: Final = frozenset({"human", "HumanMessageChunk"})


SpanKind = Literal["model", "tool", "pruning", "pause"]

MAX_SPANS: Final = 300
"""Spans a nested run's summary keeps (the failed and the longest; the rest are counted)."""


class Span(NamedTuple):
    """One stretch of a run's time, in the run's own clock: a model call, a tool, a pruning
    call or a pause (a lane of a timeline draws it as a bar)."""

    kind: SpanKind
    t0: float
    t1: float
    failed: bool


class CallSite(NamedTuple):
    """Where a nested run was called: the name of its parent's tool call, and the parent's
    run time when that call began."""

    tool_name: str
    t: float


def _round_spans(row: RoundRow, now: float) -> Iterator[Span]:
    """The spans of one round; work still going ends at ``now``."""
    failed = row.failed_calls
    for call in failed:
        yield Span("model", max(call.t - call.latency_s, 0.0), call.t, True)
    start = row.call_started_t
    last_failed = bool(failed) and start is not None and failed[-1].t >= start
    if row.calling and start is not None:
        yield Span("model", start, max(now, start), False)
    elif row.latency_s is not None and not last_failed:
        began = start if start is not None else row.started_t
        if began is not None:
            yield Span("model", began, began + row.latency_s, False)
    for tool in row.tools:
        if tool.ran and tool.started_t is not None:
            end = tool.started_t + tool.duration_s if tool.duration_s is not None else now
            yield Span("tool", tool.started_t, max(end, tool.started_t), tool.status == "error")
        if tool.pruning is not None:
            pruned = tool.pruning
            yield Span("pruning", max(pruned.t - pruned.latency_s, 0.0), pruned.t, False)
    for said in row.summarizations:
        yield Span("model", max(said.t - said.latency_s, 0.0), said.t, False)
    for pause in row.pauses:
        yield Span("pause", max(pause.t - pause.paused_s, 0.0), pause.t, False)


def run_spans(view: RunView) -> list[Span]:
    """Every model call, tool, pruning call and pause of the run, across all its rounds,
    in time order (what a timeline of the whole run draws)."""
    now = view.elapsed_s
    out = [span for row in view.rounds for span in _round_spans(row, now)]
    out.sort(key=lambda span: (span.t0, span.t1))
    return out


def _kept_spans(spans: list[Span], limit: int = MAX_SPANS) -> tuple[tuple[Span, ...], int]:
    """At most ``limit`` spans, in time order: the failed ones first, then the longest
    (what stands out in a lane); returns them and how many were left out."""
    if len(spans) <= limit:
        return tuple(spans), 0
    chosen = heapq.nlargest(limit, spans, key=lambda span: (span.failed, span.t1 - span.t0))
    chosen.sort(key=lambda span: (span.t0, span.t1))
    return tuple(chosen), len(spans) - limit


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run in a line, as a list of many runs shows it (a debugger's runs, a trace's):
    read from the run's :class:`RunView`, so it says what every other view says. What
    the other runs of the stream say of it (the tool call that made it, its totals with
    its nested runs, when it started in its top-level run) comes from :class:`RunBook`."""

    run_id: str
    parent_run_id: str | None
    """The run that called this one (a sub-agent called as a tool), else ``None``."""
    parent_tool_call_id: str | None
    """... and the tool call of that run it answers."""
    name: str | None
    """What the caller called the run (``run(..., name=)``), else ``None``."""
    tags: tuple[str, ...]
    status: RunStatus
    """How far the run got, as the fold says it: a run that raised is ``failed``, a USD
    stop too; what a person reads is :attr:`shown_status`."""
    outcome: ev.Outcome | None
    """How the run ended; ``None`` while it runs (or when its last event is lost)."""
    rounds: int
    """Rounds run, the answering one included (``ToolLoopResult.rounds``): the end event's
    count once it ended, the rounds seen so far before."""
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    """What the run spent, pruning included; ``None`` when a call could not be priced."""
    started_at: str | None
    """Wall-clock start, ISO 8601 UTC (``None`` when the start event is lost)."""
    duration_s: float
    """Run time so far (the whole run's, once it ended), the time pauses held it left out."""
    source: Literal["loop", "langchain", "otel"]
    """``loop``: our ``LLMAgent``; ``langchain``: a run seen through the callback bridge;
    ``otel``: a run read from OpenTelemetry spans."""
    parent_tool_name: str | None
    """The name of the parent's tool call that made this run, when the stream holds it."""
    total_input_tokens: int
    """Input tokens of this run and of every run nested under it that the stream holds
    (or that a bounded list of runs let go: ``LoopDebugger(max_runs=)``)."""
    total_output_tokens: int
    total_cost_usd: Decimal | None
    """Cost of this run and of every run nested under it; ``None`` when any is unpriced."""
    offset_s: float
    """Seconds from the start of its top-level run to its own start (0 at top level)."""
    spans: tuple[Span, ...] = ()
    """A nested run's model calls, tools, pruning calls and pauses, in its own clock (at
    most :data:`MAX_SPANS`); ``()`` for a run that names no parent."""
    spans_left_out: int = 0
    """Spans past :data:`MAX_SPANS` not kept."""
    tool_rounds: int = 0
    """Rounds that ended in tool calls (``ToolLoopResult.tool_rounds``)."""
    model_calls: int = 0
    """Model calls the run paid for, pruning included (``ToolLoopResult.model_calls``)."""
    tool_errors: int = 0
    """Tool calls that ended in an error (:attr:`RunView.tool_errors`): the run list marks
    such a run, and filters by it."""
    question: str | None = None
    """The run's first user message, cut to 200 characters (:attr:`RunView.question`)."""

    @property
    def shown_status(self) -> str:
        """The status a person reads (a code of ``words.json``'s status table): a run the
        USD limit stopped has its own, ``usd_budget_exhausted`` ("USD limit reached"), where
        :attr:`status` says ``failed``; every other run its :attr:`status`. The run list,
        the header and the text view all read this."""
        return shown_status(self.status, self.outcome)

    @classmethod
    def of_stream(cls, events: Iterable[ev.Event]) -> tuple[RunSummary, ...]:
        """Every run of a stream (a trace's events, a sweep's, a debugger's), each summed up
        with its family, in the order they started: a nested run names the tool call that
        made it, and each run's totals include the runs nested under it (as
        ``LoopDebugger.runs`` lists them)."""
        return summaries(events)

    @classmethod
    def of(cls, view: RunView) -> RunSummary:
        """The summary of the run ``view`` folded, on its own (its totals are its own); a
        view of no event has no run."""
        if view.run_id is None:
            raise ValueError("a RunView that folded no event has no run to summarise")
        start, end = view.started, view.finished or view.failure
        nested = start is not None and start.parent_run_id is not None
        spans, left_out = _kept_spans(run_spans(view)) if nested else ((), 0)
        usage = view.usage
        return cls(
            run_id=view.run_id,
            parent_run_id=start.parent_run_id if start else None,
            parent_tool_call_id=start.parent_tool_call_id if start else None,
            name=start.name if start else None,
            tags=start.tags if start else (),
            status=view.status,
            outcome=end.outcome if end else None,
            rounds=end.rounds if end else view.rounds_run,
            tool_rounds=view.tool_rounds,
            model_calls=view.model_calls,
            tool_errors=view.tool_errors,
            question=view.question,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cost_usd=usage.cost_usd,
            started_at=start.started_at if start else None,
            duration_s=view.active_s,
            source=start.source if start else "loop",
            parent_tool_name=None,
            total_input_tokens=usage.input_tokens,
            total_output_tokens=usage.output_tokens,
            total_cost_usd=usage.cost_usd,
            offset_s=0.0,
            spans=spans,
            spans_left_out=left_out,
        )


_SITE_SCAN: Final = 5_000
"""Events of the parent looked back over for the tool call a nested run answers (it began
just before the nested run did)."""


def call_site(parent_events: Sequence[ev.Event], call_id: str) -> CallSite | None:
    """The tool call ``call_id`` among the newest events of a parent run: its name, and
    when it began (its ``tool_start``, else the reply that asked for it)."""
    name: str | None = None
    for event in islice(reversed(parent_events), _SITE_SCAN):
        if isinstance(event, ev.ToolStarted) and event.tool_call_id == call_id:
            return CallSite(event.name, event.t)
        if isinstance(event, ev.ToolDispatched) and event.tool_call_id == call_id:
            name = event.name
        elif isinstance(event, ev.ModelCalled):
            for call in event.tool_calls:
                if call.id == call_id:
                    return CallSite(name or call.name, event.t)
    return None


def _wall(started_at: str) -> float | None:
    """Seconds since the epoch of an ISO 8601 start, or ``None`` when it is not one."""
    try:
        return datetime.fromisoformat(started_at).timestamp()
    except (TypeError, ValueError, OverflowError):
        return None


_Totals = tuple[int, int, Decimal | None]
"""Input tokens, output tokens and cost (``None``: some call could not be priced)."""


def _plus(a: _Totals, b: _Totals) -> _Totals:
    cost = None if a[2] is None or b[2] is None else a[2] + b[2]
    return a[0] + b[0], a[1] + b[1], cost


@dataclass(slots=True)
class _Held:
    """One run of a :class:`RunBook`: its events, folded as far as asked."""

    events: list[ev.Event]
    first: int
    """Where its first event came in the stream."""
    started: int | None = None
    """Where its ``loop_start`` came (``None``: not seen)."""
    parent: str | None = None
    site: CallSite | None = None
    wall: float | None = None
    view: RunView | None = None
    """The fold so far, kept while the run goes on (a finished run keeps its summary)."""
    folded: int = 0
    own: RunSummary | None = None
    gone: _Totals = (0, 0, Decimal(0))
    """What the runs nested under it that the book let go spent (:meth:`RunBook.drop`)."""

    def summary(self) -> RunSummary:
        """The run's own summary as of its last event (folding only the new events)."""
        if self.own is not None and self.folded == len(self.events):
            return self.own
        view = self.view
        if view is None:
            view, self.folded = RunView(), 0
        for event in self.events[self.folded :]:
            view.apply(event)
        self.folded = len(self.events)
        self.own = RunSummary.of(view)
        self.view = None if view.done else view
        return self.own

    def totals(self) -> _Totals:
        """What it spent with the runs nested under it that the book let go."""
        own = self.summary()
        return _plus((own.input_tokens, own.output_tokens, own.cost_usd), self.gone)


_Linked = tuple[str | None, int, int, Decimal | None, float]
"""What the other runs say of a run: its parent's tool name, its totals, its offset."""


class RunBook:
    """The runs of one stream of events, each summed up as its family says.

    Recording an event costs an append; summaries fold only the events that came since
    they were last asked for, and a run whose summary did not change keeps the same
    :class:`RunSummary` object (a view sends only the rows that changed). Nested runs sit
    under the run that called them: each summary has its parent's tool call name, its
    totals with every run nested under it, and its start in its top-level run's time.
    """

    def __init__(self) -> None:
        self._held: dict[str, _Held] = {}
        self._kids: dict[str, int] = {}
        """How many runs held name each run as their parent."""
        self._seq = 0
        self._linked: dict[str, tuple[RunSummary, _Linked, RunSummary]] = {}
        self._out: tuple[RunSummary, ...] = ()
        self._stale = False

    def record(self, event: ev.Event) -> bool:
        """Keep ``event`` with its run's; True when it is the first of a run."""
        held = self._held.get(event.run_id)
        new = held is None
        if held is None:
            held = self._held[event.run_id] = _Held([], self._seq)
        self._seq += 1
        held.events.append(event)
        if isinstance(event, ev.LoopStarted) and held.started is None:
            self._started(held, event)
        self._stale = True
        return new

    def _started(self, held: _Held, event: ev.LoopStarted) -> None:
        held.started = self._seq
        held.wall = _wall(event.started_at)
        parent_id = event.parent_run_id
        if parent_id is None or parent_id == event.run_id:
            return
        held.parent = parent_id
        self._kids[parent_id] = self._kids.get(parent_id, 0) + 1
        parent = self._held.get(parent_id)
        if parent is not None and event.parent_tool_call_id is not None:
            held.site = call_site(parent.events, event.parent_tool_call_id)

    def drop(self, run_id: str) -> None:
        """Forget run ``run_id`` (a bounded session lets its oldest finished runs go); what
        it spent stays in the totals of the run it is nested under, so a family's totals
        stay exact however many of its runs are let go."""
        held = self._held.pop(run_id, None)
        if held is None:
            return
        self._linked.pop(run_id, None)
        self._stale = True
        if held.parent is None:
            return
        self._kids[held.parent] -= 1
        if not self._kids[held.parent]:
            del self._kids[held.parent]
        parent = self._held.get(held.parent)
        if parent is not None:
            parent.gone = _plus(parent.gone, held.totals())

    def finished_leaves(self, limit: int, keep: Collection[str] = ()) -> list[str]:
        """At most ``limit`` finished runs no held run names as its parent, oldest first,
        but those in ``keep``: the runs a bounded session may let go without cutting a
        family apart."""
        kids = self._kids
        free = (
            run_id
            for run_id in self._held
            if not kids.get(run_id) and run_id not in keep and self.done(run_id)
        )
        return list(islice(free, limit))

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._held

    def __len__(self) -> int:
        return len(self._held)

    def run_ids(self) -> tuple[str, ...]:
        """The runs held, in the order they were first seen."""
        return tuple(self._held)

    def events(self, run_id: str) -> Sequence[ev.Event]:
        """The events held of run ``run_id`` (``()`` for a run not held); do not change them."""
        held = self._held.get(run_id)
        return () if held is None else held.events

    def done(self, run_id: str) -> bool:
        """True once the run's last event ended it."""
        held = self._held.get(run_id)
        return held is not None and isinstance(held.events[-1], (ev.LoopFinished, ev.LoopFailed))

    def newest_top_level(self) -> str | None:
        """The newest run no run held started (the run a view shows by default)."""
        for run_id in reversed(self._held):
            parent = self._held[run_id].parent
            if parent is None or parent not in self._held:
                return run_id
        return None

    def summaries(self) -> tuple[RunSummary, ...]:
        """A summary of every run held, in the order they started (a run whose start is
        lost comes after those), each with what its family says of it."""
        if self._stale:
            order = sorted(
                self._held.values(),
                key=lambda h: (0, h.started) if h.started is not None else (1, h.first),
            )
            self._out = self._link(order)
            self._stale = False
        return self._out

    def _link(self, order: list[_Held]) -> tuple[RunSummary, ...]:
        own = [held.summary() for held in order]
        linked = _family(order, own, self._held)
        out = []
        for summary, values in zip(own, linked, strict=True):
            before = self._linked.get(summary.run_id)
            if before is not None and before[0] is summary and before[1] == values:
                out.append(before[2])
                continue
            name, total_in, total_out, total_cost, offset = values
            made = replace(
                summary,
                parent_tool_name=name,
                total_input_tokens=total_in,
                total_output_tokens=total_out,
                total_cost_usd=total_cost,
                offset_s=offset,
            )
            self._linked[summary.run_id] = (summary, values, made)
            out.append(made)
        return tuple(out)


def _parents(order: list[_Held], held: Mapping[str, _Held]) -> dict[str, str]:
    """Each run's parent among the runs held (a loop of runs naming each other, which no
    real stream has, is cut)."""
    parent = {
        h.events[0].run_id: h.parent for h in order if h.parent is not None and h.parent in held
    }
    acyclic: set[str] = set()
    for start in list(parent):
        path: list[str] = []
        node: str | None = start
        while node is not None and node not in acyclic:
            if node in path:
                del parent[node]  # a cycle: cut it here
                break
            path.append(node)
            node = parent.get(node)
        acyclic.update(path)
    return parent


def _depths(parent: Mapping[str, str], ids: Iterable[str]) -> dict[str, int]:
    """How many runs each run is nested under (0 at top level)."""
    depth: dict[str, int] = {}
    for run_id in ids:
        path = []
        node: str | None = run_id
        while node is not None and node not in depth:
            path.append(node)
            node = parent.get(node)
        base = -1 if node is None else depth[node]
        for step in reversed(path):
            base += 1
            depth[step] = base
    return depth


def _family(order: list[_Held], own: list[RunSummary], held: Mapping[str, _Held]) -> list[_Linked]:
    """For each run: its parent's tool name, its totals with its nested runs, its offset."""
    ids = [s.run_id for s in own]
    parent = _parents(order, held)
    depth = _depths(parent, ids)
    totals: dict[str, _Totals] = {s.run_id: held[s.run_id].totals() for s in own}
    for run_id in sorted(ids, key=lambda i: -depth[i]):  # children before their parents
        up = parent.get(run_id)
        if up is not None:
            totals[up] = _plus(totals[up], totals[run_id])
    offsets: dict[str, float] = {}
    for run_id in sorted(ids, key=lambda i: depth[i]):  # parents before their children
        up = parent.get(run_id)
        offsets[run_id] = 0.0 if up is None else _offset(run_id, up, parent, held, offsets)
    out: list[_Linked] = []
    for run_id in ids:
        site = held[run_id].site if run_id in parent else None
        t = totals[run_id]
        out.append((site.tool_name if site else None, t[0], t[1], t[2], offsets[run_id]))
    return out


def _offset(
    run_id: str,
    up: str,
    parent: Mapping[str, str],
    held: Mapping[str, _Held],
    offsets: Mapping[str, float],
) -> float:
    """Seconds from the start of the top-level run above ``run_id`` to its own start: by
    the wall clock, else by when the parent's call began."""
    top = up
    while top in parent:
        top = parent[top]
    mine, theirs = held[run_id].wall, held[top].wall
    if mine is not None and theirs is not None:
        return max(mine - theirs, 0.0)
    site = held[run_id].site
    return offsets[up] + (site.t if site is not None else 0.0)


def nested_run_ids(events: Iterable[ev.Event], run_id: str) -> tuple[str, ...]:
    """The runs ``run_id`` started, and the runs those started, and so on (sub-agents
    called from its tools), in the order they started."""
    stream = tuple(events)
    parents = {
        e.run_id: e.parent_run_id
        for e in stream
        if isinstance(e, ev.LoopStarted) and e.parent_run_id not in (None, e.run_id)
    }
    below: set[str] = {run_id}
    out: list[str] = []
    for child in ev.run_ids(stream):  # start order: a parent is met before its children
        if parents.get(child) in below:
            below.add(child)
            out.append(child)
    return tuple(out)


def summaries(events: Iterable[ev.Event]) -> tuple[RunSummary, ...]:
    """A summary of every run in ``events``, in the order they started (see
    :func:`~toolloop_lab.events.run_ids`), each with what its family says of it (see
    :class:`RunBook`)."""
    book = RunBook()
    for event in events:
        book.record(event)
    return book.summaries()
