"""Fork a run: keep its first rounds as they were, and run the rest again.

::

    from toolloop_lab import fork

    result = agent.run("Rotate the API keys.")       # or a trace path, or a recording path
    forked = fork(result, 2, model=model, tools=tools, config=AgentConfig(tool_max_rounds=3))
    print(forked.summary)       # original and fork side by side: outcome, rounds, tokens, cost
    forked.comparison()         # the same, round by round, as a pandas frame

**Where the fork starts.** The fork's round ``at_round`` is sent exactly what the
original's round ``at_round`` was sent, a person's edits and added messages included (when
that row was the synthesis call: the conversation before the synthesis prompt). The rounds
before it are *taken* from the source: no model call and no tool call is made for them,
and their tokens and cost are the source's own figures.

**How it runs.** The rest is an ordinary :class:`~toolloop_lab.agent.LLMAgent` run on that
conversation, so its events, pauses and budgets are the real loop's, and what a person
changes at its pauses is recorded as usual. That run is given what the whole run would have
left at round ``at_round``: the round cap less the rounds taken, the token budget less the
tokens taken, and the USD limit of the ``usd_budget`` in force less the cost taken. Each
gate therefore trips exactly where it would have in one uninterrupted run, and a fork at
round *k* with the same replies reproduces the original's rounds, tokens and cost exactly:
the fork's figures are the taken rounds' plus its own run's. The fork's own events number
its rounds from 1 (its round 1 is round ``at_round``); :class:`ForkResult` renumbers them.

**For a debugger** ("Fork from here"), :func:`prepare_fork` checks everything and returns a
:class:`Fork` without running it; a ``Fork`` has the agent API a debugger drives
(``observers``, ``subscribe``, ``add_pause_hook``, ``arun``), so
``LoopDebugger().start(prepared, ())`` runs it in step mode and the task's result is the
:class:`ForkResult`.

Limits, by construction:

* stuck detection (``max_stuck_rounds``) starts afresh at the fork: its first round is not
  compared with the round before it;
* a recording holds the main model's calls only: the rounds taken from one leave pruning
  out, as its recorded figures do; one run per recording file;
* to replay the original's own replies in the fork, use strict replay
  (``ReplayChatModel.from_file(path)``): it finds each request's line wherever it is.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.tools import BaseTool

from toolloop_lab.agent import AgentConfig, LLMAgent, ToolLoopResult
from toolloop_lab.budget import (
    caller_context,
    current_prices,
    current_usd_budget,
    resolve_context_window,
    resolve_token_budget,
    unpriced_error,
    usd_budget,
)
from toolloop_lab.derived import Derived
from toolloop_lab.errors import (
    ConfigurationError,
    ExecutionError,
    ToolLoopError,
    ToolLoopLabError,
    TraceError,
)
from toolloop_lab.events import (
    EVENT_TYPES,
    Event,
    Intervention,
    LoopStarted,
    ModelCallStarted,
    Observer,
    Outcome,
    message_from_dict,
    select_run,
)
from toolloop_lab.hooks import PauseHook
from toolloop_lab.jsonl import load_line
from toolloop_lab.jsonsafe import thaw
from toolloop_lab.pricing import PriceTable, TokenPrice
from toolloop_lab.recording_format import FORMAT, Recording
from toolloop_lab.run_figures import (
    ComparedRuns,
    RunFigures,
    comparison_lines,
    config_text,
    error_spend,
    usd_change,
)
from toolloop_lab.runview import RunView
from toolloop_lab.sync_runner import parameters_of, run_sync
from toolloop_lab.trace import TraceRead, read_trace
from toolloop_lab.usage import Usage

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "COMPARISON_DTYPES",
    "Fork",
    "ForkResult",
    "ForkSource",
    "RoundComparison",
    "RoundFigures",
    "RoundOutcome",
    "SourceKind",
    "afork",
    "fork",
    "prepare_fork",
]

T = TypeVar("T")

SourceKind: TypeAlias = Literal["result", "events", "trace", "recording"]
"""What a fork was taken from."""

ForkSource: TypeAlias = (
    "ToolLoopResult | Sequence[Event] | TraceRead | Recording | str | os.PathLike[str]"
)
"""What :func:`fork` accepts: a finished run, its events (a failed run's ``error.events``
too), a trace (path or :class:`~toolloop_lab.trace.TraceRead`) or a recording (path or
:class:`~toolloop_lab.recording_format.Recording`)."""

RoundOutcome: TypeAlias = Literal["tools"] | Outcome
"""How a round ended: ``tools`` when the run went on after it (its calls were answered),
else the run's outcome on its last round."""

