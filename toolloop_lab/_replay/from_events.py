"""A recording rebuilt from a run's events: what "Save as test" keeps of a debugged run.

``LLMAgent``'s events carry what each model call was sent (``ModelCallStarted.messages``:
what is new to the call) and what came back (``ModelCalled``: the text, the tool calls, the
usage and the model's name), and the next call's messages start with the reply exactly as
the loop put it in the conversation. So a run of the loop rebuilds into the recording a
``RecordingChatModel`` would have written, and replays strictly through the loop.

What cannot be rebuilt is refused, naming why and what to do instead: a run watched
through the bridge or spans (its events hold what a framework reported, not every
request), a run a person changed at a pause (its replay would leave it where the change
was), a run with pruning calls (a second model's requests), and a model call that failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, messages_from_dict

from toolloop_lab._replay.recording_file import RecordedCall, Recording
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import (
    Event,
    Intervention,
    LoopStarted,
    ModelCalled,
    ModelCallFailed,
    ModelCallStarted,
)

_RECORD_INSTEAD = (
    "record the run instead: give the agent RecordingChatModel(model, path), or use the "
    "pytest fixture toolloop_recording"
)


def _refused(why: str) -> ConfigurationError:
    return ConfigurationError(
        f"this run cannot be saved as a test: {why}; {_RECORD_INSTEAD}", field="run"
    )


def _reply_of(called: ModelCalled) -> AIMessage:
    """The reply as the event tells it (the run's last call: nothing follows it)."""
    usage = called.usage
    metadata: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
    if usage.cache_read_tokens or usage.cache_write_tokens:
        metadata["input_token_details"] = {
            "cache_read": usage.cache_read_tokens,
            "cache_creation": usage.cache_write_tokens,
        }
    response: dict[str, Any] = {}
    if called.model_name:
        response["model_name"] = called.model_name
    if called.finish_reason:
        response["finish_reason"] = called.finish_reason
    calls = [
        {"name": c.name, "args": thaw(c.args), "id": c.id, "type": "tool_call"}
        for c in called.tool_calls
        if c.valid
    ]
    return AIMessage(
        content=called.text,
        tool_calls=calls,
        usage_metadata=metadata,
        response_metadata=response,
    )


def recording_of_events(events: Sequence[Event]) -> Recording:
    """The recording of one run of the loop (``events``: that run's, as
    :func:`~toolloop_lab.events.select_run` gives them); refuses what it cannot rebuild."""
    start = next((e for e in events if isinstance(e, LoopStarted)), None)
    if start is None:
        raise _refused("its events hold no start (a run's events begin with loop_start)")
    if start.source != "loop":
        raise _refused(
            f"it was watched through {start.source!r}, so its events hold what the framework "
            "reported, not every request its model was sent"
        )
    for event in events:
        if isinstance(event, Intervention):
            raise _refused(
                f"a person changed it at a pause in round {event.round} ({event.action}), so "
                "its replay would leave it there (fork it from that round and save the fork)"
            )
        if isinstance(event, ModelCallFailed):
            raise _refused(f"its model call {event.call} failed ({event.error_type})")
        if isinstance(event, ModelCallStarted) and event.purpose == "pruning":
            raise _refused("it shortened tool outputs with a pruning model")
    starts = [e for e in events if isinstance(e, ModelCallStarted)]
    replies = {e.call: e for e in events if isinstance(e, ModelCalled)}
    if not starts:
        raise _refused("its model was never called")
    carried: list[BaseMessage] = []
    calls: list[RecordedCall] = []
    for index, started in enumerate(starts):
        carried.extend(messages_from_dict(list(thaw(started.messages))))
        called = replies.get(started.call)
        if called is None:
            raise _refused(f"its model call {started.call} has no reply (it was stopped)")
        following = starts[index + 1].messages if index + 1 < len(starts) else ()
        exact = messages_from_dict([thaw(following[0])]) if following else []
        reply = exact[0] if exact and isinstance(exact[0], AIMessage) else _reply_of(called)
        calls.append(
            RecordedCall(
                index=index,
                request=tuple(carried),
                response=reply,
                tools=tuple(started.tools) if started.purpose == "round" else None,
                model_name=started.model_name or start.model_name,
            )
        )
    return Recording(tuple(calls))
