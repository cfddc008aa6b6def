"""Tool dispatch: every tool call ends as exactly one ``ToolMessage``, success or error.

Unknown tools, invalid JSON arguments, wrong argument names, tools that raise (a
``ToolException`` its own ``handle_tool_error`` turns into text included), tools that time
out or cancel themselves and results with no text form all become
``ToolMessage(status="error")`` that the model can read and react to; the loop goes on.
Only ``KeyboardInterrupt``, ``SystemExit`` (and any other ``BaseException`` that is not an
``Exception``) and the loop's own cancellation propagate. A tool that had begun when that
happened still ends as one outcome, handed to ``DispatchHooks.done`` before the stop
propagates: it ran (status ``cancelled``, or the error it raised), for as long as it did.

Each tool runs in its own task, so a per-call timeout holds even against a tool that
swallows cancellation: it is given a short grace period, then left behind (logged) while
the loop goes on. Sync tools run in a worker thread, so a blocking tool never blocks the
event loop.

A tool gets its own deep copy of its arguments, so a tool that changes them can never
reach back into the transcript, the next request or the events. Its result is turned into
text in the tool's own worker right after it returns, before a sibling call can change an
object the tool handed back; a result of content blocks (an MCP tool's: text, images) is
copied there instead, and goes to the model as blocks (:mod:`toolloop_lab._tools.content`).

What a reader opens first comes first: what a dispatch gives back (:class:`DispatchOutcome`),
what it tells the loop as calls start and end (:class:`DispatchHooks`), the tools made ready
once (:class:`ToolBox`), :func:`dispatch` itself and the outcomes of calls answered without
running; then how a round's calls run, how one tool runs, a stop while tools run, and how a
call's ending becomes its outcome. Which run a tool runs for is :mod:`.callers`; a reply's
call ids made unique is :mod:`.call_ids`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import (
    Awaitable,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
    Sequence,
)
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall, ToolMessage
from langchain_core.runnables.config import run_in_executor
from langchain_core.tools import BaseTool, StructuredTool, Tool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ValidationError

from toolloop_lab._support.errortext import error_name, explain
from toolloop_lab._support.fields import validation_text
from toolloop_lab._support.jsonsafe import dumps, frozen_json, is_mapping, thaw
from toolloop_lab._tools.callers import RunCaller, caller_context
from toolloop_lab._tools.content import blocks_of, content_text, is_blocks
from toolloop_lab._tools.servers import LogSlice, ServerSite, site_of
from toolloop_lab.errors import ConfigurationError, ExecutionError, McpServerError
from toolloop_lab.events import ToolStatus

_log = logging.getLogger("toolloop_lab")


STOPPED_TEXT: Final = (
    "the loop was stopped while this call was running: it had started, so it may have "
    "had effects, and its result is unknown"
)
"""What the model reads for a call whose tool was running when the run was stopped."""


@dataclass(frozen=True, slots=True)
class DispatchOutcome:
    """One tool call's ``ToolMessage`` and how it came about."""

    message: ToolMessage
    name: str
    args: Mapping[str, Any]
    """The arguments as the model sent them, frozen."""
    status: ToolStatus
    """``cancelled``: the run was stopped while the tool ran (it did run)."""
    error_reason: str | None
    duration_s: float
    ran: bool = True
    """False for a call answered without running it (spent budget, a stop before it
    began, a person's skip)."""
    error_type: str | None = None
    """The class name of the exception the tool raised, for a ``tool_error`` that was one."""
    server_log: LogSlice | None = None
    """What the tool's MCP server wrote to its log while the call ran (``None``: nothing,
    or no MCP tool)."""


@dataclass(frozen=True, slots=True)
class DispatchHooks:
    """What the loop hears during a dispatch: each tool as it begins, each call as it ends
    (in completion order). Both are called in the loop's own thread."""

    started: Callable[[ToolCall], None] = lambda _call: None
    done: Callable[[DispatchOutcome], None] = lambda _outcome: None