_SYNTHESIS: Final = "synthesis"
_SOURCE_TEXT: Final[Mapping[SourceKind, str]] = {
    "result": "a result",
    "events": "an event stream",
    "trace": "a trace",
    "recording": "a recording",
}


@dataclass(frozen=True, slots=True)
class RoundFigures:
    """One round of a run (or its synthesis call): what it spent and how it ended."""

    round: int
    purpose: Literal["round", "synthesis"]
    usage: Usage
    """The round's model call and its pruning calls."""
    tool_calls: int
    tool_errors: int
    outcome: RoundOutcome
    taken: bool = False
    """A fork's round taken from the source (not run again)."""

    @property
    def total_tokens(self) -> int:
        return self.usage.total_tokens

    @property
    def cost_usd(self) -> Decimal | None:
        return self.usage.cost_usd


@dataclass(frozen=True, slots=True)
class RoundComparison:
    """One round of the original next to the same round of the fork (either may be
    missing: the fork may end sooner or later)."""

    round: int
    original: RoundFigures | None
    fork: RoundFigures | None

    @property
    def taken(self) -> bool:
        """The fork took this round from the source."""
        return self.fork is not None and self.fork.taken

    @property
    def tokens_delta(self) -> int:
        """Fork tokens minus original tokens (a missing round counts as none spent), so the
        deltas of all rounds add up to the runs' difference."""
        return _tokens(self.fork) - _tokens(self.original)

    @property
    def cost_delta(self) -> Decimal | None:
        """Fork cost minus original cost; ``None`` when either is unpriced."""
        return usd_change(_cost(self.original), _cost(self.fork))


def _tokens(row: RoundFigures | None) -> int:
    return 0 if row is None else row.total_tokens


def _cost(row: RoundFigures | None) -> Decimal | None:
    return Decimal(0) if row is None else row.cost_usd


COMPARISON_DTYPES: Final[dict[str, str]] = {
    "round": "int64",
    "taken": "bool",
    "original_purpose": "string",
    "fork_purpose": "string",
    "original_tokens": "Int64",
    "fork_tokens": "Int64",
    "tokens_delta": "int64",
    "original_cost_usd": "float64",
    "fork_cost_usd": "float64",
    "cost_delta_usd": "float64",
    "original_tool_calls": "Int64",
    "fork_tool_calls": "Int64",
    "original_outcome": "string",
    "fork_outcome": "string",
}
"""Columns of :meth:`ForkResult.comparison`: a round either run lacks has ``<NA>`` (costs:
NaN) on that side, and counts as nothing spent in the deltas; an unpriced cost is NaN."""


