"""matplotlib figures of a sweep, drawn from the lab's frames.

Figures are built with ``matplotlib.figure.Figure`` directly, never through pyplot, so a
sweep leaves no global figure state behind and the code runs under any backend (tests use
Agg). Each figure has a title, axis labels with units, and a legend when it has series.

Scenario names are the only text from outside: each goes through :func:`_label`, so a
name is never read as mathtext (``$x_$`` would raise while drawing), a lone surrogate
never reaches the font code (which takes no such string), and a long name is clipped
(with a ``… (N chars)`` marker) instead of squeezing the axes away; control and
bidirectional characters show as their codes, as in every text view (``plain``).
"""

from __future__ import annotations

import io
import math
from typing import Final

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator

from toolloop_lab._support.escape import plain

_MAX_LEGEND: Final = 15
"""More series than this and a legend hides the plot; it is left out."""

_LABEL_CHARS: Final = 40
"""Characters of a scenario name a tick or legend label shows."""

_COLORS: Final = {"prompt": "#4C72B0", "completion": "#55A868", "pruning": "#C44E52"}


def _label(name: object) -> str:
    """A scenario name as matplotlib shows it literally: clipped, lone surrogates replaced
    by U+FFFD, control and bidirectional characters shown as codes, dollar signs escaped
    for mathtext."""
    return plain(name, _LABEL_CHARS).replace("$", r"\$")


def _width(n: int) -> float:
    return min(40.0, max(6.0, 0.6 * n + 2.0))


class LabFigure(Figure):
    """A figure that shows itself as a PNG in any notebook, ``%matplotlib inline`` or not
    (a bare ``Figure`` made without pyplot prints as ``<Figure size 860x480 ...>``)."""

    def __repr__(self) -> str:
        return super().__repr__().replace(type(self).__name__, "Figure", 1)

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png")
        return buffer.getvalue()


def _axes(title: str, xlabel: str, ylabel: str, width: float = 8.0) -> tuple[Figure, Axes]:
    """A new figure of one plot, titled and with both axes labelled."""
    fig = LabFigure(figsize=(width, 4.8), layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return fig, ax


def _legend_beside(ax: Axes, series: int) -> None:
    """A legend right of the plot, unless there are too many series to read one."""
    if series <= _MAX_LEGEND:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_xticks([])
    ax.set_yticks([])


def _usd_axis(ax: Axes, largest: float) -> None:
    """Dollar ticks with enough decimals for the data (fractions of a cent are common)."""
    digits = 2 if largest <= 0 else max(2, min(10, 2 - math.floor(math.log10(largest))))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"${v:.{digits}f}"))


def scenario_rounds(group: pd.DataFrame) -> pd.Series:
    """One scenario's round rows numbered across its turns: a later turn's rounds go on
    after the earlier turns' last round (a one-turn scenario keeps its round numbers)."""
    last = group.groupby("turn", sort=True)["round"].max()
    offsets = last.cumsum().shift(1, fill_value=0)
    return group["round"] + group["turn"].map(offsets)


def _by_scenario(rows: pd.DataFrame) -> list[tuple[object, pd.DataFrame]]:
    """``rows`` grouped by scenario, in the order the scenarios come (one series each)."""
    return list(rows.groupby("scenario", sort=False, observed=True))


def _series(ax: Axes, rows: pd.DataFrame, nothing: str) -> list[tuple[object, pd.DataFrame]]:
    """One series per scenario of ``rows``; none, and the axes say ``nothing``, when
    ``rows`` is empty."""
    if rows.empty:
        _empty(ax, nothing)
        return []
    return _by_scenario(rows)


def _round_label(rounds: pd.DataFrame) -> str:
    several = "turn" in rounds.columns and bool(rounds["turn"].gt(1).any())
    return "round (counted on across turns)" if several else "round"


def spend_figure(runs: pd.DataFrame) -> Figure:
    """Stacked bars of prompt, completion and pruning tokens per scenario."""
    names = [_label(s) for s in runs["scenario"]]
    fig, ax = _axes("Token spend per scenario", "scenario", "tokens", _width(len(names)))
    if not names:
        _empty(ax, "no scenarios")
        return fig
    x = list(range(len(names)))
    bottom = [0] * len(names)
    for column, label in (
        ("prompt_tokens", "prompt"),
        ("completion_tokens", "completion"),
        ("pruning_tokens", "pruning"),
    ):
        heights = [int(v) for v in runs[column]]
        container = ax.bar(x, heights, bottom=bottom, label=f"{label} tokens", color=_COLORS[label])
        bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
    ax.bar_label(container, labels=[f"{t:,}" for t in bottom], padding=2, fontsize=8)
    ax.set_xticks(x, names, rotation=35, ha="right")
    ax.legend(loc="upper left")
    ax.margins(y=0.1)
    return fig


def cost_per_round_figure(rounds: pd.DataFrame) -> Figure:
    """One line per scenario: the USD cost of each round (model call plus its pruning)."""
    fig, ax = _axes(
        "Cost per round (model call + pruning)", _round_label(rounds), "cost per round (USD)"
    )
    known = rounds[rounds["cost_known"]]
    groups = _series(ax, known, "no priced rounds")
    if not groups:
        return fig
    synthesis_label = "synthesis call"
    for name, group in groups:
        x = scenario_rounds(group)
        ax.plot(x, group["cost_usd"], marker="o", label=_label(name))
        synth = group[group["purpose"] == "synthesis"]
        if not synth.empty:
            ax.plot(
                x[synth.index],
                synth["cost_usd"],
                "s",
                color="black",
                markersize=5,
                label=synthesis_label,
            )
            synthesis_label = "_nolegend_"
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _usd_axis(ax, float(known["cost_usd"].max()))
    _legend_beside(ax, len(groups))
    return fig


