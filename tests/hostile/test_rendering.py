"""Hostile text in every field every view shows: the one rendering-safety suite.

Untrusted text (from a model, a tool, a file, an exception, an edited trace or sweep) must
show as text and never run, in every field, in every view: the live debugger, paused,
replayed, the lab's HTML report and the text repr. The payloads are the one list in
``loopkit.PAYLOADS`` (tags, event handlers breaking out of quoted attributes,
``javascript:`` links, style blocks, SVG and iframe tricks, markup closing our own
containers, text already escaped); lone surrogates and control characters get their own
cases below.

What each view must do with them:

* **The debugger** draws in the browser: Python sends each string as JSON *data*, and the
  ES module puts it on the page with DOM text APIs only. Here: every payload reaches the
  browser byte for byte (so it was neither dropped nor mangled, and nothing upstream turned
  it into markup), the module never calls an API that parses HTML, and the debugger's own
  HTML outputs (the static snapshot) and text repr are escaped. The browser suite
  (``tests/browser``) then opens the same runs in chromium, live, paused, replayed and in the
  report, and checks that no payload ever ran (no ``alert`` dialog, no element made from a
  payload) and that each shows as text.
* **The report** is HTML built in Python: its markup is ours (parsed here, element by
  element), every payload is shown escaped in every field, its only scripts are the ones
  its Content-Security-Policy allows (``tests/lab/test_report.py`` checks that policy), and the
  events its view draws from sit in JSON blocks that no string can close.
* **The text repr** shows control characters as ``\\xNN`` and bidirectional controls as
  ``\\uNNNN`` (the page shows those by the same rule: ``tests/js/mount.test.mjs``).

Names, ids and finish reasons are clipped to a couple of hundred characters in every view
(``tests/test_clipping.py``), so those fields get the payloads in groups that fit: each
payload is still shown, whole, in the field itself.
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

import comm
import matplotlib
import pytest
from browser.streams import hostile_run
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from loopkit import ALL, MODEL, PAYLOADS, MockComm, channel, invalid_call, strings, usage

from toolloop_lab import (
    AgentConfig,
    LLMAgent,
    ScriptedChatModel,
    compare,
    echo_tool,
    file_read_tool,
    fork,
)
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.page import LOADER, module_source
from toolloop_lab.errors import ToolLoopError
from toolloop_lab.lab import LabResults, Reply, Scenario, run_scenarios

matplotlib.use("Agg")

NAME_CHARS = 200
"""Characters of a name (tool, model) or a finish reason every view shows unclipped."""
ID_CHARS = 100
"""Characters of a tool-call id every view shows unclipped."""


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


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
    """Every element and attribute of a page, the text a browser would show (scripts,
    styles and the title aside), and the content of each ``<script>`` block."""

    tags: list[tuple[str, dict[str, str | None]]] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    scripts: list[tuple[dict[str, str | None], str]] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    _raw: str | None = None

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style", "title"):
            self._raw = tag
        if tag == "script":
            self.scripts.append((dict(attrs), ""))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        self._raw = None
        if tag in ("br", "tr", "li", "p", "div"):
            self.text.append("\n")

    def handle_data(self, data: str) -> None:
        if self._raw == "script":
            attrs, body = self.scripts[-1]
            self.scripts[-1] = (attrs, body + data)
        elif self._raw is None:
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


# -- the debugger's own outputs ------------------------------------------------------------
SNAPSHOT_TAGS = {"div", "b", "br", "i", "table", "tr", "th", "td"}


def audit_snapshot(page: str) -> str:
    """The static snapshot: our few tags, no attribute at all, no payload unescaped;
    returns its visible text."""
    assert_no_raw_payload(page, "the snapshot")
    markup = parse(page)
    assert not markup.other, markup.other
    for tag, attrs in markup.tags:
        assert tag in SNAPSHOT_TAGS, f"<{tag}> in the snapshot"
        assert not attrs, (tag, attrs)
    return "".join(markup.text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
"""Every bidirectional control a text view shows as its code: the explicit embeddings,
overrides and isolates (and what ends them), and the implicit marks LRM, RLM and ALM."""
_BIDI = re.compile(f"[{BIDI}]")
SPOOF = "invoice_\u202efdp.exe"
"""A name that reads ``invoice_exe.pdf`` wherever the override is obeyed."""


def audit_text(text: str) -> str:
    """The text repr: no control character that could drive a terminal, no bidirectional
    control that would reorder what a person reads."""
    assert not _CONTROL.search(text), repr(text[:300])
    assert not _BIDI.search(text), ascii(text[:300])
    return text


def sent_strings(dbg: LoopDebugger) -> list[str]:
    """Every string the browser was sent (events, step state, answers) and keeps in the
    saved notebook state."""
    dbg.flush()
    return [*strings(channel(dbg).custom()), *strings(dbg.saved_events)]


def assert_sent_as_data(dbg: LoopDebugger, payloads: tuple[str, ...] = tuple(PAYLOADS)) -> None:
    """Each payload reaches the browser as it was written: a JSON string the module will
    draw as text (not dropped, not escaped into entities, not unescaped)."""
    sent = "\n".join(sent_strings(dbg))
    for payload in payloads:
        assert payload in sent, f"{payload!r} never reached the browser"


def audit_debugger(dbg: LoopDebugger, payloads: tuple[str, ...] = tuple(PAYLOADS)) -> str:
    """Everything the debugger shows: its stream, its snapshot and its text; returns the
    snapshot's and the text repr's visible text."""
    assert_sent_as_data(dbg, payloads)
    snapshot = audit_snapshot(dbg.snapshot_html())
    text = audit_text(dbg.summary())
    bundle, _meta = dbg._repr_mimebundle_()
    assert bundle["text/plain"] == text
    return snapshot + "\n" + text


def test_the_module_renders_text_only() -> None:
    """No API that parses HTML from a string, evaluates code or loads anything remote is
    used anywhere in the front end."""
    js, css = module_source()
    # one source is set, on purpose: an image result drawn from a data: URL the page builds
    # itself from an allow-listed raster MIME type and checked base64 (blocks.js, drawnImage)
    drawn = re.findall(r"\.src=`data:\$\{", js)
    assert len(drawn) == 1, drawn
    js = re.sub(r"\.src=`data:\$\{", ".DRAWN_DATA_URL", js)
    for api in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        "DOMParser",
        "createContextualFragment",
        "srcdoc",
        'setAttribute("on',
        "href",
        "src=",
        "fetch(",
        "XMLHttpRequest",
        "import(",
    ):
        assert api not in js, api
    for thing in ("url(", "@import", "expression("):
        assert thing not in css, thing


# -- live runs: every field --------------------------------------------------------------
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
    payloads: tuple[str, ...] = tuple(PAYLOADS)
    """The payloads the run puts in the field (a model has one name per run)."""
    shown: bool = False
    """The snapshot or the text repr shows this field (so the payload is there, as text)."""


def widget_runs(root: Path) -> dict[str, Run]:
    (root / "<img src=x onerror=alert(1)>.txt").write_text(ALL)
    long_output = ALL + " " + "filler " * 400
    names = [" ".join(g) for g in groups(NAME_CHARS)]
    return {
        "tool-name": Run(
            [_reply("", *(_call(n, {}, f"c{i}") for i, n in enumerate(names))), _reply("done")],
            shown=True,
        ),
        "tool-call-id": Run(
            [
                _reply("", *(_call("echo", {"text": "x"}, " ".join(g)) for g in groups(ID_CHARS))),
                _reply("done"),
            ]
        ),
        "argument-key": Run(  # a key is a name: clipped like one, so in groups
            [_reply("", _call("echo", {" ".join(g): "x" for g in groups(NAME_CHARS)})), _reply("")]
        ),
        "argument-value": Run([_reply("", _call("echo", {"text": ALL})), _reply("done")]),
        "tool-output": Run(
            [_reply("", _call("out", {})), _reply("done")], [_tool("out", lambda: ALL)]
        ),
        "tool-error": Run(
            [_reply("", _call("boom", {})), _reply("done")], [_tool("boom", _raise_all)]
        ),
        "model-text": Run([_reply(ALL, _call("echo", {"text": "x"})), _reply(ALL)], shown=True),
        "invalid-call": Run(
            [
                _reply(
                    "",
                    invalid_tool_calls=[invalid_call(ALL, ALL, "i1", ALL)],
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
            f"model-name-{i}": Run([_reply("done")], model_name=" ".join(g), payloads=g, shown=True)
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
        "exception": Run([_reply("", _call("echo", {"text": "x"})), _failing_error()], shown=True),
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
    debugger = LoopDebugger()
    yield debugger
    debugger.close()


@pytest.mark.parametrize("name", WIDGET_FIELDS)
async def test_live_field(name: str, dbg: LoopDebugger, tmp_path: Path) -> None:
    run = widget_runs(tmp_path)[name]
    model = ScriptedChatModel(run.script, model_name=run.model_name)
    pruner = ScriptedChatModel(run.pruning, model_name=MODEL) if run.pruning else None
    agent = LLMAgent(model, run.tools, run.config, pruning_model=pruner, observers=[dbg])
    try:
        await agent.arun("go")
    except ToolLoopError:
        assert name == "exception"
    assert dbg.view.status in ("finished", "failed")
    visible = audit_debugger(dbg, run.payloads)
    if run.shown:
        assert run.payloads[0] in visible, f"{name}: not shown as text"


async def test_paused_at_a_tool_dispatch_and_before_a_model_call() -> None:
    names = [_call(" ".join(g), {ALL: ALL}, f"c{i}") for i, g in enumerate(groups(NAME_CHARS))]
    tools = [_tool(" ".join(g), lambda **_: ALL) for g in groups(NAME_CHARS)]
    model = ScriptedChatModel([_reply(ALL, *names), RuntimeError(ALL)], model_name=MODEL)
    dbg = LoopDebugger(pause_on="both")
    task = dbg.start(LLMAgent(model, tools), ALL)
    for stage in ("model_call", "tool_dispatch", "model_call"):
        for _ in range(100_000):  # a deadlock guard, not a timing assertion
            if (dbg.paused_at is not None and dbg.paused_at.stage == stage) or task.done():
                break
            await asyncio.sleep(0)
        assert dbg.paused_at is not None
        assert dbg.paused_at.stage == stage
        dbg.redraw()
        point = channel(dbg).custom()[-1]["control"]["paused_at"]
        shown = "\n".join(strings(point))
        for payload in PAYLOADS:  # the prompt, the names, the arguments, the results
            assert payload in shown, (stage, payload)
        visible = audit_text(dbg.summary())
        audit_snapshot(dbg.snapshot_html())
        assert "paused in round" in visible
        dbg.step()
    dbg.pause_on = "off"
    dbg.continue_()
    with pytest.raises(ToolLoopError):
        await task
    visible = audit_debugger(dbg)
    assert PAYLOADS[0] in visible  # the failure's message, as text
    dbg.close()


async def test_replaying_a_hostile_trace(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "hostile.jsonl", hostile_run())
    dbg = LoopDebugger.from_trace(path)
    try:
        assert dbg.live is False
        visible = audit_debugger(dbg)
        assert PAYLOADS[0] in visible
    finally:
        dbg.close()


async def test_replaying_a_trace_with_markup_in_typed_fields(tmp_path: Path) -> None:
    # markup where a number or a fixed word belongs: those lines are skipped, not shown
    good = [json.loads(json.dumps(e.to_dict())) for e in hostile_run()]
    dispatch = next(line for line in good if line["kind"] == "tool_dispatch")
    bad = [
        {**good[0], "max_rounds": PAYLOADS[0]},
        {**dispatch, "status": PAYLOADS[0]},
        {**dispatch, "round": PAYLOADS[1]},
        {"kind": "budget_gate", "run_id": "r", "round": 1, "t": 0.0, "gate": "usd",
         "stage": PAYLOADS[0], "limit": "1", "spent": "0", "passed": True},
    ]  # fmt: skip
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [good[0], *bad, *good[1:]]))
    dbg = LoopDebugger.from_trace(path)
    try:
        visible = audit_debugger(dbg)  # the string fields of the good lines, as data
        assert "4 unreadable trace line(s) skipped" in visible
        sent = "\n".join(sent_strings(dbg))
        assert f'"status": "{PAYLOADS[0]}"' not in sent
    finally:
        dbg.close()


async def test_terminal_repr_shows_control_characters_as_text(dbg: LoopDebugger) -> None:
    ansi = "\x1b[2J\x1b[31mred\x07\r"
    model = ScriptedChatModel([_reply(ansi + ALL)], model_name=ansi)
    await LLMAgent(model, observers=[dbg]).arun("go")
    for text in (repr(dbg), dbg.summary(), dbg._repr_mimebundle_()[0]["text/plain"]):
        assert "\x1b" not in text
        assert "\x07" not in text
        assert "\\x1b[31mred\\x07" in text
    # the browser gets the text as it was (its DOM text shows control characters inertly)
    assert ansi + ALL in "\n".join(sent_strings(dbg))


async def test_lone_surrogates_reach_every_view_as_a_replacement_character(
    dbg: LoopDebugger,
) -> None:
    # half of a UTF-16 pair, as a model cut mid-emoji or a tool decoding badly can send
    calls = (_call("echo\ud800", {}, "c1"), _call("echo", {"text": "in \udc00"}, "c2"))
    model = ScriptedChatModel(
        [_reply("says \ud83d", *calls), _reply("end \ud800")], model_name="model \ud800"
    )
    await LLMAgent(model, [echo_tool()], observers=[dbg]).arun("go \ud800")
    dbg.flush()
    wire = json.dumps(channel(dbg).custom(), ensure_ascii=False).encode("utf-8")  # no surrogate
    for shown in ("says \ufffd", "echo\ufffd", "in \ufffd", "end \ufffd", "model \ufffd"):
        assert shown.encode("utf-8") in wire, shown
    for text in (dbg.summary(), dbg.snapshot_html()):
        text.encode("utf-8")
        assert "end \ufffd" in text


async def test_bidirectional_controls_show_as_codes_in_every_text_view(
    dbg: LoopDebugger,
) -> None:
    """``invoice_\\u202efdp.exe`` reads ``invoice_exe.pdf`` wherever the override is
    obeyed: the text repr, the snapshot and a comparison's text show every bidirectional
    control as its code (``\\u202e``), as they show control characters, while the browser
    gets the text as it was (the page shows them by the same rule, ``tests/js``)."""
    every = f"all {BIDI} end"
    script = [
        _reply(
            f"text {SPOOF}",
            _call(SPOOF, {"text": every}, "c1"),
            _call("echo", {"text": every}, "c2"),
        ),
        _reply(f"final {SPOOF} {every}"),
    ]
    model = ScriptedChatModel(script, model_name=f"model {SPOOF}")
    first = await LLMAgent(model, [echo_tool()], observers=[dbg]).arun(f"go {SPOOF}")
    other = ScriptedChatModel([_reply("other", _call("echo", {"text": "x"}, "c1")), _reply("x")])
    second = await LLMAgent(other, [echo_tool()]).arun("go")
    said = {
        "summary": dbg.summary(),
        "repr": repr(dbg),
        "text/plain": dbg._repr_mimebundle_()[0]["text/plain"],
        "snapshot": audit_snapshot(dbg.snapshot_html()),
        "compare": compare(first, second).summary,
    }
    for where, text in said.items():
        assert not _BIDI.search(text), (where, ascii(text[:400]))
    for where in ("summary", "snapshot"):
        assert "invoice_\\u202efdp.exe" in said[where], where  # the tool's name, its code shown
        assert "model invoice_\\u202efdp.exe" in said[where], where
    assert "final invoice_\\u202efdp.exe" in said["summary"]
    assert "\\u200e\\u200f\\u061c" in said["compare"]  # the reply's diff
    assert SPOOF in "\n".join(sent_strings(dbg))  # data stays as it was


def test_a_comparison_says_why_its_rerun_stopped_with_the_codes_shown() -> None:
    """The note under a fork's (or a what-if's) table quotes the error that stopped it:
    its controls are shown as codes, as in every text view."""
    reply = _reply("", _call("echo", {"text": "x"}))
    source = LLMAgent(ScriptedChatModel([reply, _reply("done")]), [echo_tool()]).run("go")
    broken = ScriptedChatModel([RuntimeError(f"{SPOOF} \x1b[2J")])
    summary = fork(source, 2, model=broken, tools=[echo_tool()]).summary
    audit_text(summary)
    assert "RuntimeError: invoice_\\u202efdp.exe \\x1b[2J" in summary


def test_bidirectional_controls_show_as_codes_in_the_lab_tables_and_report() -> None:
    """A scenario name that reads backwards in a terminal or a page (and one that would
    drive a terminal) is shown with its codes in the spend and turn tables the CLI prints and
    in the report's text."""
    name = f"{SPOOF} \x1b[2J"
    sweep = [
        Scenario.scripted(
            name,
            [
                Reply.call(SPOOF, {"text": BIDI}, text=f"text {SPOOF}"),
                Reply.final(f"final {SPOOF}"),
            ],
            tags=(f"tag {SPOOF}",),
            model_name=f"model {SPOOF}",
        )
    ]
    results = run_scenarios(sweep, progress=False)
    for table in (results.spend_table(), results.turn_table()):
        audit_text(table)
        assert "invoice_\\u202efdp.exe \\x1b[2J" in table
    page = results.report_html()
    shown = "".join(parse(page).text)
    assert not _BIDI.search(shown), ascii([m.start() for m in _BIDI.finditer(shown)][:5])
    for field_text in ("text ", "final ", "tag ", "model ", ""):
        assert f"{field_text}invoice_\\u202efdp.exe" in shown, field_text
    ticks = [t.get_text() for t in results.plot_spend().axes[0].get_xticklabels()]
    assert ticks == ["invoice_\\u202efdp.exe \\x1b[2J"]


