"""Checks in scenarios, variants with repeats, the frontier and the paired comparison of two
sweeps, on scripted scenarios whose pass rates and costs are known in advance.

The sweep: scenario ``needs_k`` makes k tool calls, one a round, then answers; every reply
costs the same (1,000 input and 100 output tokens at $1 / $10 per million: $0.002) and its
check is ``outcome("final_answer")``, so under a round cap m (``tool_max_rounds``) it passes
exactly when k < m (after m tool rounds the loop asks for a synthesis instead) and makes
min(k, m) + 1 model calls. Cap 3 then costs what cap 4 costs and passes less often: the
frontier must leave it off. A pruned variant adds one pruning call ($0.0006: 500 in, 10
out) per tool call and changes nothing else: as good as its cap unpruned, for more, so the
frontier must leave it off too.
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

from toolloop_lab import TokenPrice
from toolloop_lab.checks import answer_contains, outcome, satisfies
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    SweepComparison,
    Variant,
    compare_sweeps,
    run_scenarios,
)
from toolloop_lab.lab._stats import mcnemar_exact, wilson_interval

PRICES = {"gpt-4o-mini": TokenPrice(Decimal(1), Decimal(10))}
CALL = Decimal("0.002")  # 1,000 x $1/M + 100 x $10/M
PRUNE = Decimal("0.0006")  # 500 x $1/M + 10 x $10/M

VARIANTS = {
    "cap 2": {"tool_max_rounds": 2},
    "cap 3": Variant(tool_max_rounds=3),
    "cap 4": Variant(tool_max_rounds=4),
    "cap 4 pruned": Variant(tool_max_rounds=4, prune_tools=["echo"], prune_min_chars=0),
}
CAP = {"cap 2": 2, "cap 3": 3, "cap 4": 4, "cap 4 pruned": 4}


def needs(k: int, *, answer: str = "done") -> Scenario:
    calls = [
        Reply.call("echo", {"text": f"step {i}"}, input_tokens=1000, output_tokens=100)
        for i in range(k)
    ]
    return Scenario.scripted(
        f"needs_{k}",
        [*calls, Reply.final(answer, input_tokens=1000, output_tokens=100)],
        pruning_replies=[Reply.final("short", input_tokens=500, output_tokens=10)] * k,
        prices=PRICES,
        checks=[outcome("final_answer")],
    )


SCENARIOS = [needs(1), needs(2), needs(3)]


@pytest.fixture(scope="module")
def sweep() -> LabResults:
    return run_scenarios(SCENARIOS, variants=VARIANTS, repeats=2, progress=False)


# -- the statistics, against known values -----------------------------------------------
@pytest.mark.parametrize(
    ("passed", "runs", "low", "high"),
    [  # statsmodels' proportion_confint(method="wilson") gives the same
        (0, 10, 0.0, 0.27753),
        (5, 10, 0.23659, 0.76341),
        (10, 10, 0.72247, 1.0),
        (1, 3, 0.06149, 0.79234),
    ],
)
def test_wilson_interval_known_values(passed: int, runs: int, low: float, high: float) -> None:
    got = wilson_interval(passed, runs)
    assert got[0] == pytest.approx(low, abs=1e-5)
    assert got[1] == pytest.approx(high, abs=1e-5)


def test_wilson_interval_without_runs_is_unknown() -> None:
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    with pytest.raises(ValueError, match="between 0 and runs"):
        wilson_interval(4, 3)


@pytest.mark.parametrize(
    ("regressed", "fixed", "p"),
    [(0, 0, 1.0), (5, 0, 0.0625), (0, 5, 0.0625), (1, 9, 22 / 1024), (3, 3, 1.0), (6, 1, 0.125)],
)
def test_mcnemar_exact_known_values(regressed: int, fixed: int, p: float) -> None:
    assert mcnemar_exact(regressed, fixed) == pytest.approx(p)


# -- checks and variants -------------------------------------------------------------------
def test_every_run_is_a_row_labelled_with_its_variant_and_repeat(sweep: LabResults) -> None:
    runs = sweep.runs
    assert len(runs) == 3 * 4 * 2
    assert list(runs["scenario"][:8]) == ["needs_1"] * 8  # scenario, then variant, then repeat
    assert list(runs["variant"][:4]) == ["cap 2", "cap 2", "cap 3", "cap 3"]
    assert list(runs["repeat"][:4]) == [1, 2, 1, 2]
    for name in ("turns", "rounds", "tools", "events"):
        frame = getattr(sweep, name)
        assert {"variant", "repeat"} <= set(frame.columns), name
    assert set(sweep.tools["variant"]) == set(VARIANTS)


def test_checks_pass_exactly_when_the_cap_allows(sweep: LabResults) -> None:
    runs = sweep.runs
    for row in runs.to_dict("records"):
        k = int(str(row["scenario"]).removeprefix("needs_"))
        assert row["passed"] is (k < CAP[row["variant"]]), row
        if row["passed"]:
            assert row["failed_checks"] == ()
        else:
            (failed,) = row["failed_checks"]
            assert failed.startswith("outcome('final_answer'): seen")
            assert "synthesis" in failed


def test_costs_are_the_ones_computed_by_hand(sweep: LabResults) -> None:
    for row in sweep.runs.to_dict("records"):
        k = int(str(row["scenario"]).removeprefix("needs_"))
        tool_calls = min(k, CAP[row["variant"]])
        want = CALL * (tool_calls + 1)
        if row["variant"] == "cap 4 pruned":
            want += PRUNE * tool_calls
        assert Decimal(str(row["cost_usd"])) == pytest.approx(want, abs=Decimal("1e-12")), row


def test_the_frontier_marks_exactly_the_variants_it_should(sweep: LabResults) -> None:
    frontier = sweep.frontier().set_index("variant")
    assert list(frontier.index) == list(VARIANTS)
    assert frontier["pass_rate"].to_dict() == pytest.approx(
        {"cap 2": 1 / 3, "cap 3": 2 / 3, "cap 4": 1.0, "cap 4 pruned": 1.0}
    )
    assert frontier["runs"].tolist() == [6, 6, 6, 6]
    assert frontier["passed"].tolist() == [2, 4, 6, 6]
    # model calls: min(k, m) + 1 over k = 1, 2, 3; pruned: one more per tool call
    assert frontier["mean_model_calls"].tolist() == pytest.approx([8 / 3, 3, 3, 5])
    want = {"cap 2": CALL * 8 / 3, "cap 3": CALL * 3, "cap 4": CALL * 3}
    want["cap 4 pruned"] = CALL * 3 + PRUNE * 2
    assert frontier["mean_cost_usd"].to_dict() == pytest.approx(
        {k: float(v) for k, v in want.items()}
    )
    low, high = wilson_interval(2, 6)
    assert (frontier.loc["cap 2", "pass_rate_low"], frontier.loc["cap 2", "pass_rate_high"]) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    assert frontier["on_frontier"].to_dict() == {
        "cap 2": True,  # the cheapest
        "cap 3": False,  # costs what cap 4 costs, passes less often
        "cap 4": True,
        "cap 4 pruned": False,  # as good as cap 4, and dearer
    }


def test_a_variant_without_checks_or_price_is_never_on_the_frontier() -> None:
    unchecked = dataclasses.replace(needs(1), checks=())
    results = run_scenarios(
        [unchecked], variants={"a": {}, "b": {"streaming": True}}, progress=False
    )
    frontier = results.frontier()
    assert frontier["pass_rate"].isna().all()
    assert not frontier["on_frontier"].any()
    assert results.runs["passed"].isna().all()
    assert "checks" not in results.spend_table()


def test_spend_table_and_report_show_the_pass_rate_beside_the_spend(sweep: LabResults) -> None:
    table = sweep.spend_table()
    header, _rule, *_rows, total = table.splitlines()
    assert header.split()[:3] == ["scenario", "variant", "repeat"]
    assert header.index("checks") > header.index("cost (USD)")
    assert "18 of 24 passed (75%)" in total
    html = sweep.report_html()
    assert "<h2>Pass rates</h2>" in html
    assert "Cost against pass rate" in html  # the frontier plot
    assert "6 of 6: 100% (61% to 100%)" in html  # needs_1 passes under every cap
    assert "<td>cap 4 pruned</td>" in html


def test_frontier_plot_has_one_point_per_variant(sweep: LabResults) -> None:
    fig = sweep.plot_frontier()
    (ax,) = fig.axes
    assert sorted(t.get_text() for t in ax.texts) == ["1", "2", "3", "4"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "frontier",
        "1  cap 2",
        "2  cap 3 (beaten)",
        "3  cap 4",
        "4  cap 4 pruned (beaten)",
    ]
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == "frontier"]
    assert list(line.get_xdata()) == pytest.approx([float(CALL * 8 / 3), float(CALL * 3)])


def test_grid_makes_every_combination_named_by_its_values() -> None:
    grid = Variant.grid(tool_max_rounds=[2, 3], streaming=[False, True])
    assert list(grid) == [
        "tool_max_rounds=2, streaming=False",
        "tool_max_rounds=2, streaming=True",
        "tool_max_rounds=3, streaming=False",
        "tool_max_rounds=3, streaming=True",
    ]
    results = run_scenarios([needs(2)], variants=grid, progress=False)
    assert list(results.frontier()["pass_rate"]) == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize(
    ("variants", "repeats", "field", "says"),
    [
        ({"x": {"tool_max_round": 2}}, 1, "variants", "not an AgentConfig field"),
        ({"x": {"tool_max_rounds": 0}}, 1, "variants", "tool_max_rounds"),
        ({"x": 3}, 1, "variants", "a Variant or a dict"),
        ("cap", 1, "variants", "variants takes"),
        ({}, 1, "variants", "empty"),
        (None, 0, "repeats", "at least 1"),
        (None, True, "repeats", "an int"),
    ],
)
def test_bad_variants_are_refused_before_anything_runs(
    variants: object, repeats: object, field: str, says: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        run_scenarios(SCENARIOS, variants=variants, repeats=repeats, progress=False)
    assert raised.value.field == field
    assert says in str(raised.value)


def test_a_variant_a_scenario_cannot_take_is_refused_naming_both() -> None:
    plain = Scenario.scripted("no_pruner", [Reply.final("hi")])
    with pytest.raises(ConfigurationError, match="variant 'prune' cannot run scenario 'no_pruner'"):
        run_scenarios([plain], variants={"prune": {"prune_tools": ["echo"]}}, progress=False)


def test_scenario_checks_are_refused_where_written() -> None:
    with pytest.raises(ConfigurationError) as raised:
        Scenario.scripted("x", [Reply.final("hi")], checks=["outcome"])
    assert raised.value.field == "checks"


def test_a_failing_check_of_your_own_fails_the_run_and_says_why() -> None:
    def boom(events: object) -> bool:
        raise RuntimeError("no")

    scenario = Scenario.scripted(
        "own", [Reply.final("hi")], checks=[satisfies(boom, "never"), answer_contains("hi")]
    )
    row = run_scenarios([scenario], progress=False).runs.iloc[0]
    assert not row["passed"]
    (failed,) = row["failed_checks"]
    assert "raised" in failed


def not_a_tool() -> object:
    return "a tool factory that returns no tool"


def test_a_scenario_that_never_ran_fails_its_checks() -> None:
    broken = Scenario.scripted(
        "broken", [Reply.final("hi")], tools=[not_a_tool], checks=[answer_contains("hi")]
    )
    row = run_scenarios([broken], progress=False).runs.iloc[0]
    assert row["error_kind"] == "scenario"
    assert not row["passed"]
    assert "no run to judge" in row["failed_checks"][0]


# -- save and load ---------------------------------------------------------------------------
def test_variants_repeats_and_checks_survive_save_and_load(
    sweep: LabResults, tmp_path: Path
) -> None:
    loaded = LabResults.load(sweep.save(tmp_path / "sweep.jsonl"))
    pd.testing.assert_frame_equal(loaded.runs, sweep.runs)
    pd.testing.assert_frame_equal(loaded.frontier(), sweep.frontier())


def test_a_save_written_before_variants_still_loads(tmp_path: Path) -> None:
    results = run_scenarios([needs(1)], progress=False)
    path = results.save(tmp_path / "old.jsonl")
    old = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data["type"] == "run":
            for key in ("variant", "repeat", "passed", "failed_checks"):
                del data[key]
        old.append(json.dumps(data))
    path.write_text("\n".join(old) + "\n", encoding="utf-8")
    loaded = LabResults.load(path)
    assert loaded.runs["variant"].isna().all()
    assert loaded.runs["repeat"].tolist() == [1]
    assert loaded.runs["passed"].isna().all()  # a save without checks judged none


# -- comparing two sweeps ----------------------------------------------------------------------
def _prompt_change(answer_before: str, answer_after: str) -> tuple[LabResults, LabResults]:
    def sweep(answers: dict[str, str]) -> list[Scenario]:
        return [
            dataclasses.replace(needs(1, answer=a), name=n, checks=(answer_contains("done"),))
            for n, a in answers.items()
        ]

    before = {"s1": "done", "s2": answer_before, "s3": "done", "s4": "nope"}
    after = {"s1": answer_after, "s2": "done", "s3": "done", "s4": "nope"}
    variants = {"cap 1": {"tool_max_rounds": 1}, "cap 3": {"tool_max_rounds": 3}}
    a = run_scenarios(sweep(before), variants=variants, progress=False)
    b = run_scenarios(sweep(after), variants=variants, progress=False)
    return a, b


def test_compare_sweeps_pairs_runs_and_puts_regressions_first(tmp_path: Path) -> None:
    a, b = _prompt_change("nope", "wrong")  # s1 regresses, s2 is fixed, s3 and s4 stay
    path = a.save(tmp_path / "before.jsonl")
    comparison = compare_sweeps(path, b)
    assert isinstance(comparison, SweepComparison)
    pairs = comparison.pairs
    assert len(pairs) == 8
    assert list(pairs["change"][:2]) == ["regressed", "regressed"]
    assert set(pairs[pairs["change"] == "regressed"]["scenario"]) == {"s1"}
    assert set(pairs[pairs["change"] == "fixed"]["scenario"]) == {"s2"}
    assert (pairs[pairs["scenario"] == "s3"]["change"] == "still passing").all()
    assert (pairs[pairs["scenario"] == "s4"]["change"] == "still failing").all()
    assert (comparison.regressed, comparison.fixed) == (2, 2)
    assert comparison.p_value == pytest.approx(mcnemar_exact(2, 2))
    assert comparison.pass_rates() == (pytest.approx(0.5), pytest.approx(0.5))
    text = comparison.text()
    assert text.index("REGRESSED: s1") < text.index("FIXED: s2")
    assert "answer_contains('done'): seen the answer 'wrong'" in text
    html = comparison.html()
    assert html.index('class="regressed"') < html.index('class="fixed"')
    assert comparison.by_scenario()["scenario"].iloc[0] == "s1"


def test_compare_sweeps_counts_cost_and_token_changes_and_missing_runs() -> None:
    a = run_scenarios([needs(1), needs(2)], progress=False)
    b = run_scenarios([needs(2), needs(3)], progress=False)
    comparison = compare_sweeps(a, b)
    pairs = comparison.pairs.set_index("scenario")
    assert pairs.loc["needs_1", "change"] == "only in a"
    assert pairs.loc["needs_3", "change"] == "only in b"
    assert pairs.loc["needs_2", "cost_change_usd"] == 0
    assert pairs.loc["needs_2", "token_change"] == 0
    assert "ONLY IN A: needs_1 run 1" in comparison.text()


def test_compare_sweeps_sees_a_cost_regression() -> None:
    a = run_scenarios([needs(2)], variants={"v": {}}, progress=False)
    b = run_scenarios(
        [needs(2)], variants={"v": {"prune_tools": ["echo"], "prune_min_chars": 0}}, progress=False
    )
    row = compare_sweeps(a, b).pairs.iloc[0]
    assert row["change"] == "still passing"
    assert row["cost_change_usd"] == pytest.approx(float(PRUNE * 2))
    assert row["token_change"] == 2 * 510


def test_compare_sweeps_refuses_what_is_no_sweep() -> None:
    with pytest.raises(ConfigurationError) as raised:
        compare_sweeps(run_scenarios([needs(1)], progress=False), 3)
    assert raised.value.field == "b"


def test_hostile_names_are_escaped_in_every_html_and_text() -> None:
    evil = "<script>alert(1)</script>\u202e"
    a = run_scenarios([needs(2)], variants={evil: {"tool_max_rounds": 2}}, progress=False)
    b = run_scenarios([needs(2)], variants={evil: {"tool_max_rounds": 4}}, progress=False)
    comparison = compare_sweeps(a, b)
    assert comparison.fixed == 1
    for html in (a.report_html(), comparison.html()):
        assert "<script>alert(1)" not in html
        assert "&lt;script&gt;alert(1)" in html
    assert "\u202e" not in comparison.text()
    assert "\u202e" not in a.spend_table()
