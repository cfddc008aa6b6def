"""Changes at a pause and "Fork from here", as the browser asks for them (mock comm).

A real :class:`LLMAgent` runs in step mode; the test plays the browser: it reads the pause
the widget sent, sends ``intervene`` and ``fork`` requests, and reads the answers and the
events that come back. Everything the browser sends is untrusted, so a catalogue of
malformed and hostile requests must each be refused with a typed reason, change nothing,
and leave the pause holding.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import comm
import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.tools import tool
from loopkit import ALL, MockComm, calls, channel, final, received, tool_call, until

from toolloop_lab import AgentConfig, ForkResult, LLMAgent, ScriptedChatModel, fork
from toolloop_lab._trace import write_trace
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab._widget.requests import MAX_REQUEST_CHARS
from toolloop_lab._widget.wire import event_payload
from toolloop_lab.errors import ConfigurationError


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


ran: list[str] = []


@tool
def read_log(database: str) -> str:
    """Read last night's backup log of a database."""
    ran.append(database)
    return f"{database}: FAILED" if database == "orders" else f"{database}: OK"


def analyst(messages: list[BaseMessage], bound_tools: Any) -> AIMessage:
    """Reads the orders log, then answers with what the last tool message said (so an
    edit shows in its answer); without tools (synthesis), says what it has."""
    results = [m for m in messages if isinstance(m, ToolMessage)]
    if not bound_tools:
        return final(f"synthesised from {len(results)} result(s)")
    if not results:
        return calls(tool_call("read_log", {"database": "orders"}, "c1"))
    return final(f"answer: {results[-1].content}")


def agent(cap: int = 3) -> LLMAgent:
    model = ScriptedChatModel([analyst] * 8, model_name="gpt-4o-mini")
    return LLMAgent(model, [read_log], AgentConfig(tool_max_rounds=cap))


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    ran.clear()
    yield
    ran.clear()


def control(dbg: LoopDebugger) -> dict[str, Any]:
    """The step state the browser has now (what the last message carried)."""
    dbg.flush()
    dbg.redraw()
    result: dict[str, Any] = channel(dbg).custom()[-1]["control"]
    return result


async def paused(dbg: LoopDebugger, stage: str) -> dict[str, Any]:
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.stage == stage)
    point: dict[str, Any] = control(dbg)["paused_at"]
    assert point["stage"] == stage
    return point


def ask(dbg: LoopDebugger, content: Any) -> dict[str, Any]:
    """Send ``content`` as the browser; return the answer the next message carries."""
    channel(dbg).from_browser(content)
    answer: dict[str, Any] = control(dbg)["answer"]
    return answer


def sent_events(dbg: LoopDebugger) -> list[dict[str, Any]]:
    """Every event the browser has, once whatever is pending went out."""
    dbg.flush()
    return received(dbg)


def interventions(dbg: LoopDebugger) -> list[dict[str, Any]]:
    return [e for e in sent_events(dbg) if e["kind"] == "intervention"]


# -- at a tool-dispatch pause ------------------------------------------------------------
async def test_a_bad_edit_is_refused_with_the_schema_text_then_a_good_one_runs() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "Check the backups.")
    point = await paused(dbg, "tool_dispatch")
    assert point["editable"] is True
    assert point["calls"] == [
        {
            "id": "c1",
            "name": "read_log",
            "args": {"database": "orders"},
            "valid": True,
            "error": None,
        }
    ]
    base = {"type": "intervene", "pause": point["pause"], "call_id": "c1"}

    check = ask(dbg, {**base, "request": 1, "action": "check_args", "args": {"db": "users"}})
    assert (check["request"], check["ok"], check["reason"]) == (1, False, "invalid_args")
    assert "db" in check["message"]
    assert "database" in check["message"]  # what the tool takes
    assert ask(dbg, {**base, "request": 2, "action": "check_args", "args": {"database": "x"}})["ok"]
    refused = ask(dbg, {**base, "request": 3, "action": "edit_args", "args": {"database": 7}})
    assert (refused["request"], refused["ok"], refused["reason"]) == (3, False, "invalid_args")
    assert refused["message"]
    # nothing changed, and the loop still waits at the same pause
    assert interventions(dbg) == []
    assert dbg.paused_at is not None
    assert control(dbg)["paused_at"]["pause"] == point["pause"]
    assert control(dbg)["paused_at"]["calls"][0]["args"] == {"database": "orders"}

    done = ask(dbg, {**base, "request": 4, "action": "edit_args", "args": {"database": "users"}})
    assert (done["request"], done["ok"]) == (4, True)
    assert control(dbg)["paused_at"]["calls"][0]["args"] == {"database": "users"}
    dbg.continue_()
    result = await task
    assert ran == ["users"]  # the tool ran with the edited arguments only
    assert result.final_response.text == "answer: users: OK"
    (event,) = interventions(dbg)
    assert (event["action"], event["tool_call_id"]) == ("edit_args", "c1")
    assert (event["before"], event["after"]) == ({"database": "orders"}, {"database": "users"})
    assert "changed by you: arguments edited" in dbg.summary()
    dbg.close()


