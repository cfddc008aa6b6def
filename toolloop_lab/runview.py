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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TypeVar

from toolloop_lab import events as ev
from toolloop_lab._support.derived import Derived
from toolloop_lab.engine.hooks import PausePoint
from toolloop_lab.spend.usage import Usage

__all__ = ["GateState", "RoundRow", "RunStatus", "RunSummary", "RunView", "ToolRow", "summaries"]

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
    pruning: ev.Pruned | None = None
    started_t: float | None = None
    """Run time its tool began (``tool_start``), for a live timer."""
    ran: bool = True
    """False for a call answered without running it (no duration, no size of its own)."""


@dataclass(slots=True)
class RoundRow:
    """One round (or the synthesis call) as the timeline shows it."""

    number: int
    purpose: Literal["round", "synthesis"] = "round"
    usage: Usage = field(default_factory=Usage)
    """The round's own model call (pruning calls are in ``pruning_usage``)."""
    pruning_usage: Usage = field(default_factory=Usage)
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
        """The round's model call plus its pruning calls; ``None`` when unpriced."""
        return (self.usage + self.pruning_usage).cost_usd

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


_RUN_EVENTS: frozenset[type[ev.Event]] = frozenset({ev.LoopStarted, ev.LoopFinished, ev.LoopFailed})
"""Events of the run as a whole: they belong to no round's time."""

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
        if event.purpose == "pruning":
            return  # a pruning call belongs to a tool output, not to the round's call
        row = self._row(event.round)
        row.purpose = event.purpose
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
            else:
                row.usage = row.usage + event.usage
            self.usage = event.accumulated or self.usage + event.usage
        if event.purpose == "pruning":
            return
        row.latency_s = event.latency_s  # not calling any more
        row.failed_calls.append(event)

    @_folds(ev.ToolStarted)
    def _tool_started(self, event: ev.ToolStarted) -> None:
        tool = self._tool(event.round, event.tool_call_id, event.name, event.args)
        tool.status = "running"
        tool.started_t = event.t

    @_folds(ev.ToolDispatched)
    def _tool_dispatched(self, event: ev.ToolDispatched) -> None:
        tool = self._tool(event.round, event.tool_call_id, event.name, event.args)
        tool.ran = event.ran
        tool.status = event.status
        tool.error_reason = event.error_reason
        tool.duration_s = event.duration_s
        tool.output_chars = event.output_chars
        tool.content = event.content

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
    def tool_rounds(self) -> int:
        """Tool rounds seen so far (synthesis not counted)."""
        return sum(1 for r in self.rounds if r.purpose == "round")

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


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run in a line, as a list of many runs shows it (a debugger's runs, a trace's):
    read from the run's :class:`RunView`, so it says what every other view says."""

    run_id: str
    parent_run_id: str | None
    """The run that called this one (a sub-agent called as a tool), else ``None``."""
    parent_tool_call_id: str | None
    """... and the tool call of that run it answers."""
    name: str | None
    """What the caller called the run (``run(..., name=)``), else ``None``."""
    tags: tuple[str, ...]
    status: RunStatus
    outcome: ev.Outcome | None
    """How the run ended; ``None`` while it runs (or when its last event is lost)."""
    rounds: int
    """Tool rounds: the end event's count once it ended, the rounds seen so far before."""
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal | None
    """What the run spent, pruning included; ``None`` when a call could not be priced."""
    started_at: str | None
    """Wall-clock start, ISO 8601 UTC (``None`` when the start event is lost)."""
    duration_s: float
    """Run time so far (the whole run's, once it ended), the time pauses held it left out."""

    @classmethod
    def of(cls, view: RunView) -> RunSummary:
        """The summary of the run ``view`` folded; a view of no event has no run."""
        if view.run_id is None:
            raise ValueError("a RunView that folded no event has no run to summarise")
        start, end = view.started, view.finished or view.failure
        return cls(
            run_id=view.run_id,
            parent_run_id=start.parent_run_id if start else None,
            parent_tool_call_id=start.parent_tool_call_id if start else None,
            name=start.name if start else None,
            tags=start.tags if start else (),
            status=view.status,
            outcome=end.outcome if end else None,
            rounds=end.rounds if end else view.tool_rounds,
            input_tokens=view.usage.input_tokens,
            output_tokens=view.usage.output_tokens,
            cost_usd=view.usage.cost_usd,
            started_at=start.started_at if start else None,
            duration_s=view.active_s,
        )


def summaries(events: Iterable[ev.Event]) -> tuple[RunSummary, ...]:
    """A summary of every run in ``events``, in the order they started (see
    :func:`~toolloop_lab.events.run_ids`)."""
    return tuple(RunSummary.of(RunView.from_events(run)) for run in ev.by_run(events).values())
