"""``toolloop-lab demo``: exit code, the printed spend table (and, for the multi-turn files
workload, the turn table), the report it writes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolloop_lab._cli import DEFAULT_REPORT, main
from toolloop_lab._support.words import OUTCOME
from toolloop_lab.lab import LabResults, catalog
from toolloop_lab.workloads import files_sweep

HEADER = ["scenario", "outcome", "tool", "rounds", "model", "calls", "prompt", "completion"]


def table_rows(out: str) -> dict[str, list[str]]:
    """Scenario name -> the cells of its row in the printed table."""
    lines = out.splitlines()
    assert lines[0].split()[:8] == HEADER
    rows: dict[str, list[str]] = {}
    for line in lines[2:]:
        if line.startswith("---"):
            break
        cells = line.split()
        rows[cells[0]] = cells
    return rows


def test_demo_prints_the_spend_table_and_writes_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "report.html"
    assert main(["demo", "--out", str(out_path), "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    rows = table_rows(out)
    assert list(rows) == [s.name for s in catalog()]
    header = out.splitlines()[0]
    assert "  tool rounds  model calls  " in header  # names that say what they count
    # one tool round, then the answering call: one tool round, two model calls
    single = ["final_answer", "1", "2", "26", "13", "0", "0", "$0.0000117"]  # the views' digits
    assert rows["single_round"][1:9] == single
    assert rows["pruning"][1:4] == ["final_answer", "1", "3"]  # the pruning call is a call
    assert rows["pruning"][6] == "940"
    assert rows["token_budget"][1:6] == ["token_budget_exhausted", "1", "2", "5014", "207"]
    assert rows["bad_config"][-2:] == ["config:", "tool_max_rounds"]
    # a USD stop says its outcome's words, never an error code, and is no failure
    usd_stop = next(line for line in out.splitlines() if line.startswith("usd_budget "))
    assert usd_stop.endswith(f"  {OUTCOME['usd_budget_exhausted']}")
    assert "budget_exhausted" not in usd_stop.split("  ")[-1]
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    counts = ["11", "runs", "12", "22", "5270", "335", "940", rows["pruning"][7]]
    assert total.split()[1:9] == counts  # 12 tool rounds, 22 model calls
    assert total.endswith("  7 answered, 2 stopped by the USD limit, 2 failed")
    assert (
        "outcomes: final_answer 4, synthesis 2, token_budget_exhausted 1, "
        "usd_budget_exhausted 2, failed 2"
    ) in out
    assert out.rstrip().endswith(f"report: {out_path.resolve()}")
    text = out_path.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert text.count('<section class="scenario"') == 11


def test_demo_writes_to_the_cwd_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--no-progress"]) == 0
    assert (tmp_path / DEFAULT_REPORT).is_file()
    assert f"report: {tmp_path / DEFAULT_REPORT}" in capsys.readouterr().out


def test_demo_can_save_the_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "sweep.jsonl"
    assert (
        main(["demo", "--out", str(tmp_path / "r.html"), "--save", str(saved), "--no-progress"])
        == 0
    )
    assert f"sweep saved: {saved.resolve()}" in capsys.readouterr().out
    assert [r.scenario for r in LabResults.load(saved)] == [s.name for s in catalog()]


def test_bad_arguments_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["demo", "--concurrency", "0"])
    assert exit_info.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as no_command:
        main([])
    assert no_command.value.code == 2


def test_the_command_runs_as_a_process(tmp_path: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    done = subprocess.run(
        [sys.executable, "-m", "toolloop_lab._cli", "demo", "--out", "r.html"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "TOTAL" in done.stdout
    assert "scenarios: 100%" in done.stderr  # the progress bar goes to stderr
    assert (tmp_path / "r.html").is_file()


# -- output paths: checked before the sweep, one line on stderr, exit status 2 -------------
def _bad_path_run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``demo`` with a bad output path; return its one stderr line."""
    assert main(["demo", "--no-progress", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # the spend table is printed right after the sweep: it never ran
    assert err.count("\n") == 1, err
    assert err.startswith("toolloop-lab demo: error: ")
    assert "Traceback" not in err
    assert ".tmp" not in err
    return err


def test_a_report_in_a_missing_directory_is_refused_before_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "no" / "such" / "r.html"
    err = _bad_path_run(["--out", str(target)], capsys)
    assert f"--out {target}: no such directory: {target.parent}" in err
    assert not (tmp_path / "no").exists()


def test_a_report_path_that_is_a_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _bad_path_run(["--out", str(tmp_path)], capsys)
    assert f"--out {tmp_path}: is a directory" in err
    assert list(tmp_path.iterdir()) == []  # the writability probe leaves nothing behind


def test_a_save_in_a_missing_directory_names_the_file_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "s.jsonl"
    err = _bad_path_run(["--out", str(tmp_path / "r.html"), "--save", str(target)], capsys)
    assert f"--save {target}: no such directory: {target.parent}" in err
    assert not (tmp_path / "r.html").exists()


def test_a_path_below_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    err = _bad_path_run(["--out", str(afile / "r.html")], capsys)
    assert f"--out {afile / 'r.html'}: {afile} is not a directory" in err
    err = _bad_path_run(["--save", str(afile / "s.jsonl")], capsys)
    assert f"--save {afile / 's.jsonl'}: {afile} is not a directory" in err
    assert afile.read_text() == "keep me"


def test_a_link_into_a_missing_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "r.html"
    link.symlink_to(tmp_path / "gone" / "r.html")
    err = _bad_path_run(["--out", str(link)], capsys)
    assert f"--out {link}: no such directory: {tmp_path / 'gone'}" in err


def test_a_symlink_loop_is_refused_before_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python 3.13 resolves a loop to the link itself where earlier versions raised: either
    # way it is refused up front, in the same words, not after the sweep has run
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    err = _bad_path_run(["--out", str(tmp_path / "a")], capsys)
    assert f"--out {tmp_path / 'a'}: cannot write there (a symlink loop)" in err
    err = _bad_path_run(["--out", str(tmp_path / "r.html"), "--save", str(tmp_path / "b")], capsys)
    assert f"--save {tmp_path / 'b'}: cannot write there (a symlink loop)" in err


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory no file can be created in: read-only for a normal user; for root (who
    ignores permissions) sysfs, where creating a file fails even for root."""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        candidates = [locked, Path("/sys")]
        for candidate in candidates:
            try:
                (candidate / "probe.txt").open("x").close()
            except OSError:
                yield candidate
                return
            (candidate / "probe.txt").unlink()
        pytest.skip("no directory here refuses new files")
    finally:
        locked.chmod(0o755)


def test_an_unwritable_directory_is_refused(
    unwritable_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = unwritable_dir / "r.html"
    err = _bad_path_run(["--out", str(target)], capsys)
    assert f"--out {target}: cannot write there (" in err
    saved = unwritable_dir / "s.jsonl"
    err = _bad_path_run(["--out", str(tmp_path / "r.html"), "--save", str(saved)], capsys)
    assert f"--save {saved}: cannot write there (" in err


def test_saving_over_something_that_is_not_a_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the save writes a sibling file and renames it over the target: over /dev/null, say,
    # that would replace the device, so only regular files are replaced
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    err = _bad_path_run(["--out", str(tmp_path / "r.html"), "--save", str(fifo)], capsys)
    assert f"--save {fifo}: not a regular file" in err


def test_report_and_save_on_one_file_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = tmp_path / "both"
    err = _bad_path_run(["--out", str(same), "--save", str(tmp_path / "." / "both")], capsys)
    assert "--out and --save name the same file" in err


def test_a_report_over_an_existing_file_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "r.html"
    out_path.write_text("old")
    assert main(["demo", "--out", str(out_path), "--no-progress"]) == 0
    assert out_path.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert capsys.readouterr().err == ""


def test_a_write_that_fails_after_the_sweep_is_one_line_and_status_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def disk_full(self: LabResults, path: object, **_kw: object) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), f"{path}.tmp")

    monkeypatch.setattr(LabResults, "save", disk_full)
    saved = tmp_path / "s.jsonl"
    out_path = tmp_path / "r.html"
    assert main(["demo", "--out", str(out_path), "--save", str(saved), "--no-progress"]) == 1
    out, err = capsys.readouterr()
    assert "TOTAL" in out  # the sweep ran and its table was printed
    assert (
        err
        == f"toolloop-lab demo: error: --save {saved}: cannot write it (No space left on device)\n"
    )
    assert out_path.is_file()  # the report is still written


def test_a_bad_path_exits_2_as_a_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolloop_lab._cli", "demo", "--out", "no/such/r.html"],
        cwd=tmp_path,
        env={**os.environ, "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        "toolloop-lab demo: error: --out no/such/r.html: no such directory: "
        f"{tmp_path / 'no' / 'such'}\n"
    )


def test_help_lists_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["demo", "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Exit status: 0 done; 1 the report or the save could not be written" in out
    assert "2 bad arguments or an output path that cannot be written" in out


# -- the files workload -------------------------------------------------------------------
def test_demo_runs_the_files_workload_and_prints_every_turn(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path, saved = tmp_path / "files.html", tmp_path / "files.jsonl"
    argv = ["demo", "--workload", "files", "--out", str(out_path), "--save", str(saved)]
    assert main([*argv, "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    names = [s.name for s in files_sweep()]
    assert list(table_rows(out)) == names
    spend, turns = out.split("\n\n")[:2]
    turn_lines = turns.splitlines()
    assert turn_lines[0].split()[:3] == ["scenario", "turn", "outcome"]
    rows = [line.split() for line in turn_lines[2:] if not line.startswith(("---", "TOTAL"))]
    assert [(r[0], r[1]) for r in rows] == [
        ("tidy_notes[roomy]", "1"),
        ("tidy_notes[roomy]", "2"),
        ("tidy_notes[roomy]", "3"),
        ("incident_ticket[roomy]", "1"),
        ("incident_ticket[roomy]", "2"),
        ("incident_ticket[roomy]", "3"),
        ("clean_build[roomy]", "1"),
        ("clean_build[roomy]", "2"),
        ("tidy_notes[tight]", "1"),
        ("tidy_notes[tight]", "2"),
        ("tidy_notes[tight]", "3"),
        ("incident_ticket[tight]", "1"),
        ("incident_ticket[tight]", "2"),
        ("incident_ticket[tight]", "3"),
        ("clean_build[tight]", "1"),
        ("clean_build[tight]", "2"),
    ]
    assert rows[8][2] == "synthesis"  # tidy_notes under the tight cap, turn 1
    assert turn_lines[-1].split()[1:5] == ["16", "of", "16", "ran"]
    loaded = LabResults.load(saved)
    assert [r.scenario for r in loaded] == names
    assert loaded.turn_table() == turns
    assert spend.splitlines()[-1].startswith("TOTAL")
    text = out_path.read_text(encoding="utf-8")
    assert text.count('<section class="scenario"') == len(names)
    assert "the files workload" in text


def test_the_catalog_prints_no_turn_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert (
        main(["demo", "--workload", "catalog", "--out", str(tmp_path / "r.html"), "--no-progress"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("TOTAL") == 1  # the spend table only
    assert " turn " not in out


def test_an_unknown_workload_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["demo", "--workload", "nope"])
    assert done.value.code == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_a_bad_path_is_refused_before_the_workload_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _bad_path_run(["--workload", "files", "--out", str(tmp_path / "no" / "r.html")], capsys)
    assert "no such directory" in err


# -- view TRACE --html OUT ---------------------------------------------------------------------


def _trace_of_two_runs(path: Path) -> list[str]:
    """A trace of two runs of an echo agent; their run ids."""
    from langchain_core.messages import AIMessage

    from toolloop_lab import LLMAgent, ScriptedChatModel, TraceWriter, echo_tool

    call = {"name": "echo", "args": {"text": "<b>hi</b>"}, "id": "c1", "type": "tool_call"}
    replies = [AIMessage("", tool_calls=[call]), AIMessage("said hi")] * 2
    ids = []
    with TraceWriter(path) as trace:
        agent = LLMAgent(ScriptedChatModel(replies), [echo_tool()], observers=[trace])
        for name in ("first", "second"):
            ids.append(agent.run(f"Say hi, {name}.", name=name).run_id)
    return ids


def test_view_writes_a_traces_runs_as_one_html_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "runs.jsonl"
    ids = _trace_of_two_runs(trace)
    out = tmp_path / "runs.html"
    assert main(["view", str(trace), "--html", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"view: {out} (2 runs)"
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert '"name": "first"' in html
    assert '"name": "second"' in html
    assert "<b>hi</b>" not in html  # the tool's text is JSON data, escaped
    one = tmp_path / "one.html"
    assert main(["view", str(trace), "--html", str(one), "--run", ids[0]]) == 0
    kept = one.read_text(encoding="utf-8")
    assert '"name": "first"' in kept
    assert '"name": "second"' not in kept


def test_view_refuses_a_missing_trace_an_unknown_run_and_a_bad_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "runs.jsonl"
    _trace_of_two_runs(trace)
    out = tmp_path / "out.html"
    assert main(["view", str(tmp_path / "missing.jsonl"), "--html", str(out)]) == 2
    assert "toolloop-lab view: error:" in capsys.readouterr().err
    assert main(["view", str(trace), "--html", str(out), "--run", "nope"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(["view", str(trace), "--html", str(tmp_path / "no" / "out.html")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert not out.exists()
