"""Which run a tool runs for: a run a tool starts (a sub-agent) is that call's child.

A dispatch names the run whose calls it runs (:class:`RunCaller`); each tool then runs in a
copy of the context that names its call (:func:`caller_context`), so an ``LLMAgent`` started
inside it records the run and the call as its parent (:func:`tool_caller`) and feeds the
calling run's observers too: whatever watches the parent (a debugger, a trace) sees its
nested runs with no wiring by the user.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from toolloop_lab.events import Observer


@dataclass(frozen=True, slots=True)
class ToolCaller:
    """The run and the tool call a tool is running for: a run the tool starts (a
    sub-agent) records them as its parent, so every reader can tell it from a top-level
    run (:func:`~toolloop_lab.events.select_run`)."""

    run_id: str
    tool_call_id: str
    observers: tuple[Observer, ...] = ()
    """The calling run's observers: a sub-agent's run feeds them too, so whatever watches
    the parent (a debugger, a trace) sees its nested runs with no wiring by the user."""


@dataclass(frozen=True, slots=True)
class RunCaller:
    """The run whose calls a dispatch runs (``dispatch(..., caller=)``), and its observers,
    which runs the tools start inherit."""

    run_id: str
    observers: tuple[Observer, ...] = ()


_CALLER: contextvars.ContextVar[ToolCaller | None] = contextvars.ContextVar(
    "toolloop_lab_tool_caller", default=None
)


def tool_caller() -> ToolCaller | None:
    """The tool call this code runs inside, if it runs inside one a loop dispatched."""
    return _CALLER.get()


def caller_context(caller: str | RunCaller | None, call_id: str) -> contextvars.Context | None:
    """The context a tool runs in: a copy of ours that names the call it runs for (so a
    sub-agent it starts knows its parent), or ours as is when no run is named."""
    if caller is None:
        return None
    run = RunCaller(caller) if isinstance(caller, str) else caller
    context = contextvars.copy_context()
    context.run(_CALLER.set, ToolCaller(run.run_id, call_id, run.observers))
    return context
