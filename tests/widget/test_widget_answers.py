"""Every request the page numbers gets an answer carrying its number, whatever went wrong.

The page waits for the answer to each numbered request and drops an answer whose number it
does not know; a request left unanswered reads "No answer from the kernel in 20 s" there,
which is untrue when the kernel did answer. So every path answers with the request's
number: a request refused as malformed, one of a type the debugger does not take, one whose
handler raised, and several answered before the next message goes out (each reaches it).
"""

from __future__ import annotations

from typing import Any

import comm
import pytest
from loopkit import FakeTime, MockComm, channel

from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.runs import Runs


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


@pytest.fixture
def fake() -> FakeTime:
    return FakeTime()


def answers(dbg: LoopDebugger) -> list[dict[str, Any]]:
    """Every answer the page was sent so far, in order, each once."""
    dbg.flush()
    seen: list[dict[str, Any]] = []
    for message in channel(dbg).custom():
        control = message["control"]
        for answer in [*control.get("answers", []), control.get("answer")]:
            if answer is not None and answer not in seen:
                seen.append(answer)
    return seen


def answer_to(dbg: LoopDebugger, number: int) -> dict[str, Any]:
    (found,) = [a for a in answers(dbg) if a["request"] == number]
    return found


def test_a_request_whose_handler_raises_is_answered_with_its_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dbg = LoopDebugger()

    def broken(self: Runs, run_id: str | None) -> None:
        raise OSError("the session file is gone")

    monkeypatch.setattr(Runs, "show", broken)  # what the page's show_run request calls
    channel(dbg).from_browser({"type": "show_run", "request": 41, "run_id": None})
    answer = answer_to(dbg, 41)
    assert (answer["ok"], answer["reason"], answer["action"]) == (False, "failed", "show_run")
    assert answer["message"] == "OSError: the session file is gone"
    dbg.close()


@pytest.mark.parametrize("kind", ["intervene", "fork", "show_run", "compare"])
def test_every_kind_of_request_whose_handler_raises_carries_its_number(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    def broken(self: LoopDebugger, content: dict[Any, Any]) -> Any:
        raise KeyError(f"{kind} broke")

    monkeypatch.setattr(LoopDebugger, "_carry_out", broken)  # what every request goes to
    dbg = LoopDebugger()
    channel(dbg).from_browser({"type": kind, "request": 7})
    answer = answer_to(dbg, 7)
    assert (answer["ok"], answer["reason"]) == (False, "failed")
    assert answer["message"] == f"KeyError: '{kind} broke'"
    dbg.close()


def test_a_request_of_a_type_the_debugger_does_not_take_is_answered() -> None:
    dbg = LoopDebugger()
    channel(dbg).from_browser({"type": "<b>frobnicate</b>", "request": 12})
    answer = answer_to(dbg, 12)
    assert (answer["ok"], answer["reason"]) == (False, "unknown_request")
    assert "<b>frobnicate</b>" in answer["message"]  # said as text; the page draws it as text
    for known in ("intervene", "fork", "show_run", "compare", "control"):
        assert known in answer["message"]
    # a message with no number (nobody waits for it) is no request: nothing is sent
    before = len(channel(dbg).custom())
    channel(dbg).from_browser({"type": "frobnicate"})
    dbg.flush()
    assert len(channel(dbg).custom()) == before
    dbg.close()


@pytest.mark.parametrize(
    "content",
    [
        {"type": "intervene", "action": "run_shell", "pause": 0},
        {"type": "fork", "round": "two"},
        {"type": "show_run"},
        {"type": "compare", "a": 1, "b": None},
        {"type": "control", "action": "rewind"},
        {"type": "control", "action": "step", "pause": "3"},
    ],
    ids=["intervene", "fork", "show_run", "compare", "control", "control-pause"],
)
def test_a_malformed_request_is_refused_with_its_number(content: dict[str, Any]) -> None:
    dbg = LoopDebugger()
    channel(dbg).from_browser({**content, "request": 5})
    answer = answer_to(dbg, 5)
    assert (answer["ok"], answer["reason"]) == (False, "bad_request")
    assert answer["message"]
    dbg.close()


def test_answers_given_before_the_next_message_all_reach_the_page(fake: FakeTime) -> None:
    dbg = LoopDebugger(clock=fake.clock, schedule=fake.schedule)
    for number in (1, 2, 3):  # a check as typed, then Apply, then Step, in one pacing slot
        channel(dbg).from_browser(
            {"type": "intervene", "request": number, "pause": 0, "action": "append_message"}
            | {"content": "x"}
        )
    fake.advance(1.0)
    assert [a["request"] for a in answers(dbg)] == [1, 2, 3]
    assert all(a["reason"] == "not_paused" for a in answers(dbg))
    dbg.close()


def test_an_answer_not_sent_yet_survives_a_hello(fake: FakeTime) -> None:
    dbg = LoopDebugger(clock=fake.clock, schedule=fake.schedule)
    channel(dbg).from_browser({"type": "hello"})
    # the page asks, then (having missed a batch) says hello before the answer went out
    channel(dbg).from_browser(
        {"type": "intervene", "request": 9, "pause": 0, "action": "append_message", "content": "x"}
    )
    channel(dbg).from_browser({"type": "hello"})
    fake.advance(1.0)
    assert answer_to(dbg, 9)["reason"] == "not_paused"
    dbg.close()
