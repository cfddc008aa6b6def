"""The view's edges in a real JupyterLab and Notebook 7: keys typed in the widget's fields
stay in the widget, replies wrap between words, and narrow round rows keep their figures.

- Keys: Shift+Enter, Ctrl+Enter, Alt+Enter and Escape pressed in an editor at a pause (or
  in the search box) never reach the notebook: its cells are not run again (execution
  counts unchanged, one debugger), the typed text stays; Escape closes the editor and shows
  what was there, Ctrl+Enter applies it. JupyterLab listens for its shortcuts on the
  document in the bubbling phase, Notebook 7 in the capturing phase: both are checked.
- Wrapping: a long prose reply breaks only between words (each word's Range has one line
  box), in the UI font; JSON arguments and a traceback stay monospace.
- Narrow: at 800 px with the file browser open and at 600 px, every visible round row shows
  its tokens and cost whole; the round list is as tall as a 4-round run's rows, a long run's
  list scrolls; the detail pane fits a small round.

Screenshots go to ``test-artifacts/edges_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

AGENT = '''\
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    return f"{database}: OK"


def analyst(messages, bound_tools):
    done = [m for m in messages if isinstance(m, ToolMessage)]
    usage = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
    if done or not bound_tools:
        return AIMessage("All backups succeeded.", usage_metadata=usage)
    call = {"name": "read_log", "args": {"database": "users"}, "id": "call_1"}
    return AIMessage("Reading the users log.", tool_calls=[call], usage_metadata=usage)


agent = LLMAgent(ScriptedChatModel([analyst] * 6), [read_log], AgentConfig(tool_max_rounds=4))
'''


def prompts(page: Any) -> list[str]:
    """Every cell's execution prompt (``[3]:``): a cell run again changes its number."""
    texts: list[str] = page.locator(".jp-Notebook .jp-InputPrompt").all_inner_texts()
    return [t.strip() for t in texts]


def still_the_same(page: Any, before: list[str], banner: str) -> None:
    """The notebook ran nothing: the prompts, the one debugger and its pause are as they were."""
    page.wait_for_timeout(1200)  # a re-run cell would have a new prompt by now
    assert prompts(page) == before
    assert page.locator(".tl-root").count() == 1
    widget(page).locator(".tl-banner", has_text=banner).wait_for()


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_editor_keys_stay_in_the_widget(page_for: Any, jupyter: Jupyter, ui: str) -> None:
    name = write_notebook(
        jupyter.root,
        f"keys_{ui}.ipynb",
        [AGENT, 'dbg = LoopDebugger(pause_on="both")\ndbg', 'task = dbg.start(agent, "Backups?")'],
    )
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        live = widget(page)
        at_call = "Paused before calling the model in round 1."
        live.locator(".tl-banner", has_text=at_call).wait_for()
        wait_idle(page)
        before = prompts(page)
        assert before[-1] not in ("", "[ ]:", "[*]:"), before

        # Shift+Enter (and Alt+Enter) in the message editor: a new line, no re-run
        send = live.locator(".tl-block", has_text="About to send")
        send.get_by_role("button", name="Add message…").click()
        area = live.locator(".tl-editor textarea")
        area.wait_for()
        page.wait_for_function("document.activeElement?.classList.contains('tl-textarea')")
        page.keyboard.type("Check billing first.")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("Then users.")
        page.keyboard.press("Alt+Enter")
        still_the_same(page, before, at_call)
        assert area.input_value().startswith("Check billing first.\nThen users.")
        hint = live.locator(".tl-editor .tl-edit-keys").inner_text()
        assert "Enter applies" in hint
        assert "Esc cancels" in hint
        live.scroll_into_view_if_needed()
        shot(live, f"edges_{ui}_editor_after_shift_enter")

        # Escape: the editor closes, what was there shows again, the text is dropped
        page.keyboard.press("Escape")
        live.locator(".tl-editor").wait_for(state="detached")
        send.get_by_role("button", name="Add message…").wait_for()
        still_the_same(page, before, at_call)

        # Ctrl+Enter applies the editor (and runs no cell)
        send.get_by_role("button", name="Add message…").click()
        area.wait_for()
        assert area.input_value() == ""
        area.fill("Answer in one line.")
        area.press("Control+Enter")
        live.locator(".tl-editor").wait_for(state="detached")
        send.get_by_text("Answer in one line.").wait_for()
        still_the_same(page, before, at_call)

        # the search box: the same keys stay in the widget
        search = live.get_by_role("searchbox", name="Search")
        search.fill("users")
        for key in ("Shift+Enter", "Control+Enter", "Escape"):
            search.press(key)
        still_the_same(page, before, at_call)

        # Escape in the arguments editor restores the call's arguments as they were
        live.get_by_role("button", name="Step").click()
        at_tool = "Paused before running read_log in round 1."
        live.locator(".tl-banner", has_text=at_tool).wait_for()
        run = live.locator(".tl-block", has_text="About to run")
        run.get_by_role("button", name="Edit arguments…").click()
        area.wait_for()
        area.fill('{"database": "billing"}')
        area.press("Shift+Enter")
        area.press("Escape")
        live.locator(".tl-editor").wait_for(state="detached")
        run.get_by_text('"users"').first.wait_for()
        assert run.get_by_text('"billing"').count() == 0
        still_the_same(page, before, at_tool)
        live.scroll_into_view_if_needed()
        shot(live, f"edges_{ui}_after_escape")
        assert not [e for e in page.errors if "toolloop" in e.lower()]
    except BaseException:
        shot(page, f"edges_{ui}_keys_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