@dataclass(frozen=True, slots=True)
class ForkResult(ComparedRuns):
    """A run forked at ``at_round``, next to the original it was taken from
    (``token_delta`` and ``cost_delta`` are the fork's figures minus the original's)."""

    at_round: int
    source: SourceKind
    config: AgentConfig
    """The fork's config, as given (or as the source recorded it)."""
    run_config: AgentConfig
    """What the fork's own run was given: the config with what remains at ``at_round``
    of its round cap and token budget."""
    prefix: tuple[BaseMessage, ...] = field(repr=False)
    """The conversation the fork's own run started from."""
    taken: Usage
    """What the rounds before ``at_round`` spent, from the source."""
    original: RunFigures
    forked: RunFigures
    """The whole forked run: the rounds taken plus the fork's own run."""
    original_rounds: tuple[RoundFigures, ...] = field(repr=False)
    fork_rounds: tuple[RoundFigures, ...] = field(repr=False)
    """The rounds taken (``taken=True``), then the fork's own, numbered as in the original."""
    result: ToolLoopResult | None = field(default=None, repr=False)
    """The fork's own run, when it finished."""
    error: ToolLoopLabError | None = field(default=None, repr=False)
    """The typed error, when it did not (see ``forked.outcome``)."""

    @property
    def events(self) -> tuple[Event, ...]:
        """The fork's own run's events (its rounds numbered from 1)."""
        if self.result is not None:
            return self.result.events
        return tuple(getattr(self.error, "events", ()))

    @property
    def rounds(self) -> tuple[RoundComparison, ...]:
        """Every round of either run, in order, side by side."""
        original = {r.round: r for r in self.original_rounds}
        forked = {r.round: r for r in self.fork_rounds}
        return tuple(
            RoundComparison(n, original.get(n), forked.get(n))
            for n in sorted(original.keys() | forked.keys())
        )

    def _runs(self) -> tuple[RunFigures, RunFigures]:
        return self.original, self.forked

    def comparison(self) -> pd.DataFrame:
        """One row per round of either run (see :data:`COMPARISON_DTYPES`)."""
        import pandas as pd

        def side(row: RoundFigures | None) -> tuple[Any, ...]:
            if row is None:
                return None, None, float("nan"), None, None
            cost = float("nan") if row.cost_usd is None else float(row.cost_usd)
            return row.purpose, row.total_tokens, cost, row.tool_calls, row.outcome

        cols: dict[str, list[Any]] = {name: [] for name in COMPARISON_DTYPES}
        for pair in self.rounds:
            o_purpose, o_tokens, o_cost, o_calls, o_outcome = side(pair.original)
            f_purpose, f_tokens, f_cost, f_calls, f_outcome = side(pair.fork)
            delta = pair.cost_delta
            values = {
                "round": pair.round,
                "taken": pair.taken,
                "original_purpose": o_purpose,
                "fork_purpose": f_purpose,
                "original_tokens": o_tokens,
                "fork_tokens": f_tokens,
                "tokens_delta": pair.tokens_delta,
                "original_cost_usd": o_cost,
                "fork_cost_usd": f_cost,
                "cost_delta_usd": float("nan") if delta is None else float(delta),
                "original_tool_calls": o_calls,
                "fork_tool_calls": f_calls,
                "original_outcome": o_outcome,
                "fork_outcome": f_outcome,
            }
            for name, value in values.items():
                cols[name].append(value)
        return pd.DataFrame(
            {name: pd.Series(cols[name], dtype=dtype) for name, dtype in COMPARISON_DTYPES.items()}
        )

    @property
    def summary(self) -> str:
        """A plain-text table: the original and the fork, with the change."""
        taken = self.at_round - 1
        head = f"Fork at round {self.at_round} of {_SOURCE_TEXT[self.source]}"
        head += f" ({taken} round{'s' if taken != 1 else ''} taken), {config_text(self.config)}:"
        lines = [head, *comparison_lines(("original", "fork"), self.original, self.forked)]
        if self.forked.detail == "beyond_recording":
            lines.append("* The fork needed a reply beyond its recording; figures are up to there.")
        elif self.error is not None:
            text = str(self.error).splitlines()[0] if str(self.error) else ""
            lines.append(f"* The fork stopped: {type(self.error).__name__}: {text}")
        return "\n".join(lines)


# -- reading a source -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Taken:
    """What a source says about itself and about the rounds before ``at_round``."""

    kind: SourceKind
    prefix: tuple[BaseMessage, ...]
    taken: Usage
    rounds: tuple[RoundFigures, ...]
    figures: RunFigures
    started: LoopStarted | None = None
    at: ModelCallStarted | None = None
    """The event of the call the fork makes again (events and traces only)."""


def _bad_round(at_round: int, available: int) -> ConfigurationError:
    where = f"rounds 1 to {available}" if available else "no round"
    return ConfigurationError(
        f"cannot fork at round {at_round}: the source has {where}", field="at_round"
    )


def _read(source: Any, at_round: int, run_id: str | None, prices: PriceTable | None) -> _Taken:
    if isinstance(at_round, bool) or not isinstance(at_round, int) or at_round < 1:
        raise ConfigurationError(
            f"at_round must be a round number (1, 2, ...), got {at_round!r}", field="at_round"
        )
    if isinstance(source, ToolLoopResult):
        return _from_events(source.events, at_round, "result", run_id, source.messages)
    if isinstance(source, Recording):
        return _from_recording(source, at_round, prices)
    if isinstance(source, TraceRead):
        return _from_trace(source, at_round, run_id)
    if isinstance(source, (str, os.PathLike)):
        if _is_recording(Path(source)):
            return _from_recording(Recording.from_file(source), at_round, prices)
        return _from_trace(read_trace(source), at_round, run_id)
    if isinstance(source, Sequence) and all(isinstance(e, _EVENT_CLASSES) for e in source):
        return _from_events(tuple(source), at_round, "events", run_id)
    raise ConfigurationError(
        "fork needs a ToolLoopResult, its events, a trace or a recording (a path or the "
        f"loaded object), not {type(source).__name__}",
        field="source",
    )


