"""Tools from plain methods and JSON-schema function docs: valid calls run the method,
invalid ones never reach it and come back as an error ToolMessage, positional-only
parameters and schema defaults are mapped, and docs that do not fit are refused early."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import StructuredTool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel, tools_from_schema
from toolloop_lab._engine.interventions import check_args
from toolloop_lab._tools.schema import function_spec, json_schema_problem
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import ToolDispatched

SAFETY_S = 60.0
"""Guard against a stall: far beyond what a check that cannot stall takes."""


class Shelf:
    """A backend whose methods record every call they get."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def move(self, source: str, destination: str, /, overwrite: bool = False) -> str:
        self.calls.append(("move", source, destination, overwrite))
        return f"{source} -> {destination} (overwrite={overwrite})"

    def tag(self, name: str, labels: list[str], *, note: str = "none") -> dict[str, Any]:
        labels.append("seen")  # a method that changes its argument in place
        self.calls.append(("tag", name, tuple(labels), note))
        return {"name": name, "labels": labels, "note": note}

    async def fetch(self, key: str, /) -> str:
        await asyncio.sleep(0)
        self.calls.append(("fetch", key))
        return f"value of {key}"

    def _secret(self) -> str:
        return "never"


def doc(name: str, properties: dict[str, Any], required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} method.",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                **extra,
            },
        },
    }


MOVE = doc(
    "move",
    {
        "source": {"type": "string", "minLength": 1},
        "destination": {"type": "string"},
        "overwrite": {"type": "boolean", "default": True},
    },
    ["source", "destination"],
)
TAG = doc(
    "tag",
    {
        "name": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}, "default": ["new"]},
        "note": {"type": "string", "enum": ["none", "urgent"]},
    },
    ["name"],
    additionalProperties=False,
)
FETCH = {  # the bare function form, without the tools-format wrapper
    "name": "fetch",
    "description": "Fetch a value.",
    "parameters": {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
    },
}


async def run_calls(
    shelf: Shelf, *args_by_tool: tuple[str, dict[str, Any]]
) -> list[ToolDispatched]:
    """One reply making every call, through the real loop; the dispatch events by call."""
    tools = tools_from_schema(shelf, [MOVE, TAG, FETCH])
    reply = calls(*(tool_call(n, a, f"c{i}") for i, (n, a) in enumerate(args_by_tool)))
    model = ScriptedChatModel([reply, final("done")], model_name=MODEL)
    result = await LLMAgent(model, tools).arun("go")
    events = {e.tool_call_id: e for e in result.events if isinstance(e, ToolDispatched)}
    messages = {m.tool_call_id: m for m in result.messages if isinstance(m, ToolMessage)}
    for call_id, event in events.items():
        assert event.content == messages[call_id].content
    return [events[f"c{i}"] for i in range(len(args_by_tool))]


async def test_valid_calls_run_the_method_with_positional_only_parameters_mapped() -> None:
    shelf = Shelf()
    moved, tagged, fetched = await run_calls(
        shelf,
        ("move", {"destination": "b", "source": "a", "overwrite": False}),
        ("tag", {"name": "x", "labels": ["l1"], "note": "urgent"}),
        ("fetch", {"key": "k"}),
    )
    assert [e.status for e in (moved, tagged, fetched)] == ["success"] * 3
    assert moved.content == "a -> b (overwrite=False)"
    assert fetched.content == "value of k"  # an async method is an async tool
    assert sorted(shelf.calls) == [  # the calls of one reply run concurrently
        ("fetch", "k"),
        ("move", "a", "b", False),
        ("tag", "x", ("l1", "seen"), "urgent"),
    ]


async def test_schema_defaults_are_applied_and_never_shared_between_calls() -> None:
    shelf = Shelf()
    moved, first, second = await run_calls(
        shelf,
        ("move", {"source": "a", "destination": "b"}),
        ("tag", {"name": "one"}),
        ("tag", {"name": "two"}),
    )
    # The schema's default (True) wins over the method's own (False).
    assert shelf.calls[0] == ("move", "a", "b", True)
    # Each call gets its own copy of a mutable default; "note" falls back to the method's.
    tags = sorted(c for c in shelf.calls if c[0] == "tag")
    assert tags == [
        ("tag", "one", ("new", "seen"), "none"),
        ("tag", "two", ("new", "seen"), "none"),
    ]
    assert moved.status == first.status == second.status == "success"


