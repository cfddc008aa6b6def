"""``SpanRun``: one agent's spans, told as the loop's typed events.

:class:`~toolloop_lab.otel._spans.SpanSource` decides which run a span belongs to; this class
turns the spans of that run into events, in the order the loop emits them, keeping what it
must (the conversation carried so far, the calls and tools still open, the spend). Every
time comes from the spans themselves (start and end times, relative to the agent span's
start), never from the clock when a span arrives, so a run read live and the same spans read
later give the same events.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from toolloop_lab import events as ev
from toolloop_lab._bridge.conversation import Conversation
from toolloop_lab._engine.call_events import model_called, priced_usage
from toolloop_lab._engine.model_call import CallTiming, RepeatedCalls, is_empty, is_truncated
from toolloop_lab._spend.pricing import PriceTable, call_price
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import finish_outcome, message_dicts, notify
from toolloop_lab._support.jsonsafe import freeze, frozen_json, json_safe
from toolloop_lab.otel import _conventions as cv
from toolloop_lab.otel._names import GEN_AI, TOOLLOOP

E = TypeVar("E", bound=ev.Event)
Purpose = Literal["round", "synthesis"]
_PURPOSES: Final = ("round", "synthesis")


@dataclass(frozen=True, slots=True)
class Failure:
    """What an error span says went wrong (``None``: it ended well)."""

    error_type: str
    message: str


@dataclass(slots=True, eq=False)
class _Call:
    number: int
    round: int
    purpose: ev.CallPurpose
    model_name: str | None
    start_ns: int


@dataclass(slots=True, eq=False)
class _Tool:
    call_id: str
    name: str
    args: Any
    round: int
    start_ns: int


@dataclass(slots=True, eq=False)
class SpanRun:
    """One run read from spans (an agent span and what ran under it)."""

    observers: tuple[ev.Observer, ...]
    run_id: str
    t0_ns: int
    prices: PriceTable | None = None
    model_name: str | None = None
    """The model the agent span names (a call span may name its own only at its end)."""
    round: int = 0
    rounds_done: int = 0
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    retry_next: bool = False
    synthesis_run: bool = False
    last_reply: AIMessage | None = None
    ended: bool = False
    conversation: Conversation = field(default_factory=Conversation)
    pending: list[BaseMessage] = field(default_factory=list)
    seen: list[BaseMessage] = field(default_factory=list)
    """The conversation as last read (a prompt, then it and its reply)."""
    """Messages learnt since the last ``model_call_start`` (replies, prompts recorded at a
    call's end): the next call's start or the run's end carries them."""
    open_calls: dict[int, _Call] = field(default_factory=dict)
    open_tools: dict[int, _Tool] = field(default_factory=dict)
    failed_calls: set[str] = field(default_factory=set)
    requested: dict[str, tuple[str, Any]] = field(default_factory=dict)
    """The last reply's tool calls no tool span has answered yet: id -> (name, args)."""
    answers: dict[str, ToolMessage] = field(default_factory=dict)
    """Tool results no prompt has carried yet: the run's end carries those still here (a
    run that stopped after its tools, before another call)."""
    """Tool calls whose tool ended in error: their results in a later prompt say so."""
    repeats: RepeatedCalls = field(default_factory=RepeatedCalls)
    memo: cv.PromptMemo = field(default_factory=cv.PromptMemo)

    # -- emitting ---------------------------------------------------------------------
    def emit(
        self, kind: Callable[..., E], at_ns: int, round: int | None = None, **fields: Any
    ) -> E:
        """Make one event of this run at span time ``at_ns`` and feed it to the observers."""
        event = kind(
            run_id=self.run_id,
            round=self.round if round is None else round,
            t=max(0.0, (at_ns - self.t0_ns) / 1e9),
            **fields,
        )
        notify(self.observers, event)
        return event

    def start(
        self,
        attributes: cv.Attributes,
        span_name: str,
        *,
        parent_run_id: str | None,
        parent_tool_call_id: str | None,
    ) -> None:
        """``loop_start``: the agent span (or a lone call's) began."""
        name = cv.text(attributes, GEN_AI.AGENT_NAME, "agent_name", "agent.name")
        if name is None and span_name.startswith(f"{GEN_AI.OP_INVOKE_AGENT} "):
            name = span_name.removeprefix(f"{GEN_AI.OP_INVOKE_AGENT} ")
        tags = attributes.get(TOOLLOOP.TAGS)
        inputs = cv.count(attributes, (TOOLLOOP.INPUT_MESSAGES,))
        self.model_name = cv.model_name(attributes)
        self.emit(
            ev.LoopStarted,
            self.t0_ns,
            model_name=self.model_name,
            tools=_strings(attributes.get(TOOLLOOP.TOOLS)),
            max_rounds=None,
            token_budget=None,
            context_window=None,
            usd_limit=None,
            prune_tools=(),
            input_messages=inputs or 0,
            started_at=_iso(self.t0_ns),
            source="otel",
            name=name,
            tags=_strings(tags),
            metadata=frozen_json({}),
            parent_run_id=parent_run_id,
            parent_tool_call_id=parent_tool_call_id,
        )

    # -- model calls --------------------------------------------------------------------
    def call_started(self, key: int, attributes: cv.Attributes, start_ns: int) -> None:
        """``round_start`` (unless a retry) and ``model_call_start`` at a call span's start."""
        said = attributes.get(TOOLLOOP.CALL_PURPOSE)
        if said == "pruning":
            self._pruning_started(key, attributes, start_ns)
            return
        if said == "summarization":
            self._summary_started(key, attributes, start_ns)
            return
        purpose: Purpose = "synthesis" if said == "synthesis" else "round"
        if not (self.retry_next and self.round):
            self.round += 1
            if purpose == "round":
                self.emit(ev.RoundStarted, start_ns, max_rounds=None)
        self.retry_next = False
        self.calls += 1
        sent = [*self.pending, *self._fresh(cv.input_messages(attributes, self.memo))]
        self.pending = []
        model = cv.model_name(attributes) or self.model_name
        self.emit(
            ev.ModelCallStarted,
            start_ns,
            call=self.calls,
            purpose=purpose,
            model_name=model,
            tools=_tool_names(attributes),
            messages=message_dicts(sent),
            streaming=attributes.get(GEN_AI.REQUEST_STREAM) is True,
        )
        self.open_calls[key] = _Call(self.calls, self.round, purpose, model, start_ns)

    def _pruning_started(self, key: int, attributes: cv.Attributes, start_ns: int) -> None:
        """Our own export's pruning call (``toolloop.call.purpose = pruning``): its prompt
        is its own, not the conversation's."""
        self.calls += 1
        model = cv.model_name(attributes) or self.model_name
        self.emit(
            ev.ModelCallStarted,
            start_ns,
            call=self.calls,
            purpose="pruning",
            model_name=model,
            tools=(),
            messages=message_dicts(cv.input_messages(attributes) or []),
            tool_call_id=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_CALL_ID),
        )
        self.open_calls[key] = _Call(self.calls, self.round, "pruning", model, start_ns)

    def _summary_started(self, key: int, attributes: cv.Attributes, start_ns: int) -> None:
        """Our own export's summarization call (``toolloop.call.purpose = summarization``,
        LangChain's ``SummarizationMiddleware`` on a ``create_agent`` run): a call of the
        round, its prompt its own."""
        self.calls += 1
        model = cv.model_name(attributes) or self.model_name
        self.emit(
            ev.ModelCallStarted,
            start_ns,
            call=self.calls,
            purpose="summarization",
            model_name=model,
            tools=(),
            messages=message_dicts(cv.input_messages(attributes) or []),
        )
        self.open_calls[key] = _Call(self.calls, self.round, "summarization", model, start_ns)

    def _summarized(self, call: _Call, attributes: cv.Attributes, end_ns: int) -> None:
        """``model_call`` of a summarization call, its usage counted in the run's."""
        reply = _reply(attributes, call.model_name)
        prompt = cv.input_messages(attributes) or []
        name, usage = _usage(reply, prompt, attributes, call.model_name, self.prices)
        self.usage = self.usage + usage
        model_called(
            lambda kind, **fields: self.emit(kind, end_ns, round=call.round, **fields),
            reply,
            call.number,
            CallTiming(max(0.0, (end_ns - call.start_ns) / 1e9)),
            self.repeats,
            purpose="summarization",
            model_name=name,
            usage=usage,
            accumulated=self.usage,
        )

    def _pruned(self, call: _Call, attributes: cv.Attributes, end_ns: int) -> None:
        """``pruning`` at a pruning call's end, its usage counted in the run's."""
        reply = _reply(attributes, call.model_name)
        prompt = cv.input_messages(attributes) or []
        name, usage = _usage(reply, prompt, attributes, call.model_name, self.prices)
        self.usage = self.usage + usage
        before = cv.count(attributes, (TOOLLOOP.PRUNING_TOKENS_BEFORE,)) or 0
        self.emit(
            ev.Pruned,
            end_ns,
            round=call.round,
            call=call.number,
            tool_call_id=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_CALL_ID) or "",
            tool_name=cv.text(attributes, TOOLLOOP.PRUNING_TOOL_NAME) or "",
            model_name=name,
            tokens_before=before,
            tokens_after=cv.count(attributes, (TOOLLOOP.PRUNING_TOKENS_AFTER,)) or before,
            usage=usage,
            latency_s=max(0.0, (end_ns - call.start_ns) / 1e9),
            original="",
            pruned=reply.text,
        )

    def call_ended(
        self, key: int, attributes: cv.Attributes, end_ns: int, failure: Failure | None
    ) -> None:
        """``model_call`` (usage, cost, reply) or ``model_call_failed`` at its span's end."""
        call = self.open_calls.pop(key, None)
        if call is None:
            return
        latency = max(0.0, (end_ns - call.start_ns) / 1e9)
        if call.purpose == "pruning" and failure is None:
            self._pruned(call, attributes, end_ns)
            return
        if call.purpose == "summarization" and failure is None:
            self._summarized(call, attributes, end_ns)
            return
        if failure is not None:
            self.retry_next = call.purpose not in ("pruning", "summarization")
            self.emit(
                ev.ModelCallFailed,
                end_ns,
                round=call.round,
                call=call.number,
                purpose=call.purpose,
                error_type=failure.error_type,
                message=failure.message,
                latency_s=latency,
            )
            return
        prompt = cv.input_messages(attributes, self.memo) or []
        reply = _reply(attributes, call.model_name)
        self.pending.extend(self._carried([*prompt, reply]))
        name, usage = _usage(reply, prompt, attributes, call.model_name, self.prices)
        self.usage = self.usage + usage
        first = cv.seconds(attributes, GEN_AI.RESPONSE_TIME_TO_FIRST_CHUNK)
        said = model_called(
            lambda kind, **fields: self.emit(kind, end_ns, round=call.round, **fields),
            reply,
            call.number,
            CallTiming(latency, first),
            self.repeats,
            purpose="synthesis" if call.purpose == "synthesis" else "round",
            model_name=name,
            usage=usage,
            accumulated=self.usage,
        )
        self.requested = {v.id: (v.name, v.args) for v in said.tool_calls if v.id}
        if call.purpose == "round":
            self.rounds_done += 1
        else:
            self.synthesis_run = True
        self.last_reply = reply

    def _fresh(self, prompt: list[BaseMessage] | None) -> list[BaseMessage]:
        """What a call is sent that no event carried yet: the new part of its prompt, or,
        when the span records its prompt only at its end, the tool results since the last
        reply (a framework sends those next, so the round shows them as sent)."""
        if prompt is not None:
            return self._carried(prompt)
        answers = list(self.answers.values())
        return self._carried([*self.seen, *answers]) if answers else []

    def _carried(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        """The messages of ``messages`` (the conversation so far) no event carried yet."""
        self.seen = messages
        return self._marked(self.conversation.new(messages))

    def _marked(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        """``messages`` with the results of tools that failed marked as errors (a prompt
        records a result's text, not its status); the results they carry are answered."""
        out: list[BaseMessage] = []
        for m in messages:
            if isinstance(m, ToolMessage):
                self.answers.pop(m.tool_call_id, None)
                if m.tool_call_id in self.failed_calls:
                    m = m.model_copy(update={"status": "error"})
            out.append(m)
        return out

    # -- tools --------------------------------------------------------------------------
    def tool_started(self, key: int, attributes: cv.Attributes, name: str, start_ns: int) -> str:
        """``tool_start``; returns the call id the tool answers."""
        args = freeze(json_safe(cv.tool_args(attributes)))
        call_id = cv.tool_call_id(attributes) or self._match(name, args) or f"{key:016x}"
        self.requested.pop(call_id, None)
        tool = _Tool(call_id, name, args, self.round, start_ns)
        self.open_tools[key] = tool
        self.emit(
            ev.ToolStarted, start_ns, round=tool.round, tool_call_id=call_id, name=name, args=args
        )
        return call_id

    def _match(self, name: str, args: Any) -> str | None:
        """The call a tool span without a call id answers (OpenInference's often have
        none): the last reply's first open call of that tool, with these arguments if one
        has them."""
        named = [i for i, (n, _) in self.requested.items() if n == name]
        same = [i for i in named if self.requested[i][1] == args]
        found = same or named
        return found[0] if found else None

    def tool_ended(
        self, key: int, attributes: cv.Attributes, end_ns: int, failure: Failure | None
    ) -> None:
        """``tool_dispatch`` with the status the span ended with."""
        tool = self.open_tools.pop(key, None)
        if tool is None:
            return
        said = attributes.get(TOOLLOOP.TOOL_STATUS)
        status: ev.ToolStatus = "error" if failure is not None else "success"
        if said in ("success", "error", "cancelled"):
            status = said
        reason = cv.text(attributes, TOOLLOOP.TOOL_ERROR_REASON)
        result = cv.tool_result(attributes)
        if result is None:
            result = f"{failure.error_type}: {failure.message}" if failure else ""
        ran = attributes.get(TOOLLOOP.TOOL_RAN)
        if status != "success":
            self.failed_calls.add(tool.call_id)
        if result:
            answer = "success" if status == "success" else "error"
            self.answers[tool.call_id] = ToolMessage(
                result, tool_call_id=tool.call_id, status=answer
            )
        self._dispatch(
            tool,
            end_ns,
            status=status,
            error_reason=(reason or "tool_error") if status != "success" else None,
            content=result,
            ran=ran is not False,
            error_type=failure.error_type if failure and status == "error" else None,
        )

    def _dispatch(self, tool: _Tool, end_ns: int, **answer: Any) -> None:
        ran = answer["ran"]
        self.emit(
            ev.ToolDispatched,
            end_ns,
            round=tool.round,
            tool_call_id=tool.call_id,
            name=tool.name,
            args=tool.args,
            duration_s=max(0.0, (end_ns - tool.start_ns) / 1e9) if ran else 0.0,
            output_chars=len(answer["content"]),
            **answer,
        )

    # -- the end ------------------------------------------------------------------------
    def close_open(self, end_ns: int) -> None:
        """Calls and tools whose spans never ended before the run's: stopped with it."""
        for key in list(self.open_calls):
            self.call_ended(key, {}, end_ns, Failure("incomplete", "the run ended first"))
        for tool in self.open_tools.values():
            self._dispatch(
                tool,
                end_ns,
                status="cancelled",
                error_reason="cancelled",
                content="",
                ran=True,
                error_type=None,
            )
        self.open_tools.clear()

    def finish(self, attributes: cv.Attributes, end_ns: int, failure: Failure | None) -> None:
        """``loop_finish`` or ``loop_failure`` at the agent span's end."""
        if self.ended:
            return
        self.close_open(end_ns)
        self.ended = True
        self.pending.extend(self.answers.values())
        self.answers.clear()
        said = attributes.get(TOOLLOOP.OUTCOME)
        if failure is not None:
            self._failed(failure, attributes, end_ns)
            return
        last = self.last_reply
        final = cv.output_messages(attributes)
        text = final[-1].text if final else (last.text if last is not None else "")
        outcome = finish_outcome(budget_exhausted=False, synthesis_was_run=self.synthesis_run)
        if said in ev.OUTCOMES and said not in ev.FAILED_OUTCOMES:
            outcome = said
        reason = attributes.get(TOOLLOOP.SYNTHESIS_REASON)
        self.emit(
            ev.LoopFinished,
            end_ns,
            final_text=text,
            rounds=self._rounds(attributes),
            usage=self.usage,
            budget_exhausted=attributes.get(TOOLLOOP.BUDGET_EXHAUSTED) is True,
            synthesis_was_run=self.synthesis_run,
            synthesis_reason=reason if reason in ("round_cap", "stuck", "token_budget") else None,
            outcome=outcome,
            final_empty=last is None or is_empty(last),
            final_truncated=last is not None and is_truncated(last),
            messages=message_dicts(self.pending),
        )

    def _rounds(self, attributes: cv.Attributes) -> int:
        """The rounds the run says it made (our export), else the rounds whose call replied."""
        said = cv.count(attributes, (TOOLLOOP.ROUNDS,))
        return self.rounds_done if said is None else said

    def _failed(self, failure: Failure, attributes: cv.Attributes, end_ns: int) -> None:
        said = attributes.get(TOOLLOOP.OUTCOME)
        outcome = said if said in ev.FAILED_OUTCOMES else "failed"
        self.emit(
            ev.LoopFailed,
            end_ns,
            error_type=failure.error_type,
            error_kind=cv.text(attributes, TOOLLOOP.ERROR_KIND),
            reason=cv.text(attributes, TOOLLOOP.ERROR_REASON),
            message=failure.message,
            cause_type=cv.text(attributes, TOOLLOOP.ERROR_CAUSE_TYPE),
            rounds=self._rounds(attributes),
            usage=self.usage,
            any_invocation_made=self.calls > 0,
            cancelled=outcome == "cancelled",
            outcome=outcome,
            messages=message_dicts(self.pending),
        )


def _reply(attributes: cv.Attributes, fallback: str | None) -> AIMessage:
    """The reply a call span records, as a message (empty text when not recorded), with
    its finish reason and model in the metadata where usage and cost are read."""
    said = cv.output_messages(attributes) or []
    replies = [m for m in said if isinstance(m, AIMessage)]
    base = replies[-1] if replies else AIMessage(content="")
    meta: dict[str, Any] = {}
    model = cv.model_name(attributes) or fallback
    if model:
        meta["model_name"] = model
    reason = cv.finish_reasons(attributes)
    if reason:
        meta["finish_reason"] = reason
    if attributes.get(TOOLLOOP.USAGE_ESTIMATED) is True:
        meta["usage_estimated"] = True
    return AIMessage(
        content=base.content,
        tool_calls=base.tool_calls,
        invalid_tool_calls=base.invalid_tool_calls,
        response_metadata=meta,
    )


def _usage(
    reply: AIMessage,
    prompt: Sequence[BaseMessage],
    attributes: cv.Attributes,
    fallback: str | None,
    prices: PriceTable | None,
) -> tuple[str | None, Usage]:
    """The call's usage as the span reports it; what it does not report is estimated and
    flagged (as the bridge does), and it is priced by genai-prices or ``prices``."""
    counts = {
        "input_tokens": cv.count(attributes, cv.INPUT_TOKENS),
        "output_tokens": cv.count(attributes, cv.OUTPUT_TOKENS),
        "cache_read_tokens": cv.count(attributes, cv.CACHE_READ_TOKENS),
        "cache_write_tokens": cv.count(attributes, cv.CACHE_WRITE_TOKENS),
    }
    read, write = counts["cache_read_tokens"], counts["cache_write_tokens"]
    if counts["input_tokens"] is not None and counts["output_tokens"] is not None:
        details = {k: v for k, v in (("cache_read", read), ("cache_creation", write)) if v}
        reply = reply.model_copy(
            update={
                "usage_metadata": {
                    "input_tokens": counts["input_tokens"],
                    "output_tokens": counts["output_tokens"],
                    "total_tokens": counts["input_tokens"] + counts["output_tokens"],
                    "input_token_details": details,
                }
            }
        )
    name, usage = priced_usage(reply, prompt, model=None, fallback=fallback, prices=prices)
    if reply.usage_metadata is None:  # some counts unknown: keep the ones the span gave
        known: dict[str, Any] = {k: v for k, v in counts.items() if v is not None}
        if known:
            usage = replace(usage, **known)
            name, usage = _repriced(usage, name, fallback, prices)
    return name, usage


def _repriced(
    usage: Usage, name: str | None, fallback: str | None, prices: PriceTable | None
) -> tuple[str | None, Usage]:
    return name, usage.with_cost(call_price(usage, (name, fallback), prices))


def _tool_names(attributes: cv.Attributes) -> tuple[str, ...]:
    """The tools bound to a call, when the span lists them."""
    raw = attributes.get(GEN_AI.TOOL_DEFINITIONS)
    if not isinstance(raw, str):
        return ()
    data = cv.parse_json(raw)
    if not isinstance(data, list):
        return ()
    names = (d.get("name") for d in data if isinstance(d, Mapping))
    return tuple(n for n in names if isinstance(n, str))


def _strings(value: Any) -> tuple[str, ...]:
    """The texts of a list attribute (tags, tool names); items of another type are no
    text, and are left out rather than made one by ``str()``."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return tuple(v for v in value if isinstance(v, str))
    return ()


def _iso(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat()
