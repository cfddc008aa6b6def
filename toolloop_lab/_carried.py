"""What each tool output really cost: the input tokens and money it causes in every later
model call of its run.

A tool's output enters the conversation once and is then sent again with every later model
call of the run, so what it cost is not what the round that asked for it shows. For each
tool call this counts, from the events alone (the fold, :class:`~toolloop_lab._runview.RunView`):

- ``tokens``: the output's tokens as the model was sent it (after pruning), estimated with
  langchain-core's approximate counter on the tool message the call's events carry
  (``model_call_start.messages``): providers report only a request's total, never one
  message's, so this count is always an estimate (``estimated``);
- ``sent``: how many later model calls of the run were sent it and paid for (round and
  final-answer calls; pruning calls carry no conversation);
- ``carried_tokens``: ``tokens`` x ``sent``;
- ``carried_cost_usd``: each of those sends priced at that call's own input price (the
  call's input cost over its input tokens, cached input included as the provider billed
  it), ``None`` when some of those calls had no known price;
- for a pruned output, ``saved_tokens`` and ``saved_cost_usd``: what the tokens pruning
  kept out would have cost in the same sends (the pruning call's own cost is apart, in its
  usage), so pruning savings read in the same money as the spend.

Only the run's own calls count: a later turn of a conversation (a run of its own) sends it
again too, and is that turn's spend.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from toolloop_lab._runview import RunView
from toolloop_lab._spend.usage import format_tokens, format_usd
from toolloop_lab._stream import message_from_dict
from toolloop_lab._support.jsonsafe import thaw
from toolloop_lab.events import Event, ModelCallStarted


@dataclass(frozen=True, slots=True)
class Carried:
    """What one tool call's output cost in the later calls of its run."""

    tool_call_id: str
    tokens: int
    """The output's tokens as sent (estimated)."""
    sent: int
    """Later model calls of the run that were sent it (and paid for)."""
    carried_tokens: int
    carried_cost_usd: Decimal | None
    saved_tokens: int = 0
    """Tokens pruning kept out of those sends (0 when it was not pruned)."""
    saved_cost_usd: Decimal | None = Decimal(0)
    estimated: bool = True
    """Token counts of one message are estimated: providers report a request's total."""


def _tool_tokens(message: Mapping[str, Any]) -> tuple[str, int] | None:
    """``(tool_call_id, tokens)`` of a tool message as an event carries it."""
    data = thaw(message)
    if not isinstance(data, dict) or data.get("type") != "tool":
        return None
    try:
        parsed = message_from_dict(data)
    except Exception:  # noqa: BLE001 - a message we cannot read back counts nothing
        return None
    if not isinstance(parsed, ToolMessage):
        return None
    return str(parsed.tool_call_id), count_tokens_approximately([parsed])


def _input_price(view: RunView, index: int) -> Decimal | None:
    """The input price per token of the round at ``index``'s call (``None``: unpriced)."""
    usage = view.rounds[index].usage
    if usage.input_cost_usd is None:
        return None if usage.input_tokens else Decimal(0)
    if not usage.input_tokens:
        return Decimal(0)
    return usage.input_cost_usd / usage.input_tokens


def carried_costs(view: RunView, events: Iterable[Event]) -> dict[str, Carried]:
    """Each tool call's carried tokens and cost in the run ``events`` holds (``view`` is
    their fold), by tool call id. A tool message is found in the first model call that
    carried it (a call sent again after a failure carries nothing new)."""
    first_sent: dict[str, tuple[int, int]] = {}
    for event in events:
        if not isinstance(event, ModelCallStarted) or event.purpose == "pruning":
            continue
        for message in event.messages:
            found = _tool_tokens(message)
            if found is not None and found[0] not in first_sent:
                first_sent[found[0]] = (event.round, found[1])
    pruned = {
        tool.id: tool.pruning.tokens_saved
        for row in view.rounds
        for tool in row.tools
        if tool.pruning is not None
    }
    out: dict[str, Carried] = {}
    for call_id, (round_number, tokens) in first_sent.items():
        later = [
            i
            for i, row in enumerate(view.rounds)
            if row.number >= round_number and row.usage.requests
        ]
        prices = [_input_price(view, i) for i in later]
        known = all(p is not None for p in prices)
        total = sum((p for p in prices if p is not None), Decimal(0))
        saved = pruned.get(call_id, 0)
        out[call_id] = Carried(
            tool_call_id=call_id,
            tokens=tokens,
            sent=len(later),
            carried_tokens=tokens * len(later),
            carried_cost_usd=tokens * total if known else None,
            saved_tokens=saved * len(later),
            saved_cost_usd=saved * total if known else None,
        )
    return out


def sent_again(carried: Carried) -> str:
    """``sent 4 more times: 1,200 tokens, $0.0031 (estimated)``: what the output cost
    after its round, as a tool call's detail says it."""
    times = f"{carried.sent} more time{'s' * (carried.sent != 1)}"
    cost = format_usd(carried.carried_cost_usd)
    return f"sent {times}: {format_tokens(carried.carried_tokens)} tokens, {cost} (estimated)"
