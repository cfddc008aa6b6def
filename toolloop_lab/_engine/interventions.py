"""The loop's side of interventions: what a pause point changes, checked, and recorded.

:class:`ToolCallEdits` backs a pause before tool dispatch, :class:`MessageEdits` a pause
before a model call (see :mod:`toolloop_lab._engine.hooks` for the person's side). Each change is
checked first (a bad one raises :class:`InterventionError` and changes nothing), applied to
the run's transcript, and emitted as one ``intervention`` event with what was there before
and what is there after. The transcript stays valid: every call id keeps exactly one
``ToolMessage``, and no message can be added that would leave one orphaned.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Collection, Mapping
from typing import Any, Final, Literal, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import BaseTool

from toolloop_lab._engine.model_call import call_views
from toolloop_lab._engine.run_state import RunState
from toolloop_lab._stream import message_dicts
from toolloop_lab._support.errortext import explain
from toolloop_lab._support.jsonsafe import freeze, thaw
from toolloop_lab._tools.dispatcher import DispatchOutcome, written_outcome
from toolloop_lab.errors import InterventionError
from toolloop_lab.events import Intervention, ToolCallView

Stage = Literal["model_call", "tool_dispatch"]
Status = Literal["success", "error"]


def check_args(tool: BaseTool | None, args: Any) -> str | None:
    """Why ``args`` would not be valid input for ``tool``, or ``None`` when they are.

    They must be a JSON object the events can keep whole; then they are checked against
    the tool's schema by the one check a tool's calls get
    (:func:`~toolloop_lab._tools.schema.argument_problem`). That module (and jsonschema,
    slow to import) is loaded here, at the first check, not with the loop.
    """
    from toolloop_lab._tools.schema import argument_problem, depth_problem

    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        return "arguments must be a JSON object"
    too_deep = depth_problem(args)
    if too_deep is not None:
        return str(too_deep)
    try:
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"arguments must be JSON data ({exc})"
    if tool is None:
        return None  # an unknown tool fails at dispatch anyway, with the tools listed
    return argument_problem(tool, thaw(args))


def _status(value: Any) -> Status | None:
    return value if value in ("success", "error") else None


class _Edits:
    """Shared by both stages: open while the loop waits, then closed for good."""

    def __init__(self, run: RunState, stage: Stage) -> None:
        self._run = run
        self._stage: Stage = stage
        self._lock = threading.RLock()
        # re-entrant: an observer of the intervention event may look at the point again
        self._open = True

    def close(self) -> None:
        """The loop goes on: refuse every later change."""
        with self._lock:
            self._open = False

    def _refuse(self, action: str, reason: str, text: str, call_id: str | None = None) -> None:
        raise InterventionError(text, action=action, reason=reason, call_id=call_id)

    def _check_open(self, action: str) -> None:
        if not self._open:
            self._refuse(action, "expired", "the loop has gone on past this pause")

    def _record(self, action: Any, call_id: str | None, before: Any, after: Any) -> None:
        self._run.emit(
            Intervention,
            action=action,
            stage=self._stage,
            tool_call_id=call_id,
            before=freeze(before),
            after=freeze(after),
        )

    # the other stage's changes, refused
    def calls(self) -> tuple[ToolCallView, ...]:
        return ()

    def messages(self) -> tuple[BaseMessage, ...]:
        return ()

    def edit_args(self, call_id: str, args: Mapping[str, Any]) -> None:
        self._refuse("edit_args", "wrong_stage", "arguments are edited before tool dispatch")

    def skip(self, call_id: str, content: str, status: Status) -> None:
        self._refuse("skip", "wrong_stage", "calls are skipped before tool dispatch")

    def append(self, message: Any) -> None:
        self._refuse("append_message", "wrong_stage", "messages are added before a model call")

    def edit_result(self, call_id: str, content: str, status: Status | None) -> None:
        self._refuse("edit_result", "wrong_stage", "results are edited before a model call")


class ToolCallEdits(_Edits):
    """Changes to a round's calls before they run: new arguments, or a written result.

    A call the model sent as unreadable JSON (an invalid tool call) can be given valid
    arguments by hand: it then becomes an ordinary call and runs. Until then it cannot be
    answered by hand, because the loop answers it with the parse error.
    """

    def __init__(self, run: RunState, index: int, tools: Mapping[str, BaseTool]) -> None:
        super().__init__(run, "tool_dispatch")
        self._index = index
        self._tools = tools
        self._written: dict[str, DispatchOutcome] = {}

    @property
    def written(self) -> dict[str, DispatchOutcome]:
        """Calls a person answered by hand, by id (they are not run): a copy, so only
        :meth:`skip` answers a call."""
        return dict(self._written)

    @property
    def reply(self) -> AIMessage:
        """A copy of the round's reply as it stands (edited arguments included): changing
        it changes nothing; every change goes through the checked calls."""
        return self._reply().model_copy(deep=True)

    def _reply(self) -> AIMessage:
        message = self._run.messages[self._index]
        assert isinstance(message, AIMessage)
        return message

    def calls(self) -> tuple[ToolCallView, ...]:
        return call_views(self._reply())

    def _find(self, action: str, call_id: str) -> tuple[ToolCall | InvalidToolCall, bool]:
        """The pending call ``call_id``, and whether it is a valid one (an invalid call
        could not be parsed); a call already answered is refused."""
        self._check_open(action)
        reply = self._reply()
        valid = next((c for c in reply.tool_calls if c.get("id") == call_id), None)
        invalid = next((c for c in reply.invalid_tool_calls if c.get("id") == call_id), None)
        if valid is None and invalid is None:
            self._refuse(
                action, "unknown_call", f"no pending tool call has id {call_id!r}", call_id
            )
        if call_id in self._written:
            self._refuse(action, "not_allowed", f"call {call_id!r} is already answered", call_id)
        if valid is not None:
            return valid, True
        assert invalid is not None
        return invalid, False

    def edit_args(self, call_id: str, args: Mapping[str, Any]) -> None:
        with self._lock:
            call, is_valid = self._find("edit_args", call_id)
            name = call.get("name") or ""
            problem = check_args(self._tools.get(name), args)
            if problem is not None:
                self._refuse("edit_args", "invalid_args", f"{name}: {problem}", call_id)
            new_args = thaw(args)
            reply = self._reply()
            update: dict[str, Any]
            if not is_valid:
                fixed: ToolCall = {
                    "name": name,
                    "args": new_args,
                    "id": call_id,
                    "type": "tool_call",
                }
                update = {
                    "tool_calls": [*reply.tool_calls, fixed],
                    "invalid_tool_calls": [
                        c for c in reply.invalid_tool_calls if c.get("id") != call_id
                    ],
                }
                before: Any = {"raw": call.get("args"), "error": call.get("error")}
            else:
                update = {
                    "tool_calls": [
                        {**c, "args": new_args} if c.get("id") == call_id else c
                        for c in reply.tool_calls
                    ]
                }
                before = call.get("args")
            if isinstance(reply.content, list):
                update["content"] = [_with_args(b, call_id, new_args) for b in reply.content]
            raw_calls = reply.additional_kwargs.get("tool_calls")
            if isinstance(raw_calls, list):
                kwargs = dict(reply.additional_kwargs)
                kwargs["tool_calls"] = [_raw_with_args(c, call_id, new_args) for c in raw_calls]
                update["additional_kwargs"] = kwargs
            self._run.messages[self._index] = reply.model_copy(update=update)
            self._record("edit_args", call_id, before, new_args)

    def skip(self, call_id: str, content: str, status: Status) -> None:
        with self._lock:
            call, is_valid = self._find("skip", call_id)
            if not is_valid:
                self._refuse(
                    "skip",
                    "not_allowed",
                    f"call {call_id!r} could not be parsed, so the loop answers it with the "
                    "parse error; give it valid arguments (edit_args) first",
                    call_id,
                )
            if not isinstance(content, str):
                self._refuse("skip", "not_allowed", "a written result must be text", call_id)
            if _status(status) is None:
                self._refuse(
                    "skip",
                    "not_allowed",
                    f"status must be success or error, not {status!r}",
                    call_id,
                )
            valid = cast(ToolCall, call)
            self._written[call_id] = written_outcome(valid, content, status=status)
            before = {"name": valid["name"], "args": valid["args"]}
            self._record("skip", call_id, before, {"content": content, "status": status})


_ARG_KEYS: Final[Mapping[str, tuple[str, str]]] = {
    "tool_use": ("id", "input"),  # Anthropic
    "tool_call": ("id", "args"),  # langchain-core standard blocks
    "function_call": ("call_id", "arguments"),  # OpenAI Responses (JSON text)
}
"""Content blocks that repeat a call's arguments: (the key of its id, the key of its args)."""


