"""Typed, frozen events: the single source for the live view, traces, the lab and exports.

Every event has ``kind`` (a literal tag), ``run_id``, ``round`` and ``t`` (seconds since the
run started, from a monotonic clock). Round 0 holds what happens before the first round;
synthesis events carry the round after the last tool round.

One run, in order (``*`` may repeat, ``?`` may be absent)::

    loop_start
      round_start                       one per tool round
        model_call_start                what is sent: purpose, model, tools, new messages
        model_delta*                    streamed text / tool-argument fragments (coalesced)
        model_call | model_call_failed  the reply (usage, cost, latency, text, tool calls),
                                        or the error the call raised instead
        budget_gate*                    token and USD checks around each call
        intervention*                   a person changed something at a pause
        pause*                          a pause hook held the loop (before a model call
                                        or before dispatch), for how long
        tool_start*                     each tool as it actually begins
        server_log*                     what an MCP tool's server said while it ran
        tool_dispatch*                  each call's result, in completion order
        model_call_start (pruning)?     ... then pruning (one per pruned output)
      synthesis?                        the loop must stop early: one call without tools
    server_log*                         what MCP servers said between the run's calls
    loop_finish | loop_failure          the outcome, the spend, the closing messages

Data in events is frozen all the way down (``FrozenDict`` and tuples), so an observer can
never rewrite a tool call or a message the loop keeps. ``to_dict()`` gives JSON-safe data;
:func:`parse_event` reads one JSON line back with pydantic in strict mode, because a trace
is a file anyone can edit: what reaches a view is exactly what the loop could have emitted.
:func:`transcript` rebuilds the conversation from the events alone.
"""

from __future__ import annotations

import functools
import json
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Annotated, Any, Final, Literal, TypeAlias, get_args

import orjson
from langchain_core.messages import BaseMessage
from pydantic import Field, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import failure_outcome, finish_outcome, message_from_dict
from toolloop_lab._support.fields import (
    Count,
    FiniteDecimal,
    Flag,
    JsonObject,
    JsonValue,
    PositiveInt,
    Seconds,
    Text,
)
from toolloop_lab._support.jsonl import load_line
from toolloop_lab._support.jsonsafe import FrozenDict, json_safe, thaw
from toolloop_lab._support.pickling import quick_pickle
from toolloop_lab.errors import ConfigurationError, UnknownRunError

__all__ = [
    "EVENT_TYPES",
    "FAILED_OUTCOMES",
    "OUTCOMES",
    "BudgetGate",
    "CallPurpose",
    "Event",
    "Intervention",
    "InterventionAction",
    "LoopFailed",
    "LoopFinished",
    "LoopStarted",
    "McpTransport",
    "ModelCallFailed",
    "ModelCallStarted",
    "ModelCalled",
    "ModelDelta",
    "Observer",
    "Outcome",
    "PauseStage",
    "Paused",
    "Pruned",
    "RoundStarted",
    "ServerLogged",
    "SynthesisReason",
    "SynthesisStarted",
    "ToolCallDelta",
    "ToolCallView",
    "ToolDispatched",
    "ToolStarted",
    "ToolStatus",
    "by_run",
    "event_from_dict",
    "parse_event",
    "run_ids",
    "select_run",
    "tool_rounds_of",
    "top_level_run_ids",
    "transcript",
]

SynthesisReason: TypeAlias = Literal["round_cap", "stuck", "token_budget"]
"""Why a synthesis call ran: the round cap was reached, the model repeated the same tool
calls ``max_stuck_rounds`` times in a row, or the token budget was spent."""

CallPurpose: TypeAlias = Literal["round", "synthesis", "pruning", "summarization"]
"""What a model call is for: a tool round, the final synthesis, shortening a tool output, or
summarizing the conversation so far (a call LangChain's ``SummarizationMiddleware`` makes
before a ``create_agent`` round: counted, priced and under the budgets, not part of the
conversation)."""