class ToolBox(Mapping[str, BaseTool]):
    """An agent's tools by name, as the user gave them, each checked (its schema can be
    built: ``ConfigurationError`` otherwise) and prepared once for the loop to run (see
    ``_Ready``). Read-only."""

    __slots__ = ("_originals", "_ready")

    def __init__(self, tools: Iterable[BaseTool]) -> None:
        self._originals: dict[str, BaseTool] = {t.name: t for t in tools}
        for name, tool in self._originals.items():
            _check_schema(name, tool)
        self._ready: dict[str, _Ready] = {n: _ready(t) for n, t in self._originals.items()}

    def __getitem__(self, name: str) -> BaseTool:
        return self._originals[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._originals)

    def __len__(self) -> int:
        return len(self._originals)

    def ready(self, name: str) -> _Ready | None:
        """The prepared form of the tool the model named, or ``None``."""
        return self._ready.get(name)


async def dispatch(
    calls: Sequence[ToolCall],
    tools: ToolBox,
    *,
    timeout_s: float | None = None,
    parallel: bool = True,
    hooks: DispatchHooks = DispatchHooks(),
    finished: MutableMapping[str, DispatchOutcome] | None = None,
    caller: str | RunCaller | None = None,
) -> list[DispatchOutcome]:
    """Run ``calls`` (concurrently, or one after another when ``parallel`` is False);
    outcomes come back in call order, and each is handed to ``hooks.done`` as it ends.

    ``finished`` (by tool-call id) is filled as calls complete, so a caller that is
    cancelled mid-dispatch still knows which calls really ran. When the dispatch is
    cancelled, or a tool raises ``KeyboardInterrupt``/``SystemExit``, the calls still
    running are cancelled and awaited before that propagates: no task outlives it.
    ``caller`` names the run whose calls these are: a run a tool starts records it, and
    the call, as its parent (:func:`~toolloop_lab._tools.callers.tool_caller`).
    """
    sink: MutableMapping[str, DispatchOutcome] = finished if finished is not None else {}

    def done(outcome: DispatchOutcome) -> None:
        sink[outcome.message.tool_call_id] = outcome
        hooks.done(outcome)

    ending = DispatchHooks(started=hooks.started, done=done)  # calls end in ``finished`` too
    if len(calls) <= 1 or not parallel:
        outcomes = []
        for call in calls:
            outcome = await _dispatch_one(call, tools, timeout_s, ending, caller)
            done(outcome)
            outcomes.append(outcome)
        return outcomes
    return await _dispatch_many(calls, tools, timeout_s, ending, caller)


def invalid_outcomes(message: AIMessage) -> list[DispatchOutcome]:
    """Error outcomes for the calls langchain-core could not parse (they never run)."""
    return [_invalid_outcome(c) for c in message.invalid_tool_calls]


def skipped_outcomes(message: AIMessage, reason: str, text: str) -> list[DispatchOutcome]:
    """Error outcomes for calls the loop will not run (budget spent, loop stopped)."""
    now = time.perf_counter()
    out = [
        _error_outcome(
            c.get("id") or "",
            c.get("name") or "(unnamed)",
            c["args"] if isinstance(c.get("args"), Mapping) else {},
            reason,
            text,
            now,
            ran=False,
        )
        for c in message.tool_calls
    ]
    out.extend(
        _error_outcome(
            c.get("id") or "", c.get("name") or "(unnamed)", {}, reason, text, now, ran=False
        )
        for c in message.invalid_tool_calls
    )
    return out


def written_outcome(
    call: ToolCall, content: str, *, status: Literal["success", "error"]
) -> DispatchOutcome:
    """The outcome of a call a person answered by hand instead of running it."""
    call_id, name = call.get("id") or "", call.get("name") or "(unnamed)"
    msg = ToolMessage(content=content, tool_call_id=call_id, name=name, status=status)
    reason = "skipped" if status == "error" else None
    return DispatchOutcome(msg, name, _frozen(call.get("args")), status, reason, 0.0, ran=False)


# -- a round's calls: one task each --------------------------------------------------------


async def _dispatch_many(
    calls: Sequence[ToolCall],
    tools: ToolBox,
    timeout_s: float | None,
    hooks: DispatchHooks,
    caller: str | RunCaller | None,
) -> list[DispatchOutcome]:
    async def one(call: ToolCall) -> DispatchOutcome:
        outcome = await _dispatch_one(call, tools, timeout_s, hooks, caller)
        hooks.done(outcome)  # in this call's own task, the moment it ends: completion order
        return outcome

    tasks = [asyncio.create_task(_capture(one(c))) for c in calls]
    pending: set[asyncio.Task[_Captured]] = set(tasks)
    stop: BaseException | None = None

    def first_error(done: Iterable[asyncio.Task[_Captured]]) -> BaseException | None:
        for task in done:
            error = None if task.cancelled() else task.result().error
            if error is not None and not isinstance(error, asyncio.CancelledError):
                return error
        return None

    try:
        while pending and stop is None:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            stop = first_error(done)
    finally:
        if pending:
            for task in pending:
                task.cancel()
            # each call gives its own tool the cancellation grace; this only waits for them
            done, _ = await asyncio.wait(pending)
            stop = stop or first_error(done)
    if stop is not None:
        raise stop
    return [t.result().value for t in tasks]


