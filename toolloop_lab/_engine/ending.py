"""How a run that raised ends: every open call answered, one ``loop_failure``, and the error
its caller gets, with the partial counts on it.

``LLMAgent``'s guard and ``ToolLoopMiddleware`` (a LangChain ``create_agent`` run) end a run
the same way, here: a budget's ``ExecutionError`` keeps its type and gets the partial
counts; a stop a person asked for becomes :class:`~toolloop_lab.errors.RunStopped`; a time
limit that ran out leaves its cancellation as it is (the run ended timed out); any other
``Exception`` becomes a :class:`~toolloop_lab.errors.ToolLoopError` carrying it; an
interrupt, ``SystemExit`` or a foreign ``BaseException`` propagates unwrapped. The run's
last event says which, so every view reads the same ending.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from toolloop_lab._engine.run_state import RunState
from toolloop_lab._engine.stopping import claim_stop, time_limit_reached
from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._stream import failure_fields
from toolloop_lab._support.errortext import explain
from toolloop_lab._tools.dispatcher import skipped_outcomes, stopped_outcome
from toolloop_lab.errors import ExecutionError, RunStopped, ToolLoopError
from toolloop_lab.events import LoopFailed


@dataclass(frozen=True, slots=True)
class Running:
    """A tool call whose tool was running when the run ended: it ran, for as long as it
    had, and may have had effects (its answer says so)."""

    name: str
    args: Mapping[str, Any]
    started: float
    """When it began (``time.perf_counter()``)."""
    in_thread: bool = False
    """Its tool runs in a worker thread, which nothing can stop."""


def stopped_error(run: RunState) -> RunStopped:
    """What a run a person stopped raises (see :mod:`.stopping`)."""
    done = run.rounds_done
    where = f"in round {run.round}" if run.round else "before its first round"
    rounds = (
        "no round" if done == 0 else "1 round" if done == 1 else f"{format_tokens(done)} rounds"
    )
    usage = run.usage
    return RunStopped(
        f"the run was stopped {where} ({rounds} done; {format_tokens(usage.input_tokens)} "
        f"input and {format_tokens(usage.output_tokens)} output tokens, "
        f"{format_usd(usage.cost_usd)}): its partial counts are on this error and in the "
        "debugger",
        **run.partial(),
    )


def end_run(
    run: RunState,
    exc: BaseException,
    *,
    stopped: bool | None = None,
    running: Mapping[str, Running] | None = None,
) -> BaseException:
    """End ``run``, which raised ``exc``: answer its open calls, emit its ``LoopFailed``,
    and return what its caller raises (``exc`` itself, or the typed error made of it).

    ``stopped`` says whether a cancellation is a person's stop (default: the stop marked
    on the current task, :func:`~.stopping.claim_stop`); ``running`` names the calls whose
    tools were running (a stop answers them as stopped while running, not as not run)."""
    if isinstance(exc, ExecutionError):
        _close(run, exc, exc.reason, f"not run: {exc}", cancelled=False, running=running)
        exc.set_partial(**run.partial())
        return exc
    if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
        ran_out = time_limit_reached() if isinstance(exc, asyncio.CancelledError) else None
        if ran_out is not None:  # a time limit around the run: it timed out, no stop
            _close(run, ran_out, "timeout", f"not run: {ran_out}", cancelled=False, running=running)
            return exc
        text = "the loop was stopped before this call ran"
        _close(run, exc, "cancelled", text, cancelled=True, running=running)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
        if stopped if stopped is not None else claim_stop(run.run_id):
            return stopped_error(run)
        return exc
    if isinstance(exc, Exception):
        text = "not run: the loop failed"
        _close(run, exc, "loop_failed", text, cancelled=False, running=running)
        return ToolLoopError(
            f"tool loop failed in round {run.round}: {explain(exc)}",
            cause=exc,
            **run.partial(),
        )
    # Not an Exception, yet not an interrupt either (a library's own control flow, a
    # tool's custom abort): it propagates as it is, but the run still ends with every call
    # answered and a final event.
    text = f"not run: the loop was stopped by {type(exc).__name__}"
    _close(run, exc, "loop_failed", text, cancelled=False, running=running)
    return exc


def _close(
    run: RunState,
    exc: BaseException,
    reason: str,
    text: str,
    *,
    cancelled: bool,
    running: Mapping[str, Running] | None,
) -> None:
    """Close the calls a stop left open, then emit what its MCP servers logged between
    its calls and the run's ``LoopFailed``."""
    close_open_calls(run, reason, text, running)
    run.emit_server_logs()
    kind = exc.kind if isinstance(exc, ExecutionError) else None
    why = exc.reason if isinstance(exc, ExecutionError) else None
    run.emit(
        LoopFailed,
        **failure_fields(exc, kind=kind, reason=why, cancelled=cancelled),
        rounds=run.rounds_done,
        usage=run.usage,
        any_invocation_made=run.any_invocation,
        messages=run.unsent_messages(),
        partial_text=run.partial_text,
    )


def close_open_calls(
    run: RunState, reason: str, text: str, running: Mapping[str, Running] | None = None
) -> None:
    """Answer tool calls left open by a stop, so the transcript stays resumable: a call
    that finished keeps its real result, one whose tool was running is answered as
    stopped while running, the rest as not run."""
    answered = run.answered()
    last = next((m for m in reversed(run.messages) if isinstance(m, AIMessage)), None)
    if last is None:
        return
    now = time.perf_counter()
    for skipped in skipped_outcomes(last, reason, text):
        call_id = skipped.message.tool_call_id
        if call_id in answered:
            continue
        outcome = run.finished.get(call_id)
        going = running.get(call_id) if running else None
        if outcome is None and going is not None and reason == "cancelled":
            outcome = stopped_outcome(
                call_id,
                going.name,
                going.args,
                now - going.started,
                in_thread=going.in_thread,
                ended=False,
            )
        outcome = outcome or skipped
        run.messages.append(outcome.message)
        if not run.reported(call_id):
            run.emit_dispatch(outcome)
