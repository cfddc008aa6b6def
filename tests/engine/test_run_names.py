"""A run's name, tags and metadata: given to ``run`` / ``arun``, carried by its start event.

They say which run is which when a debugger, a trace or a sweep holds many: the loop puts
them on ``LoopStarted`` as given (metadata frozen, as JSON), traces keep them, and a bad
value is refused at the call, before anything runs or is spent.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel, TraceWriter, echo_tool, read_trace
from toolloop_lab.events import Event, LoopStarted, event_from_dict


def agent(*observers: Any) -> LLMAgent:
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "hi"}, "c1")), final("done")], model_name=MODEL
    )
    return LLMAgent(model, [echo_tool()], observers=observers)


def start_of(events: tuple[Event, ...] | list[Event]) -> LoopStarted:
    starts = [e for e in events if isinstance(e, LoopStarted)]
    assert len(starts) == 1
    return starts[0]


def test_run_puts_its_name_tags_and_metadata_on_the_start_event() -> None:
    result = agent().run(
        "go", name="triage", tags=["nightly", "v2"], metadata={"ticket": 42, "who": ["a"]}
    )
    start = start_of(result.events)
    assert start.name == "triage"
    assert start.tags == ("nightly", "v2")
    assert start.metadata == {"ticket": 42, "who": ["a"]}
    with pytest.raises(TypeError):
        start.metadata["ticket"] = 1  # type: ignore[index]  # frozen, as every event's data


def test_arun_takes_them_too_and_a_run_without_them_has_none() -> None:
    named = asyncio.run(agent().arun("go", name="a", tags=("x",)))
    plain = agent().run("go")
    assert (start_of(named.events).name, start_of(named.events).tags) == ("a", ("x",))
    assert (start_of(plain.events).name, start_of(plain.events).tags) == (None, ())
    assert start_of(plain.events).metadata == {}


def test_metadata_is_kept_as_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        agent(writer).run("go", name="n", tags=("t",), metadata={"at": Path("/x"), "n": 1.5})
    start = start_of(read_trace(path).events)
    assert (start.name, start.tags) == ("n", ("t",))
    assert start.metadata == {"at": "/x", "n": 1.5}


def test_a_start_event_written_before_names_loads_without_them() -> None:
    data = start_of(agent().run("go").events).to_dict()
    for key in ("tags", "metadata"):
        del data[key]
    old = event_from_dict(data)
    assert isinstance(old, LoopStarted)
    assert (old.name, old.tags, old.metadata) == (None, (), {})


@pytest.mark.parametrize(
    ("given", "fix"),
    [
        ({"name": 3}, "name="),
        ({"tags": "nightly"}, "tags=('nightly',)"),
        ({"tags": ["ok", 7]}, "tags="),
        ({"metadata": ["ticket", 42]}, "metadata="),
        ({"metadata": {1: "x"}}, "metadata="),
    ],
)
def test_a_bad_name_tags_or_metadata_is_refused_at_the_call(
    given: dict[str, Any], fix: str
) -> None:
    events: list[Event] = []
    with pytest.raises(TypeError, match=fix.replace("(", r"\(").replace(")", r"\)")):
        agent(events.append).run("go", **given)
    assert events == []  # nothing started
