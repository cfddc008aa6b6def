"""The one producer of model-call and dispatch events, for the loop and foreign runs.

Our loop (:mod:`toolloop_lab._engine.loop`) and a run seen from outside, through LangChain
callbacks or spans (:mod:`toolloop_lab._foreign`), tell the same facts: a call was sent, it
streamed, it replied (its usage priced, the run's total after it, whether the round repeated
the one before) or it failed, a tool started, a call got its answer. Each fact becomes its
event here, from a reply, a usage or a tool result, so the two streams cannot drift apart.
Each caller passes its own ``emit`` (which fills in the run id, the round and the time) and
keeps its own totals; nothing here holds state of a run.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, NotRequired, Protocol, TypedDict, TypeVar, Unpack

from langchain_core.messages import AIMessage, BaseMessage

from toolloop_lab import events as ev
from toolloop_lab._engine.model_call import CallTiming, DeltaSink, RepeatedCalls, reply_fields
from toolloop_lab._spend.pricing import PriceTable, call_price, model_name_of
from toolloop_lab._spend.usage import Usage
from toolloop_lab._support.errortext import describe, error_name, explain
from toolloop_lab._support.escape import clip
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab._tools.content import blocks_of, content_text
from toolloop_lab._tools.servers import LogSlice, ServerIdentity

E = TypeVar("E", bound=ev.Event)

TRACEBACK_FRAMES: Final = 8
"""Frames of a failed call's traceback kept (the innermost), for each exception of its chain."""
TRACEBACK_CHARS: Final = 4_000
"""Characters of a failed call's traceback kept in its event (then the ``… (N chars)`` cut)."""


class Emit(Protocol):
    """Makes one event of a run (its id, round and time filled in) and hands it on."""

    def __call__(self, kind: Callable[..., E], **fields: Any) -> E: ...


class CallSent(TypedDict):
    """What a ``model_call_start`` says besides the call's number."""

    purpose: ev.CallPurpose
    model_name: str | None
    tools: tuple[str, ...]
    """The tools bound to this call (none for synthesis)."""
    messages: tuple[Any, ...]
    """The messages new to the model since its previous call, as dicts."""
    streaming: bool


def model_call_started(emit: Emit, number: int, **sent: Unpack[CallSent]) -> ev.ModelCallStarted:
    """``model_call_start``: call ``number`` was sent."""
    return emit(ev.ModelCallStarted, call=number, **sent)


def delta_sink(emit: Emit, number: int) -> DeltaSink:
    """Where a :class:`~toolloop_lab._engine.model_call.DeltaBuffer` of call ``number`` sends its
    coalesced fragments: one ``model_delta`` each."""

    def sink(text: str, calls: tuple[ev.ToolCallDelta, ...]) -> None:
        emit(ev.ModelDelta, call=number, text=text, tool_calls=calls)

    return sink


def priced_usage(
    reply: AIMessage,
    prompt: Sequence[BaseMessage],
    *,
    model: Any,
    fallback: str | None,
    prices: PriceTable | None,
) -> tuple[str | None, Usage]:
    """The model name ``reply`` answers to (its own, else ``model``'s, else ``fallback``)
    and its usage (estimated from ``prompt`` where the provider reported none), priced
    under the reply's name first, then ``fallback``."""
    name = model_name_of(model, reply.response_metadata) or fallback
    usage = Usage.from_ai_message(reply, prompt=prompt)
    return name, usage.with_cost(call_price(usage, (name, fallback), prices))


class Replied(TypedDict):
    """What a ``model_call`` says besides the reply's own fields and the call's timing."""

    purpose: Literal["round", "synthesis", "summarization"]
    model_name: str | None
    """The model the reply answers to (:func:`priced_usage`)."""
    usage: Usage
    accumulated: Usage
    """The run's total with ``usage``, counted by the caller first, so a paid reply is
    counted whatever happens to its event."""


def model_called(
    emit: Emit,
    reply: AIMessage,
    number: int,
    timing: CallTiming,
    repeats: RepeatedCalls,
    **replied: Unpack[Replied],
) -> ev.ModelCalled:
    """``model_call``: call ``number`` replied with ``reply``; a round's calls are judged
    against the round before (``repeats``)."""
    said = reply_fields(reply)
    stuck = replied["purpose"] == "round" and repeats.see(said["tool_calls"])
    latency_s, first_token_s = timing.latency_s, timing.first_token_s
    return emit(
        ev.ModelCalled,
        call=number,
        latency_s=latency_s,
        first_token_s=first_token_s,
        stuck=stuck,
        **replied,
        **said,
    )


