"""The LangChain adapter: ``EventBridge``, a langchain-core callback handler feeding a
:class:`~.run.ForeignRun` per run, and what it reads off the callbacks.

Callbacks arrive as a tree of LangChain runs (chains, chat models, tools), each naming its
parent. The handler keeps one node per open LangChain run and routes every callback to the
:class:`~.run.ForeignRun` it belongs to (``source="langchain"``):

* a chain with no parent the handler knows (``graph.invoke`` in a ``watch`` block, a
  ``@chain`` function, an ``AgentExecutor``) starts a run, whose id is that LangChain run
  id; its own end or error ends the run;
* a chain started inside a tool (a sub-agent called as a tool) starts a *nested* run that
  names its parent run and the tool call it answers; a chat model called directly inside a
  tool gets one nested run per tool call, ended with the tool;
* a start said again for a run id that is still open (a chain, a chat-model call, a tool)
  is the same run, never a second one: it changes nothing;
* chat-model and tool calls with no enclosing chain (a hand-written ``bind_tools`` loop)
  share one *loose* run: a reply without tool calls ends it with ``loop_finish``, a failed
  call with ``loop_failure``; :meth:`EventBridge.close` (the end of a ``watch`` block) ends
  one still open. Wrap such a loop in langchain-core's ``@chain`` to give it an exact
  boundary and a name.

What it reads off the callbacks and hands the run: a call's prompt, bound tools (in any
provider's format), configured model name and whether it will stream; its reply (a
streamed one made whole) or its exception; a tool's call id (when the framework passes
one), name, arguments, and its result, the ``ToolMessage`` in its output when there is one
(else its output as text), or its exception (why it raised in the loop's words: an invalid
call, a timeout, a stop); the messages in a chain's output (a list, a ``{"messages": [...]}``
state, a LangGraph ``Command``, found without importing LangGraph); LangGraph's
``interrupt()`` (a pause, what it asked) and its hand-offs (control flow, not failures), by
their class names. Every time is the handler's clock at the callback. The run's end waits
for what it started (``wait=True``): langchain-core reports every tool that ran, and every
call a run did not cancel.

Why a synchronous handler with ``run_inline = True``: langchain-core then calls it directly
on the event loop for async runs (in order, no thread hop, nothing scheduled behind the
run's back) and in the calling thread for sync runs. Sync runs may call it from several
threads at once (LangGraph runs tools in a pool), so every callback takes one lock, which
also keeps each run's events in order for its observers. A callback that fails is logged by
langchain-core and never breaks the user's run (``raise_error`` stays False).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, GenerationChunk, LLMResult

from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._stream import checked_observers, failure_fields
from toolloop_lab._support.errortext import error_name, explain
from toolloop_lab._support.jsonsafe import dumps, frozen_json, json_safe
from toolloop_lab._tools.content import is_blocks
from toolloop_lab.events import Observer, ToolStatus

from .run import Clock, Failure, ForeignRun

_MAX_DEPTH: Final = 4
"""How deep :func:`messages_in` looks (a state holds messages one or two levels down)."""


@dataclass(slots=True, eq=False)
class _Node:
    """One open LangChain run: the bridged run it belongs to, and what it is."""

    run: ForeignRun
    kind: str
    """``chain``, ``model`` or ``tool``."""
    root: bool = False
    """Its end ends ``run``."""
    tool_call_id: str | None = None
    direct: ForeignRun | None = None
    """Tools: the nested run of chat models called directly inside this tool."""


class EventBridge(BaseCallbackHandler):
    """A langchain-core callback handler feeding ``observers`` the events of every
    LangChain or LangGraph run it is passed to, as our own loop emits them, so the live
    debugger, ``TraceWriter``, ``from_trace``, ``RunView`` and the lab frames work on those
    runs unchanged::

        graph.invoke(inputs, config={"callbacks": [EventBridge(dbg)]})

    or let :func:`~toolloop_lab.watch` give one to every run of a block (``with watch(dbg):
    graph.invoke(...)``). ``prices`` overrides genai-prices per model name.

    What a bridge can and cannot know (``LoopStarted.source == "langchain"``):

    * **Known**: every chat-model call (prompt, reply, streamed fragments, usage, latency,
      time to first token, finish reason), every tool run (arguments, result, status, error,
      duration), each run's start, end and failure, and which tool call a nested run answers.
    * **Absent, not passed**: our gates. A bridged run has no round cap, token budget,
      context window or USD limit (``None``) and no ``budget_gate`` events; the framework's own
      limits (LangGraph's ``recursion_limit``) are not in the callbacks.
    * **Unknown, never zero**: a reply without ``usage_metadata`` has its tokens estimated and
      flagged ``estimated`` (as the loop does); a model genai-prices cannot price has cost
      ``None``; a call the framework answered without running a tool has ``ran=False`` and no
      duration, except a call to a tool the agent does not have, which reads as the loop's
      own: an error of the call (``not_available``), found by the debugger's "errors only".
    * **Retries are separate calls**: a framework's retry (``with_retry``, a retry or fallback
      middleware) is a new ``model_call_start`` of the same round after the one that failed
      (which has no ``model_call``: no reply, no usage); a client's own HTTP retries
      (``max_retries``) happen inside one call and are invisible.
    * **Tools run without their tool call** (a classic ``AgentExecutor``, a loop calling
      ``tool.invoke(call["args"])``) are matched to the open call with the same name and
      arguments; the executor's ``invalid_tool`` stand-in answers the unknown call it names.
      Such a tool returns plain text, so a tool error it handled itself reads as a success:
      the status is not in the callbacks.
    * **Nested runs count their own spend**: a sub-agent's calls are in its run's totals, not
      in its parent's. A graph used as a *node* of another graph is part of that run.
    * **Interrupts and stops**: a LangGraph ``interrupt`` leaves its tool call open and the
      run ends with ``loop_finish`` (the resume is a new run); a stream its consumer closed
      early ends ``cancelled``.
    * **The end is the last event**: when a run's root returns or raises while a tool it
      started still runs (a sync tool's thread, which a failed or stopped run cannot stop) or
      a model call it did not wait for is still out, ``loop_finish`` / ``loop_failure`` waits
      for them, so the view reads "running" while they do and the end's totals include them.
      A model call still out at a failure was cancelled with the run (langchain-core reports
      no end for it): the failure closes it, with what it had streamed.
    * **Streaming**: ``model_call_start.streaming`` is what the call's parameters ask for; a
      framework that decides to stream later (LangGraph's ``messages`` mode) still sends
      ``model_delta`` events. Only chat models are seen (text-completion LLMs are not).
    * **Synthesis-like calls**: a call without tools after calls with tools has
      ``purpose="synthesis"``; there is no ``synthesis`` event, since the framework's reason is
      not in the callbacks.
    * **The transcript** (:func:`toolloop_lab.events.transcript`) is every message the model
      was sent, in the order it first saw them, plus the final reply and any tool results after
      it: system prompts a framework adds are in it; messages a framework keeps in its state
      but never sends to the model are not; a history the framework rewrote (trimmed,
      summarised) appears as the union of what was sent.
    """

    run_inline = True
    raise_error = False

    def __init__(
        self,
        *observers: Observer,
        prices: PriceTable | None = None,
        clock: Clock = time.perf_counter,
    ) -> None:
        self.observers: tuple[Observer, ...] = checked_observers(observers, spread="EventBridge")
        self.prices = prices
        self.clock = clock
        self._lock = threading.RLock()
        self._nodes: dict[UUID, _Node] = {}
        self._loose: ForeignRun | None = None

    def __repr__(self) -> str:
        return f"EventBridge(observers={len(self.observers)}, open_runs={len(self._nodes)})"

    # -- routing ----------------------------------------------------------------------
    def _new_run(self, run_id: str, **fields: Any) -> ForeignRun:
        return ForeignRun(
            self.observers,
            run_id,
            "langchain",
            self.clock(),
            clock=self.clock,
            prices=self.prices,
            started_at=datetime.now(UTC).isoformat(),
            **fields,
        )

    def _loose_run(self) -> ForeignRun:
        if self._loose is None or self._loose.ended:
            self._loose = self._new_run(str(uuid.uuid4()))
        return self._loose

    def _nested(self, tool: _Node, run_id: UUID, name: str | None) -> ForeignRun:
        return self._new_run(
            str(run_id),
            name=name,
            parent_run_id=tool.run.run_id,
            parent_tool_call_id=tool.tool_call_id,
        )

    def _owner(self, parent_run_id: UUID | None, run_id: UUID) -> ForeignRun:
        """The run a chat model or tool call belongs to."""
        parent = self._nodes.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            return self._loose_run()
        if parent.kind == "tool":
            if parent.direct is None:
                parent.direct = self._nested(parent, run_id, None)
            return parent.direct
        return parent.run

    def _end_loose(self, run: ForeignRun, error: BaseException | None) -> None:
        if run is not self._loose:
            return
        self._loose = None
        self._end(run, None, error)

    def _end(self, run: ForeignRun, outputs: Any, error: BaseException | None) -> None:
        """Finish ``run`` with ``outputs``, or fail it with ``error``."""
        if error is None:
            _finish(run, outputs, self.clock())
        else:
            _fail(run, error, self.clock())

    # -- chains -----------------------------------------------------------------------
    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            if run_id in self._nodes:
                return  # said again: the run it names is already open
            parent = self._nodes.get(parent_run_id) if parent_run_id is not None else None
            name = _chain_name(serialized, kwargs)
            if parent is None:
                run = self._new_run(str(run_id), name=name, input_messages=_count(inputs))
            elif parent.kind == "tool":
                run = self._nested(parent, run_id, name)
                run.input_messages = _count(inputs)
            else:
                self._nodes[run_id] = _Node(parent.run, "chain")
                return
            run.tags, run.metadata = _labels(kwargs)
            self._nodes[run_id] = _Node(run, "chain", root=True)

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            if node.root:
                _finish(node.run, outputs, self.clock())
            else:  # answers to open calls may be in a chain's output
                node.run.answered_by(messages_in(outputs), self.clock())

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            if node.root:
                top_level = node.run.parent_run_id is None
                _fail(node.run, error, self.clock(), announce=top_level)
            else:  # a node of the graph: an interrupt() pauses the whole run
                _interrupted_by(node.run, error)

    # -- chat models ------------------------------------------------------------------
    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        invocation_params: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            if run_id in self._nodes:
                return  # said again: one call, one round
            run = self._owner(parent_run_id, run_id)
            self._nodes[run_id] = _Node(run, "model")
            run.call_started(
                run_id,
                self.clock(),
                prompt=messages[0] if messages else [],
                model_name=configured_model_name(metadata, invocation_params),
                tools=bound_tool_names(invocation_params),
                streaming=streaming_requested(invocation_params),
            )

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: GenerationChunk | ChatGenerationChunk | None = None,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            node = self._nodes.get(run_id)
            if node is None:
                return
            message = getattr(chunk, "message", None)
            if not isinstance(message, AIMessageChunk):
                message = AIMessageChunk(content=token)  # a model that sends text only
            node.run.call_token(run_id, message)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            reply = _reply(response)
            node.run.call_replied(run_id, self.clock(), reply)
            if not reply.tool_calls and not reply.invalid_tool_calls:
                self._end_loose(node.run, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            node.run.call_failed(run_id, self.clock(), error)
            self._end_loose(node.run, error)

    # -- tools ------------------------------------------------------------------------
    def on_tool_start(
        self,
        serialized: dict[str, Any] | None,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            if run_id in self._nodes:
                return  # said again: the tool is already running
            run = self._owner(parent_run_id, run_id)
            given = kwargs.get("tool_call_id")
            name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
            args: Any = inputs if inputs is not None else {"input": input_str}
            call_id = run.tool_started(
                run_id,
                self.clock(),
                call_id=given if isinstance(given, str) and given else None,
                name=str(name),
                args=args,
                own_id=str(run_id),
                metadata=kwargs.get("metadata"),
            )
            self._nodes[run_id] = _Node(run, "tool", tool_call_id=call_id)

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._tool_done(run_id, output, None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._tool_done(run_id, None, error)

    def _tool_done(self, run_id: UUID, output: Any, error: BaseException | None) -> None:
        """A tool returned ``output`` or raised ``error``; the nested run of chat models
        called directly inside it ends with it."""
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            if node.direct is not None:
                self._end(node.direct, output, error)
            at = self.clock()
            if error is None:
                _tool_returned(node.run, run_id, at, output, node.tool_call_id or str(run_id))
            else:
                _tool_raised(node.run, run_id, at, error)

    # -- the end of a watch block -----------------------------------------------------
    def close(self, error: BaseException | None = None) -> None:
        """End the loose run, if one is open: failed with ``error`` when given (the block
        raised), else finished with its last reply."""
        with self._lock:
            if self._loose is not None:
                self._end_loose(self._loose, error)


# -- what a callback says, handed to the run ---------------------------------------------------


def _tool_returned(run: ForeignRun, key: UUID, at: float, output: Any, call_id: str) -> None:
    """A tool returned ``output``: the ``ToolMessage`` answering its call when the output
    holds one (its status is the tool's), else the output as text."""
    message = _tool_message(output, call_id)
    if message is not None:
        status: ToolStatus = "error" if message.status == "error" else "success"
        run.tool_returned(key, at, message.content, status=status, answer=message)
        return
    content = output if isinstance(output, str) or is_blocks(output) else dumps(output)
    run.tool_returned(key, at, content)


def _tool_raised(run: ForeignRun, key: UUID, at: float, error: BaseException) -> None:
    """A tool raised: the framework may answer its call with an error ``ToolMessage`` (the
    run waits for it) or let the error end the run; an interrupt or a hand-off leaves the
    call unanswered."""
    _interrupted_by(run, error)
    if _bubbles_up(error):
        run.tool_left_open(key, at)
        return
    reason = _error_reason(error)
    run.tool_raised(
        key,
        at,
        text=explain(error),
        error_reason=reason,
        error_type=error_name(error) if reason == "tool_error" else None,
    )


def _finish(run: ForeignRun, outputs: Any, at: float) -> None:
    """The run's root returned ``outputs``; its end is sent once nothing it started is out."""
    run.finish(at, text=_final_text(outputs), messages=tuple(messages_in(outputs)), wait=True)


def _fail(run: ForeignRun, error: BaseException, at: float, *, announce: bool = False) -> None:
    """The run raised ``error``; ``announce`` reports a run that failed before its first
    model or tool call too (a top-level run). An ``interrupt()`` that reached the run's
    root is no failure: the run finishes."""
    if run.ending:
        return
    _interrupted_by(run, error)
    if run.asked is not None and not _is_cancel(error):
        _finish(run, None, at)
        return
    if not (run.started or announce):
        run.ended = True
        return
    cancelled = _is_cancel(error)
    kind, reason = _str_attr(error, "kind"), _str_attr(error, "reason")
    failure = Failure(**failure_fields(error, kind=kind, reason=reason, cancelled=cancelled))
    run.fail(at, failure, wait=True)


def _interrupted_by(run: ForeignRun, error: BaseException) -> None:
    """A chain or tool of the run raised ``error``: an ``interrupt()`` pauses the run (the
    graph returns, or raises it to its caller), so it ends ``interrupted``."""
    if "GraphInterrupt" in _names(error):
        run.interrupt(_asked(error))


def _tool_message(output: Any, call_id: str) -> ToolMessage | None:
    """The ``ToolMessage`` answering ``call_id`` in a tool's output, if there is one."""
    if isinstance(output, ToolMessage):
        return output
    for message in messages_in(output):
        if isinstance(message, ToolMessage) and message.tool_call_id == call_id:
            return message
    return None


def _final_text(outputs: Any) -> str | None:
    """The run's answer: the text it returned, else the last message of its output (a
    ``return_direct`` tool's result); ``None``: neither (the last reply's is the answer)."""
    if isinstance(outputs, str):
        return outputs
    final: BaseMessage | None = None
    for message in messages_in(outputs):
        final = message
    return str(final.text) if final is not None else None  # not a TextAccessor


def _names(error: BaseException) -> set[str]:
    return {kind.__name__ for kind in type(error).__mro__}


def _asked(error: BaseException) -> str:
    """What an ``interrupt()`` asked: its values as text, one a line (a string as it is,
    anything else as JSON)."""
    found = error.args[0] if error.args else ()
    values = found if isinstance(found, (list, tuple)) else (found,)
    said = []
    for item in values:
        value = getattr(item, "value", item)
        said.append(value if isinstance(value, str) else dumps(json_safe(value)))
    return "\n".join(said)


def _bubbles_up(error: BaseException) -> bool:
    """LangGraph's control flow (an interrupt, a hand-off), not a failure."""
    return "GraphBubbleUp" in _names(error)


def _is_cancel(error: BaseException) -> bool:
    """The run was stopped: a cancelled task, Ctrl-C, or a consumer that closed the stream
    before it ended (``GeneratorExit``)."""
    stops = {"CancelledError", "KeyboardInterrupt", "SystemExit", "GeneratorExit"}
    return bool(_names(error) & stops)


def _error_reason(error: BaseException) -> str:
    """Why a tool run raised, in the loop's words where they fit."""
    if _is_cancel(error):
        return "cancelled"
    names = _names(error)
    if names & {"ValidationError", "ToolInvocationError"}:
        return "invalid_call"
    if "TimeoutError" in names:
        return "timeout"
    return "tool_error"


def _str_attr(error: BaseException, name: str) -> str | None:
    value = getattr(error, name, None)
    return value if isinstance(value, str) else None


# -- what a callback's arguments hold -------------------------------------------------------


def _reply(response: LLMResult) -> AIMessage:
    """The reply of a chat-model call (its first generation)."""
    generations = response.generations[0] if response.generations else []
    first = generations[0] if generations else None
    if isinstance(first, ChatGeneration) and isinstance(first.message, AIMessage):
        message = first.message
        if isinstance(message, AIMessageChunk):
            whole = message_chunk_to_message(message)
            return whole if isinstance(whole, AIMessage) else message
        return message
    return AIMessage(content=first.text if first is not None else "")


def _chain_name(serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str | None:
    name = kwargs.get("name") or (serialized or {}).get("name")
    return name if isinstance(name, str) and name else None


def _labels(kwargs: dict[str, Any]) -> tuple[tuple[str, ...], Any]:
    """A root chain's LangChain ``tags`` and ``metadata`` as a run's labels (text tags
    only; metadata as frozen JSON, LangGraph's own keys such as the thread id included)."""
    tags = tuple(t for t in kwargs.get("tags") or () if isinstance(t, str))
    metadata = kwargs.get("metadata")
    return tags, frozen_json(dict(metadata) if isinstance(metadata, Mapping) else {})


def _count(inputs: Any) -> int | None:
    """How many messages a run was started with, when its input is messages."""
    value = inputs.get("messages") if isinstance(inputs, dict) else inputs
    if isinstance(value, BaseMessage):
        return 1
    if isinstance(value, Sequence) and not isinstance(value, str):
        return sum(1 for m in value if isinstance(m, BaseMessage)) or None
    return None


def messages_in(value: Any, _depth: int = 0) -> Iterator[BaseMessage]:
    """Messages inside a chain or tool output: a message, a list of them, a state with a
    ``messages`` entry, or a LangGraph ``Command`` whose ``update`` holds them."""
    if _depth > _MAX_DEPTH:
        return
    if isinstance(value, BaseMessage):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from messages_in(item, _depth + 1)
    elif isinstance(value, Mapping):
        inner = value.get("messages")
        if inner is not None:
            yield from messages_in(inner, _depth + 1)
    else:
        update = getattr(value, "update", None)  # a Command (never a dict: handled above)
        if isinstance(update, (Mapping, list, tuple)):
            yield from messages_in(update, _depth + 1)


def bound_tool_names(invocation_params: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Names of the tools bound to a chat-model call, in any provider's tool format
    (OpenAI ``{"function": {"name"}}``, Anthropic ``{"name"}``, legacy ``functions``)."""
    if not invocation_params:
        return ()
    names: list[str] = []
    for key in ("tools", "functions"):
        tools = invocation_params.get(key)
        if not isinstance(tools, (list, tuple)):
            continue
        for tool in tools:
            name: Any = None
            if isinstance(tool, Mapping):
                inner = tool.get("function")
                name = inner.get("name") if isinstance(inner, Mapping) else tool.get("name")
            else:
                name = getattr(tool, "name", None)
            if isinstance(name, str) and name:
                names.append(name)
    return tuple(dict.fromkeys(names))


def configured_model_name(
    metadata: Mapping[str, Any] | None, invocation_params: Mapping[str, Any] | None
) -> str | None:
    """The model a call asks for: langchain-core's tracing name (``ls_model_name``, which
    every integration fills in), else the invocation parameters' own spelling."""
    for source, keys in (
        (metadata, ("ls_model_name",)),
        (invocation_params, ("model_name", "model", "model_id")),
    ):
        if not source:
            continue
        for key in keys:
            value = source.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def streaming_requested(invocation_params: Mapping[str, Any] | None) -> bool:
    """The call's parameters ask for a stream (``streaming=True`` / ``stream=True``).

    A framework may still decide to stream later (LangGraph's ``messages`` stream mode
    does): such a call reports ``False`` here and its ``model_delta`` events come anyway.
    """
    if not invocation_params:
        return False
    return invocation_params.get("stream") is True or invocation_params.get("streaming") is True
