"""Hostile text in every field the live debugger and the HTML report show.

Payloads: tags, event-handler attributes breaking out of quoted attributes, ``javascript:``
links, ``<style>`` blocks, SVG and iframe tricks, markup that closes our own containers, and
text that is already escaped. For each field, the run puts every payload there and the
audit asserts, on every widget value (``LoopDebugger``) or on the report (``lab/report.py``):

* the raw payload never appears;
* parsed with ``html.parser``, the HTML holds only our own elements and attributes: no
  element, attribute or URL scheme from a payload exists;
* the payload *is* shown, as text (so the field really was rendered and escaped, not
  dropped); already-escaped text stays as it was written.

Names, ids and finish reasons are clipped to a couple of hundred characters in every view
(tests/test_clipping.py), so those fields get the payloads in groups that fit: each
payload is still shown, escaped, in the field itself.

Related cases elsewhere: tests/test_widget_escaping.py (the debugger, several fields in
one run), tests/test_report.py (the report).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib
import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from loopkit import MODEL, usage
from test_widget_scenarios import all_widgets

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, ToolLoopError
from toolloop_lab.builtin_tools import echo_tool, file_read_tool
from toolloop_lab.events import Event, LoopStarted, ToolDispatched
from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios
from toolloop_lab.trace import write_trace
from toolloop_lab.widget import LoopDebugger

matplotlib.use("Agg")

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '" onmouseover="alert(1)',
    "' onfocus='alert(1)' autofocus='",
    '<a href="javascript:alert(1)">click me</a>',
    "javascript:alert(1)",
    "<style>*{display:none!important}</style>",
    "<svg/onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    "</pre></td></tr></table></div><b onclick=alert(1)>out</b>",
    "&lt;b&gt;already escaped&lt;/b&gt;",
]
ALL = " ".join(PAYLOADS)
NAME_CHARS = 200
"""Characters of a name (tool, model) or a finish reason every view shows unclipped."""
ID_CHARS = 100
"""Characters of a tool-call id every view shows unclipped."""


def groups(limit: int) -> list[tuple[str, ...]]:
    """The payloads in as few groups as fit ``limit`` characters each, joined by spaces."""
    out = [(PAYLOADS[0],)]
    for payload in PAYLOADS[1:]:
        if len(" ".join((*out[-1], payload))) <= limit:
            out[-1] = (*out[-1], payload)
        else:
            out.append((payload,))
    return out


UNSAFE_VALUES = ("javascript", "alert", "expression(", "url(", "<", ">")


@dataclass
class Markup(HTMLParser):
    """Every element and attribute of a page, and the text a browser would show."""

    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    _style: bool = False

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._style = tag == "style"

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self._style = False
        if tag == "br":
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._style:
            self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.other.append("comment")

    def handle_decl(self, decl: str) -> None:
        self.other.append(f"declaration {decl}")

    def handle_pi(self, data: str) -> None:
        self.other.append("processing instruction")


def parse(page: str) -> Markup:
    markup = Markup()
    markup.feed(page)
    markup.close()
    return markup


def assert_no_raw_payload(text: str, where: str) -> None:
    """No payload that escaping changes appears unescaped (plain ``javascript:alert(1)``
    is harmless text; the attribute checks keep it out of any URL)."""
    for payload in PAYLOADS:
        if html.escape(payload, quote=True) != payload:
            assert payload not in text, f"raw payload {payload!r} in {where}"


# -- the live debugger --------------------------------------------------------------------

WIDGET_TAGS = {"div", "span", "b", "pre", "table", "tr", "td", "th", "br"}
WIDGET_ATTRS = {"style", "colspan"}


def audit_widgets(dbg: LoopDebugger) -> str:
    """Check every value of every widget; return the visible text of the HTML ones."""
    visible: list[str] = []
    for widget in all_widgets(dbg):
        state = widget.get_state()
        is_html = state.get("_model_name") == "HTMLModel"
        for key, value in state.items():
            for text in _strings(value):
                assert_no_raw_payload(text, f"{type(widget).__name__}.{key}")
                if not (is_html and key == "value"):
                    # labels, descriptions, options: our own words and numbers only
                    assert "alert(1)" not in text, f"untrusted text in {key}: {text[:200]!r}"
                    continue
                markup = parse(text)
                assert not markup.other, markup.other
                for tag, attrs in markup.tags:
                    assert tag in WIDGET_TAGS, f"<{tag}> in {text[:300]!r}"
                    for name, attr in attrs.items():
                        assert name in WIDGET_ATTRS, f"{name}= on <{tag}>"
                        lowered = (attr or "").lower()
                        assert not [u for u in UNSAFE_VALUES if u in lowered], (name, attr)
                visible.append("".join(markup.text))
    return "\n".join(visible)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _reply(text: str = "", *calls_: dict[str, Any], **fields: Any) -> AIMessage:
    return AIMessage(
        text, tool_calls=[{**c, "type": "tool_call"} for c in calls_], usage_metadata=usage(10, 5)
    ).model_copy(update=fields)


def _call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id}


def _tool(name: str, func: Callable[..., Any]) -> BaseTool:
    return StructuredTool.from_function(func, name=name, description="A tool.")


def _raise_all() -> str:
    raise RuntimeError(ALL)


EVIL_TYPE = type("<img src=x onerror=alert(1)>", (ConnectionError,), {})


def _failing_error() -> RuntimeError:
    error = RuntimeError(ALL)
    error.__cause__ = EVIL_TYPE("cause")
    return error


@dataclass
class Run:
    """One field made hostile: the script, tools and settings of its run."""

    script: list[Any]
    tools: list[BaseTool] = field(default_factory=lambda: [echo_tool()])
    config: AgentConfig = field(default_factory=lambda: AgentConfig(tool_max_rounds=3))
    model_name: str = MODEL
    pruning: list[Any] | None = None
    json_shown: bool = False
    """The payload is shown inside pretty JSON (quotes escaped as JSON does)."""
    payloads: tuple[str, ...] = tuple(PAYLOADS)
    """The payloads the run puts in the field (a model has one name per run)."""


def widget_runs(root: Path) -> dict[str, Run]:
    (root / "<img src=x onerror=alert(1)>.txt").write_text(ALL)
    long_output = ALL + " " + "filler " * 400
    names = [" ".join(g) for g in groups(NAME_CHARS)]
    return {
        "tool-name": Run(
            [_reply("", *(_call(n, {}, f"c{i}") for i, n in enumerate(names))), _reply("done")]
        ),
        "tool-call-id": Run(
            [
                _reply("", *(_call("echo", {"text": "x"}, " ".join(g)) for g in groups(ID_CHARS))),
                _reply("done"),
            ]
        ),
        "argument-key": Run(
            [_reply("", _call("echo", {ALL: "x"})), _reply("done")], json_shown=True
        ),
        "argument-value": Run([_reply("", _call("echo", {"text": ALL})), _reply("done")]),
        "tool-output": Run(
            [_reply("", _call("out", {})), _reply("done")], [_tool("out", lambda: ALL)]
        ),
        "tool-error": Run(
            [_reply("", _call("boom", {})), _reply("done")], [_tool("boom", _raise_all)]
        ),
        "model-text": Run([_reply(ALL, _call("echo", {"text": "x"})), _reply(ALL)]),
        "invalid-call": Run(
            [
                _reply(
                    "",
                    invalid_tool_calls=[
                        {
                            "name": ALL,
                            "args": ALL,
                            "id": "i1",
                            "error": ALL,
                            "type": "invalid_tool_call",
                        }
                    ],
                ),
                _reply("done"),
            ]
        ),
        "finish-reason": Run(
            [
                *(
                    _reply(
                        "t", _call("echo", {"text": "x"}), response_metadata={"finish_reason": n}
                    )
                    for n in names
                ),
                _reply("done"),
            ],
            config=AgentConfig(tool_max_rounds=len(names) + 1),
        ),
        **{
            f"model-name-{i}": Run([_reply("done")], model_name=" ".join(g), payloads=g)
            for i, g in enumerate(groups(NAME_CHARS), start=1)
        },
        "synthesis-prompt": Run(
            [_reply("", _call("echo", {"text": "x"})), _reply("final")],
            config=AgentConfig(tool_max_rounds=1, synthesis_prompt=ALL),
        ),
        "pruning": Run(
            [_reply("", _call("big", {})), _reply("done")],
            [_tool("big", lambda: long_output)],
            AgentConfig(prune_tools=("big",), prune_min_chars=100),
            pruning=[
                AIMessage(ALL, usage_metadata=usage(50, 5), response_metadata={"model_name": ALL})
            ],
        ),
        "exception": Run([_reply("", _call("echo", {"text": "x"})), _failing_error()]),
        "file-path": Run(
            [
                _reply(
                    "",
                    _call("file_read", {"path": ALL}, "f1"),
                    _call("file_read", {"path": "<img src=x onerror=alert(1)>.txt"}, "f2"),
                ),
                _reply("done"),
            ],
            [file_read_tool(root)],
        ),
    }


WIDGET_FIELDS = [
    "tool-name",
    "tool-call-id",
    "argument-key",
    "argument-value",
    "tool-output",
    "tool-error",
    "model-text",
    "invalid-call",
    "finish-reason",
    *(f"model-name-{i}" for i in range(1, len(groups(NAME_CHARS)) + 1)),
    "synthesis-prompt",
    "pruning",
    "exception",
    "file-path",
]


@pytest.fixture
def dbg() -> Iterator[LoopDebugger]:
    debugger = LoopDebugger(preview_chars=100_000)
    yield debugger
    debugger.close()


def _audit_every_round(dbg: LoopDebugger) -> str:
    seen = [audit_widgets(dbg)]
    for row in dbg.view.rounds:
        dbg.selected_round = row.number
        dbg.show_all = True
        seen.append(audit_widgets(dbg))
    return "\n".join(seen)


def _assert_shown(
    visible: str, json_shown: bool = False, payloads: tuple[str, ...] = tuple(PAYLOADS)
) -> None:
    for payload in payloads:
        shown = json.dumps(payload, ensure_ascii=False)[1:-1] if json_shown else payload
        assert shown in visible, f"{payload!r} is not shown as text"


@pytest.mark.parametrize("name", WIDGET_FIELDS)
async def test_widget_field(name: str, dbg: LoopDebugger, tmp_path: Path) -> None:
    run = widget_runs(tmp_path)[name]
    model = ScriptedChatModel(run.script, model_name=run.model_name)
    pruner = ScriptedChatModel(run.pruning, model_name=MODEL) if run.pruning else None
    agent = LLMAgent(model, run.tools, run.config, pruning_model=pruner, observers=[dbg])
    try:
        await agent.arun("go")
    except ToolLoopError:
        assert name == "exception"
    assert dbg.view.status in ("finished", "failed")
    _assert_shown(_audit_every_round(dbg), run.json_shown, run.payloads)


async def test_widget_pause_detail_and_failure_panel(dbg: LoopDebugger) -> None:
    names = [_call(" ".join(g), {}, f"c{i}") for i, g in enumerate(groups(NAME_CHARS))]
    model = ScriptedChatModel([_reply("", *names), RuntimeError(ALL)], model_name=MODEL)
    dbg.pause_on = "tools"
    task = dbg.start(LLMAgent(model, [echo_tool()]), "go")
    for _ in range(100_000):  # a deadlock guard, not a timing assertion
        if dbg.paused_at is not None or task.done():
            break
        await asyncio.sleep(0)
    assert dbg.paused_at is not None
    _assert_shown(audit_widgets(dbg))  # "paused before tool dispatch (<the tool names>)"
    dbg.pause_on = "off"
    dbg.continue_()
    with pytest.raises(ToolLoopError):
        await task
    visible = _audit_every_round(dbg)
    _assert_shown(visible)
    assert "Failed in round 2 · error RuntimeError" in visible  # the failure panel


def _hostile_events() -> list[Event]:
    """A run whose every string field an edited trace could hold is a payload."""
    return [
        LoopStarted(
            run_id=ALL,
            round=0,
            t=0.0,
            model_name=ALL,
            tools=(ALL,),
            max_rounds=2,
            token_budget=None,
            context_window=1000,
            usd_limit=None,
            prune_tools=(ALL,),
            input_messages=1,
            started_at=ALL,
        ),
        ToolDispatched(
            run_id=ALL,
            round=1,
            t=0.1,
            tool_call_id=ALL,
            name=ALL,
            args={ALL: ALL},
            status="error",
            error_reason=ALL,
            duration_s=0.0,
            output_chars=len(ALL),
            content=ALL,
        ),
    ]


async def test_widget_replaying_a_hostile_trace(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "hostile.jsonl", _hostile_events())
    dbg = LoopDebugger.from_trace(path, preview_chars=100_000)
    try:
        _assert_shown(_audit_every_round(dbg))
    finally:
        dbg.close()


async def test_widget_replaying_a_trace_with_markup_in_typed_fields(tmp_path: Path) -> None:
    # markup where a number or a fixed word belongs: those lines are skipped, not shown
    good = [json.loads(json.dumps(e.to_dict())) for e in _hostile_events()]
    bad = [
        {**good[0], "max_rounds": PAYLOADS[0]},
        {**good[1], "status": PAYLOADS[0]},
        {**good[1], "round": PAYLOADS[1]},
        {"kind": "budget_gate", "run_id": "r", "round": 1, "t": 0.0, "gate": "usd",
         "stage": PAYLOADS[0], "limit": "1", "spent": "0", "passed": True},
    ]  # fmt: skip
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [good[0], *bad, good[1]]))
    dbg = LoopDebugger.from_trace(path, preview_chars=100_000)
    try:
        visible = _audit_every_round(dbg)
        assert "4 unreadable trace line(s) skipped" in visible
        _assert_shown(visible)  # the string fields of the good lines, as text
    finally:
        dbg.close()


async def test_terminal_repr_shows_control_characters_as_text(dbg: LoopDebugger) -> None:
    ansi = "\x1b[2J\x1b[31mred\x07\r"
    model = ScriptedChatModel([_reply(ansi + ALL)], model_name=ansi)
    await LLMAgent(model, observers=[dbg]).arun("go")
    for text in (repr(dbg), dbg.summary(), (dbg._repr_mimebundle_() or {}).get("text/plain", "")):
        assert "\x1b" not in text
        assert "\x07" not in text
        assert "\\x1b[31mred\\x07" in text


# -- the HTML report ----------------------------------------------------------------------

REPORT_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table",
    "thead", "tbody", "tr", "th", "td", "a", "span", "figure", "img", "figcaption",
    "section", "ol", "ul", "li", "b", "pre", "div",
}  # fmt: skip


def _raising_tool() -> BaseTool:
    """An importable tool factory: the tool raises with hostile text."""
    return _tool("raiser", _raise_all)


def _big_tool() -> BaseTool:
    return _tool("big", lambda: "quarterly figures " * 300)


def report_sweep(root: Path) -> tuple[list[Scenario], str]:
    (root / "<img src=x onerror=alert(1)>.txt").write_text(f"file content {ALL}")
    scenarios = [
        Scenario.scripted(
            f"name {ALL}",
            [
                Reply.call(
                    "echo",
                    {"text": f"arg {ALL}"},
                    text=f"text {ALL}",
                    input_tokens=5,
                    output_tokens=2,
                ),
                Reply.call(f"tool {ALL}", {}, input_tokens=5, output_tokens=2),
                Reply.final(f"final {ALL}", input_tokens=5, output_tokens=2),
            ],
            model_name=f"model {ALL}",
            tags=(f"tag {ALL}", "ok"),
            description=f"description {ALL}",
        ),
        Scenario.scripted("provider failure", [Reply.failure(f"failure {ALL}")]),
        Scenario.scripted(
            "tool error",
            [Reply.call("raiser", {}), Reply.final("ok")],
            tools=(_raising_tool,),
        ),
        Scenario.scripted(
            "file paths",
            [
                Reply.call("file_read", {"path": f"/{ALL}"}),
                Reply.call("file_read", {"path": "<img src=x onerror=alert(1)>.txt"}),
                Reply.final("ok"),
            ],
            tools=("file_read",),
            data_dir=str(root),
        ),
        Scenario.scripted(
            "pruning",
            [Reply.call("big", {}), Reply.final("ok")],
            tools=(_big_tool,),
            config=AgentConfig(prune_tools=("big",), prune_min_chars=100),
            pruning_replies=[Reply.final(f"pruned {ALL}", input_tokens=50, output_tokens=5)],
        ),
        Scenario.scripted("bad tool name", [Reply.final("x")], tools=(f"builtin {ALL}",)),
    ]
    return scenarios, f"title {ALL}"


REPORT_FIELDS = {
    "scenario-name": "name ",
    "tags": "tag ",
    "description": "description ",
    "model-name": "model ",
    "model-text": "text ",
    "final-answer": "final ",
    "tool-name": "tool ",
    "arguments": "arg ",
    "model-failure": "failure ",
    "tool-error": "tool 'raiser' raised RuntimeError: ",
    "file-path": "absolute paths are not allowed: '/",
    "file-content": "file content ",
    "pruned-text": "pruned ",
    "build-error": "unknown built-in tool 'builtin ",
    "title": "title ",
}


# Long hostile scenario names squeeze the plots' axes; matplotlib says so, which is fine.
_SQUEEZED = "ignore:constrained_layout not applied:UserWarning"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("report-data")
    scenarios, title = report_sweep(root)
    results = run_scenarios(scenarios, progress=False)
    page = results.report_html(title=title)
    # a saved and loaded sweep renders the same, escaping included
    loaded = LabResults.load(results.save(root / "sweep.jsonl")).report_html(title=title)
    assert _undated(loaded) == _undated(page)
    return page


def _undated(page: str) -> str:
    return re.sub(r"generated [0-9: -]+UTC", "generated", page)


@pytest.mark.filterwarnings(_SQUEEZED)
def test_report_has_only_its_own_markup(report: str) -> None:
    assert_no_raw_payload(report, "the report")
    markup = parse(report)
    assert not [o for o in markup.other if not o.startswith("declaration doctype")]
    assert [t for t, _ in markup.tags if t == "style"] == ["style"]
    for tag, attrs in markup.tags:
        assert tag in REPORT_TAGS, tag
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        for name, value in attrs.items():
            lowered = (value or "").lower()
            assert "javascript" not in lowered, (tag, name, value)
            assert "alert" not in lowered, (tag, name, value)
        if tag == "a":
            assert set(attrs) == {"href"}
            assert (attrs["href"] or "").startswith("#scenario-")
        if tag == "img":
            assert (attrs["src"] or "").startswith("data:image/png;base64,")


@pytest.mark.filterwarnings(_SQUEEZED)
@pytest.mark.parametrize("name", list(REPORT_FIELDS))
def test_report_field(name: str, report: str) -> None:
    visible = "".join(parse(report).text)
    prefix = REPORT_FIELDS[name]
    shown = prefix + PAYLOADS[0]
    if name == "arguments":  # inside JSON text
        shown = json.dumps(shown)[1:-1]
    assert shown in visible, f"{name}: {shown!r} is not shown as text"
    assert html.escape(PAYLOADS[0], quote=True) in report
