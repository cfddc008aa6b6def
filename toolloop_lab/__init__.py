"""toolloop_lab: see, live in the notebook, what an LLM agent's tool loop does.

Import from here and from the six public modules beside it: :mod:`toolloop_lab.events`
(the event types a run emits and their readers), :mod:`toolloop_lab.errors` (every
exception), :mod:`toolloop_lab.checks` (checks on a run: what it did, spent and answered),
:mod:`toolloop_lab.lab` (scenario sweeps), :mod:`toolloop_lab.mcp` (MCP servers' tools),
:mod:`toolloop_lab.otel` (OpenTelemetry, both ways) and :mod:`toolloop_lab.workloads`
(sample tool backends). Everything else is private.

* the loop: :class:`LLMAgent`, :class:`AgentConfig`, :class:`ToolLoopResult`,
  :func:`usd_budget`, :class:`TokenPrice`, :class:`Usage`;
* chat models: :class:`ScriptedChatModel`, :class:`RecordingChatModel`,
  :class:`ReplayChatModel`, :class:`Recording`;
* the debugger: :class:`LoopDebugger` (an observer: ``LLMAgent(model, tools,
  observers=[dbg])``), :class:`PausePoint`, :class:`RunView`, :class:`RunSummary`;
* traces: :class:`TraceWriter`, :func:`read_trace`, :class:`TraceRead`;
* re-running: :func:`fork`, :func:`prepare_fork`, :func:`what_if`, :func:`compare` (and
  their results and async forms);
* tools: :func:`echo_tool`, :func:`file_read_tool`, :func:`tools_from_schema`;
* agents you already have: :class:`ToolLoopMiddleware` (drive a LangChain ``create_agent``
  agent: ``middleware=[ToolLoopMiddleware(config, observers=[dbg])]``), :func:`watch`
  (watch LangChain and LangGraph runs inside a block) and :class:`EventBridge` (the
  callback handler itself).

The core loop imports no UI, pandas, matplotlib or jsonschema: every name below the eager
ones loads its module on first use, and ``LoopDebugger`` is a stand-in whose widget library
loads when it is first called or asked about.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._models.scripted import ScriptedChatModel
from toolloop_lab._spend.budget import usd_budget
from toolloop_lab._spend.pricing import TokenPrice
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.deferred import deferred_class as _deferred_class
from toolloop_lab._support.lazy import lazy_getattr as _lazy_getattr

if TYPE_CHECKING:
    from toolloop_lab._engine.middleware import ToolLoopMiddleware
    from toolloop_lab._foreign.langchain import EventBridge
    from toolloop_lab._foreign.watch import watch
    from toolloop_lab._replay.chat_models import RecordingChatModel, ReplayChatModel
    from toolloop_lab._replay.compare import RunComparison, compare
    from toolloop_lab._replay.fork import Fork, afork, fork, prepare_fork
    from toolloop_lab._replay.fork.result import ForkResult
    from toolloop_lab._replay.recording_file import Recording
    from toolloop_lab._replay.whatif import WhatIfResult, awhat_if, what_if
    from toolloop_lab._runview import RunSummary, RunView
    from toolloop_lab._tools.builtin import echo_tool, file_read_tool
    from toolloop_lab._tools.schema import tools_from_schema
    from toolloop_lab._trace import TraceRead, TraceWriter, read_trace
    from toolloop_lab._widget.debugger import LoopDebugger
    from toolloop_lab._widget.markdown import to_markdown
else:
    # ``from toolloop_lab import LoopDebugger`` loads no widget library: the class is a
    # stand-in that loads the widget (``toolloop_lab._widget.debugger``) on first use
    LoopDebugger = _deferred_class("toolloop_lab._widget.debugger", "LoopDebugger", home=__name__)

__all__ = [
    "AgentConfig",
    "EventBridge",
    "Fork",
    "ForkResult",
    "LLMAgent",
    "LoopDebugger",
    "PausePoint",
    "Recording",
    "RecordingChatModel",
    "ReplayChatModel",
    "RunComparison",
    "RunSummary",
    "RunView",
    "ScriptedChatModel",
    "TokenPrice",
    "ToolLoopMiddleware",
    "ToolLoopResult",
    "TraceRead",
    "TraceWriter",
    "Usage",
    "WhatIfResult",
    "afork",
    "awhat_if",
    "compare",
    "echo_tool",
    "file_read_tool",
    "fork",
    "prepare_fork",
    "read_trace",
    "to_markdown",
    "tools_from_schema",
    "usd_budget",
    "watch",
    "what_if",
]

_LAZY = {
    "EventBridge": "toolloop_lab._foreign.langchain",
    "watch": "toolloop_lab._foreign.watch",
    "ToolLoopMiddleware": "toolloop_lab._engine.middleware",
    "RecordingChatModel": "toolloop_lab._replay.chat_models",
    "ReplayChatModel": "toolloop_lab._replay.chat_models",
    "Recording": "toolloop_lab._replay.recording_file",
    "RunComparison": "toolloop_lab._replay.compare",
    "compare": "toolloop_lab._replay.compare",
    "Fork": "toolloop_lab._replay.fork",
    "afork": "toolloop_lab._replay.fork",
    "fork": "toolloop_lab._replay.fork",
    "prepare_fork": "toolloop_lab._replay.fork",
    "ForkResult": "toolloop_lab._replay.fork.result",
    "WhatIfResult": "toolloop_lab._replay.whatif",
    "awhat_if": "toolloop_lab._replay.whatif",
    "what_if": "toolloop_lab._replay.whatif",
    "RunSummary": "toolloop_lab._runview",
    "RunView": "toolloop_lab._runview",
    "echo_tool": "toolloop_lab._tools.builtin",
    "file_read_tool": "toolloop_lab._tools.builtin",
    "tools_from_schema": "toolloop_lab._tools.schema",
    "to_markdown": "toolloop_lab._widget.markdown",
    "TraceRead": "toolloop_lab._trace",
    "TraceWriter": "toolloop_lab._trace",
    "read_trace": "toolloop_lab._trace",
}
"""Each name loaded on first use, and the private module that defines it."""

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
