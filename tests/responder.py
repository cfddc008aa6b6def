"""A scripted responder: replies that follow from the request, for suites we do not write.

``respond`` is a ``ScriptedChatModel`` script item (a callable of the messages and the bound
tools). langchain-tests' standard suites ask "what is magic_function(3)?", "tell me a joke"
with a schema bound, "what is 3 + 4" with an adder bound; a fixed script cannot answer
those, a responder can. With tools bound and the human speaking last, it calls the first
tool with arguments drawn from the human's text (numbers in order, a quoted name, else the
text itself); otherwise it answers in plain text about what it was sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from toolloop_lab import ScriptedChatModel

__all__ = ["MODEL_NAME", "respond", "responder_model"]

MODEL_NAME = "scripted-standard"
"""The name the responder's model reports (no price is known for it: none is needed)."""


def responder_model(calls: int = 32) -> ScriptedChatModel:
    """A scripted model that answers ``calls`` requests with :func:`respond`."""
    return ScriptedChatModel([respond] * calls, model_name=MODEL_NAME)


def respond(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
    """One reply that follows from ``messages`` and the bound ``tools`` (module doc)."""
    last = messages[-1]
    text = last.text
    if tools and isinstance(last, HumanMessage):
        function = tools[0]["function"]
        args = _arguments(function.get("parameters") or {}, text)
        call_id = f"call_{len(messages)}_{function['name']}"
        return AIMessage(
            "",
            tool_calls=[
                {"name": function["name"], "args": args, "id": call_id, "type": "tool_call"}
            ],
        )
    if isinstance(last, ToolMessage):
        return AIMessage(f"The tool {last.name or 'call'} returned: {text}")
    return AIMessage(f"You said {text!r}; this is a scripted reply of a few words.")


def _arguments(schema: Mapping[str, Any], text: str) -> dict[str, Any]:
    numbers = iter(int(n) for n in re.findall(r"-?\d+", text))
    quoted = re.findall(r"'([^']+)'", text)
    names = iter([*quoted, text])
    args: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        args[name] = _value(prop, numbers, names, text)
    return args


def _value(prop: Mapping[str, Any], numbers: Any, names: Any, text: str) -> Any:
    kind = prop.get("type")
    if kind is None:  # Optional[...]: anyOf [the type, null]
        options: Sequence[Mapping[str, Any]] = prop.get("anyOf") or []
        kind = next((o.get("type") for o in options if o.get("type") != "null"), "string")
    if "enum" in prop:
        return prop["enum"][0]
    if kind in ("integer", "number"):
        return next(numbers, 0)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return {}
    return next(names, text)