async def _dispatch_one(
    call: ToolCall,
    tools: ToolBox,
    timeout_s: float | None,
    hooks: DispatchHooks = DispatchHooks(),
    caller: str | RunCaller | None = None,
) -> DispatchOutcome:
    """One call's outcome. Raises only what must stop the loop (``KeyboardInterrupt``,
    ``SystemExit``, other non-``Exception`` errors, and this task's own cancellation)."""
    started = time.perf_counter()
    call_id = call.get("id") or ""
    name, args = call.get("name"), call.get("args")
    ready = tools.ready(name) if isinstance(name, str) and name else None
    if ready is None or not is_mapping(args):
        return _refused(call_id, name, args, tools, started)
    if ready.site is not None:  # what its MCP server says from now on sits beside the call
        hooks = _with_server_log(hooks, ready.site, ready.site.log.count)
    return await run_call(
        call,
        lambda: _run_tool(ready, call),
        timeout_s=timeout_s,
        hooks=hooks,
        caller=caller,
        in_thread=ready.sync_only,
    )


async def run_call(
    call: ToolCall,
    body: Callable[[], Awaitable[_Output]],
    *,
    timeout_s: float | None,
    hooks: DispatchHooks = DispatchHooks(),
    caller: str | RunCaller | None = None,
    in_thread: bool = False,
) -> DispatchOutcome:
    """Run one call's ``body`` (what makes its result: our tool, or a framework's handler
    that runs it, see :func:`output_of`) the way every call runs: announced to
    ``hooks.started``, in a task of its own (the context naming its call, so a sub-agent
    it starts knows its parent), given up after ``timeout_s``, and, when the run is
    stopped while it runs, answered as stopped while running. Its outcome is returned;
    a stop propagates once that outcome is handed to ``hooks.done``. ``in_thread``: the
    body runs in a worker thread, which no stop can end."""
    started = time.perf_counter()
    call_id = call.get("id") or ""
    name = str(call.get("name") or "")
    args = call.get("args")
    hooks.started(call)
    # The tool runs in its own task, so a stop of this one never has to wait on a tool that
    # swallows cancellation; this task waits on a plain future the tool's task settles.
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[_Captured | None] = loop.create_future()
    task = loop.create_task(
        _capture(body(), waiter),
        name=f"tool {name} {call_id}",
        context=caller_context(caller, call_id),
    )
    task.add_done_callback(functools.partial(_settle, waiter))
    timer = None if timeout_s is None else loop.call_later(timeout_s, _expire, waiter)
    try:
        captured = await waiter
    except asyncio.CancelledError:
        early = _finished_first(waiter)
        if early is not None:  # it ended just as the stop came: its result stands
            hooks.done(_ended(early, call_id, name, args, started, hooks))
            raise
        await _stopped_while_running(task, call_id, name, args, started, hooks, in_thread)
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if captured is None:
        stopped = await _stop(task, min(timeout_s or _CANCEL_GRACE_S, _CANCEL_GRACE_S))
        text = f"tool {name!r} timed out after {timeout_s} s"
        if not stopped:
            text += " and ignored cancellation; it may still be running"
        return hooks_told(hooks, _error_outcome(call_id, name, args, "timeout", text, started))
    return hooks_told(hooks, _ended(captured, call_id, name, args, started, hooks))


@dataclass(frozen=True, slots=True)
class _ServerLogHooks(DispatchHooks):
    """A call's hooks that also hand it what its MCP server logged since it began."""

    told: Callable[[DispatchOutcome], DispatchOutcome] = lambda outcome: outcome


def _with_server_log(hooks: DispatchHooks, site: ServerSite, mark: int) -> _ServerLogHooks:
    def told(outcome: DispatchOutcome) -> DispatchOutcome:
        said = site.log.since(mark)
        return outcome if said is None else replace(outcome, server_log=said)

    return _ServerLogHooks(
        started=hooks.started, done=lambda outcome: hooks.done(told(outcome)), told=told
    )