# -- the HTML report ----------------------------------------------------------------------

REPORT_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table",
    "thead", "tbody", "tr", "th", "td", "a", "span", "figure", "img", "figcaption",
    "section", "ol", "ul", "li", "b", "pre", "div", "script", "noscript",
}  # fmt: skip


def _raising_tool() -> BaseTool:
    """An importable tool factory: the tool raises with hostile text."""
    return _tool("raiser", _raise_all)


def _big_tool() -> BaseTool:
    return _tool("big", lambda: "quarterly figures " * 300)


def _unreachable_tool() -> BaseTool:
    """A tool factory that fails when a run builds it (a wrong field is refused when the
    scenario is written; this only a run can find), its error naming hostile text."""
    raise RuntimeError(f"tool backend 'builtin {ALL}' is unreachable")


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
        Scenario.scripted("build error", [Reply.final("x")], tools=(_unreachable_tool,)),
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
    "build-error": "tool backend 'builtin ",
    "title": "title ",
}
"""Each field of the report, and the words the report puts before its hostile value."""

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
    # outside the JSON data blocks (checked below: nothing in them can close them)
    markup_only = re.sub(
        r'(<script type="application/json"[^>]*>)[^<]*(</script>)', r"\1\2", report
    )
    assert_no_raw_payload(markup_only, "the report")
    markup = parse(report)
    assert not [o for o in markup.other if not o.startswith("declaration doctype")]
    assert [t for t, _ in markup.tags if t == "style"] == ["style", "style"]  # ours, the view's
    for tag, attrs in markup.tags:
        assert tag in REPORT_TAGS, tag
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        for name, value in attrs.items():
            lowered = (value or "").lower()
            assert "javascript" not in lowered, (tag, name, value)
            assert "alert" not in lowered, (tag, name, value)
        if tag == "a":
            assert set(attrs) == {"href"}
            assert re.fullmatch(r"#scenario-\d+", attrs["href"] or ""), attrs
        if tag == "img":
            assert (attrs["src"] or "").startswith("data:image/png;base64,")


