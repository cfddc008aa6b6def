"""What ``run()`` and ``arun()`` take as a run's input, checked at the call.

langchain-core reads any iterable as messages, so a mapping passed as the input was read
as its keys: LangGraph's ``{"messages": [...]}`` was sent as the one user message
``"messages"``, a paid call with a garbage prompt. Here a mapping is never iterated: the
LangGraph shape is read as its messages (as LangGraph's ``add_messages`` reads them, one
message or a list), and any other is refused with a ``TypeError`` before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage

from toolloop_lab._engine.result import ToolLoopResult
from toolloop_lab._support.fields import Prompt, checked

INPUT_SHAPE: Final = (
    "run() takes a prompt (a str), a list of messages, or LangGraph's {'messages': [...]}"
)
"""The start of every refusal of a run's input: the shapes expected."""

_HISTORY_SHAPE: Final = (
    "history= takes the messages of the turns so far (history=result.messages of the "
    "last turn), or LangGraph's {'messages': [...]}"
)

_MESSAGE_KEYS: Final = frozenset({"role", "content", "type"})
"""Keys of one message written as a dict (OpenAI's or langchain's form)."""


def _keys(mapping: Mapping[Any, Any]) -> str:
    shown = ", ".join(repr(k) for k in list(mapping)[:5])
    return shown + (", ..." if len(mapping) > 5 else "")


def _mapping_messages(given: Mapping[Any, Any], shape: str) -> Sequence[Any]:
    """LangGraph's ``{"messages": ...}`` as its messages; any other mapping refused."""
    if "messages" in given and len(given) == 1:
        inner = given["messages"]
        one = isinstance(inner, (str, BaseMessage, Mapping))
        return [inner] if one else inner
    if "messages" in given:
        why = f"got a state with the keys {_keys(given)}: pass state['messages']"
    elif given and _MESSAGE_KEYS.issuperset(given):
        why = "got one message as a dict: pass [message]"
    else:
        why = f"got a dict with the keys {_keys(given)}: only its 'messages' are read"
    raise TypeError(f"{shape}; {why}")


def _not_messages(given: Any) -> str | None:
    """Why ``given`` (no str, no mapping) is not a list of messages, if it is plainly not."""
    if isinstance(given, BaseMessage):
        return f"got one {type(given).__name__}: pass [message]"
    if isinstance(given, ToolLoopResult):
        return "got a ToolLoopResult: continue its conversation with history=result.messages"
    return None


def run_input(given: Any) -> str | Sequence[Any]:
    """A run's input as the loop reads it: a prompt, or messages (never a mapping's keys);
    ``TypeError`` naming the shapes expected for a mapping that is not LangGraph's, and
    ``ConfigurationError(field="prompt")`` for a blank prompt, which providers refuse."""
    if isinstance(given, str):
        prompt: str = checked(Prompt, given, field="prompt")
        return prompt
    if isinstance(given, Mapping):
        return _mapping_messages(given, INPUT_SHAPE)
    why = _not_messages(given)
    if why is not None:
        raise TypeError(f"{INPUT_SHAPE}; {why}")
    messages: Sequence[Any] = given
    return messages


def history_input(given: Any) -> Sequence[Any]:
    """The messages of the turns before a run (``history=``), refused as ``run_input``
    refuses a mapping, and never a text read as one message per character."""
    if isinstance(given, Mapping):
        return _mapping_messages(given, _HISTORY_SHAPE)
    if isinstance(given, str):
        raise TypeError(f"{_HISTORY_SHAPE}; got a str: pass the new message as the prompt")
    why = _not_messages(given)
    if why is not None:
        raise TypeError(f"{_HISTORY_SHAPE}; {why}")
    messages: Sequence[Any] = given
    return messages