@pytest.mark.parametrize(
    ("name", "args", "where"),
    [
        ("move", {"source": 7, "destination": "b"}, "source: 7 is not of type 'string'"),
        ("move", {"source": "", "destination": "b"}, "source: "),
        ("move", {"source": "a"}, "(arguments): 'destination' is a required property"),
        ("move", {"source": "a", "destination": "b", "force": True}, "force: "),
        ("tag", {"name": "x", "note": "later"}, "note: 'later' is not one of"),
        ("tag", {"name": "x", "colour": "red"}, "(arguments): Additional properties"),
        ("tag", {"name": "x", "labels": ["ok", 3]}, "labels.1: 3 is not of type 'string'"),
    ],
)
async def test_invalid_calls_are_error_messages_and_never_reach_the_method(
    name: str, args: dict[str, Any], where: str
) -> None:
    shelf = Shelf()
    (event,) = await run_calls(shelf, (name, args))
    assert (event.status, event.error_reason, event.ran) == ("error", "invalid_arguments", True)
    assert event.content.startswith(f"Error: invalid arguments for tool {name!r}: {where}")
    assert shelf.calls == []
    # A person's edit of the same arguments at a pause gets the same verdict.
    tool = {t.name: t for t in tools_from_schema(Shelf(), [MOVE, TAG, FETCH])}[name]
    problem = check_args(tool, args)
    assert problem is not None  # an unknown name too: the edit gets the tool's own check
    assert problem.startswith(where)


def test_an_edit_is_checked_by_the_one_check_the_tool_runs() -> None:
    # The model's call with a name the method does not take is refused at dispatch
    # ("force: is not an argument of this function"); a person's edit of the same
    # arguments at a pause must be refused before it is accepted, in the same words.
    move = tools_from_schema(Shelf(), [MOVE, TAG, FETCH])[0]
    problem = check_args(move, {"source": "a", "destination": "b", "force": True})
    assert problem == "force: is not an argument of this function"
    assert check_args(move, {"source": "a", "destination": "b"}) is None


async def test_one_bad_call_does_not_stop_its_siblings() -> None:
    shelf = Shelf()
    bad, good = await run_calls(
        shelf, ("move", {"source": 1, "destination": 2}), ("fetch", {"key": "k"})
    )
    assert (bad.status, good.status) == ("error", "success")
    assert shelf.calls == [("fetch", "k")]


def test_a_tool_exposes_the_docs_schema_to_the_model() -> None:
    move, tag, fetch = tools_from_schema(Shelf(), [MOVE, TAG, FETCH])
    assert (move.name, move.description) == ("move", "The move method.")
    assert move.tool_call_schema["properties"] == MOVE["function"]["parameters"]["properties"]
    assert tag.tool_call_schema["additionalProperties"] is False
    assert (fetch.name, fetch.description) == ("fetch", "Fetch a value.")


def test_tools_built_from_one_object_share_it() -> None:
    shelf = Shelf()
    move, _, fetch = tools_from_schema(shelf, [MOVE, TAG, FETCH])
    move.invoke({"source": "a", "destination": "b"})
    asyncio.run(fetch.ainvoke({"key": "k"}))
    assert [c[0] for c in shelf.calls] == ["move", "fetch"]


def test_json_schema_problem_points_at_the_argument() -> None:
    schema = MOVE["function"]["parameters"]
    assert json_schema_problem(schema, {"source": "a", "destination": "b"}) is None
    problem = json_schema_problem(schema, {"source": "a", "destination": 5})
    assert problem is not None
    assert problem.path == ("destination",)
    assert str(problem) == "destination: 5 is not of type 'string'"


