"""The sample workload: the file-system and ticket backends, their function docs, and the
``files`` workload's multi-turn sweep under its two configurations."""

from __future__ import annotations

import inspect
import json

import pandas as pd
import pytest

from toolloop_lab import tools_from_schema
from toolloop_lab.lab import LabResults, ScenarioRun, drop_volatile, run_scenarios
from toolloop_lab.workloads import (
    FILE_FUNCTIONS,
    FILES_CONFIGS,
    TICKET_FUNCTIONS,
    FileSystem,
    FileSystemError,
    TicketError,
    TicketTracker,
    Workbench,
    files_scenarios,
    files_sweep,
)
from toolloop_lab.workloads._files import SEED_FILES


# -- the backends ------------------------------------------------------------------------
def test_paths_are_relative_to_the_working_directory() -> None:
    fs = FileSystem({"/a/b.txt": "b", "/c.txt": "c"})
    assert fs.ls() == ["a/", "c.txt"]
    assert fs.cd("a") == "/a"
    assert fs.ls() == ["b.txt"]
    assert fs.cat("b.txt") == "b"
    assert fs.cat("../c.txt") == "c"
    assert fs.cat("/a/b.txt") == "b"
    assert fs.ls("..") == ["a/", "c.txt"]
    assert fs.cd("/") == "/"


def test_mv_moves_into_a_directory_or_renames() -> None:
    fs = FileSystem({"/notes.txt": "n", "/todo.txt": "t"})
    fs.mkdir("archive")
    assert fs.mv("notes.txt", "archive") == "moved /notes.txt to /archive/notes.txt"
    assert fs.mv("todo.txt", "archive/list.txt") == "moved /todo.txt to /archive/list.txt"
    fs.cd("archive")
    assert fs.mv("/archive", "/old") == "moved /archive to /old"
    assert fs.pwd() == "/old"  # the working directory moved with its folder
    assert fs.snapshot() == {"/old/list.txt": "t", "/old/notes.txt": "n"}


@pytest.mark.parametrize(
    ("action", "args"),
    [
        ("cat", ("missing.txt",)),
        ("cat", ("dir",)),
        ("cd", ("missing",)),
        ("cd", ("f.txt",)),
        ("mkdir", ("dir",)),
        ("mkdir", ("missing/sub",)),
        ("mv", ("missing", "x")),
        ("mv", ("f.txt", "dir/g.txt")),  # the destination exists
        ("mv", ("dir", "dir/inner")),
        ("rm", ("dir",)),  # not empty
        ("rm", ("missing",)),
        ("write", ("dir", "text")),
        ("write", ("missing/x.txt", "text")),
        ("grep", ("missing.txt", "x")),
    ],
)
def test_impossible_file_operations_raise_and_change_nothing(
    action: str, args: tuple[str, ...]
) -> None:
    fs = FileSystem({"/f.txt": "f", "/dir/g.txt": "g"})
    before = (fs.snapshot(), fs.pwd(), fs.ls(), fs.ls("dir"))
    with pytest.raises(FileSystemError):
        getattr(fs, action)(*args)
    assert (fs.snapshot(), fs.pwd(), fs.ls(), fs.ls("dir")) == before


def test_write_appends_and_grep_finds_lines() -> None:
    fs = FileSystem()
    fs.write("log", "one\n")
    fs.write("log", "two\n", append=True)
    assert fs.cat("log") == "one\ntwo\n"
    assert fs.grep("log", "tw") == ["two"]
    fs.write("log", "new\n")
    assert fs.cat("log") == "new\n"


def test_tickets_are_numbered_commented_attached_and_resolved() -> None:
    files = FileSystem({"/log": "ERROR x\n"})
    tracker = TicketTracker(files)
    assert tracker.create_ticket("first")["id"] == 1
    assert tracker.create_ticket("second", priority=1)["id"] == 2
    tracker.comment(1, "looking")
    tracker.attach_file(1, "log")
    assert tracker.get_ticket(1)["comments"] == ["looking", "[log]\nERROR x\n"]
    tracker.resolve_ticket(1, "fixed")
    assert [t["id"] for t in tracker.list_tickets("open")] == [2]
    assert [t["id"] for t in tracker.list_tickets("resolved")] == [1]
    with pytest.raises(TicketError):
        tracker.comment(1, "too late")
    with pytest.raises(TicketError):
        tracker.get_ticket(3)
    with pytest.raises(TicketError):
        tracker.attach_file(2, "missing")
    with pytest.raises(TicketError):
        TicketTracker().attach_file(1, "log")