def pruning_savings_figure(runs: pd.DataFrame) -> Figure:
    """Per pruned scenario: tokens kept out of the conversation vs. tokens pruning spent."""
    pruned = runs[(runs["tokens_saved_by_pruning"] > 0) | (runs["pruning_tokens"] > 0)]
    names = [_label(s) for s in pruned["scenario"]]
    fig, ax = _axes("Pruning savings", "scenario", "tokens", max(6.0, 1.6 * len(names) + 3.0))
    if not names:
        _empty(ax, "no tool output was pruned")
        return fig
    x = list(range(len(names)))
    saved = [int(v) for v in pruned["tokens_saved_by_pruning"]]
    spent = [int(v) for v in pruned["pruning_tokens"]]
    net = [int(v) for v in pruned["net_tokens_saved"]]
    left = [i - 0.2 for i in x]
    right = [i + 0.2 for i in x]
    ax.bar(left, saved, width=0.4, label="tokens saved", color=_COLORS["completion"])
    bars = ax.bar(right, spent, width=0.4, label="pruning tokens spent", color=_COLORS["pruning"])
    ax.bar_label(bars, labels=[f"net {n:+,}" for n in net], padding=2, fontsize=8)
    ax.set_xticks(x, names)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.legend(loc="upper right")
    ax.margins(y=0.15)
    return fig


def budget_gates_figure(rounds: pd.DataFrame) -> Figure:
    """Spend at each budget gate as % of its limit, per round; tripped gates marked ✕."""
    fig, ax = _axes("Budget gates over rounds", _round_label(rounds), "spend at gate (% of limit)")
    series = 0
    tripped_x: list[int] = []
    tripped_y: list[float] = []
    peak = 0.0
    for gate, spent_col, limit_col, unit in (
        ("token", "token_spent", "token_limit", "tokens"),
        ("usd", "usd_spent", "usd_limit", "USD"),
    ):
        checked = rounds[(rounds[f"{gate}_gate"] != "off") & (rounds[limit_col] > 0)]
        for name, group in _by_scenario(checked):
            share = (group[spent_col].astype(float) / group[limit_col].astype(float)) * 100.0
            x = scenario_rounds(group)
            ax.plot(x, share, marker="o", label=f"{_label(name)} ({unit})")
            series += 1
            peak = max(peak, float(share.max()))
            trip = group[f"{gate}_gate"] == "tripped"
            tripped_x.extend(int(r) for r in x[trip])
            tripped_y.extend(float(s) for s in share[trip])
    if not series:
        _empty(ax, "no budget gates in these runs")
        return fig
    ax.axhline(100.0, color="black", linestyle="--", linewidth=1, label="limit (100%)")
    if tripped_x:
        ax.scatter(tripped_x, tripped_y, marker="x", s=80, color="red", zorder=3, label="tripped")
    if peak > 1_000:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}%"))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_beside(ax, series)
    return fig


def turns_figure(turns: pd.DataFrame) -> Figure:
    """One line per scenario: the tokens each turn spent (model and pruning calls); a turn
    that failed is marked ✕, turns that never ran are left out."""
    fig, ax = _axes("Tokens per turn", "turn", "tokens")
    groups = _series(ax, turns[turns["outcome"].notna()], "no turn ran")
    if not groups:
        return fig
    failed_label = "failed turn"
    for name, group in groups:
        ax.plot(group["turn"], group["total_tokens"], marker="o", label=_label(name))
        failed = group[group["error_kind"].notna()]
        if not failed.empty:
            ax.scatter(
                failed["turn"],
                failed["total_tokens"],
                marker="x",
                s=80,
                color="red",
                zorder=3,
                label=failed_label,
            )
            failed_label = "_nolegend_"
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.0f}"))
    _legend_beside(ax, len(groups))
    return fig


def frontier_figure(frontier: pd.DataFrame) -> Figure:
    """Mean cost per run against pass rate, one numbered point per variant with its Wilson
    interval (the legend names each number's variant), the frontier's variants joined by a
    line (variants without checks or with an unpriced call are left out: they have no place
    on these axes)."""
    fig, ax = _axes("Cost against pass rate", "mean cost per run (USD)", "pass rate", width=10.0)
    shown = frontier[frontier["pass_rate"].notna() & frontier["cost_known"]]
    if shown.empty:
        _empty(ax, "no variant has checks and a known cost")
        return fig
    best = shown[shown["on_frontier"]].sort_values("mean_cost_usd")
    ax.plot(
        best["mean_cost_usd"], best["pass_rate"], "-", color="#4C72B0", label="frontier", zorder=0
    )
    for number, row in enumerate(shown.to_dict("records"), start=1):
        on = bool(row["on_frontier"])
        rate = float(row["pass_rate"])
        cost = float(row["mean_cost_usd"])
        ax.errorbar(
            [cost],
            [rate],
            yerr=[[rate - float(row["pass_rate_low"])], [float(row["pass_rate_high"]) - rate]],
            fmt="o",
            color="#4C72B0" if on else "#8C8C8C",
            capsize=3,
            label=f"{number}  {_label(row['variant'])}" + ("" if on else " (beaten)"),
        )
        ax.annotate(
            str(number), (cost, rate), textcoords="offset points", xytext=(6, 4), fontsize=9
        )
    ax.set_ylim(-0.05, 1.05)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.0%}"))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:.2g}"))
    _legend_beside(ax, len(shown) + 1)
    return fig
