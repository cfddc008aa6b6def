"""The one producer of model-call and dispatch events, for the loop and the bridge.

Our loop (:mod:`toolloop_lab.loop`) and a LangChain run seen through callbacks
(:mod:`toolloop_lab.bridge`) tell the same facts: a call was sent, it streamed, it replied
(its usage priced, the run's total after it, whether the round repeated the one before) or
it failed, a tool started, a call got its answer. Each fact becomes its event here, from a
reply, a usage or a tool result, so the two streams cannot drift apart. Each caller passes
its own ``emit`` (which fills in the run id, the round and the time) and keeps its own
totals; nothing here holds state of a run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from langchain_core.messages import AIMessage, BaseMessage

from toolloop_lab import events as ev
from toolloop_lab.errors import describe
from toolloop_lab.model_call import CallTiming, DeltaSink, RepeatedCalls, reply_fields
from toolloop_lab.pricing import PriceTable, call_price, model_name_of
from toolloop_lab.usage import Usage

__all__ = [
    "Emit",
    "delta_sink",
    "model_call_failed",
    "model_call_started",
    "model_called",
    "priced_usage",
    "tool_dispatched",
    "tool_started",
]


E = TypeVar("E", bound=ev.Event)


class Emit(Protocol):
    """Makes one event of a run (its id, round and time filled in) and hands it on."""

    def __call__(self, kind: Callable[..., E], **fields: Any) -> E: ...


def model_call_started(
    emit: Emit,
    *,
    number: int,
    purpose: ev.CallPurpose,
    model_name: str | None,
    tools: tuple[str, ...],
    messages: tuple[Any, ...],
    streaming: bool,
) -> ev.ModelCallStarted:
    """``model_call_start``: call ``number`` was sent with ``messages`` new to the model."""
    return emit(
        ev.ModelCallStarted,
        call=number,
        purpose=purpose,
        model_name=model_name,
        tools=tools,
        messages=messages,
        streaming=streaming,
    )


def delta_sink(emit: Emit, number: int) -> DeltaSink:
    """Where a :class:`~toolloop_lab.model_call.DeltaBuffer` of call ``number`` sends its
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


def model_called(
    emit: Emit,
    reply: AIMessage,
    *,
    number: int,
    purpose: ev.CallPurpose,
    model_name: str | None,
    usage: Usage,
    accumulated: Usage,
    timing: CallTiming,
    repeats: RepeatedCalls,
) -> ev.ModelCalled:
    """``model_call``: call ``number`` replied with ``reply``, costing ``usage`` (the run's
    total is ``accumulated``, counted by the caller first, so a paid reply is counted
    whatever happens to its event); a round's calls are judged against the round before."""
    said = reply_fields(reply)
    stuck = purpose == "round" and repeats.see(said["tool_calls"])
    return emit(
        ev.ModelCalled,
        call=number,
        purpose=purpose,
        model_name=model_name,
        usage=usage,
        accumulated=accumulated,
        latency_s=timing.latency_s,
        first_token_s=timing.first_token_s,
        stuck=stuck,
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
) -> ev.ModelCallFailed:
    """``model_call_failed``: call ``number`` raised (or was stopped) instead of replying,
    keeping the text it streamed and the ``usage`` its provider had billed by then (the
    run's total with it, ``accumulated``)."""
    return emit(
        ev.ModelCallFailed,
        call=number,
        purpose=purpose,
        error_type=type(error).__name__,
        message=describe(error),
        latency_s=latency_s,
        partial_text=partial_text,
        usage=usage,
        accumulated=accumulated,
    )


def tool_started(emit: Emit, *, call_id: str, name: str, args: Mapping[str, Any]) -> None:
    """``tool_start``: the tool of call ``call_id`` began running with ``args``."""
    emit(ev.ToolStarted, tool_call_id=call_id, name=name, args=args)


def tool_dispatched(
    emit: Emit,
    *,
    call_id: str,
    name: str,
    args: Any,
    status: ev.ToolStatus,
    error_reason: str | None,
    duration_s: float,
    content: str,
    ran: bool = True,
) -> None:
    """``tool_dispatch``: call ``call_id`` got its answer, ``content`` (run or not)."""
    emit(
        ev.ToolDispatched,
        tool_call_id=call_id,
        name=name,
        args=args,
        status=status,
        error_reason=error_reason,
        duration_s=duration_s,
        output_chars=len(content),
        content=content,
        ran=ran,
    )
