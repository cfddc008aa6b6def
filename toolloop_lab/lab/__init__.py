"""The scenario lab: run many scenarios, then read their spend as frames, plots and a report.

A :class:`Scenario` is a picklable spec (a model, tools, a config, one or more user
:class:`Turn`\\ s); :func:`run_scenarios` (:func:`arun_scenarios`, on an executor, or
:func:`run_scenarios_on_dask` on a Dask cluster) runs many and returns :class:`LabResults`:
one :class:`ScenarioRun` each, pandas frames, plots, an HTML report, a JSONL save.
A sweep may run each scenario under several :class:`Variant`\\ s (``variants=``) and
``repeats`` times, judge each run by the scenario's ``checks``, and say which variants are
cheapest at the same pass rate (``LabResults.frontier()``); :func:`compare_sweeps` lines
two sweeps up run by run (:class:`SweepComparison`, regressions first).
:func:`catalog` is a set of built-in scenarios on scripted models. The core loop never
imports this package, and this package never imports the widget; Dask is imported only
when a sweep runs on it.
"""

from __future__ import annotations

from toolloop_lab.lab._builtin_scenarios import catalog
from toolloop_lab.lab._compare import SweepComparison, compare_sweeps
from toolloop_lab.lab._dask import run_scenarios_on_dask
from toolloop_lab.lab._frames import VOLATILE_COLUMNS, drop_volatile
from toolloop_lab.lab._record import ScenarioRun
from toolloop_lab.lab._results import LabResults
from toolloop_lab.lab._runner import arun_scenarios, run_scenarios
from toolloop_lab.lab._scenario import (
    Reply,
    Scenario,
    ScriptedModel,
    ScriptedTurns,
    ToolCallSpec,
    Turn,
    sample_data_dir,
)
from toolloop_lab.lab._variants import Variant

__all__ = [
    "VOLATILE_COLUMNS",
    "LabResults",
    "Reply",
    "Scenario",
    "ScenarioRun",
    "ScriptedModel",
    "ScriptedTurns",
    "SweepComparison",
    "ToolCallSpec",
    "Turn",
    "Variant",
    "arun_scenarios",
    "catalog",
    "compare_sweeps",
    "drop_volatile",
    "run_scenarios",
    "run_scenarios_on_dask",
    "sample_data_dir",
]
