"""Reading a foreign span: what it is, and the facts our events need, in any convention.

Frameworks name the same facts three ways, and all three are read here, the newest first:

* the GenAI semantic conventions at the version our export follows
  (:data:`~toolloop_lab.otel._names.SEMCONV_VERSION`: ``gen_ai.operation.name``,
  ``gen_ai.usage.input_tokens``, ``gen_ai.input.messages`` as JSON, ...);
* their older names, still sent by many instrumentations (``gen_ai.system``,
  ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``, ``gen_ai.prompt.N.*``);
* OpenInference's (``openinference.span.kind``, ``llm.token_count.*``, ``llm.model_name``,
  ``llm.input_messages.N.message.*``, ``tool.name``, ``input.value`` / ``output.value``).

A fact no name carries is ``None`` (unknown), never a default: the caller decides what an
unknown becomes (an estimate flagged ``estimated``, a cost left unpriced).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from toolloop_lab._support.fields import reported_count, reported_seconds
from toolloop_lab.otel._names import GEN_AI

Attributes: TypeAlias = Mapping[str, Any]
Role: TypeAlias = Literal["agent", "chat", "tool"]
"""What a span is to us: a run, a model call, a tool call (anything else is passed over)."""

OI_KIND: Final = "openinference.span.kind"
_CHAT_OPERATIONS: Final = frozenset({"chat", "text_completion", "generate_content"})
_OI_ROLES: Final[Mapping[str, Role]] = {"AGENT": "agent", "LLM": "chat", "TOOL": "tool"}

INPUT_TOKENS: Final = (
    GEN_AI.USAGE_INPUT_TOKENS,
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
)
OUTPUT_TOKENS: Final = (
    GEN_AI.USAGE_OUTPUT_TOKENS,
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
CACHE_READ_TOKENS: Final = (
    GEN_AI.USAGE_CACHE_READ_INPUT_TOKENS,
    "llm.token_count.prompt_details.cache_read",
)
CACHE_WRITE_TOKENS: Final = (
    GEN_AI.USAGE_CACHE_CREATION_INPUT_TOKENS,
    "llm.token_count.prompt_details.cache_write",
)
_MODEL_NAMES: Final = (
    GEN_AI.RESPONSE_MODEL,
    GEN_AI.REQUEST_MODEL,
    "llm.model_name",
    "model_name",  # pydantic-ai's agent span
)


def role_of(attributes: Attributes) -> Role | None:
    """What the span is, by the first convention it speaks (``None``: not ours to show)."""
    operation = attributes.get(GEN_AI.OPERATION_NAME)
    if operation == GEN_AI.OP_INVOKE_AGENT:
        return "agent"
    if operation in _CHAT_OPERATIONS:
        return "chat"
    if operation == GEN_AI.OP_EXECUTE_TOOL:
        return "tool"
    kind = attributes.get(OI_KIND)
    if isinstance(kind, str) and kind.upper() in _OI_ROLES:
        return _OI_ROLES[kind.upper()]
    if operation is None and "gen_ai.system" in attributes:  # older conventions: a call
        return "chat"
    return None


def text(attributes: Attributes, *names: str) -> str | None:
    """The first of ``names`` that holds a non-empty string."""
    for name in names:
        value = attributes.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def count(attributes: Attributes, names: Sequence[str]) -> int | None:
    """The first of ``names`` that holds a count an event can hold (a bool, a negative,
    text, one past the event schema's bound: none; :func:`reported_count`)."""
    for name in names:
        value = reported_count(attributes.get(name))
        if value is not None:
            return value
    return None


def seconds(attributes: Attributes, name: str) -> float | None:
    """A duration an event can hold (a bool, text, a negative, NaN, infinity: none)."""
    return reported_seconds(attributes.get(name))


def model_name(attributes: Attributes) -> str | None:
    """The model a span names (the response's first: it is the one that was billed)."""
    return text(attributes, *_MODEL_NAMES)


def finish_reasons(attributes: Attributes) -> str | None:
    """The reply's finish reason (the first, as the conventions list one per choice)."""
    value = attributes.get(GEN_AI.RESPONSE_FINISH_REASONS)
    if isinstance(value, str):
        return value or None
    if isinstance(value, Sequence) and value and isinstance(value[0], str):
        return value[0] or None
    return text(attributes, "llm.output_messages.0.message.finish_reason")


def tool_name(attributes: Attributes, span_name: str) -> str:
    """The tool's name; else the span's name without its operation."""
    name = text(attributes, GEN_AI.TOOL_NAME, "tool.name")
    return name or span_name.removeprefix(f"{GEN_AI.OP_EXECUTE_TOOL} ")


def tool_call_id(attributes: Attributes) -> str | None:
    """The id of the call the tool answers."""
    return text(attributes, GEN_AI.TOOL_CALL_ID, "tool_call.id", "tool.id")


def tool_args(attributes: Attributes) -> dict[str, Any]:
    """The call's arguments (``{}`` when the span records none, as capture is opt-in)."""
    raw = attributes.get(GEN_AI.TOOL_CALL_ARGUMENTS, attributes.get("input.value"))
    value = parse_json(raw) if isinstance(raw, str) else None
    if isinstance(value, Mapping):
        return dict(value)
    return {} if raw is None else {"input": raw}


def tool_result(attributes: Attributes) -> str | None:
    """The tool's output text, if the span records it."""
    raw = attributes.get(GEN_AI.TOOL_CALL_RESULT, attributes.get("output.value"))
    if raw is None:
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, default=str)


