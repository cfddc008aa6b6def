"""The loop's side of interventions: what a pause point changes, checked, and recorded.

:class:`ToolCallEdits` backs a pause before tool dispatch, :class:`MessageEdits` a pause
before a model call (see :mod:`toolloop_lab.hooks` for the person's side). Each change is
checked first (a bad one raises :class:`InterventionError` and changes nothing), applied to
the run's transcript, and emitted as one ``intervention`` event with what was there before
and what is there after. The transcript stays valid: every call id keeps exactly one
``ToolMessage``, and no message can be added that would leave one orphaned.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any, Literal

import jsonschema
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ToolCall,
    ToolMessage,
    convert_to_messages,
)
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ValidationError

from toolloop_lab.errors import InterventionError
from toolloop_lab.events import Intervention, ToolCallView, message_dicts
from toolloop_lab.jsonsafe import freeze, thaw
from toolloop_lab.model_call import call_views
from toolloop_lab.run_state import RunState
from toolloop_lab.tools import DispatchOutcome, written_outcome

__all__ = ["MessageEdits", "ToolCallEdits", "check_args"]

Stage = Literal["model_call", "tool_dispatch"]


def check_args(tool: BaseTool | None, args: Any) -> str | None:
    """Why ``args`` would not be valid input for ``tool``, or ``None`` when they are.

    Pydantic schemas validate as the tool itself would; JSON-schema tools (MCP, OpenAPI,
    ``StructuredTool`` with a dict schema) are checked with ``jsonschema``.
    """
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        return "arguments must be a JSON object"
    try:
        json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"arguments must be JSON data ({exc})"
    if tool is None:
        return None  # an unknown tool fails at dispatch anyway, with the tools listed
    schema = tool.tool_call_schema
    if isinstance(schema, dict):
        try:
            jsonschema.validate(dict(args), schema)
        except jsonschema.ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "(arguments)"
            return f"{where}: {exc.message}"
        return None
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        try:
            schema.model_validate(dict(args))
        except ValidationError as exc:
            return "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
                for e in exc.errors()
            )
    return None


class _Edits:
    """Shared by both stages: open while the loop waits, then closed for good."""

    def __init__(self, run: RunState, stage: Stage) -> None:
        self._run = run
        self._stage: Stage = stage
        self._lock = threading.Lock()
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

    def skip(self, call_id: str, content: str, status: Literal["success", "error"]) -> None:
        self._refuse("skip", "wrong_stage", "calls are skipped before tool dispatch")

    def append(self, message: Any) -> None:
        self._refuse("append_message", "wrong_stage", "messages are added before a model call")

    def edit_result(
        self, call_id: str, content: str, status: Literal["success", "error"] | None
    ) -> None:
        self._refuse("edit_result", "wrong_stage", "results are edited before a model call")


class ToolCallEdits(_Edits):
    """Changes to a round's calls before they run: new arguments, or a written result."""

    def __init__(self, run: RunState, index: int, tools: Mapping[str, BaseTool]) -> None:
        super().__init__(run, "tool_dispatch")
        self._index = index
        self._tools = tools
        self.written: dict[str, DispatchOutcome] = {}
        """Calls a person answered by hand, by id (they are not run)."""

    @property
    def reply(self) -> AIMessage:
        """The round's reply as it stands (edited arguments included)."""
        message = self._run.messages[self._index]
        assert isinstance(message, AIMessage)
        return message

    def calls(self) -> tuple[ToolCallView, ...]:
        return call_views(self.reply)

    def _call(self, action: str, call_id: str) -> ToolCall:
        self._check_open(action)
        call = next((c for c in self.reply.tool_calls if c.get("id") == call_id), None)
        if call is None:
            self._refuse(
                action, "unknown_call", f"no pending tool call has id {call_id!r}", call_id
            )
        if call_id in self.written:
            self._refuse(action, "not_allowed", f"call {call_id!r} is already answered", call_id)
        assert call is not None
        return call

    def edit_args(self, call_id: str, args: Mapping[str, Any]) -> None:
        with self._lock:
            call = self._call("edit_args", call_id)
            problem = check_args(self._tools.get(call["name"]), args)
            if problem is not None:
                self._refuse("edit_args", "invalid_args", f"{call['name']}: {problem}", call_id)
            new_args = thaw(args)
            reply = self.reply
            calls = [
                {**c, "args": new_args} if c.get("id") == call_id else c for c in reply.tool_calls
            ]
            update: dict[str, Any] = {"tool_calls": calls}
            if isinstance(reply.content, list):
                update["content"] = [_with_input(b, call_id, new_args) for b in reply.content]
            self._run.messages[self._index] = reply.model_copy(update=update)
            self._record("edit_args", call_id, call["args"], new_args)

    def skip(self, call_id: str, content: str, status: Literal["success", "error"]) -> None:
        with self._lock:
            call = self._call("skip", call_id)
            if not isinstance(content, str):
                self._refuse("skip", "not_allowed", "a written result must be text", call_id)
            self.written[call_id] = written_outcome(call, content, status=status)
            before = {"name": call["name"], "args": call["args"]}
            self._record("skip", call_id, before, {"content": content, "status": status})


def _with_input(block: Any, call_id: str, args: Any) -> Any:
    """A ``tool_use`` content block (Anthropic) carries the arguments too: keep it in step."""
    if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id") == call_id:
        return {**block, "input": args}
    return block


class MessageEdits(_Edits):
    """Changes before a model call: an added message, or a replaced tool result."""

    def __init__(self, run: RunState) -> None:
        super().__init__(run, "model_call")

    def messages(self) -> tuple[BaseMessage, ...]:
        return tuple(self._run.messages)

    def append(self, message: Any) -> None:
        with self._lock:
            self._check_open("append_message")
            try:
                converted = convert_to_messages([message])[0]
            except (ValueError, TypeError, NotImplementedError) as exc:
                self._refuse("append_message", "not_allowed", f"not a message: {exc}")
            if isinstance(converted, ToolMessage) or (
                isinstance(converted, AIMessage)
                and (converted.tool_calls or converted.invalid_tool_calls)
            ):
                self._refuse(
                    "append_message",
                    "not_allowed",
                    "a tool result or a tool call cannot be added on its own: it would "
                    "leave a call without its result",
                )
            self._run.messages.append(converted)
            self._record("append_message", None, None, message_dicts([converted])[0])

    def edit_result(
        self, call_id: str, content: str, status: Literal["success", "error"] | None
    ) -> None:
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
            old = run.messages[index]
            assert isinstance(old, ToolMessage)
            new_status = status or old.status
            artifact = {"original": old.content, "artifact": old.artifact, "edited": True}
            run.messages[index] = old.model_copy(
                update={"content": content, "status": new_status, "artifact": artifact}
            )
            before = {"content": old.content, "status": old.status}
            self._record("edit_result", call_id, before, {"content": content, "status": new_status})
