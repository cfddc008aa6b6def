"""The debugger in a real JupyterLab and Notebook 7, driven through Debian's chromium.

Each test writes a notebook, runs its cells through the Run menu as a person would, and
asserts on what the page shows. Runs are played by :class:`PlaybackAgent` (a real-time
player behind the debugger's agent API: observers, pause hooks, ``arun``), so step mode,
Stop and the browser's timers behave as with a live loop. Screenshots go to
``test-artifacts/``; the figures the suite measures are printed (``-s`` shows them).
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

XSS = "<img src=x onerror=alert(1)>"
"""The first of loopkit's payloads: it would open an alert() dialog if it ever ran."""
PROMPT = "How did revenue and churn do last quarter?"
SETUP = """\
import asyncio
import ipywidgets
from toolloop_lab import LoopDebugger
from browser.streams import PlaybackAgent, long_run, sample_run, slow_run, failed_run
"""
REAL_AGENT = f"""\
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel

PROMPT = {PROMPT!r}
SYSTEM = "You are a careful analyst."
XSS = {XSS!r}


class SlowModel(ScriptedChatModel):
    \"\"\"Each reply takes 1.5 s to come back (the event loop stays free meanwhile).\"\"\"

    async def _agenerate(self, *args, **kwargs):
        await asyncio.sleep(1.5)
        return await super()._agenerate(*args, **kwargs)

    async def _astream(self, *args, **kwargs):
        await asyncio.sleep(1.5)
        async for chunk in super()._astream(*args, **kwargs):
            yield chunk


@tool
async def file_read(path: str) -> str:
    \"\"\"Read a file (slowly).\"\"\"
    await asyncio.sleep(3.0)
    return "revenue up 12%. " * 40


@tool
def echo(text: str) -> str:
    \"\"\"Echo the text back.\"\"\"
    return text


def usage(i, o):
    return {{"input_tokens": i, "output_tokens": o, "total_tokens": i + o}}


def call(name, args, call_id):
    return {{"name": name, "args": args, "id": call_id, "type": "tool_call"}}


model = SlowModel(
    [
        AIMessage(
            "Reading the report and echoing a note.",
            tool_calls=[
                call("file_read", {{"path": "report.txt"}}, "call_read"),
                call("echo", {{"text": XSS}}, "call_echo"),
            ],
            usage_metadata=usage(1000, 50),
        ),
        AIMessage("Revenue rose 12% this quarter.", usage_metadata=usage(1800, 40)),
    ],
    model_name="gpt-4o-mini",
)
agent = LLMAgent(model, [file_read, echo], AgentConfig(tool_max_rounds=6, streaming=True))
"""
CONTROL = "ipywidgets.HTML('<img src=x onerror=\"alert(\\'control\\')\">')"
"""An HTML widget that does run its markup: proves the dialog listener would see a payload."""


def texts_over_time(page: Any, seconds: float, every: float = 0.2) -> list[tuple[float, str]]:
    samples = []
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        samples.append((time.monotonic() - start, widget(page).inner_text()))
        page.wait_for_timeout(every * 1000)
    return samples


def longest_still(samples: list[tuple[float, str]]) -> float:
    """The longest time the widget's text stayed the same."""
    longest, since, last = 0.0, samples[0][0], samples[0][1]
    for t, text in samples[1:]:
        if text != last:
            longest = max(longest, t - since)
            since, last = t, text
    return max(longest, samples[-1][0] - since)


def sent_at(frame: str) -> float:
    """Seconds (epoch) at which the kernel sent a message, from its header's date."""
    from datetime import datetime

    stamp = re.search(r'"msg_type":"comm_msg"[^}]*?"date":"([^"]+)"', frame) or re.search(
        r'"date":"([^"]+)"', frame
    )
    assert stamp, frame[:400]
    return datetime.fromisoformat(stamp.group(1).replace("Z", "+00:00")).timestamp()