def parse_json(raw: str) -> Any:
    """JSON text's value; ``None`` when it is not JSON, or is nested too deep to read
    (Python's parser then raises ``RecursionError``): a value that cannot be parsed is no
    content, and whatever else its span says still counts."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


# -- messages -------------------------------------------------------------------------------


@dataclass(slots=True)
class PromptMemo:
    """The last prompt read for one run, so the next (the same messages and a few more)
    builds only its new messages: each call span records the whole conversation, and
    building a message is the costly part of reading it."""

    text: str = ""
    raw: list[Any] = field(default_factory=list)
    messages: list[BaseMessage] = field(default_factory=list)


def input_messages(
    attributes: Attributes, memo: PromptMemo | None = None
) -> list[BaseMessage] | None:
    """The prompt a call span records, as langchain-core messages; ``None``: not recorded."""
    raw = attributes.get(GEN_AI.INPUT_MESSAGES)
    if isinstance(raw, str):
        return _from_genai(raw, memo)
    return _flat(attributes, "llm.input_messages") or _flat(attributes, "gen_ai.prompt")


def output_messages(attributes: Attributes) -> list[BaseMessage] | None:
    """The reply a span records (``None``: not recorded)."""
    raw = attributes.get(GEN_AI.OUTPUT_MESSAGES)
    if isinstance(raw, str):
        return _from_genai(raw)
    return _flat(attributes, "llm.output_messages") or _flat(attributes, "gen_ai.completion")


def _from_genai(raw: str, memo: PromptMemo | None = None) -> list[BaseMessage] | None:
    """The conventions' JSON messages (``{"role", "parts": [...]}``)."""
    if memo is not None and memo.text and raw == memo.text:  # a call's end, as at its start
        return list(memo.messages)
    data = parse_json(raw)
    if not isinstance(data, list):
        return None
    known = 0
    out: list[BaseMessage] = []
    if memo is not None and memo.raw and data[: len(memo.raw)] == memo.raw:
        known, out = len(memo.raw), list(memo.messages)
    for item in data[known:]:
        if isinstance(item, Mapping):
            out.extend(_genai_message(item))
    if memo is not None:
        memo.text, memo.raw, memo.messages = raw, data, list(out)
    return out


def _genai_message(item: Mapping[str, Any]) -> Iterator[BaseMessage]:
    role = item.get("role")
    parts = [p for p in item.get("parts") or () if isinstance(p, Mapping)]
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in parts:
        kind = part.get("type")
        if kind == "text":
            texts.append(str(part.get("content", "")))
        elif kind == "tool_call":
            args = part.get("arguments")
            args = parse_json(args) if isinstance(args, str) else args
            calls.append(_tool_call(part.get("id"), part.get("name"), args))
        elif kind == "tool_call_response":
            response = part.get("response", part.get("result", ""))
            content = response if isinstance(response, str) else json.dumps(response, default=str)
            yield ToolMessage(content=content, tool_call_id=_name(part.get("id")))
    yield from _message(role, "".join(texts), calls, _name(item.get("tool_call_id")))


def _name(value: Any) -> str:
    """A name or an id a span gives as text; ``""`` (unknown) for any other type, never
    its ``str()`` (an object's repr is no name)."""
    return value if isinstance(value, str) else ""


def _tool_call(call_id: Any, name: Any, args: Any) -> dict[str, Any]:
    """One call of a recorded reply. A name that is not text names no tool: the call is
    an invalid one (shown as such, never run), its arguments kept as their JSON text."""
    if isinstance(name, str) and name:
        known = dict(args) if isinstance(args, Mapping) else {}
        return {"id": _name(call_id), "name": name, "args": known, "type": "tool_call"}
    return {
        "id": _name(call_id) or None,
        "name": None,
        "args": json.dumps(args, default=repr) if args is not None else None,
        "error": "the span names this call's tool with something that is not text",
        "type": "invalid_tool_call",
    }


def _message(
    role: Any, content: str, calls: list[dict[str, Any]], call_id: str
) -> Iterator[BaseMessage]:
    """One message of a role (nothing for a role with no text of its own)."""
    if role == "assistant":
        valid = [c for c in calls if c["type"] == "tool_call"]
        invalid = [c for c in calls if c["type"] != "tool_call"]
        yield AIMessage(content=content, tool_calls=valid, invalid_tool_calls=invalid)
    elif role == "system" and content:
        yield SystemMessage(content=content)
    elif role == "tool" and call_id:
        yield ToolMessage(content=content, tool_call_id=call_id)
    elif role in ("user", "human") and content:
        yield HumanMessage(content=content)


def _flat(attributes: Attributes, prefix: str) -> list[BaseMessage] | None:
    """Messages flattened into indexed attributes (OpenInference ``llm.input_messages.0.
    message.role``; older GenAI ``gen_ai.prompt.0.role``)."""
    out: list[BaseMessage] = []
    for i in range(1_000):
        base = f"{prefix}.{i}.message." if prefix.startswith("llm.") else f"{prefix}.{i}."
        role = attributes.get(f"{base}role")
        if role is None:
            break
        calls = []
        for j in range(1_000):
            call = f"{base}tool_calls.{j}.tool_call."
            name = attributes.get(f"{call}function.name")
            if name is None:
                break
            args = parse_json(str(attributes.get(f"{call}function.arguments", "{}")))
            calls.append(_tool_call(attributes.get(f"{call}id"), name, args))
        content = attributes.get(f"{base}content")
        call_id = _name(attributes.get(f"{base}tool_call_id"))
        out.extend(_message(role, "" if content is None else str(content), calls, call_id))
    return out or None
