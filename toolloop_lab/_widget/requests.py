"""What the browser asks the debugger to do, checked before anything acts on it.

A front end sends requests as comm messages: a change at a pause (``{"type":
"intervene"}``), "Fork from here" (``{"type": "fork"}``), a run picked in the run list
(``{"type": "show_run"}``), two of the debugger's runs to compare (``{"type": "compare",
"a", "b"}``; ``"action": "close"`` closes the comparison), or Continue, Step and Stop
(``{"type": "control"}``). Step and Continue clicked while an edit is open on the page
carry that edit (``change``, the change its own button would send): it is checked and
applied first, and a change refused holds the pause (:class:`Release`).
Anything on the page (a script in another output, an extension, a hand-edited notebook)
can send such a message, so each is untrusted input: it is parsed with pydantic in strict
mode against one declared shape per action (no extra fields, bounded sizes), and only a
parsed request reaches the pause point, the fork or the comparison. The debugger answers
every request, parsed or not, with an :class:`Answer` the browser shows next to the
control that sent it (a refused edit keeps its editor open, with the reason).

Requests name the pause they were made at (``pause``, the pause's serial number), so a
click that arrives after the loop went on to another pause is refused as ``stale``
instead of changing the wrong round.

The pause itself, as the page sees it and changes it: :func:`point_dict` is what a pause
looks like on the wire, exactly what the loop is about to send (before a model call) or run
(before tool dispatch), and which of those things a person may change (every pending call;
the tool results the model has not been sent yet). :func:`apply_request` carries out a
checked request through the :class:`~toolloop_lab._engine.hooks.PausePoint` API, the same
calls a notebook cell makes, so a click and a line of Python change the run the same way
and are recorded as the same ``intervention`` events. A refusal
(:class:`~toolloop_lab.errors.InterventionError`) becomes the answer's reason and text; the
run is unchanged and the pause holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, TypeAlias

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from toolloop_lab._engine.hooks import PausePoint
from toolloop_lab._engine.interventions import check_args
from toolloop_lab._stream import message_dicts
from toolloop_lab._support.errortext import describe
from toolloop_lab._support.escape import ID_CHARS, NAME_CHARS, TEXT_CHARS, clip
from toolloop_lab._support.fields import validation_text
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab._widget.wire import clip as clip_data
from toolloop_lab._widget.wire import compact_messages
from toolloop_lab.errors import InterventionError
from toolloop_lab.events import ToolCallView

MAX_REQUEST_CHARS: Final = 1_000_000
"""The largest request (as JSON) the debugger reads: a written result or edited arguments
of up to about a megabyte; anything larger is refused unread."""

_Id = Annotated[int, Field(ge=0, le=2**53)]
_CallId = Annotated[str, Field(min_length=1, max_length=MAX_REQUEST_CHARS)]
_Text = Annotated[str, Field(max_length=MAX_REQUEST_CHARS)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    request: _Id | None = None
    """The browser's number for this request, echoed in the answer."""


class _AtPause(_Strict):
    type: Literal["intervene"]
    pause: _Id
    """The serial number of the pause the request was made at."""


class CheckArgs(_AtPause):
    """Would ``args`` be valid for the call's tool? (Nothing changes.)"""

    action: Literal["check_args"]
    call_id: _CallId
    args: Any


class EditArgs(_AtPause):
    """Run the call with ``args`` instead (checked against the tool's schema first)."""

    action: Literal["edit_args"]
    call_id: _CallId
    args: Any


class Skip(_AtPause):
    """Do not run the call; the model reads ``content`` as its result."""

    action: Literal["skip"]
    call_id: _CallId
    content: _Text
    status: Literal["success", "error"] = "success"


class AddMessage(_AtPause):
    """Add a user or assistant message before the model call."""

    action: Literal["append_message"]
    role: Literal["user", "assistant"] = "user"
    content: Annotated[str, Field(min_length=1, max_length=MAX_REQUEST_CHARS)]