def hooks_told(hooks: DispatchHooks, outcome: DispatchOutcome) -> DispatchOutcome:
    """``outcome`` with what the call's server logged while it ran (see ``_with_server_log``)."""
    return hooks.told(outcome) if isinstance(hooks, _ServerLogHooks) else outcome


def refusal(call: ToolCall, tools: ToolBox) -> DispatchOutcome | None:
    """The error outcome of ``call`` when it cannot run (it names no tool, one ``tools``
    lacks, or its arguments are no JSON object), else ``None``: what a framework that runs
    the tool itself (``ToolLoopMiddleware``) refuses the same way as the loop."""
    name, args = call.get("name"), call.get("args")
    ready = tools.ready(name) if isinstance(name, str) and name else None
    if ready is None or not is_mapping(args):
        return _refused(call.get("id") or "", name, args, tools, time.perf_counter())
    return None


def _refused(call_id: str, name: Any, args: Any, tools: ToolBox, started: float) -> DispatchOutcome:
    """The error outcome of a call that cannot run: it names no tool, a tool the agent
    does not have, or arguments that are not a JSON object."""
    if not isinstance(name, str) or not name:
        text = f"the call names no tool. Available tools: {', '.join(sorted(tools)) or '(none)'}."
        return _error_outcome(call_id, "(unnamed)", {}, "invalid_call", text, started)
    if tools.ready(name) is None:
        err = not_available_error(name, list(tools))
        safe_args = args if isinstance(args, Mapping) else {}
        return _error_outcome(call_id, name, safe_args, err.reason, str(err), started)
    text = f"arguments for tool {name!r} must be a JSON object, got {type(args).__name__}"
    return _error_outcome(call_id, name, {}, "invalid_arguments", text, started)


def _invalid_outcome(call: InvalidToolCall) -> DispatchOutcome:
    name = call.get("name") or "(unnamed)"
    raw = call.get("args")
    detail = call.get("error") or _why_unparsed(raw)
    text = f"could not parse the call to {name!r}: {detail}. Raw arguments: {dumps(raw)}"
    return _error_outcome(call.get("id") or "", name, {}, "invalid_call", text, time.perf_counter())


def _why_unparsed(raw: Any) -> str:
    """Why langchain-core could not make a call of ``raw`` argument text."""
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return "arguments are not valid JSON"
        except RecursionError:  # valid or not, too deep for any parser here to read
            return "arguments are nested too deeply to parse"
        return f"arguments must be a JSON object, got {_json_kind(value)}"
    return "arguments are not valid JSON"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", str: "a string", list: "an array"}.get(type(value), "a number")


def not_available_error(name: str, available: Sequence[str]) -> ExecutionError:
    """The error for a call to a tool the agent does not have."""
    listing = ", ".join(sorted(available)) or "(none)"
    return ExecutionError(
        f"Tool {name!r} is not available. Available tools: {listing}.",
        kind="tool",
        reason="not_available",
    )


# -- one tool: made ready once, run in a task of its own -----------------------------------


@dataclass(frozen=True, slots=True)
class _Ready:
    """One tool as the loop runs it."""

    tool: BaseTool
    """A copy with its own error handlers off (a handled failure would read as a success;
    the loop reports it as an error, in the handler's words) and, for function tools, a
    function that turns its result into text the moment it returns."""
    handler: Any
    """The tool's own ``handle_tool_error``: it chooses the text the model reads."""
    sync_only: bool
    """No async body of its own: its sync body runs in a worker thread."""
    site: ServerSite | None = None
    """The live MCP server the tool came from, whose log a call reads (see
    :mod:`toolloop_lab._tools.servers`)."""


def _check_schema(name: str, tool: BaseTool) -> None:
    """Build the tool's schema as a model is told it, so a tool no provider could be told
    about is refused before the first (paid) call instead of failing in round 1."""
    try:
        convert_to_openai_tool(tool)
    except Exception as exc:  # whatever the tool's own schema code raises
        raise ConfigurationError(
            f"tool {name!r}: its argument schema cannot be built ({explain(exc)})",
            field="tools",
        ) from exc


