"""An MCP run in a real JupyterLab: the test FastMCP server (``tests/mcp_tools/server_app.py``)
started over stdio in the kernel, a round of two calls (structured content, an image) and a
call that crashes the server. The page shows each call's server badge, the lines the server
wrote while the call ran, the image drawn from its bytes, the filter by server and the
server's log with the crash; light, dark and 600 px.

Screenshots go to ``test-artifacts/mcp_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcpkit import SERVER_APP

from browser.jupyterkit import (
    Jupyter,
    looks,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

AGENT = f"""\
import sys
from langchain_core.messages import AIMessage
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel
from toolloop_lab.mcp import McpServer, mcp_tools

usage = {{"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}}
def call(name, args, call_id):
    return {{"name": name, "args": args, "id": call_id, "type": "tool_call"}}

model = ScriptedChatModel([
    AIMessage("", tool_calls=[call("count", {{"item": "bolts"}}, "c1"),
                              call("picture", {{}}, "c2")], usage_metadata=usage),
    AIMessage("", tool_calls=[call("crash_tool", {{}}, "c3")], usage_metadata=usage),
    AIMessage("The inventory server crashed.", usage_metadata=usage),
])
inventory = McpServer("inventory", command=sys.executable, args=[{str(SERVER_APP)!r}, "stdio"])
"""


def test_an_mcp_run_shows_its_server_its_log_and_an_image(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "mcp_lab.ipynb",
        [
            AGENT,
            "dbg = LoopDebugger()\ndbg",
            "with mcp_tools([inventory]) as tools:\n"
            "    result = LLMAgent(model, tools, observers=[dbg]).run('Stock?')\n"
            "print(result.final_response.text)",
        ],
    )
    page = page_for(name, "lab")
    run_all_cells(page)
    live = widget(page)
    live.locator(".tl-badge", has_text="Answered").or_(
        live.locator(".tl-badge", has_text="Finished")
    ).first.wait_for()
    wait_idle(page)

    # round 1: both calls carry the server's badge; the image is drawn, the tree is there
    live.locator('.tl-scroller .tl-row[data-n="1"]').click()
    detail = live.locator(".tl-detail")
    detail.locator(".tl-detail-title", has_text="Round 1").wait_for()
    badges = detail.locator(".tl-chip-server")
    assert badges.count() == 2
    assert badges.all_inner_texts() == ["inventory", "inventory"]
    image = detail.locator("img.tl-result-img")
    image.wait_for()
    assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    count = detail.locator(".tl-block", has_text="Tool count")
    assert "counting bolts" in count.locator(".tl-server-log").inner_text()
    count.locator(".tl-json").first.wait_for()
    live.scroll_into_view_if_needed()
    shot(live, "mcp_round_with_image")
    shot(count, "mcp_call_with_its_log")
    shot(detail.locator(".tl-block", has_text="Tool picture"), "mcp_image_result")

    # the server's log, with the crash, and the filter by server
    log = detail.locator(".tl-block", has_text="Server inventory log")
    assert "FATAL: segfault-like crash in crash_tool" in log.inner_text()
    assert "MCP server inventory (stdio)" in log.inner_text()
    live.locator('.tl-scroller .tl-row[data-n="2"]').click()
    crash = detail.locator(".tl-block", has_text="Tool crash_tool")
    crash.wait_for()
    assert "the MCP server exited" in crash.inner_text()
    assert "timed out" not in crash.inner_text()
    select = detail.locator("select.tl-select")
    assert select.locator("option").all_inner_texts() == ["every tool", "server inventory"]
    select.select_option("inventory")
    crash.wait_for()
    shot(crash, "mcp_crash_call")
    shot(detail.locator(".tl-block", has_text="Server inventory log"), "mcp_server_log")
    looks(page, live, "mcp_crash")
    assert page.errors == []
