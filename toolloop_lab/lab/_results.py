"""``LabResults``: a sweep's runs as pandas frames, plots, a report and a JSONL file.

It holds only the :class:`ScenarioRun` records; frames are folded from their events on
first use and handed out as copies, so a caller editing a frame never changes another
reader's view. Saving writes the records and every event as JSONL (one header line, then
per scenario a ``run`` line, with its turns' user messages, followed by its ``event`` lines,
every turn's in order); loading rebuilds the same records, so every frame, plot and report
of a loaded sweep equals the original's (lines are written and read by
:mod:`toolloop_lab._support.jsonl`, so any text, surrogate halves included, reads back exactly).
Saves written before turns load as one-turn scenarios.
"""

from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, Literal

import pandas as pd
from pydantic import BeforeValidator, Field, TypeAdapter, ValidationError

from toolloop_lab._spend.usage import format_usd
from toolloop_lab._support.fields import (
    Count,
    Flag,
    JsonObject,
    PositiveInt,
    Seconds,
    Text,
    validation_text,
)
from toolloop_lab._support.jsonl import Line, dump_line, load_line, read_lines
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._support.words import estimated
from toolloop_lab.errors import TraceError
from toolloop_lab.events import Event, Outcome, event_from_dict
from toolloop_lab.lab._frames import (
    by_tool_frame,
    events_frame,
    rounds_frame,
    runs_frame,
    spend_table,
    tools_frame,
    turn_table,
    turns_frame,
)
from toolloop_lab.lab._frontier import frontier_frame
from toolloop_lab.lab._record import ScenarioRun

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FORMAT: Final = "toolloop_lab.lab/1"
"""The header's ``format`` value; a file without it is not a saved lab."""


