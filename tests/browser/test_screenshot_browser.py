"""The README's screenshot: a finished run in the live debugger, in JupyterLab's light theme.

The test runs a notebook as a person would (a scripted agent of three tool rounds, the
debugger displayed, the run started from it), waits for the run to finish, opens its second
round, checks the picture holds what the README says it shows (rounds, tools, tokens, cost)
and that nothing overflows, and saves the widget to ``test-artifacts/debugger.png``. With
``TOOLLOOP_SCREENSHOT=<path>`` it also writes the picture there: ``python
scripts/screenshot.py`` does so for ``docs/images/debugger.png``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from browser.jupyterkit import ARTIFACTS, layout_problems, ours, run_all_cells, shot, widget
from browser.jupyterkit import write_notebook as notebook

pytestmark = pytest.mark.browser

SOURCES = [
    '''\
import asyncio

from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel


class TimedModel(ScriptedChatModel):
    """Replies as a provider would: after a while, so the timeline reads as a real run's."""

    async def _agenerate(self, messages, *args, **kwargs):
        await asyncio.sleep((0.7, 1.1, 0.6, 1.3)[len(messages) // 2 % 4])
        return await super()._agenerate(messages, *args, **kwargs)


@tool
async def search_docs(query: str) -> str:
    """Search the product documentation."""
    await asyncio.sleep(0.4)
    return "API keys: Settings > API keys. Rotating a key revokes the old one after 24 h."


@tool
async def open_ticket(title: str) -> str:
    """Open a support ticket."""
    await asyncio.sleep(0.25)
    return "Ticket T-1042 opened."


def usage(prompt, reply):
    return {"input_tokens": prompt, "output_tokens": reply, "total_tokens": prompt + reply}


def call(name, args, n):
    return {"name": name, "args": args, "id": f"call_{n}"}


model = TimedModel(
    [
        AIMessage("", tool_calls=[call("search_docs", {"query": "rotate API keys"}, 1)],
                  usage_metadata=usage(1_240, 38)),
        AIMessage("The docs say where; checking what happens to the old key.",
                  tool_calls=[call("search_docs", {"query": "old key after rotation"}, 2)],
                  usage_metadata=usage(1_530, 61)),
        AIMessage("", tool_calls=[call("open_ticket", {"title": "Rotate production key"}, 3)],
                  usage_metadata=usage(1_810, 44)),
        AIMessage("Open Settings > API keys and press Rotate: the old key keeps working for "
                  "24 hours. I opened ticket T-1042 to track the production key.",
                  usage_metadata=usage(2_050, 52)),
    ],
    model_name="gpt-4o-mini",
)
dbg = LoopDebugger()
agent = LLMAgent(model, [search_docs, open_ticket], AgentConfig(tool_max_rounds=6),
                 observers=[dbg])
dbg''',
    'result = await dbg.start(agent, "How do I rotate our API keys without downtime?")',
]


def test_the_readme_screenshot(jupyter: Any, page_for: Any) -> None:
    name = notebook(jupyter.root, "screenshot.ipynb", SOURCES)
    page = page_for(name, ui="lab", width=1280, height=1400)
    assert page.evaluate("document.body.dataset.jpThemeName") == "JupyterLab Light"
    run_all_cells(page)
    live = widget(page)
    live.locator(".tl-badge", has_text="Finished").wait_for()
    live.locator(".tl-row[data-n='2']").click()
    live.locator(".tl-detail .tl-detail-title", has_text="Round 2").wait_for()
    page.wait_for_timeout(500)
    text = live.inner_text()
    # what the README's caption promises the picture shows
    for shown in ("3 tool rounds", "4 model calls", "search_docs", "open_ticket", "$"):
        assert shown in text, shown
    assert layout_problems(page) == []
    # the debugger's own errors (anywidget runs the bundle from a blob: URL)
    assert not ours(page.errors), page.errors
    live.scroll_into_view_if_needed()
    shot(live, "debugger")
    target = os.environ.get("TOOLLOOP_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / "debugger.png", target)