def _with_args(block: Any, call_id: str, args: Any) -> Any:
    """A content block carrying this call's arguments, kept in step with the edit (a
    provider's converter may read the block rather than ``tool_calls``)."""
    if not isinstance(block, dict):
        return block
    keys = _ARG_KEYS.get(block.get("type", ""))
    if keys is None or block.get(keys[0]) != call_id:
        return block
    value = json.dumps(args) if keys[1] == "arguments" else args
    return {**block, keys[1]: value}


def _raw_with_args(raw: Any, call_id: str, args: Any) -> Any:
    """An OpenAI-style raw call in ``additional_kwargs``, kept in step with the edit."""
    if not isinstance(raw, dict) or raw.get("id") != call_id:
        return raw
    function = raw.get("function")
    if not isinstance(function, dict):
        return raw
    return {**raw, "function": {**function, "arguments": json.dumps(args)}}


_MEDIA_BLOCKS: Final = frozenset(
    {"image", "image_url", "input_image", "audio", "input_audio", "video", "file", "document"}
)
"""Content blocks a hand-added message may hold besides text: data, never a call or a
result (langchain-core's standard blocks, OpenAI's and Anthropic's)."""

_RESULT_ID_KEYS: Final = ("tool_use_id", "tool_call_id", "call_id", "id")
"""Where a result block names the call it answers (Anthropic, standard, OpenAI)."""