def _ready(tool: BaseTool) -> _Ready:
    update: dict[str, Any] = {}
    if tool.handle_tool_error or tool.handle_validation_error:
        update.update(handle_tool_error=False, handle_validation_error=False)
    if isinstance(tool, (StructuredTool, Tool)):
        pair = tool.response_format == "content_and_artifact"
        if tool.func is not None:
            update["func"] = _snapshotting(tool.func, pair)
        if tool.coroutine is not None:
            update["coroutine"] = _asnapshotting(tool.coroutine, pair)
        sync_only = tool.coroutine is None
    else:
        sync_only = type(tool)._arun is BaseTool._arun
    copy = tool.model_copy(update=update) if update else tool
    return _Ready(copy, tool.handle_tool_error, sync_only, site_of(tool.metadata))


async def _run_tool(ready: _Ready, call: ToolCall) -> _Output:
    """The tool's result, as text made where the tool ran (see :func:`_snapshot`)."""
    tool = ready.tool
    args = thaw(call["args"])  # the tool's own copy: nothing it does reaches the transcript
    tool_input: Any = (
        {**call, "args": args, "type": "tool_call"}
        if tool.response_format == "content_and_artifact"
        else args
    )
    try:
        if ready.sync_only:
            # langchain-core's own helper: the caller's context goes along, and a
            # StopIteration comes back as a RuntimeError instead of breaking the future
            return await run_in_executor(None, lambda: output_of(tool.invoke(tool_input)))
        return output_of(await tool.ainvoke(tool_input))
    except ToolException as exc:
        failed = exc.__cause__
        if isinstance(failed, McpServerError):  # its server failed, not the tool: say which
            raise failed from None
        if ready.handler:
            raise _HandledToolError(_handled_text(ready.handler, exc)) from exc
        raise


@dataclass(slots=True)
class _Captured:
    """What an awaitable ended with, so no exception ever escapes a helper task.

    asyncio re-raises ``KeyboardInterrupt`` and ``SystemExit`` out of the event loop from
    whichever task raised them; captured here, they are raised again in the loop's own
    task, where the loop records them before they propagate.
    """

    value: Any = None
    error: BaseException | None = None


async def _capture(
    awaitable: Awaitable[Any], waiter: asyncio.Future[_Captured | None] | None = None
) -> _Captured:
    """What ``awaitable`` ended with; also handed to ``waiter`` the moment it is known, so
    the waiting task resumes on the next turn of the event loop, not one later (a done
    callback would only be scheduled once this task had finished)."""
    try:
        captured = _Captured(value=await awaitable)
    except BaseException as exc:  # noqa: BLE001 - handed to the waiting task, which decides
        captured = _Captured(error=exc)
    if waiter is not None and not waiter.done():
        waiter.set_result(captured)
    return captured


def _settle(waiter: asyncio.Future[_Captured | None], task: asyncio.Task[_Captured]) -> None:
    """A tool task ended without handing over its outcome (cancelled before it started)."""
    if not waiter.done():
        waiter.set_result(
            _Captured(error=asyncio.CancelledError()) if task.cancelled() else task.result()
        )


def _expire(waiter: asyncio.Future[_Captured | None]) -> None:
    """The tool's time is up: the waiting task resumes with no outcome."""
    if not waiter.done():
        waiter.set_result(None)


class _HandledToolError(Exception):
    """A ``ToolException`` the tool's own ``handle_tool_error`` turned into text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _handled_text(flag: Any, exc: ToolException) -> str:
    """The text langchain-core's ``handle_tool_error`` would give the model (a handler
    that answers with content blocks, as an MCP tool's does, in their words)."""
    if isinstance(flag, str):
        return flag
    if callable(flag):
        answer = flag(exc)
        return content_text(answer) if is_blocks(answer) else serialize_output(answer)
    return str(exc.args[0]) if exc.args else "Tool execution error"


@dataclass(frozen=True, slots=True)
class _Output:
    """A tool's result as text or content blocks (made in the tool's worker), or why it
    has no text form."""

    content: str | list[str | dict[Any, Any]] | None
    """Text, or content blocks (``ToolMessage`` content's own type)."""
    artifact: Any = None
    unserialisable: str | None = None


