"""Which runs the page's controls reach (``widget.reach``), and what the page is told.

The rule is a table (:func:`decide`), tested here case by case; the widget's side is read
through its public API with a mock comm: a bridged run's controls are off with the reason,
a run no click can reach (no kernel) is never held whatever the pause mode, a run
``dbg.start`` made is always reached. A real kernel's side is in test_widget_kernel.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import comm
import pytest
from langchain.agents import create_agent
from langchain_core.tools import tool
from loopkit import MODEL, MockComm, calls, channel, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel, watch
from toolloop_lab._support.words import REACH, REACH_HINT
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.reach import FULL, KernelInfo, Reach, decide


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script() -> ScriptedChatModel:
    asks = [calls(tool_call("add", {"a": i, "b": 1}, f"c{i}")) for i in range(3)]
    return ScriptedChatModel([*asks, final("done")], model_name=MODEL)


def _control(dbg: LoopDebugger) -> dict[str, Any]:
    dbg.flush()
    dbg.redraw()
    control: dict[str, Any] = channel(dbg).custom()[-1]["control"]
    return control


NEW, OLD = KernelInfo("7.4.0"), KernelInfo("7.3.0")


@pytest.mark.parametrize(
    ("source", "connected", "home", "kernel", "off_home", "expected"),
    [
        ("langchain", True, True, NEW, True, Reach(False, False, "bridged")),
        ("otel", True, True, NEW, True, Reach(False, False, "spans")),  # read from spans
        ("loop", True, True, None, False, Reach(False, False, "no_kernel")),
        ("loop", True, True, NEW, False, FULL),  # await in a cell, ipykernel 7.4
        ("loop", True, True, OLD, False, Reach(False, False, "old_kernel", "7.3.0")),
        ("loop", True, True, OLD, True, FULL),  # clicks on a subshell's thread
        ("loop", True, False, NEW, False, Reach(False, False, "sync_run")),  # agent.run()
        ("loop", True, False, OLD, True, FULL),  # agent.run(), clicks on a subshell
        ("loop", False, True, NEW, False, Reach(True, False, "not_connected")),
    ],
)
def test_which_runs_the_clicks_reach(
    source: str,
    connected: bool,
    home: bool,
    kernel: KernelInfo | None,
    off_home: bool,
    expected: Reach,
) -> None:
    got = decide(
        source=source, connected=connected, on_home_loop=home, kernel=kernel, page_off_home=off_home
    )
    assert got == expected


@pytest.mark.parametrize(
    ("version", "reads"),
    [("7.4.0", True), ("7.10.1", True), ("8.0.0a1", True), ("7.3.0", False), ("6.29.5", False)],
)
def test_a_kernel_reads_clicks_while_a_cell_awaits_from_ipykernel_7_4(
    version: str, reads: bool
) -> None:
    assert KernelInfo(version).comms_during_await is reads


def test_every_reason_has_words_and_a_hint_and_names_the_kernel() -> None:
    assert set(REACH) == set(REACH_HINT)
    for code in REACH:
        reach = Reach(False, False, code, "7.3.0")
        assert reach.why
        assert reach.hint
        assert "{" not in reach.why
    old = Reach(False, False, "old_kernel", "7.3.0").to_dict()
    assert "ipykernel 7.3.0" in old["why"]
    assert FULL.to_dict() == {"stop": True, "pause": True, "why": None, "code": None, "hint": None}
    assert "await agent.arun(...)" in (Reach(False, False, "sync_run").why or "")


async def test_a_bridged_run_is_observed_and_its_controls_say_so() -> None:
    dbg = LoopDebugger(pause_on="tools")
    with watch(dbg):
        await create_agent(_script(), [add]).ainvoke({"messages": [("user", "go")]})
    assert dbg.view.status == "finished"
    assert dbg.reach == Reach(False, False, "bridged")
    control = _control(dbg)
    assert control["reach"]["stop"] is control["reach"]["pause"] is False
    assert (
        "observes this LangChain or LangGraph run but does not drive it"
        in (control["reach"]["why"])
    )
    assert control["running"] is False
    assert dbg.stop() is False
    dbg.close()


async def test_a_run_no_click_can_reach_is_never_held() -> None:
    """No kernel here: a connected agent's run awaited in place must not wait at a pause
    nobody can answer, whatever the pause mode; the page is told why."""
    dbg = LoopDebugger(pause_on="both")
    agent = LLMAgent(_script(), [add], observers=[dbg])
    result = await asyncio.wait_for(agent.arun("go"), 10)
    assert result.final_response.text == "done"
    assert dbg.view.status == "finished"
    assert dbg.paused_at is None
    assert dbg.reach.code == "no_kernel"
    assert _control(dbg)["reach"]["code"] == "no_kernel"
    dbg.close()


async def test_a_run_the_debugger_starts_is_always_reached() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(LLMAgent(_script(), [add]), "go")
    for _ in range(500):
        if dbg.paused_at is not None:
            break
        await asyncio.sleep(0.01)
    assert dbg.paused_at is not None
    assert dbg.reach == FULL
    assert _control(dbg)["reach"]["pause"] is True
    assert dbg.stop() is True
    with pytest.raises(asyncio.CancelledError):
        await task
    dbg.close()
