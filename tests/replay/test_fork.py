"""``fork``: the first rounds taken from a source, the rest run again, side by side.

Fork equality is the backbone: forking at round *k* with the original's own replies must
reproduce the original's rounds, tokens and cost exactly, from every kind of source, and
under every budget that can bind (round cap, token budget, USD budget, pruning). Figures
are compared with ``RunFigures.of_result`` / ``of_error`` of the original run, which read
the original's own closing event, never the fork's arithmetic.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import IPython.lib.pretty
import pandas as pd
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import IN_A_LOOP, MODEL, calls, changed_config, final, reference_cost, tool_call

import toolloop_lab
from toolloop_lab import (
    AgentConfig,
    ForkResult,
    LLMAgent,
    PausePoint,
    Recording,
    RecordingChatModel,
    ReplayChatModel,
    ScriptedChatModel,
    ToolLoopResult,
    TraceWriter,
    afork,
    fork,
    prepare_fork,
    read_trace,
    usd_budget,
)
from toolloop_lab._replay.figures import RunFigures
from toolloop_lab._replay.fork.result import COMPARISON_DTYPES, RoundFigures
from toolloop_lab._support.words import outcome_text
from toolloop_lab.errors import ConfigurationError, ExecutionError, ToolLoopError, TraceError
from toolloop_lab.events import Event, Intervention, LoopStarted, transcript


class Adder:
    """An ``add`` tool that counts how often it really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[int, int]] = []

        @tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.ran.append((a, b))
            return a + b

        self.tools: list[BaseTool] = [add]


def replies(rounds: int, answer_tokens: tuple[int, int] = (700, 30)) -> list[AIMessage]:
    """``rounds`` tool rounds with growing prompts, then a final answer."""
    out = [
        calls(tool_call("add", {"a": n, "b": n}, f"c{n}"), tokens=(100 * n, 10 + n))
        for n in range(1, rounds + 1)
    ]
    return [*out, final("done", tokens=answer_tokens)]


# original() runs the source synchronously, from async tests too
pytestmark = pytest.mark.filterwarnings(IN_A_LOOP)


def model(script: Sequence[Any]) -> ScriptedChatModel:
    return ScriptedChatModel(list(script), model_name=MODEL)


def original(
    script: Sequence[AIMessage], config: AgentConfig | None = None, **agent: Any
) -> tuple[ToolLoopResult, ScriptedChatModel]:
    scripted = model(script)
    result = LLMAgent(scripted, Adder().tools, config, **agent).run("Add things.")
    return result, scripted


def assert_same_rounds(forked: ForkResult, at_round: int) -> None:
    """Per round, the fork's figures are the original's; the taken ones are marked."""
    assert [dataclass_fields(r) for r in forked.fork_rounds] == [
        dataclass_fields(r) for r in forked.original_rounds
    ]
    assert [r.taken for r in forked.fork_rounds] == [
        r.round < at_round for r in forked.original_rounds
    ]
    assert all(pair.tokens_delta == 0 and pair.cost_delta == 0 for pair in forked.rounds)