def _is_recording(path: Path) -> bool:
    """A recording's lines name their format; a trace's lines are events."""
    try:
        with path.open("rb") as handle:
            first = handle.readline()
    except OSError:
        return False  # read_trace reports the missing file as a TraceError
    try:
        data = load_line(first)
    except ValueError:  # not JSON, or nested too deep: read_trace reports it
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def _run_events(
    events: Sequence[Event], run_id: str | None, where: str = "the source"
) -> tuple[Event, ...]:
    """The events of one run, by the one rule (:func:`~toolloop_lab.events.select_run`):
    ``run_id``'s, else the newest top-level run."""
    if not events:
        raise ConfigurationError("the source holds no events", field="source")
    return select_run(events, run_id, where=where)


def _from_events(
    events: Sequence[Event],
    at_round: int,
    kind: SourceKind,
    run_id: str | None,
    messages: Sequence[BaseMessage] | None = None,
) -> _Taken:
    run = _run_events(events, run_id)
    carried: list[Any] = []
    appended = 0
    target: ModelCallStarted | None = None
    available = 0
    for event in run:
        if (
            isinstance(event, Intervention)
            and event.round == at_round
            and event.stage == "model_call"
            and event.action == "append_message"
        ):
            appended += 1
        if not isinstance(event, ModelCallStarted) or event.purpose == "pruning":
            continue
        available = max(available, event.round)
        if event.round == at_round:
            target = event
            break
        carried.extend(event.messages)
    if target is None:
        raise _bad_round(at_round, available)
    own = list(target.messages)
    if target.purpose == _SYNTHESIS:  # the synthesis prompt, and what was added after it
        own = own[: len(own) - appended - 1]
    carried.extend(own)
    if messages is not None:
        prefix = tuple(messages[: len(carried)])
    else:
        prefix = tuple(message_from_dict(d) for d in thaw(carried))
    view = RunView.from_events(run)
    figures = RunFigures.of_view(view)
    rows = _rows_of_view(view, figures.outcome)
    taken = Usage()
    for row in rows:
        if row.round < at_round:
            taken = taken + row.usage
    started = view.started
    return _Taken(kind, prefix, taken, rows, figures, started, target)


def _from_trace(trace: TraceRead, at_round: int, run_id: str | None) -> _Taken:
    """A trace's run, refused when the rounds taken touch a line the reader skipped: the
    fork would start from a conversation that lacks what that line held."""
    run = _run_events(trace.events, run_id, repr(str(trace.path)))
    try:
        taken = _from_events(run, at_round, "trace", run[0].run_id)
    except ConfigurationError as exc:
        lines = _skipped_lines(trace, run, None) if exc.field == "at_round" else ()
        if lines:  # the round asked for may be on one of them
            raise _damaged(trace, at_round, lines) from exc
        raise
    lines = _skipped_lines(trace, run, taken.at)
    if lines:
        raise _damaged(trace, at_round, lines)
    return taken


def _skipped_lines(
    trace: TraceRead, run: Sequence[Event], target: ModelCallStarted | None
) -> tuple[int, ...]:
    """The skipped lines from the run's start to the fork's call (to the end without
    one) that may be the run's: those naming it, and those naming no run at all."""
    if not trace.skipped:
        return ()
    known = len(trace.lines) == len(trace.events)
    where = {id(e): n for e, n in zip(trace.events, trace.lines, strict=True)} if known else {}
    start = next((where.get(id(e), 0) for e in run if isinstance(e, LoopStarted)), 0)
    end = where.get(id(target), math.inf) if target is not None else math.inf
    wanted = run[0].run_id
    return tuple(
        s.number for s in trace.skipped if start < s.number < end and s.run_id in (None, wanted)
    )