class EditResult(_AtPause):
    """Replace a tool result the model has not been sent yet."""

    action: Literal["edit_result"]
    call_id: _CallId
    content: _Text
    status: Literal["success", "error"] | None = None


class ForkHere(_Strict):
    """Fork the finished run at ``round`` (the run's own numbering)."""

    type: Literal["fork"]
    action: Literal["fork"] = "fork"
    round: Annotated[int, Field(ge=1, le=2**31)]


class ShowRun(_Strict):
    """Show run ``run_id`` of the debugger's session; ``None``: the newest top-level run,
    following the newest again."""

    type: Literal["show_run"]
    action: Literal["show_run"] = "show_run"
    run_id: _CallId | None


_RunId = Annotated[str, Field(min_length=1, max_length=1_000)]


class CompareRuns(_Strict):
    """Show two of the debugger's runs side by side (their run ids)."""

    type: Literal["compare"]
    action: Literal["compare"] = "compare"
    a: _RunId
    b: _RunId


class CloseComparison(_Strict):
    """Close the comparison shown."""

    type: Literal["compare"]
    action: Literal["close"]


Change: TypeAlias = EditArgs | Skip | AddMessage | EditResult
"""A change a pause takes (a live check of arguments is none)."""
_Change = Annotated[Change, Field(discriminator="action")]


class Release(_Strict):
    """Step or Continue, clicked at pause ``pause`` (``None``: whichever the loop waits
    at). ``change``: the edit open on the page when it was clicked, made first; the pause
    is released only once it is made (a change refused holds it: the answer says why)."""

    type: Literal["control"]
    action: Literal["step", "continue"]
    pause: _Id | None = None
    change: _Change | None = None


class StopRun(_Strict):
    """Stop the run (at pause ``pause``, or while it runs): nothing runs after it, so
    an edit open on the page is moot and none is sent."""

    type: Literal["control"]
    action: Literal["stop"]
    pause: _Id | None = None


_Intervene = Annotated[
    CheckArgs | EditArgs | Skip | AddMessage | EditResult, Field(discriminator="action")
]
Request: TypeAlias = CheckArgs | EditArgs | Skip | AddMessage | EditResult | ForkHere
"""A request that passed every check."""

