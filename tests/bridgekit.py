"""Builders shared by the bridge tests (this module holds no tests of its own).

Three real agents, each driven by either our ``ScriptedChatModel`` or the real
``ChatOpenAI`` client against the loopback stub, invoked or streamed:

* ``create_agent`` from ``langchain``;
* a LangGraph ``StateGraph`` with a model node, ``tools_condition`` and a ``ToolNode``;
* a hand-written ``bind_tools`` loop, which answers unknown tools itself (no callback).

Every agent meets the same two-round conversation (:data:`ROUND_ONE` then the final
answer): a tool that works, a tool that fails with a handled ``ToolException``, and a tool
name nobody has. Expected figures come from what the model reported (the script's
``usage_metadata``, the stub's ``reported``), and costs from genai-prices directly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, Literal, TypedDict

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from loopkit import MODEL, reference_cost, usage
from stubs.clients import chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import openai_cost

from toolloop_lab import RunView, ScriptedChatModel
from toolloop_lab.events import Event, ModelCalled, ToolDispatched

__all__ = [
    "AGENTS",
    "FINAL_TEXT",
    "ROUND_ONE",
    "TOOLS",
    "AgentKind",
    "Expected",
    "Snapshot",
    "Snapshots",
    "add",
    "dispatches_by_call",
    "explode",
    "hand_loop",
    "prepare",
    "run_agent",
    "state_graph",
]

AgentKind = Literal["create_agent", "state_graph", "hand_loop"]
AGENTS: tuple[AgentKind, ...] = ("create_agent", "state_graph", "hand_loop")
FINAL_TEXT = "The sum is 5, and one tool failed."


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _explode(reason: str) -> str:
    raise ToolException(f"exploded: {reason}")


explode = StructuredTool.from_function(
    _explode,
    name="explode",
    description="A tool that always fails (its error goes back to the model).",
    handle_tool_error=True,
)


TOOLS: list[BaseTool] = [add, explode]
ROUND_ONE = (("add", {"a": 2, "b": 3}), ("explode", {"reason": "why"}), ("nope", {}))
"""The first reply's calls: one works, one fails, one names a tool nobody has."""


@dataclass(frozen=True, slots=True)
class Expected:
    """What the model reported, summed independently of the bridge."""

    input_tokens: int
    output_tokens: int
    calls: int
    cost: Decimal
    call_ids: tuple[str, ...]
    """The first reply's tool-call ids, in :data:`ROUND_ONE` order."""


def _scripted() -> tuple[BaseChatModel, Expected]:
    tokens = [(120, 30), (260, 14)]
    ids = ("c_add", "c_explode", "c_nope")
    first = AIMessage(
        "",
        tool_calls=[
            {"name": n, "args": a, "id": i, "type": "tool_call"}
            for (n, a), i in zip(ROUND_ONE, ids, strict=True)
        ],
        usage_metadata=usage(*tokens[0]),
    )
    second = AIMessage(FINAL_TEXT, usage_metadata=usage(*tokens[1]))
    model = ScriptedChatModel([first, second], model_name=MODEL)
    cost = reference_cost(tokens)
    return model, Expected(380, 44, 2, cost, ids)


def _openai(stub: OpenAIStub, streaming: bool) -> tuple[BaseChatModel, Expected]:
    ids = stub.reply(
        tool_calls=[OpenAIToolCall(n, a) for n, a in ROUND_ONE],
        usage=OpenAIUsage(150, 40, cached_tokens=64),
    )
    stub.reply(text=FINAL_TEXT, usage=OpenAIUsage(300, 12))
    options: dict[str, Any] = {"streaming": True, "stream_usage": True} if streaming else {}
    model = chat_openai(stub, **options)
    expected = Expected(
        stub.prompt_tokens, stub.completion_tokens, 2, openai_cost(stub.reported), tuple(ids)
    )
    return model, expected


def prepare(
    provider: Literal["scripted", "openai"], stub: OpenAIStub | None, *, streaming: bool
) -> tuple[BaseChatModel, Expected]:
    """The model for one test, and what it will report."""
    if provider == "scripted":
        return _scripted()
    assert stub is not None
    return _openai(stub, streaming)


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def state_graph(model: BaseChatModel, tools: Sequence[BaseTool]) -> Any:
    """A LangGraph ``StateGraph``: a model node, ``tools_condition`` and a ``ToolNode``."""
    bound = model.bind_tools(tools)

    async def agent(state: _State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(_State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    return graph.compile(name="graph")


async def hand_loop(
    model: BaseChatModel, tools: Sequence[BaseTool], messages: list[BaseMessage], *, stream: bool
) -> AIMessage:
    """A hand-written ``bind_tools`` loop: unknown tools are answered here, without any
    tool callback (so the bridge sees them only in the next prompt)."""
    bound = model.bind_tools(tools)
    by_name = {t.name: t for t in tools}
    while True:
        if stream:
            merged: Any = None
            async for chunk in bound.astream(messages):
                merged = chunk if merged is None else merged + chunk
            reply = merged
        else:
            reply = await bound.ainvoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return reply  # type: ignore[no-any-return]
        for call in reply.tool_calls:
            chosen = by_name.get(call["name"])
            if chosen is None:
                text = f"unknown tool {call['name']}"
                messages.append(ToolMessage(text, tool_call_id=call["id"], status="error"))
            else:
                messages.append(await chosen.ainvoke(call))


async def run_agent(
    kind: AgentKind, model: BaseChatModel, *, stream: bool, config: dict[str, Any] | None = None
) -> list[BaseMessage]:
    """Run one agent on "Add 2 and 3." and return its final messages."""
    prompt: list[BaseMessage] = [HumanMessage("Add 2 and 3.")]
    if kind == "hand_loop":
        await hand_loop(model, TOOLS, prompt, stream=stream)
        return prompt
    graph = (
        create_agent(model, TOOLS, name="agent")
        if kind == "create_agent"
        else state_graph(model, TOOLS)
    )
    inputs = {"messages": prompt}
    if not stream:
        state = await graph.ainvoke(inputs, config)
        return list(state["messages"])
    last: dict[str, Any] = {}
    async for mode, chunk in graph.astream(inputs, config, stream_mode=["messages", "values"]):
        if mode == "values":
            last = chunk
    return list(last["messages"])


def dispatches_by_call(events: Sequence[Event]) -> dict[str, list[ToolDispatched]]:
    """Every ``tool_dispatch`` event, by tool-call id."""
    found: dict[str, list[ToolDispatched]] = {}
    for event in events:
        if isinstance(event, ToolDispatched):
            found.setdefault(event.tool_call_id, []).append(event)
    return found


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a live view showed right after one event."""

    kind: str
    status: str
    rounds: int
    input_tokens: int
    tools_done: int
    streamed: str


@dataclass(slots=True)
class Snapshots:
    """An observer that folds events into a ``RunView`` and records it after each one, so a
    test can tell what a person saw at every point of the run."""

    view: RunView = field(default_factory=RunView)
    events: list[Event] = field(default_factory=list)
    seen: list[Snapshot] = field(default_factory=list)
    hook: Callable[[Event], Awaitable[None] | None] | None = None

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self.view.apply(event)
        rows = self.view.rounds
        self.seen.append(
            Snapshot(
                event.kind,
                self.view.status,
                self.view.rounds_run,
                self.view.usage.input_tokens,
                sum(1 for r in rows for t in r.tools if t.status in ("success", "error")),
                rows[-1].streamed_text if rows else "",
            )
        )

    @property
    def model_calls(self) -> list[ModelCalled]:
        return [e for e in self.events if isinstance(e, ModelCalled)]
