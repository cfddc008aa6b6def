"""A finished run is freed the moment nothing holds it (issue 29, "Memory stays flat").

A reference cycle through the loop (a bound method of it kept on it, say) would make a
run's whole graph (its events, messages, usage) cyclic garbage: freed only by the
collector, after surviving its young generations, which then cost more and trigger full
collections sooner. These tests run each scenario once to warm caches, then again with
the collector off, and ask the collector what it would have had to free of ours.
"""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from collections.abc import Callable

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import BaseTool
from loopkit import CATALOG_NAMES, MODEL, calls, catalog_run, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, ScriptedChatModel


def _ours(thing: object) -> bool:
    module = type(thing).__module__ or ""
    return module.startswith("toolloop_lab") or isinstance(thing, BaseMessage)


def _cyclic_garbage(run: Callable[[], object]) -> Counter[str]:
    """What of ours ``run`` leaves that only the collector could free, by type name."""
    run()  # first-use costs: caches, lazy imports
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        run()
        gc.set_debug(gc.DEBUG_SAVEALL)  # keep what it finds in gc.garbage instead of freeing
        gc.collect()
        return Counter(type(o).__qualname__ for o in gc.garbage if _ours(o))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_a_catalog_run_that_did_not_raise_leaves_no_cycle(name: str) -> None:
    if catalog_run(name).outcome == "failed":
        pytest.skip("a run that raised keeps its traceback, whose frames hold the run")
    assert _cyclic_garbage(lambda: catalog_run(name)) == Counter()


@pytest.mark.parametrize("streaming", [False, True])
def test_a_long_run_leaves_no_cycle(echo_tool: BaseTool, streaming: bool) -> None:
    def run() -> object:
        replies: list[AIMessage] = [
            calls(tool_call("echo", {"text": f"r{n}"}, f"c{n}")) for n in range(30)
        ]
        model = ScriptedChatModel([*replies, final("done")], model_name=MODEL)
        events: list[object] = []
        config = AgentConfig(tool_max_rounds=40, streaming=streaming)
        agent = LLMAgent(model, [echo_tool], config, observers=(events.append,))
        result = asyncio.run(agent.arun("go"))
        assert result.rounds == 31
        assert len(events) == len(result.events)
        return result

    assert _cyclic_garbage(run) == Counter()


def test_a_run_changed_at_its_pauses_leaves_no_cycle(echo_tool: BaseTool) -> None:
    async def edit(point: PausePoint) -> None:
        if point.stage == "tool_dispatch":
            for view in point.calls:
                point.edit_args(view.id, {"text": f"edited {view.id}"})

    def run() -> object:
        replies = [calls(tool_call("echo", {"text": f"r{n}"}, f"c{n}")) for n in range(5)]
        model = ScriptedChatModel([*replies, final("done")], model_name=MODEL)
        result = asyncio.run(LLMAgent(model, [echo_tool], pause_hooks=[edit]).arun("go"))
        assert [m.content for m in result.messages if m.type == "tool"][-1] == "edited c4"
        return result

    assert _cyclic_garbage(run) == Counter()