_INTERVENE: Final[TypeAdapter[Any]] = TypeAdapter(_Intervene)
_FORK: Final = TypeAdapter(ForkHere)
_SHOW: Final = TypeAdapter(ShowRun)
_COMPARE: Final = TypeAdapter(CompareRuns)
_CLOSE: Final = TypeAdapter(CloseComparison)
_CONTROL: Final[TypeAdapter[Any]] = TypeAdapter(
    Annotated[Release | StopRun, Field(discriminator="action")]
)
_ACTIONS: Final = frozenset(
    {
        *("check_args", "edit_args", "skip", "append_message", "edit_result"),
        *("fork", "show_run", "compare", "close"),
        *("step", "continue", "stop"),
    }
)
REQUEST_TYPES: Final = ("intervene", "fork", "show_run", "compare", "save_test", "control")
"""The requests a page may send (besides ``hello``); any other is answered as unknown."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What the debugger tells the browser about one request."""

    request: int | None
    action: str
    ok: bool
    reason: str | None = None
    """Why it was refused: an :class:`~toolloop_lab.errors.InterventionError` reason, a
    config field a fork was refused on, or ``bad_request`` / ``too_large`` /
    ``not_paused`` / ``stale`` / ``no_agent`` / ``unknown_run`` / ``unknown_request``
    (a type the debugger does not take) / ``failed`` (its handler raised)."""
    message: str = ""
    """Words for the person (the schema's complaint, say); clipped."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request,
            "action": clip(self.action, NAME_CHARS),
            "ok": self.ok,
            "reason": None if self.reason is None else clip(self.reason, NAME_CHARS),
            "message": clip(self.message, TEXT_CHARS),
        }


def request_id(content: Any) -> int | None:
    """The page's number for request ``content``, when it gave a good one (the answer
    carries it, so the page can tell which of its requests it answers)."""
    if not isinstance(content, dict):
        return None
    value = content.get("request")
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53:
        return value
    return None


def _action(content: dict[Any, Any]) -> str:
    value = content.get("action", content.get("type"))
    return value if isinstance(value, str) and value in _ACTIONS else "unknown"


def refusal(content: Any, reason: str, message: str) -> Answer:
    """``content`` refused for ``reason``, answered with its request number (when it has
    a good one): every answer reaches the control that is waiting for it."""
    if not isinstance(content, dict):
        return Answer(None, "unknown", False, reason, message)
    return Answer(request_id(content), _action(content), False, reason, message)


def unknown_type(content: dict[Any, Any]) -> Answer:
    """The answer to a numbered request of a type the debugger does not take."""
    kind = content.get("type")
    named = repr(clip(kind, NAME_CHARS)) if isinstance(kind, str) else "untyped"
    takes = ", ".join(REQUEST_TYPES)
    message = f"the debugger takes no {named} request; it takes {takes}"
    return refusal(content, "unknown_request", message)


def _parse(content: Any, pick: Callable[[Any], TypeAdapter[Any]]) -> Any:
    """``content`` parsed by the adapter ``pick`` gives for it, or the refusal to send."""
    if not isinstance(content, dict):
        return Answer(None, "unknown", False, "bad_request", "a request must be a JSON object")
    request, action = request_id(content), _action(content)
    try:
        size = len(json.dumps(content))
    except (TypeError, ValueError, RecursionError):
        return Answer(request, action, False, "bad_request", "a request must be JSON data")
    if size > MAX_REQUEST_CHARS:
        return Answer(
            request,
            action,
            False,
            "too_large",
            f"the request is {size:,} characters; at most {MAX_REQUEST_CHARS:,} are read",
        )
    try:
        return pick(content).validate_python(content)
    except ValidationError as exc:
        text = validation_text(exc, whole="(request)")
        return Answer(request, action, False, "bad_request", text)


def parse_request(content: Any) -> Request | Answer:
    """The request ``content`` asks for, or the refusal to send back when it is not one."""
    parsed: Request | Answer = _parse(
        content, lambda data: _FORK if data.get("type") == "fork" else _INTERVENE
    )
    return parsed


def parse_show_run(content: Any) -> ShowRun | Answer:
    """The run the page asks to show, or the refusal to send back when it is no such ask."""
    parsed: ShowRun | Answer = _parse(content, lambda _data: _SHOW)
    return parsed


def parse_compare(content: Any) -> CompareRuns | CloseComparison | Answer:
    """The comparison ``content`` asks for (or to close), or the refusal to send back."""
    parsed: CompareRuns | CloseComparison | Answer = _parse(
        content, lambda data: _CLOSE if data.get("action") == "close" else _COMPARE
    )
    return parsed


def parse_control(content: Any) -> Release | StopRun | Answer:
    """Continue, Step or Stop as the page sent it (with the edit it applies first), or
    the refusal to send back when it is no such click."""
    parsed: Release | StopRun | Answer = _parse(content, lambda _data: _CONTROL)
    return parsed


# -- the pause, as the page sees it and changes it --------------------------------------

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
    return clip_data(data, max_chars)  # type: ignore[no-any-return]


def _call_id(point: PausePoint, given: str) -> str:
    """The id the browser meant: the same, or the one it was shown clipped (a model can
    send a megabyte id; the page only ever saw its first characters)."""
    ids = [c.id for c in point.calls]
    if point.stage == "model_call":
        ids = [m.tool_call_id for m in point.messages if isinstance(m, ToolMessage)]
    if given in ids:
        return given
    return next((i for i in ids if clip(i, ID_CHARS) == given), given)


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
