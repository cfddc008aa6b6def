"""The same module on static pages: the scenario report and a standalone run page.

No Jupyter here: chromium opens the files. The report's Content-Security-Policy allows
only its loader script (by hash) and the module it imports from a blob: URL; the view must
draw every run, show hostile text as text, and old traces (no start events) as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser.streams import XSS, sample_run
from conftest import shot

from toolloop_lab import run_scenarios
from toolloop_lab.lab import Reply, Scenario
from toolloop_lab.widget.page import static_page

pytestmark = pytest.mark.browser


def open_file(browser: Any, path: Path, width: int = 1200) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 1400})
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    return page


def test_the_report_draws_each_run_with_the_widgets_module(browser: Any, tmp_path: Path) -> None:
    sweep = [
        Scenario.scripted("plain", [Reply.call("echo", {"text": "hi"}), Reply.final("done")]),
        Scenario.scripted("hostile", [Reply.call("echo", {"text": XSS}), Reply.final(XSS)]),
    ]
    path = run_scenarios(sweep, progress=False).write_report(tmp_path / "report.html")
    page = open_file(browser, path)
    try:
        page.wait_for_function("document.querySelectorAll('.tl-root').length === 2")
        hostile = page.locator(".tl-root").nth(1)
        hostile.locator(".tl-badge", has_text="Finished").wait_for()
        hostile.locator(".tl-row[data-n='1']").click()
        hostile.locator(".tl-detail-title", has_text="Round 1").wait_for()
        assert hostile.get_by_text(XSS).count() >= 1
        assert page.locator(".tl-root img").count() == 0
        assert page.evaluate("window.__toolloopXss") is None
        assert hostile.get_by_role("button", name="Step").is_hidden()
        assert page.errors == []
        hostile.scroll_into_view_if_needed()
        shot(hostile, "report_view")
    finally:
        page.close()


@pytest.mark.parametrize("modern", [True, False], ids=["new-events", "old-trace"])
def test_a_standalone_page_draws_new_and_old_streams(
    browser: Any, tmp_path: Path, modern: bool
) -> None:
    path = tmp_path / "run.html"
    path.write_text(static_page(sample_run(modern=modern)), encoding="utf-8")
    page = open_file(browser, path, width=600)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="Finished").wait_for()
        assert "3 rounds" in view.locator(".tl-toolbar").inner_text()
        view.locator(".tl-row[data-n='2']").click()
        detail = view.locator(".tl-detail")
        detail.locator(".tl-block", has_text="Tool churn").wait_for()
        assert "not run (token budget)" in detail.inner_text()
        if modern:
            detail.locator(".tl-block", has_text="Sent to the model (").first.wait_for()
        else:
            detail.get_by_text("does not record what the model was sent").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth") <= 600
        assert page.errors == []
        shot(view, f"static_{'new' if modern else 'old'}_600px")
    finally:
        page.close()