def _damaged(trace: TraceRead, at_round: int, lines: Sequence[int]) -> TraceError:
    named = ", ".join(str(n) for n in lines)
    reasons = {s.number: s.reason for s in trace.skipped}
    return TraceError(
        f"cannot fork at round {at_round} of {str(trace.path)!r}: the rounds taken need "
        f"line{'s' if len(lines) > 1 else ''} {named}, which could not be read "
        f"({reasons[lines[0]]}); a fork from there would start from a conversation that "
        "lacks them",
        lines=lines,
    )


def _rows_of_view(
    view: RunView, outcome: Outcome, *, offset: int = 0, taken: bool = False
) -> tuple[RoundFigures, ...]:
    rows = [r for r in view.rounds if r.number > 0]
    out = []
    for i, row in enumerate(rows):
        last = i == len(rows) - 1
        out.append(
            RoundFigures(
                round=row.number + offset,
                purpose=row.purpose,
                usage=row.usage + row.pruning_usage,
                tool_calls=len(row.tools),
                tool_errors=sum(1 for t in row.tools if t.status == "error"),
                outcome=outcome if last else "tools",
                taken=taken,
            )
        )
    return tuple(out)


def _from_recording(rec: Recording, at_round: int, prices: PriceTable | None) -> _Taken:
    figures = RunFigures.of_recording(rec, prices)
    status = {  # every tool result the recorded requests carried, by call id
        m.tool_call_id: m.status
        for call in rec.calls
        for m in call.request
        if isinstance(m, ToolMessage)
    }
    rows: list[RoundFigures] = []
    target: int | None = None
    number = 0
    for index, call in enumerate(rec.calls):
        purpose: Literal["round", "synthesis"] = "round" if call.tools_bound else "synthesis"
        number += 1
        if number == at_round and target is None:
            target = index
        reply = call.response
        ids = [c.get("id") for c in (*reply.tool_calls, *reply.invalid_tool_calls)] if reply else []
        last = index == len(rec.calls) - 1
        rows.append(
            RoundFigures(
                round=number,
                purpose=purpose,
                usage=call.usage(prices),
                tool_calls=len(ids),
                tool_errors=sum(1 for i in ids if status.get(str(i)) == "error"),
                outcome=figures.outcome if last else "tools",
            )
        )
    if target is None:
        raise _bad_round(at_round, number)
    request = list(rec.calls[target].request)
    if not rec.calls[target].tools_bound:  # synthesis: drop its prompt and what followed it
        while request and isinstance(request[-1], HumanMessage):
            request.pop()
    taken = Usage()
    for call in rec.calls[:target]:
        taken = taken + call.usage(prices)
    return _Taken("recording", tuple(request), taken, tuple(rows), figures)


_EVENT_CLASSES: Final = tuple(EVENT_TYPES.values())


# -- what the fork's own run is given ---------------------------------------------------


def _percent_for(limit: int, window: int) -> float:
    """The ``token_budget_percent`` whose budget over ``window`` is exactly ``limit``
    (the plain quotient when it rounds right, else the middle of the limit's interval)."""
    for percent in (limit * 100 / window, min(100.0, (limit + 0.5) * 100 / window)):
        if 0 < percent <= 100 and int(window * percent / 100) == limit:
            return percent
    raise ConfigurationError(  # pragma: no cover - float arithmetic guard
        f"no percent gives a token budget of {limit} in a {window}-token window",
        field="token_budget_percent",
    )


def _derived_config(started: LoopStarted | None) -> AgentConfig:
    """The config a source recorded, as far as it recorded one (events only)."""
    if started is None:
        return AgentConfig()
    base = AgentConfig()
    fields: dict[str, Any] = {"prune_tools": tuple(started.prune_tools)}
    if started.max_rounds is not None:
        fields["tool_max_rounds"] = started.max_rounds
    if started.context_window is not None:
        fields["context_window"] = started.context_window
        if started.token_budget is not None:
            fields["token_budget_percent"] = _percent_for(
                started.token_budget, started.context_window
            )
    return dataclasses.replace(base, **fields)


