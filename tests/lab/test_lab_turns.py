"""Scenarios of several user turns: each turn a loop run on the transcript so far, one row
per turn in the ``turns`` frame, a ``turn`` column everywhere else, and the scenario's row
adding its turns up and ending as its last turn that ran ended."""

from __future__ import annotations

import dataclasses
import json
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import genai_prices
import pandas as pd
import pytest
from langchain_core.messages import HumanMessage

from toolloop_lab import AgentConfig
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Event, transcript
from toolloop_lab.lab import (
    LabResults,
    Reply,
    Scenario,
    ScriptedModel,
    ScriptedTurns,
    Turn,
    run_scenarios,
)
from toolloop_lab.lab._runner import run_one
from toolloop_lab.lab._scenario import DEFAULT_PROMPT

MODEL = "gpt-4o-mini"


def price(*calls: tuple[int, int]) -> Decimal:
    total = Decimal(0)
    for inp, out in calls:
        usage = genai_prices.Usage(input_tokens=inp, output_tokens=out)
        total += genai_prices.calc_price(usage, model_ref=MODEL).total_price
    return total


def echo(text: str, inp: int, out: int) -> Reply:
    return Reply.call("echo", {"text": text}, text="checking", input_tokens=inp, output_tokens=out)


def answer(text: str, inp: int, out: int) -> Reply:
    return Reply.final(text, input_tokens=inp, output_tokens=out)


CHAT = Scenario.scripted(
    "chat",
    [echo("a", 100, 10), answer("one", 150, 12), echo("b", 260, 20), answer("two", 300, 9)],
    turns=("first question", "second question"),
)


@pytest.fixture(scope="module")
def chat() -> LabResults:
    return run_scenarios([CHAT], progress=False)


def test_each_turn_is_a_row_and_the_scenario_row_adds_them_up(chat: LabResults) -> None:
    turns = chat.turns
    assert list(turns["turn"]) == [1, 2]
    assert list(turns["message"]) == ["first question", "second question"]
    assert list(turns["outcome"]) == ["final_answer", "final_answer"]
    assert list(turns["prompt_tokens"]) == [250, 560]
    assert list(turns["completion_tokens"]) == [22, 29]
    assert list(turns["rounds"]) == [2, 2]
    assert list(turns["tool_calls"]) == [1, 1]
    assert list(turns["final_text"]) == ["one", "two"]
    assert list(turns["context_tokens"]) == [150, 300]  # the input of each turn's last call
    assert [Decimal(str(c)) for c in turns["cost_usd"]] == [
        pytest.approx(price((100, 10), (150, 12))),
        pytest.approx(price((260, 20), (300, 9))),
    ]
    assert turns["run_id"].nunique() == 2

    (run,) = chat.runs.to_dict("records")
    assert (run["turns"], run["turns_run"]) == (2, 2)
    for column in ("prompt_tokens", "completion_tokens", "rounds", "tool_calls", "model_calls"):
        assert run[column] == turns[column].sum(), column
    assert run["cost_usd"] == pytest.approx(float(price((100, 10), (150, 12), (260, 20), (300, 9))))
    assert run["elapsed_s"] == pytest.approx(turns["elapsed_s"].sum())
    assert (run["outcome"], run["final_text"], run["run_id"]) == (
        "final_answer",
        "two",
        turns["run_id"].iloc[-1],
    )


def test_rounds_tools_and_events_carry_the_turn(chat: LabResults) -> None:
    rounds = chat.rounds
    assert list(zip(rounds["turn"], rounds["round"], strict=True)) == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    ]
    # cumulative columns run over the whole conversation
    assert list(rounds["cumulative_tokens"]) == [110, 272, 552, 861]
    tools = chat.tools
    assert list(zip(tools["turn"], tools["round"], tools["name"], strict=True)) == [
        (1, 1, "echo"),
        (2, 1, "echo"),
    ]
    events = chat.events
    assert list(events["seq"]) == list(range(len(events)))  # counted over the scenario
    by_turn = events.groupby("turn")["run_id"].nunique()
    assert list(by_turn) == [1, 1]
    assert events.groupby("turn")["kind"].first().tolist() == ["loop_start", "loop_start"]


def test_the_second_turn_runs_on_the_first_turns_transcript(chat: LabResults) -> None:
    first, second = chat["chat"].turn_events()
    before, after = transcript(first), transcript(second)
    assert after[: len(before)] == before
    assert after[len(before)] == HumanMessage("second question")
    assert [m.text for m in after if isinstance(m, HumanMessage)] == [
        "first question",
        "second question",
    ]


