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
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, f"edges_{ui}_keys_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise


PROSE_RUN = """\
from browser.streams import Stream, ToolSpec
from toolloop_lab import LoopDebugger

REPLY = (
    "Every service picks it up from the shared configuration, so a change to the retry "
    "policy reaches all of them at once. The nightly backup of orders failed because its "
    "snapshot took longer than the one-hour window; billing and users finished in time. "
    "Internationalization, observability and reproducibility were not affected.\\n\\n"
) * 3
TRACEBACK = (
    "Traceback (most recent call last):\\n"
    '  File "backup.py", line 88, in run\\n'
    "    snapshot(database, timeout=3600)\\n"
    "TimeoutError: the snapshot of orders took longer than 3600 s"
)
s = Stream().start("Why did last night's backup of orders fail?")
log = ToolSpec("c1", "read_log", {"database": "orders"}, TRACEBACK, 0.4, "error")
s.full_round(1, "Reading the orders log.", [log], tokens=(1200, 60))
s.round_start(2)
s.call_start(2)
s.t += 1.2
s.call_end(2, REPLY, (), tokens=(2400, 380))
prose = s.finish(REPLY, 2).events
"""

WORDS_SPLIT = """(pre) => {
  const split = [];
  const tops = new Set();
  const walk = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    for (const m of n.data.matchAll(/[^\\s-]+-?/g)) {
      const range = document.createRange();
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      const boxes = [...range.getClientRects()].filter((r) => r.width > 0);
      const lines = new Set(boxes.map((r) => Math.round(r.top)));
      lines.forEach((t) => tops.add(t));
      if (lines.size > 1) split.push(m[0]);
    }
  }
  return {lines: tops.size, split};
}"""
"""Each word of a text as a Range: a word broken across two lines has boxes on two lines (a
hyphenated word is two words: a line may end after its hyphen)."""


def font(locator: Any) -> str:
    family: str = locator.evaluate("(n) => getComputedStyle(n).fontFamily")
    return family


@pytest.mark.parametrize("ui", ["lab", "notebook"])
def test_replies_wrap_between_words(page_for: Any, jupyter: Jupyter, ui: str) -> None:
    name = write_notebook(
        jupyter.root, f"wrap_{ui}.ipynb", [PROSE_RUN, "LoopDebugger.from_trace(prose)"]
    )
    page = page_for(name, ui)
    try:
        run_all_cells(page)
        view = widget(page)
        view.locator(".tl-badge", has_text="Finished").wait_for()
        reply = view.locator(".tl-detail .tl-block", has_text="Reply").locator("pre.tl-text")
        reply.wait_for()
        for width in (1400, 600):
            page.set_viewport_size({"width": width, "height": 1600})
            page.wait_for_timeout(400)
            measured = reply.evaluate(WORDS_SPLIT)
            print(
                f"\n[{ui}, {width} px] reply lines {measured['lines']}, split {measured['split']}"
            )
            assert measured["lines"] >= 6  # it does wrap
            assert measured["split"] == []
            view.scroll_into_view_if_needed()
            shot(view, f"edges_{ui}_reply_{width}px")
        # the check can fail: JupyterLab's own rule for a <pre> in an output splits words
        reply.evaluate("(n) => n.style.setProperty('word-break', 'break-all')")
        assert reply.evaluate(WORDS_SPLIT)["split"] != []
        reply.evaluate("(n) => n.style.removeProperty('word-break')")

        # prose in the UI font; JSON arguments and a traceback in monospace
        assert font(reply) == font(view)
        assert "mono" not in font(reply).lower()
        view.locator(".tl-row[data-n='1']").click()
        detail = view.locator(".tl-detail")
        detail.locator(".tl-detail-title", has_text="Round 1").wait_for()
        traceback = detail.locator(".tl-block", has_text="Tool read_log").locator("pre.tl-text")
        assert "Traceback" in traceback.inner_text()
        assert "mono" in font(traceback).lower()
        assert "mono" in font(detail.locator(".tl-json").first).lower()
        sent = detail.locator(".tl-block", has_text="Sent to the model").locator("pre.tl-text")
        assert "mono" not in font(sent.first).lower()  # the prompt is prose
        view.scroll_into_view_if_needed()
        shot(view, f"edges_{ui}_traceback_600px")
    except BaseException:
        shot(page, f"edges_{ui}_wrap_failure")
        print("\n".join(page.errors))
        raise


