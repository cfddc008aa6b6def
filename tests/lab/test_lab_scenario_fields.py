"""What a ``Scenario`` and its parts refuse when they are built.

Each wrong field used to be accepted and to become one failed row per scenario after the
whole sweep had run (5,000 scenarios sharing a typo: 5,000 failures, at the end), or a
bare Python error naming nothing (``'int' object is not iterable``). Every field of
``Scenario``, ``ScriptedModel``, ``ScriptedTurns``, ``Turn``, ``Reply`` and
``ToolCallSpec`` is checked where it is written: a ``ConfigurationError`` naming the field
and the fix, before anything runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.tools import BaseTool, StructuredTool

from toolloop_lab import AgentConfig, ScriptedChatModel
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab import (
    Reply,
    Scenario,
    ScriptedModel,
    ScriptedTurns,
    ToolCallSpec,
    Turn,
    run_scenarios,
)

OK = (Reply.final("done"),)


def _echo() -> BaseTool:
    """A tool factory, as a scenario takes one."""

    def echo_back(text: str) -> str:
        """Return the text."""
        return text

    return StructuredTool.from_function(echo_back)


def add(a: int, b: int) -> int:
    """A tool's own function, given where a tool factory belongs."""
    return a + b


def _model_needing(prompt: str) -> ScriptedChatModel:
    return ScriptedChatModel([prompt])


