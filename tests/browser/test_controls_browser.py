"""The controls in a real JupyterLab (and Notebook 7), as a person meets them.

* ``agent.subscribe(dbg)`` (the debugger among the agent's observers), then a cell that
  awaits ``agent.arun(...)``: the page pauses the
  run before its tools, Step goes on to the next pause, Stop ends the run ("Stopped by
  you", the partial counts shown), the cell says ``RunStopped`` in one line, and the kernel
  is free afterwards.
* A LangGraph run watched with ``watch(dbg)`` (observed, never driven): Continue, Step,
  Stop and the pause selector are disabled, their tooltip (``title``) and a hint beside
  them saying why; its ``interrupt()`` ends it as "Interrupted, waiting for input".
* ``agent.run(...)`` while the kernel reads clicks on the thread it blocks: the controls
  are off and say why, and the run is never held.

Screenshots (light, dark, 600 px) go to ``test-artifacts/controls_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    looks,
    ours,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

AGENT = '''\
import asyncio
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel


class SlowModel(ScriptedChatModel):
    """Each reply takes 0.8 s to come back (the event loop stays free meanwhile)."""

    async def _agenerate(self, *args, **kwargs):
        await asyncio.sleep(0.8)
        return await super()._agenerate(*args, **kwargs)


@tool
async def lookup(ticket: int) -> str:
    """Look a ticket up (slowly)."""
    await asyncio.sleep(0.8)
    return f"ticket {ticket}: open"


def asks(rounds):
    usage = {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940}
    calls = [
        AIMessage(f"Looking up ticket {i}.", usage_metadata=usage,
                  tool_calls=[{"name": "lookup", "args": {"ticket": i}, "id": f"c{i}",
                               "type": "tool_call"}])
        for i in range(1, rounds + 1)
    ]
    return SlowModel([*calls, AIMessage("All tickets are open.")], model_name="gpt-4o-mini")
'''

GRAPH = '''\
from typing import Annotated, TypedDict
from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


@tool
def approve(action: str) -> str:
    """Ask a person whether the action may go ahead."""
    return str(interrupt(f"May I {action}?"))


graph_model = SlowModel(
    [AIMessage("", tool_calls=[{"name": "approve", "args": {"action": "restart the server"},
                                "id": "a1", "type": "tool_call"}])],
    model_name="gpt-4o-mini",
).bind_tools([approve])


async def agent_node(state: State):
    await asyncio.sleep(2.0)  # long enough to look at the controls while it runs
    return {"messages": [await graph_model.ainvoke(state["messages"])]}


builder = StateGraph(State)
builder.add_node("agent", agent_node)
builder.add_node("tools", ToolNode([approve]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)
builder.add_edge("tools", "agent")
graph = builder.compile(checkpointer=InMemorySaver(), name="approvals")
'''

BRIDGED_WHY = "observes this LangChain or LangGraph run but does not drive it"


def _buttons(live: Any) -> dict[str, Any]:
    return {name: live.get_by_role("button", name=name) for name in ("Continue", "Step", "Stop")}


def _run_cell(page: Any, index: int) -> None:
    """Run one cell (after a Run All that stopped at an error), as a person would."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_stop_and_step_reach_a_connected_run_a_cell_awaits(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    name = write_notebook(
        jupyter.root,
        f"controls_await_{ui}.ipynb",
        [
            AGENT + "agent = LLMAgent(asks(4), [lookup])",
            'dbg = LoopDebugger(pause_on="tools")\nagent.subscribe(dbg)\ndbg',
            'await agent.arun("Are tickets 1 to 4 open?")',
            'print("kernel free:", 1 + 1)',
        ],
    )
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        live = widget(page, 0)
        live.get_by_text("Paused before running lookup in round 1.").wait_for()
        buttons = _buttons(live)
        for button in buttons.values():
            assert button.is_enabled()
        assert live.locator(".tl-controls select").is_enabled()
        assert live.locator(".tl-reach-hint").is_hidden()

        buttons["Step"].click()
        live.get_by_text("Paused before running lookup in round 2.").wait_for()
        if ui == "lab":
            looks(page, live, "controls_paused")
        buttons["Stop"].click()
        live.locator(".tl-badge", has_text="Stopped").wait_for()
        failure = live.locator(".tl-failure").inner_text()
        assert "Stopped by you after 1 round" in failure
        assert (
            "1 tool round, 2 model calls (at most 10 rounds)"
            in live.locator(".tl-head").inner_text()
        )
        assert buttons["Stop"].is_disabled()
        # the cell that awaited the run says what happened, in one line
        output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        output.get_by_text("RunStopped: the run was stopped in round 2").wait_for()
        assert "Traceback" not in output.inner_text()
        assert "CancelledError" not in output.inner_text()
        assert "CancelledError" not in failure
        shot(output, f"controls_{ui}_cell_output")
        wait_idle(page)  # the kernel is free: the next cell runs at once
        _run_cell(page, 3)
        page.get_by_text("kernel free: 2").wait_for()
        if ui == "lab":
            looks(page, live, "controls_stopped")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"controls_await_{ui}_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