Outcome: TypeAlias = Literal[
    "final_answer",
    "synthesis",
    "token_budget_exhausted",
    "usd_budget_exhausted",
    "failed",
    "cancelled",
    "interrupted",
]
"""How a run ended, the one vocabulary of every view:

* ``final_answer``: the model answered on its own;
* ``synthesis``: the round cap or a stuck model led to one synthesis call, which answered;
* ``token_budget_exhausted``: the token budget was spent, then synthesis answered;
* ``usd_budget_exhausted``: the USD budget stopped the run (it raised);
* ``failed``: anything else raised (a model error, a bad config, a tool that interrupted);
* ``cancelled``: the run was stopped (a person's Stop, task cancellation, Ctrl-C);
* ``interrupted``: a LangGraph run seen through the bridge paused at ``interrupt()`` and
  waits for a person's input (``Command(resume=...)`` goes on, as a new run): it ended
  well, with a ``loop_finish``, and is no failure.
"""

OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
"""Every :data:`Outcome`, in the order the vocabulary lists them."""

FAILED_OUTCOMES: Final[frozenset[Outcome]] = frozenset(
    {"usd_budget_exhausted", "failed", "cancelled"}
)
"""Outcomes of a run that raised instead of returning a result."""

InterventionAction: TypeAlias = Literal["edit_args", "skip", "append_message", "edit_result"]
"""What a person did at a pause: changed a call's arguments, answered a call by hand
instead of running it, added a message before a model call, or replaced a tool result."""


ToolStatus: TypeAlias = Literal["success", "error", "cancelled"]
"""How a tool call ended: its tool succeeded; it failed or was answered with an error
(never run, unknown, invalid, timed out, ...); or the run was stopped while the tool was
running (it ran, and may have had effects, for ``duration_s`` so far). A cancelled call's
``ToolMessage`` has status ``error``: the model reads it as a call that did not finish."""

McpTransport: TypeAlias = Literal["stdio", "streamable_http"]
"""How the loop reaches an MCP server: a process it started, over its stdin and stdout
(``stdio``), or a URL (``streamable_http``)."""

PauseStage: TypeAlias = Literal["model_call", "tool_dispatch"]
"""Where a pause holds the loop: before a model call, or before a round's tool dispatch."""


def tool_rounds_of(end: LoopFinished | LoopFailed) -> int:
    """Rounds that ended in tool calls (each answered: by its tools, or as not run when the
    token budget ran out first), read from a run's closing event: every round ``rounds``
    counts (a round a stop or a USD limit cut short is not one), less the round whose reply
    answered (a run that finished without a
    final-answer call). Three tool rounds then an answer: ``rounds=4``, ``tool_rounds=3``."""
    answered = (
        isinstance(end, LoopFinished)
        and not end.synthesis_was_run
        and end.outcome != "interrupted"  # the graph paused inside a tool: that round ran
    )
    return max(end.rounds - 1, 0) if answered else end.rounds


