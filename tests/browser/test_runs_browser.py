"""The run list in a real JupyterLab and Notebook 7, driven through Debian's chromium.

A debugger keeps every run it sees: an agent run three times, a sub-agent awaited inside
a tool, a session of a thousand runs. Each test writes a notebook, runs its cells through
the Run menu as a person would, and asserts on what the page shows; screenshots go to
``test-artifacts/`` and the figures measured are printed (``-s`` shows them).
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import pytest

from browser.jupyterkit import (
    ARTIFACTS,
    Jupyter,
    contrast_report,
    layout_problems,
    ours,
    run_all_cells,
    shot,
    switch_theme,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

AGENTS = """\
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel


def usage(i, o):
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


def call(name, args, call_id):
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


@tool
def echo(text: str) -> str:
    \"\"\"Echo the text back.\"\"\"
    return text


def asks(tool_name, args, call_id, text="", tokens=(1000, 50)):
    calls = [call(tool_name, args, call_id)]
    return AIMessage(text, tool_calls=calls, usage_metadata=usage(*tokens))


def says(text, tokens=(1200, 40)):
    return AIMessage(text, usage_metadata=usage(*tokens))
"""
THREE = """\
replies = []
for word in ("one", "two", "three"):
    replies += [asks("echo", {"text": word}, f"c_{word}"), says(f"The answer is {word}.")]
agent = LLMAgent(ScriptedChatModel(replies, model_name="gpt-4o-mini"), [echo])
dbg = LoopDebugger()
agent.subscribe(dbg)
dbg
"""
RUN_THREE = """\
for word in ("first", "second", "third"):
    await agent.arun(f"Say {word}.", name=f"{word} run")
print(len(dbg.runs), "runs")
"""
NESTED = """\
helper = LLMAgent(
    ScriptedChatModel(
        [
            asks("echo", {"text": "churn"}, "h1", tokens=(300, 20)),
            says("Churn fell to 2%.", (400, 30)),
        ],
        model_name="gpt-4o-mini",
    ),
    [echo],
)


@tool
async def research(question: str) -> str:
    \"\"\"Ask the research agent.\"\"\"
    return (await helper.arun(question, name="researcher")).finished.final_text


boss = LLMAgent(
    ScriptedChatModel(
        [
            asks("research", {"question": "churn?"}, "b1", "Asking research."),
            says("Churn fell to 2%."),
        ],
        model_name="gpt-4o-mini",
    ),
    [research],
)
nest = LoopDebugger()
boss.subscribe(nest)
helper.subscribe(nest)
nest
"""
RUN_NESTED = """\
await boss.arun("How did churn do last quarter?", name="boss")
print([(r.name, r.parent_tool_name) for r in nest.runs])
"""


def row(view: Any, label: str) -> Any:
    """The run list's row whose label is ``label``."""
    label_node = view.page.locator(".tl-r-label", has_text=re.compile(f"^{re.escape(label)}$"))
    return view.locator(".tl-spacer > .tl-run", has=label_node)


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_three_runs_are_listed_and_any_can_be_shown(
    page_for: Any, jupyter: Jupyter, ui: str
) -> None:
    name = write_notebook(jupyter.root, f"three_{ui}.ipynb", [AGENTS, THREE, RUN_THREE])
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        view = widget(page)
        page.get_by_text("3 runs", exact=True).first.wait_for()
        view.locator(".tl-runs-title", has_text="3 runs").wait_for()
        labels = view.locator(".tl-spacer > .tl-run .tl-r-label").all_inner_texts()
        assert labels == ["third run", "second run", "first run"]
        # the newest is shown, and marked so
        assert "The answer is three." in view.locator(".tl-activity").inner_text()
        assert row(view, "third run").get_attribute("aria-selected") == "true"
        newest = view.get_by_role("button", name="Newest")
        assert newest.is_disabled()
        # click a row: that run is shown (pinned), the header says so
        row(view, "first run").click()
        view.locator(".tl-activity", has_text="The answer is one.").wait_for()
        row(view, "first run").locator(".tl-r-shown", has_text="pinned").wait_for()
        assert "first run" in view.locator(".tl-title").inner_text()
        view.scroll_into_view_if_needed()
        shot(view, f"runs_{ui}_three_first_shown")
        # Newest follows the newest again
        newest.click()
        view.locator(".tl-activity", has_text="The answer is three.").wait_for()
        assert newest.is_disabled()
        # the question beside the run's name
        assert view.locator(".tl-question").inner_text() == "Say third."
        assert "Say second." in row(view, "second run").inner_text()
        # the counts, a search, a sort, and the keys
        answered = view.locator(".tl-runs-counts button[data-count='final_answer']")
        assert answered.locator(".tl-count-n").inner_text() == "3"
        view.locator(".tl-runs-search").fill("SECOND")
        assert view.locator(".tl-spacer > .tl-run .tl-r-label").all_inner_texts() == ["second run"]
        assert view.locator(".tl-runs-shown").inner_text() == "1 of 3 runs shown"
        view.get_by_role("button", name="Show every run").click()
        view.locator(".tl-runs-sort").select_option("start")
        view.locator(".tl-runs-order").click()  # oldest first
        labels = view.locator(".tl-spacer > .tl-run .tl-r-label").all_inner_texts()
        assert labels == ["first run", "second run", "third run"]
        view.locator(".tl-runs-scroller").focus()
        page.keyboard.press("End")
        page.keyboard.press("ArrowUp")
        page.keyboard.press("Enter")
        view.locator(".tl-activity", has_text="The answer is two.").wait_for()
        view.locator(".tl-question", has_text="Say second.").wait_for()
        view.scroll_into_view_if_needed()
        shot(view, f"runs_{ui}_three_oldest_first")
        view.get_by_role("button", name="Show every run").click()
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"runs_{ui}_three_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


