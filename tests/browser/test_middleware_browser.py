"""The controls on a LangChain ``create_agent`` run that ``ToolLoopMiddleware`` drives, in a
real JupyterLab, as a person meets them: the debugger given to the middleware as an
observer, a cell that awaits ``graph.ainvoke(...)``; the page pauses the run before its
tools, Step goes on to the next pause (a new graph task: the run is held by its id), Stop
ends it ("Stopped by you", the partial counts shown), the cell says ``RunStopped`` in one
line, and the kernel is free afterwards.

Screenshots (light, dark, 600 px) go to ``test-artifacts/middleware_*.png``.
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
from browser.test_controls_browser import AGENT

pytestmark = pytest.mark.browser

GRAPH = """\
from langchain.agents import create_agent
from toolloop_lab import ToolLoopMiddleware

dbg = LoopDebugger(pause_on="tools")
graph = create_agent(asks(4), [lookup], middleware=[ToolLoopMiddleware(observers=[dbg])])
dbg"""


def test_step_and_stop_drive_a_create_agent_run(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "middleware_controls.ipynb",
        [
            AGENT,
            GRAPH,
            'await graph.ainvoke({"messages": [("user", "Are tickets 1 to 4 open?")]})',
            'print("kernel free:", 1 + 1)',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        live.get_by_text("Paused before running lookup in round 1.").wait_for()
        buttons = {n: live.get_by_role("button", name=n) for n in ("Continue", "Step", "Stop")}
        for button in buttons.values():
            assert button.is_enabled()
        assert live.locator(".tl-reach-hint").is_hidden()

        buttons["Step"].click()
        live.get_by_text("Paused before running lookup in round 2.").wait_for()
        looks(page, live, "middleware_paused")
        buttons["Stop"].click()
        live.locator(".tl-badge", has_text="Stopped").wait_for()
        failure = live.locator(".tl-failure").inner_text()
        assert "Stopped by you after 1 round" in failure
        assert (
            "1 tool round, 2 model calls (at most 10 rounds)"
            in live.locator(".tl-head").inner_text()
        )
        assert buttons["Stop"].is_disabled()
        output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        output.get_by_text("RunStopped: the run was stopped in round 2").wait_for()
        assert "CancelledError" not in failure
        shot(output, "middleware_cell_output")
        wait_idle(page)
        cell = page.locator(".jp-Notebook .jp-Cell").nth(3)
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        page.get_by_text("kernel free: 2").wait_for()
        looks(page, live, "middleware_stopped")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "middleware_controls_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


EDITS = """\
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from toolloop_lab import AgentConfig, ToolLoopMiddleware


@tool
def read_log(database: str) -> str:
    \"\"\"Read last night's backup log of a database.\"\"\"
    return f"{database}: OK (96 GB)" if database == "billing" else f"{database}: FAILED"


def analyst(messages, bound_tools):
    \"\"\"Reads each log once, in order; then answers with what the logs said.\"\"\"
    results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 100 * len(messages), "output_tokens": 20}
    usage["total_tokens"] = usage["input_tokens"] + 20
    if not bound_tools:
        return AIMessage("Answer with what I have.", usage_metadata=usage)
    for db in ("users", "orders", "billing"):
        if not any(r.startswith(db) for r in results):
            call = {"name": "read_log", "args": {"database": db}, "id": f"call_{len(results) + 1}"}
            return AIMessage(f"Reading the {db} log.", tool_calls=[call], usage_metadata=usage)
    return AIMessage("Backups: " + "; ".join(r[:24] for r in results), usage_metadata=usage)