@dataclass(frozen=True, slots=True)
class ToolCallView:
    """One tool call as the model asked for it (``valid`` is False for invalid JSON)."""

    id: Text
    name: Text
    args: JsonObject
    valid: Flag = True
    error: Text | None = None


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call: its position, and the argument text added."""

    index: Count
    id: Text | None = None
    name: Text | None = None
    args: Text = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Base:
    run_id: Text
    round: Count
    t: Seconds
    """Seconds since the run started (monotonic clock)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe data: Decimal as string, tuples as lists, no Python reprs (text is kept
        exactly, lone surrogates included: ``json.dumps`` escapes them)."""
        raw = self.to_json()
        if raw is not None:  # one-pass bytes and the C parser: the fast way there
            data: dict[str, Any] = json.loads(raw)
            return data
        return self._careful_dict()

    def to_json(self) -> bytes | None:
        """The event as compact UTF-8 JSON in one pass: the bytes the event schema's pydantic
        serialiser writes, made by orjson (5-15x sooner: pydantic infers the type of every
        frozen value, a ``dict`` subclass, one by one), pydantic itself writing what orjson
        refuses; ``None`` when a string holds a lone surrogate, which UTF-8 cannot carry
        (:meth:`to_dict` and ``json.dumps`` keep those as ``\\udXXX`` escapes)."""
        try:
            return orjson.dumps(self, default=_decimal_text)
        except (orjson.JSONEncodeError, TypeError):
            pass  # a lone surrogate, an integer past 64 bits: pydantic decides
        try:
            return _adapter().dump_json(self)  # type: ignore[arg-type]
        except PydanticSerializationError:
            return None

    def _careful_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = json_safe(_adapter().dump_python(self))  # type: ignore[arg-type]
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopStarted(_Base):
    """A run accepted its config and is about to make its first call."""

    model_name: Text | None
    tools: tuple[Text, ...]
    max_rounds: PositiveInt | None
    """The round cap; ``None`` when the run's framework enforces none we know of."""
    token_budget: Count | None
    context_window: PositiveInt | None
    usd_limit: FiniteDecimal | None
    prune_tools: tuple[Text, ...]
    input_messages: Count
    started_at: Text
    """Wall-clock start, ISO 8601 UTC."""
    source: Literal["loop", "langchain", "otel"] = "loop"
    """``loop``: our loop, which enforces every gate (an ``LLMAgent`` run, or a LangChain
    ``create_agent`` run that ``ToolLoopMiddleware`` drives). ``langchain``: a run seen
    through the callback bridge; ``otel``: a run read from OpenTelemetry spans
    (:class:`~toolloop_lab.otel.SpanSource`). The gates of those two are absent (not
    passed) and their unknown figures are marked unknown."""
    name: Text | None = None
    """What the run is called: ``run(..., name=)`` for our loop, the agent's or graph's
    name for a run seen through the bridge; ``None`` when nobody named it."""
    tags: tuple[Text, ...] = ()
    """Labels the caller gave the run (``run(..., tags=)``), in the order given."""
    metadata: JsonObject = field(default_factory=FrozenDict)
    """What else the caller said about the run (``run(..., metadata=)``), as frozen JSON."""
    parent_run_id: Text | None = None
    """A nested run (a sub-agent called as a tool): the run that called it."""
    parent_tool_call_id: Text | None = None
    """... and the tool call of that run it answers."""
    kind: Literal["loop_start"] = "loop_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundStarted(_Base):
    """A tool round begins: a model call with tools bound, then dispatch."""

    max_rounds: PositiveInt | None
    kind: Literal["round_start"] = "round_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallStarted(_Base):
    """A model call is about to be sent.

    ``messages`` holds the messages appended to the conversation since the previous round
    or synthesis call (all of them for the first call), as langchain-core message dicts
    (``message_to_dict``), so the events alone rebuild what the model was sent. A pruning
    call's ``messages`` are its own prompt, not part of the conversation.
    """

    call: Count
    """This call's number in the run (1, 2, ...); its ``model_delta`` and ``model_call``
    events carry the same number."""
    purpose: CallPurpose
    model_name: Text | None
    tools: tuple[Text, ...]
    """Names of the tools bound to the call (none for synthesis and pruning)."""
    messages: tuple[JsonObject, ...]
    streaming: Flag = False
    """The loop reads the reply as a stream (``model_delta`` events follow)."""
    tool_call_id: Text | None = None
    """Pruning calls: the tool call whose output is being shortened."""
    kind: Literal["model_call_start"] = "model_call_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelDelta(_Base):
    """Streamed reply fragments since the previous delta of the same call (coalesced: at
    most about 20 a second per call, whatever the provider's token rate)."""

    call: Count
    text: Text = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    kind: Literal["model_delta"] = "model_delta"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCalled(_Base):
    """A model call returned (a tool round's call, the synthesis call, or a summarization
    call: one of the round, not the round's own call)."""

    purpose: Literal["round", "synthesis", "summarization"]
    model_name: Text | None
    usage: Usage
    """This call's tokens and cost."""
    accumulated: Usage
    """Everything spent by the run so far, pruning included."""
    latency_s: Seconds
    """From sending the request to the whole reply (the last chunk, when streamed)."""
    text: Text
    tool_calls: tuple[ToolCallView, ...]
    finish_reason: Text | None
    """Why the provider says the reply ended, as it spells it ("stop", "length", ...)."""
    stuck: Flag
    """The reply repeats the previous round's tool calls exactly (same names and
    arguments): no progress. A reply without text is not stuck on its own."""
    empty: Flag = False
    """No text and no tool call: an empty or thinking-only reply."""
    truncated: Flag = False
    """Cut off by the provider's output-token limit (finish reason "length"/"max_tokens");
    its tool calls are answered with errors instead of being run."""
    call: Count = 0
    """The call number of its ``model_call_start`` (0 in traces written before it)."""
    first_token_s: Seconds | None = None
    """Streamed calls: seconds from sending the request to the first fragment."""
    kind: Literal["model_call"] = "model_call"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCallFailed(_Base):
    """A model call raised (or was stopped) instead of replying. In the loop the run then
    fails, unless a rate limit's wait was asked for and retries are left
    (``retry_after_s``); a framework seen through the bridge may retry it as a new call."""

    call: Count
    purpose: CallPurpose
    error_type: Text
    message: Text
    latency_s: Seconds
    """From sending the request to the failure."""
    partial_text: Text | None = None
    """Text it had streamed before it failed, if any."""
    usage: Usage | None = None
    """Tokens and cost the provider reported before the call failed (a stream cut after
    its usage chunk was billed), counted in the run's totals; ``None`` if it reported none."""
    accumulated: Usage | None = None
    """Everything spent by the run so far, this call included (set with ``usage``)."""
    traceback: Text | None = None
    """Where it raised: the exception's traceback (its last frames, and the causes'),
    clipped; ``None`` for a stop, and in traces written before it."""
    retry_after_s: Seconds | None = None
    """The provider refused the call for a rate limit (HTTP 429) and the loop waited this
    many seconds (its ``Retry-After``), then sent the call again as a new call
    (``AgentConfig.rate_limit_retries``); ``None``: the call was not sent again."""
    kind: Literal["model_call_failed"] = "model_call_failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStarted(_Base):
    """A tool actually began running (unknown tools and invalid calls never start)."""

    tool_call_id: Text
    name: Text
    args: JsonObject
    server: Text | None = None
    """The MCP server the tool came from (``mcp_tools``); ``None`` for any other tool, and
    in traces written before it."""
    transport: McpTransport | None = None
    """How the loop reaches that server: ``stdio`` (a process it started) or
    ``streamable_http`` (a URL)."""
    session_id: Text | None = None
    """The MCP session the call is sent in, when the server gave one (streamable HTTP)."""
    kind: Literal["tool_start"] = "tool_start"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDispatched(_Base):
    """A tool call got its ``ToolMessage`` (success or error); emitted as each call
    finishes, so in completion order (the transcript keeps call order)."""

    tool_call_id: Text
    name: Text
    args: JsonObject
    status: ToolStatus
    """``success``, ``error``, or ``cancelled``: the run was stopped while this tool ran
    (see :data:`ToolStatus`)."""
    error_reason: Text | None
    """Why it is an error: ``not_available``, ``invalid_call``, ``tool_error``,
    ``timeout``, ... and for calls that never ran ``token_budget``, ``cancelled``,
    ``truncated``, ``skipped`` (answered by hand); ``cancelled`` for a call stopped while
    it ran too (its ``ran`` tells the two apart)."""
    duration_s: Seconds
    """How long the tool ran (until the stop, for a cancelled one); never time a pause
    held the loop before it."""
    output_chars: Count
    content: Text
    """The tool's output text (a later ``Pruned`` event with this id may shorten it); a
    result of content blocks in words, as every view shows it: its text, an image as
    ``[image: image/png, 12 KB]`` (see ``blocks``)."""
    ran: Flag = True
    """False for a call the loop answered without running it (a spent budget, a stop
    before it began, a cut-off reply, a person's skip): it has no duration and no size of
    its own. A call stopped while its tool ran did run (status ``cancelled``)."""
    error_type: Text | None = None
    """The class name of the exception the tool raised (``ValueError``), for a
    ``tool_error`` that was one; ``None`` otherwise, and in traces written before it."""
    blocks: tuple[JsonObject, ...] | None = None
    """A result of content blocks (an MCP tool's, say), as the model was sent them: text,
    images, files, without the ids langchain-core made up for them; ``None`` for a result
    that is text, and in traces written before it."""
    server: Text | None = None
    """The MCP server the tool came from, as its ``tool_start`` says (also for a call
    answered without running); ``None`` for any other tool."""
    structured: JsonObject | None = None
    """An MCP tool's structured content (``structuredContent``, the JSON object a tool with
    an output schema returns beside its blocks), as the server sent it; ``None`` when it
    sent none."""
    kind: Literal["tool_dispatch"] = "tool_dispatch"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerLogged(_Base):
    """Lines an MCP server wrote to its stderr (or sent as log messages), numbered in its
    log from 1: those that arrived while a call ran come just before that call's
    ``tool_dispatch`` (``tool_call_id`` names it; lines a call's neighbours wrote at the
    same time are beside each of them), those between calls at the run's end
    (``tool_call_id`` ``None``). Bounded: a batch keeps its newest lines, each clipped,
    and counts the rest in ``dropped``."""

    server: Text
    lines: tuple[Text, ...]
    first_line: PositiveInt
    """The number of ``lines[0]`` in the server's log."""
    dropped: Count = 0
    """Lines of this batch before ``first_line`` that were left out."""
    tool_call_id: Text | None = None
    kind: Literal["server_log"] = "server_log"


