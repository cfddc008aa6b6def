"""The scenario lab: run many scenarios, then read their spend as frames, plots and a report.

Modules, one job each: :mod:`.scenario` (the picklable spec, one or more user turns),
:mod:`.record` (one run's outcome and events), :mod:`.runner` (sweeps, sync and async),
:mod:`.frames` (pandas), :mod:`.results` (``LabResults``: frames, plots, JSONL),
:mod:`.plots` (matplotlib), :mod:`.report` (HTML), :mod:`.builtin_scenarios`
(``catalog()``) and :mod:`.dask` (sweeps on a Dask cluster; Dask itself is imported only
when that runs). The core loop never imports this package, and this package never imports
the widget.
"""

from __future__ import annotations

from toolloop_lab.lab._builtin_scenarios import catalog
from toolloop_lab.lab._dask import run_scenarios_on_dask
from toolloop_lab.lab._frames import VOLATILE_COLUMNS, drop_volatile
from toolloop_lab.lab._record import OUTCOMES, Outcome, ScenarioRun
from toolloop_lab.lab._results import LabResults
from toolloop_lab.lab._runner import arun_one, arun_scenarios, run_one, run_scenarios
from toolloop_lab.lab._scenario import (
    Reply,
    Scenario,
    ScriptedModel,
    ScriptedTurns,
    ToolCallSpec,
    Turn,
)

__all__ = [
    "OUTCOMES",
    "VOLATILE_COLUMNS",
    "LabResults",
    "Outcome",
    "Reply",
    "Scenario",
    "ScenarioRun",
    "ScriptedModel",
    "ScriptedTurns",
    "ToolCallSpec",
    "Turn",
    "arun_one",
    "arun_scenarios",
    "catalog",
    "drop_volatile",
    "run_one",
    "run_scenarios",
    "run_scenarios_on_dask",
]