REFUSED: list[tuple[str, Callable[[], object], str, str]] = [
    # -- Scenario
    (
        "config a word",
        lambda: Scenario.scripted("s", OK, config="fast"),
        "config",
        "config= takes an AgentConfig (or a dict of its fields), got the str 'fast'",
    ),
    (
        "config a typo'd dict",
        lambda: Scenario.scripted("s", OK, config={"max_rounds": 3}),
        "config",
        "did you mean 'tool_max_rounds'?",
    ),
    (
        "an unknown built-in",
        lambda: Scenario.scripted("s", OK, tools=("ech",)),
        "tools",
        "tools[0] is 'ech', no built-in tool (built-ins: echo, file_read); did you mean 'echo'?",
    ),
    (
        "a tool itself",
        lambda: Scenario.scripted("s", OK, tools=(_echo(),)),
        "tools",
        "tools[0] is the tool 'echo_back' itself",
    ),
    (
        "a tool's function",
        lambda: Scenario.scripted("s", OK, tools=(add,)),
        "tools",
        "tools[0]: the function add needs arguments (a, b)",
    ),
    (
        "one built-in twice",
        lambda: Scenario.scripted("s", OK, tools=("echo", "echo")),
        "tools",
        "tools[0] and tools[1] are both 'echo'",
    ),
    ("tools a number", lambda: Scenario.scripted("s", OK, tools=5), "tools", "got the int 5"),
    (
        "data_dir a number",
        lambda: Scenario.scripted("s", OK, data_dir=5),
        "data_dir",
        "data_dir takes a directory path (a str or a Path), got the int 5",
    ),
    (
        "data_dir empty",
        lambda: Scenario.scripted("s", OK, data_dir=""),
        "data_dir",
        "data_dir takes a directory path",
    ),
    (
        "checks a word",
        lambda: Scenario.scripted("s", OK, checks="outcome"),
        "checks",
        "checks takes checks (a list of called(...), max_tool_rounds(...), ...), got the str",
    ),
    (
        "mcp_servers a word",
        lambda: Scenario.scripted("s", OK, mcp_servers="srv"),
        "mcp_servers",
        "mcp_servers takes a list of McpServer values, got the str 'srv'",
    ),
    (
        "an MCP server a number",
        lambda: Scenario.scripted("s", OK, mcp_servers=[5]),
        "mcp_servers",
        "mcp_servers[0] is the int 5: give McpServer(name, command=...)",
    ),
    (
        "a check a number",
        lambda: Scenario.scripted("s", OK, checks=[5]),
        "checks",
        "checks[0] is the int 5, not a check",
    ),
    (
        "tags a number",
        lambda: Scenario.scripted("s", OK, tags=5),
        "tags",
        "tags takes a list of str, got the int 5",
    ),
    (
        "a tag a number",
        lambda: Scenario.scripted("s", OK, tags=("a", 5)),
        "tags",
        "tags[1] is the int 5",
    ),
    (
        "description a number",
        lambda: Scenario.scripted("s", OK, description=5),
        "description",
        "description takes text, got the int 5",
    ),
    (
        "a blank prompt",
        lambda: Scenario.scripted("s", OK, prompt="  "),
        "prompt",
        "prompt is blank",
    ),
    (
        "a chat model itself",
        lambda: Scenario("s", ScriptedChatModel(["x"])),
        "model",
        "model is a ScriptedChatModel itself",
    ),
    ("a model name", lambda: Scenario("s", "gpt-4o-mini"), "model", "got the str 'gpt-4o-mini'"),
    (
        "a factory needing arguments",
        lambda: Scenario("s", _model_needing),
        "model",
        "model: the function _model_needing needs arguments (prompt)",
    ),
    (
        "a pruning chat model itself",
        lambda: Scenario.scripted("s", OK, pruning_model=ScriptedChatModel(["x"])),
        "pruning_model",
        "pruning_model is a ScriptedChatModel itself",
    ),
    (
        "pruning without a pruning model",
        lambda: Scenario.scripted("s", OK, config=AgentConfig(prune_tools=("echo",))),
        "prune_tools",
        "no pruning model",
    ),
    (
        "pruning a tool it lacks",
        lambda: Scenario.scripted(
            "s", OK, config=AgentConfig(prune_tools=("file_read",)), pruning_replies=OK
        ),
        "prune_tools",
        "'file_read' is not one of the scenario's tools (echo)",
    ),
    (
        "turns its script does not hold",
        lambda: Scenario("s", ScriptedTurns((Turn("hi", OK),)), turns=("hello",)),
        "turns",
        "the model's script is for the turns ('hi',)",
    ),
    (
        "tools_factory a number",
        lambda: Scenario.scripted("s", OK, tools_factory=5),
        "tools_factory",
        "tools_factory",
    ),
    # -- ScriptedModel, ScriptedTurns, Turn
    (
        "replies a string",
        lambda: Scenario("s", ScriptedModel("abc")),
        "replies",
        "replies takes a list of Reply values (Reply.final(...), Reply.call(...)), got the str",
    ),
    (
        "a reply a string",
        lambda: ScriptedModel((Reply.final("x"), "y")),
        "replies",
        "replies[1] is the str 'y'",
    ),
    (
        "no replies",
        lambda: Scenario.scripted("s", []),
        "replies",
        "a scripted model needs at least one Reply",
    ),
    (
        "no pruning replies",
        lambda: Scenario.scripted("s", OK, pruning_replies=[]),
        "pruning_replies",
        "a scripted model needs at least one Reply",
    ),
    (
        "a blank model name",
        lambda: ScriptedModel(OK, model_name=" "),
        "model_name",
        "model_name is blank",
    ),
    (
        "one call id twice",
        lambda: ScriptedModel(
            (
                Reply(tool_calls=(ToolCallSpec("echo", id="c"),)),
                Reply(tool_calls=(ToolCallSpec("echo", id="c"),)),
                *OK,
            )
        ),
        "replies",
        "the call id 'c' is used by replies[0] and replies[1]",
    ),
    ("no turns", lambda: ScriptedTurns(()), "turns", "at least one Turn"),
    (
        "a turn a string",
        lambda: ScriptedTurns(("hi",)),
        "turns",
        "turns[0] is the str 'hi': pass Turn(message, replies)",
    ),
    ("a turn's replies a string", lambda: Turn("hi", "abc"), "turns", "got the str 'abc'"),
    # -- Reply, ToolCallSpec
    (
        "a call's name a number",
        lambda: Reply.call(5),
        "name",  # type: ignore[arg-type]
        "name takes the tool's name (text), got the int 5",
    ),
    (
        "a call's args a list",
        lambda: Reply.call("echo", [1, 2]),
        "args",  # type: ignore[arg-type]
        "args takes a dict of the call's arguments by name, got a list",
    ),
    (
        "a call's args keyed by numbers",
        lambda: Reply.call("echo", {1: "a"}),
        "args",
        "args keys are argument names (text), got the int 1",
    ),
    ("a call id blank", lambda: ToolCallSpec("echo", id=""), "id", "id is blank"),
    (
        "a reply's text a number",
        lambda: Reply(5),
        "text",  # type: ignore[arg-type]
        "text takes text, got the int 5",
    ),
    (
        "a tool call as a tuple",
        lambda: Reply(tool_calls=(("echo", {}),)),
        "tool_calls",
        "tool_calls[0] is a tuple: pass ToolCallSpec(name, args)",
    ),
    (
        "a failure with text",
        lambda: Reply("x", raises="boom"),
        "raises",
        "a reply that raises has no text or tool calls",
    ),
    ("a failure's message blank", lambda: Reply.failure(""), "raises", "raises is blank"),
    (
        "a bool for tokens",
        lambda: Reply.final("x", input_tokens=True, output_tokens=1),
        "input_tokens",
        "input_tokens",
    ),
    (
        "a huge count",
        lambda: Reply.final("x", input_tokens=10**30, output_tokens=1),
        "input_tokens",
        "input_tokens",
    ),
]