def _remaining(
    config: AgentConfig, model: BaseChatModel, at_round: int, taken: Usage
) -> AgentConfig:
    """``config`` with what remains of its round cap and token budget after the rounds
    taken; refuses a fork the whole run could never have reached."""
    done = at_round - 1
    if done == 0:
        return config
    left = config.tool_max_rounds - done
    if left < 1:
        raise ConfigurationError(
            f"the round cap is {config.tool_max_rounds}, so a run never reaches a tool round "
            f"{at_round}: raise tool_max_rounds to fork there",
            field="tool_max_rounds",
        )
    changes: dict[str, Any] = {"tool_max_rounds": left}
    budget = resolve_token_budget(config.token_budget_percent, config.context_window, model)
    if budget is not None and taken.total_tokens > 0:
        tokens = budget.limit - taken.total_tokens
        if tokens < 0:  # the budget tripped before at_round: the run synthesised there
            raise ConfigurationError(
                f"the rounds before round {at_round} spent {taken.total_tokens:,} tokens of a "
                f"{budget.limit:,}-token budget: raise token_budget_percent to fork there",
                field="token_budget_percent",
            )
        window, _source = resolve_context_window(config.context_window, model)
        changes["context_window"] = window
        changes["token_budget_percent"] = _percent_for(tokens, window)
    return dataclasses.replace(config, **changes)


# -- the fork ---------------------------------------------------------------------------


def _from_source(read: Callable[[_Taken], T]) -> Derived[Fork, T]:
    """What the fork's source says, read on every access."""
    return Derived(lambda fork: read(fork._taken))


def _from_agent(read: Callable[[LLMAgent], T]) -> Derived[Fork, T]:
    """What the agent of the fork's own run has, read on every access."""
    return Derived(lambda fork: read(fork.agent))


class Fork:
    """A fork checked and ready to run (see :func:`prepare_fork`).

    It has the agent API a debugger drives (``observers``, ``subscribe``,
    ``add_pause_hook``, ``arun``): observers and pause hooks go to the fork's own run.
    """

    def __init__(self, taken: _Taken, at_round: int, config: AgentConfig, agent: LLMAgent) -> None:
        self._taken = taken
        self.at_round = at_round
        self.config = config
        """The fork's config, as given (or as the source recorded it)."""
        self.agent = agent
        """The agent of the fork's own run (its config is :attr:`run_config`)."""

    def __repr__(self) -> str:
        return (
            f"Fork(at_round={self.at_round}, source={self.source!r}, "
            f"prefix={len(self.prefix)} messages)"
        )

    source = _from_source(lambda taken: taken.kind)
    """What the fork was taken from."""
    prefix = _from_source(lambda taken: taken.prefix)
    """The conversation the fork's own run starts from."""
    taken = _from_source(lambda taken: taken.taken)
    """What the rounds before ``at_round`` spent, from the source."""
    original = _from_source(lambda taken: taken.figures)
    """The source's own run, as its figures."""
    original_rounds = _from_source(lambda taken: taken.rounds)
    """The source's rounds."""
    run_config = _from_agent(lambda agent: agent.config)
    """The config of the fork's own run: :attr:`config` less what the rounds taken used."""

    # the agent API a debugger drives
    observers = _from_agent(lambda agent: agent.observers)
    """The observers of the fork's own run."""

    def subscribe(self, callback: Observer) -> Callable[[], None]:
        """Add an observer of the fork's own run; returns its remover."""
        return self.agent.subscribe(callback)

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]:
        """Add a pause hook to the fork's own run; returns its remover."""
        return self.agent.add_pause_hook(hook)

    async def arun(self, added: str | Sequence[Any] = ()) -> ForkResult:
        """Run the fork; ``added`` messages (a string is a user message) follow the
        prefix, before the fork's first call. A bad config raises as ``LLMAgent`` does,
        and so does a USD budget in force when the rounds taken are unpriced (what remains
        of it is unknown); every other stop is reported in the result (``forked.outcome``,
        ``error``); cancellation propagates."""
        extra = [added] if isinstance(added, str) else list(added)
        messages = [*self.prefix, *convert_to_messages(extra)]
        budget = current_usd_budget()
        if budget is not None and self.taken.cost_usd is None:
            raise unpriced_error(None)  # what the rounds taken cost is unknown: no cap holds
        try:
            if budget is None:
                return self._result(await self.agent.arun(messages))
            left = max(budget.limit_usd - (self.taken.cost_usd or Decimal(0)), Decimal(0))
            with usd_budget(left, prices=budget.prices):
                return self._result(await self.agent.arun(messages))
        except ToolLoopError as exc:
            if isinstance(exc.cause, ConfigurationError):
                raise
            return self._result(None, exc)
        except ExecutionError as exc:
            return self._result(None, exc)

    def run(self, added: str | Sequence[Any] = ()) -> ForkResult:
        """Synchronous :meth:`arun` (works in a notebook cell too)."""
        return run_sync(lambda: self.arun(added), caller_context())

    def _result(
        self,
        result: ToolLoopResult | None,
        error: ToolLoopError | ExecutionError | None = None,
    ) -> ForkResult:
        taken = self._taken
        offset = self.at_round - 1
        if result is not None:
            events: tuple[Event, ...] = result.events
            own = RunFigures.of_result(result)
            spent = result.usage
        else:
            assert error is not None
            events = error.events
            own = RunFigures.of_error(error)
            spent = error_spend(error)
        forked = own.with_spend(taken.taken + spent, offset + own.rounds)
        before = tuple(
            dataclasses.replace(r, taken=True) for r in taken.rounds if r.round < self.at_round
        )
        mine = _rows_of_view(RunView.from_events(events), own.outcome, offset=offset)
        return ForkResult(
            at_round=self.at_round,
            source=taken.kind,
            config=self.config,
            run_config=self.run_config,
            prefix=taken.prefix,
            taken=taken.taken,
            original=taken.figures,
            forked=forked,
            original_rounds=taken.rounds,
            fork_rounds=before + mine,
            result=result,
            error=error,
        )


