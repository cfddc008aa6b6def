"""The same module on static pages: the scenario report and a standalone run page.

No Jupyter here: chromium opens the files. The report's Content-Security-Policy allows
only its loader script (by hash) and the module it imports from a blob: URL; the view must
draw every run, old traces (no start events) as well, show hostile text in every field as
text (no ``alert`` dialog opens, no element is made from it) and megabyte fields clipped
with their length.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from loopkit import PAYLOADS

from browser.jupyterkit import open_file, shot
from browser.streams import XSS, Stream, ToolSpec, hostile_run, sample_run
from toolloop_lab._widget.page import static_page
from toolloop_lab.lab import Reply, Scenario, run_scenarios

pytestmark = pytest.mark.browser


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
        assert page.dialogs == []
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


ROOT_TAGS_FROM_PAYLOADS = "img, script, style, iframe, svg, a, b, [onerror], [onclick], [onload]"
"""Elements and attributes the payloads would create if any were parsed as HTML."""


def test_hostile_text_in_every_field_shows_as_text_and_never_runs(
    browser: Any, tmp_path: Path
) -> None:
    path = tmp_path / "hostile.html"
    path.write_text(static_page(hostile_run()), encoding="utf-8")
    page = open_file(browser, path, width=1200)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="Failed").wait_for()
        for n, title in (("1", "Round 1"), ("2", "Final-answer call")):
            view.locator(f".tl-row[data-n='{n}']").click()
            view.locator(".tl-detail-title", has_text=title).wait_for()
            # open every block and every "Show …" (earlier messages, the pruned original),
            # so every field is drawn
            closed = view.locator(".tl-detail button", has_text=re.compile(r"^Show"))
            for _ in range(50):
                if not closed.count():
                    break
                closed.first.click()
            assert closed.count() == 0
            text = view.inner_text()
            for payload in PAYLOADS:
                assert payload in text, (n, payload)
            assert view.locator(ROOT_TAGS_FROM_PAYLOADS).count() == 0
        shot(view, "static_hostile")
        assert page.dialogs == []
        assert page.errors == []
    finally:
        page.close()


def test_megabyte_fields_are_clipped_on_the_page(browser: Any, tmp_path: Path) -> None:
    big = 1_000_000
    s = Stream().start("read it")
    spec = ToolSpec(
        "i" * big, "n" * big, {"k" * big: "v"}, "c" * big, status="error", reason="q" * big
    )
    s.full_round(1, "t" * big, [spec])
    path = tmp_path / "big.html"
    path.write_text(static_page(s.finish("done", 1).events), encoding="utf-8")
    assert path.stat().st_size < 400_000  # every field clipped before it was embedded
    page = open_file(browser, path, width=1200)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="Finished").wait_for()
        view.locator(".tl-row[data-n='1']").click()
        detail = view.locator(".tl-detail")
        detail.locator(".tl-block", has_text="Tool n").wait_for()
        text = view.inner_text()
        mark = "… (1,000,000 chars)"
        assert "n" * 200 + mark in text  # a name: 200 characters and how long it was
        assert "i" * 100 + mark in text  # an id: 100
        # content: the preview, then "show all" reveals 20,000 characters and the length
        show = detail.get_by_role("button", name=re.compile(r"Show all 20,0\d\d characters"))
        assert show.count() >= 1
        show.first.click()
        shown = view.inner_text()
        assert "c" * 20_000 + mark in shown or "t" * 20_000 + mark in shown
        assert page.evaluate("document.body.innerText.length") < 200_000
        shot(view, "static_megabyte_fields")
        assert page.errors == []
    finally:
        page.close()


def test_a_failed_call_and_its_retry_are_both_shown(browser: Any, tmp_path: Path) -> None:
    """A framework's retry (seen through the bridge) is a new call after a model_call_failed
    of the same round; a call that fails the run says what it raised."""
    s = Stream().start("Where is order A-17?")
    s.round_start(1)
    s.call_start(1)
    s.call_failed(1, "RateLimitError", "slow down", latency=0.4)
    s.call_start(1)
    s.t += 0.6
    s.call_end(1, "Order A-17 ships tomorrow.", ())
    s.round_start(2)
    s.call_start(2)
    s.call_failed(2, "RuntimeError", "upstream returned HTTP 500", latency=0.2)
    path = tmp_path / "retry.html"
    path.write_text(static_page(s.fail(1, message="upstream returned HTTP 500").events), "utf-8")
    page = open_file(browser, path, width=900)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-badge", has_text="Failed").wait_for()
        view.locator(".tl-row[data-n='1']").click()
        view.get_by_text("1 earlier attempt of this call failed (RateLimitError)").wait_for()
        view.locator(".tl-row[data-n='2']").click()
        view.get_by_text("the call failed: RuntimeError: upstream returned HTTP 500").wait_for()
        assert "error" in view.locator(".tl-row[data-n='2']").inner_text()
        assert page.errors == []
    finally:
        page.close()