@dataclass(frozen=True, slots=True, kw_only=True)
class Pruned(_Base):
    """The pruning model shortened a tool output before it entered the conversation."""

    tool_call_id: Text
    tool_name: Text
    model_name: Text | None
    tokens_before: Count
    tokens_after: Count
    usage: Usage
    """The pruning call's own tokens and cost (they count as spend)."""
    latency_s: Seconds
    original: Text
    pruned: Text
    call: Count = 0
    """The call number of the pruning call's ``model_call_start``."""
    kind: Literal["pruning"] = "pruning"

    @property
    def tokens_saved(self) -> int:
        """Tokens kept out of the conversation."""
        return self.tokens_before - self.tokens_after

    @property
    def net_saved(self) -> int:
        """Tokens saved minus what the pruning call itself spent (negative: a loss)."""
        return self.tokens_saved - self.usage.total_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetGate(_Base):
    """A budget check: token gates lead to synthesis, a tripped USD gate raises."""

    gate: Literal["token", "usd"]
    stage: Literal["before_call", "after_call"]
    limit: FiniteDecimal
    spent: FiniteDecimal
    passed: Flag
    kind: Literal["budget_gate"] = "budget_gate"


@dataclass(frozen=True, slots=True, kw_only=True)
class SynthesisStarted(_Base):
    """The loop must stop early and asks once, without tools, for a final answer."""

    reason: SynthesisReason
    prompt: Text
    kind: Literal["synthesis"] = "synthesis"


