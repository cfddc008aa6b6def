"""Cancelling the loop at every place it can wait: during a model call, during parallel
tool dispatch (async tools, sync tools blocked in threads, a tool that ignores
cancellation), during a pause, pruning or synthesis, and by an ``asyncio.timeout`` around
the run.

Each case asserts: ``CancelledError`` (or the caller's ``TimeoutError``) propagates
unwrapped; no task is left over (``asyncio.all_tasks()`` before and after); the events end
with ``LoopFailed(cancelled=True)`` carrying the partial counts; every tool-call id asked
for is answered exactly once, and a call that finished before the stop keeps its real
result instead of reading "not run".

Related cases elsewhere: cancelling a hanging tool, Ctrl-C in a sync run
(tests/engine/test_failures.py), the debugger's Stop button
(tests/widget/test_widget_interventions.py).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from hostilekit import (
    SAFETY_S,
    cancel_when,
    cancelled_failure,
    check_events,
    dispatched,
    kinds,
    only,
    stubborn_tool,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool, tool
from loopkit import IN_A_LOOP, MODEL, calls, final, tool_call, usage

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, RunView, ScriptedChatModel, Usage
from toolloop_lab._tools.dispatcher import STOPPED_TEXT
from toolloop_lab.events import Event, LoopFailed, ModelCallFailed, ToolStarted, transcript

pytestmark = pytest.mark.usefixtures("no_leftover_tasks")


class HangingModel(BaseChatModel):
    """Replies from ``script`` and then waits forever (until cancelled) on the next call."""

    script: list[AIMessage]
    model_name: str = MODEL
    waiting: Any = None  # an asyncio.Event set when a call starts waiting

    @property
    def _llm_type(self) -> str:
        return "hanging"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        raise NotImplementedError

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        if self.script:
            reply = self.script.pop(0)
        else:
            self.waiting.set()
            await asyncio.Event().wait()
            raise AssertionError("unreachable")
        return ChatResult(generations=[ChatGeneration(message=reply)])


# -- during a model call ------------------------------------------------------------------


async def test_cancel_during_the_first_model_call() -> None:
    events: list[Event] = []
    model = HangingModel(script=[], waiting=asyncio.Event())
    await cancel_when(LLMAgent(model, [], observers=[events.append]), model.waiting.wait)

    failed = cancelled_failure(events)
    assert kinds(events) == [
        "loop_start",
        "round_start",
        "model_call_start",
        "model_call_failed",
        "loop_failure",
    ]
    stopped = events[3]
    assert isinstance(stopped, ModelCallFailed)
    assert (stopped.call, stopped.error_type) == (1, "CancelledError")
    assert stopped.traceback is None  # a stop is no error: nothing raised to trace
    assert (failed.round, failed.rounds, failed.usage) == (1, 0, Usage())
    assert failed.any_invocation_made is True


async def test_cancel_during_a_later_model_call_keeps_the_earlier_rounds(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    script = [
        calls(tool_call("echo", {"text": "a"}, "c1"), text="one", tokens=(100, 10)),
        calls(tool_call("echo", {"text": "b"}, "c2"), text="two", tokens=(200, 20)),
    ]
    model = HangingModel(script=script, waiting=asyncio.Event())
    agent = LLMAgent(model, [echo_tool], observers=[events.append])
    await cancel_when(agent, model.waiting.wait)

    failed = cancelled_failure(events)
    assert (failed.round, failed.rounds) == (3, 2)
    assert (failed.usage.input_tokens, failed.usage.output_tokens, failed.usage.requests) == (
        300,
        30,
        2,
    )
    assert [(e.tool_call_id, e.content) for e in dispatched(events).values()] == [
        ("c1", "a"),
        ("c2", "b"),
    ]


async def test_cancel_during_the_synthesis_call(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    script = [calls(tool_call("echo", {"text": "a"}, "c1"), text="one")]
    model = HangingModel(script=script, waiting=asyncio.Event())
    agent = LLMAgent(model, [echo_tool], AgentConfig(tool_max_rounds=1), observers=[events.append])
    await cancel_when(agent, model.waiting.wait)

    failed = cancelled_failure(events)
    assert kinds(events)[-4:] == [
        "synthesis",
        "model_call_start",
        "model_call_failed",
        "loop_failure",
    ]
    assert (failed.round, failed.rounds) == (2, 1)


# -- during parallel tool dispatch --------------------------------------------------------


async def test_cancel_during_parallel_dispatch_keeps_what_finished() -> None:
    events: list[Event] = []
    both_waiting = asyncio.Event()
    waiting = 0

    @tool
    async def quick(text: str) -> str:
        """Answers at once."""
        return f"quick {text}"

    @tool
    async def slow(text: str) -> str:
        """Waits until cancelled."""
        nonlocal waiting
        waiting += 1
        if waiting == 2:
            both_waiting.set()
        await asyncio.Event().wait()
        return "never"

    reply = calls(
        tool_call("slow", {"text": "1"}, "s1"),
        tool_call("quick", {"text": "2"}, "q2"),
        tool_call("slow", {"text": "3"}, "s3"),
        tokens=(50, 5),
    )
    model = ScriptedChatModel([reply], model_name=MODEL)
    agent = LLMAgent(model, [quick, slow], observers=[events.append])
    await cancel_when(agent, both_waiting.wait)

    failed = cancelled_failure(events)
    assert (failed.usage.input_tokens, failed.usage.output_tokens) == (50, 5)
    by_id = dispatched(events)
    # events in completion order: q2 finished, then the stop ended the others
    assert next(iter(by_id)) == "q2"
    stopped = f"Error: {STOPPED_TEXT}"
    assert [
        (i, by_id[i].status, by_id[i].error_reason, by_id[i].content, by_id[i].ran)
        for i in ("s1", "q2", "s3")
    ] == [
        ("s1", "cancelled", "cancelled", stopped, True),  # they had begun: they ran
        ("q2", "success", None, "quick 2", True),  # it ran: its result is kept
        ("s3", "cancelled", "cancelled", stopped, True),
    ]


async def test_a_tool_stopped_while_running_ran_and_the_model_is_told_so() -> None:
    # it had started and may have had effects: never "not run", and its time so far counts
    events: list[Event] = []
    started = asyncio.Event()

    @tool
    async def deploy(target: str) -> str:
        """Starts something that cannot be taken back, then waits."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    model = ScriptedChatModel([calls(tool_call("deploy", {"target": "prod"}, "d1"))])
    agent = LLMAgent(model, [deploy], observers=[events.append])
    await cancel_when(agent, started.wait)

    cancelled_failure(events)
    began = only(e for e in events if isinstance(e, ToolStarted))
    stopped = dispatched(events)["d1"]
    assert (stopped.status, stopped.error_reason, stopped.ran) == ("cancelled", "cancelled", True)
    assert 0 < stopped.duration_s == pytest.approx(stopped.t - began.t, abs=0.05)
    told = only(m for m in transcript(events) if isinstance(m, ToolMessage))
    assert told.status == "error"  # the model reads it as a failed call
    assert "stopped while this call was running" in told.content
    assert "before this call ran" not in told.content
    row = only(RunView.from_events(events).rounds)
    assert [(t.status, t.ran, t.duration_s) for t in row.tools] == [
        ("cancelled", True, stopped.duration_s)
    ]


