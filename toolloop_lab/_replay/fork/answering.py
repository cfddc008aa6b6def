"""The model a fork runs on: the one given, able to answer the rest of the run.

A fork takes the rounds before its round from the source and needs a model to answer the
rest, and the model given is often the very one that made the run ("Fork from here" always
passes the agent's own). A model that answers each request as it comes (a provider's) does.
A model that plays replies in order has played them: a ``ScriptedChatModel`` that made the
run, a ``ReplayChatModel`` that replayed it. Each answers the fork from where the original
got the reply the fork now asks for, on a copy (the model itself is unchanged):

* a scripted model, from the script item that answered the original's request at the
  fork's round: the call whose request is the one the fork sends first (its role, content,
  tool calls and message ids), followed by the original's next requests where the model
  made them, which tells runs that sent the same first request apart;
* a replay, afresh from its recording (strict replay finds each request wherever it is;
  relaxed replay starts at the recorded call the fork's first request matches).

A model that cannot answer at all (a scripted model whose replies are all played and
none answered that request, a replay whose recording never had it) is refused before any
call, with a :class:`~toolloop_lab.errors.ConfigurationError` whose field names the
argument (``model``, ``pruning_model``) and whose message says what to give instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from toolloop_lab._models.scripted import ScriptedChatModel
from toolloop_lab._replay.chat_models import ReplayChatModel
from toolloop_lab._replay.recording_file import message_signature, request_signature
from toolloop_lab.errors import ConfigurationError

M = TypeVar("M", bound=BaseChatModel)
Requests = Sequence[Sequence[BaseMessage]]

_WHAT = {"model": "model", "pruning_model": "pruning model"}
_INSTEAD = (
    "fork with a model that can answer from there: a ScriptedChatModel with the replies "
    "from that round on, a ReplayChatModel of a recording of the run, or a live model"
)


def fork_model(
    model: M,
    asked: Requests,
    *,
    field: Literal["model", "pruning_model"],
    at_round: int,
) -> M | ScriptedChatModel | ReplayChatModel:
    """The model the fork's own run calls in place of ``model``, given what the original
    sent ``model`` from round ``at_round`` on (``asked``: its first requests, in order;
    empty when it sent nothing more). Refuses a model that cannot answer (module doc)."""
    if isinstance(model, ScriptedChatModel):
        return _scripted(model, asked, field, at_round)
    if isinstance(model, ReplayChatModel):
        return _replayed(model, asked, field, at_round)
    return model


def _scripted(
    model: ScriptedChatModel, asked: Requests, field: str, at_round: int
) -> ScriptedChatModel:
    made = [call.messages for call in model.calls]
    at = _position(made, asked)
    if at is not None:
        return model.answering_from(at)
    if not asked or model.remaining:  # it never answered the run from there: it answers as is
        return model
    raise ConfigurationError(
        f"cannot fork at round {at_round}: the {_WHAT[field]} is a ScriptedChatModel that has "
        f"played all {len(model.script)} of its replies, and none answered what round "
        f"{at_round} was sent, so it has no reply for the fork; {_INSTEAD}",
        field=field,
    )


def _replayed(
    model: ReplayChatModel, asked: Requests, field: str, at_round: int
) -> ReplayChatModel:
    if not model.served or not asked:  # nothing served yet: it answers as is
        return model
    wanted = request_signature(asked[0])
    found = [
        i
        for i, call in enumerate(model.recording.calls)
        if len(call.request) == len(asked[0]) and request_signature(call.request) == wanted
    ]
    if not found:
        raise ConfigurationError(
            f"cannot fork at round {at_round}: the {_WHAT[field]} replays a recording that "
            f"has no call sent what round {at_round} was sent, so it has no reply for the "
            f"fork; {_INSTEAD}",
            field=field,
        )
    return model.answering_from(found[-1])


def _same(a: Sequence[BaseMessage], b: Sequence[BaseMessage]) -> bool:
    """The same request: as many messages, each with the same id and replay signature
    (compared from the end, where requests of one run differ)."""
    return len(a) == len(b) and all(
        x.id == y.id and message_signature(x) == message_signature(y)
        for x, y in zip(reversed(a), reversed(b), strict=True)
    )


def _position(made: Requests, asked: Requests) -> int | None:
    """Where a model's calls (``made``, in order) answered ``asked``: the latest call that
    was sent ``asked[0]`` and was followed by the rest of ``asked``, else the latest that
    was sent ``asked[0]``; ``None`` when none was."""
    if not asked:
        return None
    first = [i for i, sent in enumerate(made) if _same(sent, asked[0])]
    whole = [
        i
        for i in first
        if len(made) >= i + len(asked)
        and all(_same(made[i + j], asked[j]) for j in range(1, len(asked)))
    ]
    if whole:
        return whole[-1]
    return first[-1] if first else None