@pytest.mark.parametrize(
    ("build", "field", "fix"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_a_wrong_field_is_refused_when_the_scenario_is_built(
    build: Callable[[], object], field: str, fix: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        build()
    assert (info.value.field, fix in str(info.value)) == (field, True), str(info.value)


def test_every_field_of_a_scenario_and_its_parts_has_a_refused_case() -> None:
    # a field added later gets a case here too
    covered = {
        Scenario: {
            "name",
            "model",
            "prompt",
            "tools",
            "config",
            "pruning_model",
            "usd_limit",
            "prices",
            "data_dir",
            "tags",
            "description",
            "turns",
            "tools_factory",
            "checks",
            "mcp_servers",
        },
        ScriptedModel: {"replies", "model_name"},
        ScriptedTurns: {"turns", "model_name"},
        Turn: {"message", "replies"},
        Reply: {"text", "tool_calls", "input_tokens", "output_tokens", "raises"},
        ToolCallSpec: {"name", "args", "id"},
    }
    for cls, fields in covered.items():
        assert {f.name for f in dataclasses.fields(cls)} == fields, cls.__name__


def test_a_sweep_of_scenarios_sharing_a_typo_fails_at_the_first_not_after_the_last() -> None:
    written: list[str] = []

    def sweep() -> list[Scenario]:
        out = []
        for i in range(5_000):
            written.append(f"s{i}")
            out.append(Scenario.scripted(f"s{i}", OK, tools=("echo", "file_reader")))
        return out

    with pytest.raises(ConfigurationError, match=r"no built-in tool.*did you mean 'file_read'"):
        sweep()
    assert written == ["s0"]


def test_what_the_checks_accept_still_runs(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    scenarios = [
        Scenario.scripted(
            "dict config, a Path, one tag",
            [Reply.call("file_read", {"path": "a.txt"}), Reply.final("read")],
            tools=("file_read",),
            config={"tool_max_rounds": 2},
            data_dir=tmp_path,
            tags="smoke",
        ),
        Scenario.scripted("a factory", OK, tools=(_echo,), tags=["x", "y"]),
        Scenario.scripted(
            "pruning",
            [Reply.call("echo", {"text": "a" * 50}), Reply.final("ok")],
            config=AgentConfig(prune_tools=("echo",), prune_min_chars=10),
            pruning_replies=[Reply.final("a")],
        ),
        Scenario.scripted("turns", turns=[Turn("one", OK), Turn("two", OK)]),
    ]
    first = scenarios[0]
    assert first.config == AgentConfig(tool_max_rounds=2)
    assert (first.data_dir, first.tags) == (str(tmp_path), ("smoke",))
    runs = run_scenarios(scenarios, progress=False).runs
    assert list(runs["outcome"]) == ["final_answer"] * 4