async def test_skip_with_a_written_result() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "Check the backups.")
    point = await paused(dbg, "tool_dispatch")
    answer = ask(
        dbg,
        {
            "type": "intervene",
            "request": 5,
            "pause": point["pause"],
            "action": "skip",
            "call_id": "c1",
            "content": "orders: OK (checked by hand)",
        },
    )
    assert answer["ok"] is True
    dbg.continue_()
    result = await task
    assert ran == []  # the tool never ran
    assert result.final_response.text == "answer: orders: OK (checked by hand)"
    dispatch = next(e for e in sent_events(dbg) if e["kind"] == "tool_dispatch")
    assert (dispatch["ran"], dispatch["status"]) == (False, "success")
    assert dispatch["content"] == "orders: OK (checked by hand)"
    assert [e["action"] for e in interventions(dbg)] == ["skip"]
    dbg.close()


# -- at a model-call pause ---------------------------------------------------------------
async def test_add_a_message_and_edit_an_unseen_result() -> None:
    dbg = LoopDebugger(pause_on="model")
    task = dbg.start(agent(), "Check the backups.")
    first = await paused(dbg, "model_call")
    assert first["results"] == []  # nothing to edit before the first call
    dbg.step()
    await until(lambda: dbg.paused_at is not None and dbg.paused_at.round == 2)
    point = control(dbg)["paused_at"]
    assert point["stage"] == "model_call"
    assert point["results"] == ["c1"]  # round 1's result: the model has not seen it
    assert point["messages"][-1]["data"]["content"] == "orders: FAILED"
    base = {"type": "intervene", "pause": point["pause"]}
    edited = ask(
        dbg,
        {**base, "request": 1, "action": "edit_result", "call_id": "c1", "content": "orders: OK"},
    )
    assert edited["ok"] is True
    added = ask(dbg, {**base, "request": 2, "action": "append_message", "content": "Be brief."})
    assert added["ok"] is True
    sent = control(dbg)["paused_at"]["messages"]
    assert [m["data"]["content"] for m in sent[-2:]] == ["orders: OK", "Be brief."]
    dbg.continue_()
    result = await task
    assert result.messages[-2].content == "Be brief."
    assert [e["action"] for e in interventions(dbg)] == ["edit_result", "append_message"]
    dbg.close()


async def test_a_result_the_model_has_seen_is_refused_and_the_pause_holds() -> None:
    dbg = LoopDebugger(pause_on="model")
    model = ScriptedChatModel(
        [
            calls(tool_call("read_log", {"database": "orders"}, "c1")),
            calls(tool_call("read_log", {"database": "users"}, "c2")),
            final("done"),
        ],
        model_name="gpt-4o-mini",
    )
    task = dbg.start(LLMAgent(model, [read_log]), "go")
    for round_number in (1, 2, 3):
        await until(lambda n=round_number: dbg.paused_at is not None and dbg.paused_at.round == n)
        if round_number < 3:
            dbg.step()
    point = control(dbg)["paused_at"]
    assert point["results"] == ["c2"]
    answer = ask(
        dbg,
        {
            "type": "intervene",
            "request": 8,
            "pause": point["pause"],
            "action": "edit_result",
            "call_id": "c1",
            "content": "rewritten",
        },
    )
    assert (answer["ok"], answer["reason"]) == (False, "already_sent")
    assert dbg.paused_at is not None
    dbg.continue_()
    await task
    assert interventions(dbg) == []
    dbg.close()


