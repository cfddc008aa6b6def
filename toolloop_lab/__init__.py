"""toolloop_lab: see, live in the notebook, what an LLM agent's tool loop does.

The core loop imports no UI, pandas, matplotlib or jsonschema; the widget, the scenario lab
and the recording models are loaded on first use of their names (``LoopDebugger`` is a
stand-in whose widget library loads when it is first called or asked about).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolloop_lab._engine.agent import AgentConfig, LLMAgent, ToolLoopResult
from toolloop_lab._models.scripted import ScriptedChatModel
from toolloop_lab._spend.budget import usd_budget
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.deferred import deferred_class as _deferred_class
from toolloop_lab._support.lazy import lazy_getattr as _lazy_getattr
from toolloop_lab.errors import (
    ConfigurationError,
    ExecutionError,
    NoPauseError,
    PauseTimeoutError,
    RunStopped,
    ScriptError,
    TimeLimitError,
    ToolLoopError,
    ToolLoopLabError,
)

if TYPE_CHECKING:
    from toolloop_lab._replay.chat_models import RecordingChatModel, ReplayChatModel
    from toolloop_lab._replay.compare import compare
    from toolloop_lab._replay.fork import fork
    from toolloop_lab._replay.whatif import WhatIfResult, what_if
    from toolloop_lab._widget import LoopDebugger
    from toolloop_lab.lab import LabResults, Scenario, arun_scenarios, catalog, run_scenarios
else:
    # ``from toolloop_lab import LoopDebugger`` loads no widget library: the class is a
    # stand-in that loads the widget (``toolloop_lab._widget.LoopDebugger``) on first use
    LoopDebugger = _deferred_class("toolloop_lab._widget.debugger", "LoopDebugger", home=__name__)

__all__ = [
    "AgentConfig",
    "ConfigurationError",
    "ExecutionError",
    "LLMAgent",
    "LabResults",
    "LoopDebugger",
    "NoPauseError",
    "PauseTimeoutError",
    "RecordingChatModel",
    "ReplayChatModel",
    "RunStopped",
    "Scenario",
    "ScriptError",
    "ScriptedChatModel",
    "TimeLimitError",
    "TokenPrice",
    "ToolLoopError",
    "ToolLoopLabError",
    "ToolLoopResult",
    "Usage",
    "WhatIfResult",
    "arun_scenarios",
    "catalog",
    "compare",
    "fork",
    "run_scenarios",
    "usd_budget",
    "what_if",
]

_LAZY = {
    "LabResults": "toolloop_lab.lab",
    "Scenario": "toolloop_lab.lab",
    "arun_scenarios": "toolloop_lab.lab",
    "catalog": "toolloop_lab.lab",
    "run_scenarios": "toolloop_lab.lab",
    "RecordingChatModel": "toolloop_lab._replay.chat_models",
    "ReplayChatModel": "toolloop_lab._replay.chat_models",
    "WhatIfResult": "toolloop_lab._replay.whatif",
    "what_if": "toolloop_lab._replay.whatif",
    "fork": "toolloop_lab._replay.fork",
    "compare": "toolloop_lab._replay.compare",
}


__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