def sidebar_open(page: Any) -> None:
    opened = page.evaluate(
        "() => { const s = document.querySelector('#jp-left-stack');"
        " return !!s && !s.classList.contains('lm-mod-hidden')"
        " && s.getBoundingClientRect().width > 0; }"
    )
    if not opened:
        page.locator("#jp-left-stack, .jp-SideBar.jp-mod-left li[role='tab']").first.wait_for()
        page.locator(".jp-SideBar.jp-mod-left li[role='tab']").first.click()


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_live_run_steps_ticks_and_inspects(page_for: Any, jupyter: Jupyter, ui: str) -> None:
    name = write_notebook(
        jupyter.root,
        f"live_{ui}.ipynb",
        [
            SETUP,
            REAL_AGENT,
            'dbg = LoopDebugger(pause_on="model")\ndbg',
            "task = dbg.start(agent, [SystemMessage(SYSTEM), HumanMessage(PROMPT)])",
            "LoopDebugger.from_trace(sample_run())",
            CONTROL,
        ],
    )
    page = page_for(name, ui)
    tag = f"{ui}"
    try:
        run_all_cells(page)
        live = widget(page, 0)
        live.get_by_text("Paused before calling the model in round 1.").wait_for()
        # the prompt about to be sent is on the page
        live.locator(".tl-block", has_text="About to send").get_by_text(PROMPT).first.wait_for()
        live.scroll_into_view_if_needed()
        shot(live, f"{tag}_paused")

        # narrow widths: nothing overflows, no control is cut
        page.set_viewport_size({"width": 600, "height": 1400})
        page.wait_for_timeout(400)
        assert layout_problems(page) == []
        shot(page, f"{tag}_600px")
        if ui == "lab":
            page.set_viewport_size({"width": 800, "height": 1400})
            sidebar_open(page)
            page.wait_for_timeout(400)
            assert page.locator("#jp-left-stack").bounding_box()["width"] > 100
            assert layout_problems(page) == []
            shot(page, f"{tag}_800px_sidebar")
        page.set_viewport_size({"width": 1400, "height": 1800})
        page.wait_for_timeout(300)

        # Continue: a 1.5 s streamed model call, then a 3 s tool; timers tick in the page
        live.get_by_role("button", name="Continue").click()
        samples = texts_over_time(page, 4.4)
        still = longest_still(samples)
        print(f"\n[{ui}] longest time the live widget's text stood still: {still:.2f} s")
        assert still < 1.0, samples
        assert any("calling gpt-4o-mini…" in t for _s, t in samples)
        assert any("running file_read…" in t for _s, t in samples)
        assert any("Reading the report" in t for _s, t in samples)  # streamed text
        live.locator(".tl-badge", has_text="Finished").wait_for()
        shot(live, f"{tag}_finished")

        # clicking a round shows that round, with what its call was sent
        live.locator(".tl-row[data-n='1']").click()
        detail = live.locator(".tl-detail")
        detail.locator(".tl-detail-title", has_text="Round 1").wait_for()
        sent = detail.locator(".tl-block", has_text="Sent to the model")
        sent.get_by_text(PROMPT).wait_for()
        sent.get_by_text("You are a careful analyst.").wait_for()
        detail.locator(".tl-block", has_text="Tool file_read").wait_for()
        shot(live, f"{tag}_round1")

        replay = widget(page, 1)
        assert (
            replay.get_by_role("button", name="Step").count() == 0
            or not replay.get_by_role("button", name="Step").is_visible()
        )
        replay.scroll_into_view_if_needed()
        shot(replay, f"{tag}_replay")

        # the payload shows as text and never runs; the control proves it would have
        assert page.get_by_text(XSS).count() >= 1
        for _ in range(50):
            if page.dialogs:
                break
            page.wait_for_timeout(100)
        assert page.dialogs == ["control"]
        assert page.locator(".tl-root img").count() == 0
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"{tag}_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