def model_call_failed(
    emit: Emit,
    error: BaseException,
    *,
    number: int,
    purpose: ev.CallPurpose,
    latency_s: float,
    partial_text: str | None,
    usage: Usage | None = None,
    accumulated: Usage | None = None,
    retry_after_s: float | None = None,
) -> ev.ModelCallFailed:
    """``model_call_failed``: call ``number`` raised (or was stopped) instead of replying,
    keeping the text it streamed and the ``usage`` its provider had billed by then (the
    run's total with it, ``accumulated``)."""
    return emit(
        ev.ModelCallFailed,
        call=number,
        purpose=purpose,
        error_type=error_name(error),
        message=describe(error),
        latency_s=latency_s,
        partial_text=partial_text,
        usage=usage,
        accumulated=accumulated,
        traceback=_traceback(error),
        retry_after_s=retry_after_s,
    )


def _traceback(error: BaseException) -> str | None:
    """Where ``error`` was raised, for a person reading why a call failed: its innermost
    frames (and its causes'), clipped; ``None`` for a stop, which is no error."""
    if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
        return None
    try:
        lines = traceback.format_exception(
            type(error), error, error.__traceback__, limit=-TRACEBACK_FRAMES
        )
    except Exception:  # noqa: BLE001 - a hostile __str__ somewhere in the chain
        return explain(error)
    return clip("".join(lines), TRACEBACK_CHARS)


def tool_started(
    emit: Emit,
    *,
    call_id: str,
    name: str,
    args: Mapping[str, Any],
    server: ServerIdentity | None = None,
    session_id: str | None = None,
) -> None:
    """``tool_start``: the tool of call ``call_id`` began running with ``args`` (sent to
    MCP server ``server``, in session ``session_id``, for an MCP tool)."""
    if server is None:
        emit(ev.ToolStarted, tool_call_id=call_id, name=name, args=args)
        return
    emit(
        ev.ToolStarted,
        tool_call_id=call_id,
        name=name,
        args=args,
        server=server.name,
        transport=server.transport,
        session_id=session_id,
    )


def server_logged(emit: Emit, server: str, said: LogSlice, call_id: str | None) -> None:
    """``server_log``: lines MCP server ``server`` logged (while call ``call_id`` ran, or
    between calls for ``None``)."""
    emit(
        ev.ServerLogged,
        server=server,
        lines=said.lines,
        first_line=said.first,
        dropped=said.dropped,
        tool_call_id=call_id,
    )


class Answer(TypedDict):
    """What a ``tool_dispatch`` says of a call besides its id and its answer's text."""

    name: str
    args: Any
    status: ev.ToolStatus
    error_reason: str | None
    duration_s: float
    ran: NotRequired[bool]
    """The call's tool ran (the default); ``False`` for a call answered without running."""
    error_type: NotRequired[str | None]
    """The class name of the exception the tool raised (a ``tool_error`` that was one)."""
    server: NotRequired[str | None]
    """The MCP server the call's tool came from."""
    structured: NotRequired[Any]
    """An MCP tool's structured content (a JSON object), when its server sent one."""


def tool_dispatched(
    emit: Emit, call_id: str, content: str | Sequence[Any], **answer: Unpack[Answer]
) -> None:
    """``tool_dispatch``: call ``call_id`` got its answer, ``content`` (run or not): the
    answer's message content, text or content blocks (said in words, and kept as the
    blocks the model was sent, see :mod:`toolloop_lab._tools.content`)."""
    if type(content) is str:
        text, blocks = content, None
    else:
        text = content_text(content)
        blocks = (
            tuple(frozen_json(b) for b in blocks_of(content))
            if isinstance(content, (list, tuple)) and content
            else None
        )
    structured = answer.pop("structured", None)
    if structured is not None:
        answer["structured"] = frozen_json(structured)
    emit(
        ev.ToolDispatched,
        tool_call_id=call_id,
        output_chars=len(text),
        content=text,
        blocks=blocks,
        **answer,
    )
