"""Each panel's widget values after the spec's scripted runs show the right figures.

Expected figures come from the scripts (token counts) and from genai-prices (costs),
never from the RunView the widget draws from, so a wrong fold or a wrong panel fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from IPython.lib.pretty import pretty
from ipywidgets import embed
from test_widget_scenarios import (
    PRUNED,
    REPORT,
    WINDOW,
    Scenario,
    all_widgets,
    call_reply,
    final_reply,
    model_exception,
    no_widget_leaks,  # noqa: F401 - fixture
    price,
    pruning,
    round_cap,
    run,
    single_round,
    table_rows,
    text_of,
    timeline,
    token_budget,
    unknown_tool,
    usd_trip,
)

from toolloop_lab import AgentConfig
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.pruning import text_tokens
from toolloop_lab.widget import LoopDebugger
from toolloop_lab.widget import figures as fig

pytestmark = pytest.mark.usefixtures("no_widget_leaks")


@pytest.fixture
def dbg() -> Iterator[LoopDebugger]:
    debugger = LoopDebugger()
    yield debugger
    debugger.close()


def header(d: LoopDebugger) -> str:
    return " ".join(text_of(d.panels["header"]).split())


def gauges(d: LoopDebugger) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in table_rows(d.panels["gauges"])}


# -- figures --------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("amount", "text"),
    [
        ("0", "$0"),
        ("0.0000117", "$0.0000117"),
        ("0.00000855", "$0.00000855"),
        ("0.007224", "$0.007224"),
        ("12.3456", "$12.35"),
        ("1234567.891", "$1,234,567.89"),
    ],
)
def test_usd_keeps_four_significant_digits(amount: str, text: str) -> None:
    assert fig.usd(Decimal(amount)) == text


def test_unpriced_is_never_zero() -> None:
    assert fig.usd(None) == "unpriced"


# -- spec scenarios -----------------------------------------------------------------------
def test_single_round_panels(dbg: LoopDebugger) -> None:
    outcome = run(single_round(), dbg)
    assert outcome.error is None
    top = header(dbg)
    assert "● FINISHED" in top
    assert "round 2 of 10" in top
    assert "model gpt-4o-mini" in top
    assert "Final answer Final answer from loop" in top
    rows = timeline(dbg)
    assert [r["Round"] for r in rows] == ["round 1", "round 2"]
    assert (rows[0]["Tokens in"], rows[0]["Tokens out"]) == ("12", "6")
    assert (rows[1]["Tokens in"], rows[1]["Tokens out"]) == ("14", "7")
    assert rows[0]["Cost (incl. pruning)"] == fig.usd(price(12, 6))
    assert rows[1]["Cost (incl. pruning)"] == fig.usd(price(14, 7))
    assert rows[0]["Tool calls"] == "echo ✓ success"
    assert rows[1]["Tool calls"] == "none"
    assert rows[1]["Note"] == "final answer"
    assert rows[0]["Gates"] == rows[1]["Gates"] == ""
    g = gauges(dbg)
    assert g["Tokens"][1:] == ["39 tokens · no token budget", "token gate off"]
    assert g["USD"][1:] == [
        f"{fig.usd(price(12, 6) + price(14, 7))} · no USD limit",
        "USD gate off",
    ]
    assert g["Context (last call)"][1:] == ["14 / 10,000 (0.1%)", "within the window"]
    assert dbg.panels["pruning"] == ""
    assert dbg.panels["failure"] == ""


def test_round_cap_synthesis_panels(dbg: LoopDebugger) -> None:
    scenario = round_cap()
    run(scenario, dbg)
    top = header(dbg)
    assert "round 1 of 1" in top
    assert "synthesis (round_cap)" in top
    assert "Final answer Let me call the tool again (2)." in top
    rows = timeline(dbg)
    assert [r["Round"] for r in rows] == ["round 1", "synthesis"]
    assert rows[1]["Note"] == "synthesis: round_cap · final answer"
    # the newest row is inspected by default: the synthesis call and its prompt
    inspector = text_of(dbg.panels["inspector"])
    assert "Synthesis · reason round_cap · model call 14 in / 7 out" in inspector
    assert scenario.config.synthesis_prompt in inspector


def test_token_budget_panels(dbg: LoopDebugger) -> None:
    run(token_budget(), dbg)
    # 1% of a 10,000-token window; the first call alone spends 5,200
    g = gauges(dbg)
    assert g["Tokens"][1:] == ["5,221 / 100 tokens (5221.0%)", "token gate TRIPPED"]
    rows = timeline(dbg)
    assert rows[0]["Gates"] == "tokens ✗ TRIPPED"
    assert rows[0]["Tool calls"] == "echo ✗ error: token_budget"
    assert rows[1]["Round"] == "synthesis"
    assert rows[1]["Note"] == "synthesis: token_budget · final answer"
    assert "Final answer Budget exhausted answer" in header(dbg)


def test_pruning_panels(dbg: LoopDebugger, tmp_path: Path) -> None:
    run(pruning(tmp_path), dbg)
    saved = text_tokens(REPORT) - text_tokens(PRUNED)
    net = saved - (900 + 40)
    assert saved > 1_000
    assert net > 0
    panel = " ".join(text_of(dbg.panels["pruning"]).split())
    assert (
        f"1 output pruned · saved {saved:,} tokens · pruning calls spent 940 tokens · "
        f"net saving {net:,} tokens" in panel
    )
    assert f"{text_tokens(REPORT):,} → {text_tokens(PRUNED):,} tokens" in panel
    assert PRUNED in panel
    assert REPORT[:200] in text_of(dbg.panels["pruning"])
    assert REPORT not in text_of(dbg.panels["pruning"])  # cut to the preview
    rows = timeline(dbg)
    assert rows[0]["Pruning saved"] == f"saved {saved:,} · net {net:,}"
    # the round's cost includes the pruning call
    assert rows[0]["Cost (incl. pruning)"] == fig.usd(price(12, 6) + price(900, 40))
    assert gauges(dbg)["Tokens"][1] == f"{12 + 6 + 14 + 7 + 940:,} tokens · no token budget"


def test_unknown_tool_panels(dbg: LoopDebugger) -> None:
    run(unknown_tool(), dbg)
    rows = timeline(dbg)
    assert rows[0]["Tool calls"] == "does_not_exist ✗ error: not_available"
    dbg.selected_round = 1
    inspector = text_of(dbg.panels["inspector"])
    assert "1. does_not_exist · id call_1 · ✗ error: not_available" in inspector
    assert "Tool 'does_not_exist' is not available. Available tools: echo." in inspector


def test_model_exception_failure_panel(dbg: LoopDebugger) -> None:
    outcome = run(model_exception(), dbg)
    assert outcome.error is not None
    assert "● FAILED" in header(dbg)
    failure = " ".join(text_of(dbg.panels["failure"]).split())
    assert "Failed in round 2 · error RuntimeError · cause ConnectionError" in failure
    assert "Partial counts: rounds 1 · tokens 12 in / 6 out" in failure
    assert f"cost {fig.usd(price(12, 6))} · model invoked yes" in failure
    assert "message provider exploded" in failure
    assert timeline(dbg)[1]["Note"] == "stopped: failed"


def test_usd_budget_trip_panels(dbg: LoopDebugger) -> None:
    scenario = usd_trip()
    assert scenario.usd_limit is not None
    run(scenario, dbg)
    spent = price(12, 6) + price(14, 7)
    g = gauges(dbg)
    assert g["USD"][1].startswith(f"{fig.usd(spent)} / {fig.usd(scenario.usd_limit)}")
    assert g["USD"][2] == "USD gate TRIPPED"
    rows = timeline(dbg)
    assert rows[0]["Gates"] == "USD ✓ passed"
    assert rows[1]["Gates"] == "USD ✗ TRIPPED"
    failure = " ".join(text_of(dbg.panels["failure"]).split())
    assert "error ExecutionError · kind cost · reason budget_exhausted" in failure
    assert "Partial counts: rounds 1 · tokens 26 in / 13 out" in failure
    assert f"cost {fig.usd(spent)}" in failure


# -- inspector, pager, size ---------------------------------------------------------------
def test_inspector_cuts_long_content_until_show_all() -> None:
    long_text = "A" * 5_000 + "THE-END"
    scenario = Scenario(
        "long",
        [call_reply(1, args={"text": long_text}), final_reply("ok", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )
    dbg = LoopDebugger(preview_chars=500)
    try:
        run(scenario, dbg)
        dbg.selected_round = 1
        cut = text_of(dbg.panels["inspector"])
        assert "THE-END" not in cut
        assert "AAAA… (5,007 chars)\ntick “show all” to see the rest" in cut  # the result
        assert '"text": "AAAA' in cut  # arguments as pretty JSON
        dbg.show_all = True
        full = text_of(dbg.panels["inspector"])
        assert full.count("THE-END") == 2  # the argument and the echoed result
        assert "show all" not in full
        assert "chars)" not in full
    finally:
        dbg.close()


def many_rounds(n: int) -> Scenario:
    script = [call_reply(i, args={"text": "x" * 3_000}, text=f"round {i}") for i in range(1, n + 1)]
    script.append(final_reply("done", n + 1))
    return Scenario("many", script, [echo_tool()], AgentConfig(tool_max_rounds=n + 1))


def test_pager_keeps_the_table_to_one_page() -> None:
    dbg = LoopDebugger(page_size=5)
    try:
        run(many_rounds(12), dbg)
        assert [r["Round"] for r in timeline(dbg)] == [f"round {i}" for i in range(9, 14)]
        assert dbg.panels["pager"] == "rows 9 to 13 of 13 · following the newest"
        assert (
            dbg.panels["picker"] == "newest | round 9 | round 10 | round 11 | round 12 | round 13"
        )
        dbg._older.click()
        assert [r["Round"] for r in timeline(dbg)] == [f"round {i}" for i in range(4, 9)]
        dbg._older.click()
        assert dbg.panels["pager"] == "rows 1 to 5 of 13"
        assert dbg._older.disabled
        dbg._newer.click()
        assert dbg.panels["pager"] == "rows 6 to 10 of 13"
        dbg._pick.value = 7  # as the frontend would set it
        assert dbg.selected_round == 7
        assert "Round 7" in text_of(dbg.panels["inspector"])
        dbg._latest.click()
        assert dbg.panels["pager"] == "rows 9 to 13 of 13 · following the newest"
        assert dbg.panels["picker"].startswith("newest | round 7 | round 9")  # kept selected
    finally:
        dbg.close()


def test_widget_state_of_a_200_round_run_stays_under_1_mb() -> None:
    dbg = LoopDebugger()
    try:
        outcome = run(many_rounds(200), dbg)
        assert outcome.error is None
        assert dbg.view.tool_rounds == 201
        saved = len(json.dumps(embed.dependency_state(dbg, drop_defaults=True)).encode())
        full = len(json.dumps(LoopDebugger.get_manager_state(widgets=all_widgets(dbg))).encode())
        print(f"\nwidget state for 201 rounds: {saved:,} bytes (drop_defaults), {full:,} full")
        assert full < 1_000_000
        assert saved < 1_000_000
        assert len(table_rows(dbg.panels["timeline"])) == 1 + dbg.page_size  # bounded DOM
        dbg.show_all = True  # one round shown whole still fits
        full = len(json.dumps(LoopDebugger.get_manager_state(widgets=all_widgets(dbg))).encode())
        assert full < 1_000_000
    finally:
        dbg.close()


# -- text repr ----------------------------------------------------------------------------
def test_text_repr_for_frontends_without_widgets(dbg: LoopDebugger, tmp_path: Path) -> None:
    run(pruning(tmp_path), dbg)
    text = repr(dbg)
    lines = text.splitlines()
    assert lines[0].startswith("LoopDebugger: finished · round 2 of 10 · model gpt-4o-mini")
    assert "round 1: 12 in / 6 out" in text
    assert "file_read: success" in text
    assert "final answer: Pruned answer" in text
    assert "pruning: saved" in text
    assert len(lines) < 15
    bundle = dbg._repr_mimebundle_()
    assert bundle["text/plain"] == text
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert pretty(dbg) == text


def test_text_repr_makes_control_characters_visible() -> None:
    scenario = Scenario(
        "ansi",
        [call_reply(1), final_reply("\x1b[2J\x1b[31mred\x07", 2)],
        [echo_tool()],
        AgentConfig(),
    )
    dbg = LoopDebugger()
    try:
        run(scenario, dbg)
        text = repr(dbg)
        assert "\x1b" not in text
        assert "\x07" not in text
        assert "final answer: \\x1b[2J\\x1b[31mred\\x07" in text
    finally:
        dbg.close()


def test_observer_attached_twice_counts_each_event_once(tmp_path: Path) -> None:
    once, twice = LoopDebugger(), LoopDebugger()
    try:
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        run(pruning(tmp_path / "a"), once)
        run(pruning(tmp_path / "b"), twice, twice)
        assert gauges(twice) == gauges(once)
        drop = "Latency"
        assert [{k: v for k, v in r.items() if k != drop} for r in timeline(twice)] == [
            {k: v for k, v in r.items() if k != drop} for r in timeline(once)
        ]
        assert twice.view.events == once.view.events
    finally:
        once.close()
        twice.close()
