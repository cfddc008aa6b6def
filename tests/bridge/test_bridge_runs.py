"""How the bridge tells runs apart and what it says about them: nested sub-agents, retries,
synthesis-like final calls, unknown usage and prices, cancellation, interrupts, hand-written
loops, ``watch`` blocks, and coalesced streaming.

Each test drives real langchain-core, LangGraph and ``create_agent`` code on our scripted
model and reads only the events (or a ``RunView`` folded from them).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
from concurrent.futures import Future
from decimal import Decimal
from typing import Annotated, Any, TypedDict

import pytest
from bridgekit import Snapshots, add
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_core.runnables import RunnableLambda, chain
from langchain_core.runnables.config import ContextThreadPoolExecutor
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph.types import Command, interrupt
from loopkit import MODEL, calls, final, reference_cost, tool_call, wait_until
from stubs.openai_stub import OpenAIStub, OpenAIUsage

from toolloop_lab import EventBridge, RunView, ScriptedChatModel, watch
from toolloop_lab._bridge.conversation import (
    Conversation,
    bound_tool_names,
    configured_model_name,
    messages_in,
)
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    ModelDelta,
    RoundStarted,
    SynthesisStarted,
    ToolDispatched,
    ToolStarted,
    transcript,
)

_WAIT_S = 10.0
"""Longest wait for a thread a test holds (a safety net: tests release them at once)."""


def _of(events: list[Event], kind: type[Any], run_id: str | None = None) -> list[Any]:
    return [e for e in events if isinstance(e, kind) and run_id in (None, e.run_id)]


def _script(*replies: Any) -> ScriptedChatModel:
    return ScriptedChatModel(list(replies), model_name=MODEL)


def _result(reply: AIMessage) -> LLMResult:
    """What langchain-core hands ``on_llm_end`` for one reply."""
    return LLMResult(generations=[[ChatGeneration(message=reply)]])


# -- nested runs -----------------------------------------------------------------------------
async def test_a_sub_agent_called_as_a_tool_is_a_nested_run() -> None:
    inner = create_agent(
        _script(
            calls(tool_call("add", {"a": 1, "b": 1}, "in1"), tokens=(30, 4)),
            final("two", tokens=(40, 2)),
        ),
        [add],
        name="researcher",
    )

    @tool
    async def research(question: str) -> str:
        """Ask the researcher."""
        state = await inner.ainvoke({"messages": [HumanMessage(question)]})
        return str(state["messages"][-1].text)

    outer = create_agent(
        _script(
            calls(tool_call("research", {"question": "1+1?"}, "out1"), tokens=(20, 6)),
            final("It is two.", tokens=(50, 5)),
        ),
        [research],
        name="boss",
    )
    events: list[Event] = []
    with watch(events.append):
        await outer.ainvoke({"messages": [HumanMessage("Ask the researcher.")]})

    boss, child = _of(events, LoopStarted)
    assert (boss.name, boss.parent_run_id, boss.parent_tool_call_id) == ("boss", None, None)
    assert (child.name, child.parent_run_id) == ("researcher", boss.run_id)
    assert child.parent_tool_call_id == "out1"
    assert child.run_id != boss.run_id
    # the child runs inside the parent's tool call, and answers it
    order = [(e.run_id, e.kind, getattr(e, "tool_call_id", None)) for e in events]
    opened = order.index((boss.run_id, "tool_start", "out1"))
    answered = order.index((boss.run_id, "tool_dispatch", "out1"))
    child_at = [i for i, (run, _, _) in enumerate(order) if run == child.run_id]
    assert opened < min(child_at)
    assert max(child_at) < answered
    [child_end] = _of(events, LoopFinished, child.run_id)
    [answer] = _of(events, ToolDispatched, boss.run_id)
    assert answer.content == child_end.final_text == "two"
    # each run counts its own calls; together they are everything the models reported
    [boss_end] = _of(events, LoopFinished, boss.run_id)
    assert (boss_end.usage.input_tokens, child_end.usage.input_tokens) == (70, 70)
    assert boss_end.usage.cost_usd == reference_cost([(20, 6), (50, 5)])
    # a view of the parent is not confused by the child's events
    view = RunView.from_events(events)
    assert (view.run_id, view.rounds_run, view.final_text) == (boss.run_id, 2, "It is two.")


def test_model_calls_made_directly_in_a_tool_are_one_nested_run_per_tool_call() -> None:
    helper = _script(final("draft", tokens=(8, 2)), final("better draft", tokens=(9, 3)))

    @tool
    def write(topic: str) -> str:
        """Write twice."""
        first = helper.invoke([HumanMessage(topic)])
        return str(helper.invoke([HumanMessage(topic), first, HumanMessage("again")]).text)

    agent = create_agent(
        _script(calls(tool_call("write", {"topic": "x"}, "w1")), final("done")), [write]
    )
    events: list[Event] = []
    with watch(events.append):
        agent.invoke({"messages": [HumanMessage("go")]})
    parent, nested = _of(events, LoopStarted)
    assert nested.parent_run_id == parent.run_id
    assert nested.parent_tool_call_id == "w1"
    [end] = _of(events, LoopFinished, nested.run_id)
    assert (end.rounds, end.usage.input_tokens, end.final_text) == (2, 17, "better draft")
    assert len(_of(events, ModelCalled, nested.run_id)) == 2


# -- what a framework does that our loop would not -------------------------------------------
async def test_a_retried_call_is_a_separate_call_of_the_same_round() -> None:
    model = _script(ConnectionError("flaky"), final("ok", tokens=(12, 2)))
    retrying = model.with_retry(stop_after_attempt=2, wait_exponential_jitter=False)

    @chain
    async def ask(messages: list[BaseMessage]) -> Any:
        return await retrying.ainvoke(messages)

    events: list[Event] = []
    with watch(events.append):
        await ask.ainvoke([HumanMessage("hi")])
    first, retry = _of(events, ModelCallStarted)
    assert (first.call, retry.call) == (1, 2)
    assert first.round == retry.round == 1
    assert len(first.messages) == 1
    assert retry.messages == ()  # the same prompt again: nothing new to carry
    assert len(_of(events, RoundStarted)) == 1
    [called] = _of(events, ModelCalled)
    assert called.call == 2
    [end] = _of(events, LoopFinished)
    assert (end.rounds, end.usage.requests, end.usage.input_tokens) == (1, 1, 12)
    assert len(transcript(events)) == 2


class _State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


async def test_a_final_call_without_tools_is_synthesis_like() -> None:
    model = _script(
        calls(tool_call("add", {"a": 2, "b": 2}, "a1"), tokens=(10, 3)),
        final("Four.", tokens=(20, 2)),
    )
    bound = model.bind_tools([add])

    async def agent(state: _State) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    async def wrap_up(state: _State) -> dict[str, Any]:
        ask = [*state["messages"], HumanMessage("Answer now, without tools.")]
        return {"messages": [await model.ainvoke(ask)]}

    graph = StateGraph(_State)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([add]))
    graph.add_node("wrap_up", wrap_up)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    graph.add_edge("tools", "wrap_up")
    graph.add_edge("wrap_up", END)
    events: list[Event] = []
    with watch(events.append):
        await graph.compile().ainvoke({"messages": [HumanMessage("2+2?")]})
    round_call, last_call = _of(events, ModelCalled)
    assert (round_call.purpose, last_call.purpose) == ("round", "synthesis")
    assert last_call.round == 2
    assert not _of(events, SynthesisStarted)  # the framework's reason is not in the callbacks
    [end] = _of(events, LoopFinished)
    assert (end.outcome, end.synthesis_was_run, end.synthesis_reason) == ("synthesis", True, None)
    assert end.rounds == 1
    view = RunView.from_events(events)
    assert [r.purpose for r in view.rounds] == ["round", "synthesis"]


def test_a_round_repeating_the_previous_calls_is_marked_stuck() -> None:
    same = tool_call("add", {"a": 1, "b": 1}, "s1"), tool_call("add", {"a": 1, "b": 1}, "s2")
    agent = create_agent(_script(calls(same[0]), calls(same[1]), final("2")), [add])
    events: list[Event] = []
    with watch(events.append):
        agent.invoke({"messages": [HumanMessage("go")]})
    assert [c.stuck for c in _of(events, ModelCalled)] == [False, True, False]


async def test_what_the_callbacks_do_not_carry_is_marked_never_zero(oai: OpenAIStub) -> None:
    # a stream without usage (no stream_usage), from a model genai-prices does not know
    oai.chunk_interval = 0
    oai.reply(text="a reply with no usage reported", usage=OpenAIUsage(9, 9), model="house-llm")
    model = ChatOpenAI(
        model="house-llm", base_url=oai.base_url, api_key="test", max_retries=0, streaming=True
    )
    events: list[Event] = []
    with watch(events.append):
        reply = await model.ainvoke([HumanMessage("hello")])
    assert reply.usage_metadata is None
    [called] = _of(events, ModelCalled)
    assert called.usage.estimated is True  # estimated, and flagged so
    assert called.usage.input_tokens > 0
    assert called.usage.output_tokens > 0
    assert called.usage.cost_usd is None  # no known price: unknown, not $0
    [end] = _of(events, LoopFinished)
    assert end.usage.cost_usd is None
    assert end.usage.estimated is True
    [start] = _of(events, LoopStarted)
    assert (start.token_budget, start.usd_limit, start.max_rounds) == (None, None, None)


async def test_prices_given_to_the_bridge_price_an_unknown_model() -> None:
    from toolloop_lab import TokenPrice

    model = ScriptedChatModel([final("hi", tokens=(1_000, 500))], model_name="house-model")
    events: list[Event] = []
    prices = {"house-model": TokenPrice(Decimal(2), Decimal(4))}
    with watch(events.append, prices=prices):
        await model.ainvoke([HumanMessage("hello")])
    [called] = _of(events, ModelCalled)
    assert called.usage.cost_usd == Decimal("0.004")


async def test_a_bridged_reply_is_counted_and_priced_as_the_loop_counts_it() -> None:
    from toolloop_lab import LLMAgent, TokenPrice

    prices = {"house-model": TokenPrice(Decimal(2), Decimal(4))}
    bridged: list[Event] = []
    model = ScriptedChatModel([final("hi", tokens=(1_000, 500))], model_name="house-model")
    with watch(bridged.append, prices=prices):
        await model.ainvoke([HumanMessage("hello")])
    looped: list[Event] = []
    model = ScriptedChatModel([final("hi", tokens=(1_000, 500))], model_name="house-model")
    await LLMAgent(model, [], observers=[looped.append], prices=prices).arun("hello")
    [seen] = _of(bridged, ModelCalled)
    [ran] = _of(looped, ModelCalled)
    assert seen.usage == ran.usage  # the input and output parts of the cost too
    assert seen.usage.input_cost_usd == Decimal("0.002")
    assert (seen.accumulated, seen.model_name, seen.stuck) == (
        ran.accumulated,
        ran.model_name,
        ran.stuck,
    )


# -- frameworks that run tools without their tool call -----------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["invoke", "stream"])
async def test_a_classic_agent_executor_gets_one_dispatch_per_tool_call(stream: bool) -> None:
    from langchain_classic.agents import AgentExecutor, create_tool_calling_agent
    from langchain_core.prompts import ChatPromptTemplate

    model = _script(
        calls(
            tool_call("add", {"a": 1, "b": 2}, "k_add"),
            tool_call("add", {"a": 5, "b": 5}, "k_add2"),
            tool_call("nope", {}, "k_nope"),
            tokens=(40, 9),
        ),
        final("3 and 10", tokens=(70, 4)),
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Help."), ("human", "{input}"), ("placeholder", "{agent_scratchpad}")]
    )
    executor = AgentExecutor(agent=create_tool_calling_agent(model, [add], prompt), tools=[add])
    events: list[Event] = []
    with watch(events.append):
        if stream:
            async for _ in executor.astream({"input": "1+2 and 5+5"}):
                pass
        else:
            await executor.ainvoke({"input": "1+2 and 5+5"})
    # the executor runs tools without their call ids: each run is matched to its call
    dispatched = {e.tool_call_id: e for e in _of(events, ToolDispatched)}
    assert len(_of(events, ToolDispatched)) == 3
    assert (dispatched["k_add"].content, dispatched["k_add2"].content) == ("3", "10")
    assert dispatched["k_add"].ran is True
    nope = dispatched["k_nope"]  # answered by the executor's stand-in: the loop's own error
    assert (nope.name, nope.status, nope.error_reason, nope.ran) == (
        "nope",
        "error",
        "not_available",
        True,
    )
    assert sorted(e.tool_call_id for e in _of(events, ToolStarted)) == ["k_add", "k_add2"]
    [start] = _of(events, LoopStarted)
    assert start.name == "AgentExecutor"
    [end] = _of(events, LoopFinished)
    assert (end.final_text, end.rounds, end.usage.input_tokens) == ("3 and 10", 2, 110)


def test_a_hand_loop_that_runs_tools_by_their_arguments_is_matched_to_its_calls() -> None:
    model = _script(calls(tool_call("add", {"a": 4, "b": 4}, "m1")), final("8"))
    bound = model.bind_tools([add])
    events: list[Event] = []
    with watch(events.append):
        messages: list[BaseMessage] = [HumanMessage("4+4")]
        reply = bound.invoke(messages)
        call = reply.tool_calls[0]
        result = add.invoke(call["args"])  # no tool call: a plain value comes back
        messages += [reply, ToolMessage(str(result), tool_call_id=call["id"])]
        bound.invoke(messages)
    [dispatch] = _of(events, ToolDispatched)
    assert (dispatch.tool_call_id, dispatch.content, dispatch.ran) == ("m1", "8", True)
    assert _of(events, LoopFinished)[0].final_text == "8"


# -- the ends of a run -----------------------------------------------------------------------
async def test_a_cancelled_run_says_so_and_keeps_its_partial_counts() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Takes a while."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    agent = create_agent(
        _script(calls(tool_call("slow", {}, "s1"), tokens=(15, 3)), final("never")), [slow]
    )
    events: list[Event] = []
    with watch(events.append):
        task = asyncio.create_task(agent.ainvoke({"messages": [HumanMessage("go")]}))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    [end] = _of(events, LoopFailed)
    assert (end.outcome, end.cancelled, end.rounds) == ("cancelled", True, 1)
    assert end.usage.input_tokens == 15
    [stopped] = _of(events, ToolDispatched)
    assert (stopped.tool_call_id, stopped.status, stopped.error_reason) == (
        "s1",
        "error",
        "cancelled",
    )


async def test_a_stream_its_consumer_stops_early_is_a_cancelled_run() -> None:
    agent = create_agent(
        _script(calls(tool_call("add", {"a": 1, "b": 2}, "g1"), tokens=(21, 4)), final("3")),
        [add],
    )
    events: list[Event] = []
    with watch(events.append):
        updates = agent.astream({"messages": [HumanMessage("go")]}, stream_mode="updates")
        async for _ in updates:
            break
        await updates.aclose()
    [end] = _of(events, LoopFailed)
    assert (end.outcome, end.cancelled, end.error_type) == ("cancelled", True, "GeneratorExit")
    assert end.usage.input_tokens == 21


def test_an_interrupted_tool_call_stays_open_and_the_resume_is_a_new_run() -> None:
    @tool
    def confirm(question: str) -> str:
        """Ask a person."""
        return str(interrupt(question))

    agent = create_agent(
        _script(calls(tool_call("confirm", {"question": "ok?"}, "q1")), final("confirmed")),
        [confirm],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t1"}}
    events: list[Event] = []
    with watch(events.append):
        paused = agent.invoke({"messages": [HumanMessage("go")]}, config)
        first_run = len(events)
        agent.invoke(Command(resume="yes"), config)
    assert "__interrupt__" in paused
    before, after = events[:first_run], events[first_run:]
    assert not _of(before, ToolDispatched)  # paused, not answered
    assert _of(before, LoopFinished)
    [resumed] = _of(after, LoopStarted)
    assert resumed.run_id != before[0].run_id
    [answer] = _of(after, ToolDispatched)
    assert (answer.tool_call_id, answer.content) == ("q1", "yes")


def test_a_chain_that_calls_no_model_is_no_run_but_a_failing_one_is_reported() -> None:
    events: list[Event] = []
    with watch(events.append):
        RunnableLambda(lambda x: x + 1).invoke(1)
        assert events == []
        with pytest.raises(ZeroDivisionError):
            RunnableLambda(lambda x: x / 0).with_config(run_name="divide").invoke(1)
    start, end = events
    assert isinstance(start, LoopStarted)
    assert isinstance(end, LoopFailed)
    assert (start.name, end.error_type, end.any_invocation_made) == (
        "divide",
        "ZeroDivisionError",
        False,
    )


def test_a_model_call_that_returns_after_its_chain_ended_is_in_the_run_before_its_end() -> None:
    began, go = threading.Event(), threading.Event()

    def held(messages: Any, tools: Any) -> AIMessage:
        began.set()
        go.wait(_WAIT_S)
        return final("late", tokens=(7, 3))

    model = _script(final("first", tokens=(10, 2)), held)
    pool = ContextThreadPoolExecutor(max_workers=1)  # copies the context: the chain's child
    later: list[Future[Any]] = []

    @chain
    def fire_and_forget(text: str) -> str:
        first = model.invoke(text)
        later.append(pool.submit(model.invoke, text))  # not waited for
        began.wait(_WAIT_S)
        return str(first.text)

    seen = Snapshots()
    with watch(seen):
        fire_and_forget.invoke("go")
        assert seen.view.status == "running"  # a call it started is still out
        go.set()
        later[0].result(_WAIT_S)
    pool.shutdown()
    [end] = _of(seen.events, LoopFinished)
    assert seen.events[-1] is end  # the run's end is its last event ...
    assert (end.usage.requests, end.usage.input_tokens, end.usage.output_tokens) == (2, 17, 5)
    assert end.usage == seen.model_calls[-1].accumulated  # ... and its totals hold the call
    assert seen.view.status == "finished"


async def test_a_tool_that_ends_after_its_run_failed_is_in_the_run_before_the_failure() -> None:
    running, release = threading.Event(), threading.Event()

    @tool
    def lookup() -> str:
        """Runs in a worker thread that nothing can stop."""
        running.set()
        release.wait(_WAIT_S)
        return "found it"

    @tool
    def broken() -> str:
        """Fails once lookup runs, and its error ends the run."""
        running.wait(_WAIT_S)
        raise RuntimeError("broken tool")

    agent = create_agent(
        _script(calls(tool_call("lookup", {}, "k1"), tool_call("broken", {}, "k2")), final("-")),
        [lookup, broken],
    )
    seen = Snapshots()
    debugger = LoopDebugger()
    with watch(seen, debugger), pytest.raises(RuntimeError, match="broken tool"):
        await agent.ainvoke({"messages": [HumanMessage("go")]})
    assert seen.view.status == debugger.view.status == "running"  # lookup still runs
    release.set()
    assert await asyncio.to_thread(wait_until, lambda: bool(_of(seen.events, LoopFailed)))
    [end] = _of(seen.events, LoopFailed)
    assert seen.events[-1] is end
    dispatched = {e.tool_call_id: e for e in _of(seen.events, ToolDispatched)}
    assert (dispatched["k1"].status, dispatched["k1"].content) == ("success", "found it")
    assert dispatched["k2"].status == "error"
    for view in (seen.view, debugger.view):
        assert view.status == "failed"
        assert [t.status for t in view.rounds[0].tools] == ["success", "error"]
    assert "failed" in debugger.summary()
    debugger.close()


def test_a_model_call_still_out_when_its_run_fails_is_closed_with_the_failure() -> None:
    # langchain-core reports no end for a call its run cancelled, so a failure cannot wait
    # for one; a reply that comes anyway belongs to an ended run and changes nothing
    events: list[Event] = []
    bridge = EventBridge(events.append)
    root, call = uuid.uuid4(), uuid.uuid4()
    bridge.on_chain_start(None, {"messages": [HumanMessage("go")]}, run_id=root)
    bridge.on_chat_model_start(None, [[HumanMessage("go")]], run_id=call, parent_run_id=root)
    bridge.on_chain_error(asyncio.CancelledError(), run_id=root)
    ended = len(events)
    bridge.on_llm_end(_result(final("late", tokens=(5, 1))), run_id=call, parent_run_id=root)
    assert len(events) == ended
    [end] = _of(events, LoopFailed)
    assert (end.cancelled, end.rounds, events[-1]) == (True, 0, end)


def test_a_repeated_chain_start_is_the_same_run_and_it_ends() -> None:
    events: list[Event] = []
    bridge = EventBridge(events.append)
    root, call = uuid.uuid4(), uuid.uuid4()
    inputs = {"messages": [HumanMessage("go")]}
    bridge.on_chain_start({"name": "agent"}, inputs, run_id=root)
    bridge.on_chat_model_start(None, [[HumanMessage("go")]], run_id=call, parent_run_id=root)
    bridge.on_chain_start({"name": "agent"}, inputs, run_id=root)  # said twice
    bridge.on_llm_end(_result(final("done", tokens=(9, 2))), run_id=call, parent_run_id=root)
    bridge.on_chain_end({"messages": [AIMessage("done")]}, run_id=root)
    bridge.on_chain_end({"messages": [AIMessage("done")]}, run_id=root)
    [start] = _of(events, LoopStarted)
    [end] = _of(events, LoopFinished)
    assert start.run_id == end.run_id == str(root)
    assert (end.rounds, end.usage.input_tokens, end.final_text) == (1, 9, "done")
    assert events[-1] is end


def test_a_repeated_chat_model_start_is_one_call_of_one_round() -> None:
    events: list[Event] = []
    bridge = EventBridge(events.append)
    root, call = uuid.uuid4(), uuid.uuid4()
    prompt = [[HumanMessage("go")]]
    bridge.on_chain_start(None, {"messages": prompt[0]}, run_id=root)
    bridge.on_chat_model_start(None, prompt, run_id=call, parent_run_id=root)
    bridge.on_chat_model_start(None, prompt, run_id=call, parent_run_id=root)  # said twice
    bridge.on_llm_end(_result(final("done", tokens=(9, 2))), run_id=call, parent_run_id=root)
    bridge.on_chain_end({"messages": [AIMessage("done")]}, run_id=root)
    assert len(_of(events, RoundStarted)) == len(_of(events, ModelCallStarted)) == 1
    [end] = _of(events, LoopFinished)
    assert (end.rounds, end.usage.requests) == (1, 1)
    view = RunView.from_events(events)
    assert [r.number for r in view.rounds] == [1]
    assert view.status == "finished"


# -- hand-written loops (no enclosing chain) -------------------------------------------------
def test_a_hand_loop_left_open_ends_with_its_watch_block() -> None:
    model = _script(calls(tool_call("add", {"a": 1, "b": 2}, "h1"), tokens=(11, 2)))
    bound = model.bind_tools([add])
    events: list[Event] = []

    def give_up_after_one_round() -> None:
        with watch(events.append):
            reply = bound.invoke([HumanMessage("go")])
            add.invoke(reply.tool_calls[0])
            raise KeyError("the loop gave up")

    with pytest.raises(KeyError):
        give_up_after_one_round()
    [end] = _of(events, LoopFailed)
    assert (end.error_type, end.rounds, end.usage.input_tokens) == ("KeyError", 1, 11)
    assert {e.run_id for e in events} == {end.run_id}


def test_hand_loop_runs_are_told_apart_by_their_final_replies() -> None:
    model = _script(final("one"), final("two"))
    events: list[Event] = []
    with watch(events.append):
        model.invoke("first")
        model.invoke("second")
    ends = _of(events, LoopFinished)
    assert [e.final_text for e in ends] == ["one", "two"]
    assert ends[0].run_id != ends[1].run_id


def test_a_hand_loop_seen_through_explicit_callbacks_closes_on_its_final_reply() -> None:
    seen = Snapshots()
    handler = EventBridge(seen)
    model = _script(calls(tool_call("add", {"a": 1, "b": 2}, "x1")), final("3"))
    bound = model.bind_tools([add])
    config: Any = {"callbacks": [handler]}
    messages: list[BaseMessage] = [HumanMessage("go")]
    reply = bound.invoke(messages, config)
    messages += [reply, add.invoke(reply.tool_calls[0], config)]
    bound.invoke(messages, config)
    assert seen.view.status == "finished"
    assert seen.view.final_text == "3"
    assert [t.status for t in seen.view.rounds[0].tools] == ["success"]


# -- watch blocks ----------------------------------------------------------------------------
def test_watch_blocks_nest_and_nothing_is_seen_outside_them() -> None:
    outer: list[Event] = []
    inner: list[Event] = []
    with watch(outer.append):
        _script(final("a")).invoke("x")
        with watch(inner.append):
            _script(final("b")).invoke("y")
        _script(final("c")).invoke("z")
    _script(final("d")).invoke("w")
    assert [e.final_text for e in _of(outer, LoopFinished)] == ["a", "b", "c"]
    assert [e.final_text for e in _of(inner, LoopFinished)] == ["b"]


def test_an_observer_that_raises_never_breaks_the_run() -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("observer bug")

    events: list[Event] = []
    script = _script(calls(tool_call("add", {"a": 1, "b": 1}, "o1")), final("2"))
    agent = create_agent(script, [add])
    with watch(broken, events.append):
        state = agent.invoke({"messages": [HumanMessage("go")]})
    assert state["messages"][-1].text == "2"
    assert _of(events, LoopFinished)[0].final_text == "2"


def test_the_handler_never_raises_into_the_run() -> None:
    assert EventBridge.raise_error is False
    assert EventBridge.run_inline is True


# -- streaming is coalesced ------------------------------------------------------------------
async def test_streamed_fragments_are_coalesced_to_at_most_twenty_a_second() -> None:
    ticks = itertools.count()
    text = "".join(f"word{i} " for i in range(200))  # many 16-character chunks

    def clock() -> float:
        return next(ticks) * 0.004  # 4 ms per reading: chunks arrive fast

    events: list[Event] = []
    model = _script(final(text))
    with watch(events.append, clock=clock):
        async for _ in model.astream("go"):
            pass
    deltas = _of(events, ModelDelta)
    assert "".join(d.text for d in deltas) == text
    chunks = len(text) // 16 + 1
    assert 2 <= len(deltas) < chunks / 4
    gaps = [b.t - a.t for a, b in itertools.pairwise(deltas[:-1])]
    assert min(gaps) >= 0.05 - 1e-9


# -- the conversation carried by events ------------------------------------------------------
def test_each_message_is_carried_once_even_when_a_framework_rewrites_history() -> None:
    conversation = Conversation()
    system, question = SystemMessage("rules"), HumanMessage("q")
    reply = AIMessage("", tool_calls=[tool_call("add", {"a": 1, "b": 1}, "c1")], id="r1")
    result = ToolMessage("2", tool_call_id="c1")
    assert conversation.new([system, question]) == [system, question]
    assert conversation.new([system, question, reply, result]) == [reply, result]
    summary = HumanMessage("summary of the above")
    # a summarising middleware replaced the history; only what is new is carried
    assert conversation.new([system, summary, HumanMessage("q")]) == [summary]
    again = HumanMessage("q")
    assert conversation.new([system, summary, HumanMessage("q"), again]) == [again]


def test_messages_are_found_wherever_frameworks_put_them() -> None:
    a, b = HumanMessage("a"), ToolMessage("b", tool_call_id="1")
    assert list(messages_in({"messages": [a, b]})) == [a, b]
    assert list(messages_in(Command(update={"messages": [b]}))) == [b]
    assert list(messages_in([{"messages": [a]}, b])) == [a, b]
    assert list(messages_in({"other": [a]})) == []
    assert list(messages_in("text")) == []


def test_bound_tools_and_model_names_are_read_in_every_provider_format() -> None:
    params = {
        "tools": [
            {"type": "function", "function": {"name": "a"}},
            {"name": "b", "input_schema": {}},
            {"name": ""},
            "junk",
        ],
        "functions": [{"name": "c"}],
    }
    assert bound_tool_names(params) == ("a", "b", "c")
    assert bound_tool_names(None) == ()
    assert configured_model_name({"ls_model_name": "m1"}, {"model": "m2"}) == "m1"
    assert configured_model_name({}, {"model": "m2"}) == "m2"
    assert configured_model_name(None, None) is None


def test_a_graphs_langchain_tags_and_metadata_label_its_run() -> None:
    agent = create_agent(_script(final("hi")), [], name="greeter", checkpointer=InMemorySaver())
    config: Any = {
        "tags": ["nightly"],
        "metadata": {"ticket": 42, "owner": {"team": "ops"}},
        "configurable": {"thread_id": "t-9"},
    }
    events: list[Event] = []
    with watch(events.append):
        agent.invoke({"messages": [HumanMessage("go")]}, config)
    [start] = _of(events, LoopStarted)
    assert start.name == "greeter"
    assert start.tags == ("nightly",)
    assert start.metadata["ticket"] == 42
    assert start.metadata["owner"] == {"team": "ops"}
    assert start.metadata["thread_id"] == "t-9"  # LangGraph's own: the conversation