def test_replies_grouped_by_turn_stay_with_their_turn_when_a_round_cap_cuts_one_short() -> None:
    turns = (
        Turn("plan", (echo("p1", 10, 1), echo("p2", 20, 2), answer("planned", 30, 3))),
        Turn("act", (echo("a1", 40, 4), answer("acted", 50, 5))),
    )
    capped = Scenario.scripted("capped", turns=turns, config=AgentConfig(tool_max_rounds=1))
    assert isinstance(capped.model, ScriptedTurns)
    assert capped.messages == ("plan", "act")
    rows = run_scenarios([capped], progress=False).turns
    # Turn 1: one tool round, then the synthesis call plays the turn's own answer.
    assert list(rows["outcome"]) == ["synthesis", "synthesis"]
    assert list(rows["final_text"]) == ["planned", "acted"]
    assert list(rows["prompt_tokens"]) == [10 + 30, 40 + 50]
    assert list(rows["tool_calls"]) == [1, 1]


def test_a_flat_script_is_played_in_order_across_the_turns() -> None:
    # The same cap on one shared script: turn 1's synthesis takes the next reply in line.
    flat = Scenario.scripted(
        "flat",
        [echo("p1", 10, 1), answer("synthesised", 20, 2), echo("a1", 40, 4), answer("done", 50, 5)],
        turns=("plan", "act"),
        config=AgentConfig(tool_max_rounds=1),
    )
    rows = run_scenarios([flat], progress=False).turns
    assert list(rows["final_text"]) == ["synthesised", "done"]


def test_a_failed_turn_ends_the_scenario_and_later_turns_are_rows_that_never_ran() -> None:
    failing = Scenario.scripted(
        "failing",
        turns=(
            Turn("one", (echo("x", 10, 1), answer("fine", 20, 2))),
            Turn("two", (echo("y", 30, 3), Reply.failure("provider down"))),
            Turn("three", (answer("never", 40, 4),)),
        ),
    )
    results = run_scenarios([failing], progress=False)
    run = results.runs.iloc[0]
    assert (run["outcome"], run["error_kind"], run["error_reason"]) == (
        "failed",
        "loop",
        "RuntimeError",
    )
    assert (run["turns"], run["turns_run"]) == (3, 2)
    assert pd.isna(run["final_text"])  # the last turn that ran gave no answer
    assert run["prompt_tokens"] == 10 + 20 + 30
    turns = results.turns
    assert turns["outcome"].tolist()[:2] == ["final_answer", "failed"]
    assert pd.isna(turns["outcome"].iloc[2])
    assert pd.isna(turns["error_reason"].iloc[0])
    assert turns["error_reason"].iloc[1] == "RuntimeError"
    assert list(turns["prompt_tokens"]) == [30, 30, 0]
    assert turns.iloc[2][["rounds", "tool_calls", "model_calls"]].tolist() == [0, 0, 0]
    assert pd.isna(turns["run_id"].iloc[2])
    assert pd.isna(turns["elapsed_s"].iloc[2])
    table = results.turn_table()
    assert "not run" in table.splitlines()[4]
    assert "2 of 3 ran" in table.splitlines()[-1]


def not_a_tool() -> Any:
    """A tool factory whose mistake only shows when it is called, in a run."""
    return "not a tool"


def test_a_scenario_that_cannot_be_built_fails_on_its_first_turn() -> None:
    # a wrong field is refused when the scenario is written (test_lab_scenario_fields);
    # what only a run can find (a factory's result) fails the first turn, the rest not run
    broken = Scenario.scripted("broken", [answer("x", 1, 1)], turns=("a", "b"), tools=(not_a_tool,))
    turns = run_scenarios([broken], progress=False).turns
    assert turns["outcome"].iloc[0] == "failed"
    assert (turns["error_kind"].iloc[0], turns["error_reason"].iloc[0]) == ("scenario", "tools")
    assert pd.isna(turns["outcome"].iloc[1])
    assert pd.isna(turns["error_kind"].iloc[1])


def test_the_usd_limit_caps_the_whole_conversation() -> None:
    turn_cost = price((1_000, 100), (1_000, 100))
    limit = turn_cost * Decimal("1.5")
    twice = Scenario.scripted(
        "twice",
        [echo("a", 1_000, 100), answer("one", 1_000, 100)] * 2,
        turns=("first", "second"),
        usd_limit=limit,
    )
    results = run_scenarios([twice], progress=False)
    turns = results.turns
    assert turns["outcome"].tolist() == ["final_answer", "usd_budget_exhausted"]
    assert (turns["error_kind"].iloc[1], turns["error_reason"].iloc[1]) == (
        "cost",
        "budget_exhausted",
    )
    limits = results.rounds.groupby("turn")["usd_limit"].first()
    assert limits[1] == pytest.approx(float(limit))
    assert limits[2] == pytest.approx(float(limit - turn_cost))  # what turn 1 left