ROWS_RUN = """\
from decimal import Decimal
from browser.streams import Stream, ToolSpec, long_run
from toolloop_lab import LoopDebugger

ANSWER = "All but three invoices match; the three are refunds booked in October."
s = Stream().start("Reconcile last quarter's invoices with the ledger.")
ledger = ToolSpec("c1", "read_ledger", {"quarter": "Q3"}, "4,118 entries", 1.2)
invoices = ToolSpec("c2", "list_invoices", {"quarter": "Q3"}, "412 invoices", 0.8)
s.full_round(1, "Reading the ledger and the invoices, then reconciling both sides.",
             [ledger, invoices], tokens=(123456, 7890), cost=Decimal("0.023584"))
match = ToolSpec("c3", "match_payments", {"tolerance": 0.01}, "3 unmatched", 2.1)
s.full_round(2, "Matching payments to invoices.", [match], tokens=(131346, 512),
             cost=Decimal("0.019981"))
check = ToolSpec("c4", "read_ledger", {"entry": 4117}, "entry 4117: a refund", 0.3)
note = ToolSpec("c5", "echo", {"text": "refund"}, "refund", 0.1)
s.full_round(3, "Checking the three unmatched entries.", [check, note], tokens=(132702, 301),
             cost=Decimal("0.019946"))
s.round_start(4)
s.call_start(4)
s.t += 2.0
s.call_end(4, ANSWER, (), tokens=(133410, 95), cost=Decimal("0.020068"))
small = s.finish(ANSWER, 4).events
"""

ROW_FIGURES = """(root) => {
  const view = root.querySelector('.tl-timeline .tl-scroller').getBoundingClientRect();
  const out = [];
  for (const row of root.querySelectorAll('.tl-timeline .tl-spacer > .tl-row')) {
    const box = row.getBoundingClientRect();
    if (box.bottom <= view.top + 1 || box.top >= view.bottom - 1) continue;  // scrolled away
    const cells = {};
    for (const sel of ['.tl-c-n', '.tl-c-tok', '.tl-c-cost']) {
      const c = row.querySelector(sel);
      const r = c.getBoundingClientRect();
      const inside = r.width > 0 && r.left >= view.left - 0.5 && r.right <= view.right + 0.5;
      cells[sel] = {text: c.textContent, scroll: c.scrollWidth, client: c.clientWidth, inside};
    }
    const sum = row.querySelector('.tl-c-sum').getBoundingClientRect();
    const holder = row.querySelector('.tl-sum-chips');
    const chips = [];
    for (const chip of row.querySelectorAll('.tl-sum-chips .tl-chip')) {
      const r = chip.getBoundingClientRect();
      if (r.top >= holder.getBoundingClientRect().bottom - 1) continue;  // wrapped out of sight
      const name = chip.querySelector('.tl-chip-name') || chip;
      chips.push({text: chip.textContent, cut: r.right > sum.right + 0.5,
                  whole: name.scrollWidth <= name.clientWidth, width: Math.round(r.width)});
    }
    out.push({n: row.dataset.n, cells, chips});
  }
  return out;
}"""
"""What each visible round row shows: its figures' cells, and its chips in sight."""


def file_browser(page: Any, show: bool) -> None:
    """Open or close JupyterLab's left sidebar (a click on its current tab toggles it)."""
    shown = page.evaluate(
        "() => { const s = document.querySelector('#jp-left-stack');"
        " return !!s && !s.classList.contains('lm-mod-hidden')"
        " && s.getBoundingClientRect().width > 0; }"
    )
    if shown != show:
        tabs = page.locator(".jp-SideBar.jp-mod-left li[role='tab']")
        current = tabs.and_(page.locator(".lm-mod-current"))
        (current if not show and current.count() else tabs.first).click()
        page.wait_for_timeout(400)


def rows_whole(view: Any, where: str, *, chip_min: int) -> list[dict[str, Any]]:
    """Every visible row's number, tokens and cost shown whole; no chip cut by its cell, and
    each chip in sight whole or at least ``chip_min`` px wide (its dot and a few letters)."""
    rows: list[dict[str, Any]] = view.evaluate(ROW_FIGURES)
    assert rows, where
    for row in rows:
        for sel, cell in row["cells"].items():
            assert cell["text"].strip(), (where, row["n"], sel)
            assert cell["inside"], (where, row["n"], sel, cell)
            assert cell["scroll"] <= cell["client"], (where, row["n"], sel, cell)
        for chip in row["chips"]:
            assert not chip["cut"], (where, row["n"], chip)
            assert chip["whole"] or chip["width"] >= chip_min, (where, row["n"], chip)
    return rows


