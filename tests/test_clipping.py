"""A model controls the length of every field it sends, not only of its text.

A 1 MB tool name, tool-call id, finish reason or invalid-call error (or, from an edited
trace or saved sweep, a 1 MB error kind, reason or type name) must not make a 4 MB
inspector panel or a 4 MB report: every view clips such fields and says so with a
``… (N chars)`` marker, N being the whole length. Content (model text, tool output,
arguments) keeps its preview and "show all", and also says how long it was.

Each test measures what a user gets: the panels' HTML, the text repr, the report file.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import StructuredTool
from test_widget_scenarios import (
    MODEL,
    Scenario,
    no_widget_leaks,  # noqa: F401 - fixture
    run,
    text_of,
    usage_md,
)

from toolloop_lab import AgentConfig
from toolloop_lab.events import Event, LoopFailed, LoopStarted, ToolDispatched
from toolloop_lab.hooks import PausePoint
from toolloop_lab.lab import LabResults, Reply, run_scenarios
from toolloop_lab.lab import Scenario as LabScenario
from toolloop_lab.runview import RunView
from toolloop_lab.usage import Usage
from toolloop_lab.widget import LoopDebugger
from toolloop_lab.widget.html import header_html

pytestmark = pytest.mark.usefixtures("no_widget_leaks")

MB = 1_000_000
MARK = "… (1,000,000 chars)"
ID_CHARS, NAME_CHARS, TEXT_CHARS = 100, 200, 2_000
"""The limits ``toolloop_lab.escape`` sets for ids, names and free text."""
PANELS_BOUND = 60_000
"""Characters all panels of a run with 1 MB fields may take (a few KB of each field)."""


def big(char: str) -> str:
    return char * MB


def clipped(char: str, limit: int) -> str:
    """What a 1 MB field of ``char`` reads as, clipped to ``limit``."""
    return char * limit + MARK


# -- escape.clip ----------------------------------------------------------------------------
def test_clip_keeps_short_text_and_marks_a_cut() -> None:
    from toolloop_lab.escape import clip

    assert clip("short", 10) == "short"
    assert clip("x" * 10, 10) == "x" * 10
    assert clip("x" * 11, 10) == "x" * 10 + "… (11 chars)"
    assert clip("x" * 12_345, 3) == "xxx… (12,345 chars)"
    assert clip(big("y"), None) == big("y")
    assert clip(None, 5) == ""
    assert clip("a\ud800" * 3, 3) == "a\ufffda… (6 chars)"


def test_the_limits_keep_real_names_and_bound_the_rest() -> None:
    from toolloop_lab import escape

    assert (escape.ID_CHARS, escape.NAME_CHARS, escape.TEXT_CHARS) == (
        ID_CHARS,
        NAME_CHARS,
        TEXT_CHARS,
    )
    assert 64 <= ID_CHARS <= NAME_CHARS <= 256  # real ids ~40, names 64 to 128 characters
    assert NAME_CHARS < TEXT_CHARS <= 5_000


# -- the live debugger ------------------------------------------------------------------------


def huge_fields_run() -> Scenario:
    """One round whose tool name, tool-call id, finish reason, invalid-call error and model
    name are 1 MB each; the tool exists (so its own output stays short)."""
    tool = StructuredTool.from_function(lambda: "tool ok", name=big("n"), description="A tool.")
    reply = AIMessage(
        "",
        tool_calls=[{"name": big("n"), "args": {}, "id": big("i"), "type": "tool_call"}],
        invalid_tool_calls=[
            {"name": "bad", "args": "{", "id": "b1", "error": big("e"), "type": "invalid_tool_call"}
        ],
        usage_metadata=usage_md(10, 5),
        response_metadata={"finish_reason": big("f")},
    )
    return Scenario(
        "huge fields",
        [reply, AIMessage("done", usage_metadata=usage_md(10, 5))],
        [tool],
        AgentConfig(),
        model_name=big("m"),
    )


@pytest.fixture
def huge() -> Iterator[LoopDebugger]:
    dbg = LoopDebugger()
    try:
        outcome = run(huge_fields_run(), dbg)
        assert outcome.error is None, outcome.error
        dbg.selected_round = 1
        yield dbg
    finally:
        dbg.close()


def test_a_megabyte_field_gives_bounded_panels(huge: LoopDebugger) -> None:
    sizes = {name: len(value) for name, value in huge.panels.items()}
    assert sum(sizes.values()) < PANELS_BOUND, sizes


def test_clipped_fields_show_the_marker(huge: LoopDebugger) -> None:
    inspector = text_of(huge.panels["inspector"])
    assert f"1. {clipped('n', NAME_CHARS)} · id {clipped('i', ID_CHARS)} · ✓ success" in inspector
    assert f"finish reason {clipped('f', NAME_CHARS)}" in inspector
    assert f"invalid call: {clipped('e', TEXT_CHARS)}" in inspector
    assert f"model {clipped('m', NAME_CHARS)}" in text_of(huge.panels["header"])
    assert f"{clipped('n', NAME_CHARS)} ✓ success" in text_of(huge.panels["timeline"])


def test_show_all_shows_all_content_but_never_a_whole_name(huge: LoopDebugger) -> None:
    huge.show_all = True
    inspector = text_of(huge.panels["inspector"])
    # the invalid call's error message goes back to the model, so it is content: all of it
    assert big("e") in inspector
    assert f"1. {clipped('n', NAME_CHARS)} · id {clipped('i', ID_CHARS)}" in inspector
    assert f"finish reason {clipped('f', NAME_CHARS)}" in inspector
    assert len(huge.panels["inspector"]) < MB + PANELS_BOUND


def test_the_text_repr_is_bounded_too(huge: LoopDebugger) -> None:
    summary = huge.summary()
    assert len(summary) < 2_000
    assert MARK in summary


def test_long_content_says_how_long_it_was() -> None:
    dbg = LoopDebugger(preview_chars=100)
    try:
        reply = AIMessage("t" * 5_000, usage_metadata=usage_md(10, 5))
        run(Scenario("long", [reply], [], AgentConfig()), dbg)
        header = text_of(dbg.panels["header"])
        assert "t" * 100 + "… (5,000 chars)" in header
        assert "tick “show all” to see the rest" in header
        assert "final answer: " + "t" * 200 + "… (5,000 chars)" in dbg.summary()
        dbg.show_all = True
        assert "t" * 5_000 in text_of(dbg.panels["header"])
        assert "(5,000 chars)" not in text_of(dbg.panels["header"])
    finally:
        dbg.close()


def replayed_events() -> list[Event]:
    """What an edited trace may hold: 1 MB in every string field a panel shows."""
    return [
        LoopStarted(
            run_id=big("r"),
            round=0,
            t=0.0,
            model_name=big("m"),
            tools=(big("n"),),
            max_rounds=2,
            token_budget=None,
            context_window=1000,
            usd_limit=None,
            prune_tools=(),
            input_messages=1,
            started_at="2025-01-01T00:00:00+00:00",
        ),
        ToolDispatched(
            run_id=big("r"),
            round=1,
            t=0.1,
            tool_call_id=big("i"),
            name=big("n"),
            args={"k": "v"},
            status="error",
            error_reason=big("q"),
            duration_s=0.0,
            output_chars=2,
            content="no",
        ),
        LoopFailed(
            run_id=big("r"),
            round=1,
            t=0.2,
            error_type=big("T"),
            error_kind=big("K"),
            reason=big("R"),
            message="boom",
            cause_type=big("C"),
            rounds=1,
            usage=Usage(),
            any_invocation_made=True,
            cancelled=False,
            outcome="failed",
        ),
    ]


def test_a_replayed_trace_with_megabyte_fields_gives_bounded_panels() -> None:
    dbg = LoopDebugger.from_trace(replayed_events())
    try:
        dbg.show_all = True
        sizes = {name: len(value) for name, value in dbg.panels.items()}
        assert sum(sizes.values()) < PANELS_BOUND, sizes
        failure = text_of(dbg.panels["failure"])
        for char, field in (("T", "error"), ("K", "kind"), ("R", "reason"), ("C", "cause")):
            assert f"{field} {clipped(char, NAME_CHARS)}" in failure
        inspector = text_of(dbg.panels["inspector"])
        assert f"✗ error: {clipped('q', NAME_CHARS)}" in inspector
        assert f"id {clipped('i', ID_CHARS)}" in inspector
        assert f"run {clipped('r', ID_CHARS)}" in text_of(dbg.panels["header"])
        summary = dbg.summary()
        assert len(summary) < 3_000, len(summary)
        assert MARK in summary
    finally:
        dbg.close()


def test_a_pause_before_many_tool_calls_lists_ten_names() -> None:
    start = replayed_events()[0]
    view = RunView.from_events([start])
    names = (big("n"), *(f"tool_{i}" for i in range(2, 13)))
    view.pause(PausePoint(start.run_id, 1, "tool_dispatch", "tools", names))
    header = text_of(header_html(view, limit=None))
    listed = ", ".join((clipped("n", NAME_CHARS), *(f"tool_{i}" for i in range(2, 11))))
    assert f"before tool dispatch ({listed} and 2 more)" in header
    assert len(header) < 2_000


# -- the HTML report --------------------------------------------------------------------------
REPORT_BOUND = 600_000
"""The report of two small scenarios, four PNG plots included, is about 150 KB."""

_SQUEEZED = "ignore:constrained_layout not applied:UserWarning"


def _edit(item: dict[str, Any]) -> dict[str, Any]:
    """Put 1 MB in each string field a saved sweep's line has that the report shows."""
    if item["type"] == "run":
        return {
            **item,
            "scenario": big("s"),
            "tags": [big("g")],
            "description": big("d"),
            "model_name": big("m"),
            "error_kind": big("K"),
            "error_reason": big("R"),
        }
    event = item.get("event", {})
    if event.get("kind") == "tool_dispatch":
        event = {**event, "name": big("n"), "tool_call_id": big("i"), "error_reason": big("q")}
    return {**item, "event": event} if "event" in item else item