@dataclass(frozen=True)
class LabResults:
    """What a sweep produced, in the order the scenarios were given."""

    records: tuple[ScenarioRun, ...]
    _frames: dict[str, pd.DataFrame] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.records, key=lambda r: r.index))
        object.__setattr__(self, "records", ordered)

    # -- how a notebook shows it --------------------------------------------------------
    def __repr__(self) -> str:
        """One line: a cell ending in a sweep must not print every event it holds."""
        return f"<LabResults: {self._summary()}>"

    def _summary(self) -> str:
        runs = self._frame("runs")
        outcomes = runs["outcome"].astype(str).value_counts(sort=False)
        ended = ", ".join(f"{count} {outcome}" for outcome, count in outcomes.items() if count)
        cost = format_usd(float(runs["cost_usd"].fillna(0).sum()))
        unknown = "" if bool(runs["cost_known"].all()) else " + unpriced calls"
        scenarios = f"{len(runs)} scenario{'s' if len(runs) != 1 else ''}"
        tokens = int(runs["total_tokens"].sum())
        note = estimated(bool(runs["usage_estimated"].any()))
        said = f" ({note})" if note else ""
        return f"{scenarios} ({ended or 'none'}), {tokens:,} tokens{said}, {cost}{unknown}"

    def _repr_html_(self) -> str:
        """The summary line and one row per scenario (every value escaped by pandas)."""
        columns = [
            "scenario",
            "outcome",
            "tool_rounds",
            "model_calls",
            "total_tokens",
            "cost_usd",
            "error",
        ]
        table = self._frame("runs")[columns].to_html(index=False, escape=True, na_rep="")
        return f"<p>{html.escape(self._summary())}</p>{table}"

    # -- access -----------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[ScenarioRun]:
        return iter(self.records)

    def __getitem__(self, scenario: str) -> ScenarioRun:
        """The record of the scenario with that name."""
        for record in self.records:
            if record.scenario == scenario:
                return record
        raise KeyError(scenario)

    def _frame(self, name: str) -> pd.DataFrame:
        frame = self._frames.get(name)
        if frame is None:
            build = {
                "runs": runs_frame,
                "turns": turns_frame,
                "rounds": rounds_frame,
                "tools": tools_frame,
                "events": events_frame,
            }[name]
            frame = build(self.records)
            self._frames[name] = frame
        return frame.copy()

    @property
    def runs(self) -> pd.DataFrame:
        """One row per scenario: outcome, rounds, tokens, pruning, cost, errors, duration."""
        return self._frame("runs")

    @property
    def turns(self) -> pd.DataFrame:
        """One row per user turn per scenario (turns that never ran included): outcome,
        rounds, tokens, cost, tool calls and errors, the context carried, times."""
        return self._frame("turns")

    @property
    def rounds(self) -> pd.DataFrame:
        """One row per round per turn per scenario: tokens, cost, tool calls, pruning,
        gates, model latency, time to first token, tool time."""
        return self._frame("rounds")

    @property
    def tools(self) -> pd.DataFrame:
        """One row per tool call: status, error reason, when it began, how long it took,
        and what its output really cost: ``carried_tokens`` and ``carried_cost_usd``, its
        tokens in every later model call of its run, each priced at that call's input price
        (estimated counts: a provider reports only a request's total)."""
        return self._frame("tools")

    def by_tool(self) -> pd.DataFrame:
        """The tool calls summed per tool name: calls, errors, what their outputs cost in
        the later calls of their runs (``carried_tokens``, ``carried_cost_usd``), and what
        pruning saved in the same money; dearest first (see
        :data:`~toolloop_lab.lab._frames.BY_TOOL_DTYPES`)."""
        return by_tool_frame(self._frame("tools"))

    @property
    def events(self) -> pd.DataFrame:
        """The raw event stream, one row per event, with the frozen event in ``event``."""
        return self._frame("events")

    def spend_table(self) -> str:
        """The spend per scenario as text, with totals (what ``toolloop-lab demo`` prints)."""
        return spend_table(self._frame("runs"))

    def frontier(self) -> pd.DataFrame:
        """One row per variant: its pass rate with a 95% Wilson interval, mean and total
        cost, tokens and rounds per run, and ``on_frontier``: no other variant costs no
        more and passes at least as often, better on one (see
        :data:`~toolloop_lab.lab._frontier.FRONTIER_DTYPES`)."""
        frame = self._frames.get("frontier")
        if frame is None:
            frame = self._frames["frontier"] = frontier_frame(self._frame("runs"))
        return frame.copy()

    def turn_table(self) -> str:
        """The spend per turn as text, with totals (``toolloop-lab demo --workload files``)."""
        return turn_table(self._frame("turns"))

    # -- plots and report (matplotlib is imported only here) ---------------------------
    def plot_spend(self) -> Figure:
        """Stacked prompt, completion and pruning tokens per scenario."""
        from toolloop_lab.lab._plots import spend_figure

        return spend_figure(self._frame("runs"))

    def plot_cost_per_round(self) -> Figure:
        """USD cost of each round (model call plus pruning), one line per scenario."""
        from toolloop_lab.lab._plots import cost_per_round_figure

        return cost_per_round_figure(self._frame("rounds"))

    def plot_pruning_savings(self) -> Figure:
        """Tokens pruning kept out of the conversation against what pruning spent."""
        from toolloop_lab.lab._plots import pruning_savings_figure

        return pruning_savings_figure(self._frame("runs"))

    def plot_turns(self) -> Figure:
        """Tokens of each turn (model and pruning calls), one line per scenario."""
        from toolloop_lab.lab._plots import turns_figure

        return turns_figure(self._frame("turns"))

    def plot_budget_gates(self) -> Figure:
        """Spend at each budget gate as a share of its limit, round by round."""
        from toolloop_lab.lab._plots import budget_gates_figure

        return budget_gates_figure(self._frame("rounds"))

    def plot_frontier(self) -> Figure:
        """Mean cost per run against pass rate, one labelled point per variant with its
        interval, the frontier drawn as a line."""
        from toolloop_lab.lab._plots import frontier_figure

        return frontier_figure(self.frontier())

    def report_html(self, *, title: str = "toolloop_lab scenario report") -> str:
        """A self-contained HTML report: summary, plots, one timeline per scenario."""
        from toolloop_lab.lab._report import render_report

        return render_report(self.records, self._frame("runs"), self._figures(), title=title)

    def _figures(self) -> list[tuple[str, Figure]]:
        """The report's plots with their captions ("Tokens per turn" when some scenario
        has several turns)."""
        figures = [
            ("Token spend per scenario", self.plot_spend()),
            ("Cost per round", self.plot_cost_per_round()),
            ("Pruning savings", self.plot_pruning_savings()),
            ("Budget gates over rounds", self.plot_budget_gates()),
        ]
        if any(r.planned_turns > 1 for r in self.records):
            figures.insert(1, ("Tokens per turn", self.plot_turns()))
        if any(r.passed is not None for r in self.records):
            figures.insert(0, ("Cost against pass rate", self.plot_frontier()))
        return figures

    def write_report(
        self, path: str | os.PathLike[str], *, title: str = "toolloop_lab scenario report"
    ) -> Path:
        """Write :meth:`report_html` to ``path``; returns the absolute path."""
        target = Path(path).resolve()
        target.write_text(self.report_html(title=title), encoding="utf-8")
        return target

    # -- persistence ------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the sweep as JSONL (see the module doc); returns the absolute path."""
        target = Path(path).resolve()
        tmp = target.with_name(target.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as out:
            out.write(dump_line({"type": "header", "format": FORMAT, "runs": len(self.records)}))
            out.write("\n")
            for record in self.records:
                out.write(dump_line({"type": "run", **record.header()}))
                out.write("\n")
                for event in record.events:
                    out.write(dump_line({"type": "event", "event": event.to_dict()}))
                    out.write("\n")
        tmp.replace(target)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LabResults:
        """Read a file written by :meth:`save`; raises ``TraceError`` on anything else."""
        source = Path(path)
        try:
            lines = read_lines(source).lines
        except OSError as exc:
            raise TraceError(f"cannot read {source}: {exc}") from exc
        if not lines or not isinstance(_parse(source, lines[0], quiet=True), _Header):
            raise TraceError(f"{source} is not a saved toolloop_lab sweep")
        items = [_parse(source, line) for line in lines]
        assert isinstance(items[0], _Header)
        records: list[ScenarioRun] = []
        header: _RunLine | None = None
        events: list[Event] = []
        for item in items[1:]:
            if isinstance(item, _RunLine):
                if header is not None:
                    records.append(header.record(source, tuple(events)))
                header, events = item, []
            elif isinstance(item, _EventLine) and header is not None:
                events.append(item.parsed(source))
            else:
                raise TraceError(f"{source}: an event line before any run line")
        if header is not None:
            records.append(header.record(source, tuple(events)))
        if len(records) != items[0].runs:
            raise TraceError(f"{source}: expected {items[0].runs} runs, found {len(records)}")
        return cls(tuple(records))


_LEGACY_OUTCOMES: Final = {
    "final": "final_answer",
    "budget_exhausted": "token_budget_exhausted",
    "cost_exhausted": "usd_budget_exhausted",
    "error": "failed",
}
"""Outcome names of saves written before the one vocabulary (``events.Outcome``)."""


def _outcome(value: Any) -> Any:
    return _LEGACY_OUTCOMES.get(value, value) if isinstance(value, str) else value


@dataclass(frozen=True, slots=True, kw_only=True)
class _Header:
    format: Literal["toolloop_lab.lab/1"]
    runs: Count
    type: Literal["header"] = "header"


@dataclass(frozen=True, slots=True, kw_only=True)
class _RunLine:
    """A scenario's record without its events (they follow as event lines)."""

    scenario: Text
    index: Count
    tags: tuple[Text, ...] = ()
    description: Text = ""
    model_name: Text | None = None
    outcome: Annotated[Outcome, BeforeValidator(_outcome)]
    error_kind: Text | None = None
    error_reason: Text | None = None
    error_message: Text | None = None
    duration_s: Seconds
    events: Count
    turns: tuple[Text, ...] = ()
    variant: Text | None = None
    repeat: PositiveInt = 1
    passed: Flag | None = None
    failed_checks: tuple[Text, ...] = ()
    type: Literal["run"] = "run"

    def record(self, source: Path, events: tuple[Event, ...]) -> ScenarioRun:
        if len(events) != self.events:
            raise TraceError(
                f"{source}: scenario {self.scenario!r}: expected {self.events} events, "
                f"found {len(events)}"
            )
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(ScenarioRun)}
        return ScenarioRun(**{**fields, "events": events})


@dataclass(frozen=True, slots=True, kw_only=True)
class _EventLine:
    event: JsonObject
    type: Literal["event"] = "event"

    def parsed(self, source: Path) -> Event:
        try:
            return event_from_dict(thaw(self.event))
        except ValidationError as exc:
            raise TraceError(f"{source}: bad event: {validation_text(exc)}") from exc


_LINE: Final[TypeAdapter[_Header | _RunLine | _EventLine]] = TypeAdapter(
    Annotated[_Header | _RunLine | _EventLine, Field(discriminator="type")]
)


def _parse(
    source: Path, line: Line, *, quiet: bool = False
) -> _Header | _RunLine | _EventLine | None:
    """One line of a save; ``quiet`` gives ``None`` for a JSON object that is no line of
    a save (the first line decides whether the file is one at all)."""
    try:
        data = load_line(line.data)  # keeps lone surrogates and surrogate halves exactly
    except ValueError as exc:
        raise TraceError(f"{source}:{line.number}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise TraceError(f"{source}:{line.number}: expected a JSON object")
    try:
        return _LINE.validate_python(data)
    except ValidationError as exc:
        if quiet:
            return None
        raise TraceError(f"{source}:{line.number}: {validation_text(exc)}") from exc
