"""Watch the agents people already have: LangChain and LangGraph runs as typed events.

``create_agent``, a LangGraph ``StateGraph`` with a ``ToolNode``, a classic
``AgentExecutor`` or a hand-written ``bind_tools`` loop all report what they do through
langchain-core callbacks. This package turns those callbacks into the event stream the
loop emits, so the live debugger, ``TraceWriter``, ``from_trace``, ``RunView`` and the lab
frames work on those runs unchanged::

    from toolloop_lab._bridge import watch

    with watch(dbg, TraceWriter("run.jsonl")):  # any observers
        graph.invoke({"messages": [("user", "hi")]})

or explicitly, ``graph.invoke(inputs, config={"callbacks": [callbacks(dbg)]})``.

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

from __future__ import annotations

from .handler import EventBridge
from .watch import callbacks, watch

__all__ = ["EventBridge", "callbacks", "watch"]