def list_height(view: Any) -> tuple[float, float]:
    """The round list's visible height and its rows' whole height, in px."""
    sizes: tuple[float, float] = view.locator(".tl-timeline .tl-scroller").evaluate(
        "(n) => [n.getBoundingClientRect().height, n.scrollHeight]"
    )
    return sizes


def test_narrow_rows_keep_their_figures_and_the_list_fits_its_rows(
    page_for: Any, jupyter: Jupyter
) -> None:
    name = write_notebook(
        jupyter.root,
        "rows.ipynb",
        [ROWS_RUN, "LoopDebugger.from_trace(small)", "LoopDebugger.from_trace(long_run(40))"],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        small, big = widget(page, 0), widget(page, 1)
        for view in (small, big):
            view.locator(".tl-badge", has_text="Finished").wait_for()
        row_h = small.locator(".tl-timeline .tl-spacer > .tl-row").first.evaluate(
            "(n) => n.getBoundingClientRect().height"
        )
        for label, width, sidebar in (
            ("1400px", 1400, False),
            ("800px_sidebar", 800, True),
            ("600px", 600, False),
            ("600px_sidebar", 600, True),
        ):
            page.set_viewport_size({"width": width, "height": 1600})
            file_browser(page, sidebar)
            page.wait_for_timeout(400)
            seen = small.evaluate("(n) => n.getBoundingClientRect().width")
            rows = rows_whole(small, label, chip_min=60)
            rows_whole(big, label, chip_min=60)
            print(
                f"\n[{label}] debugger {seen:.0f} px wide; row 1: "
                + " · ".join(c["text"] for c in rows[0]["cells"].values())
                + f"; chips in sight: {[c['text'] for c in rows[0]['chips']]}"
            )
            assert len(rows) == 4
            if label != "600px_sidebar":
                assert rows[0]["chips"], label  # a tool chip still shows beside the figures
            # a 4-round run's list is 4 rows tall; a 40-round run's is 9 rows and scrolls
            shown, whole = list_height(small)
            assert abs(shown - 4 * row_h) <= 1, (label, shown, row_h)
            assert whole <= shown + 1
            shown, whole = list_height(big)
            assert abs(shown - 9 * row_h) <= 1, (label, shown)
            assert whole >= 40 * row_h
            assert layout_problems(page) == []
            small.scroll_into_view_if_needed()
            shot(small, f"edges_rows_{label}")

        # the detail pane fits a small round: no fixed 460 px block with blank space below
        page.set_viewport_size({"width": 1400, "height": 1600})
        file_browser(page, False)
        small.locator(".tl-row[data-n='4']").click()
        small.locator(".tl-detail-title", has_text="Round 4").wait_for()
        small.locator(".tl-detail .tl-block", has_text="Reply").first.wait_for()
        sent = small.locator(".tl-detail .tl-block", has_text="Sent to the model")
        sent.get_by_role("button", name="Hide").click()  # what is left: a short reply
        body = small.locator(".tl-detail-body")
        height, blank = body.evaluate(
            """(n) => { const last = n.lastElementChild.getBoundingClientRect();
                        const box = n.getBoundingClientRect();
                        return [box.height, box.bottom - last.bottom]; }"""
        )
        print(f"[detail] round 4, its input hidden: pane {height:.0f} px, {blank:.0f} px blank")
        assert height < 460
        assert blank <= 16  # the last block's margin and the pane's padding
        shot(small, "edges_rows_detail_fits")

        # dark, 600 px: the figures still read
        page.set_viewport_size({"width": 600, "height": 1600})
        switch_theme(page, "JupyterLab Dark")
        contrast = contrast_report(page)
        assert contrast["worst"] == []
        small.scroll_into_view_if_needed()
        shot(small, "edges_rows_dark_600px")
        switch_theme(page, "JupyterLab Light")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "edges_rows_failure")
        print("\n".join(page.errors))
        raise