async def test_a_request_made_at_an_earlier_pause_is_stale() -> None:
    dbg = LoopDebugger(pause_on="both")
    task = dbg.start(agent(), "go")
    first = await paused(dbg, "model_call")
    dbg.step()
    await paused(dbg, "tool_dispatch")
    answer = ask(
        dbg,
        {
            "type": "intervene",
            "request": 3,
            "pause": first["pause"],
            "action": "skip",
            "call_id": "c1",
            "content": "x",
        },
    )
    assert (answer["ok"], answer["reason"]) == (False, "stale")
    dbg.continue_()
    await task
    assert ran == ["orders"]
    dbg.close()


async def test_continue_and_step_while_not_paused_change_nothing() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "go")
    # the run has not reached a pause yet: these clicks find nothing to release
    channel(dbg).from_browser({"type": "control", "action": "continue"})
    channel(dbg).from_browser({"type": "control", "action": "step"})
    point = await paused(dbg, "tool_dispatch")  # so the run still pauses where it should
    assert dbg.paused_at is not None
    assert point["round"] == 1
    dbg.continue_()
    await task
    assert ran == ["orders"]
    assert dbg.continue_() is False  # the run is over: nothing to continue
    dbg.close()


async def test_a_click_meant_for_an_earlier_pause_changes_nothing() -> None:
    dbg = LoopDebugger(pause_on="both")
    task = dbg.start(agent(), "go")
    first = await paused(dbg, "model_call")
    step = {"type": "control", "action": "step", "pause": first["pause"]}
    channel(dbg).from_browser(step)
    second = await paused(dbg, "tool_dispatch")
    # a second click on the same Step and a late Continue reach the next pause: ignored
    channel(dbg).from_browser(step)
    channel(dbg).from_browser({"type": "control", "action": "continue", "pause": first["pause"]})
    assert ran == []
    channel(dbg).from_browser({"type": "control", "action": "step", "pause": second["pause"]})
    third = await paused(dbg, "model_call")  # one step: the next pause, and it holds
    assert (third["round"], third["pause"]) == (2, second["pause"] + 1)
    assert ran == ["orders"]
    channel(dbg).from_browser({"type": "control", "action": "continue", "pause": third["pause"]})
    await task
    assert dbg.paused_at is None
    dbg.close()


# -- Step and Continue with an edit open on the page -------------------------------------
def release(action: str, point: dict[str, Any], request: int) -> dict[str, Any]:
    """Step or Continue clicked at ``point`` with an edit open: the page sends the edit
    with the click (``change``, as its own button would have sent it)."""
    edit = {"type": "intervene", "pause": point["pause"], "call_id": "c1"}
    return {
        "type": "control",
        "action": action,
        "pause": point["pause"],
        "request": request,
        "change": edit,
    }


@pytest.mark.parametrize("action", ["step", "continue"])
async def test_step_or_continue_with_an_edit_open_applies_it_then_goes_on(action: str) -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "Check the backups.")
    point = await paused(dbg, "tool_dispatch")
    asked = release(action, point, 21)
    asked["change"] |= {"action": "edit_args", "args": {"database": "users"}}
    channel(dbg).from_browser(asked)
    result = await task
    assert ran == ["users"]  # the tool ran with the arguments the person set up
    assert result.final_response.text == "answer: users: OK"
    answer = control(dbg)["answer"]
    assert (answer["request"], answer["action"], answer["ok"]) == (21, action, True)
    (event,) = interventions(dbg)
    assert (event["action"], event["after"]) == ("edit_args", {"database": "users"})
    dbg.close()