@pytest.mark.parametrize(
    ("docs", "field"),
    [
        ([doc("missing", {}, [])], "functions"),  # no such method
        ([doc("_secret", {}, [])], "functions"),  # private: never a tool
        ([{"type": "function", "function": {"name": "_secret"}}], "functions"),
        ([doc("move", {"source": {"type": "string"}}, ["source"])], "parameters"),  # destination?
        (
            [doc("move", {**MOVE["function"]["parameters"]["properties"], "extra": {}}, [])],
            "parameters",
        ),
        ([{"name": "move", "parameters": {"type": "array"}}], "parameters"),
        ([{"name": "move", "parameters": {"type": "object", "properties": 3}}], "parameters"),
        ([{"name": "move", "description": 5}], "description"),
        ([{"name": "bad name!"}], "name"),
        (["not a doc"], "functions"),
        ([{"type": "function"}], "functions"),
        ([MOVE, MOVE], "functions"),
    ],
)
def test_docs_that_do_not_fit_are_refused_when_built(docs: list[Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        tools_from_schema(Shelf(), docs)
    assert err.value.field == field


def test_a_method_taking_any_keyword_accepts_any_documented_name() -> None:
    class Open:
        def __init__(self) -> None:
            self.seen: dict[str, Any] = {}

        def put(self, **fields: Any) -> str:
            self.seen = fields
            return "ok"

    backend = Open()
    (put,) = tools_from_schema(
        backend, [doc("put", {"a": {"type": "integer"}, "b": {"type": "string"}}, ["a"])]
    )
    assert put.invoke({"a": 1, "b": "x", "c": True}) == "ok"
    assert backend.seen == {"a": 1, "b": "x", "c": True}


def test_function_spec_reads_both_shapes() -> None:
    wrapped = function_spec(MOVE)
    bare = function_spec(MOVE["function"])
    assert wrapped == bare
    assert function_spec({"name": "ping"}).parameters == {"type": "object", "properties": {}}


# -- schemas that cannot check everything safely ----------------------------------------

LOOPING = {
    "type": "object",
    "properties": {"key": {"$ref": "#/$defs/again"}},
    "$defs": {"again": {"$ref": "#/$defs/again"}},
}


class Anything:
    """A backend whose method takes any argument (and remembers what it got)."""

    def __init__(self) -> None:
        self.fields: list[dict[str, Any]] = []

    def fetch(self, **fields: Any) -> str:
        self.fields.append(fields)
        return "ran"


def dict_schema_tool(schema: dict[str, Any]) -> StructuredTool:
    """A tool whose schema is a plain dict (as MCP and OpenAPI tools have)."""
    return StructuredTool.from_function(
        lambda **kwargs: "ran", name="lookup", description="Look up.", args_schema=schema
    )


async def test_a_schema_that_refers_to_itself_is_one_typed_refusal_everywhere() -> None:
    with pytest.raises(jsonschema.SchemaError, match=r"\$ref"):
        json_schema_problem(LOOPING, {"key": "k"})
    # a person's edit: a refusal in words
    problem = check_args(dict_schema_tool(LOOPING), {"key": "k"})
    assert problem is not None
    assert "$ref" in problem
    # the model's call: an error ToolMessage in the same words; the method never runs
    backend = Anything()
    (fetch,) = tools_from_schema(backend, [{"name": "fetch", "parameters": LOOPING}])
    model = ScriptedChatModel([calls(tool_call("fetch", {"key": "k"}, "c1")), final("done")])
    result = await LLMAgent(model, [fetch]).arun("go")
    (event,) = (e for e in result.events if isinstance(e, ToolDispatched))
    assert event.status == "error"
    assert "$ref" in event.content
    assert "RecursionError" not in event.content
    assert backend.fields == []


def test_patterns_keep_their_meaning() -> None:
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "pattern": "^[a-z\\u00e9]+$"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert json_schema_problem(schema, {"word": "caf\u00e9", "x-size": 3}) is None
    assert json_schema_problem(schema, {"word": "\ud800"}) is not None  # a lone surrogate
    bad_word = json_schema_problem(schema, {"word": "Caf\u00e9"})
    assert bad_word is not None
    assert bad_word.path == ("word",)
    assert "does not match" in bad_word.message
    wrong_type = json_schema_problem(schema, {"x-size": "big"})
    assert wrong_type is not None
    assert wrong_type.path == ("x-size",)
    extra = json_schema_problem(schema, {"colour": "red"})
    assert extra is not None
    assert "'colour'" in extra.message
    named = {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}}
    assert json_schema_problem(named, {"ok": 1}) is None
    assert json_schema_problem(named, {"NO": 1}) is not None


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object", "properties": {"key": {"type": "string", "pattern": "^(?!tmp)"}}},
        {"type": "object", "properties": {"key": {"type": "string", "pattern": "(a)\\1"}}},
        {"type": "object", "patternProperties": {"(?<=x)y": {}}},
        {
            "type": "object",
            "patternProperties": {"^x-": {}},
            "unevaluatedProperties": False,
        },
    ],
)
def test_a_pattern_that_cannot_be_matched_in_linear_time_is_refused(
    parameters: dict[str, Any],
) -> None:
    with pytest.raises(ConfigurationError, match="pattern") as err:
        tools_from_schema(Anything(), [{"name": "fetch", "parameters": parameters}])
    assert err.value.field == "parameters"
    # other tools with such a schema: an edit that would need it is refused, in words
    problem = check_args(dict_schema_tool(parameters), {"key": "tmp", "x-1": 1, "xy": 2})
    assert problem is not None
    assert "pattern" in problem


