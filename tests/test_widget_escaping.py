"""Hostile text from models, tools, arguments, tool names, paths and errors stays text.

ipywidgets' HTML widget sets innerHTML unsanitised, so the audit below parses every string
value of every widget in the debugger: HTML values may only hold our own small set of
tags and attributes, and the hostile text must come back out as visible text; no other
widget value may hold untrusted text at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from test_widget_scenarios import (
    WINDOW,
    Scenario,
    all_widgets,
    call_reply,
    final_reply,
    no_widget_leaks,  # noqa: F401 - fixture
    run,
    text_of,
    usage_md,
)

from toolloop_lab import AgentConfig
from toolloop_lab.builtin_tools import echo_tool, file_read_tool
from toolloop_lab.widget import LoopDebugger

pytestmark = pytest.mark.usefixtures("no_widget_leaks")

PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '" onmouseover="alert(1)',
    "' onfocus='alert(1)' autofocus='",
    '<a href="javascript:alert(1)">click me</a>',
    "javascript:alert(1)",
    "<style>*{display:none!important}</style>",
    "<svg/onload=alert(1)>",
    '<iframe srcdoc="&lt;script&gt;alert(1)&lt;/script&gt;"></iframe>',
    "</pre></div></td></tr></table><b onclick=alert(1)>break out</b>",
    "&lt;img src=x onerror=alert(1)&gt;",  # already-escaped text must not be unescaped
]
ALL = "".join(PAYLOADS)
NAME = ALL[:200] + f"… ({len(ALL)} chars)"
"""How ``ALL`` reads as a name or a finish reason: clipped (see tests/test_clipping.py)."""

ALLOWED_TAGS = {"div", "span", "b", "pre", "table", "tr", "td", "th", "br"}
ALLOWED_ATTRS = {"style", "colspan"}


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag <{tag}>")
        for name, value in attrs:
            if name not in ALLOWED_ATTRS:
                self.problems.append(f"attribute {name}= on <{tag}>")
            lowered = (value or "").lower()
            for bad in ("javascript", "url(", "expression", "alert", "<", ">"):
                if bad in lowered:
                    self.problems.append(f"{bad!r} inside {name}= on <{tag}>")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_comment(self, data: str) -> None:
        self.problems.append("comment")

    def handle_decl(self, decl: str) -> None:
        self.problems.append("declaration")

    def handle_pi(self, data: str) -> None:
        self.problems.append("processing instruction")


def audit_html(value: str) -> list[str]:
    parser = _Audit()
    parser.feed(value)
    parser.close()
    return parser.problems


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from strings(v)


def audit(dbg: LoopDebugger) -> str:
    """Fail on any unsafe widget value; return the visible text of all HTML values."""
    visible = []
    for widget in all_widgets(dbg):
        state = widget.get_state()
        is_html = state.get("_model_name") == "HTMLModel"
        for key, value in state.items():
            for text in strings(value):
                if is_html and key == "value":
                    problems = audit_html(text)
                    assert not problems, f"{problems} in {text[:300]!r}"
                    visible.append(text_of(text))
                else:
                    assert "alert(1)" not in text, f"untrusted text in {key}: {text[:200]!r}"
    return "\n".join(visible)


@pytest.fixture
def dbg() -> Iterator[LoopDebugger]:
    debugger = LoopDebugger(preview_chars=50_000)
    yield debugger
    debugger.close()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_tool_output_and_arguments(dbg: LoopDebugger, payload: str) -> None:
    scenario = Scenario(
        "echo",
        [call_reply(1, "echo", {"text": payload}), final_reply("ok", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    run(scenario, dbg)
    dbg.selected_round = 1
    visible = audit(dbg)
    assert f"result\n{payload}" in visible.replace("\n\n", "\n")  # the output, as text
    assert payload.replace('"', '\\"') in visible  # the argument, inside pretty JSON


def test_everything_a_model_or_tool_can_say(dbg: LoopDebugger, tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text(ALL * 20)
    reply = AIMessage(
        content=ALL,
        tool_calls=[
            {"name": ALL, "args": {ALL: ALL}, "id": "<b id=x>", "type": "tool_call"},
            {"name": "file_read", "args": {"path": ALL}, "id": "c2", "type": "tool_call"},
            {"name": "file_read", "args": {"path": "evil.txt"}, "id": "c3", "type": "tool_call"},
        ],
        usage_metadata=usage_md(10, 5),
        response_metadata={"finish_reason": ALL},
    )
    scenario = Scenario(
        "everything",
        [reply, AIMessage(ALL, usage_metadata=usage_md(10, 5))],
        [file_read_tool(tmp_path)],
        AgentConfig(
            tool_max_rounds=1,
            context_window=WINDOW,
            prune_tools=("file_read",),
            prune_min_chars=100,
            synthesis_prompt=ALL,
        ),
        pruning_script=[AIMessage(ALL, usage_metadata=usage_md(50, 5))],
        model_name=ALL,
    )
    outcome = run(scenario, dbg)
    assert outcome.error is None, outcome.error
    for number in (1, 2):  # the round with its tools and pruning, then the synthesis
        dbg.selected_round = number
        dbg.show_all = number == 1
        visible = audit(dbg)
        for payload in PAYLOADS:
            assert payload in visible
    assert "model " + NAME in text_of(dbg.panels["header"])
    dbg.selected_round = 1
    inspector = text_of(dbg.panels["inspector"])
    assert f"1. {NAME}" in inspector  # the tool name
    assert f"finish reason {NAME}" in inspector
    assert "id <b id=x>" in inspector  # the tool-call id
    assert f"'{ALL}' is not allowed" in inspector or ALL in inspector  # the path, refused


def test_error_messages_and_types(dbg: LoopDebugger) -> None:
    evil_type = type("<img src=x onerror=alert(1)>", (ConnectionError,), {})
    error = RuntimeError(ALL)
    error.__cause__ = evil_type("boom")
    scenario = Scenario(
        "raises",
        [call_reply(1, "echo", {"text": ALL}), error],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    outcome = run(scenario, dbg)
    assert outcome.error is not None
    visible = audit(dbg)
    failure = text_of(dbg.panels["failure"])
    assert "cause <img src=x onerror=alert(1)>" in failure
    for payload in PAYLOADS:
        assert payload in failure
    assert ALL in visible


async def test_pause_header_and_task_errors(dbg: LoopDebugger) -> None:
    scenario = Scenario(
        "paused",
        [call_reply(1, ALL, {"text": "x"}), final_reply("ok", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    dbg.pause_on = "tools"
    task = dbg.start(scenario.agent(), "go")
    for _ in range(20_000):
        if dbg.paused_at is not None:
            break
        await asyncio.sleep(0.0005)
    assert dbg.paused_at is not None
    assert f"before tool dispatch ({NAME})" in audit(dbg)
    dbg.continue_()
    await task

    with pytest.raises(ValueError, match="onerror"):
        await dbg.start(Broken(), "go")
    visible = audit(dbg)
    assert f"the run raised ValueError: {ALL}" in visible
    assert f"note: the run raised ValueError: {ALL[:20]}" in repr(dbg)


class Broken:
    """An agent (the debugger's protocol) whose run fails before any event."""

    observers = ()

    def subscribe(self, callback: Any) -> Any:
        return lambda: None

    def add_pause_hook(self, hook: Any) -> Any:
        return lambda: None

    async def arun(self, prompt: Any) -> None:
        raise ValueError(ALL)


class _Unprintable(RuntimeError):
    def __str__(self) -> str:
        raise ValueError("a broken __str__")


class BrokenMessage(Broken):
    """An agent whose run fails with an exception that cannot even print itself."""

    async def arun(self, prompt: Any) -> None:
        raise _Unprintable()


async def test_a_task_error_with_a_broken_message_still_shows(dbg: LoopDebugger) -> None:
    with pytest.raises(_Unprintable):
        await dbg.start(BrokenMessage(), "go")
    assert "the run raised _Unprintable: <unprintable _Unprintable>" in audit(dbg)
    assert "note: the run raised _Unprintable: <unprintable _Unprintable>" in repr(dbg)


def test_a_lone_surrogate_shows_as_a_replacement_character(dbg: LoopDebugger) -> None:
    # a str holding half a UTF-16 pair cannot be sent to the frontend (nor printed) as UTF-8
    scenario = Scenario(
        "surrogate",
        [
            call_reply(1, "echo", {"text": "out \udfff put"}, text="says \ud83d"),
            final_reply("final \ud800 answer", 2),
        ],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
        model_name="model \udc00",
    )
    run(scenario, dbg)
    dbg.selected_round = 1
    for value in dbg.panels.values():
        value.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate
    visible = audit(dbg)
    for shown in ("says \ufffd", "out \ufffd put", "final \ufffd answer", "model \ufffd"):
        assert shown in visible, shown
    summary = dbg.summary()
    assert summary.encode("utf-8")
    assert "final answer: final \ufffd answer" in summary