@pytest.mark.parametrize("action", ["step", "continue"])
async def test_step_or_continue_with_an_invalid_edit_open_is_refused_and_the_pause_holds(
    action: str,
) -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "Check the backups.")
    point = await paused(dbg, "tool_dispatch")
    asked = release(action, point, 22)
    asked["change"] |= {"action": "edit_args", "args": {"database": 7}}
    answer = ask(dbg, asked)
    assert (answer["request"], answer["ok"], answer["reason"]) == (22, False, "invalid_args")
    assert "database" in answer["message"]  # the schema's words, shown next to the edit
    # nothing ran, nothing changed, and the loop still waits at the same pause
    assert ran == []
    assert interventions(dbg) == []
    assert dbg.paused_at is not None
    assert control(dbg)["paused_at"]["pause"] == point["pause"]
    # a change of a kind no release takes, or at another pause, is refused the same way
    for bad, reason in (
        ({"action": "check_args", "args": {"database": "users"}}, "bad_request"),
        ({"action": "skip", "content": "x", "pause": point["pause"] - 1}, "stale"),
    ):
        asked = release(action, point, 23)
        asked["change"] |= bad
        refused = ask(dbg, asked)
        assert (refused["request"], refused["ok"], refused["reason"]) == (23, False, reason)
    assert dbg.paused_at is not None
    assert ran == []
    dbg.continue_()
    await task
    assert ran == ["orders"]
    dbg.close()


def test_a_change_with_nothing_paused_is_refused() -> None:
    dbg = LoopDebugger()
    answer = ask(
        dbg,
        {"type": "intervene", "request": 1, "pause": 0, "action": "append_message", "content": "x"},
    )
    assert (answer["ok"], answer["reason"]) == (False, "not_paused")
    # a new page starts its own requests: the answers of an earlier one are not sent to it
    channel(dbg).from_browser({"type": "hello"})
    assert control(dbg)["answer"] is None
    dbg.close()


# -- hostile requests --------------------------------------------------------------------
def hostile_requests(pause: int) -> dict[str, tuple[Any, str]]:
    """Each malformed request and the reason it must be refused with."""
    good = {"type": "intervene", "pause": pause, "action": "skip", "call_id": "c1"}
    return {
        "unknown-action": ({**good, "action": "run_shell", "content": "x"}, "bad_request"),
        "missing-content": (good, "bad_request"),
        "extra-field": ({**good, "content": "x", "__proto__": {"polluted": 1}}, "bad_request"),
        "content-not-text": ({**good, "content": ["x"]}, "bad_request"),
        "bool-pause": ({**good, "content": "x", "pause": True}, "bad_request"),
        "text-pause": ({**good, "content": "x", "pause": str(pause)}, "bad_request"),
        "negative-request": ({**good, "content": "x", "request": -1}, "bad_request"),
        "bad-status": ({**good, "content": "x", "status": "<b>maybe</b>"}, "bad_request"),
        "system-role": (
            {
                "type": "intervene",
                "pause": pause,
                "action": "append_message",
                "role": "system",
                "content": "obey",
            },
            "bad_request",
        ),
        "empty-message": (
            {"type": "intervene", "pause": pause, "action": "append_message", "content": ""},
            "bad_request",
        ),
        "args-not-object": ({**good, "action": "edit_args", "args": ALL}, "invalid_args"),
        "args-list": ({**good, "action": "edit_args", "args": [1, 2]}, "invalid_args"),
        "unknown-call": ({**good, "call_id": ALL, "content": "x"}, "unknown_call"),
        "huge": ({**good, "content": "x" * (MAX_REQUEST_CHARS + 1)}, "too_large"),
        "wrong-stage": (
            {"type": "intervene", "pause": pause, "action": "append_message", "content": "x"},
            "wrong_stage",
        ),
    }


async def test_hostile_requests_are_refused_change_nothing_and_the_pause_holds() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "go")
    point = await paused(dbg, "tool_dispatch")
    cases = hostile_requests(point["pause"])
    for name, (content, reason) in cases.items():
        answer = ask(dbg, content)
        assert answer["ok"] is False, name
        assert answer["reason"] == reason, (name, answer)
        assert answer["message"], name  # words for the person (drawn as text)
        assert len(answer["message"]) <= 2_100, name  # clipped: a huge request is not echoed
    assert interventions(dbg) == []
    assert dbg.paused_at is not None
    assert control(dbg)["paused_at"]["pause"] == point["pause"]  # the same pause, still held
    # HTML in a written result is text: accepted, recorded and sent as it was written
    ok = ask(
        dbg,
        {
            "type": "intervene",
            "request": 99,
            "pause": point["pause"],
            "action": "skip",
            "call_id": "c1",
            "content": ALL,
        },
    )
    assert ok == {"request": 99, "action": "skip", "ok": True, "reason": None, "message": ""}
    dbg.continue_()
    await task
    (event,) = interventions(dbg)
    assert event["after"]["content"] == ALL
    dbg.close()


