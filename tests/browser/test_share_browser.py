"""One file to share runs, opened in Debian's chromium with no kernel and no network.

``LoopDebugger.export_html`` writes the file; chromium opens it from disk with every request
intercepted: the page itself is the only one (its module is inside it, imported from a
``blob:``). A run full of hostile text in every field is shown and unfolded: nothing in it
runs (no dialog opens, no element is made of it). The run list finds runs (counts, sort,
search) and shows any run from the events inside the file. Screenshots, light, dark and
600 px wide, go to ``test-artifacts/share_*.png``.

The same kind of file with ten thousand runs, under chromium's four-times CPU throttling,
is ``test_run_list_scale_browser.py``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import comm
import pytest
from loopkit import MockComm

from browser.jupyterkit import layout_problems, on_dialog, shot
from browser.streams import XSS, hostile_run, mixed_session
from toolloop_lab import LoopDebugger

pytestmark = pytest.mark.browser

PAYLOAD_TAGS = "img, script:not([type]), iframe, svg, [onerror], [onclick], [onload]"
"""What the hostile payloads would make in the view if any were parsed as HTML."""


def exported(tmp_path: Path) -> Path:
    """A debugger's file of twelve mixed runs and one with hostile text everywhere."""
    original = comm.create_comm
    comm.create_comm = MockComm  # no kernel here: the debugger's channel goes nowhere
    try:
        dbg = LoopDebugger(max_text_chars=2_000)
        for event in [*mixed_session(12), *hostile_run()]:
            dbg(event)
        path = dbg.export_html(tmp_path / "shared runs.html")
        dbg.close()
    finally:
        comm.create_comm = original
    return path


def open_offline(browser: Any, path: Path, scheme: str, width: int = 1200) -> tuple[Any, list]:
    """The file in a fresh context, every request it makes recorded and refused but its own."""
    context = browser.new_context(viewport={"width": width, "height": 1400}, color_scheme=scheme)
    page = context.new_page()
    page.errors = []
    page.dialogs = []
    page.on("dialog", lambda dialog: on_dialog(page, dialog))
    page.on("pageerror", lambda exc: page.errors.append(f"{exc.message}\n{exc.stack}"))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    requests: list[str] = []

    def intercept(route: Any) -> None:
        url = route.request.url
        requests.append(url)
        if url == path.as_uri():
            route.continue_()
        else:
            route.abort()

    page.route("**/*", intercept)
    context.set_offline(True)
    page.goto(path.as_uri())
    return page, requests


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_an_exported_file_shows_every_run_offline_and_hostile_text_stays_text(
    browser: Any, tmp_path: Path, scheme: str
) -> None:
    path = exported(tmp_path)
    page, requests = open_offline(browser, path, scheme)
    try:
        view = page.locator(".tl-root")
        view.locator(".tl-runs-title", has_text="13 runs").wait_for()
        # the newest run is shown: the hostile one, its question beside its name, as text
        view.locator(".tl-badge", has_text="Failed").wait_for()
        assert view.locator(".tl-question").inner_text().startswith(XSS[:20])
        view.locator(".tl-row[data-n='1']").click()
        detail = view.locator(".tl-detail")
        detail.locator(".tl-detail-title", has_text="Round 1").wait_for()
        for block in detail.locator("details").all():
            block.evaluate("d => { d.open = true; }")
        assert detail.get_by_text(XSS).count() >= 1
        assert view.locator(PAYLOAD_TAGS).count() == 0
        # no kernel: what needs one is not offered, and the page says why
        assert view.get_by_role("button", name="Step").is_hidden()
        assert view.get_by_role("button", name="Fork from here").count() == 0
        view.get_by_text("a file, with no kernel").first.wait_for()

        # the run list: counts per outcome, the tool errors, a sort and a search
        counts = view.locator(".tl-runs-counts")
        failed = counts.locator("button[data-count='failed']")
        assert failed.locator(".tl-count-n").inner_text() == "2"  # run 6 and the hostile one
        tools = counts.locator("button[data-count='tool_errors']")
        assert tools.locator(".tl-count-n").inner_text() == "3"  # runs 4, 9 and the hostile
        tools.click()
        shown = view.locator(".tl-spacer > .tl-run .tl-r-label")
        labels = shown.all_inner_texts()
        assert len(labels) == 3
        assert {"job 4", "job 9"} < set(labels)
        assert view.locator(".tl-runs-shown").inner_text() == "3 of 13 runs shown"
        assert view.locator(".tl-spacer > .tl-run .tl-r-toolerr").count() == 3
        view.get_by_role("button", name="Show every run").click()
        view.locator(".tl-runs-sort").select_option("tokens")
        first = shown.first.inner_text()
        assert first == "job 5", first  # mixed_session's run 5 spent the most tokens
        view.locator(".tl-runs-sort").select_option("duration")
        assert shown.first.inner_text() == "job 3"  # and run 3 took the longest
        view.locator(".tl-runs-order").click()  # smallest first
        assert shown.first.inner_text() == "job 0"
        view.locator(".tl-runs-search").fill("job 3")
        assert shown.all_inner_texts() == ["job 3"]
        # another run, shown from the events inside the file
        view.locator(".tl-spacer > .tl-run").first.click()
        view.locator(".tl-title", has_text="job 3").wait_for()
        view.locator(".tl-question", has_text="How did region 3 do?").wait_for()
        view.locator(".tl-badge", has_text="Finished").wait_for()
        view.get_by_role("button", name="Show every run").click()

        view.scroll_into_view_if_needed()
        shot(page, f"share_{scheme}")
        looks = view.evaluate("el => getComputedStyle(el).backgroundColor")
        dark = looks not in ("rgb(255, 255, 255)",)
        assert dark is (scheme == "dark"), looks
        page.set_viewport_size({"width": 600, "height": 1400})
        page.wait_for_timeout(300)
        assert layout_problems(page) == []
        shot(page, f"share_{scheme}_600px")

        # the page was the only request: the module, its styles and the events are inside
        assert requests == [path.as_uri()], requests
        assert page.dialogs == []
        assert page.errors == []
    except BaseException:
        shot(page, f"share_{scheme}_failure")
        print("\n".join(page.errors))
        raise
    finally:
        page.context.close()


def test_a_file_whose_script_is_blocked_says_it_needs_javascript(
    browser: Any, tmp_path: Path
) -> None:
    path = exported(tmp_path)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(path.as_uri())
        assert "This view needs JavaScript." in page.locator("body").inner_text()
        assert page.locator(PAYLOAD_TAGS).count() == 0  # the payloads are data, never markup
    finally:
        context.close()