def prepare_fork(
    source: ForkSource,
    at_round: int,
    *,
    model: BaseChatModel,
    tools: Iterable[BaseTool],
    config: AgentConfig | None = None,
    pruning_model: BaseChatModel | None = None,
    observers: Iterable[Observer] = (),
    pause_hooks: Iterable[PauseHook] = (),
    prices: Mapping[str, TokenPrice] | None = None,
    run_id: str | None = None,
) -> Fork:
    """Read ``source`` and check the fork, without running anything (see :func:`fork`).

    Raises :class:`~toolloop_lab.errors.ConfigurationError` naming the field for a round
    the source does not have (``at_round``), a config the run could never have reached
    that round under (``tool_max_rounds``, ``token_budget_percent``) or a bad config;
    a missing or unreadable file raises the trace's or the recording's own error, and so
    does a trace whose rounds taken touch lines :func:`read_trace` had to skip
    (:class:`~toolloop_lab.errors.TraceError`, its ``lines`` naming them).
    """
    merged = {**(prices or {}), **(current_prices() or {})} or None
    taken = _read(source, at_round, run_id, merged)
    chosen = (config if config is not None else _derived_config(taken.started)).validated()
    run_config = _remaining(chosen, model, at_round, taken.taken)
    agent = LLMAgent(
        model,
        tools,
        run_config,
        pruning_model=pruning_model,
        observers=observers,
        pause_hooks=pause_hooks,
        prices=prices,
    )
    return Fork(taken, at_round, chosen, agent)


@parameters_of(prepare_fork)
async def afork(*args: Any, **kwargs: Any) -> ForkResult:
    """Fork ``source`` at ``at_round`` (see :func:`fork`, its sync form)."""
    return await prepare_fork(*args, **kwargs).arun()


@parameters_of(prepare_fork)
def fork(*args: Any, **kwargs: Any) -> ForkResult:
    """Re-run ``source`` from round ``at_round`` on ``model``; compare with the original.

    ``source`` is a :class:`ToolLoopResult`, its events, a trace or a recording (a path
    or the loaded object); ``run_id`` picks one run of a trace holding several (default:
    the newest top-level run, as everywhere: :func:`~toolloop_lab.events.select_run`; a
    run the source lacks raises :class:`~toolloop_lab.errors.UnknownRunError`). Rounds
    before ``at_round`` are taken from the source without any model or tool call; from
    ``at_round`` on, ``model`` runs (live, scripted or a replay) with ``tools``, under
    ``config`` (default: the config the source recorded: round cap, context window, token
    budget, pruned tools; for a recording the default config). ``observers`` and
    ``pause_hooks`` watch and hold the fork's own run, so it can pause for edits. Works in
    a notebook cell too; :func:`afork` is the async form.
    """
    return prepare_fork(*args, **kwargs).run()
