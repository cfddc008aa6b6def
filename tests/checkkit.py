"""Runs the checks' tests judge (this module holds no tests of its own).

One support-desk agent, three tools, a scripted model priced as gpt-4o-mini: it looks a
ticket up, searches the docs, fails once (a ticket that does not exist), and answers. Every
figure a check reads is known here in advance (:data:`TICKET_FIGURES`), from the script,
never from the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import AgentConfig, LLMAgent, RecordingChatModel, ScriptedChatModel
from toolloop_lab._engine.result import ToolLoopResult

__all__ = [
    "ANSWER",
    "TICKET_FIGURES",
    "TICKET_TOOLS",
    "TicketFigures",
    "lookup_ticket",
    "reply_tool",
    "search_docs",
    "ticket_run",
    "ticket_script",
]

ANSWER = "Ticket T-7 is open: rotate the key from the admin page (refund not needed)."


@tool
def lookup_ticket(ticket: str) -> str:
    """Look a support ticket up by its id (T-7, say)."""
    if ticket != "T-7":
        raise ValueError(f"no ticket {ticket}")
    return "T-7: open, 'API key leaked', customer Acme"


@tool
def search_docs(query: str, limit: int = 3) -> str:
    """Search the product docs."""
    return f"{limit} pages about {query}: 'Rotating keys' is the first"


@tool
def reply_tool(text: str) -> str:
    """Reply to the customer."""
    return "sent"


reply_tool.name = "reply"
TICKET_TOOLS: list[BaseTool] = [lookup_ticket, search_docs, reply_tool]

_TOKENS = ((120, 30), (200, 25), (260, 20), (300, 40))


def ticket_script() -> list[AIMessage]:
    """Round 1 looks up T-9 (fails) and T-7; round 2 searches; round 3 replies; then the
    answer."""
    return [
        calls(
            tool_call("lookup_ticket", {"ticket": "T-9"}, "c_bad"),
            tool_call("lookup_ticket", {"ticket": "T-7"}, "c_look"),
            tokens=_TOKENS[0],
        ),
        calls(
            tool_call("search_docs", {"query": "rotate api key", "limit": 2}, "c_search"),
            tokens=_TOKENS[1],
        ),
        calls(tool_call("reply", {"text": "We are on it."}, "c_reply"), tokens=_TOKENS[2]),
        final(ANSWER, tokens=_TOKENS[3]),
    ]


@dataclass(frozen=True, slots=True)
class TicketFigures:
    tool_rounds: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def tokens_after(self, rounds: int) -> int:
        """Tokens spent by the end of round ``rounds``."""
        return sum(a + b for a, b in _TOKENS[:rounds])


TICKET_FIGURES = TicketFigures(
    tool_rounds=3,
    model_calls=4,
    input_tokens=sum(a for a, _ in _TOKENS),
    output_tokens=sum(b for _, b in _TOKENS),
    cost=reference_cost(_TOKENS),
)
"""What the ticket run spends, from its script."""


def ticket_run(
    record: Path | None = None, *, config: AgentConfig | None = None, **run: Any
) -> ToolLoopResult:
    """The ticket run (recorded to ``record`` when given)."""
    model: Any = ScriptedChatModel(ticket_script(), model_name=MODEL)
    if record is not None:
        model = RecordingChatModel(model, record)
    agent = LLMAgent(model, TICKET_TOOLS, config or AgentConfig(tool_max_rounds=6))
    return agent.run("My API key leaked, ticket T-7. What now?", **run)