edits = LoopDebugger(pause_on="both")
backups = create_agent(
    ScriptedChatModel([analyst] * 40, model_name="gpt-4o-mini"),
    [read_log],
    middleware=[ToolLoopMiddleware(AgentConfig(tool_max_rounds=6), observers=[edits])],
)
edits"""


def _banner(view: Any, text: str) -> None:
    view.locator(".tl-banner", has_text=text).wait_for()


def test_edit_skip_add_and_fork_a_create_agent_run(page_for: Any, jupyter: Jupyter) -> None:
    """The other controls on a create_agent run: an argument edited (the tools node runs
    the edited call), a message added before a model call, a call answered by hand (the
    tool never runs), then "Fork from here" on round 2 from the view."""
    name = write_notebook(
        jupyter.root,
        "middleware_edits.ipynb",
        [
            AGENT,
            EDITS,
            'out = await backups.ainvoke({"messages": [("user", "Did the backups succeed?")]})\n'
            'print("answer:", out["messages"][-1].content)',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        _banner(live, "Paused before calling the model in round 1.")
        live.get_by_role("button", name="Step").click()
        _banner(live, "Paused before running read_log in round 1.")

        # edit the arguments: users -> orders (checked against the tool's schema first)
        run = live.locator(".tl-block", has_text="About to run")
        run.get_by_role("button", name="Edit arguments…").click()
        editor = live.locator(".tl-editor")
        area = editor.locator("textarea")
        area.fill('{"db": "orders"}')
        editor.locator(".tl-edit-error", has_text="unknown argument(s) db").wait_for()
        assert editor.get_by_role("button", name="Run with these arguments").is_disabled()
        area.fill('{"database": "orders"}')
        editor.locator(".tl-edit-ok", has_text="fit the tool's schema").wait_for()
        editor.get_by_role("button", name="Run with these arguments").click()
        live.locator(".tl-editor").wait_for(state="detached")
        run.get_by_text('"orders"').first.wait_for()
        live.get_by_role("button", name="Step").click()

        # add a message before round 2's model call
        _banner(live, "Paused before calling the model in round 2.")
        send = live.locator(".tl-block", has_text="About to send")
        send.get_by_text("orders: FAILED").first.wait_for()  # the edited call ran
        send.get_by_role("button", name="Add message…").click()
        editor = live.locator(".tl-editor")
        editor.locator("textarea").fill("Answer in one line.")
        editor.get_by_role("button", name="Add the message").click()
        live.locator(".tl-editor").wait_for(state="detached")
        send.get_by_text("Answer in one line.").wait_for()
        looks(page, live, "middleware_message_added")
        live.get_by_role("button", name="Step").click()

        # answer round 2's call by hand: the tool never runs
        _banner(live, "Paused before running read_log in round 2.")
        run = live.locator(".tl-block", has_text="About to run")
        run.get_by_role("button", name="Skip with result…").click()
        editor = live.locator(".tl-editor")
        editor.locator("textarea").fill("users: OK (from the dashboard)")
        editor.get_by_role("button", name="Skip the tool").click()
        live.locator(".tl-editor").wait_for(state="detached")
        live.get_by_role("button", name="Continue").click()
        live.locator(".tl-badge", has_text="Finished").wait_for()
        output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        output.get_by_text("answer: Backups: orders: FAILED; users: OK (from th").wait_for()
        assert live.locator(".tl-row .tl-chip-hand").count() == 2  # rounds 1 and 2
        live.locator(".tl-row[data-n='2']").click()
        detail = live.locator(".tl-detail")
        detail.get_by_text("answered by you: the tool never ran").wait_for()
        looks(page, live, "middleware_answered_by_hand")

        # Fork from here, from the view: the fork runs below, round 1 taken as it was
        detail.get_by_role("button", name="Fork from here").click()
        live.locator(".tl-fork-msg", has_text="the fork runs in a new debugger below").wait_for()
        fork = widget(page, 1)
        fork.locator(".tl-forkbox", has_text="Fork of a run at round 2.").wait_for()
        _banner(fork, "Paused before calling the model in round 2.")
        fork.get_by_role("button", name="Continue").click()
        fork.locator(".tl-badge", has_text="Finished").wait_for()
        compared = fork.locator(
            ".tl-cmpview", has_text="The fork next to the original, from round 2 on"
        )
        compared.wait_for()
        row = compared.locator(".tl-cmp-round[data-round='2']")
        row.locator(".tl-mark-changed", has_text="read_log changed").wait_for()
        assert compared.locator(".tl-cmp-round[data-round='1']").count() == 0
        looks(page, fork, "middleware_fork")
        wait_idle(page)
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "middleware_edits_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


SUMMARIZED = """\
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from toolloop_lab import ToolLoopMiddleware

said = {"input_tokens": 700, "output_tokens": 30, "total_tokens": 730}
summary_model = ScriptedChatModel(  # it summarizes after rounds 2 and 3
    [AIMessage("Tickets 1 and 2 are open.", usage_metadata=said),
     AIMessage("Tickets 1 to 3 are open.", usage_metadata=said)],
    model_name="gpt-4o-mini",
)
summed = LoopDebugger()
short = create_agent(
    asks(3),
    [lookup],
    middleware=[
        ToolLoopMiddleware(observers=[summed]),
        SummarizationMiddleware(summary_model, trigger=("messages", 4), keep=("messages", 2)),
    ],
)
summed"""


def test_a_summarization_call_shows_in_its_round(page_for: Any, jupyter: Jupyter) -> None:
    """LangChain's SummarizationMiddleware after ours: its call shows in the round whose
    tools it follows, with its tokens and its summary, and the header counts it."""
    name = write_notebook(
        jupyter.root,
        "middleware_summarized.ipynb",
        [
            AGENT,
            SUMMARIZED,
            'await short.ainvoke({"messages": [("user", "Are tickets 1 to 3 open?")]})',
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        live.locator(".tl-badge", has_text="Finished").wait_for()
        assert "3 tool rounds, 6 model calls" in live.locator(".tl-head").inner_text()
        live.locator(".tl-row[data-n='2']").click()
        block = live.locator(".tl-detail .tl-block", has_text="Summarization call")
        block.get_by_text("Tickets 1 and 2 are open.").wait_for()
        assert "700 in" in block.inner_text()
        looks(page, live, "middleware_summarization")
        wait_idle(page)
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "middleware_summarized_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