def test_observers_see_every_turn_in_order() -> None:
    seen: list[Event] = []
    results = run_scenarios([CHAT], observers=[seen.append], progress=False)
    assert tuple(seen) == results["chat"].events
    assert len({e.run_id for e in seen}) == 2


def test_scripted_turns_for_other_messages_are_refused_when_built() -> None:
    # they used to run and fail every time as a ScriptError, one failed row per scenario
    script = ScriptedTurns((Turn("hello", (answer("hi", 1, 1),)),))
    with pytest.raises(ConfigurationError, match="the model's script is for the turns") as info:
        Scenario("stray", script, prompt="bye")
    assert info.value.field == "turns"
    run = run_one(Scenario("matched", script, turns=("hello",)))
    assert run.outcome == "final_answer"


def test_prompt_and_turns_are_given_one_at_a_time() -> None:
    plain = Scenario.scripted("plain", [answer("x", 1, 1)])
    assert plain.messages == (DEFAULT_PROMPT,)
    asked = Scenario.scripted("asked", [answer("x", 1, 1)], prompt="why?")
    assert asked.messages == ("why?",)
    one = Scenario.scripted("one", [answer("x", 1, 1)], turns="just this")
    assert one.turns == ("just this",)
    with pytest.raises(ConfigurationError) as both:
        Scenario.scripted("both", [answer("x", 1, 1)], prompt="a", turns=("b",))
    assert both.value.field == "turns"
    with pytest.raises(ConfigurationError) as replaced:
        dataclasses.replace(asked, turns=("a", "b"))
    assert replaced.value.field == "turns"
    switched = dataclasses.replace(asked, prompt=None, turns=("a", "b"))
    assert switched.messages == ("a", "b")


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Scenario.scripted("s", [answer("x", 1, 1)], turns=("ok", " ")), "turns"),
        (lambda: Turn("", (answer("x", 1, 1),)), "turns"),
        (lambda: Turn("no replies", ()), "turns"),
        (
            lambda: Scenario.scripted("s", turns=(Turn("a", (answer("x", 1, 1),)), "b")),
            "turns",
        ),
        (
            lambda: Scenario.scripted(
                "s", [answer("x", 1, 1)], turns=(Turn("a", (answer("x", 1, 1),)),)
            ),
            "replies",
        ),
        (
            lambda: Scenario(
                "s", ScriptedModel((answer("x", 1, 1),)), turns=(Turn("a", (answer("x", 1, 1),)),)
            ),
            "turns",
        ),
        # a blank prompt is refused as a blank turn is (providers refuse whitespace-only text)
        (lambda: Scenario.scripted("s", [answer("x", 1, 1)], prompt="  "), "prompt"),
        (lambda: Scenario.scripted("s", [answer("x", 1, 1)], prompt=""), "prompt"),
    ],
)
def test_bad_turns_are_refused_with_the_field(build: object, field: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        build()  # type: ignore[operator]
    assert err.value.field == field


def test_a_multi_turn_sweep_saves_and_loads_with_its_turns(
    chat: LabResults, tmp_path: Path
) -> None:
    path = chat.save(tmp_path / "chat.jsonl")
    loaded = LabResults.load(path)
    assert loaded.records == chat.records
    assert loaded["chat"].turns == ("first question", "second question")
    for name in ("runs", "turns", "rounds", "tools", "events"):
        pd.testing.assert_frame_equal(getattr(loaded, name), getattr(chat, name), obj=name)
    assert loaded.turn_table() == chat.turn_table()


def test_a_save_from_before_turns_loads_as_one_turn(chat: LabResults, tmp_path: Path) -> None:
    single = run_scenarios([Scenario.scripted("single", [answer("x", 5, 1)])], progress=False)
    path = single.save(tmp_path / "old.jsonl")
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        line.pop("turns", None)  # what a save written before turns holds
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    loaded = LabResults.load(path)
    assert loaded["single"].turns == ()
    assert loaded.turns["turn"].tolist() == [1]
    assert pd.isna(loaded.turns["message"].iloc[0])
    assert loaded.runs[["turns", "turns_run"]].iloc[0].tolist() == [1, 1]


def test_multi_turn_scenarios_and_their_records_pickle(chat: LabResults) -> None:
    turned = Scenario.scripted("t", turns=(Turn("a", (answer("x", 1, 1),)),))
    assert pickle.loads(pickle.dumps(turned)) == turned
    assert pickle.loads(pickle.dumps(CHAT)) == CHAT
    record = chat["chat"]
    assert pickle.loads(pickle.dumps(record)) == record