def without_ids(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as data, less the run id langchain-core stamps on every reply."""
    return [m.model_dump(exclude={"id"}) for m in messages]


def dataclass_fields(row: RoundFigures) -> tuple[Any, ...]:
    return (row.round, row.purpose, row.usage, row.tool_calls, row.tool_errors, row.outcome)


# -- fork equality ------------------------------------------------------------------------


@pytest.mark.parametrize("at_round", [1, 2, 3, 4])
def test_forking_with_the_same_replies_reproduces_the_run(at_round: int) -> None:
    script = replies(3)
    config = AgentConfig(tool_max_rounds=6)
    result, _ = original(script, config)
    adder = Adder()
    fork_model = model(script[at_round - 1 :])

    forked = fork(result, at_round, model=fork_model, tools=adder.tools, config=config)

    assert forked.forked == RunFigures.of_result(result)
    assert forked.original == RunFigures.of_result(result)
    assert forked.token_delta == 0
    assert forked.cost_delta == 0
    assert_same_rounds(forked, at_round)
    # nothing was called again for the rounds taken: neither the model nor a tool
    assert len(fork_model.calls) == len(script) - at_round + 1
    assert adder.ran == [(n, n) for n in range(at_round, 4)]
    # the fork's round k was sent exactly what the original's round k was sent
    assert list(fork_model.calls[0].messages) == list(result.messages[: len(forked.prefix)])
    assert forked.prefix == tuple(result.messages[: len(forked.prefix)])
    assert forked.result is not None
    assert forked.result.messages[: len(forked.prefix)] == forked.prefix
    rest = len(forked.prefix)
    assert without_ids(forked.result.messages[rest:]) == without_ids(result.messages[rest:])


def test_the_fork_takes_rounds_from_every_kind_of_source(tmp_path: Path) -> None:
    script = replies(3)
    config = AgentConfig(tool_max_rounds=6)
    recorded = tmp_path / "session.jsonl"
    traced = tmp_path / "trace.jsonl"
    live = RecordingChatModel(model(script), recorded)
    with TraceWriter(traced) as writer:
        result = LLMAgent(live, Adder().tools, config, observers=[writer]).run("Add things.")
    expected = RunFigures.of_result(result)
    sources: list[tuple[Any, str]] = [
        (result, "result"),
        (result.events, "events"),
        (list(result.events), "events"),
        (traced, "trace"),
        (str(traced), "trace"),
        (read_trace(traced), "trace"),
        (recorded, "recording"),
        (Recording.from_file(recorded), "recording"),
    ]
    for source, kind in sources:
        for at_round in (1, 2, 3, 4):
            forked = fork(
                source,
                at_round,
                model=ReplayChatModel.from_file(recorded),  # strict: finds round k's line
                tools=Adder().tools,
                config=config,
            )
            assert forked.source == kind
            assert forked.error is None, (kind, at_round, forked.error)
            assert forked.forked == expected, (kind, at_round)
            assert forked.original == expected, (kind, at_round)
            assert_same_rounds(forked, at_round)


# -- the model that made the run, forked again -----------------------------------------


@pytest.mark.parametrize("at_round", [1, 2, 3, 4])
def test_a_fork_on_the_scripted_model_that_made_the_run_answers_from_its_round(
    at_round: int,
) -> None:
    """The model that made the run has played its script; the fork still runs on it, from
    the reply the original got at the fork's round, and the model itself is unchanged."""
    script = replies(3)
    config = AgentConfig(tool_max_rounds=6)
    result, scripted = original(script, config)
    assert scripted.remaining == 0

    forked = fork(result, at_round, model=scripted, tools=Adder().tools, config=config)

    assert forked.error is None
    assert forked.forked == forked.original == RunFigures.of_result(result)
    assert_same_rounds(forked, at_round)
    assert (scripted.remaining, len(scripted.calls)) == (0, len(script))


def test_a_fork_on_the_models_that_made_a_pruned_run_answers_from_its_round() -> None:
    """The main and the pruning model both made the run (every pruning request the same
    text): each answers the fork from its own place in its script."""

    @tool
    def fetch(page: int) -> str:
        """Fetch a page."""
        return "x" * 50

    script = [
        calls(tool_call("fetch", {"page": n}, f"p{n}"), tokens=(100 * n, 10)) for n in (1, 2, 3)
    ] + [final("read", tokens=(500, 20))]
    prune_script = [final(f"short {n}", tokens=(40 + n, 5)) for n in (1, 2, 3)]
    config = AgentConfig(tool_max_rounds=6, prune_tools=("fetch",), prune_min_chars=10)
    main, pruner = model(script), model(prune_script)
    result = LLMAgent(main, [fetch], config, pruning_model=pruner).run("Read.")
    for at_round in (1, 2, 3, 4):
        forked = fork(
            result, at_round, model=main, tools=[fetch], pruning_model=pruner, config=config
        )
        assert forked.error is None, at_round
        assert forked.forked == RunFigures.of_result(result), at_round
        assert_same_rounds(forked, at_round)
        assert forked.result is not None
        pruned = [m.content for m in forked.result.messages if isinstance(m, ToolMessage)]
        assert pruned == ["short 1", "short 2", "short 3"], at_round
    # a pruning model with no reply left for the fork's pruning calls: refused, named
    spent = model([final("elsewhere")])
    spent.invoke("Something else.")
    with pytest.raises(ConfigurationError) as caught:
        fork(result, 2, model=main, tools=[fetch], pruning_model=spent, config=config)
    assert caught.value.field == "pruning_model"
    assert "the pruning model is a ScriptedChatModel" in str(caught.value)
    assert len(spent.calls) == 1


def test_a_fork_of_the_earlier_of_two_runs_with_one_prompt_answers_as_it_did() -> None:
    """One scripted model ran the same prompt twice, with different replies: a fork of
    either run from round 1 answers as that run was answered."""
    first, second = replies(2), replies(1, answer_tokens=(900, 90))
    scripted = model([*first, *second])
    agent = LLMAgent(scripted, Adder().tools)
    a, b = agent.run("Add things."), agent.run("Add things.")
    assert RunFigures.of_result(a) != RunFigures.of_result(b)
    for result in (a, b):
        for at_round in range(1, result.rounds + 1):
            forked = fork(result, at_round, model=scripted, tools=Adder().tools)
            assert forked.forked == RunFigures.of_result(result), (result.rounds, at_round)


def test_a_scripted_model_that_cannot_answer_the_fork_is_refused_before_any_call() -> None:
    result, _ = original(replies(2))
    spent = model(replies(1))
    LLMAgent(spent, Adder().tools).run("Something else.")  # every reply played, elsewhere
    made = len(spent.calls)
    with pytest.raises(ConfigurationError) as caught:
        fork(result, 2, model=spent, tools=Adder().tools)
    assert caught.value.field == "model"
    said = str(caught.value)
    assert "ScriptedChatModel that has played all 2 of its replies" in said
    assert "none answered what round 2 was sent" in said
    assert "fork with a model that can answer" in said
    assert len(spent.calls) == made  # refused before any call


def test_a_replay_that_replayed_the_run_answers_the_fork_afresh(tmp_path: Path) -> None:
    script = replies(2)
    recorded = tmp_path / "session.jsonl"
    LLMAgent(RecordingChatModel(model(script), recorded), Adder().tools).run("Add things.")
    replay = ReplayChatModel.from_file(recorded)
    result = LLMAgent(replay, Adder().tools).run("Add things.")
    assert replay.remaining == 0
    for at_round in (1, 2, 3):
        forked = fork(result, at_round, model=replay, tools=Adder().tools)
        assert forked.error is None, at_round
        assert forked.forked == RunFigures.of_result(result), at_round
    assert replay.remaining == 0  # the replay itself is unchanged
    other = tmp_path / "other.jsonl"
    LLMAgent(RecordingChatModel(model(script), other), Adder().tools).run("Something else.")
    elsewhere = ReplayChatModel.from_file(other)
    LLMAgent(elsewhere, Adder().tools).run("Something else.")
    with pytest.raises(ConfigurationError) as caught:
        fork(result, 2, model=elsewhere, tools=Adder().tools)
    assert caught.value.field == "model"
    assert "has no call sent what round 2 was sent" in str(caught.value)


def test_equality_when_the_round_cap_ends_the_run() -> None:
    script = [*replies(4)[:4], final("capped", tokens=(900, 40))]
    config = AgentConfig(tool_max_rounds=4)
    result, _ = original(script, config)
    assert result.synthesis_reason == "round_cap"
    for at_round in (2, 4):
        forked = fork(result, at_round, model=model(script[at_round - 1 :]), tools=Adder().tools)
        assert forked.run_config.tool_max_rounds == 4 - (at_round - 1)
        assert forked.forked == RunFigures.of_result(result)
        assert_same_rounds(forked, at_round)


def test_equality_when_the_token_budget_trips_in_a_later_round() -> None:
    script = [*replies(4)[:4], final("summary", tokens=(900, 40))]
    config = AgentConfig(tool_max_rounds=8, token_budget_percent=10, context_window=6_000)
    result, _ = original(script, config)
    assert result.outcome == "token_budget_exhausted"  # tripped after round 3 (600 tokens)
    assert result.rounds == 3
    for at_round in (1, 2, 3):
        forked = fork(
            result,
            at_round,
            model=model(script[at_round - 1 :]),
            tools=Adder().tools,
            config=config,
        )
        assert forked.forked == RunFigures.of_result(result), at_round
        assert_same_rounds(forked, at_round)
        # the fork's own run got exactly what the whole run had left
        started = next(e for e in forked.events if isinstance(e, LoopStarted))
        assert started.token_budget == 600 - forked.taken.total_tokens


def test_equality_when_the_usd_budget_stops_the_run() -> None:
    script = replies(4)
    spend = [(100 * n, 10 + n) for n in range(1, 5)]
    limit = reference_cost(spend[:3])  # the 3rd round's call takes the run over... exactly at
    with usd_budget(limit - Decimal("0.0000001")), pytest.raises(ExecutionError) as info:
        LLMAgent(model(script), Adder().tools, AgentConfig(tool_max_rounds=8)).run("Add things.")
    stopped = info.value
    expected = RunFigures.of_error(stopped)
    assert expected.outcome == "usd_budget_exhausted"
    for at_round in (1, 2, 3):
        with usd_budget(limit - Decimal("0.0000001")):
            forked = fork(
                stopped.events,
                at_round,
                model=model(script[at_round - 1 :]),
                tools=Adder().tools,
                config=AgentConfig(tool_max_rounds=8),
            )
        assert isinstance(forked.error, ExecutionError)
        assert (forked.error.kind, forked.error.reason) == ("cost", "budget_exhausted")
        assert forked.forked == expected, at_round
        assert_same_rounds(forked, at_round)


def test_a_usd_budget_the_rounds_taken_already_spent_stops_the_fork_at_once() -> None:
    script = replies(3)
    result, _ = original(script, AgentConfig(tool_max_rounds=6))
    fork_model = model(script[2:])
    with usd_budget(reference_cost([(100, 11)])):  # less than rounds 1 and 2 cost
        forked = fork(result, 3, model=fork_model, tools=Adder().tools)
    assert forked.forked.outcome == "usd_budget_exhausted"
    assert fork_model.calls == ()
    assert forked.forked.calls == 2


def test_equality_with_pruning_in_the_rounds_taken() -> None:
    big = "x" * 50

    @tool
    def fetch(page: int) -> str:
        """Fetch a page."""
        return big

    script = [
        calls(tool_call("fetch", {"page": n}, f"p{n}"), tokens=(100 * n, 10)) for n in (1, 2, 3)
    ] + [final("read", tokens=(500, 20))]
    prune_script = [final("short", tokens=(40, 5)) for _ in range(3)]
    config = AgentConfig(tool_max_rounds=6, prune_tools=("fetch",), prune_min_chars=10)
    result = LLMAgent(model(script), [fetch], config, pruning_model=model(prune_script)).run(
        "Read."
    )
    assert result.usage.requests == 7
    for at_round in (2, 3, 4):
        pruner = model(prune_script[at_round - 1 :])
        forked = fork(
            result,
            at_round,
            model=model(script[at_round - 1 :]),
            tools=[fetch],
            pruning_model=pruner,
            config=config,
        )
        assert forked.forked == RunFigures.of_result(result), at_round
        assert_same_rounds(forked, at_round)
        assert forked.taken.requests == 2 * (at_round - 1)  # each taken round and its pruning
        assert len(pruner.calls) == 3 - (at_round - 1)
        # the pruned output is what the fork's prefix carries
        assert [m.content for m in forked.prefix if isinstance(m, ToolMessage)] == ["short"] * (
            at_round - 1
        )


async def test_afork_and_a_scripted_reply_that_depends_on_the_request() -> None:
    script = replies(2)
    result, scripted = original(script)
    seen: list[int] = []

    def reply(messages: list[BaseMessage], _tools: Any) -> AIMessage:
        seen.append(len(messages))
        return script[1]

    forked = await afork(result, 2, model=model([reply, script[2]]), tools=Adder().tools)

    assert seen == [len(scripted.calls[1].messages)]
    assert forked.forked == RunFigures.of_result(result)


# -- a changed config ---------------------------------------------------------------------


def test_a_fork_with_a_lower_round_cap_shows_the_deltas() -> None:
    script = replies(4)
    result, _ = original(script, AgentConfig(tool_max_rounds=6))
    capped = final("best guess", tokens=(650, 25))
    fork_model = model([script[1], capped])

    forked = fork(
        result, 2, model=fork_model, tools=Adder().tools, config=AgentConfig(tool_max_rounds=2)
    )

    assert forked.forked.outcome == "synthesis"
    assert forked.forked.synthesis_reason == "round_cap"
    assert (forked.original.rounds, forked.forked.rounds) == (5, 2)
    spent = [(100 * n, 10 + n) for n in (1, 2)] + [(650, 25)]
    assert forked.forked.input_tokens == 100 + 200 + 650
    assert forked.forked.cost_usd == reference_cost(spent)
    assert forked.token_delta == forked.forked.total_tokens - forked.original.total_tokens
    assert forked.token_delta == sum(pair.tokens_delta for pair in forked.rounds)
    assert forked.cost_delta == sum(
        (pair.cost_delta for pair in forked.rounds if pair.cost_delta is not None), Decimal(0)
    )
    pairs = {pair.round: pair for pair in forked.rounds}
    assert pairs[3].fork is not None
    assert (pairs[3].fork.purpose, pairs[3].fork.outcome) == ("synthesis", "synthesis")
    assert pairs[3].original is not None
    assert pairs[3].original.outcome == "tools"
    assert pairs[5].fork is None
    assert pairs[5].tokens_delta == -(700 + 30)

    frame = forked.comparison()
    assert list(frame.columns) == list(COMPARISON_DTYPES)
    assert {c: str(t) for c, t in frame.dtypes.items()} == COMPARISON_DTYPES
    assert frame["round"].tolist() == [1, 2, 3, 4, 5]
    assert frame["taken"].tolist() == [True, False, False, False, False]
    assert frame["tokens_delta"].sum() == forked.token_delta
    assert frame["cost_delta_usd"].sum() == pytest.approx(float(forked.cost_delta or 0))
    assert frame["fork_outcome"].tolist()[:3] == ["tools", "tools", "synthesis"]
    assert frame["fork_tokens"].isna().tolist() == [False, False, False, True, True]
    assert pd.isna(frame.loc[4, "fork_cost_usd"])


def test_the_summary_puts_both_runs_side_by_side() -> None:
    script = replies(3)
    result, _ = original(script, AgentConfig(tool_max_rounds=6))
    forked = fork(
        result,
        2,
        model=model([script[1], final("short", tokens=(300, 5))]),
        tools=Adder().tools,
        config=AgentConfig(tool_max_rounds=6),
    )
    text = forked.summary
    lines = text.splitlines()
    assert lines[0] == ("Fork at round 2 of a result (1 round taken), tool_max_rounds=6:")
    said = outcome_text("final_answer")  # in the words every view uses, not the code
    assert lines[2].split() == ["outcome", *said.split(), *said.split()]
    assert lines[3].split() == ["rounds", "4", "3", "-1"]
    assert str(forked) == text
    assert IPython.lib.pretty.pretty(forked) == text  # what a notebook cell shows


def test_an_unpriced_model_gives_unknown_costs_not_zero() -> None:
    script = replies(2)
    result = LLMAgent(ScriptedChatModel(script), Adder().tools).run("Add.")
    forked = fork(
        result,
        2,
        model=ScriptedChatModel([script[1], final("x")]),
        tools=Adder().tools,
    )
    assert forked.forked.cost_usd is None
    assert forked.cost_delta is None
    assert forked.comparison()["cost_delta_usd"].isna().all()
    assert "unpriced" in forked.summary


# -- where the fork starts ----------------------------------------------------------------


def test_the_fork_keeps_what_a_person_changed_before_round_k() -> None:
    script = replies(3)

    async def hook(point: PausePoint) -> None:
        if point.stage == "tool_dispatch" and point.round == 1:
            point.edit_args("c1", {"a": 5, "b": 5})
        if point.stage == "model_call" and point.round == 2:
            point.edit_result("c1", "ten")
            point.append("Keep going.")

    result, scripted = original(script, pause_hooks=[hook])
    fork_model = model(script[1:])

    forked = fork(result, 2, model=fork_model, tools=Adder().tools)

    assert list(fork_model.calls[0].messages) == list(scripted.calls[1].messages)
    assert forked.prefix[-2].content == "ten"
    assert forked.prefix[-1] == HumanMessage("Keep going.")
    reply = forked.prefix[1]
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls[0]["args"] == {"a": 5, "b": 5}
    assert forked.forked == RunFigures.of_result(result)
    # the fork's own events hold only what was done in the fork
    assert [e for e in forked.events if isinstance(e, Intervention)] == []


def test_forking_at_the_synthesis_call_starts_before_its_prompt() -> None:
    script = [*replies(2)[:2], final("capped", tokens=(400, 9))]
    result, _ = original(script, AgentConfig(tool_max_rounds=2))
    assert result.synthesis_was_run
    fork_model = model([final("answered", tokens=(380, 7))])

    forked = fork(
        result, 3, model=fork_model, tools=Adder().tools, config=AgentConfig(tool_max_rounds=3)
    )

    sent = fork_model.calls[0]
    assert sent.tool_names == ("add",)  # a tool round again, not a synthesis call
    assert isinstance(sent.messages[-1], ToolMessage)
    assert AgentConfig().synthesis_prompt not in [m.content for m in sent.messages]
    assert forked.forked.outcome == "final_answer"
    assert forked.forked.rounds == 3
    assert [r.taken for r in forked.fork_rounds] == [True, True, False]
    assert forked.original_rounds[-1].purpose == "synthesis"


def test_the_fork_can_pause_for_edits_like_any_run() -> None:
    script = replies(3)
    result, _ = original(script)
    adder = Adder()
    points: list[tuple[str, int, int]] = []

    async def hook(point: PausePoint) -> None:
        points.append((point.stage, point.round, len(point.messages)))
        if point.stage == "model_call" and point.round == 1:
            point.edit_result("c1", "a hand-fixed result")  # round 1's, not sent in the fork yet
        if point.stage == "tool_dispatch" and point.round == 1:
            point.edit_args("c2", {"a": 20, "b": 20})

    fork_model = model(script[1:])
    forked = fork(result, 2, model=fork_model, tools=adder.tools, pause_hooks=[hook])

    assert points[0] == ("model_call", 1, 3)
    assert fork_model.calls[0].messages[2].content == "a hand-fixed result"
    assert adder.ran == [(20, 20), (3, 3)]
    assert forked.result is not None
    assert [(e.action, e.round) for e in forked.events if isinstance(e, Intervention)] == [
        ("edit_result", 1),
        ("edit_args", 1),
    ]
    assert transcript(forked.events) == list(forked.result.messages)


def test_added_messages_follow_the_prefix() -> None:
    script = replies(2)
    result, _ = original(script)
    prepared = prepare_fork(result, 2, model=model(script[1:]), tools=Adder().tools)
    fork_model = prepared.agent.model
    assert isinstance(fork_model, ScriptedChatModel)

    forked = prepared.run("Try harder.")

    assert fork_model.calls[0].messages[-1] == HumanMessage("Try harder.")
    assert fork_model.calls[0].messages[:-1] == forked.prefix


# -- what a debugger drives ----------------------------------------------------------------


async def test_a_prepared_fork_runs_under_the_debugger_in_step_mode() -> None:
    from toolloop_lab._widget.debugger import LoopDebugger

    script = replies(3)
    result, _ = original(script)
    prepared = prepare_fork(result, 2, model=model(script[1:]), tools=Adder().tools)
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(prepared, ())
    for _ in range(200):
        await asyncio.sleep(0.01)
        if dbg.paused_at is not None:
            break
    point = dbg.paused_at
    assert point is not None
    assert (point.stage, [c.id for c in point.calls]) == ("tool_dispatch", ["c2"])
    point.skip("c2", "99")
    dbg.continue_()
    forked = await task

    assert isinstance(forked, ForkResult)
    assert forked.forked.rounds == 4
    assert dbg.view.status == "finished"
    assert [e.action for e in forked.events if isinstance(e, Intervention)] == ["skip"]
    assert prepared.observers == ()  # the debugger detached itself after the run
    dbg.close()


async def test_stopping_a_fork_cancels_it() -> None:
    script = replies(3)
    result, _ = original(script)
    held = asyncio.Event()

    async def hold(point: PausePoint) -> None:
        held.set()
        await asyncio.sleep(60)

    prepared = prepare_fork(
        result, 2, model=model(script[1:]), tools=Adder().tools, pause_hooks=[hold]
    )
    task = asyncio.create_task(prepared.arun())
    await held.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_a_failing_fork_is_a_result_with_its_partial_figures() -> None:
    script = replies(3)
    result, _ = original(script)
    forked = fork(result, 2, model=model(script[1:2]), tools=Adder().tools)  # runs out

    assert isinstance(forked.error, ToolLoopError)
    assert forked.forked.outcome == "failed"
    assert forked.forked.rounds == 2
    assert forked.forked.input_tokens == 100 + 200
    assert forked.result is None
    assert forked.events[-1].kind == "loop_failure"
    assert "The fork stopped: ToolLoopError" in forked.summary


def test_the_config_defaults_to_what_the_source_recorded() -> None:
    script = replies(2)
    config = AgentConfig(tool_max_rounds=7, token_budget_percent=50, context_window=9_000)
    result, _ = original(script, config)
    prepared = prepare_fork(result, 2, model=model(script[1:]), tools=Adder().tools)

    assert prepared.config.tool_max_rounds == 7
    assert prepared.config.context_window == 9_000
    assert prepared.run_config.tool_max_rounds == 6
    forked = prepared.run()
    started = next(e for e in forked.events if isinstance(e, LoopStarted))
    assert started.token_budget == 4_500 - forked.taken.total_tokens
    assert forked.forked == RunFigures.of_result(result)


def test_fork_is_exported_lazily_and_stays_the_function() -> None:
    assert toolloop_lab.fork is fork
    assert "fork" in toolloop_lab.__all__


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize("at_round", [0, -1, True, "2", 2.0, 5])
def test_a_round_the_source_does_not_have_is_refused(at_round: Any) -> None:
    result, _ = original(replies(3))
    fork_model = model([])
    with pytest.raises(ConfigurationError) as info:
        fork(result, at_round, model=fork_model, tools=Adder().tools)
    assert info.value.field == "at_round"


@pytest.mark.parametrize(
    ("config", "field"),
    [
        (AgentConfig(tool_max_rounds=2), "tool_max_rounds"),
        (AgentConfig(token_budget_percent=1, context_window=20_000), "token_budget_percent"),
        # refused when built; one changed after it was built is refused by the fork
        (changed_config(tool_max_rounds=0), "tool_max_rounds"),
        (changed_config(token_budget_percent=150), "token_budget_percent"),
    ],
)
def test_a_config_the_run_could_not_reach_round_k_under_is_refused(
    config: AgentConfig, field: str
) -> None:
    result, _ = original(replies(3), AgentConfig(tool_max_rounds=6))
    fork_model = model(replies(3))
    with pytest.raises(ConfigurationError) as info:
        fork(result, 3, model=fork_model, tools=Adder().tools, config=config)
    assert info.value.field == field
    assert fork_model.calls == ()


def test_sources_that_are_not_runs_are_refused(tmp_path: Path) -> None:
    tools = Adder().tools
    with pytest.raises(ConfigurationError) as info:
        fork(42, 1, model=model([]), tools=tools)  # type: ignore[arg-type]
    assert info.value.field == "source"
    with pytest.raises(ConfigurationError) as info:
        fork((), 1, model=model([]), tools=tools)
    assert info.value.field == "source"
    with pytest.raises(TraceError):
        fork(tmp_path / "missing.jsonl", 1, model=model([]), tools=tools)
    deep = tmp_path / "deep.jsonl"
    deep.write_text("[" * 100_000 + "\n")
    with pytest.raises(TraceError, match="not a toolloop_lab trace"):
        fork(deep, 1, model=model([]), tools=tools)
    result, _ = original(replies(1))
    with pytest.raises(ConfigurationError) as info:
        fork(result.events, 1, model=model([]), tools=tools, run_id="nope")
    assert info.value.field == "run_id"
    with pytest.raises(ConfigurationError, match=r"run_id must be a run id \(a string\)") as info:
        fork(result.events, 1, model=model([]), tools=tools, run_id=5)  # type: ignore[arg-type]
    assert info.value.field == "run_id"


def test_a_trace_with_several_runs_forks_the_one_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "two.jsonl"
    runs: list[ToolLoopResult] = []
    with TraceWriter(path) as writer:
        for rounds in (1, 2):
            scripted = model(replies(rounds))
            runs.append(LLMAgent(scripted, Adder().tools, observers=[writer]).run("Add."))
    last = fork(path, 2, model=model(replies(2)[1:]), tools=Adder().tools)
    first = fork(
        path,
        2,
        model=model([final("done", tokens=(700, 30))]),
        tools=Adder().tools,
        run_id=runs[0].run_id,
    )
    assert last.forked == RunFigures.of_result(runs[1])
    assert first.forked == RunFigures.of_result(runs[0])


def test_a_trace_cut_short_still_forks_from_its_complete_rounds(tmp_path: Path) -> None:
    script = replies(3)
    result, _ = original(script)
    events: list[Event] = list(result.events[: len(result.events) // 2 + 3])
    forked = fork(events, 2, model=model(script[1:]), tools=Adder().tools)
    assert forked.original.detail == "incomplete"
    assert forked.forked == RunFigures.of_result(result)


def test_a_usd_budget_over_unpriced_rounds_taken_is_refused() -> None:
    script = replies(2)
    result = LLMAgent(ScriptedChatModel(script), Adder().tools).run("Add.")
    fork_model = model(script[1:])
    with usd_budget(1), pytest.raises(ExecutionError) as info:
        fork(result, 2, model=fork_model, tools=Adder().tools)
    assert (info.value.kind, info.value.reason) == ("cost", "unpriced")
    assert fork_model.calls == ()


def test_preparing_a_fork_runs_nothing() -> None:
    script = replies(2)
    result, _ = original(script)
    fork_model = model(script[1:])
    prepared = prepare_fork(result, 2, model=fork_model, tools=Adder().tools)
    assert fork_model.calls == ()
    assert repr(prepared) == "Fork(at_round=2, source='result', prefix=3 messages)"
    assert prepared.taken.requests == 1
    assert prepared.original == RunFigures.of_result(result)


def traced_run(path: Path, rounds: int) -> ToolLoopResult:
    """A run of ``rounds`` tool rounds and a final answer, traced to ``path``."""
    with TraceWriter(path) as writer:
        return LLMAgent(model(replies(rounds)), Adder().tools, observers=[writer]).run("Add.")


def damage_line(path: Path, kind: str, round_number: int, text: str) -> int:
    """Overwrite the trace line of the ``kind`` event of ``round_number`` with ``text``;
    returns its line number."""
    lines = path.read_text(encoding="ascii").split("\n")
    for number, line in enumerate(lines, start=1):
        if f'"kind":"{kind}"' in line and f'"round":{round_number},' in line:
            lines[number - 1] = text
            path.write_text("\n".join(lines), encoding="ascii")
            return number
    raise AssertionError(f"no {kind} line in round {round_number}")


@pytest.mark.parametrize("damage", ['{"run_id": "cut sh', '{"kind": "model_call_start"}'])
def test_a_fork_whose_taken_rounds_touch_an_unreadable_trace_line_is_refused(
    tmp_path: Path, damage: str
) -> None:
    path = tmp_path / "trace.jsonl"
    traced_run(path, 2)
    number = damage_line(path, "model_call_start", 1, damage)
    assert [s.number for s in read_trace(path).skipped] == [number]
    for source in (path, read_trace(path)):
        fork_model = model([final("done", tokens=(700, 30))])
        with pytest.raises(TraceError) as info:
            fork(source, 3, model=fork_model, tools=Adder().tools)
        assert info.value.lines == (number,)
        assert f"line {number}" in str(info.value)
        assert fork_model.calls == ()


def test_a_fork_from_a_trace_whose_round_is_on_an_unreadable_line_names_the_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    traced_run(path, 2)
    number = damage_line(path, "model_call_start", 2, "not json")
    with pytest.raises(TraceError) as info:
        fork(path, 2, model=model(replies(2)[1:]), tools=Adder().tools)
    assert info.value.lines == (number,)


def test_unreadable_trace_lines_outside_the_rounds_taken_do_not_stop_a_fork(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trace.jsonl"
    first = traced_run(path, 1)
    result = traced_run(path, 2)
    # a damaged line of the earlier run, and one of the round the fork runs again
    damage_line(path, "tool_dispatch", 1, json.dumps({"run_id": first.run_id, "round": "x"}))
    damage_line(path, "model_call", 3, "not json")
    forked = fork(path, 3, model=model(replies(2)[2:]), tools=Adder().tools)
    assert forked.prefix == tuple(result.messages[: len(forked.prefix)])
    assert forked.forked.rounds == 3
