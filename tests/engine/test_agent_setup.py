"""What ``LLMAgent(...)`` takes, and what it refuses when it is built (issue 28, "Mistakes
that must be caught when the object is built").

A wrong argument is refused by the constructor, with a message that says what to pass
instead, so a mistake never reaches a run (where it read like a loop bug, after a model
call may have been paid for). Plain functions are tools, as for ``bind_tools`` and
``create_agent``: langchain-core's own ``tool()`` turns them into ``StructuredTool`` s.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel
from toolloop_lab.errors import ConfigurationError


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


# -- models ---------------------------------------------------------------------------------
@pytest.fixture
def openai_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Credentials for the OpenAI client, pointed at a port nothing listens on: a model
    can be built, and nothing it could send would reach anyone."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize("name", ["openai:gpt-4o-mini", "gpt-4o-mini"])
def test_a_model_name_becomes_a_chat_model_through_init_chat_model(
    name: str, openai_nowhere: None
) -> None:
    from langchain_openai import ChatOpenAI

    agent = LLMAgent(name, [add])
    assert isinstance(agent.model, ChatOpenAI)
    assert agent.model.model_name == "gpt-4o-mini"
    assert str(agent.model.root_client.base_url) == "http://127.0.0.1:9/v1/"
    pruning = LLMAgent(_script(), pruning_model=name).pruning_model
    assert isinstance(pruning, ChatOpenAI)


def test_a_model_name_without_langchain_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "langchain.chat_models", None)  # as if not installed
    with pytest.raises(TypeError) as info:
        LLMAgent("openai:gpt-4o-mini", [add])
    text = str(info.value)
    assert text.startswith("model= takes a langchain-core chat model")
    assert "pip install langchain" in text
    assert "ChatOpenAI(model=" in text


def test_a_model_init_chat_model_cannot_make_is_refused_with_why(openai_nowhere: None) -> None:
    with pytest.raises(ConfigurationError) as info:
        LLMAgent("not-a-model", [add])
    assert info.value.field == "model"
    assert "Unable to infer model provider" in str(info.value)
    assert "'provider:model'" in str(info.value)


class _NoModel:
    """Not a chat model, though it has the methods the loop calls."""

    def bind_tools(self, tools: Any) -> Any:
        return self


REFUSED_MODELS: list[tuple[str, Any, str]] = [
    ("None", None, "got None"),
    ("a number", 4, "got the int 4"),
    ("a duck", _NoModel(), "got a _NoModel"),
    ("a model class", ScriptedChatModel, "got the class ScriptedChatModel: pass an instance"),
    ("a bound model", _script().bind_tools([add]), "pass the chat model itself"),
]


@pytest.mark.parametrize(
    ("given", "fix"), [c[1:] for c in REFUSED_MODELS], ids=[c[0] for c in REFUSED_MODELS]
)
def test_anything_but_a_chat_model_is_refused_when_the_agent_is_built(given: Any, fix: str) -> None:
    with pytest.raises(TypeError) as info:
        LLMAgent(given, [add])
    assert str(info.value).startswith("model= takes a langchain-core chat model (BaseChatModel")
    assert fix in str(info.value)
    with pytest.raises(TypeError, match=r"^pruning_model= takes a langchain-core chat model"):
        LLMAgent(_script(), [add], pruning_model=given if given is not None else 4)


def test_a_model_set_later_is_checked_too() -> None:
    model = _script(final("done"))
    agent = LLMAgent(model, [add])
    with pytest.raises(TypeError, match=r"^model= takes a langchain-core chat model"):
        agent.model = None  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match=r"^model='nonsense model name': init_chat"):
        agent.model = "nonsense model name"
    assert agent.model is model, "a refused value changes nothing"
    assert agent.run("go").final_response.text == "done"


# -- tools that share a name ---------------------------------------------------------------
def _echo_named(name: str) -> BaseTool:
    def other_echo(text: str) -> str:
        """Echo the text, another way."""
        return text

    return StructuredTool.from_function(other_echo, name=name)


def test_two_tools_with_one_name_are_refused_when_the_agent_is_built(echo_tool: BaseTool) -> None:
    # they used to be accepted, and every run failed as "tool loop failed in round 0"
    model = _script(final("never"))
    with pytest.raises(ConfigurationError) as info:
        LLMAgent(model, [add, echo_tool, _echo_named("echo")])
    text = str(info.value)
    assert info.value.field == "tools"
    assert "tools[1] (the tool echo) and tools[2] (the function other_echo) are both named" in text
    assert "'echo'" in text
    assert "give one of them another name" in text
    assert model.calls == ()


def test_one_tool_given_twice_is_refused_with_pass_it_once(echo_tool: BaseTool) -> None:
    with pytest.raises(ConfigurationError, match=r"tools\[0\] and tools\[1\] are the same tool"):
        LLMAgent(_script(), [echo_tool, echo_tool])


def test_tools_sharing_a_name_set_later_are_refused_and_the_tools_stay(
    echo_tool: BaseTool,
) -> None:
    agent = LLMAgent(_script(final("done")), [echo_tool])
    with pytest.raises(ConfigurationError, match="both named 'echo'"):
        agent.tools = [echo_tool, _echo_named("echo")]
    assert agent.tools == (echo_tool,), "a refused value changes nothing"
    assert agent.run("go").final_response.text == "done"


# -- observers and pause hooks ----------------------------------------------------------------
def _observer(event: Any) -> None:
    """An observer that keeps nothing."""


async def _hook(point: Any) -> None:
    """A pause hook that holds nothing."""


REFUSED_OBSERVERS: list[tuple[str, str, Any, str]] = [
    (
        "observers",
        "one function",
        _observer,
        "got the function _observer on its own: pass a list, observers=[_observer]",
    ),
    ("observers", "a string", "print", "got the str 'print'"),
    (
        "observers",
        "a name in the list",
        ["print"],
        "observers[0] is the str 'print': pass the observer itself, not its name",
    ),
    (
        "observers",
        "None in the list",
        [_observer, None],
        "observers[1] is None, which cannot be called",
    ),
    ("observers", "a number in the list", [42], "observers[0] is the int 42"),
    (
        "observers",
        "a class in the list",
        [list],
        "observers[0] is the class list: pass an instance",
    ),
    ("observers", "None", None, "got None: leave observers= out for none"),
    ("pause_hooks", "one hook", _hook, "pass a list, pause_hooks=[_hook]"),
    ("pause_hooks", "a number", [42], "pause_hooks[0] is the int 42, which cannot be called"),
    ("pause_hooks", "a dict", {"hook": _hook}, "got a dict"),
]


@pytest.mark.parametrize(
    ("field", "given", "fix"),
    [c[0:1] + c[2:] for c in REFUSED_OBSERVERS],
    ids=[f"{c[0]}-{c[1]}" for c in REFUSED_OBSERVERS],
)
def test_observers_and_pause_hooks_that_cannot_be_called_are_refused_when_built(
    field: str, given: Any, fix: str, echo_tool: BaseTool
) -> None:
    model = _script(final("never"))
    with pytest.raises(TypeError) as info:
        LLMAgent(model, [echo_tool], **{field: given})
    text = str(info.value)
    assert text.startswith(f"{field}= takes a list of "), text
    assert fix in text
    assert model.calls == ()


def test_an_observer_or_hook_added_later_is_checked_too(echo_tool: BaseTool) -> None:
    agent = LLMAgent(_script(final("done")), [echo_tool])
    with pytest.raises(TypeError, match=r"^callback takes one observer .*the str 'print'"):
        agent.subscribe("print")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^hook takes one pause hook .*the int 42"):
        agent.add_pause_hook(42)  # type: ignore[arg-type]
    assert (agent.observers, agent.pause_hooks) == ((), ())


def test_observers_and_hooks_of_every_collection_still_work(echo_tool: BaseTool) -> None:
    seen: list[Any] = []
    held: list[Any] = []

    async def hook(point: Any) -> None:
        held.append(point.stage)

    model = _script(calls(tool_call("echo", {"text": "a"}, "c1")), final("done"))
    agent = LLMAgent(model, [echo_tool], observers=(o for o in [seen.append]), pause_hooks={hook})
    assert agent.run("go").final_response.text == "done"
    assert [e.kind for e in seen][-1] == "loop_finish"
    assert "tool_dispatch" in held


# -- pruning without a pruning model ----------------------------------------------------------
def test_prune_tools_without_a_pruning_model_is_refused_when_built(echo_tool: BaseTool) -> None:
    # it used to be accepted, and nothing was ever pruned
    from toolloop_lab import AgentConfig

    model = _script(final("never"))
    with pytest.raises(ConfigurationError) as info:
        LLMAgent(model, [echo_tool], AgentConfig(prune_tools=("echo",)))
    assert info.value.field == "prune_tools"
    text = str(info.value)
    assert "prune_tools names 'echo', but there is no pruning model" in text
    assert "pass pruning_model=" in text
    pruner = _script(final("short"))
    LLMAgent(model, [echo_tool], AgentConfig(prune_tools=("echo",)), pruning_model=pruner)


async def test_a_pruning_model_taken_away_later_fails_the_run_before_any_call(
    echo_tool: BaseTool,
) -> None:
    from toolloop_lab import AgentConfig
    from toolloop_lab.errors import ToolLoopError

    model = _script(final("never"))
    config = AgentConfig(prune_tools=("echo",))
    agent = LLMAgent(model, [echo_tool], config, pruning_model=_script(final("short")))
    agent.pruning_model = None
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")
    assert isinstance(info.value.cause, ConfigurationError)
    assert info.value.cause.field == "prune_tools"
    assert model.calls == ()