def output_of(raw: Any) -> _Output:
    """Turn what a tool returned into text (or content blocks, see
    :mod:`toolloop_lab._tools.content`) at once; a ``ToolMessage`` it built says itself
    whether it failed."""
    artifact = None
    if isinstance(raw, ToolMessage):
        if raw.status == "error":  # the tool said it failed: never a success
            raise _HandledToolError(content_text(raw.content))
        raw, artifact = raw.content, raw.artifact
    if is_blocks(raw):
        return _Output([*blocks_of(raw)], artifact)
    if isinstance(raw, _NoText):
        why = f"a {raw.type_name} that cannot be turned into text: {raw.why}"
        return _Output(None, artifact, why)
    try:
        return _Output(serialize_output(raw), artifact)
    except Exception as exc:  # noqa: BLE001 - a result with no text form is the tool's failure
        why = f"a {type(raw).__name__} that cannot be turned into text: {explain(exc)}"
        return _Output(None, artifact, why)


@dataclass(frozen=True, slots=True)
class _NoText:
    """What a tool returned that has no text form, and why (taken where it returned)."""

    type_name: str
    why: str


def _snapshot(value: Any, *, with_artifact: bool = False) -> Any:
    """A tool's result turned into text inside its own call, the moment its function
    returns: a sibling call can no longer change the object before the model sees it.
    ``with_artifact``: the result is ``(content, artifact)``; only the content is text."""
    if isinstance(value, (str, ToolMessage)):
        return value
    if with_artifact and isinstance(value, tuple) and len(value) == 2:
        content, artifact = value
        snap = _snapshot(content)
        return (content if isinstance(snap, _NoText) else snap, artifact)
    if is_blocks(value):
        return blocks_of(value)  # a copy, as the model is sent it (see _tools/content.py)
    try:
        return serialize_output(value)
    except Exception as exc:  # noqa: BLE001 - reported as the tool's bad_output
        return _NoText(type(value).__name__, explain(exc))


def _snapshotting(func: Callable[..., Any], with_artifact: bool) -> Callable[..., Any]:
    @functools.wraps(func)  # the signature stays (langchain-core inspects it)
    def call(*args: Any, **kwargs: Any) -> Any:
        return _snapshot(func(*args, **kwargs), with_artifact=with_artifact)

    return call


def _asnapshotting(
    func: Callable[..., Awaitable[Any]], with_artifact: bool
) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(func)
    async def call(*args: Any, **kwargs: Any) -> Any:
        return _snapshot(await func(*args, **kwargs), with_artifact=with_artifact)

    return call


def _frozen(args: Any) -> Mapping[str, Any]:
    frozen: Mapping[str, Any] = frozen_json(args if is_mapping(args) else {})
    return frozen


# -- a stop while tools run ----------------------------------------------------------------


_CANCEL_GRACE_S: Final = 1.0
"""How long a cancelled tool may take to stop before the loop stops waiting for it."""


_abandoned: set[asyncio.Task[Any]] = set()
"""Tool tasks that ignored cancellation: referenced here until they end, never awaited."""


async def _stop(task: asyncio.Task[_Captured], grace_s: float) -> bool:
    """Cancel ``task`` and give it ``grace_s`` to end; True if it ended.

    A tool that swallows cancellation must not hang the loop: after the grace period it is
    left to finish on its own (kept referenced, logged) and the loop goes on.
    """
    task.cancel()
    try:
        done, _ = await asyncio.wait({task}, timeout=grace_s)
    except asyncio.CancelledError:
        _abandon(task)
        raise
    if done:
        return True
    _abandon(task)
    return False


def _abandon(task: asyncio.Task[_Captured]) -> None:
    if task.done():
        return
    _log.warning("a tool ignored cancellation and is left running: %r", task)
    _abandoned.add(task)
    task.add_done_callback(_abandoned.discard)


def _finished_first(waiter: asyncio.Future[_Captured | None]) -> _Captured | None:
    """What the tool ended with, when it had ended on its own (a result or an
    ``Exception``) before the stop reached the task waiting for it."""
    if not waiter.done() or waiter.cancelled():
        return None
    captured = waiter.result()
    if captured is None or not (captured.error is None or isinstance(captured.error, Exception)):
        return None
    return captured


async def _stopped_while_running(
    task: asyncio.Task[_Captured],
    call_id: str,
    name: str,
    args: Mapping[str, Any],
    started: float,
    hooks: DispatchHooks,
    in_thread: bool,
) -> None:
    """The run was stopped while this tool ran: stop it too, then hand over its outcome.

    It ran (and may have had effects), so it is never "not run": it is ``cancelled``, for
    as long as it ran, and the model reads that it was stopped while running (and that it
    may run on: a tool that ignored the stop, or a sync tool's thread, which nothing can
    stop). The outcome is handed over even if a second stop cuts the grace period short.
    """
    ended = False
    try:
        ended = await _stop(task, _CANCEL_GRACE_S)
    finally:
        took = time.perf_counter() - started
        hooks.done(stopped_outcome(call_id, name, args, took, in_thread=in_thread, ended=ended))