def test_a_bridged_run_has_its_controls_off_with_the_reason(
    page_for: Any, jupyter: Jupyter
) -> None:
    name = write_notebook(
        jupyter.root,
        "controls_bridged.ipynb",
        [
            AGENT + GRAPH,
            'dbg = LoopDebugger(pause_on="tools")\ndbg',
            "from toolloop_lab import watch\n"
            "with watch(dbg):\n"
            '    out = await graph.ainvoke({"messages": [HumanMessage("Restart it.")]},\n'
            '                              {"configurable": {"thread_id": "t1"}})\n'
            'out["__interrupt__"][0].value',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        hint = live.locator(".tl-reach-hint")
        hint.get_by_text("Observed run: the debugger cannot pause or stop it").wait_for()
        assert live.locator(".tl-badge", has_text="Running").count() == 1  # while it runs
        for label, button in _buttons(live).items():
            assert button.is_disabled(), label
            assert BRIDGED_WHY in (button.get_attribute("title") or ""), label
        select = live.locator(".tl-controls select")
        assert select.is_disabled()
        assert BRIDGED_WHY in (live.locator(".tl-controls label").get_attribute("title") or "")
        assert BRIDGED_WHY in (hint.get_attribute("title") or "")

        # the interrupt() ends the run as waiting for input, never as a failure
        live.locator(".tl-badge", has_text="Interrupted").wait_for()
        activity = " ".join(live.locator(".tl-activity").inner_text().split())
        assert "Interrupted, waiting for input: May I restart the server?" in activity
        assert live.locator(".tl-failure").is_hidden()
        assert "paused by interrupt(), waiting for input" in live.inner_text()
        wait_idle(page)
        looks(page, live, "controls_bridged")
    except BaseException:
        shot(page, "controls_bridged_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


def test_a_sync_run_the_clicks_cannot_reach_says_so(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "controls_sync.ipynb",
        [
            AGENT + "agent = LLMAgent(asks(2), [lookup])",
            'dbg = LoopDebugger(pause_on="tools")\nagent.subscribe(dbg)\ndbg',
            'agent.run("Are tickets 1 and 2 open?").final_response.text',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        hint = live.locator(".tl-reach-hint")
        hint.wait_for()
        if hint.inner_text().startswith("agent.run() blocks the kernel"):
            assert "use `await agent.arun(...)` or `dbg.start(...)`" in (
                hint.get_attribute("title") or ""
            )
            assert _buttons(live)["Stop"].is_disabled()
            live.locator(".tl-badge", has_text="Finished").wait_for()  # never held
            assert live.get_by_text("Paused before").count() == 0
        else:  # a kernel that reads clicks on a thread of its own reaches it
            live.get_by_text("Paused before running lookup in round 1.").wait_for()
            _buttons(live)["Continue"].click()
            live.locator(".tl-badge", has_text="Finished").wait_for()
        page.get_by_text("All tickets are open.").first.wait_for()
        live.scroll_into_view_if_needed()
        shot(live, "controls_sync_light")
    except BaseException:
        shot(page, "controls_sync_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
