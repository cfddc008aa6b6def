"""The lab's frames against the catalog's known scripted usage: exact tokens and costs.

Expected figures are computed here from the scenarios' own scripts and from genai-prices'
``calc_price`` directly, not through toolloop_lab's pricing module.
"""

from __future__ import annotations

import asyncio
import math
from decimal import Decimal

import genai_prices
import pandas as pd
import pytest
from langchain_core.messages import HumanMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import BaseTool
from loopkit import calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, PausePoint, ScriptedChatModel
from toolloop_lab._support.words import USAGE
from toolloop_lab.events import Event, Paused
from toolloop_lab.lab import (
    VOLATILE_COLUMNS,
    LabResults,
    Reply,
    Scenario,
    ScenarioRun,
    ScriptedModel,
    catalog,
    drop_volatile,
    run_scenarios,
    sample_data_dir,
)
from toolloop_lab.lab._builtin_scenarios import PRUNING_REPLY

MODEL = "gpt-4o-mini"

# How many scripted replies each catalog scenario consumes, and whether pruning runs.
CONSUMED = {
    "single_round": (2, False),
    "multi_round": (3, False),
    "round_cap": (2, False),
    "token_budget": (2, False),
    "stuck_model": (4, False),
    "pruning": (2, True),
    "unknown_tool": (2, False),
    "model_exception": (1, False),
    "bad_config": (0, False),
    "usd_budget": (2, False),
    "pruning_skipped_after_budget": (1, False),
}

EXPECTED = {
    # scenario: (outcome, rounds, synthesis_reason, error_kind, error_reason)
    "single_round": ("final_answer", 2, None, None, None),
    "multi_round": ("final_answer", 3, None, None, None),
    "round_cap": ("synthesis", 1, "round_cap", None, None),
    "token_budget": ("token_budget_exhausted", 1, "token_budget", None, None),
    "stuck_model": ("synthesis", 3, "stuck", None, None),
    "pruning": ("final_answer", 2, None, None, None),
    "unknown_tool": ("final_answer", 2, None, None, None),
    "model_exception": ("failed", 1, None, "loop", "RuntimeError"),
    "bad_config": ("failed", 0, None, "config", "tool_max_rounds"),
    "usd_budget": ("usd_budget_exhausted", 1, None, "cost", "budget_exhausted"),
    "pruning_skipped_after_budget": (
        "usd_budget_exhausted",
        0,
        None,
        "cost",
        "budget_exhausted",
    ),
}


def price(input_tokens: int, output_tokens: int) -> Decimal:
    usage = genai_prices.Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return genai_prices.calc_price(usage, model_ref=MODEL).total_price


def replies(scenario: Scenario) -> tuple[Reply, ...]:
    assert isinstance(scenario.model, ScriptedModel)
    return scenario.model.replies


def consumed(scenario: Scenario) -> list[Reply]:
    n, _ = CONSUMED[scenario.name]
    used = [r for r in replies(scenario)[:n] if r.raises is None]
    assert all(r.input_tokens is not None for r in used)
    return used


def text_tokens(text: str) -> int:
    return count_tokens_approximately(
        [HumanMessage(text)], extra_tokens_per_message=0, count_name=False
    )


@pytest.fixture(scope="module")
def scenarios() -> dict[str, Scenario]:
    return {s.name: s for s in catalog()}


@pytest.fixture(scope="module")
def results(scenarios: dict[str, Scenario]) -> LabResults:
    return run_scenarios(scenarios.values(), progress=False)


@pytest.fixture(scope="module")
def runs(results: LabResults) -> pd.DataFrame:
    return results.runs.set_index("scenario")


def test_catalog_covers_every_spec_behaviour(scenarios: dict[str, Scenario]) -> None:
    assert set(scenarios) == set(EXPECTED)


