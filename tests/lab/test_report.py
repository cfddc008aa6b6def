"""The HTML report: its content, and its script policy.

Escaping every untrusted string (every field, with the one payload list) is the
rendering-safety suite's job: ``tests/hostile/test_rendering.py``. Here: the report runs
exactly one script, allowed by its hash, which imports the debugger's module from a
``blob:`` URL; everything else is inert data (JSON and text blocks) or markup, with a
``<noscript>`` timeline for readers without scripts, and nothing is loaded from anywhere.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import base64
import hashlib
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolloop_lab._support.words import OUTCOME, SYNTHESIS_REASON, USAGE, word
from toolloop_lab._widget.page import LOADER
from toolloop_lab.lab import LabResults, Reply, Scenario, catalog, run_scenarios
from toolloop_lab.lab._report import CSP, TEXT_LIMIT

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table",
    "thead", "tbody", "tr", "th", "td", "a", "span", "figure", "img", "figcaption",
    "section", "ol", "ul", "li", "b", "pre", "div", "script", "noscript",
}  # fmt: skip
EXECUTABLE_TYPES = {None, "", "module", "text/javascript", "application/javascript"}
"""``<script type>`` values a browser runs (any other type is an inert data block)."""
TITLE = '<script>alert("pwned")</script>'


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text of each <script> block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append((dict(attrs), ""))

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)


def parse(report: str) -> Tags:
    parser = Tags()
    parser.feed(report)
    parser.close()
    return parser


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@pytest.fixture(scope="module")
def results() -> LabResults:
    return run_scenarios(catalog(), progress=False)


@pytest.fixture(scope="module")
def report(results: LabResults) -> str:
    return results.report_html()


def test_the_policy_allows_one_script_by_hash_and_blob_modules_only() -> None:
    directives = {words[0]: words[1:] for words in (d.split() for d in CSP.split(";")) if words}
    assert directives == {
        "default-src": ["'none'"],
        "img-src": ["data:"],
        "style-src": ["'unsafe-inline'"],
        "script-src": [sha256_source(LOADER), "blob:"],
        "base-uri": ["'none'"],
    }


def test_the_page_runs_exactly_the_script_its_policy_allows(report: str) -> None:
    parsed = parse(report)
    metas = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CSP}]
    executable = [(a, text) for a, text in parsed.scripts if a.get("type") in EXECUTABLE_TYPES]
    assert executable == [({"type": "module"}, LOADER)]  # the one script, allowed by hash
    assert sha256_source(executable[0][1]) in CSP
    inert = [a for a, _text in parsed.scripts if a.get("type") not in EXECUTABLE_TYPES]
    assert {a.get("type") for a in inert} == {"application/json", "text/plain"}
    assert [a for a in inert if a.get("type") == "text/plain"] == [
        {"type": "text/plain", "id": "toolloop-module"}  # the module the loader imports
    ]
    assert len([a for a in inert if a.get("type") == "application/json"]) == 2 * len(catalog())
    for attrs, _text in parsed.scripts:
        assert "src" not in attrs  # nothing loaded from anywhere
    assert {tag for tag, _ in parsed.tags} <= ALLOWED_TAGS
    assert parsed.tags.count(("noscript", {})) == len(catalog())  # a static timeline each
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)  # no handler
        for name in ("src", "href", "action", "formaction"):
            value = attrs.get(name) or ""
            assert not value.startswith(("http:", "https:", "//", "javascript:")), (tag, attrs)


def test_long_text_is_cut_before_escaping() -> None:
    text = "x" * (TEXT_LIMIT - 1) + "&<" + "y" * 50
    sweep = [Scenario.scripted("long", [Reply.call("echo", {"text": text}), Reply.final("ok")])]
    report = run_scenarios(sweep, progress=False).report_html()
    # the echoed output: cut after the "&" (whole entity), then how long it was
    assert f"<pre>{'x' * (TEXT_LIMIT - 1)}&amp;… ({len(text):,} chars)</pre>" in report
    assert "y" * 50 not in report


def test_summary_table_lists_every_scenario_with_totals(results: LabResults, report: str) -> None:
    runs = results.runs
    for i, name in enumerate(runs["scenario"]):
        assert f'<a href="#scenario-{i}">{name}</a>' in report
        assert f'<section class="scenario" id="scenario-{i}">' in report
    assert report.count('<section class="scenario"') == len(runs)
    total = f"<td>{runs['prompt_tokens'].sum():,}</td>"
    assert total in report
    assert "<td>7 answered, 2 stopped by the USD limit, 2 failed</td>" in report
    assert f"<td>{OUTCOME['usd_budget_exhausted']}</td>" in report
    assert "cost: budget_exhausted" not in report
    assert '<span class="o o-usd_budget_exhausted">usd_budget_exhausted</span>' in report


def test_plots_are_embedded(report: str) -> None:
    images = re.findall(
        r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', report
    )
    assert [alt for alt, _ in images] == [
        "Token spend per scenario",
        "Cost per round",
        "Pruning savings",
        "Budget gates over rounds",
    ]
    assert all(len(data) > 1_000 for _, data in images)
    assert "http://" not in report
    assert "https://" not in report


def test_timelines_follow_the_runs(results: LabResults, report: str) -> None:
    saved = int(results.runs.set_index("scenario").loc["pruning", "tokens_saved_by_pruning"])
    assert f"saved {saved:,}" in report
    for reason in ("round_cap", "stuck", "token_budget"):  # in the words every view uses
        assert f"Final-answer call ({word(SYNTHESIS_REASON, reason)})" in report
    assert "token gate (after_call): 5,200 tokens of 100 tokens" in report
    assert '<span class="tripped">tripped</span>' in report
    # a USD stop is no failure: it says how far it got, from its events
    stopped = "Stopped by the USD limit after 2 paid calls; round 2&#x27;s reply was not used"
    assert stopped in report
    assert "(config: tool_max_rounds)" in report
    assert "<pre>Final answer from loop</pre>" in report
    assert "Tool &#x27;does_not_exist&#x27; is not available" in report
    assert "no model reply" in report  # model_exception's round 2


def test_report_of_a_loaded_sweep_is_the_same(results: LabResults, tmp_path: Path) -> None:
    loaded = LabResults.load(results.save(tmp_path / "sweep.jsonl"))

    def undated(text: str) -> str:
        return re.sub(r"generated [0-9: -]+UTC", "generated", text)

    assert undated(loaded.report_html()) == undated(results.report_html())


def test_write_report(results: LabResults, tmp_path: Path) -> None:
    path = results.write_report(tmp_path / "r.html", title=f"lab {TITLE}")
    text = path.read_text(encoding="utf-8")
    assert path.is_absolute()
    assert text.startswith("<!doctype html>")
    assert f"<title>lab {html.escape(TITLE)}</title>" in text
    assert TITLE not in text


def test_estimated_counts_are_marked_where_the_report_shows_counts() -> None:
    """A scenario whose model reported no usage: its row of the summary table, the total
    line and its timeline say ``some counts estimated`` (the words the debugger's header
    shows beside a run's totals), and a scenario with reported counts says nothing."""
    said = USAGE["estimated"]
    sweep = [
        Scenario.scripted("guessed", [Reply.final("no usage reported")]),
        Scenario.scripted("counted", [Reply.final("ok", input_tokens=3, output_tokens=2)]),
    ]
    results = run_scenarios(sweep, progress=False)
    assert results.runs["usage_estimated"].tolist() == [True, False]
    report = results.report_html()
    rows = re.findall(r"<tr>.*?</tr>", report.split("<h2>Summary</h2>", 1)[1].split("</table>")[0])
    guessed, counted = (r for r in rows if "#scenario-" in r)
    assert said in guessed
    assert said not in counted
    total = re.search(r'<tr class="total">.*?</tr>', report)
    assert total is not None
    assert said in total.group()
    sections = report.split('<section class="scenario"')[1:]
    assert [said in s.split("</p>", 1)[0] for s in sections] == [True, False]
    exact = run_scenarios(sweep[1:], progress=False).report_html()
    assert said not in re.sub(r"<script.*?</script>", "", exact, flags=re.S)  # the bundle has it