@dataclass(frozen=True, slots=True, kw_only=True)
class Intervention(_Base):
    """A person changed the run at a pause; ``before`` and ``after`` say exactly what."""

    action: InterventionAction
    stage: Literal["model_call", "tool_dispatch"]
    tool_call_id: Text | None = None
    before: JsonValue = None
    """What was there: the call's arguments, the tool result, ``None`` for an append."""
    after: JsonValue = None
    """What is there now: the new arguments, the hand-written result, the added message."""
    kind: Literal["intervention"] = "intervention"


@dataclass(frozen=True, slots=True, kw_only=True)
class Paused(_Base):
    """A pause hook held the loop (step mode: a person reading, changing, deciding) and it
    went on, or was stopped, at ``t``.

    The held time is the person's, not the run's: it lies between the events around it
    (before a ``model_call_start``, or before a round's first ``tool_start``), so no
    latency or duration holds it, and views draw it as its own segment of the round
    ``[t - paused_s, t]``. Traces written before it existed simply have none.
    """

    stage: PauseStage
    purpose: Text
    """``round``, ``synthesis`` or ``pruning`` before a model call; ``tools`` before
    dispatch (as :class:`~toolloop_lab._engine.hooks.PausePoint` says)."""
    paused_s: Seconds
    """How long the hooks held the loop here."""
    kind: Literal["pause"] = "pause"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopFinished(_Base):
    """The run returned a result (a bridged LangGraph run: or paused at ``interrupt()``,
    outcome ``interrupted``)."""

    final_text: Text
    """The answer; for an ``interrupted`` run, what the graph asked (the values it passed
    to ``interrupt()``)."""
    rounds: Count
    usage: Usage
    budget_exhausted: Flag
    synthesis_was_run: Flag
    synthesis_reason: SynthesisReason | None
    outcome: Outcome
    final_empty: Flag = False
    """The final answer has no text (an empty or thinking-only reply): the loop ends on
    it, as the model asked, but says so."""
    final_truncated: Flag = False
    """The final answer was cut off by the provider's output-token limit."""
    messages: tuple[JsonObject, ...] = ()
    """Messages appended since the last ``model_call_start`` (the final reply, and error
    results for calls a synthesis reply asked for), so :func:`transcript` is complete."""
    kind: Literal["loop_finish"] = "loop_finish"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopFailed(_Base):
    """The run raised; the partial counts are here too."""

    error_type: Text
    error_kind: Text | None
    reason: Text | None
    message: Text
    cause_type: Text | None
    rounds: Count
    usage: Usage
    any_invocation_made: Flag
    cancelled: Flag
    outcome: Outcome
    messages: tuple[JsonObject, ...] = ()
    """Messages appended since the last ``model_call_start`` (a paid reply, error results
    closing open calls), so :func:`transcript` equals the error's ``messages``."""
    partial_text: Text | None = None
    """Text streamed by a call that failed or was stopped mid-stream."""
    kind: Literal["loop_failure"] = "loop_failure"


