"""The HTML report: its content, and that every untrusted string comes out escaped."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from toolloop_lab.lab import LabResults, Reply, Scenario, catalog, run_scenarios
from toolloop_lab.lab.report import CSP, TEXT_LIMIT

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = '<script>alert("pwned")</script>'
JS_LINK = '<a href="javascript:alert(1)">click me</a>'
STYLE = "<style>body{display:none}</style>"
PAYLOADS = (IMG, SCRIPT, JS_LINK, STYLE)

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table",
    "thead", "tbody", "tr", "th", "td", "a", "span", "figure", "img", "figcaption",
    "section", "ol", "ul", "li", "b", "pre", "div",
}  # fmt: skip


class Tags(HTMLParser):
    """Collects every start tag with its attributes, and the text of <style> blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def parse(report: str) -> Tags:
    parser = Tags()
    parser.feed(report)
    parser.close()
    return parser


def hostile_sweep() -> list[Scenario]:
    return [
        Scenario.scripted(
            f"evil {STYLE}",
            [
                Reply.call("echo", {"text": IMG}, text=JS_LINK, input_tokens=5, output_tokens=2),
                Reply.call(SCRIPT, {"x": STYLE}, input_tokens=6, output_tokens=2),
                Reply.final(f"final {STYLE} {SCRIPT}", input_tokens=7, output_tokens=3),
            ],
            tags=(SCRIPT, "ok"),
            description=JS_LINK,
        ),
        Scenario.scripted(
            "exploding provider",
            [Reply.failure(f"upstream said {IMG} {JS_LINK}")],
            model_name=f"model {SCRIPT}",
        ),
        Scenario.scripted("bad tool", [Reply.final("x")], tools=(IMG,)),
    ]


@pytest.fixture(scope="module")
def hostile() -> str:
    return run_scenarios(hostile_sweep(), progress=False).report_html()


@pytest.fixture(scope="module")
def results() -> LabResults:
    return run_scenarios(catalog(), progress=False)


@pytest.fixture(scope="module")
def report(results: LabResults) -> str:
    return results.report_html()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payloads_come_out_escaped(hostile: str, payload: str) -> None:
    assert payload not in hostile
    assert html.escape(payload, quote=True) in hostile


def test_hostile_payloads_reach_every_place_they_were_put(hostile: str) -> None:
    escaped = {p: html.escape(p, quote=True) for p in PAYLOADS}
    # scenario name, summary link text and timeline heading
    assert hostile.count(f"evil {escaped[STYLE]}") >= 2
    # the tool's output and its arguments
    assert hostile.count(escaped[IMG]) >= 3
    # the unknown tool's name and the error message that names it
    assert f"<b>{escaped[SCRIPT]}</b>" in hostile
    assert f"Tool &#x27;{escaped[SCRIPT]}&#x27; is not available" in hostile
    # the model error, the model name and the tags
    assert f"upstream said {escaped[IMG]} {escaped[JS_LINK]}" in hostile
    assert f"model model {escaped[SCRIPT]}" in hostile
    assert f"<td>{escaped[SCRIPT]}, ok</td>" in hostile
    # a bad built-in tool name lands in the scenario error
    assert f"unknown built-in tool &#x27;{escaped[IMG]}&#x27;" in hostile


def test_hostile_report_has_only_our_own_markup(hostile: str) -> None:
    parsed = parse(hostile)
    names = [tag for tag, _ in parsed.tags]
    assert set(names) <= ALLOWED_TAGS
    assert names.count("style") == 1
    assert "script" not in names
    for tag, attrs in parsed.tags:
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        if tag == "a":
            assert re.fullmatch(r"#scenario-\d+", attrs["href"] or ""), attrs
        if tag == "img":
            assert (attrs["src"] or "").startswith("data:image/png;base64,")
    assert "display:none" not in "".join(parsed.styles)
    assert 'href="javascript:' not in hostile


def test_content_security_policy_forbids_scripts(hostile: str) -> None:
    parsed = parse(hostile)
    metas = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert metas == [{"http-equiv": "Content-Security-Policy", "content": CSP}]
    assert "default-src 'none'" in CSP
    assert "script-src" not in CSP


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
    assert "<td>4 failed</td>" in report
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
    assert "Synthesis (reason: round_cap)" in report
    assert "Synthesis (reason: stuck)" in report
    assert "Synthesis (reason: token_budget)" in report
    assert "token gate (after_call): 5,200 tokens of 100 tokens" in report
    assert '<span class="tripped">tripped</span>' in report
    assert "(cost: budget_exhausted)" in report
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
    path = results.write_report(tmp_path / "r.html", title=f"lab {SCRIPT}")
    text = path.read_text(encoding="utf-8")
    assert path.is_absolute()
    assert text.startswith("<!doctype html>")
    assert f"<title>lab {html.escape(SCRIPT)}</title>" in text
    assert SCRIPT not in text


@pytest.mark.parametrize("name", ["replies only", "name \ud800 too"])
def test_a_lone_surrogate_is_written_as_a_replacement_character(name: str, tmp_path: Path) -> None:
    # half of a UTF-16 pair, as a model cut mid-emoji or a tool decoding badly can send;
    # in a scenario name it also reaches the plots
    sweep = [
        Scenario.scripted(
            name,
            [
                Reply.call("echo", {"text": "out \udfff put"}, text="says \ud83d"),
                Reply.final("final \ud800 answer"),
            ],
            tags=("tag \udc00",),
        )
    ]
    results = run_scenarios(sweep, progress=False)
    path = results.write_report(tmp_path / "r.html", title="title \ud800")
    text = path.read_bytes().decode("utf-8")  # strict: no surrogate was written
    page = results.report_html()
    assert page.encode("utf-8")  # the string a notebook displays encodes too
    assert "final \ufffd answer" in page
    for shown in (
        name.replace("\ud800", "\ufffd"),
        "tag \ufffd",
        "says \ufffd",
        "out \ufffd put",
        "final \ufffd answer",
        "<title>title \ufffd</title>",
    ):
        assert shown in text, shown