def stopped_outcome(
    call_id: str,
    name: str,
    args: Any,
    took: float,
    *,
    in_thread: bool = False,
    ended: bool = True,
) -> DispatchOutcome:
    """The outcome of a call whose tool was running when the run was stopped, for
    ``took`` seconds: ``cancelled`` (it ran, and may have had effects), and the model reads
    so (and that it may run on: a sync tool's thread, or a tool that ignored the stop)."""
    text = STOPPED_TEXT
    if in_thread:
        text += f"; tool {name!r} runs in a thread, which may still be running"
    elif not ended:
        text += f"; tool {name!r} ignored the stop and may still be running"
    msg = ToolMessage(content=f"Error: {text}", tool_call_id=call_id, name=name, status="error")
    return DispatchOutcome(msg, name, _frozen(args), "cancelled", "cancelled", took)


# -- how a call ended ----------------------------------------------------------------------


def _ended(
    captured: _Captured,
    call_id: str,
    name: str,
    args: Mapping[str, Any],
    started: float,
    hooks: DispatchHooks,
) -> DispatchOutcome:
    """The outcome of a tool task that ended on its own: its result, or why it failed."""
    exc = captured.error
    if isinstance(exc, asyncio.CancelledError):
        text = f"tool {name!r} was cancelled from inside"  # not by the loop: by the tool
        return _error_outcome(call_id, name, args, "tool_cancelled", text, started)
    if exc is None:
        return _success(call_id, name, args, captured.value, started)
    if not isinstance(exc, Exception):
        # KeyboardInterrupt, SystemExit and their kind stop the loop; the tool did run
        text = f"tool {name!r} raised {type(exc).__name__}, which stopped the loop"
        raised = type(exc).__name__
        hooks.done(
            _error_outcome(call_id, name, args, "tool_error", text, started, error_type=raised)
        )
        raise exc
    if isinstance(exc, McpServerError):  # the server, not the tool: its reason and words
        return _error_outcome(call_id, name, args, exc.reason, str(exc), started)
    if isinstance(exc, _HandledToolError):
        # the tool's own handler chose the text the model reads: a failure it reported
        # (as under the bridge, where the framework's handler answers), not one it raised
        return _error_outcome(call_id, name, args, "tool_error", exc.text, started, prefix="")
    if isinstance(exc, ValidationError):
        why = validation_text(exc, whole="(arguments)", every=True)
        text = f"invalid arguments for tool {name!r}: {why}"
        return _error_outcome(call_id, name, args, "invalid_arguments", text, started)
    text = f"tool {name!r} raised {explain(exc)}"
    raised = error_name(exc)
    return _error_outcome(call_id, name, args, "tool_error", text, started, error_type=raised)


def _success(
    call_id: str, name: str, args: Mapping[str, Any], output: _Output, started: float
) -> DispatchOutcome:
    if output.content is None:
        text = f"tool {name!r} returned {output.unserialisable}"
        return _error_outcome(call_id, name, args, "bad_output", text, started)
    msg = ToolMessage(
        content=output.content,
        tool_call_id=call_id,
        name=name,
        status="success",
        artifact=output.artifact,
    )
    return DispatchOutcome(msg, name, _frozen(args), "success", None, time.perf_counter() - started)


def _error_outcome(
    call_id: str,
    name: str,
    args: Mapping[str, Any],
    reason: str,
    text: str,
    started: float,
    *,
    prefix: str = "Error: ",
    ran: bool = True,
    error_type: str | None = None,
) -> DispatchOutcome:
    msg = ToolMessage(content=prefix + text, tool_call_id=call_id, name=name, status="error")
    duration = time.perf_counter() - started if ran else 0.0
    return DispatchOutcome(msg, name, _frozen(args), "error", reason, duration, ran, error_type)


def serialize_output(value: Any) -> str:
    """Text for the model: strings as they are, anything else as deterministic JSON."""
    if isinstance(value, str):
        return value
    return dumps(value, ascii_only=False)
