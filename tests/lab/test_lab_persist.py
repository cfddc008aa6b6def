"""``LabResults.save`` / ``LabResults.load``: the JSONL round trip and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from toolloop_lab.errors import TraceError
from toolloop_lab.lab import LabResults, Reply, Scenario, catalog, run_scenarios


def not_a_tool() -> Any:
    """A tool factory whose mistake only a run finds: its scenario is a failed row."""
    return "not a tool"


@pytest.fixture(scope="module")
def results() -> LabResults:
    odd = Scenario.scripted(
        "odd_text",
        [
            Reply.call("echo", {"text": 'naïve ☃ \u2028 "quotes" \\ and a lone \ud800'}),
            Reply.final("ok ✓"),
        ],
        tags=("unicode",),
        description="Text that JSON and HTML both find awkward.",
    )
    unpriced = Scenario.scripted(
        "unpriced", [Reply.final("x", input_tokens=1, output_tokens=1)], model_name="nobody"
    )
    never_built = Scenario.scripted("never_built", [Reply.final("x")], tools=(not_a_tool,))
    return run_scenarios([*catalog(), odd, unpriced, never_built], progress=False)


def test_round_trip_gives_equal_frames_and_records(results: LabResults, tmp_path: Path) -> None:
    path = results.save(tmp_path / "sweep.jsonl")
    assert path == (tmp_path / "sweep.jsonl").resolve()
    loaded = LabResults.load(path)
    assert loaded.records == results.records
    pd.testing.assert_frame_equal(loaded.runs, results.runs)
    pd.testing.assert_frame_equal(loaded.rounds, results.rounds)
    pd.testing.assert_frame_equal(loaded.events, results.events)
    assert loaded.spend_table() == results.spend_table()


def test_file_layout_is_one_json_object_per_line(results: LabResults, tmp_path: Path) -> None:
    path = results.save(tmp_path / "sweep.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    items = [json.loads(line) for line in lines]
    assert items[0] == {"type": "header", "format": "toolloop_lab.lab/1", "runs": len(results)}
    kinds = [item["type"] for item in items]
    assert kinds.count("run") == len(results)
    assert kinds.count("event") == sum(len(r.events) for r in results.records)
    assert all(line.isascii() for line in lines)  # lone surrogates survive as escapes
    assert not list(tmp_path.glob("*.tmp"))


def test_surrogate_halves_in_tool_output_load_back_unchanged(tmp_path: Path) -> None:
    text = "halves \udbff\udc00, a character \U0010fc00, a noncharacter \ud800\ufdd0\udc00"
    halves = Scenario.scripted(
        "halves", [Reply.call("echo", {"text": text}), Reply.final(text)], tags=(text,)
    )
    results = run_scenarios([halves], progress=False)
    loaded = LabResults.load(results.save(tmp_path / "halves.jsonl"))
    assert loaded.records == results.records
    assert loaded.records[0].tags == (text,)
    pd.testing.assert_frame_equal(loaded.tools, results.tools)


def test_saving_twice_overwrites(results: LabResults, tmp_path: Path) -> None:
    path = tmp_path / "sweep.jsonl"
    results.save(path)
    small = LabResults(results.records[:2])
    small.save(path)
    assert len(LabResults.load(path)) == 2


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "not a saved"),
        ('{"type": "event"}\n', "not a saved"),
        ("not json\n", "not JSON"),
        ('{"type": "header", "format": "toolloop_lab.lab/1", "runs": 1}\n[1]\n', "JSON object"),
    ],
)
def test_load_refuses_other_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(TraceError, match=message):
        LabResults.load(path)


def test_load_detects_missing_lines(results: LabResults, tmp_path: Path) -> None:
    path = results.save(tmp_path / "sweep.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match="expected"):
        LabResults.load(tmp_path / "cut.jsonl")
    header = json.loads(lines[0])
    header["runs"] += 1
    (tmp_path / "count.jsonl").write_text(
        "\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8"
    )
    with pytest.raises(TraceError, match="runs"):
        LabResults.load(tmp_path / "count.jsonl")


def test_load_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        LabResults.load(tmp_path / "nope.jsonl")


def test_a_bad_line_says_where_and_what_once(tmp_path: Path) -> None:
    header = '{"type": "header", "format": "toolloop_lab.lab/1", "runs": 1}\n'
    path = tmp_path / "bad.jsonl"
    path.write_text(header + '{"kind": "run"}\n', encoding="utf-8")
    with pytest.raises(TraceError) as caught:
        LabResults.load(path)
    text = str(caught.value)
    assert text.startswith(f"{path}:2: ")
    assert ": :" not in text  # a problem with the line as a whole has no empty "where"
    path.write_text(header + '{"type": "run", "scenario": 3}\n', encoding="utf-8")
    with pytest.raises(TraceError, match=r"bad.jsonl:2: run\.scenario: "):
        LabResults.load(path)
