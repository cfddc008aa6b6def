"""The whole-run timeline in a real JupyterLab: a live four-round run of a real
``LLMAgent`` (a pause, a tool that raises, two tools side by side), its bars growing while
it runs, where its time went, its slowest round and its failed call at a glance, a click on
a bar that opens that round, the keys that move around, and how it looks in the light and
dark themes at 600 px. Screenshots go to ``test-artifacts/timeline_*.png``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    contrast_report,
    layout_problems,
    ours,
    run_all_cells,
    shot,
    switch_theme,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

PROMPT = "How did revenue and churn do last quarter?"
AGENT = """\
import asyncio
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import AgentConfig, LLMAgent, LoopDebugger, ScriptedChatModel

DELAYS = [0.9, 0.6, 1.8, 0.5]  # each reply's time: round 3 is the slow one


class SlowModel(ScriptedChatModel):
    async def _agenerate(self, *args, **kwargs):
        await asyncio.sleep(DELAYS.pop(0) if DELAYS else 0.2)
        return await super()._agenerate(*args, **kwargs)


@tool
async def lookup(topic: str) -> str:
    \"\"\"Look a figure up.\"\"\"
    await asyncio.sleep(0.5)
    return f"{topic}: up 12%"


@tool
async def churn(quarter: str) -> str:
    \"\"\"Churn of a quarter.\"\"\"
    await asyncio.sleep(0.3)
    raise ValueError(f"no churn data for {quarter}")


@tool
async def report(name: str) -> str:
    \"\"\"Read a long report.\"\"\"
    await asyncio.sleep(1.4)
    return "revenue up 12%. " * 20


def call(name, args, call_id):
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def usage(i, o):
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


model = SlowModel(
    [
        AIMessage("Looking up revenue.", tool_calls=[call("lookup", {"topic": "revenue"}, "c1")],
                  usage_metadata=usage(900, 30)),
        AIMessage("Now churn.", tool_calls=[call("churn", {"quarter": "Q3"}, "c2")],
                  usage_metadata=usage(1000, 20)),
        AIMessage("Reading the report, and the revenue again.",
                  tool_calls=[call("report", {"name": "q3.pdf"}, "c3"),
                              call("lookup", {"topic": "revenue"}, "c4")],
                  usage_metadata=usage(1200, 40)),
        AIMessage("Revenue rose 12%; churn data for Q3 is missing.",
                  usage_metadata=usage(1500, 25)),
    ],
    model_name="gpt-4o-mini",
)
agent = LLMAgent(model, [lookup, churn, report], AgentConfig(tool_max_rounds=6))
"""


def tools_lane_y(canvas_box: dict[str, float]) -> float:
    """The middle of the tools lane: below the round strip (24 px) and the model lane (22)."""
    return canvas_box["y"] + 24 + 22 + 11


def find_bar(page: Any, live: Any, y: float, text: str) -> float:
    """The x where the timeline's tooltip names ``text`` (a person moving the mouse along)."""
    box = live.locator(".tl-gantt-canvas").bounding_box()
    tip = live.locator(".tl-gantt-tip")
    for dx in range(2, int(box["width"]), 3):
        page.mouse.move(box["x"] + dx, y)
        if tip.is_visible() and text in tip.inner_text():
            return box["x"] + dx
    pytest.fail(f"no bar says {text!r}")


def detail_title(live: Any) -> str:
    return str(live.locator(".tl-detail-title").inner_text())


def active_cell(page: Any) -> int:
    """The notebook's active cell: the widget's keys must never move it."""
    return int(
        page.evaluate(
            "[...document.querySelectorAll('.jp-Notebook .jp-Cell')]"
            ".findIndex(c => c.classList.contains('jp-mod-active'))"
        )
    )


def press_for(page: Any, live: Any, key: str, title: str) -> None:
    page.keyboard.press(key)
    live.locator(".tl-detail-title", has_text=re.compile(f"^{re.escape(title)}")).wait_for()


