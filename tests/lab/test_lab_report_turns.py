"""The report of a multi-turn sweep: each turn in order, with its message, its outcome and
its own run's view; turns after a failed one listed as not run; every message escaped."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import json
import re

import pytest

from toolloop_lab.lab import LabResults, Reply, Scenario, Turn, catalog, run_scenarios

HOSTILE = '<img src=x onerror=alert(1)> and </script><script>alert("pwned")</script>'


def answer(text: str) -> Reply:
    return Reply.final(text, input_tokens=10, output_tokens=2)


@pytest.fixture(scope="module")
def results() -> LabResults:
    chat = Scenario.scripted(
        "chat",
        turns=(
            Turn("first question", (Reply.call("echo", {"text": "a"}), answer("one"))),
            Turn(HOSTILE, (answer("two"),)),
        ),
    )
    broken = Scenario.scripted(
        "broken",
        turns=(
            Turn("fine", (answer("ok"),)),
            Turn("breaks", (Reply.failure("provider down"),)),
            Turn("never asked", (answer("never"),)),
        ),
    )
    return run_scenarios([chat, broken, catalog()[0]], progress=False)


def section(report: str, index: int) -> str:
    start = report.index(f'id="scenario-{index}"')
    end = report.find('<section class="scenario"', start)
    return report[start : end if end > 0 else len(report)]


def slots(html: str) -> list[list[dict[str, object]]]:
    """The events embedded in each run view of ``html``."""
    blocks = re.findall(r'data-role="events">(.*?)</script>', html, flags=re.S)
    return [json.loads(block) for block in blocks]


def test_each_turn_that_ran_has_its_own_view(results: LabResults) -> None:
    report = results.report_html()
    chat = section(report, 0)
    assert chat.count('<h4 class="turn">') == 2
    views = slots(chat)
    assert len(views) == 2
    run_ids = [{e["run_id"] for e in events} for events in views]
    assert all(len(ids) == 1 for ids in run_ids)
    assert run_ids[0] != run_ids[1]
    assert [ids.pop() for ids in run_ids] == list(results.turns["run_id"][:2])
    assert "first question" in chat
    assert "Tokens per turn" in report


def test_turns_after_a_failed_one_are_listed_as_not_run(results: LabResults) -> None:
    broken = section(results.report_html(), 1)
    headings = re.findall(r'<h4 class="turn">Turn (\d) <span class="o o-(\w+)">', broken)
    assert headings == [("1", "final_answer"), ("2", "failed"), ("3", "not_run")]
    assert len(slots(broken)) == 2  # the failed turn's partial run is shown; turn 3 has none
    assert "never asked" in broken


def test_turn_messages_are_escaped(results: LabResults) -> None:
    report = results.report_html()
    assert HOSTILE not in report
    assert "<img src=x" not in report
    assert "&lt;img src=x onerror=alert(1)&gt;" in report


def test_a_one_turn_scenario_looks_as_it_did(results: LabResults) -> None:
    single = section(results.report_html(), 2)
    assert '<h4 class="turn">' not in single
    assert len(slots(single)) == 1
    one_turn = run_scenarios(catalog()[:2], progress=False).report_html()
    assert "Tokens per turn" not in one_turn