def test_a_backtracking_pattern_cannot_stall_the_process() -> None:
    """``^(a+)+$`` takes Python's ``re`` about 2**n steps on n a's and a '!': a model's
    40-character argument would hold the GIL for hours. Run in a child process, so a
    stall fails this test at the guard instead of hanging the suite."""
    script = textwrap.dedent(
        """
        import asyncio, json
        from langchain_core.messages import AIMessage
        from langchain_core.tools import StructuredTool
        from toolloop_lab import LLMAgent, ScriptedChatModel
        from toolloop_lab.errors import InterventionError
        from toolloop_lab.events import ToolDispatched
        from toolloop_lab import tools_from_schema

        EVIL = "a" * 40 + "!"
        SCHEMA = {"type": "object", "properties": {"key": {"type": "string",
                  "pattern": "^(a+)+$"}}, "required": ["key"]}

        class Shelf:
            def fetch(self, key):
                return "ran"

        (fetch,) = tools_from_schema(Shelf(), [{"name": "fetch", "parameters": SCHEMA}])
        lookup = StructuredTool.from_function(
            lambda **kw: "ran", name="lookup", description="d", args_schema=SCHEMA)
        refusals = []

        async def hook(point):
            if point.stage == "tool_dispatch":
                try:
                    point.edit_args("l1", {"key": EVIL})
                except InterventionError as exc:
                    refusals.append(str(exc))

        reply = AIMessage("", tool_calls=[
            {"name": "fetch", "args": {"key": EVIL}, "id": "f1", "type": "tool_call"},
            {"name": "lookup", "args": {"key": "aaa"}, "id": "l1", "type": "tool_call"}])
        model = ScriptedChatModel([reply, AIMessage("done")])
        result = asyncio.run(LLMAgent(model, [fetch, lookup], pause_hooks=[hook]).arun("go"))
        out = {e.tool_call_id: [e.status, e.error_reason, e.content]
               for e in result.events if isinstance(e, ToolDispatched)}
        print(json.dumps({"dispatched": out, "refusals": refusals}))
        """
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=SAFETY_S,
        cwd=root,
        env=env,
        check=True,
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    status, reason, content = seen["dispatched"]["f1"]
    assert (status, reason) == ("error", "invalid_arguments")
    assert "does not match" in content
    assert seen["dispatched"]["l1"][:2] == ["success", None]
    [refusal] = seen["refusals"]
    assert "does not match" in refusal