async def test_cancel_while_sync_tools_block_in_threads() -> None:
    events: list[Event] = []
    release = threading.Event()
    blocked = 0
    lock = threading.Lock()
    all_blocked = threading.Event()

    def block(n: int) -> str:
        nonlocal blocked
        with lock:
            blocked += 1
            if blocked == 3:
                all_blocked.set()
        release.wait(SAFETY_S)
        return f"late {n}"

    tool_ = StructuredTool.from_function(block, name="block", description="Blocks a thread.")
    reply = calls(*(tool_call("block", {"n": n}, f"b{n}") for n in range(3)))
    agent = LLMAgent(
        ScriptedChatModel([reply], model_name=MODEL), [tool_], observers=[events.append]
    )
    try:
        await cancel_when(agent, lambda: asyncio.to_thread(all_blocked.wait, SAFETY_S))
        # the run ended while all three threads still block
        assert not release.is_set()
    finally:
        release.set()
    cancelled_failure(events)
    ended = dispatched(events).values()
    assert {(e.status, e.error_reason, e.ran) for e in ended} == {("cancelled", "cancelled", True)}
    assert all("runs in a thread, which may still be running" in e.content for e in ended)


async def test_cancel_with_a_tool_that_ignores_cancellation() -> None:
    events: list[Event] = []
    tool_, started, release = stubborn_tool()
    model = ScriptedChatModel([calls(tool_call("stubborn", {}, "s1"))], model_name=MODEL)
    agent = LLMAgent(model, [tool_], observers=[events.append])  # no tool timeout at all
    before = asyncio.all_tasks()
    await cancel_when(agent, started.wait)  # returns: the stop is not held up for good

    cancelled_failure(events)
    stopped = dispatched(events)["s1"]
    assert (stopped.status, stopped.error_reason, stopped.ran) == ("cancelled", "cancelled", True)
    assert "ignored the stop and may still be running" in stopped.content
    stragglers = asyncio.all_tasks() - before
    assert stragglers  # the tool is still running, on its own
    release.set()
    await asyncio.wait_for(asyncio.gather(*stragglers), SAFETY_S)


