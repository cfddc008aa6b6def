"""The debugger's text summary and static snapshot: what they say of a run's counts, and
how long they are whatever a round holds.

Both are what a person reads where no widget front end runs (a terminal, nbconvert, a
notebook on GitHub), so they say what the browser says: counts some provider did not report
are marked as estimated, in the words file's words and on the browser's condition (the run's
totals are estimated), and a round of thousands of tool calls stays a line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import comm
import pytest
from loopkit import MODEL, MockComm, calls, final, tool_call
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Status, StatusCode, Tracer

from toolloop_lab import LLMAgent, ScriptedChatModel, echo_tool
from toolloop_lab._support.words import TABLES
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.otel import SpanSource

ESTIMATED = TABLES["usage"]["estimated"]
"""The words the browser's header shows beside the totals of a run with estimated counts."""


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@pytest.fixture
def dbg() -> Iterator[LoopDebugger]:
    debugger = LoopDebugger()
    yield debugger
    debugger.close()


@pytest.fixture
def tracer(dbg: LoopDebugger) -> Iterator[Tracer]:
    """Spans read into ``dbg`` as a run (``SpanSource``), as ``watch_spans`` does."""
    provider = TracerProvider()
    provider.add_span_processor(SpanSource(dbg))
    yield provider.get_tracer("test")
    provider.shutdown()


def _agent_span(tracer: Tracer, *, tools: int = 0, failed: frozenset[int] = frozenset()) -> None:
    """One agent span: a chat span that reports output tokens but no input tokens (so its
    usage is estimated), then ``tools`` tool spans (those in ``failed`` end in an error)."""
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.output_tokens": 5,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Check every file."}]}]
        ),
    }
    with tracer.start_as_current_span(
        "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        with tracer.start_as_current_span("chat gpt-4o", attributes=chat):
            pass
        for i in range(tools):
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "check",
                "gen_ai.tool.call.id": f"c{i}",
            }
            with tracer.start_as_current_span("execute_tool check", attributes=attributes) as span:
                if i in failed:
                    span.set_status(Status(StatusCode.ERROR, "no such file"))


# -- estimated counts ---------------------------------------------------------------------


def test_a_run_read_from_spans_without_usage_says_its_counts_are_estimated(
    dbg: LoopDebugger, tracer: Tracer
) -> None:
    _agent_span(tracer)
    assert dbg.view.usage.estimated  # the run's totals, the browser header's condition
    spend = dbg.summary().splitlines()[1]
    assert spend.startswith("tokens ")
    assert spend.endswith(f" · {ESTIMATED}")
    snapshot = dbg.snapshot_html()
    assert re.search(rf"<br>tokens: [^<]* · <i>{re.escape(ESTIMATED)}</i>", snapshot), snapshot


async def test_a_scripted_run_without_usage_is_estimated_and_one_with_usage_is_not() -> None:
    for script, estimated in (
        (["No usage reported."], True),
        ([calls(tool_call("echo", {"text": "x"}, "c1")), final("Counted.")], False),
    ):
        debugger = LoopDebugger()
        try:
            model = ScriptedChatModel(script, model_name=MODEL)
            result = await LLMAgent(model, [echo_tool()], observers=[debugger]).arun("go")
            assert result.usage_estimated is estimated
            assert (ESTIMATED in debugger.summary()) is estimated
            assert (ESTIMATED in debugger.snapshot_html()) is estimated
        finally:
            debugger.close()


# -- a round of many tool calls -----------------------------------------------------------


@pytest.mark.parametrize("tools", [2_000, 12])
def test_a_round_of_many_tool_calls_stays_a_few_lines(
    tools: int, dbg: LoopDebugger, tracer: Tracer
) -> None:
    """One agent span with thousands of tool spans (the outside check had 10,000: a
    120,000-character summary; 2,000 keep this test quick): the text summary and the snapshot list
    the round's first few calls and say how many more there were and how many of those
    failed, so a failure is never left out unsaid."""
    failed = frozenset({tools - 1, tools - 3})  # among the last calls: left out of a long list
    _agent_span(tracer, tools=tools, failed=failed)
    (row,) = [r for r in dbg.view.rounds if r.tools]
    assert len(row.tools) == tools
    summary = dbg.summary()
    line = next(line for line in summary.splitlines() if line.startswith("  round 1:"))
    listed = line.count("check: ")
    assert 0 < listed <= tools
    left = tools - listed
    if left:
        hidden = sum(1 for i in failed if i >= listed)
        assert line.endswith(f"… and {left:,} more tool calls ({hidden} failed)"), line
    else:
        assert "more tool call" not in line
    assert len(summary) < 2_000
    snapshot = dbg.snapshot_html()
    cell = re.search(r"<tr><td>1</td>.*?</tr>", snapshot)
    assert cell is not None
    shown = cell.group().count("check: ")
    assert 0 < shown <= tools
    if tools - shown:
        assert f"… and {tools - shown:,} more tool calls" in cell.group()
    assert len(snapshot) < 6_000


async def test_a_stopped_or_failed_run_reads_in_the_pages_words_in_every_view() -> None:
    """The text view's status and ending say what the page and the snapshot say (the words
    file's "stopped" for a cancelled run, never the code "cancelled"), and an ending whose
    error has no message ends at its last figure, never at an empty ": "."""
    import asyncio

    from toolloop_lab._support.words import STATUS, word

    stopper = LoopDebugger(pause_on="tools")
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "a"}, "c1")), final("done")], model_name=MODEL
    )
    task = stopper.start(LLMAgent(model, [echo_tool()]), "go")
    await stopper.next_pause()
    stopper.stop()
    with pytest.raises(asyncio.CancelledError):
        await task
    text = stopper.summary()
    html = stopper.snapshot_html()
    stopper.close()
    said = word(STATUS, "cancelled")
    assert said != "cancelled"  # the words differ from the code, so the check can fail
    assert text.splitlines()[0].startswith(f"LoopDebugger: {said} ·"), text
    assert f"<b>Agent loop debugger: {said}</b>" in html
    assert f"<b>{said}</b>" in html
    ending = text.splitlines()[-1]
    assert ending.startswith(f"{said}: CancelledError"), ending
    assert not ending.rstrip().endswith(":"), ending
    assert not any(line.startswith("cancelled") for line in text.splitlines()), text
