"""Plot contents: artists, bar heights, line data, labels and titles (Agg backend)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import io
from dataclasses import replace

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from toolloop_lab.lab import LabResults, Reply, Scenario, catalog, run_scenarios


@pytest.fixture(scope="module")
def results() -> LabResults:
    return run_scenarios(catalog(), progress=False)


def only_axes(fig: Figure) -> Axes:
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 1
    return fig.axes[0]


def heights(container: BarContainer) -> list[float]:
    return [patch.get_height() for patch in container.patches]


def bottoms(container: BarContainer) -> list[float]:
    return [patch.get_y() for patch in container.patches]


def test_spend_is_stacked_prompt_completion_pruning(results: LabResults) -> None:
    runs = results.runs
    ax = only_axes(results.plot_spend())
    assert ax.get_title() == "Token spend per scenario"
    assert ax.get_xlabel() == "scenario"
    assert ax.get_ylabel() == "tokens"
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert len(bars) == 3
    prompt, completion, pruning = bars
    assert heights(prompt) == list(runs["prompt_tokens"])
    assert heights(completion) == list(runs["completion_tokens"])
    assert heights(pruning) == list(runs["pruning_tokens"])
    assert bottoms(completion) == list(runs["prompt_tokens"])
    assert bottoms(pruning) == list(runs["prompt_tokens"] + runs["completion_tokens"])
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [
        "prompt tokens",
        "completion tokens",
        "pruning tokens",
    ]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(runs["scenario"])
    totals = [t.get_text() for t in ax.texts]
    assert "5,221" in totals  # token_budget's total over the stack
    assert "979" in totals  # pruning's 39 agent tokens + 940 pruning tokens


def test_cost_per_round_lines(results: LabResults) -> None:
    rounds = results.rounds
    ax = only_axes(results.plot_cost_per_round())
    assert ax.get_title() == "Cost per round (model call + pruning)"
    assert ax.get_xlabel() == "round"
    assert ax.get_ylabel() == "cost per round (USD)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    for name in pd.unique(rounds["scenario"]):
        group = rounds[rounds["scenario"] == name]
        line = lines[name]
        assert list(line.get_xdata()) == list(group["round"])
        assert list(line.get_ydata()) == list(group["cost_usd"])
    assert "bad_config" not in lines  # no round ran
    assert "synthesis call" in lines
    assert ax.yaxis.get_major_formatter()(0.0001, 0) == "$0.000100"


def test_pruning_savings_bars(results: LabResults) -> None:
    runs = results.runs.set_index("scenario")
    ax = only_axes(results.plot_pruning_savings())
    assert ax.get_title() == "Pruning savings"
    assert ax.get_ylabel() == "tokens"
    saved, spent = (c for c in ax.containers if isinstance(c, BarContainer))
    assert heights(saved) == [runs.loc["pruning", "tokens_saved_by_pruning"]]
    assert heights(spent) == [940]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["pruning"]
    net = runs.loc["pruning", "net_tokens_saved"]
    assert f"net {net:+,}" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "tokens saved",
        "pruning tokens spent",
    ]


def test_budget_gates_share_of_limit(results: LabResults) -> None:
    rounds = results.rounds
    ax = only_axes(results.plot_budget_gates())
    assert ax.get_title() == "Budget gates over rounds"
    assert ax.get_xlabel() == "round"
    assert ax.get_ylabel() == "spend at gate (% of limit)"
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {
        "token_budget (tokens)",
        "usd_budget (USD)",
        "pruning_skipped_after_budget (USD)",
        "limit (100%)",
    }
    token = lines["token_budget (tokens)"]
    assert list(token.get_xdata()) == [1, 2]
    assert list(token.get_ydata()) == [5_200.0, 5_221.0]  # spent / 100-token limit * 100
    usd = rounds[rounds["scenario"] == "usd_budget"]
    expected = list(usd["usd_spent"] / usd["usd_limit"] * 100)
    assert list(lines["usd_budget (USD)"].get_ydata()) == pytest.approx(expected)
    assert expected[0] < 100 < expected[1]
    assert list(lines["limit (100%)"].get_ydata()) == [100.0, 100.0]
    tripped = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(tripped) == 1
    assert tripped[0].get_label() == "tripped"
    # token_budget rounds 1-2, then usd_budget round 2 and pruning_skipped round 1 (2x limit).
    offsets = [v for point in tripped[0].get_offsets().tolist() for v in point]
    assert offsets == pytest.approx([1, 5_200, 2, 5_221, 2, expected[1], 1, 200])
    assert ax.get_yscale() == "log"


def test_plots_say_so_when_there_is_nothing_to_draw() -> None:
    plain = run_scenarios(
        [Scenario.scripted("plain", [Reply.final("x", input_tokens=1, output_tokens=1)])],
        progress=False,
    )
    pruning_ax = only_axes(plain.plot_pruning_savings())
    assert [t.get_text() for t in pruning_ax.texts] == ["no tool output was pruned"]
    gates_ax = only_axes(plain.plot_budget_gates())
    assert [t.get_text() for t in gates_ax.texts] == ["no budget gates in these runs"]
    empty = run_scenarios([], progress=False)
    assert [t.get_text() for t in only_axes(empty.plot_spend()).texts] == ["no scenarios"]
    unpriced = run_scenarios(
        [Scenario.scripted("u", [Reply.final("x")], model_name="nobody")], progress=False
    )
    cost_ax = only_axes(unpriced.plot_cost_per_round())
    assert [t.get_text() for t in cost_ax.texts] == ["no priced rounds"]


def test_figures_leave_no_pyplot_state_and_render(results: LabResults) -> None:
    before = plt.get_fignums()
    figures = [
        results.plot_spend(),
        results.plot_cost_per_round(),
        results.plot_pruning_savings(),
        results.plot_budget_gates(),
    ]
    assert plt.get_fignums() == before
    for fig in figures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")


def test_legend_is_left_out_when_there_are_too_many_series() -> None:
    many = run_scenarios(
        [
            Scenario.scripted(f"s{i}", [Reply.final("x", input_tokens=i + 1, output_tokens=1)])
            for i in range(20)
        ],
        progress=False,
    )
    ax = only_axes(many.plot_cost_per_round())
    assert len(ax.get_lines()) == 20
    assert ax.get_legend() is None


def test_cost_axis_keeps_fractions_of_a_cent_apart() -> None:
    tiny = run_scenarios(
        [Scenario.scripted("tiny", [Reply.final("x", input_tokens=10, output_tokens=2)])],
        progress=False,
    )
    ax = only_axes(tiny.plot_cost_per_round())
    cost = float(tiny.runs["cost_usd"].iloc[0])
    assert cost < 1e-5
    fmt = ax.yaxis.get_major_formatter()
    assert fmt(cost, 0) != fmt(cost / 2, 0)
    assert fmt(cost, 0) == f"${cost:.8f}"


# Names matplotlib used to choke on: a lone surrogate (its font code takes no such str) and
# dollar signs (a pair makes mathtext of the text between, and bad mathtext raises).
AWKWARD_NAMES = ("lone \ud800 surrogate", "math $x_$", "cost $5 and $6")


@pytest.fixture(scope="module")
def awkward() -> LabResults:
    base = {s.name: s for s in catalog()}
    picks = ("pruning", "usd_budget", "token_budget")  # spend, cost, pruning, gates: all drawn
    return run_scenarios(
        [replace(base[p], name=f"{n} {p}") for n in AWKWARD_NAMES for p in picks],
        progress=False,
    )


def label_texts(fig: Figure) -> list[str]:
    ax = only_axes(fig)
    legend = ax.get_legend()
    texts = [t.get_text() for t in ax.get_xticklabels()]
    return texts + ([t.get_text() for t in legend.get_texts()] if legend else [])


def test_awkward_scenario_names_still_draw(awkward: LabResults) -> None:
    figures = [
        awkward.plot_spend(),
        awkward.plot_cost_per_round(),
        awkward.plot_pruning_savings(),
        awkward.plot_budget_gates(),
    ]
    for fig in figures:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png")
        assert buffer.getvalue().startswith(b"\x89PNG")
        texts = label_texts(fig)
        assert not [t for t in texts if "\ud800" in t]
        assert [t for t in texts if t.startswith("lone \ufffd surrogate")], texts
    spend = label_texts(figures[0])
    # a dollar sign is escaped for mathtext, so it reads as a dollar sign
    assert r"cost \$5 and \$6 pruning" in spend
    assert r"math \$x_\$ usd_budget" in spend


def test_a_long_scenario_name_is_clipped_in_the_labels() -> None:
    long = run_scenarios(
        [Scenario.scripted("p" * 100_000, [Reply.final("x", input_tokens=1, output_tokens=1)])],
        progress=False,
    )
    shown = "p" * 40 + "… (100,000 chars)"
    assert [t.get_text() for t in only_axes(long.plot_spend()).get_xticklabels()] == [shown]
    legend = only_axes(long.plot_cost_per_round()).get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == [shown]


def test_every_plot_shows_as_an_image_without_matplotlib_inline(results: LabResults) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()  # a plain shell: no `%matplotlib inline` was run
    for figure in (
        results.plot_spend(),
        results.plot_cost_per_round(),
        results.plot_pruning_savings(),
        results.plot_turns(),
        results.plot_budget_gates(),
    ):
        data, _ = shell.display_formatter.format(figure)
        assert data["image/png"].startswith(b"\x89PNG"), sorted(data)


def test_a_sweep_shows_as_one_short_line_and_an_escaped_table(results: LabResults) -> None:
    text = repr(results)
    assert text.startswith(f"<LabResults: {len(results)} scenarios (")
    assert len(text) < 300
    hostile = run_scenarios(
        [Scenario.scripted("<script>alert(1)</script>", [Reply.final("hi")])], progress=False
    )
    page = hostile._repr_html_()
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "1 scenario (1 final_answer)" in page