@pytest.mark.parametrize(
    ("backend", "docs"), [(FileSystem(), FILE_FUNCTIONS), (TicketTracker(), TICKET_FUNCTIONS)]
)
def test_every_public_method_has_a_doc_that_fits_it(
    backend: object, docs: tuple[dict, ...]
) -> None:
    tools = tools_from_schema(backend, docs)  # refuses a doc that does not fit its method
    public = {
        name
        for name, member in inspect.getmembers(backend, callable)
        if not name.startswith("_") and name != "snapshot"
    }
    assert {t.name for t in tools} == public


def test_the_workbench_builds_fresh_backends_that_share_the_file_system() -> None:
    first = {t.name: t for t in Workbench()()}
    second = {t.name: t for t in Workbench()()}
    first["write"].invoke({"file_name": "new.txt", "content": "hello"})
    assert first["cat"].invoke({"file_name": "new.txt"}) == "hello"
    first["create_ticket"].invoke({"title": "t"})
    first["attach_file"].invoke({"ticket_id": 1, "file_name": "new.txt"})  # reads the same FS
    assert "hello" in json.dumps(first["get_ticket"].invoke({"ticket_id": 1}))
    assert sorted(second["ls"].invoke({})) == ["build/", "logs/", "notes.txt", "todo.txt"]
    assert len(SEED_FILES) == 7


# -- the sweep ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def results() -> LabResults:
    return run_scenarios(files_sweep(), progress=False)


def contents(run: ScenarioRun, turn: int, name: str) -> list[str]:
    view = run.views()[turn - 1]
    return [t.content for r in view.rounds for t in r.tools if t.name == name]


def test_the_sweep_is_every_scenario_under_both_configs(results: LabResults) -> None:
    names = [s.name for s in files_scenarios()]
    assert [r.scenario for r in results] == [f"{n}[{c}]" for c in FILES_CONFIGS for n in names]
    runs = results.runs
    assert (runs["turns"] == runs["turns_run"]).all()  # no turn failed
    assert runs["usage_estimated"].all()  # counted from what each call really sent
    assert [tuple(t) for t in runs["tags"]] == [("files", c) for c in FILES_CONFIGS for _ in names]


def test_roomy_turns_answer_and_the_backend_carries_over(results: LabResults) -> None:
    turns = results.turns
    roomy = turns[turns["scenario"].str.endswith("[roomy]")]
    assert (roomy["outcome"] == "final_answer").all()
    # The only tool error is the model's own bad argument, fixed in the next round.
    errors = results.tools[results.tools["status"] == "error"]
    roomy_errors = errors[errors["scenario"].str.endswith("[roomy]")]
    assert roomy_errors[["scenario", "turn", "name", "error_reason"]].values.tolist() == [
        ["incident_ticket[roomy]", 1, "create_ticket", "invalid_arguments"]
    ]
    tidy = results["tidy_notes[roomy]"]
    assert contents(tidy, 3, "cat") == [
        "- rotate the API keys\n- update the runbook\n- ship v2\n"  # moved in turn 1, cd in 2
    ]
    # Every later turn carries the whole conversation: its context only grows.
    for _, group in roomy.groupby("scenario", observed=True):
        assert group["context_tokens"].is_monotonic_increasing


def test_a_tight_round_cap_leaves_work_undone_and_later_turns_fail(
    results: LabResults,
) -> None:
    turns = results.turns.set_index(["scenario", "turn"])
    assert turns.loc[("tidy_notes[tight]", 1), "outcome"] == "synthesis"
    # The move never happened, so turn 2 finds no todo list where it looks for one.
    assert turns.loc[("tidy_notes[tight]", 2), "tool_errors"] == 1
    tidy = results["tidy_notes[tight]"]
    assert contents(tidy, 3, "cat") == ["- ship v2\n"]  # a new file, not the old list
    # The ticket was never opened: every later call about it fails.
    incident = [turns.loc[("incident_ticket[tight]", n), "tool_errors"] for n in (1, 2, 3)]
    assert incident == [1, 2, 2]
    runs = results.runs.set_index("scenario")
    for name in ("tidy_notes", "incident_ticket", "clean_build"):
        assert runs.loc[f"{name}[tight]", "rounds"] < runs.loc[f"{name}[roomy]", "rounds"]
        assert runs.loc[f"{name}[tight]", "cost_usd"] < runs.loc[f"{name}[roomy]", "cost_usd"]


def test_the_sweep_is_the_same_every_time(results: LabResults) -> None:
    again = run_scenarios(files_sweep(), concurrency=2, progress=False)
    for name in ("runs", "turns", "rounds", "tools"):
        pd.testing.assert_frame_equal(
            drop_volatile(getattr(again, name)), drop_volatile(getattr(results, name)), obj=name
        )