def test_the_whole_run_timeline_grows_opens_rounds_and_moves_with_keys(
    page_for: Any, jupyter: Jupyter
) -> None:
    name = write_notebook(
        jupyter.root,
        "timeline.ipynb",
        [
            AGENT,
            'dbg = LoopDebugger(pause_on="model")\ndbg',
            f"task = dbg.start(agent, {PROMPT!r})",
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page)
        live.get_by_text("Paused before calling the model in round 1.").wait_for()
        gantt = live.locator(".tl-gantt")
        gantt.wait_for()
        # a pause held now is a bar that grows with the page's own timer
        first = gantt.locator(".tl-gantt-sum").inner_text()
        page.wait_for_timeout(1200)
        assert gantt.locator(".tl-gantt-sum").inner_text() != first
        assert "paused" in gantt.locator(".tl-gantt-label").all_inner_texts()
        live.scroll_into_view_if_needed()
        shot(live, "timeline_live_paused")

        live.locator(".tl-controls select").select_option("off")
        live.get_by_role("button", name="Continue").click()
        samples = set()
        for _ in range(8):
            samples.add(gantt.locator(".tl-gantt-sum").inner_text())
            page.wait_for_timeout(300)
        assert len(samples) >= 4, samples  # it moved on while the run went on
        live.locator(".tl-badge", has_text="Finished").wait_for()
        page.wait_for_timeout(400)

        summary = gantt.locator(".tl-gantt-sum").inner_text()
        print(f"\n[timeline] {summary} | {gantt.locator('.tl-gantt-marks').inner_text()}")
        assert re.fullmatch(
            r"\d+\.\d s across 4 rounds: model \d+\.\d s, tools \d+\.\d s, paused \d+\.\d s"
            r"(, other \d+ ms)?",
            summary,
        ), summary
        marks = gantt.locator(".tl-gantt-marks").inner_text()
        assert marks.startswith("slowest: round 3, "), marks
        assert marks.endswith("1 failed call (round 2)"), marks
        # a tool chip says what happened to it
        chip = live.locator(".tl-row[data-n='2'] .tl-chip", has_text="churn")
        assert (chip.get_attribute("title") or "").startswith("raised ValueError · ")
        ok = live.locator(".tl-row[data-n='1'] .tl-chip").first.get_attribute("title") or ""
        assert ok.startswith("ok · "), ok
        live.scroll_into_view_if_needed()
        shot(gantt, "timeline_light")

        # a click on the failed tool's bar opens its round
        canvas = live.locator(".tl-gantt-canvas")
        y = tools_lane_y(canvas.bounding_box())
        x = find_bar(page, live, y, "churn")
        tip = live.locator(".tl-gantt-tip").inner_text()
        assert re.fullmatch(r"Round 2 · churn · \d+ ms · raised ValueError", tip), tip
        shot(gantt, "timeline_tooltip")
        page.mouse.click(x, y)
        live.locator(".tl-detail-title", has_text=re.compile("^Round 2")).wait_for()
        block = live.locator(".tl-detail .tl-block", has_text="Tool churn")
        block.wait_for()
        assert (block.locator(".tl-chip").first.get_attribute("title") or "").startswith(
            "raised ValueError"
        )
        assert page.evaluate("document.activeElement.classList.contains('tl-gantt-plot')")

        # the keys, in the timeline: none of them moves the notebook's cell
        cell = active_cell(page)
        press_for(page, live, "End", "Round 4")
        press_for(page, live, "Home", "Round 1")
        press_for(page, live, "PageDown", "Round 4")
        press_for(page, live, "PageUp", "Round 1")
        press_for(page, live, "n", "Round 2")
        page.keyboard.press("n")
        gantt.locator(".tl-gantt-note", has_text="no error after this round").wait_for()
        press_for(page, live, "End", "Round 4")
        press_for(page, live, "p", "Round 2")
        press_for(page, live, "ArrowRight", "Round 3")
        assert active_cell(page) == cell
        # the round list takes them too
        live.locator(".tl-row[data-n='1']").click()
        press_for(page, live, "End", "Round 4")
        press_for(page, live, "p", "Round 2")
        press_for(page, live, "ArrowDown", "Round 3")
        assert active_cell(page) == cell
        # typing in the widget's own fields is typing
        search = live.locator(".tl-toolbar input[type=search]")
        search.click()
        page.keyboard.type("no")
        assert search.input_value() == "no"
        assert detail_title(live).startswith("Round 3")
        search.fill("")
        hint = gantt.locator(".tl-gantt-keys")
        assert "n / p" in hint.inner_text()
        assert "PageUp" in (hint.get_attribute("title") or "")

        # narrow, then dark: it fits, it reads
        page.set_viewport_size({"width": 600, "height": 1400})
        page.wait_for_timeout(500)
        assert layout_problems(page) == []
        live.scroll_into_view_if_needed()
        shot(gantt, "timeline_light_600px")
        shot(live, "timeline_widget_light_600px")
        switch_theme(page, "JupyterLab Dark")
        result = contrast_report(page)
        assert result["worst"] == [], result["worst"]
        live.scroll_into_view_if_needed()
        shot(gantt, "timeline_dark_600px")
        page.set_viewport_size({"width": 1400, "height": 1800})
        page.wait_for_timeout(500)
        live.scroll_into_view_if_needed()
        shot(gantt, "timeline_dark")
        switch_theme(page, "JupyterLab Light")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "timeline_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