async def test_messages_that_are_no_request_are_ignored() -> None:
    dbg = LoopDebugger(pause_on="tools")
    task = dbg.start(agent(), "go")
    await paused(dbg, "tool_dispatch")
    before = len(channel(dbg).custom())
    for content in (
        {"type": "control", "action": ALL},
        {"type": ALL},
        ["intervene"],
        "<script>alert(1)</script>",
        None,
        7,
        {"type": None},
    ):
        channel(dbg).from_browser(content)
    dbg.flush()
    assert len(channel(dbg).custom()) == before  # no answer, no message
    assert dbg.paused_at is not None
    dbg.continue_()
    await task
    assert interventions(dbg) == []
    dbg.close()


# -- Fork from here ------------------------------------------------------------------------
async def finished(dbg: LoopDebugger, cap: int = 3) -> None:
    await dbg.start(agent(cap), "Check the backups.")


async def test_fork_from_here_runs_the_fork_in_a_new_debugger_and_compares() -> None:
    dbg = LoopDebugger()
    await finished(dbg)
    assert dbg.can_fork is True
    answer = ask(dbg, {"type": "fork", "request": 4, "round": 2})
    assert (answer["ok"], answer["action"]) == (True, "fork")
    assert "dbg.forks[0]" in answer["message"]  # never displayed here: where to find it
    (child,) = dbg.forks
    # the fork pauses before its first call (this debugger never pauses), so a person
    # can change it; its rounds read as the original's
    await until(lambda: child.paused_at is not None)
    assert child.round_offset == 1
    assert child.fork_info == {"at_round": 2, "source": "events"}
    assert child.comparison == {}  # until the fork ends
    assert "round 2 of 3" in child.summary()
    child.continue_()
    result = await child.task  # type: ignore[misc]
    assert isinstance(result, ForkResult)
    expected = fork(dbg.events, 2, model=agent().model, tools=[read_log])
    assert result.forked == expected.forked == result.original
    # the original from the fork's round on, next to the fork (the same model: the same)
    cmp = child.comparison
    assert (cmp["kind"], cmp["from_round"]) == ("fork", 2)
    assert [(r["same"], r["round"]) for r in cmp["rows"]] == [(True, 2)]
    assert cmp["tokens_delta"] == result.token_delta == 0
    assert result.summary in child.summary()
    child.close()
    dbg.close()


async def test_a_fork_that_cannot_be_made_is_refused_with_its_field() -> None:
    dbg = LoopDebugger()
    await finished(dbg, cap=1)  # round 1, then the synthesis row (round 2)
    answer = ask(dbg, {"type": "fork", "request": 1, "round": 2})
    assert (answer["ok"], answer["reason"]) == (False, "tool_max_rounds")
    assert ask(dbg, {"type": "fork", "request": 2, "round": 9})["reason"] == "at_round"
    assert ask(dbg, {"type": "fork", "request": 3, "round": 0})["reason"] == "bad_request"
    assert ask(dbg, {"type": "fork", "request": 4, "round": "1"})["reason"] == "bad_request"
    assert dbg.forks == ()
    with pytest.raises(ConfigurationError) as caught:
        dbg.fork(2)
    assert caught.value.field == "tool_max_rounds"
    dbg.close()


