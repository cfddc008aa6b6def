"""Then steps about the event stream, for features/events.feature."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from behave import then

from toolloop_lab.errors import ToolLoopError
from toolloop_lab.events import LoopFailed, event_from_dict


@then("the event kinds are, in order")
def step_event_kinds(context: Any) -> None:
    expected = [(row["kind"], int(row["round"])) for row in context.table]
    got = [(e.kind, e.round) for e in context.lab.events]
    assert got == expected, got


@then("every event survives a JSON round trip")
def step_round_trip(context: Any) -> None:
    assert context.lab.events
    for event in context.lab.events:
        text = json.dumps(event.to_dict(), allow_nan=False)
        assert event_from_dict(json.loads(text)) == event, event.kind


@then("the observers saw exactly the events the run returned")
def step_observed_result(context: Any) -> None:
    lab = context.lab
    assert lab.result is not None, repr(lab.error)
    assert list(lab.result.events) == lab.events
    assert {e.run_id for e in lab.events} == {lab.result.run_id}


@then("the observers saw exactly the events the error carries")
def step_observed_error(context: Any) -> None:
    lab = context.lab
    assert lab.error is not None
    assert list(lab.error.events) == lab.events


@then('the run failed with a ToolLoopError caused by "{name}"')
def step_tool_loop_error(context: Any, name: str) -> None:
    error = context.lab.error
    assert isinstance(error, ToolLoopError), repr(error)
    assert type(error.cause).__name__ == name
    assert error.__cause__ is error.cause
    assert error.any_invocation_made is True


@then("the run was cancelled")
def step_cancelled(context: Any) -> None:
    assert isinstance(context.lab.error, asyncio.CancelledError), repr(context.lab.error)
    assert context.lab.result is None


@then("the last event is a loop failure that was {state}")
def step_last_failure(context: Any, state: str) -> None:
    assert state in ("cancelled", "not cancelled")
    last = context.lab.events[-1]
    assert isinstance(last, LoopFailed), last
    assert last.cancelled is (state == "cancelled")


@then("every observer failure was logged as a warning")
def step_observer_warnings(context: Any) -> None:
    lab = context.lab
    kinds = [e.kind for e in lab.events]
    logged = [r for r in lab.warnings if r.getMessage().startswith("observer ")]
    assert len(logged) == len(kinds), (len(logged), kinds)
    assert [r.getMessage().rsplit(" ", 1)[-1] for r in logged] == kinds
    assert all(r.levelname == "WARNING" and r.exc_info for r in logged)