def test_dark_theme_contrast_failure_and_stop(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "dark.ipynb",
        [
            SETUP,
            "LoopDebugger.from_trace(sample_run())",
            "LoopDebugger.from_trace(failed_run())",
            'stopper = LoopDebugger(pause_on="tools")\nstopper',
            f"task = stopper.start(PlaybackAgent(slow_run()), {PROMPT!r})",
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        stopper = widget(page, 2)
        stopper.get_by_text("Paused before running file_read, echo in round 1.").wait_for()
        stopper.get_by_role("button", name="Stop").click()
        stopper.locator(".tl-badge", has_text="Stopped").wait_for()
        # the header and the partial counts agree, and a Stop is no red failure
        head = stopper.locator(".tl-head").inner_text()
        assert "1 tool round, 1 model call (at most 6 rounds)" in head
        assert "Stopped by you after 1 round" in stopper.locator(".tl-failure").inner_text()
        assert "tl-error-box" not in (stopper.locator(".tl-failure").get_attribute("class") or "")
        wait_idle(page)
        for index, label in ((0, "finished"), (1, "failed"), (2, "stopped")):
            widget(page, index).scroll_into_view_if_needed()
            shot(widget(page, index), f"lab_light_{label}")
        switch_theme(page, "JupyterLab Dark")
        result = contrast_report(page)
        print(f"\n[dark] text nodes checked: {result['count']}, below 4.5:1: {result['worst']}")
        assert result["count"] > 100
        assert result["worst"] == []
        for index, label in ((0, "finished"), (1, "failed"), (2, "stopped")):
            widget(page, index).scroll_into_view_if_needed()
            shot(widget(page, index), f"lab_dark_{label}")
        switch_theme(page, "JupyterLab Light")
        light = contrast_report(page)
        print(f"[light] text nodes checked: {light['count']}, below 4.5:1: {light['worst']}")
        assert light["worst"] == []
    except BaseException:
        shot(page, "dark_failure")
        print(jupyter.log_tail())
        raise


FEED = """\
async def feed(dbg, events):
    # about as fast as LLMAgent on an instant scripted model: a round a millisecond
    for i, event in enumerate(events):
        dbg(event)
        if i % 6 == 0:
            await asyncio.sleep(0.001)

events = long_run(10_000)
"""


def test_ten_thousand_rounds_stay_fast_and_small(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "long.ipynb",
        [
            SETUP + FEED,
            "big = LoopDebugger()\nbig",
            "print('MODEL_ID=' + big.model_id)",
            "task = asyncio.get_running_loop().create_task(feed(big, events))",
            "await task\nprint(big.draws, big.redraw_requests)",
        ],
    )
    frames: list[tuple[float, str]] = []

    page = page_for(name, "lab")

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
    try:
        run_all_cells(page)
        big = widget(page)
        page.wait_for_function("/MODEL_ID=[0-9a-f]{32}/.test(document.body.innerText)")
        found = re.search(r"MODEL_ID=([0-9a-f]{32})", page.locator("body").inner_text())
        assert found
        model_id = found.group(1)
        big.locator(".tl-badge", has_text="Running").wait_for()
        t0 = page.evaluate("performance.now()")
        start = time.monotonic()
        big.locator(".tl-badge", has_text="Finished").wait_for(timeout=300_000)
        page.wait_for_timeout(1500)  # the last batches fold in
        end = time.monotonic()
        t1 = page.evaluate("performance.now()")
        assert "10,001 rounds" in big.locator(".tl-toolbar").inner_text()
        long_tasks = page.evaluate(
            f"window.__longtasks.filter(t => t.start >= {t0} && t.start <= {t1})"
        )
        nodes = page.evaluate("document.querySelector('.tl-root').querySelectorAll('*').length")
        # when the kernel sent each of the widget's messages (the iopub header's date)
        ours = [
            sent_at(data)
            for t, data in frames
            if model_id in data and '"comm_msg"' in data and start - 0.5 <= t <= end
        ]
        first_sent = min(ours, default=0.0)
        frames_long = page.evaluate(
            f"window.__loaf.filter(t => t.start >= {t0} && t.start <= {t1})"
        )
        # script time of this widget's module (a blob: URL) in any long frame
        # the widget's module is loaded from a blob: URL; its script time in any long frame
        module_ms = max(
            (
                sum(x["duration"] for x in f["scripts"] if x["source"].startswith("blob:"))
                for f in frames_long
            ),
            default=0.0,
        )
        # the pace: the message holding the run's end is drawn at once, by design (a
        # finished run never waits for its last picture), so it is not one of the paced ones
        paced = [
            sent_at(data)
            for t, data in frames
            if model_id in data
            and '"comm_msg"' in data
            and start - 0.5 <= t <= end
            and '"loop_finish"' not in data
        ]
        per_second: dict[int, int] = {}
        for t in paced:
            second = int(t - first_sent)
            per_second[second] = per_second.get(second, 0) + 1
        busiest = max(per_second.values()) if per_second else 0
        # The pace itself: any eleven paced messages in a row span at least a second. The
        # stamps are the kernel's send times, taken after the pacer's clock reading and
        # after the message is serialised, so fixed one-second buckets can catch eleven (a
        # stamp that lags by 2 ms pulls the next bucket's first message in). The span of
        # eleven shrinks by at most that lag (57 ms seen on a loaded 2-core machine), hence
        # the 0.8 s floor; a pacer at twice the rate would give 0.5 s.
        paced.sort()
        tightest = min(
            (paced[i + 10] - paced[i] for i in range(len(paced) - 10)), default=float("inf")
        )
        shot(big, "lab_10000_rounds")
        # the whole-run timeline at scale: where the time went, what failed, and its keys
        gantt = big.locator(".tl-gantt")
        assert "across 10,001 rounds" in gantt.locator(".tl-gantt-sum").inner_text()
        assert "103 failed calls" in gantt.locator(".tl-gantt-marks").inner_text()
        gantt.locator(".tl-gantt-plot").focus()
        page.keyboard.press("Home")
        big.locator(".tl-detail-title", has_text=re.compile(r"^Round 1$")).wait_for()
        page.keyboard.press("n")
        big.locator(".tl-detail-title", has_text=re.compile(r"^Round 97$")).wait_for()
        shot(gantt, "lab_10000_timeline")
        # navigation at scale: jump to a round, errors only
        big.locator(".tl-jump").fill("4850")
        big.get_by_role("button", name="Go").click()
        big.locator(".tl-detail-title", has_text="Round 4,850").wait_for()
        big.locator(".tl-toolbar select").first.select_option("errors")
        big.get_by_text("103 rounds of 10,001").wait_for()
        shot(big, "lab_10000_errors_only")
        nodes_after = page.evaluate(
            "document.querySelector('.tl-root').querySelectorAll('*').length"
        )
        # saved notebook state
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1500)
        saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
        state = json.dumps(saved["metadata"].get("widgets", {}))
        file_size = len(json.dumps(saved))
        print(
            f"\n[10,000 rounds] long tasks: {len(long_tasks)} (longest "
            f"{max((t['duration'] for t in long_tasks), default=0):.0f} ms; this module's longest "
            f"script time in one frame {module_ms:.0f} ms) over "
            f"{end - start:.1f} s; widget DOM nodes {nodes} (after filtering {nodes_after}); "
            f"kernel-to-browser messages of the widget: {len(ours)}, busiest second {busiest}, "
            f"tightest eleven in a row {tightest:.3f} s; "
            f"saved widget state {len(state):,} bytes, notebook {file_size:,} bytes"
        )
        (ARTIFACTS / "figures_10000_rounds.json").write_text(
            json.dumps(
                {
                    "long_tasks": long_tasks,
                    "long_frames": frames_long,
                    "module_ms_max": module_ms,
                    "seconds": end - start,
                    "dom_nodes": nodes,
                    "dom_nodes_filtered": nodes_after,
                    "messages": len(ours),
                    "messages_per_second": per_second,
                    "saved_widget_state_bytes": len(state),
                    "notebook_bytes": file_size,
                },
                indent=1,
            )
        )
        # Long tasks are a timing figure: printed and written to test-artifacts/ always,
        # asserted only where the machine is quiet enough to mean something
        # (TOOLLOOP_STRICT_TIMING=1): on a 2-core machine shared with other test runs,
        # even frames with no script at all go over 50 ms.
        if os.environ.get("TOOLLOOP_STRICT_TIMING") == "1":
            assert long_tasks == []
            assert module_ms < 50
        assert nodes < 3_000
        assert nodes_after < 3_000
        assert len(ours) >= 10  # the run streamed in, batch by batch
        assert tightest >= 0.8  # at most ten paced messages a second
        assert len(state) < 1_000_000
        assert file_size < 1_000_000

        # re-running the cell replaces the debugger: the old one's state leaves the file
        page.locator(".jp-Notebook .jp-Cell >> visible=true").nth(1).click()
        page.keyboard.press("Shift+Enter")
        page.wait_for_timeout(1000)
        wait_idle(page)
        page.keyboard.press("Control+s")
        page.wait_for_timeout(1500)
        saved = jupyter.api(f"/api/contents/{name}?content=1")["content"]
        models = saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
        debuggers = [
            m
            for m in models.values()
            if m["state"].get("_anywidget_id") == "toolloop_lab._widget.debugger.LoopDebugger"
        ]
        rerun_state = len(json.dumps(saved["metadata"]["widgets"]))
        print(f"[re-run] debuggers in the saved state: {len(debuggers)}, {rerun_state:,} bytes")
        assert len(debuggers) == 1
        assert rerun_state < len(state)
    except BaseException:
        shot(page, "long_failure")
        print(jupyter.log_tail())
        raise
