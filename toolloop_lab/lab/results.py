"""``LabResults``: a sweep's runs as pandas frames, plots, a report and a JSONL file.

It holds only the :class:`ScenarioRun` records; frames are folded from their events on
first use and handed out as copies, so a caller editing a frame never changes another
reader's view. Saving writes the records and every event as JSONL (one header line, then
per scenario a ``run`` line followed by its ``event`` lines); loading rebuilds the same
records, so every frame, plot and report of a loaded sweep equals the original's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pandas as pd

from toolloop_lab.errors import TraceError
from toolloop_lab.events import Event, event_from_dict
from toolloop_lab.jsonsafe import dumps
from toolloop_lab.lab.frames import events_frame, rounds_frame, runs_frame, spend_table
from toolloop_lab.lab.record import ScenarioRun

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["FORMAT", "LabResults"]

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
            build = {"runs": runs_frame, "rounds": rounds_frame, "events": events_frame}[name]
            frame = build(self.records)
            self._frames[name] = frame
        return frame.copy()

    @property
    def runs(self) -> pd.DataFrame:
        """One row per scenario: outcome, rounds, tokens, pruning, cost, errors, duration."""
        return self._frame("runs")

    @property
    def rounds(self) -> pd.DataFrame:
        """One row per round per scenario: tokens, cost, tool calls, pruning, gates."""
        return self._frame("rounds")

    @property
    def events(self) -> pd.DataFrame:
        """The raw event stream, one row per event, with the frozen event in ``event``."""
        return self._frame("events")

    def spend_table(self) -> str:
        """The spend per scenario as text, with totals (what ``toolloop-lab demo`` prints)."""
        return spend_table(self._frame("runs"))

    # -- plots and report (matplotlib is imported only here) ---------------------------
    def plot_spend(self) -> Figure:
        """Stacked prompt, completion and pruning tokens per scenario."""
        from toolloop_lab.lab.plots import spend_figure

        return spend_figure(self._frame("runs"))

    def plot_cost_per_round(self) -> Figure:
        """USD cost of each round (model call plus pruning), one line per scenario."""
        from toolloop_lab.lab.plots import cost_per_round_figure

        return cost_per_round_figure(self._frame("rounds"))

    def plot_pruning_savings(self) -> Figure:
        """Tokens pruning kept out of the conversation against what pruning spent."""
        from toolloop_lab.lab.plots import pruning_savings_figure

        return pruning_savings_figure(self._frame("runs"))

    def plot_budget_gates(self) -> Figure:
        """Spend at each budget gate as a share of its limit, round by round."""
        from toolloop_lab.lab.plots import budget_gates_figure

        return budget_gates_figure(self._frame("rounds"))

    def report_html(self, *, title: str = "toolloop_lab scenario report") -> str:
        """A self-contained HTML report: summary, plots, one timeline per scenario."""
        from toolloop_lab.lab.report import render_report

        return render_report(self, title=title)

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
            out.write(dumps({"type": "header", "format": FORMAT, "runs": len(self.records)}))
            out.write("\n")
            for record in self.records:
                out.write(dumps({"type": "run", **record.header()}))
                out.write("\n")
                for event in record.events:
                    out.write(dumps({"type": "event", "event": event.to_dict()}))
                    out.write("\n")
        tmp.replace(target)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LabResults:
        """Read a file written by :meth:`save`; raises ``TraceError`` on anything else."""
        source = Path(path)
        try:
            lines = source.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise TraceError(f"cannot read {source}: {exc}") from exc
        items = [_parse(source, n, line) for n, line in enumerate(lines, 1) if line.strip()]
        if not items or items[0].get("type") != "header" or items[0].get("format") != FORMAT:
            raise TraceError(f"{source} is not a saved toolloop_lab sweep")
        records: list[ScenarioRun] = []
        header: Mapping[str, Any] | None = None
        events: list[Event] = []
        for item in items[1:]:
            if item.get("type") == "run":
                if header is not None:
                    records.append(ScenarioRun.from_header(header, tuple(events)))
                header, events = item, []
            elif item.get("type") == "event" and header is not None:
                events.append(_event(source, item.get("event")))
            else:
                raise TraceError(f"{source}: unexpected line of type {item.get('type')!r}")
        if header is not None:
            records.append(ScenarioRun.from_header(header, tuple(events)))
        if len(records) != items[0].get("runs"):
            raise TraceError(
                f"{source}: expected {items[0].get('runs')} runs, found {len(records)}"
            )
        return cls(tuple(records))


def _parse(source: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{source}:{number}: not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise TraceError(f"{source}:{number}: expected a JSON object")
    return value


def _event(source: Path, data: Any) -> Event:
    if not isinstance(data, dict):
        raise TraceError(f"{source}: an event line holds no event object")
    try:
        return event_from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise TraceError(f"{source}: bad event: {exc}") from exc
