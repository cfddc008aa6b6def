"""The debugger's side of a pause: what the browser is shown, and the changes it asks for.

:func:`point_dict` is what a pause looks like on the wire: exactly what the loop is about
to send (before a model call) or run (before tool dispatch), and which of those things a
person may change (every pending call; the tool results the model has not been sent yet).
:func:`apply_request` carries out a checked request (see :mod:`.requests`) through the
:class:`~toolloop_lab._engine.hooks.PausePoint` API, the same calls a notebook cell makes, so a
click and a line of Python change the run the same way and are recorded as the same
``intervention`` events. A refusal (:class:`~toolloop_lab.errors.InterventionError`)
becomes the answer's reason and text; the run is unchanged and the pause holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._engine.interventions import check_args
from toolloop_lab._stream import message_dicts
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.escape import ID_CHARS
from toolloop_lab._support.escape import clip as clip_text
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._widget.requests import (
    AddMessage,
    Answer,
    CheckArgs,
    EditArgs,
    EditResult,
    Request,
    Skip,
)
from toolloop_lab._widget.wire import clip, compact_messages
from toolloop_lab.errors import InterventionError
from toolloop_lab.events import ToolCallView

PAUSE_MESSAGES: Final = 40
"""Newest messages of the conversation a model-call pause shows (what is about to be sent)."""

ToolLookup = Callable[[str], BaseTool | None]
"""The tool of the run by name (``None``: unknown, so only the JSON shape is checked)."""


def unsent_results(point: PausePoint) -> list[str]:
    """Ids of the tool results the model has not been sent yet: those after its last reply
    (the loop refuses an edit of any other, so the browser offers no other)."""
    return _unsent(point.messages)


def _unsent(messages: Sequence[BaseMessage]) -> list[str]:
    last_reply = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=-1)
    return [m.tool_call_id for m in messages[last_reply + 1 :] if isinstance(m, ToolMessage)]


def point_dict(point: PausePoint | None, serial: int, max_chars: int) -> dict[str, Any] | None:
    """Where the loop waits, with exactly what it is about to send or run, and what may
    be changed there (``editable``: the point takes changes at all)."""
    if point is None:
        return None
    data: dict[str, Any] = {
        "run_id": point.run_id,
        "round": point.round,
        "stage": point.stage,
        "purpose": point.purpose,
        "detail": list(point.detail),
        "pause": serial,
        "editable": point.editor is not None,
    }
    if point.stage == "model_call":
        messages = point.messages
        data["message_count"] = len(messages)
        data["messages"] = compact_messages(message_dicts(messages[-PAUSE_MESSAGES:]), max_chars)
        data["results"] = _unsent(messages) if point.editor is not None else []
    else:
        data["calls"] = [
            {"id": c.id, "name": c.name, "args": thaw(c.args), "valid": c.valid, "error": c.error}
            for c in point.calls
        ]
    return clip(data, max_chars)  # type: ignore[no-any-return]


def _call_id(point: PausePoint, given: str) -> str:
    """The id the browser meant: the same, or the one it was shown clipped (a model can
    send a megabyte id; the page only ever saw its first characters)."""
    ids = [c.id for c in point.calls]
    if point.stage == "model_call":
        ids = [m.tool_call_id for m in point.messages if isinstance(m, ToolMessage)]
    if given in ids:
        return given
    return next((i for i in ids if clip_text(i, ID_CHARS) == given), given)


def _call(point: PausePoint, call_id: str) -> ToolCallView | None:
    return next((c for c in point.calls if c.id == call_id), None)


def apply_request(point: PausePoint, request: Request, tool_of: ToolLookup) -> Answer:
    """Make the change ``request`` asks for at ``point``; the answer says how it went."""
    action = request.action
    try:
        if isinstance(request, CheckArgs):
            call = _call(point, _call_id(point, request.call_id))
            if call is None:
                return Answer(request.request, action, False, "unknown_call", "no such call")
            problem = check_args(tool_of(call.name), request.args)
            if problem is not None:
                return Answer(request.request, action, False, "invalid_args", problem)
            return Answer(request.request, action, True, message="fits the tool's schema")
        if isinstance(request, EditArgs):
            point.edit_args(_call_id(point, request.call_id), request.args)
        elif isinstance(request, Skip):
            point.skip(_call_id(point, request.call_id), request.content, status=request.status)
        elif isinstance(request, AddMessage):
            message = (
                HumanMessage(request.content)
                if request.role == "user"
                else AIMessage(request.content)
            )
            point.append(message)
        elif isinstance(request, EditResult):
            point.edit_result(
                _call_id(point, request.call_id), request.content, status=request.status
            )
        else:  # a fork is not made at a pause
            return Answer(request.request, action, False, "bad_request", "not a pause change")
    except InterventionError as exc:
        return Answer(request.request, exc.action, False, exc.reason, describe(exc))
    return Answer(request.request, action, True)