Event: TypeAlias = (
    LoopStarted
    | RoundStarted
    | ModelCallStarted
    | ModelDelta
    | ModelCalled
    | ModelCallFailed
    | ToolStarted
    | ToolDispatched
    | ServerLogged
    | Pruned
    | BudgetGate
    | SynthesisStarted
    | Intervention
    | Paused
    | LoopFinished
    | LoopFailed
)
"""Everything a run emits."""

EVENT_TYPES: Final[Mapping[str, type[Event]]] = {
    cls.__dataclass_fields__["kind"].default: cls for cls in get_args(Event)
}
"""Each event type by its ``kind`` tag (``"loop_start"``: :class:`LoopStarted`, ...)."""

for _cls in (*get_args(Event), ToolCallView, ToolCallDelta):
    quick_pickle(_cls)  # a sweep's events cross processes pickled: see _support/pickling.py


def _decimal_text(value: object) -> str:
    """How pydantic writes a Decimal in JSON (a string, exactly as ``str`` gives it); any
    other type orjson does not know is refused, so pydantic writes that event instead."""
    if type(value) is Decimal:
        return str(value)
    raise TypeError(type(value).__name__)


@functools.cache
def _adapter() -> TypeAdapter[Event]:
    """The one (de)serialiser of events, a union discriminated on ``kind``, built on first
    use: building it takes pydantic about 16 ms, which every notebook's first import paid
    though a run only needs it to write or read a trace."""
    return TypeAdapter(Annotated[Event, Field(discriminator="kind")])


Observer: TypeAlias = Callable[[Event], object]
"""A plain callable fed every event in order; one that raises never breaks the loop.

Give observers where a run takes them: ``LLMAgent(model, tools, observers=[...])`` (or
``agent.subscribe``), ``watch(...)`` for LangChain runs, ``watch_spans(provider, ...)`` for
spans, ``run_scenarios(..., observers=[...])``. A ``LoopDebugger`` given to an agent this way
is connected to it too: it holds the agent's runs in step mode, however they are started."""


def parse_event(line: bytes | str) -> Event:
    """One event from its JSON text (a trace line), validated strictly.

    Raises pydantic's ``ValidationError`` (a ``ValueError``) for anything that is not an
    event the loop could have emitted: not JSON, not an object, an unknown kind, a missing
    field, a count that is negative or a bool, a NaN. Fields from newer versions are
    ignored. A ``loop_finish`` / ``loop_failure`` written before outcomes existed gets its
    outcome from its other fields.

    The text is read by Python's own JSON parser, which keeps lone surrogates exactly as
    the loop saw them (a tool may return any ``str``; :func:`~toolloop_lab._support.jsonl.load_line`
    puts surrogate halves the writer kept apart back together); pydantic then checks it.
    """
    try:
        data = load_line(line)
    except ValueError as exc:  # UnicodeDecodeError and too deep included
        raise ValidationError.from_exception_data(
            "Event",
            [{"type": "json_invalid", "loc": (), "input": line, "ctx": {"error": str(exc)}}],
        ) from None
    return event_from_dict(data)


def event_from_dict(data: Any) -> Event:
    """Rebuild an event from :meth:`to_dict` output (see :func:`parse_event`)."""
    if (
        isinstance(data, dict)
        and data.get("kind") in ("loop_finish", "loop_failure")
        and "outcome" not in data
    ):
        data = _with_outcome(data)
    return _adapter().validate_python(data)