async def test_fork_from_here_of_a_run_that_played_its_whole_script_runs_the_fork() -> None:
    """A tutorial's model plays a script of fixed replies, and its run plays all of them:
    "Fork from here" still runs the fork on it, from the reply the original got at the
    fork's round, and it ends as the original did (not "Failed, 0 model calls")."""
    script = [
        calls(tool_call("read_log", {"database": "orders"}, "c1")),
        calls(tool_call("read_log", {"database": "users"}, "c2")),
        final("orders failed, users ok"),
    ]
    model = ScriptedChatModel(script, model_name="gpt-4o-mini")
    dbg = LoopDebugger()
    await dbg.start(LLMAgent(model, [read_log]), "Check the backups.")
    assert model.remaining == 0
    answer = ask(dbg, {"type": "fork", "request": 1, "round": 2})
    assert (answer["ok"], answer["action"]) == (True, "fork")
    (child,) = dbg.forks
    await until(lambda: child.paused_at is not None)
    child.continue_()
    result = await child.task  # type: ignore[misc]
    assert isinstance(result, ForkResult)
    assert result.error is None
    assert result.forked == result.original
    assert child.view.final_text == "orders failed, users ok"
    assert model.remaining == 0  # the agent's model is unchanged
    assert len(model.calls) == 3
    child.close()
    dbg.close()


async def test_a_fork_whose_model_cannot_answer_is_refused_where_it_was_asked() -> None:
    """A model with no reply left for the fork: the page's request is refused with the
    reason (beside the button), and ``dbg.fork`` raises it, before any call."""
    spent = ScriptedChatModel([final("elsewhere")], model_name="gpt-4o-mini")
    spent.invoke("Something else.")
    dbg = LoopDebugger(fork_with=LLMAgent(spent, [read_log]))
    await finished(dbg)
    answer = ask(dbg, {"type": "fork", "request": 1, "round": 2})
    assert (answer["ok"], answer["reason"]) == (False, "model")
    assert "has no reply for the fork" in answer["message"]
    assert "fork with a model that can answer" in answer["message"]
    assert dbg.forks == ()
    with pytest.raises(ConfigurationError) as caught:
        dbg.fork(2)
    assert caught.value.field == "model"
    assert dbg.forks == ()
    assert len(spent.calls) == 1  # no call was made for the fork
    dbg.close()


async def test_a_replayed_trace_forks_only_with_an_agent(tmp_path: Path) -> None:
    source = LoopDebugger()
    await finished(source)
    path = write_trace(tmp_path / "run.jsonl", source.events)
    source.close()
    replay = LoopDebugger.from_trace(path)
    assert replay.can_fork is False
    answer = ask(replay, {"type": "fork", "request": 1, "round": 1})
    assert (answer["ok"], answer["reason"]) == (False, "fork_with")
    replay.close()
    replay = LoopDebugger.from_trace(path, fork_with=agent())
    assert replay.can_fork is True
    child = replay.fork(1, pause_on="off")
    result = await child.task  # type: ignore[misc]
    assert child.fork_info["source"] == "trace"
    assert result.forked == result.original
    child.close()
    replay.close()


async def test_a_fork_of_a_fork_numbers_rounds_as_the_first_original() -> None:
    dbg = LoopDebugger()
    await finished(dbg)
    child = dbg.fork(2, pause_on="off")
    await child.task  # type: ignore[misc]
    grandchild = child.fork(2, pause_on="off")  # the child's round 2 is its own round 1
    await grandchild.task  # type: ignore[misc]
    assert grandchild.round_offset == 1
    assert grandchild.fork_info["at_round"] == 2
    cmp = grandchild.comparison
    assert (cmp["from_round"], [r["round"] for r in cmp["rows"]]) == (2, [2])
    for d in (grandchild, child, dbg):
        d.close()


# -- the observer under threads ----------------------------------------------------------
def test_events_from_two_threads_each_reach_the_browser_once() -> None:
    """Interventions made on the kernel's thread emit their events there, while the loop
    emits on its own: every event still goes out exactly once, in one unbroken stream."""
    from browser.streams import long_run

    dbg = LoopDebugger()
    events = long_run(300)
    half = len(events) // 2
    barrier = threading.Barrier(2)

    def feed(part: list[Any]) -> None:
        barrier.wait()
        for event in part:
            dbg(event)

    threads = [
        threading.Thread(target=feed, args=(events[:half],)),
        threading.Thread(target=feed, args=(events[half:],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dbg.flush()
    got = received(dbg)
    assert len(got) == len(events)
    assert sorted(map(json.dumps, got)) == sorted(
        json.dumps(event_payload(e, 20_000)) for e in events
    )
    dbg.close()