def _message_problem(message: BaseMessage, answered: Collection[str]) -> str | None:
    """Why ``message`` cannot be added by hand (it would leave a call unanswered, answer a
    call twice or none, or say nothing), or ``None`` when it can."""
    if isinstance(message, AIMessage) and (message.tool_calls or message.invalid_tool_calls):
        return "a message with tool calls cannot be added by hand: its calls would have no results"
    if not isinstance(message, (HumanMessage, AIMessage)):
        return (
            f"only a user or an assistant message can be added, not a {message.type} "
            "message (a tool result needs its call; a system message opens a conversation)"
        )
    raw = {k for k in ("tool_calls", "function_call") if message.additional_kwargs.get(k)}
    if raw:
        return f"a message with raw {', '.join(sorted(raw))} cannot be added by hand"
    content = message.content
    if isinstance(content, str):
        return None if content.strip() else "the message is empty"
    says_something = False
    for block in content:
        if isinstance(block, str):
            says_something = says_something or bool(block.strip())
            continue
        problem, has_data = _block_problem(block, answered)
        if problem is not None:
            return problem
        says_something = says_something or has_data
    return None if says_something else "the message is empty"


def _block_problem(block: Any, answered: Collection[str]) -> tuple[str | None, bool]:
    """Why one content block cannot be added by hand (or ``None``), and whether it holds
    anything (a blank text block does not)."""
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            return "a text block must hold text", False
        return None, bool(text.strip())
    if kind in _MEDIA_BLOCKS:
        filled = any(v for k, v in block.items() if k not in ("type", "id", "index", "extras"))
        return (None, True) if filled else (f"the {kind} block holds nothing", False)
    if not isinstance(kind, str):
        return "every content block needs a type", False
    if "result" in kind or kind.endswith("_output"):
        call_id = next((block[k] for k in _RESULT_ID_KEYS if isinstance(block.get(k), str)), "")
        if call_id in answered:
            return (
                f"a {kind!r:.60} block answers call {call_id!r:.80}, which already has its result",
                False,
            )
        return f"a {kind!r:.60} block answers no call of this run ({call_id!r:.80})", False
    if "call" in kind or "tool" in kind:
        return f"a {kind!r:.60} block is a tool call nobody would answer", False
    media = ", ".join(sorted(_MEDIA_BLOCKS))
    return f"a {kind!r:.60} block cannot be added by hand (only text and {media})", False


class MessageEdits(_Edits):
    """Changes before a model call: an added message, or a replaced tool result."""

    def __init__(self, run: RunState) -> None:
        super().__init__(run, "model_call")

    def messages(self) -> tuple[BaseMessage, ...]:
        """Copies of the messages about to be sent: changing one changes nothing; every
        change goes through the checked calls and is recorded."""
        return tuple(m.model_copy(deep=True) for m in self._run.messages)

    def append(self, message: Any) -> None:
        with self._lock:
            self._check_open("append_message")
            try:
                # a copy: the caller's object can change later without reaching the run
                converted = convert_to_messages([message])[0].model_copy(deep=True)
            except KeyError as exc:  # ("tool", "x"): langchain-core wants a field it lacks
                self._refuse("append_message", "not_allowed", f"not a message: no {exc!s:.100}")
            except Exception as exc:  # noqa: BLE001 - any failure to convert: not a message
                why = explain(exc)
                self._refuse("append_message", "not_allowed", f"not a message ({why:.300})")
            answered = {m.tool_call_id for m in self._run.messages if isinstance(m, ToolMessage)}
            problem = _message_problem(converted, answered)
            if problem is not None:
                self._refuse("append_message", "not_allowed", problem)
            self._run.messages.append(converted)
            self._record("append_message", None, None, message_dicts([converted])[0])

    def edit_result(self, call_id: str, content: str, status: Status | None) -> None:
        with self._lock:
            self._check_open("edit_result")
            run = self._run
            index = next(
                (
                    i
                    for i, m in enumerate(run.messages)
                    if isinstance(m, ToolMessage) and m.tool_call_id == call_id
                ),
                None,
            )
            if index is None:
                self._refuse(
                    "edit_result", "unknown_call", f"no result has id {call_id!r}", call_id
                )
            assert index is not None
            if index < run.unsent_start:
                self._refuse(
                    "edit_result",
                    "already_sent",
                    f"the model was already sent the result of {call_id!r}",
                    call_id,
                )
            if not isinstance(content, str):
                self._refuse("edit_result", "not_allowed", "a result must be text", call_id)
            if status is not None and _status(status) is None:
                self._refuse(
                    "edit_result",
                    "not_allowed",
                    f"status must be success or error, not {status!r}",
                    call_id,
                )
            old = run.messages[index]
            assert isinstance(old, ToolMessage)
            new_status = status or old.status
            artifact = {"original": old.content, "artifact": old.artifact, "edited": True}
            run.messages[index] = old.model_copy(
                update={"content": content, "status": new_status, "artifact": artifact}
            )
            before = {"content": old.content, "status": old.status}
            self._record("edit_result", call_id, before, {"content": content, "status": new_status})
