"""``RunState``: the mutable state of one loop run, and the one place events are made.

The loop changes this object and nothing else; the outside world only ever sees frozen
snapshots of it: events, a ``ToolLoopResult``, or the partial state on an error.
:meth:`RunState.emit` fills in what every event repeats (run id, round, time), so an event
is one line at its call site.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from toolloop_lab._engine.call_events import server_logged, tool_dispatched
from toolloop_lab._engine.servers import RunServers
from toolloop_lab._spend.usage import Usage
from toolloop_lab._stream import message_dicts, notify
from toolloop_lab._support.jsonsafe import FrozenDict, frozen_json
from toolloop_lab._tools.content import structured_of
from toolloop_lab._tools.dispatcher import DispatchOutcome
from toolloop_lab.events import Event, Observer

E = TypeVar("E", bound=Event)


@dataclass(frozen=True, slots=True)
class RunLabel:
    """What a caller calls a run (``run(..., name=, tags=, metadata=)``): its start event
    carries it, so a debugger, a trace or a sweep holding many runs can tell them apart."""

    name: str | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=FrozenDict)

    @classmethod
    def checked(cls, name: object, tags: object, metadata: object) -> RunLabel:
        """The label of a run, checked at the call (``TypeError`` saying what to pass
        instead), so a typo fails before anything runs or is spent; metadata is kept as
        frozen JSON (what a trace can hold)."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name= takes a str or None, not {type(name).__name__}")
        if isinstance(tags, (str, bytes)) or not isinstance(tags, Sequence):
            shown = f"tags=({tags!r:.40},)" if isinstance(tags, str) else "tags=('a', 'b')"
            raise TypeError(
                f"tags= takes a sequence of str, not {type(tags).__name__}: pass {shown}"
            )
        wrong = next((t for t in tags if not isinstance(t, str)), None)
        if wrong is not None:
            raise TypeError(f"tags= takes str items only, not {type(wrong).__name__}")
        if metadata is None:
            return cls(name, tuple(tags))
        if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
            raise TypeError(
                "metadata= takes a mapping with str keys (metadata={'ticket': 42}), "
                f"not {type(metadata).__name__}"
            )
        return cls(name, tuple(tags), frozen_json(metadata))


@dataclass(slots=True, eq=False)
class RunState:
    """Everything one run has done so far."""

    observers: tuple[Observer, ...]
    messages: list[BaseMessage] = field(default_factory=list)
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    t0: float = field(default_factory=time.perf_counter)
    events: list[Event] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    round: int = 0
    rounds_done: int = 0
    calls: int = 0
    """Model calls started (their numbers in ``model_call_start``)."""
    any_invocation: bool = False
    finished: dict[str, DispatchOutcome] = field(default_factory=dict)
    """Outcomes of the current dispatch that completed, by tool-call id (kept on a stop)."""
    partial_text: str | None = None
    """Text streamed so far by the call in flight (kept if the call fails or is stopped)."""
    label: RunLabel = field(default_factory=RunLabel)
    """What the caller calls the run (its start event carries it)."""
    release: Callable[[], None] = field(default=lambda: None)
    """Ends this run's hold on its USD budget (set once the budget is resolved)."""
    servers: RunServers = field(default_factory=RunServers)
    """The MCP servers its tools came from (set as the run starts)."""
    _reported: set[str] = field(default_factory=set)
    """Tool-call ids whose ``ToolDispatched`` event was emitted."""
    _sent: int = 0
    """Messages already carried by events (for ``events.transcript``)."""
    _call_ids: set[str] = field(default_factory=set)
    _ids_scanned: int = 0

    def now(self) -> float:
        """Seconds since the run started."""
        return time.perf_counter() - self.t0

    def emit(self, kind: Callable[..., E], **fields: Any) -> E:
        """Make an event of ``kind`` for this run at this round and time, record it and
        feed it to the observers."""
        t = time.perf_counter() - self.t0  # self.now(), without the call
        event = kind(run_id=self.run_id, round=self.round, t=t, **fields)
        self.events.append(event)
        if self.observers:
            notify(self.observers, event)
        return event

    def emit_dispatch(self, outcome: DispatchOutcome) -> None:
        """Emit one call's ``ToolDispatched`` event (once per call id), after what its MCP
        server logged while it ran."""
        call_id = outcome.message.tool_call_id
        self._reported.add(call_id)
        server = self.servers.server(outcome.name)
        if server is not None and outcome.server_log is not None:
            self.servers.sent(outcome.name, outcome.server_log)
            server_logged(self.emit, server, outcome.server_log, call_id)
        tool_dispatched(
            self.emit,
            call_id,
            outcome.message.content,
            name=outcome.name,
            args=outcome.args,
            status=outcome.status,
            error_reason=outcome.error_reason,
            duration_s=outcome.duration_s,
            ran=outcome.ran,
            error_type=outcome.error_type,
            server=server,
            structured=structured_of(outcome.message.artifact),
        )

    def emit_server_logs(self) -> None:
        """Emit what the run's MCP servers logged between its calls (before its end)."""
        for server, said in self.servers.between_calls():
            server_logged(self.emit, server, said, None)

    def reported(self, call_id: str) -> bool:
        """True once ``call_id``'s ``ToolDispatched`` event was emitted."""
        return call_id in self._reported

    def unsent_messages(self) -> tuple[Any, ...]:
        """The messages appended since the last event that carried messages, as dicts;
        they count as carried from now on."""
        new = message_dicts(self.messages[self._sent :])
        self._sent = len(self.messages)
        return new

    @property
    def unsent_start(self) -> int:
        """Index of the first message no event has carried yet (the model has not seen it)."""
        return self._sent

    def next_call(self) -> int:
        """Number a new model call."""
        self.calls += 1
        self.any_invocation = True
        return self.calls

    def tool_call_ids(self) -> set[str]:
        """Every tool-call id in the transcript so far. Messages are only appended (pruning
        and a person's edits replace a message with one of the same ids), so only the new
        ones are scanned: O(1) per round instead of O(transcript)."""
        messages, new = self.messages, set[str]()
        for index in range(self._ids_scanned, len(messages)):  # no slice copied
            _add_tool_call_ids(messages[index], new)
        self._call_ids |= new  # only once every new message was read, as before
        self._ids_scanned = len(messages)
        return self._call_ids

    def answered(self) -> set[str]:
        """Tool-call ids that already have their ``ToolMessage``."""
        return {m.tool_call_id for m in self.messages if isinstance(m, ToolMessage)}

    def partial(self) -> dict[str, Any]:
        """What an error carries: the counts, messages and events so far."""
        return {
            "accumulated_prompt": self.usage.input_tokens,
            "accumulated_completion": self.usage.output_tokens,
            "cost_usd": self.usage.cost_usd,
            "any_invocation_made": self.any_invocation,
            "rounds": self.rounds_done,
            "model_calls": self.usage.requests,
            "messages": list(self.messages),
            "events": tuple(self.events),
            "run_id": self.run_id,
            "partial_text": self.partial_text,
        }


def _add_tool_call_ids(message: BaseMessage, ids: set[str]) -> None:
    """Add every tool-call id of ``message`` (asked for or answered) to ``ids``."""
    if isinstance(message, ToolMessage):
        ids.add(message.tool_call_id)
    elif isinstance(message, AIMessage):
        for calls in (message.tool_calls, message.invalid_tool_calls):
            for call in calls:
                cid = call.get("id")
                if cid:
                    ids.add(str(cid))
