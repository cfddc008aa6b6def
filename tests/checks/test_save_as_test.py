"""From the debugger to a test in one step, and checks a debugger judges on each run.

``save_test`` (and ``dbg.save_test``, and the page's "Save as test" button) writes a run's
recording, rebuilt from its events, the checks read off it and a pytest file; the written
test passes as written, in pytest, run in a subprocess, and ``toolloop-lab check`` passes
on the recording. A run that cannot be rebuilt is refused with what to do instead.
``LoopDebugger(checks=...)`` judges each run that ends; the run list's rows carry the mark.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import comm
import pytest
from checkkit import TICKET_FIGURES, TICKET_TOOLS, ticket_run, ticket_script
from loopkit import MODEL, MockComm, channel, final

from toolloop_lab import LLMAgent, ScriptedChatModel, watch
from toolloop_lab._cli import main
from toolloop_lab._widget.debugger import LoopDebugger
from toolloop_lab.checks import (
    evaluate,
    max_tool_rounds,
    no_tool_errors,
    not_called,
    outcome,
    save_test,
)
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import Intervention

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)


def run_pytest(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_a_saved_test_holds_checks_read_off_the_run_and_passes_as_written(
    tmp_path: Path,
) -> None:
    result = ticket_run()
    saved = save_test(tmp_path / "tests" / "test_triage.py", result, name="ticket lookup")

    assert saved.test_name == "test_ticket_lookup"
    assert saved.recording == tmp_path / "tests/recordings/test_triage/test_ticket_lookup.jsonl"
    described = [c.describe() for c in saved.checks]
    figures = TICKET_FIGURES
    assert described[:2] == [
        "called_in_order('lookup_ticket', 'lookup_ticket', 'search_docs', 'reply')",
        "outcome('final_answer')",
    ]  # no no_tool_errors(): its lookup of T-9 failed
    assert f"max_tool_rounds({figures.tool_rounds + 1})" in described
    assert f"max_model_calls({figures.model_calls + 1})" in described
    assert f"max_tokens({math.ceil(figures.tokens * 1.5)})" in described
    cost = next(c for c in saved.checks if c.describe().startswith("max_cost_usd"))
    limit = json.loads(json.dumps(cost.to_json()))["limit_usd"]
    assert figures.cost * Decimal("1.5") <= Decimal(limit) < figures.cost * Decimal("1.6")
    text = saved.test_file.read_text(encoding="utf-8")
    for check in described:
        assert f"    {check},\n" in text
    assert "def test_ticket_lookup() -> None:\n    verify(RECORDING, CHECKS)\n" in text

    done = run_pytest(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
    assert main(["check", str(saved.recording.parent)]) == 0


def test_the_saved_test_fails_when_its_recording_is_changed(tmp_path: Path) -> None:
    saved = save_test(tmp_path / "tests" / "test_triage.py", ticket_run())
    lines = saved.recording.read_text(encoding="ascii").splitlines()
    first = json.loads(lines[0])
    first["response"]["data"]["tool_calls"][0]["name"] = "search_docs"  # a different call
    lines[0] = json.dumps(first)
    saved.recording.write_text("\n".join(lines) + "\n", encoding="ascii")

    done = run_pytest(tmp_path)
    assert done.returncode == 1
    assert "ChecksFailed" in done.stdout or "left the recording" in done.stdout
    assert main(["check", str(saved.recording)]) == 1


def test_a_run_with_no_tool_errors_gets_that_check_too(tmp_path: Path) -> None:
    model = ScriptedChatModel([final("Nothing to look up.")], model_name=MODEL)
    result = LLMAgent(model, TICKET_TOOLS).run("hello")
    saved = save_test(tmp_path / "test_hello.py", result)
    described = [c.describe() for c in saved.checks]
    assert "called_in_order" not in " ".join(described)  # it called nothing
    assert "no_tool_errors()" not in described  # nor could it fail a call
    assert "outcome('final_answer')" in described
    assert evaluate(saved.recording, saved.checks).passed


def test_refusals_name_the_fix(tmp_path: Path) -> None:
    result = ticket_run()
    with pytest.raises(ConfigurationError, match=r"test_<something>\.py") as bad_name:
        save_test(tmp_path / "triage.py", result)
    assert bad_name.value.field == "path"
    (tmp_path / "test_there.py").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="overwrite=True"):
        save_test(tmp_path / "test_there.py", result)
    assert (tmp_path / "test_there.py").read_text(encoding="utf-8") == "# mine\n"

    # a run watched through the bridge: its events do not hold every request
    from langchain.agents import create_agent

    events: list[Any] = []
    with watch(events.append):
        model = ScriptedChatModel([final("T-7 is open.")], model_name=MODEL)
        create_agent(model, TICKET_TOOLS).invoke({"messages": [("user", "T-7?")]})
    with pytest.raises(ConfigurationError, match="watched through 'langchain'") as watched:
        save_test(tmp_path / "test_watched.py", events)
    assert "RecordingChatModel" in str(watched.value)
    assert watched.value.field == "run"

    # a run a person changed at a pause: its replay would leave it there
    changed = [*result.events]
    changed.insert(
        3,
        Intervention(
            run_id=changed[0].run_id,
            t=changed[2].t,
            round=1,
            action="append_message",
            stage="model_call",
        ),
    )
    with pytest.raises(ConfigurationError, match="changed it at a pause in round 1"):
        save_test(tmp_path / "test_changed.py", changed)
    assert not list(tmp_path.glob("recordings/*/*.jsonl"))  # nothing half-written


def test_a_debugger_judges_each_run_that_ends_and_its_row_carries_the_mark() -> None:
    dbg = LoopDebugger(checks=[max_tool_rounds(2), not_called("reply")])
    LLMAgent(
        ScriptedChatModel(ticket_script(), model_name=MODEL), TICKET_TOOLS, observers=[dbg]
    ).run("T-7?")
    report = dbg.check_report()
    assert report is not None
    assert not report.passed
    dbg.flush()
    rows = [m["runs"]["rows"] for m in channel(dbg).custom() if m.get("runs")]
    mark = rows[-1][-1]["checks"]
    assert (mark["passed"], mark["total"], mark["failed"]) == (False, 2, 2)
    assert [(f["check"], f["round"]) for f in mark["failures"]] == [
        ("max_tool_rounds(2)", 3),
        ("not_called('reply')", 3),
    ]
    assert "reply(text='We are on it.') in round 3 [c_reply]" in mark["failures"][1]["seen"]

    dbg.checks = [max_tool_rounds(5), outcome("final_answer")]  # judged again, sent again
    dbg.flush()
    dbg.redraw()
    last = next(m for m in reversed(channel(dbg).custom()) if m.get("runs"))["runs"]
    assert last["reset"] is True
    assert last["rows"][-1]["checks"] == {"passed": True, "total": 2, "failed": 0, "failures": []}
    dbg.close()


def test_a_debugger_without_checks_marks_nothing_and_bad_checks_are_refused() -> None:
    dbg = LoopDebugger()
    LLMAgent(
        ScriptedChatModel(ticket_script(), model_name=MODEL), TICKET_TOOLS, observers=[dbg]
    ).run("T-7?")
    assert dbg.check_report() is None
    dbg.flush()
    rows = [m["runs"]["rows"] for m in channel(dbg).custom() if m.get("runs")]
    assert rows[-1][-1]["checks"] is None
    with pytest.raises(ConfigurationError) as refused:
        LoopDebugger(checks=["max_tool_rounds(2)"])  # type: ignore[list-item]
    assert refused.value.field == "checks"
    dbg.close()


def test_save_as_test_from_python_and_from_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    dbg = LoopDebugger(checks=[no_tool_errors()])
    agent = LLMAgent(
        ScriptedChatModel(ticket_script(), model_name=MODEL), TICKET_TOOLS, observers=[dbg]
    )
    result = agent.run("T-7?")
    saved = dbg.save_test(tmp_path / "tests" / "test_from_dbg.py")
    assert evaluate(saved.recording, saved.checks).passed
    assert saved.checks == save_test(tmp_path / "test_again.py", result).checks

    channel(dbg).from_browser({"type": "save_test", "request": 4})
    dbg.flush()
    dbg.redraw()
    answer = channel(dbg).custom()[-1]["control"]["answer"]
    assert (answer["request"], answer["action"], answer["ok"]) == (4, "save_test", True)
    written = tmp_path / "tests" / f"test_run_{result.events[0].run_id}.py"
    assert written.exists()
    assert str(written.relative_to(tmp_path)) in answer["message"]
    channel(dbg).from_browser({"type": "save_test", "request": 5})  # never replaces a file
    dbg.flush()
    dbg.redraw()
    again = channel(dbg).custom()[-1]["control"]["answer"]
    assert (again["ok"], again["reason"]) == (False, "path")
    assert "overwrite=True" in again["message"]
    with pytest.raises(ConfigurationError, match="no run to save") as none:
        LoopDebugger().save_test(tmp_path / "test_none.py")
    assert none.value.field == "run_id"
    dbg.close()