# -- during a pause, pruning, and under asyncio.timeout -----------------------------------


async def test_cancel_while_paused_before_dispatch(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    paused = asyncio.Event()

    async def hold(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            paused.set()
            await asyncio.Event().wait()

    reply = calls(tool_call("echo", {"text": "a"}, "e1"), tool_call("echo", {"text": "b"}, "e2"))
    agent = LLMAgent(
        ScriptedChatModel([reply], model_name=MODEL),
        [echo_tool],
        observers=[events.append],
        pause_hooks=[hold],
    )
    await cancel_when(agent, paused.wait)

    cancelled_failure(events)
    assert [(e.tool_call_id, e.error_reason) for e in dispatched(events).values()] == [
        ("e1", "cancelled"),
        ("e2", "cancelled"),
    ]


async def test_cancel_during_a_pruning_call() -> None:
    events: list[Event] = []

    @tool
    def fetch() -> str:
        """A large output."""
        return "row of data\n" * 500

    pruner = HangingModel(script=[], waiting=asyncio.Event())
    agent = LLMAgent(
        ScriptedChatModel([calls(tool_call("fetch", {}, "f1"), tokens=(40, 4))], model_name=MODEL),
        [fetch],
        AgentConfig(prune_tools=("fetch",), prune_min_chars=100),
        pruning_model=pruner,
        observers=[events.append],
    )
    await cancel_when(agent, pruner.waiting.wait)

    failed = cancelled_failure(events)
    assert (failed.usage.input_tokens, failed.rounds) == (40, 0)
    original = dispatched(events)["f1"]
    assert (original.status, original.content) == ("success", "row of data\n" * 500)
    assert "pruning" not in kinds(events)


async def test_asyncio_timeout_around_the_run() -> None:
    events: list[Event] = []
    model = HangingModel(
        script=[AIMessage("", tool_calls=[tool_call("nap", {}, "n1")], usage_metadata=usage(9, 1))],
        waiting=asyncio.Event(),
    )

    @tool
    async def nap() -> str:
        """Sleeps longer than the caller waits."""
        await asyncio.Event().wait()
        return "never"

    agent = LLMAgent(model, [nap], observers=[events.append])
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await agent.arun("go")

    failed = cancelled_failure(events)
    assert failed.usage.input_tokens == 9
    assert dispatched(events)["n1"].error_reason == "cancelled"


async def test_cancel_twice_still_ends_once() -> None:
    events: list[Event] = []
    model = HangingModel(script=[], waiting=asyncio.Event())
    task = asyncio.create_task(LLMAgent(model, [], observers=[events.append]).arun("go"))
    await asyncio.wait_for(model.waiting.wait(), SAFETY_S)
    task.cancel()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY_S)
    cancelled_failure(events)


async def test_the_run_can_go_on_after_a_cancel(echo_tool: BaseTool) -> None:
    # a cancelled run leaves the agent (bound model, observers) usable for the next one
    events: list[Event] = []
    model = HangingModel(script=[], waiting=asyncio.Event())
    agent = LLMAgent(model, [echo_tool], observers=[events.append])
    await cancel_when(agent, model.waiting.wait)
    model.script.append(final("second run"))
    result = await asyncio.wait_for(agent.arun("again"), SAFETY_S)
    assert result.final_response.text == "second run"
    assert kinds(events).count("loop_start") == 2


async def test_cancel_with_fifty_calls_half_of_them_finished() -> None:
    events: list[Event] = []
    hanging = 0
    all_hanging = asyncio.Event()

    @tool
    async def call(n: int) -> str:
        """Even calls answer at once; odd ones wait until cancelled."""
        nonlocal hanging
        if n % 2 == 0:
            return f"done {n}"
        hanging += 1
        if hanging == 25:
            all_hanging.set()
        await asyncio.Event().wait()
        return "never"

    reply = calls(*(tool_call("call", {"n": n}, f"p{n}") for n in range(50)))
    agent = LLMAgent(
        ScriptedChatModel([reply], model_name=MODEL), [call], observers=[events.append]
    )
    await cancel_when(agent, all_hanging.wait)

    cancelled_failure(events)
    by_id = dispatched(events)
    assert sorted(by_id) == sorted(f"p{n}" for n in range(50))  # every id once
    finished = [i for i in by_id if by_id[i].status == "success"]
    assert list(by_id)[: len(finished)] == finished  # what ran was reported as it finished
    for n in range(50):
        event = by_id[f"p{n}"]
        if n % 2 == 0:
            assert (event.status, event.content) == ("success", f"done {n}")
        else:
            assert (event.status, event.error_reason, event.ran) == ("cancelled", "cancelled", True)


async def test_cancel_while_paused_before_a_model_call(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    paused = asyncio.Event()

    async def hold(point: PausePoint) -> None:
        if point.stage == "model_call" and point.round == 2:
            paused.set()
            await asyncio.Event().wait()

    reply = calls(tool_call("echo", {"text": "a"}, "e1"), tokens=(25, 5))
    agent = LLMAgent(
        ScriptedChatModel([reply, final("never")], model_name=MODEL),
        [echo_tool],
        observers=[events.append],
        pause_hooks=[hold],
    )
    await cancel_when(agent, paused.wait)

    failed = cancelled_failure(events)
    assert (failed.round, failed.rounds, failed.usage.input_tokens) == (2, 1, 25)
    assert dispatched(events)["e1"].content == "a"
    assert kinds(events)[-3:] == ["round_start", "pause", "loop_failure"]  # held, then stopped


@pytest.mark.filterwarnings(IN_A_LOOP)
def test_ctrl_c_in_a_sync_run_inside_a_running_loop() -> None:
    # agent.run inside a notebook cell hands the run to a background loop; an interrupt
    # there still ends the run with its final event and reaches the caller
    events: list[Event] = []

    async def cell() -> None:
        model = ScriptedChatModel([KeyboardInterrupt()], model_name=MODEL)
        LLMAgent(model, observers=[events.append]).run("go")

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(cell())
    failed = check_events(events)
    assert isinstance(failed, LoopFailed)
    assert failed.cancelled is True