@pytest.mark.filterwarnings(_SQUEEZED)
def test_report_scripts_are_ours_and_its_data_cannot_close_them(report: str) -> None:
    js, _css = module_source()
    data_blocks = 0
    for attrs, body in parse(report).scripts:
        kind = attrs.get("type")
        if kind == "module":
            assert body == LOADER
        elif kind == "text/plain":
            assert (attrs.get("id"), body) == ("toolloop-module", js)
        else:
            assert kind == "application/json", attrs
            assert attrs.get("data-role") in ("events", "options")
            assert "<" not in body  # no string in it can close the block or open a tag
            assert ">" not in body
            json.loads(body)
            data_blocks += 1
    assert data_blocks == 2 * 6  # events and options, one pair per scenario
    # the view draws from the events as they were: each payload reaches it as data
    events = [
        e
        for attrs, body in parse(report).scripts
        if attrs.get("data-role") == "events"
        for e in json.loads(body)
    ]
    shown = "\n".join(strings(events))
    for payload in PAYLOADS:
        assert payload in shown, payload


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


@pytest.mark.filterwarnings(_SQUEEZED)
def test_report_shows_every_payload_escaped_where_it_was_put(report: str) -> None:
    escaped = {p: html.escape(p, quote=True) for p in PAYLOADS}
    first = escaped[PAYLOADS[0]]
    # scenario name: the summary's link text and the timeline's heading
    assert report.count(f"name {first}") >= 2
    # the unknown tool's name and the error message that names it
    assert f"<b>tool {first}" in report
    assert f"Tool &#x27;tool {first}" in report
    # the model error and the model name
    assert f"failure {first}" in report
    assert f"model model {first}" in report
    # a tool that cannot be built lands in the scenario error
    assert f"tool backend &#x27;builtin {first}" in report
    for payload, text in escaped.items():
        assert text in report, payload


@pytest.mark.parametrize("name", ["replies only", "name \ud800 too"])
def test_report_writes_a_lone_surrogate_as_a_replacement_character(
    name: str, tmp_path: Path
) -> None:
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
    for shown in (
        name.replace("\ud800", "\ufffd"),
        "tag \ufffd",
        "says \ufffd",
        "out \ufffd put",
        "final \ufffd answer",
        "<title>title \ufffd</title>",
    ):
        assert shown in text, shown


def test_a_replay_divergence_describes_its_messages_with_the_codes_shown() -> None:
    """A recording that diverges says which message differs, one line per side: the role,
    the call's name and id are shown as every text view shows them (the content was
    already quoted with ``repr``)."""
    from toolloop_lab._replay.recording_file import describe_message

    line = describe_message(
        {
            "role": "ai",
            "content": f"text {SPOOF}",
            "tool_calls": [{"name": SPOOF, "id": "c\u202e1\x1b", "args": {"p": SPOOF}}],
        }
    )
    audit_text(line)
    assert "calls invoice_\\u202efdp.exe#c\\u202e1\\x1b(" in line