def _with_outcome(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("kind") == "loop_finish":
        outcome = finish_outcome(
            budget_exhausted=data.get("budget_exhausted") is True,
            synthesis_was_run=data.get("synthesis_was_run") is True,
        )
    else:
        outcome = failure_outcome(
            cancelled=data.get("cancelled") is True,
            error_kind=data.get("error_kind"),
            reason=data.get("reason"),
        )
    return {**data, "outcome": outcome}


def run_ids(events: Iterable[Event]) -> tuple[str, ...]:
    """The runs in ``events``, in the order they started (a run whose ``loop_start`` is
    missing, its line lost, comes after those, in the order it first appears)."""
    started: dict[str, None] = {}
    seen: dict[str, None] = {}
    for event in events:
        if isinstance(event, LoopStarted):
            started.setdefault(event.run_id, None)
        seen.setdefault(event.run_id, None)
    return (*started, *(i for i in seen if i not in started))


def by_run(events: Iterable[Event]) -> Mapping[str, tuple[Event, ...]]:
    """Each run's events (in stream order) by run id, the runs in the order they started
    (:func:`run_ids`' order); a read-only mapping."""
    stream = tuple(events)
    grouped: dict[str, list[Event]] = {run_id: [] for run_id in run_ids(stream)}
    for event in stream:
        grouped[event.run_id].append(event)
    return MappingProxyType({run_id: tuple(held) for run_id, held in grouped.items()})


def top_level_run_ids(events: Iterable[Event]) -> tuple[str, ...]:
    """The runs nothing in ``events`` started, in the order they started. A sub-agent
    called as a tool is a run of its own whose ``loop_start`` names its ``parent_run_id``:
    it is left out while its parent is in the events too."""
    stream = tuple(events)
    ids = run_ids(stream)
    held = set(ids)
    nested = {
        e.run_id
        for e in stream
        if isinstance(e, LoopStarted) and e.parent_run_id in held and e.parent_run_id != e.run_id
    }
    return tuple(i for i in ids if i not in nested)


def select_run(
    events: Iterable[Event],
    run_id: str | None = None,
    *,
    where: str = "the events",
    field: str = "run_id",
) -> tuple[Event, ...]:
    """The events of one run of a stream that may hold several: the one rule for which run
    ``transcript``, ``TraceRead.run``, ``fork`` and ``LoopDebugger.from_trace`` show.

    ``run_id`` picks a run. By default: the newest top-level run, the last to start of
    the runs no other run in the stream started. That is the run a cell appended last to
    a trace it writes again and again, and never a sub-agent, which starts after the run
    that called it. No events give ``()``; a ``run_id`` they do not hold raises
    :class:`~toolloop_lab.errors.UnknownRunError` naming the runs held (``where`` says
    what the events are, a trace's path say); a ``run_id`` that is no string, a
    ``ConfigurationError`` saying so (``field`` names the argument it came as).
    """
    if run_id is not None and not isinstance(run_id, str):
        raise ConfigurationError(
            f"{field} must be a run id (a string) or None, not {reprlib.repr(run_id)} "
            f"({type(run_id).__name__})",
            field=field,
        )
    stream = tuple(events)
    if run_id is None:
        top = top_level_run_ids(stream)
        if not top:
            return ()
        run_id = top[-1]
    chosen = tuple(e for e in stream if e.run_id == run_id)
    if not chosen:
        raise UnknownRunError(run_id, run_ids(stream), where=where)
    return chosen


def transcript(events: Iterable[Event], run_id: str | None = None) -> list[BaseMessage]:
    """The conversation of one run, rebuilt from its events alone.

    Equal to ``result.messages`` for a finished run and to the error's ``messages`` for a
    failed one, as long as every message is JSON data (a tool artifact that is a live
    object comes back as its JSON form). ``run_id`` picks a run in a mixed stream; the
    default is :func:`select_run`'s (the newest top-level run). Traces written before
    ``model_call_start`` existed hold no messages: the result is then empty.
    """
    dicts: list[Mapping[str, Any]] = []
    for event in select_run(events, run_id):
        if (isinstance(event, ModelCallStarted) and event.purpose != "pruning") or isinstance(
            event, (LoopFinished, LoopFailed)
        ):
            dicts.extend(event.messages)
    return [message_from_dict(d) for d in thaw(dicts)]
