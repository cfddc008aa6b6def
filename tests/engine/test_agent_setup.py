"""What ``LLMAgent(...)`` takes, and what it refuses when it is built (issue 28, "Mistakes
that must be caught when the object is built").

A wrong argument is refused by the constructor, with a message that says what to pass
instead, so a mistake never reaches a run (where it read like a loop bug, after a model
call may have been paid for). Plain functions are tools, as for ``bind_tools`` and
``create_agent``: langchain-core's own ``tool()`` turns them into ``StructuredTool`` s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import ConfigurationError, LLMAgent, ScriptedChatModel


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def scale(x: float, factor: float = 2.0) -> float:
    """Multiply x by factor."""
    return x * factor


def _script(*replies: Any) -> ScriptedChatModel:
    return ScriptedChatModel(list(replies), model_name=MODEL)


# -- tools ----------------------------------------------------------------------------------
async def test_plain_functions_are_tools_as_langchain_makes_them(echo_tool: BaseTool) -> None:
    model = _script(
        calls(tool_call("add", {"a": 2, "b": 3}, "c1"), tool_call("scale", {"x": 1.5}, "c2")),
        final("5 and 3.0"),
    )
    agent = LLMAgent(model, [add, scale, echo_tool])

    assert [t.name for t in agent.tools] == ["add", "scale", "echo"]
    assert all(isinstance(t, StructuredTool) for t in agent.tools)
    assert agent.tools[2] is echo_tool, "a tool is kept as it was given"
    # the model is told about each function exactly as langchain-core describes it
    assert [convert_to_openai_tool(t) for t in agent.tools[:2]] == [
        convert_to_openai_tool(tool(add)),
        convert_to_openai_tool(tool(scale)),
    ]
    result = await agent.arun("Add 2 and 3, and scale 1.5.")
    answers = [m.content for m in result.messages if isinstance(m, ToolMessage)]
    assert answers == ["5", "3.0"]
    assert model.bindings[0][0] == ("add", "scale", "echo")


def _generated(echo_tool: BaseTool) -> Iterator[Any]:
    yield echo_tool
    yield add


@pytest.mark.parametrize("shape", ["list", "tuple", "generator", "empty"])
def test_every_collection_of_tools_still_works(shape: str, echo_tool: BaseTool) -> None:
    given: Any = {
        "list": [echo_tool, add],
        "tuple": (echo_tool, add),
        "generator": _generated(echo_tool),
        "empty": (),
    }[shape]
    agent = LLMAgent(_script(final("done")), given)
    expected = [] if shape == "empty" else ["echo", "add"]
    assert [t.name for t in agent.tools] == expected
    assert agent.run("go").final_response.text == "done"


class _EchoTool(BaseTool):
    name: str = "echo_class"
    description: str = "Echo."

    def _run(self, text: str) -> str:
        return text


REFUSED_TOOLS: list[tuple[str, Any, str]] = [
    ("a string", "echo", "got the str 'echo'"),
    ("None", None, "got None: leave tools= out"),
    ("a number", 3, "got the int 3"),
    ("a dict of tools", {"add": add}, "list(tools.values())"),
    ("a single function", add, "pass tools=[add]"),
    ("a name in the list", ["echo"], "tools[0] is the str 'echo'"),
    ("None in the list", [add, None], "tools[1] is None"),
    ("a JSON schema", [{"type": "function", "function": {"name": "f"}}], "tools[0] is a dict"),
    ("a tool class", [_EchoTool], "tools[0] is the class _EchoTool: pass an instance"),
]


@pytest.mark.parametrize(
    ("given", "fix"), [case[1:] for case in REFUSED_TOOLS], ids=[c[0] for c in REFUSED_TOOLS]
)
def test_anything_but_a_list_of_tools_is_refused_when_the_agent_is_built(
    given: Any, fix: str
) -> None:
    model = _script(final("never"))
    with pytest.raises(TypeError, match=r"^tools= takes a list of tools \(BaseTool, @tool") as info:
        LLMAgent(model, given)
    assert fix in str(info.value)
    assert model.calls == ()


def test_a_single_tool_is_refused_with_the_list_it_belongs_in(echo_tool: BaseTool) -> None:
    with pytest.raises(TypeError, match=r"got the tool 'echo' on its own: pass tools=\[echo\]"):
        LLMAgent(_script(), echo_tool)


def test_tools_set_later_are_checked_and_converted_too(echo_tool: BaseTool) -> None:
    agent = LLMAgent(_script(final("done")), [echo_tool])
    agent.tools = [add]
    assert [type(t) for t in agent.tools] == [StructuredTool]
    with pytest.raises(TypeError, match="tools= takes a list of tools"):
        agent.tools = echo_tool  # type: ignore[assignment]
    assert [t.name for t in agent.tools] == ["add"], "a refused value changes nothing"


def test_a_function_langchain_cannot_describe_is_refused_with_why() -> None:
    def undocumented(a: int) -> int:
        return a

    with pytest.raises(ConfigurationError, match="tools\\[0\\]: the function undocumented") as info:
        LLMAgent(_script(), [undocumented])
    assert info.value.field == "tools"
    assert "docstring" in str(info.value)
    assert "@tool(description=" in str(info.value)
