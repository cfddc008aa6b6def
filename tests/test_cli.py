"""``toolloop-lab demo``: exit code, the printed spend table, the report it writes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import os
import subprocess
import sys
from pathlib import Path

import pytest

from toolloop_lab.cli import DEFAULT_REPORT, main
from toolloop_lab.lab import LabResults, catalog

HEADER = ["scenario", "outcome", "rounds", "prompt", "completion", "pruning", "saved", "cost"]


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
    assert rows["single_round"][1:8] == ["final_answer", "2", "26", "13", "0", "0", "$0.000012"]
    assert rows["pruning"][5] == "940"
    assert rows["token_budget"][1:5] == ["token_budget_exhausted", "1", "5014", "207"]
    assert rows["bad_config"][-2:] == ["config:", "tool_max_rounds"]
    assert rows["usd_budget"][-2:] == ["cost:", "budget_exhausted"]
    total = next(line for line in out.splitlines() if line.startswith("TOTAL"))
    assert total.split()[1:7] == ["11", "runs", "5270", "335", "940", rows["pruning"][6]]
    assert total.endswith("4 failed")
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
        [sys.executable, "-m", "toolloop_lab.cli", "demo", "--out", "r.html"],
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