@pytest.fixture(scope="module")
def megabyte_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    sweep = [
        LabScenario.scripted("unknown tool", [Reply.call("nope", {}), Reply.final("done")]),
    ]
    root = tmp_path_factory.mktemp("clip")
    saved = run_scenarios(sweep, progress=False).save(root / "sweep.jsonl")
    lines = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    edited = root / "edited.jsonl"
    edited.write_text("".join(json.dumps(_edit(line)) + "\n" for line in lines), "utf-8")
    path = LabResults.load(edited).write_report(root / "r.html")
    return path.read_text(encoding="utf-8")


@pytest.mark.filterwarnings(_SQUEEZED)
def test_a_megabyte_field_gives_a_bounded_report(megabyte_report: str) -> None:
    assert len(megabyte_report) < REPORT_BOUND, len(megabyte_report)


@pytest.mark.filterwarnings(_SQUEEZED)
def test_the_report_shows_the_marker_for_every_clipped_field(megabyte_report: str) -> None:
    visible = text_of(megabyte_report)
    for char, limit in (("s", NAME_CHARS), ("g", NAME_CHARS), ("m", NAME_CHARS)):
        assert clipped(char, limit) in visible, char
    assert clipped("d", TEXT_CHARS) in visible
    assert f"{clipped('K', NAME_CHARS)}: {clipped('R', NAME_CHARS)}" in visible
    assert f"{clipped('n', NAME_CHARS)} error ({clipped('q', NAME_CHARS)})" in visible


def test_a_long_tool_name_from_the_model_is_clipped_in_the_report() -> None:
    sweep = [
        LabScenario.scripted(
            "long name", [Reply.call(big("n"), {}), Reply.final("done")], model_name=MODEL
        )
    ]
    page = run_scenarios(sweep, progress=False).report_html()
    assert len(page) < REPORT_BOUND
    assert f"<b>{clipped('n', NAME_CHARS)}</b>" in page
