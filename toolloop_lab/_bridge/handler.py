"""``EventBridge``: a langchain-core callback handler that feeds observers typed events.

Callbacks arrive as a tree of LangChain runs (chains, chat models, tools), each naming its
parent. The handler keeps one node per open LangChain run and routes every callback to the
:class:`~.run.BridgedRun` it belongs to:

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.utils import message_chunk_to_message
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, GenerationChunk, LLMResult

from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._stream import checked_observers
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab.events import Observer

from .conversation import bound_tool_names, configured_model_name, streaming_requested
from .run import BridgedRun, Clock


@dataclass(slots=True, eq=False)
class _Node:
    """One open LangChain run: the bridged run it belongs to, and what it is."""

    run: BridgedRun
    kind: str
    """``chain``, ``model`` or ``tool``."""
    root: bool = False
    """Its end ends ``run``."""
    tool_call_id: str | None = None
    direct: BridgedRun | None = None
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
        self._loose: BridgedRun | None = None

    def __repr__(self) -> str:
        return f"EventBridge(observers={len(self.observers)}, open_runs={len(self._nodes)})"

    # -- routing ----------------------------------------------------------------------
    def _new_run(self, run_id: str, **fields: Any) -> BridgedRun:
        return BridgedRun(self.observers, run_id, clock=self.clock, prices=self.prices, **fields)

    def _loose_run(self) -> BridgedRun:
        if self._loose is None or self._loose.ended:
            self._loose = self._new_run(str(uuid.uuid4()))
        return self._loose

    def _nested(self, tool: _Node, run_id: UUID, name: str | None) -> BridgedRun:
        return self._new_run(
            str(run_id),
            name=name,
            parent_run_id=tool.run.run_id,
            parent_tool_call_id=tool.tool_call_id,
        )

    def _owner(self, parent_run_id: UUID | None, run_id: UUID) -> BridgedRun:
        """The run a chat model or tool call belongs to."""
        parent = self._nodes.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            return self._loose_run()
        if parent.kind == "tool":
            if parent.direct is None:
                parent.direct = self._nested(parent, run_id, None)
            return parent.direct
        return parent.run

    def _end_loose(self, run: BridgedRun, error: BaseException | None) -> None:
        if run is not self._loose:
            return
        self._loose = None
        _end(run, None, error)

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
                node.run.finish(outputs)
            else:
                node.run.chain_output(outputs)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            if node.root:
                top_level = node.run.parent_run_id is None
                node.run.fail(error, announce=top_level)
            else:  # a node of the graph: an interrupt() pauses the whole run
                node.run.interrupted_by(error)

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
            run.model_start(
                run_id,
                messages[0] if messages else [],
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
            node.run.model_token(run_id, message)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            reply = _reply(response)
            node.run.model_end(run_id, reply)
            if not reply.tool_calls and not reply.invalid_tool_calls:
                self._end_loose(node.run, None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            node = self._nodes.pop(run_id, None)
            if node is None:
                return
            node.run.model_error(run_id, error)
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
            call_id = run.tool_start(
                run_id,
                given if isinstance(given, str) and given else None,
                str(name),
                args,
                kwargs.get("metadata"),
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
                _end(node.direct, output, error)
            if error is None:
                node.run.tool_end(run_id, output)
            else:
                node.run.tool_error(run_id, error)

    # -- the end of a watch block -----------------------------------------------------
    def close(self, error: BaseException | None = None) -> None:
        """End the loose run, if one is open: failed with ``error`` when given (the block
        raised), else finished with its last reply."""
        with self._lock:
            if self._loose is not None:
                self._end_loose(self._loose, error)


def _end(run: BridgedRun, outputs: Any, error: BaseException | None) -> None:
    """Finish ``run`` with ``outputs``, or fail it with ``error``."""
    if error is None:
        run.finish(outputs)
    else:
        run.fail(error)


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
