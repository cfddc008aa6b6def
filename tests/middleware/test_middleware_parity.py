"""Parity: every catalog scenario run through ``LLMAgent`` and through LangChain's
``create_agent`` with ``ToolLoopMiddleware`` ends the same way, with the same counts,
tokens, costs and event kinds (issue "drive create_agent through its middleware")."""

from __future__ import annotations

from typing import Any

import pytest
from middlewarekit import Ran, run_create_agent, run_llm_agent

from toolloop_lab.events import LoopFailed, LoopFinished, ModelCalled, ToolDispatched
from toolloop_lab.lab import catalog

SCENARIOS = {s.name: s for s in catalog()}


def _ending(ran: Ran) -> dict[str, Any]:
    """How a run ended, as its last event and its error say."""
    last = ran.events[-1]
    ending: dict[str, Any] = {"kind": last.kind, "rounds": getattr(last, "rounds", None)}
    if isinstance(last, LoopFinished):
        ending.update(outcome=last.outcome, reason=last.synthesis_reason, text=last.final_text)
    if isinstance(last, LoopFailed):
        ending.update(error_kind=last.error_kind, reason=last.reason, outcome=last.outcome)
    if ran.error is not None:
        err: Any = ran.error
        ending.update(
            error=type(err).__name__,
            err_rounds=err.rounds,
            calls=err.model_calls,
            prompt=err.accumulated_prompt,
            completion=err.accumulated_completion,
            cost=err.cost_usd,
        )
    return ending


def _spend(ran: Ran) -> list[tuple[str, int, int, Any]]:
    return [
        (e.purpose, e.usage.input_tokens, e.usage.output_tokens, e.usage.cost_usd)
        for e in ran.events
        if isinstance(e, ModelCalled)
    ]


def _tools(ran: Ran) -> list[tuple[str, str, str | None, bool, str]]:
    return [
        (e.name, e.status, e.error_reason, e.ran, e.content)
        for e in ran.events
        if isinstance(e, ToolDispatched)
    ]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_catalog_script_runs_the_same_through_create_agent(name: str) -> None:
    scenario = SCENARIOS[name]
    prompt = scenario.messages[0]
    ours = run_llm_agent(scenario.build_agent(()), prompt, scenario.usd_limit)
    theirs = run_create_agent(scenario.build_agent(()), prompt, scenario.usd_limit)

    assert [e.kind for e in theirs.events] == [e.kind for e in ours.events]
    assert _ending(theirs) == _ending(ours)
    assert _spend(theirs) == _spend(ours)
    assert _tools(theirs) == _tools(ours)
    assert [e.round for e in theirs.events] == [e.round for e in ours.events]


def test_the_parity_check_can_fail() -> None:
    """Two different scripts are told apart (the comparison is not vacuous)."""
    one, other = SCENARIOS["single_round"], SCENARIOS["multi_round"]
    a = run_llm_agent(one.build_agent(()), one.messages[0])
    b = run_create_agent(other.build_agent(()), other.messages[0])
    assert [e.kind for e in a.events] != [e.kind for e in b.events]
    assert _spend(a) != _spend(b)