def test_a_nested_run_sits_under_its_parents_tool_call(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(jupyter.root, "nested.ipynb", [AGENTS, NESTED, RUN_NESTED])
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        view = widget(page)
        view.locator(".tl-runs-title", has_text="2 runs").wait_for()
        assert view.locator(".tl-spacer > .tl-run .tl-r-label").all_inner_texts() == [
            "boss",
            "researcher",
        ]
        nested = row(view, "researcher")
        assert "called by tool `research`" in nested.inner_text()
        indent = nested.locator(".tl-r-name").evaluate("n => getComputedStyle(n).paddingLeft")
        assert indent == "16px"
        # the boss is shown: its own spend, and its spend with the nested run
        view.locator(".tl-badge", has_text="Finished").wait_for()
        totals = view.locator(".tl-totals").inner_text()
        assert "2,200 tokens" in totals  # its own input (1,000 + 1,200)
        spend = view.locator(".tl-total-nested").inner_text()
        assert re.search(r"with 1 nested run:\s*3,040 tokens, \$0\.\d+", spend), spend
        view.scroll_into_view_if_needed()
        shot(view, "runs_lab_nested_light")
        page.set_viewport_size({"width": 600, "height": 1400})
        page.wait_for_timeout(400)
        assert layout_problems(page) == []
        shot(page, "runs_lab_nested_600px")
        page.keyboard.press("Control+b")  # the file browser closed: the notebook is wider
        page.wait_for_timeout(400)
        assert layout_problems(page) == []
        view.scroll_into_view_if_needed()
        shot(view, "runs_lab_nested_600px_no_sidebar")
        page.set_viewport_size({"width": 1400, "height": 1800})
        page.wait_for_timeout(300)
        # the nested run can be shown too
        nested.click()
        view.locator(".tl-activity", has_text="Churn fell to 2%.").wait_for()
        view.locator(".tl-title", has_text="researcher").wait_for()
        assert view.locator(".tl-total-nested").count() == 0
        switch_theme(page, "JupyterLab Dark")
        result = contrast_report(page)
        print(
            f"\n[runs, dark] text nodes checked: {result['count']}, below 4.5:1: {result['worst']}"
        )
        assert result["worst"] == []
        view.scroll_into_view_if_needed()
        shot(view, "runs_lab_nested_dark")
        switch_theme(page, "JupyterLab Light")
        assert contrast_report(page)["worst"] == []
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "runs_nested_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


SESSION = """\
import asyncio
from toolloop_lab import LoopDebugger
from browser.streams import session_runs


async def feed(dbg, events):
    # about as fast as LLMAgent on an instant scripted model
    for i, event in enumerate(events):
        dbg(event)
        if i % 6 == 0:
            await asyncio.sleep(0.001)

events = session_runs(1_000, 10_000)
"""


def _watch_frames(page: Any) -> list[tuple[float, str]]:
    frames: list[tuple[float, str]] = []

    def on_ws(ws: Any) -> None:
        ws.on(
            "framereceived",
            lambda payload: frames.append(
                (
                    time.monotonic(),
                    payload if isinstance(payload, str) else payload.decode("latin-1"),
                )
            ),
        )

    page.on("websocket", on_ws)
    page.reload()
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    wait_idle(page)
    return frames


def _sent_at(frame: str) -> float:
    """Seconds (epoch) at which the kernel sent a message, from its header's date."""
    from datetime import datetime

    stamp = re.search(r'"msg_type":"comm_msg"[^}]*?"date":"([^"]+)"', frame) or re.search(
        r'"date":"([^"]+)"', frame
    )
    assert stamp, frame[:400]
    return datetime.fromisoformat(stamp.group(1).replace("Z", "+00:00")).timestamp()


def _pace(stamps: list[float]) -> tuple[int, float]:
    """The busiest second of ``stamps`` and the shortest span of eleven in a row."""
    stamps = sorted(stamps)
    first = stamps[0] if stamps else 0.0
    per_second: dict[int, int] = {}
    for t in stamps:
        per_second[int(t - first)] = per_second.get(int(t - first), 0) + 1
    tightest = min(
        (stamps[i + 10] - stamps[i] for i in range(len(stamps) - 10)), default=float("inf")
    )
    return max(per_second.values(), default=0), tightest


def test_a_thousand_runs_stay_fast_small_and_paced(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "session.ipynb",
        [
            SESSION,
            "big = LoopDebugger()\nbig",
            "print('MODEL_ID=' + big.model_id)",
            "task = asyncio.get_running_loop().create_task(feed(big, events))",
            "await task\nprint(len(big.runs), big.runs_left_out, big.draws)",
        ],
    )
    page = page_for(name, "lab")
    frames = _watch_frames(page)
    try:
        run_all_cells(page)
        big = widget(page)
        page.wait_for_function("/MODEL_ID=[0-9a-f]{32}/.test(document.body.innerText)")
        found = re.search(r"MODEL_ID=([0-9a-f]{32})", page.locator("body").inner_text())
        assert found
        model_id = found.group(1)
        big.locator(".tl-runs").wait_for()
        t0 = page.evaluate("performance.now()")
        start = time.monotonic()
        big.locator(".tl-title", has_text="the long one").wait_for(timeout=300_000)
        big.locator(".tl-badge", has_text="Finished").wait_for(timeout=300_000)
        page.wait_for_timeout(1500)  # the last batches fold in
        end = time.monotonic()
        t1 = page.evaluate("performance.now()")
        assert "10,001 rounds" in big.locator(".tl-toolbar").inner_text()
        big.locator(".tl-runs-title", has_text="1,000 runs (39 earlier not kept)").wait_for()
        long_tasks = page.evaluate(
            f"window.__longtasks.filter(t => t.start >= {t0} && t.start <= {t1})"
        )
        frames_long = page.evaluate(
            f"window.__loaf.filter(t => t.start >= {t0} && t.start <= {t1})"
        )
        module_ms = max(
            (
                sum(x["duration"] for x in f["scripts"] if x["source"].startswith("blob:"))
                for f in frames_long
            ),
            default=0.0,
        )
        nodes = page.evaluate("document.querySelector('.tl-root').querySelectorAll('*').length")
        ours = [
            _sent_at(data)
            for t, data in frames
            if model_id in data and '"comm_msg"' in data and start - 0.5 <= t <= end
        ]
        busiest, tightest = _pace(ours)
        shot(big, "runs_1000_session")
        # an old run, far down the list, is one scroll and a click away
        scroller = big.locator(".tl-runs-scroller")
        scroller.evaluate("n => { n.scrollTop = n.scrollHeight; }")
        page.wait_for_timeout(300)
        oldest = big.locator(".tl-spacer > .tl-run .tl-r-label").last
        label = oldest.inner_text()
        oldest.click()
        big.locator(".tl-title", has_text=label).wait_for()
        nodes_after = page.evaluate(
            "document.querySelector('.tl-root').querySelectorAll('*').length"
        )
        shot(big, "runs_1000_old_run_shown")
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1500)
        saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
        state = json.dumps(saved["metadata"].get("widgets", {}))
        figures = {
            "seconds": end - start,
            "long_tasks": len(long_tasks),
            "longest_task_ms": max((t["duration"] for t in long_tasks), default=0),
            "module_ms_max": module_ms,
            "dom_nodes": nodes,
            "dom_nodes_old_run_shown": nodes_after,
            "messages": len(ours),
            "busiest_second": busiest,
            "tightest_eleven_s": tightest,
            "saved_widget_state_bytes": len(state),
            "notebook_bytes": len(json.dumps(saved)),
        }
        print(f"\n[1,000 runs, one of 10,000 rounds] {json.dumps(figures)}")
        (ARTIFACTS / "figures_1000_runs.json").write_text(
            json.dumps(
                {**figures, "long_task_list": long_tasks, "long_frames": frames_long}, indent=1
            )
        )
        if os.environ.get("TOOLLOOP_STRICT_TIMING") == "1":
            assert long_tasks == []
            assert module_ms < 50
        assert nodes <= 3_000
        assert nodes_after <= 3_000
        assert len(ours) >= 10
        assert tightest >= 0.8  # at most ten messages a second, trait updates included
        assert len(state) < 1_000_000
    except BaseException:
        shot(page, "runs_1000_failure")
        print(jupyter.log_tail())
        raise
