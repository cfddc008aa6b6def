"""``toolloop-lab check``: recordings replayed with the checks saved beside them; exit 0 on a
good recording, 1 on a changed one (its evidence printed), JUnit XML a reader accepts."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from checkkit import ANSWER, ticket_run

from toolloop_lab._cli import main
from toolloop_lab._replay.recorded_run import ReplaySettings
from toolloop_lab.checks import (
    answer_contains,
    called,
    called_in_order,
    max_tokens,
    max_tool_rounds,
    outcome,
    satisfies,
)
from toolloop_lab.checks._saved import checks_path, load_checks, save_checks
from toolloop_lab.errors import ConfigurationError

CHECKS = [
    called_in_order("lookup_ticket", "search_docs", "reply"),
    called("lookup_ticket", ticket="T-7"),
    max_tool_rounds(4),
    max_tokens(1_500),
    outcome("final_answer"),
    answer_contains("rotate the key"),
]


@pytest.fixture
def recording(tmp_path: Path) -> Path:
    path = tmp_path / "recordings" / "ticket.jsonl"
    result = ticket_run(path)
    save_checks(path, CHECKS, settings=ReplaySettings.of_events(result.events))
    return path


def change_answer(path: Path, text: str) -> None:
    """Edit the recorded final answer, as a run recorded again that answered otherwise."""
    lines = path.read_text(encoding="ascii").splitlines()
    last = json.loads(lines[-1])
    last["response"]["data"]["content"] = text
    lines[-1] = json.dumps(last)
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def test_a_good_recording_passes_and_exits_0(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(recording)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"PASS  {recording} (6 checks; Answered: 3 tool rounds, 4 model calls")
    assert out.rstrip().endswith("1 recording: 1 passed, 0 failed")


def test_a_changed_recording_fails_with_its_evidence_and_exits_1(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change_answer(recording, "Please wait for a human.")
    assert main(["check", str(recording)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"FAIL  {recording}\n")
    assert "    answer_contains('rotate the key'): failed" in out
    assert "      seen:     the answer 'Please wait for a human.'" in out
    assert "      where:    round 4" in out
    assert "1 recording: 0 passed, 1 failed" in out


def test_a_folder_is_searched_for_checks_files(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "recordings" / "nested" / "again.jsonl"
    result = ticket_run(other)
    save_checks(other, [outcome("final_answer")], settings=ReplaySettings.of_events(result.events))
    change_answer(other, "x")
    assert main(["check", str(tmp_path / "recordings")]) == 0  # the answer is no check there
    out = capsys.readouterr().out
    assert "2 recordings: 2 passed, 0 failed" in out
    assert main(["check", str(checks_path(recording))]) == 0


AGENT = """
from checkkit import TICKET_TOOLS, lookup_ticket
from langchain_core.tools import tool
from toolloop_lab import AgentConfig, LLMAgent


@tool("lookup_ticket")
def changed_lookup(ticket: str) -> str:
    '''Look a support ticket up by its id (T-7, say).'''
    if ticket != "T-7":
        raise ValueError(f"no ticket {ticket}")
    return "T-7: closed"  # the tool's output changed


def real(model):
    return LLMAgent(model, TICKET_TOOLS, AgentConfig(tool_max_rounds=6))


def changed(model):
    return LLMAgent(model, [changed_lookup, *TICKET_TOOLS[1:]], AgentConfig(tool_max_rounds=6))
"""


def test_replayed_with_the_real_tools_a_changed_tool_shows_where_the_replay_left(
    recording: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "ticket_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", str(recording), "--agent", "ticket_agent:real"]) == 0
    capsys.readouterr()
    assert main(["check", str(recording), "--agent", "ticket_agent:changed"]) == 1
    out = capsys.readouterr().out
    assert "the replay left the recording: replay call 1 diverged" in out
    assert "at message 3: expected tool [c_look, success] \"T-7: open, 'API key" in out
    assert "received tool [c_look, success] 'T-7: closed'" in out


def test_junit_xml_is_valid_and_holds_a_case_per_check(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from junitparser import Failure, JUnitXml

    change_answer(recording, "no")
    junit = tmp_path / "out" / "checks.xml"
    junit.parent.mkdir()
    assert main(["check", str(recording), "--junit-xml", str(junit)]) == 1
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    (suite,) = root
    # Apache Ant's JUnit schema: these attributes and children are required of a suite,
    # name, classname and time of a case, type of a failure
    for name in ("name", "tests", "failures", "errors", "time", "timestamp", "hostname"):
        assert suite.get(name) is not None, name
    assert next(child.tag for child in suite) == "properties"
    assert [child.tag for child in suite][-2:] == ["system-out", "system-err"]
    cases = suite.findall("testcase")
    assert len(cases) == len(CHECKS)
    for case in cases:
        assert case.get("name")
        assert case.get("classname")
        assert float(case.get("time") or "x") >= 0
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["answer_contains('rotate the key')"]
    failure = failed[0].find("failure")
    assert failure is not None
    assert failure.get("type") == "ChecksFailed"
    assert "seen:     the answer 'no'" in (failure.text or "")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "1", "0")
    read = JUnitXml.fromfile(str(junit))  # a JUnit reader CI systems use agrees
    (read_suite,) = list(read)
    assert (read_suite.tests, read_suite.failures, read_suite.errors) == (6, 1, 0)
    results = [type(r) for case in read_suite for r in case.result]
    assert results == [Failure]


def test_a_recording_without_checks_is_an_error_and_a_missing_path_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lone = tmp_path / "lone.jsonl"
    ticket_run(lone)
    assert main(["check", str(lone)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"ERROR {lone}: no checks saved beside it (looked for lone.checks.json)")
    assert main(["check", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "empty_dir_that_is_missing")]) == 2


def test_an_unwritable_junit_path_is_refused_before_any_replay(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(recording), "--junit-xml", str(tmp_path / "no" / "x.xml")]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_a_hand_edited_checks_file_is_read_strictly(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = checks_path(recording)
    data = json.loads(path.read_text())
    data["checks"][2] = {"check": "max_tool_rounds", "n": -1}
    path.write_text(json.dumps(data))
    assert main(["check", str(recording)]) == 1
    out = capsys.readouterr().out
    assert "checks[2]" in out
    assert "n" in out
    with pytest.raises(ConfigurationError, match=r"checks\[2\]"):
        load_checks(path)


def test_a_check_that_holds_code_is_refused_when_saving(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"checks\[1\] \(satisfies\('x'\)\) holds code"):
        save_checks(tmp_path / "r.jsonl", [outcome("final_answer"), satisfies(lambda e: True, "x")])


def test_every_saved_check_reads_back_as_itself(tmp_path: Path) -> None:
    from toolloop_lab.checks import (
        answer_matches,
        contains,
        matches,
        max_cost_usd,
        max_model_calls,
        no_tool_errors,
        not_called,
    )

    checks = [
        *CHECKS,
        called("search_docs", query=contains("key"), limit=2),
        called("lookup_ticket", ticket=matches(r"^T-\d$")),
        not_called("x"),
        no_tool_errors(),
        max_model_calls(3),
        max_cost_usd("0.001"),
        answer_matches("(?i)rotate"),
    ]
    saved = save_checks(tmp_path / "r.jsonl", checks)
    assert load_checks(saved).checks == tuple(checks)


def test_the_console_script_exits_with_the_checks_verdict(recording: Path) -> None:
    command = [sys.executable, "-m", "toolloop_lab._cli", "check", str(recording)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    change_answer(recording, ANSWER.replace("rotate", "keep"))
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1
    assert "answer_contains('rotate the key'): failed" in done.stdout