def test_one_row_per_scenario_in_the_given_order(results: LabResults) -> None:
    assert list(results.runs["scenario"]) == [s.name for s in catalog()]
    assert results.runs.index.equals(pd.RangeIndex(len(EXPECTED)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_outcome_rounds_and_errors(runs: pd.DataFrame, name: str) -> None:
    outcome, rounds, synthesis, kind, reason = EXPECTED[name]
    row = runs.loc[name]
    assert row["outcome"] == outcome
    assert row["rounds"] == rounds
    assert (None if pd.isna(row["synthesis_reason"]) else row["synthesis_reason"]) == synthesis
    assert bool(row["synthesis_was_run"]) is (synthesis is not None)
    assert (None if pd.isna(row["error_kind"]) else row["error_kind"]) == kind
    assert (None if pd.isna(row["error_reason"]) else row["error_reason"]) == reason
    assert pd.isna(row["error"]) is (kind is None)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_exact_token_sums_and_cost(
    runs: pd.DataFrame, scenarios: dict[str, Scenario], name: str
) -> None:
    used = consumed(scenarios[name])
    prompt = sum(r.input_tokens or 0 for r in used)
    completion = sum(r.output_tokens or 0 for r in used)
    cost = sum((price(r.input_tokens or 0, r.output_tokens or 0) for r in used), Decimal(0))
    pruning_tokens = 0
    if CONSUMED[name][1]:
        pruning_tokens = (PRUNING_REPLY.input_tokens or 0) + (PRUNING_REPLY.output_tokens or 0)
        cost += price(PRUNING_REPLY.input_tokens or 0, PRUNING_REPLY.output_tokens or 0)
    row = runs.loc[name]
    assert row["prompt_tokens"] == prompt
    assert row["completion_tokens"] == completion
    assert row["pruning_tokens"] == pruning_tokens
    assert row["total_tokens"] == prompt + completion + pruning_tokens
    assert row["model_calls"] == len(used) + (1 if CONSUMED[name][1] else 0)
    assert row["cost_usd"] == float(cost)
    assert bool(row["cost_known"]) is True
    assert bool(row["usage_estimated"]) is False


def test_known_totals_of_the_whole_catalog(runs: pd.DataFrame) -> None:
    # Written out by hand from the scripts: call n uses 10+2n in, 5+n out.
    assert runs.loc["multi_round", "prompt_tokens"] == 12 + 14 + 16
    assert runs.loc["multi_round", "completion_tokens"] == 6 + 7 + 8
    assert runs.loc["token_budget", "prompt_tokens"] == 5_000 + 14
    assert runs.loc["pruning", "pruning_tokens"] == 900 + 40
    assert runs.loc["model_exception", "prompt_tokens"] == 12
    assert runs.loc["stuck_model", "prompt_tokens"] == 12 + 14 + 16 + 18
    assert runs["prompt_tokens"].sum() == 5_270
    assert runs["completion_tokens"].sum() == 335


def test_pruning_savings_use_the_same_yardstick_on_both_texts(runs: pd.DataFrame) -> None:
    original = (sample_data_dir() / "report.txt").read_text(encoding="utf-8")
    saved = text_tokens(original) - text_tokens(PRUNING_REPLY.text)
    assert saved > 1_000
    assert runs.loc["pruning", "tokens_saved_by_pruning"] == saved
    assert runs.loc["pruning", "net_tokens_saved"] == saved - 940
    others = runs.drop(index="pruning")
    assert (others["tokens_saved_by_pruning"] == 0).all()
    assert runs.loc["pruning_skipped_after_budget", "pruning_tokens"] == 0


def test_tool_calls_and_errors(runs: pd.DataFrame) -> None:
    assert runs.loc["multi_round", "tool_calls"] == 2
    assert runs.loc["multi_round", "tool_errors"] == 0
    assert runs.loc["unknown_tool", "tool_errors"] == 1
    # The token budget tripped before dispatch: the call is answered as not run.
    assert runs.loc["token_budget", "tool_errors"] == 1


def test_budget_flags(runs: pd.DataFrame) -> None:
    tripped = set(runs.index[runs["budget_exhausted"]])
    assert tripped == {"token_budget", "usd_budget", "pruning_skipped_after_budget"}


def test_final_text_only_for_finished_runs(runs: pd.DataFrame) -> None:
    assert runs.loc["single_round", "final_text"] == "Final answer from loop"
    assert runs.loc["token_budget", "final_text"] == "Budget exhausted answer"
    assert pd.isna(runs.loc["model_exception", "final_text"])


def test_runs_dtypes(results: LabResults) -> None:
    dtypes = results.runs.dtypes
    for column in (
        "rounds",
        "prompt_tokens",
        "completion_tokens",
        "pruning_tokens",
        "tokens_saved_by_pruning",
        "total_tokens",
    ):
        assert dtypes[column] == "int64", column
    assert dtypes["cost_usd"] == "float64"
    for column in ("cost_known", "budget_exhausted", "synthesis_was_run", "usage_estimated"):
        assert dtypes[column] == "bool", column
    assert isinstance(dtypes["outcome"], pd.CategoricalDtype)
    assert list(dtypes["outcome"].categories) == [
        "final_answer",
        "synthesis",
        "token_budget_exhausted",
        "usd_budget_exhausted",
        "failed",
        "cancelled",
        "interrupted",
    ]
    assert dtypes["error_kind"] == "string"
    assert dtypes["duration_s"] == "float64"
    assert (results.runs["duration_s"] > 0).all()


def test_rounds_frame_per_round_tokens_and_cumulative_cost(results: LabResults) -> None:
    rounds = results.rounds
    multi = rounds[rounds["scenario"] == "multi_round"]
    assert list(multi["round"]) == [1, 2, 3]
    assert list(multi["prompt_tokens"]) == [12, 14, 16]
    assert list(multi["completion_tokens"]) == [6, 7, 8]
    costs = [price(12, 6), price(14, 7), price(16, 8)]
    assert list(multi["cost_usd"]) == [float(c) for c in costs]
    assert list(multi["cumulative_cost_usd"]) == [
        float(costs[0]),
        float(costs[0] + costs[1]),
        float(sum(costs, Decimal(0))),
    ]
    assert list(multi["cumulative_tokens"]) == [18, 39, 63]
    assert list(multi["tool_calls"]) == [1, 1, 0]
    assert list(multi["stuck"]) == [False, False, False]  # new arguments each round
    stuck = rounds[rounds["scenario"] == "stuck_model"]
    assert list(stuck["stuck"]) == [False, True, True, False]  # the same call, repeated


def test_rounds_frame_marks_synthesis_and_pruning(results: LabResults) -> None:
    rounds = results.rounds.set_index(["scenario", "round"])
    assert rounds.loc[("round_cap", 2), "purpose"] == "synthesis"
    assert rounds.loc[("round_cap", 2), "synthesis_reason"] == "round_cap"
    assert rounds.loc[("stuck_model", 4), "synthesis_reason"] == "stuck"
    pruned = rounds.loc[("pruning", 1)]
    assert pruned["pruning_tokens"] == 940
    assert pruned["total_tokens"] == 12 + 6 + 940
    assert pruned["cost_usd"] == float(price(12, 6) + price(900, 40))
    assert pruned["tokens_saved_by_pruning"] > 1_000
    assert rounds.loc[("pruning", 2), "tokens_saved_by_pruning"] == 0


def test_rounds_frame_gate_results(results: LabResults, scenarios: dict[str, Scenario]) -> None:
    rounds = results.rounds.set_index(["scenario", "round"])
    token = rounds.loc[("token_budget", 1)]
    assert token["token_gate"] == "tripped"
    assert token["token_spent"] == 5_200
    assert token["token_limit"] == 100
    assert token["usd_gate"] == "off"
    first, second = (price(12, 6), price(14, 7))
    limit = scenarios["usd_budget"].usd_limit
    assert limit == first + second / 2
    usd1, usd2 = rounds.loc[("usd_budget", 1)], rounds.loc[("usd_budget", 2)]
    assert (usd1["usd_gate"], usd2["usd_gate"]) == ("passed", "tripped")
    assert usd1["usd_spent"] == float(first)
    assert usd2["usd_spent"] == float(first + second)
    assert usd2["usd_limit"] == float(limit)
    skipped = rounds.loc[("pruning_skipped_after_budget", 1)]
    assert skipped["usd_gate"] == "tripped"
    assert skipped["pruning_tokens"] == 0
    assert rounds.loc[("single_round", 1), "token_gate"] == "off"
    assert pd.isna(rounds.loc[("single_round", 1), "token_spent"])


def test_rounds_add_up_to_runs(results: LabResults) -> None:
    runs = results.runs.set_index("scenario")
    per_round = results.rounds.groupby("scenario", observed=True).sum(numeric_only=True)
    for column in ("prompt_tokens", "completion_tokens", "pruning_tokens", "total_tokens"):
        for name, value in per_round[column].items():
            assert value == runs.loc[name, column], (name, column)
    assert "bad_config" not in per_round.index  # refused before round 1
    for name, value in per_round["cost_usd"].items():
        assert math.isclose(value, runs.loc[name, "cost_usd"], rel_tol=1e-12)


def test_model_exception_keeps_partial_round(results: LabResults) -> None:
    rounds = results.rounds.set_index(["scenario", "round"])
    failed = rounds.loc[("model_exception", 2)]
    assert failed["prompt_tokens"] == 0
    assert failed["failed_calls"] == 1
    assert failed["latency_s"] >= 0  # how long the call took to fail
    assert results.rounds["failed_calls"].sum() == 1  # no other catalog call raised


def test_events_frame(results: LabResults) -> None:
    events = results.events
    assert list(events.columns) == [
        "scenario",
        "variant",
        "repeat",
        "turn",
        "seq",
        "run_id",
        "kind",
        "round",
        "t",
        "event",
    ]
    assert (events["turn"] == 1).all()  # the catalog's scenarios are one turn each
    per = events.groupby("scenario", observed=True)
    assert per.size().sum() == sum(len(r.events) for r in results.records)
    bad = events[events["scenario"] == "bad_config"]
    assert list(bad["kind"]) == ["loop_failure"]
    single = events[events["scenario"] == "single_round"]
    kinds = list(single["kind"])
    assert (kinds[0], kinds[-1]) == ("loop_start", "loop_finish")
    assert list(single["seq"]) == list(range(len(single)))
    assert all(e.kind == k for e, k in zip(single["event"], single["kind"], strict=True))
    runs = results.runs.set_index("scenario")
    assert set(single["run_id"]) == {runs.loc["single_round", "run_id"]}


def test_frames_are_copies(results: LabResults) -> None:
    runs = results.runs
    runs.loc[0, "prompt_tokens"] = -1
    assert results.runs.loc[0, "prompt_tokens"] != -1


def test_unpriced_model_is_nan_with_cost_known_false() -> None:
    scenario = Scenario.scripted(
        "unpriced",
        [Reply.final("hi", input_tokens=3, output_tokens=2)],
        model_name="a-model-nobody-prices",
    )
    results = run_scenarios([scenario], progress=False)
    row = results.runs.iloc[0]
    assert bool(row["cost_known"]) is False
    assert math.isnan(row["cost_usd"])
    assert row["prompt_tokens"] == 3
    assert "unknown" in results.spend_table()


def test_estimated_usage_is_flagged() -> None:
    scenario = Scenario.scripted("estimated", [Reply.final("no usage reported")])
    row = run_scenarios([scenario], progress=False).runs.iloc[0]
    assert bool(row["usage_estimated"]) is True
    assert row["prompt_tokens"] > 0


def test_empty_sweep_has_typed_empty_frames() -> None:
    results = run_scenarios([], progress=False)
    assert len(results) == 0
    assert results.runs.empty
    assert results.runs["cost_usd"].dtype == "float64"
    assert results.rounds.empty
    assert results.events.empty


# -- turns, tools and times --------------------------------------------------------------
SHARED = [
    "outcome",
    "rounds",
    "model_calls",
    "prompt_tokens",
    "completion_tokens",
    "pruning_tokens",
    "total_tokens",
    "tokens_saved_by_pruning",
    "net_tokens_saved",
    "tool_calls",
    "tool_errors",
    "cost_usd",
    "cost_known",
    "usage_estimated",
    "budget_exhausted",
    "synthesis_was_run",
    "synthesis_reason",
    "error_kind",
    "error_reason",
    "error",
    "final_text",
    "elapsed_s",
    "model_latency_s",
    "run_id",
]


def test_a_one_turn_scenarios_turn_row_is_its_scenario_row(results: LabResults) -> None:
    turns = results.turns
    assert list(turns["scenario"]) == [r.scenario for r in results.records]
    assert (turns["turn"] == 1).all()
    assert list(turns["message"]) == ["Use the tool, then answer."] * len(turns)
    runs = results.runs
    assert (runs["turns"] == 1).all()
    # bad_config fails before its loop starts: its one turn still "ran" (it has events)
    assert (runs["turns_run"] == 1).all()
    pd.testing.assert_frame_equal(turns[SHARED], runs[SHARED], check_dtype=True)


def test_times_come_from_the_events(results: LabResults) -> None:
    runs = results.runs.set_index("scenario")
    rounds = results.rounds
    for record in results.records:
        row = runs.loc[record.scenario]
        assert row["elapsed_s"] == record.events[-1].t  # the loop's clock at its last event
        assert row["elapsed_s"] <= row["duration_s"]  # inside the run's wall time
        mine = rounds[rounds["scenario"] == record.scenario]
        assert row["model_latency_s"] == pytest.approx(mine["latency_s"].sum())
    assert rounds["first_token_s"].isna().all()  # nothing streamed


async def test_time_held_at_a_pause_has_columns_of_its_own(echo_tool: BaseTool) -> None:
    events: list[Event] = []

    async def linger(point: PausePoint) -> None:
        await asyncio.sleep(0.05)  # someone reads the pause, then steps on

    model = ScriptedChatModel([calls(tool_call("echo", {"text": "a"}, "e1")), final("a")])
    agent = LLMAgent(model, [echo_tool], observers=[events.append], pause_hooks=[linger])
    await agent.arun("go")
    record = ScenarioRun(
        "paused", 0, (), "", MODEL, "final_answer", None, None, None, 1.0, tuple(events)
    )
    results = LabResults((record,))
    held = [e.paused_s for e in events if isinstance(e, Paused)]
    assert len(held) == 3  # before each call, before the tools
    run = results.runs.iloc[0]
    assert run["paused_s"] == pytest.approx(sum(held))
    assert run["elapsed_s"] == events[-1].t  # the clock still counts the pauses
    assert results.turns.iloc[0]["paused_s"] == pytest.approx(sum(held))
    first = results.rounds.iloc[0]
    assert first["paused_s"] == pytest.approx(held[0] + held[1])
    spans = [e.t for e in events if e.round == 1]
    assert first["duration_s"] == pytest.approx(max(spans) - min(spans) - first["paused_s"])
    assert first["latency_s"] < first["duration_s"] + 1e-9  # the call inside the round's time
    assert "paused_s" in VOLATILE_COLUMNS


def test_a_streamed_call_has_its_time_to_first_token() -> None:
    streamed = Scenario.scripted(
        "streamed",
        [
            Reply.call("echo", {"text": "a"}, text="looking", input_tokens=5, output_tokens=2),
            Reply.final(
                "a long enough answer to stream in pieces", input_tokens=9, output_tokens=8
            ),
        ],
        config=AgentConfig(streaming=True),
    )
    rounds = run_scenarios([streamed], progress=False).rounds
    assert rounds["first_token_s"].notna().all()
    assert (rounds["first_token_s"] <= rounds["latency_s"]).all()


def test_the_tools_frame_has_one_row_per_call(results: LabResults) -> None:
    tools = results.tools
    runs = results.runs.set_index("scenario")
    per = tools.groupby("scenario", observed=True).size()
    for name, count in runs["tool_calls"].items():
        assert per.get(name, 0) == count, name
    by = tools.set_index("scenario")
    assert (by.loc["unknown_tool", "status"], by.loc["unknown_tool", "error_reason"]) == (
        "error",
        "not_available",
    )
    assert math.isnan(by.loc["unknown_tool", "started_s"])  # it never began
    skipped = by.loc["pruning_skipped_after_budget"]
    assert (skipped["ran"], skipped["error_reason"]) == (False, "budget_exhausted")
    pruned = by.loc["pruning"]
    assert bool(pruned["pruned"]) is True
    assert pruned["tokens_saved_by_pruning"] == runs.loc["pruning", "tokens_saved_by_pruning"]
    began = tools[tools["started_s"].notna()]
    assert (began["duration_s"] >= 0).all()
    assert began["ran"].all()


def test_tool_time_spans_the_rounds_tools(results: LabResults) -> None:
    rounds = results.rounds.set_index(["scenario", "turn", "round"])
    tools = results.tools
    began = tools[tools["started_s"].notna()]
    slowest = began.groupby(["scenario", "turn", "round"], observed=True)["duration_s"].max()
    for key, duration in slowest.items():
        assert rounds.loc[key, "tool_time_s"] >= duration  # first start to last end
    without = rounds.drop(index=list(slowest.index))
    assert without["tool_time_s"].isna().all()


def test_drop_volatile_keeps_everything_else(results: LabResults) -> None:
    for frame in (results.runs, results.turns, results.rounds, results.tools, results.events):
        kept = drop_volatile(frame)
        assert not set(kept.columns) & set(VOLATILE_COLUMNS)
        assert list(kept.columns) == [c for c in frame.columns if c not in VOLATILE_COLUMNS]


def test_a_named_run_has_its_name_in_the_runs_and_turns_frames(echo_tool: BaseTool) -> None:
    records = []
    for label, name in (("named", "triage"), ("plain", None)):
        events: list[Event] = []
        agent = LLMAgent(ScriptedChatModel([final("a")]), [echo_tool], observers=[events.append])
        agent.run("go", name=name)
        records.append(
            ScenarioRun(
                label, 0, (), "", MODEL, "final_answer", None, None, None, 1.0, tuple(events)
            )
        )
    results = LabResults(tuple(records))
    assert results.runs["name"].dtype == "string"
    assert results.runs["name"].tolist() == ["triage", pd.NA]
    assert results.turns["name"].tolist() == ["triage", pd.NA]


def test_estimated_counts_are_flagged_wherever_counts_are_shown() -> None:
    """Each frame and table that shows token counts says which are estimated: the rounds
    frame per round, the spend and turn tables (what the CLI prints) in a ``note`` column
    with the words the debugger's header uses, and the sweep's one-line repr."""
    said = USAGE["estimated"]
    sweep = [
        Scenario.scripted(
            "guessed",
            [Reply.call("echo", {"text": "x"}, input_tokens=4, output_tokens=2), Reply.final("?")],
        ),
        Scenario.scripted("counted", [Reply.final("ok", input_tokens=3, output_tokens=2)]),
    ]
    results = run_scenarios(sweep, progress=False)
    assert results.rounds["usage_estimated"].tolist() == [False, True, False]
    for table in (results.spend_table(), results.turn_table()):
        lines = table.splitlines()
        assert lines[0].rstrip().endswith("  note")
        guessed = next(line for line in lines if line.startswith("guessed"))
        counted = next(line for line in lines if line.startswith("counted"))
        total = next(line for line in lines if line.startswith("TOTAL"))
        assert guessed.endswith(f"  {said}")
        assert said not in counted
        assert total.endswith(f"  {said}")
    assert f"tokens ({said})" in repr(results)
    exact = run_scenarios(sweep[1:], progress=False)
    assert "note" not in exact.spend_table().splitlines()[0]
    assert said not in exact.spend_table() + exact.turn_table() + repr(exact)
    assert not exact.rounds["usage_estimated"].any()
