"""Recording and replay through langchain-core's real streaming and callback machinery.

A recorder streams through the wrapped model's own streaming path and writes the chunks it
sent; replay streams them back. Inside any chain (a prompt pipe, a LangGraph node, a usage
callback), a recorded call is reported exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.callbacks import BaseCallbackHandler, UsageMetadataCallbackHandler
from langchain_core.callbacks.usage import get_usage_metadata_callback
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableBinding, RunnableLambda
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_json_schema
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from loopkit import MODEL, tool_call, usage
from pydantic import BaseModel, Field
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage
from stubs.prices import openai_cost

from toolloop_lab import LLMAgent, Recording, RecordingChatModel, ReplayChatModel, ScriptedChatModel

PROMPT = [HumanMessage("Tell me about streams, at some length please.")]
LONG = "Streams arrive in pieces; a recorder keeps every piece as the provider sent it."


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS: list[BaseTool] = [lookup]


def _reply(text: str = LONG, tokens: tuple[int, int] = (10, 5), **extra: Any) -> AIMessage:
    return AIMessage(text, usage_metadata=usage(*tokens), **extra)


def _added(chunks: list[AIMessageChunk]) -> AIMessageChunk:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return total


def _view(chunks: list[AIMessageChunk]) -> list[tuple[Any, ...]]:
    """What a stream carries, chunk by chunk (ids are per run, so left out)."""
    return [
        (c.content, c.usage_metadata, c.tool_call_chunks, c.chunk_position, c.response_metadata)
        for c in chunks
    ]


# -- item 2: streams are recorded as streams, and replayed as streams ------------------


def test_the_recorder_streams_through_the_wrapped_models_stream(tmp_path: Path) -> None:
    reply = _reply(tool_calls=[tool_call("lookup", {"key": "k"}, "c1")])
    direct = list(ScriptedChatModel([reply], model_name=MODEL).bind_tools(TOOLS).stream(PROMPT))
    path = tmp_path / "s.jsonl"
    recorder = RecordingChatModel(ScriptedChatModel([reply], model_name=MODEL), path)

    streamed = list(recorder.bind_tools(TOOLS).stream(PROMPT))

    assert len(direct) > 2
    assert _view(streamed) == _view(direct)
    line = json.loads(path.read_text())
    assert [c["type"] for c in line["chunks"]] == ["AIMessageChunk"] * len(direct)
    assert [c["data"]["content"] for c in line["chunks"]] == [c.content for c in direct]
    assert line["chunks"][-1]["data"]["usage_metadata"] == usage(10, 5)
    assert line["response"]["type"] == "ai"
    assert line["response"]["data"]["content"] == LONG
    assert line["response"]["data"]["tool_calls"][0]["args"] == {"key": "k"}
    recorded = Recording.from_file(path).calls[0]
    assert recorded.streamed
    assert recorded.response is not None
    assert recorded.response.tool_calls == reply.tool_calls
    assert recorded.usage().input_tokens == 10


async def test_a_streamed_recording_replays_the_same_chunks(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    recorder = RecordingChatModel(ScriptedChatModel([_reply()], model_name=MODEL), path)
    recorded = [c async for c in recorder.astream(PROMPT)]

    replay = ReplayChatModel.from_file(path)
    replayed = [c async for c in replay.astream(PROMPT)]

    assert len(recorded) > 2
    assert _view(replayed) == _view(recorded)
    assert [c.id for c in replayed] == [c.id for c in recorded]
    replay.reset()
    whole = replay.invoke(PROMPT)  # a streamed call also replays whole
    assert whole.text == LONG
    assert whole.usage_metadata == usage(10, 5)


def test_a_call_recorded_whole_replays_as_chunks(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    RecordingChatModel(ScriptedChatModel([_reply()], model_name=MODEL), path).invoke(PROMPT)
    assert "chunks" not in json.loads(path.read_text())  # the line format is unchanged

    chunks = list(ReplayChatModel.from_file(path).stream(PROMPT))

    assert len(chunks) > 2
    total = _added(chunks)
    assert total.text == LONG
    assert total.usage_metadata == usage(10, 5)
    assert [c.usage_metadata is not None for c in chunks].count(True) == 1
    assert chunks[-1].chunk_position == "last"


def test_a_stream_that_fails_midway_is_recorded_with_what_arrived(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"

    class Flaky(ScriptedChatModel):
        def _stream(self, *args: Any, **kwargs: Any) -> Any:
            pieces = iter(super()._stream(*args, **kwargs))
            yield next(pieces)
            raise ConnectionError("stream cut")

    recorder = RecordingChatModel(Flaky([_reply()], model_name=MODEL), path)
    got: list[AIMessageChunk] = []
    with pytest.raises(ConnectionError):
        got.extend(recorder.stream(PROMPT))

    call = Recording.from_file(path).calls[0]
    assert call.response is None
    assert call.error is not None
    assert call.error.type == "builtins.ConnectionError"
    assert call.chunks is not None
    assert [c.content for c in call.chunks] == [LONG[:16]]

    replayed: list[AIMessageChunk] = []
    with pytest.raises(Exception) as info:  # noqa: PT011 - the type is checked below
        replayed.extend(ReplayChatModel.from_file(path).stream(PROMPT))
    assert type(info.value).__name__ == "RecordedCallError"
    assert [c.content for c in replayed] == [LONG[:16]]


# -- item 3: one recorded call, one report ---------------------------------------------


def test_a_usage_handler_in_a_chain_counts_a_recorded_call_once(tmp_path: Path) -> None:
    recorder = RecordingChatModel(
        ScriptedChatModel([_reply(), _reply()], model_name=MODEL), tmp_path / "c.jsonl"
    )
    chain = ChatPromptTemplate.from_messages([("human", "{question}")]) | recorder
    handler = UsageMetadataCallbackHandler()

    chain.invoke({"question": "hi"}, config={"callbacks": [handler]})

    assert handler.usage_metadata[MODEL]["input_tokens"] == 10
    assert handler.usage_metadata[MODEL]["output_tokens"] == 5
    streamed = list(chain.stream({"question": "hi"}, config={"callbacks": [handler]}))
    assert len(streamed) > 1
    assert handler.usage_metadata[MODEL]["input_tokens"] == 20
    assert handler.usage_metadata[MODEL]["output_tokens"] == 10


async def test_the_usage_callback_context_counts_a_recorded_call_once(tmp_path: Path) -> None:
    recorder = RecordingChatModel(
        ScriptedChatModel([_reply(), _reply()], model_name=MODEL), tmp_path / "c.jsonl"
    )
    with get_usage_metadata_callback() as handler:
        await recorder.ainvoke(PROMPT)
        async for _chunk in recorder.astream(PROMPT):
            pass
    assert handler.usage_metadata[MODEL]["input_tokens"] == 20
    assert handler.usage_metadata[MODEL]["total_tokens"] == 30


class _Starts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[dict[str, Any] | None] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.starts.append(kwargs.get("invocation_params"))


def test_a_recorded_call_in_a_chain_starts_one_chat_model_run(tmp_path: Path) -> None:
    recorder = RecordingChatModel(ScriptedChatModel([_reply(), _reply()]), tmp_path / "c.jsonl")
    chain = RunnableLambda(lambda messages: messages) | recorder.bind_tools(TOOLS)
    starts = _Starts()

    chain.invoke(PROMPT, config={"callbacks": [starts]})
    list(chain.stream(PROMPT, config={"callbacks": [starts]}))

    assert len(starts.starts) == 2  # one per recorded call, none for the wrapped model
    assert all(
        params is not None and params["_type"] == "toolloop-recording" for params in starts.starts
    )


class _State(TypedDict):
    question: str
    answer: str


async def test_an_agent_in_a_langgraph_node_reports_each_recorded_call_once(
    tmp_path: Path,
) -> None:
    inner = ScriptedChatModel(
        [
            AIMessage(
                "Looking.",
                tool_calls=[tool_call("lookup", {"key": "k"}, "c1")],
                usage_metadata=usage(40, 6),
            ),
            _reply("Found it.", (70, 4)),
        ],
        model_name=MODEL,
    )
    agent = LLMAgent(RecordingChatModel(inner, tmp_path / "graph.jsonl"), TOOLS)

    async def run_agent(state: _State) -> dict[str, str]:
        result = await agent.arun(state["question"])
        return {"answer": result.final_response.text}

    graph = StateGraph(_State)
    graph.add_node("agent", run_agent)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    handler = UsageMetadataCallbackHandler()

    out = await graph.compile().ainvoke(
        {"question": "Look k up.", "answer": ""}, config={"callbacks": [handler]}
    )

    assert out["answer"] == "Found it."
    assert handler.usage_metadata[MODEL]["input_tokens"] == 110
    assert handler.usage_metadata[MODEL]["output_tokens"] == 10


# -- item 4: replay binds tools the way a provider model does --------------------------


class Joke(BaseModel):
    """A joke."""

    setup: str = Field(description="the setup")
    punchline: str = Field(description="the punchline")


class _Options(BaseCallbackHandler):
    def __init__(self) -> None:
        self.options: list[dict[str, Any] | None] = []
        self.params: list[dict[str, Any] | None] = []

    def on_chat_model_start(
        self,
        serialized: Any,
        messages: Any,
        *,
        options: dict[str, Any] | None = None,
        invocation_params: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        self.options.append(options)
        self.params.append(invocation_params)


def _joke_responder(messages: list[BaseMessage], tools: list[dict[str, Any]]) -> AIMessage:
    name = tools[0]["function"]["name"]
    args = {"setup": "Why?", "punchline": "Because."}
    return AIMessage("", tool_calls=[tool_call(name, args, "j1")], usage_metadata=usage(9, 9))


def test_replay_bind_tools_keeps_every_keyword(tmp_path: Path) -> None:
    path = tmp_path / "bind.jsonl"
    RecordingChatModel(ScriptedChatModel([_reply()]), path).invoke(PROMPT)
    replay = ReplayChatModel.from_file(path)

    bound = replay.bind_tools(TOOLS, tool_choice="any", parallel_tool_calls=False)

    assert isinstance(bound, RunnableBinding)
    assert bound.kwargs["tool_choice"] == "any"
    assert bound.kwargs["parallel_tool_calls"] is False
    assert [t["function"]["name"] for t in bound.kwargs["tools"]] == ["lookup"]


def test_replayed_structured_output_reports_its_format_and_tool_choice(tmp_path: Path) -> None:
    path = tmp_path / "joke.jsonl"
    recorder = RecordingChatModel(ScriptedChatModel([_joke_responder]), path)
    recorded_options = _Options()
    joke = recorder.with_structured_output(Joke).invoke(
        "Tell a joke.", config={"callbacks": [recorded_options]}
    )
    assert joke == Joke(setup="Why?", punchline="Because.")

    replayed_options = _Options()
    again = (
        ReplayChatModel.from_file(path)
        .with_structured_output(Joke)
        .invoke("Tell a joke.", config={"callbacks": [replayed_options]})
    )

    assert again == joke
    for options in (recorded_options.options, replayed_options.options):
        assert len(options) == 1
        assert options[0] is not None
        schema = options[0]["ls_structured_output_format"]["schema"]
        assert schema == convert_to_json_schema(Joke)
    assert replayed_options.params[0] is not None
    assert replayed_options.params[0]["tool_choice"] == "any"
    assert [t["function"]["name"] for t in replayed_options.params[0]["tools"]] == ["Joke"]


# -- a real client's stream, recorded and replayed -------------------------------------


def test_a_real_chat_openai_stream_is_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "openai-stream.jsonl"
    with OpenAIStub(chunk_interval=0.0) as stub:
        ids = stub.reply(
            text="Adding them up now.",
            tool_calls=[OpenAIToolCall("add", {"a": 2, "b": 40})],
            usage=OpenAIUsage(321, 17, cached_tokens=128),
        )
        client = ChatOpenAI(
            model="gpt-4o-mini",
            base_url=stub.base_url,
            api_key="test",
            max_retries=0,
            stream_usage=True,
        )
        recorder = RecordingChatModel(client, path)
        live = list(recorder.bind_tools([add]).stream(PROMPT))
    stub.assert_clean()
    assert stub.bodies[0]["stream"] is True  # the provider really streamed

    replayed = list(ReplayChatModel.from_file(path).bind_tools([add]).stream(PROMPT))

    assert len(live) > 5
    assert _view(replayed) == _view(live)
    total = _added(replayed)
    assert total.text == "Adding them up now."
    assert [(c["id"], c["args"]) for c in total.tool_calls] == [(ids[0], {"a": 2, "b": 40})]
    assert total.usage_metadata is not None
    assert (total.usage_metadata["input_tokens"], total.usage_metadata["output_tokens"]) == (
        321,
        17,
    )
    call = Recording.from_file(path).calls[0]
    assert call.streamed
    assert call.chunks is not None
    assert len(call.chunks) == len(live)
    assert call.usage().input_tokens == 321
    assert call.usage().cache_read_tokens == 128
    assert call.usage().cost_usd == openai_cost(stub.reported)
