"""A model call that keeps silent is given up (``AgentConfig.model_timeout_s``): a typed
``TimeLimitError`` (kind ``model``, reason ``timeout``) that keeps the partial counts, after
the call's ``model_call_failed`` and the run's ``loop_failure``, in the words of
``words.json``. An invoked call has the limit for its whole reply; a streamed one for each
chunk, so a long stream that keeps sending is never cut."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostile.hostilekit import check_partial, check_result, only
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool
from loopkit import MODEL, calls, final, tool_call

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel
from toolloop_lab._engine.config import DEFAULT_MODEL_TIMEOUT_S
from toolloop_lab._support.words import TIME_LIMIT, time_limit_text
from toolloop_lab.errors import ExecutionError, TimeLimitError, ToolLoopError
from toolloop_lab.events import Event, LoopFailed, ModelCalled, ModelCallFailed

SAFETY_S = 30.0
"""Only a deadlock guard: a model that was never given up stops waiting after this and
fails the test; never a timing assertion."""


async def _hold() -> None:
    await asyncio.sleep(SAFETY_S)
    raise AssertionError("the call was never given up")


class Silent(ScriptedChatModel):
    """Plays its script, then never answers (streamed: after one chunk of text)."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.remaining:
            return await super()._agenerate(messages, stop, run_manager, **kwargs)
        await _hold()
        raise AssertionError("unreachable")

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if self.remaining:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
            return
        yield ChatGenerationChunk(message=AIMessageChunk(content="partial"))
        await _hold()


class Trickle(ScriptedChatModel):
    """Streams ``pieces`` chunks of text ``gap_s`` apart, then usage: a long reply that
    keeps sending."""

    pieces: int = 12
    gap_s: float = 0.1

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for _ in range(self.pieces):
            await asyncio.sleep(self.gap_s)
            yield ChatGenerationChunk(message=AIMessageChunk(content="word "))
        usage = {"input_tokens": 10, "output_tokens": self.pieces, "total_tokens": 22}
        yield ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))


def _failed_call(events: list[Event]) -> ModelCallFailed:
    return only(e for e in events if isinstance(e, ModelCallFailed))


async def test_a_model_call_that_never_answers_is_given_up_with_the_counts_kept(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    model = Silent([calls(tool_call("echo", {"text": "a"}, "c1"))], model_name=MODEL)
    config = AgentConfig(model_timeout_s=0.2)
    agent = LLMAgent(model, [echo_tool], config, observers=[events.append])
    with pytest.raises(TimeLimitError) as info:
        await asyncio.wait_for(agent.arun("go"), SAFETY_S)

    err = info.value
    assert isinstance(err, ExecutionError)
    assert isinstance(err, TimeoutError)
    assert (err.kind, err.reason, err.limit_s) == ("model", "timeout", 0.2)
    said = time_limit_text("model", 0.2)
    assert str(err) == said
    assert said.startswith(TIME_LIMIT["model"].split("{limit}")[0])  # the words file's
    assert "0.2 s" in said
    assert "model_timeout_s" in said
    # the round before it was paid for and answered: kept
    failed = check_partial(err)
    paid = only(e for e in events if isinstance(e, ModelCalled))
    assert failed.usage == paid.usage
    assert (err.model_calls, err.rounds) == (1, 1)
    assert (failed.error_type, failed.error_kind, failed.reason) == (
        "TimeLimitError",
        "model",
        "timeout",
    )
    assert (failed.outcome, failed.cancelled, failed.message) == ("failed", False, said)
    given_up = _failed_call(events)
    assert (given_up.call, given_up.purpose, given_up.error_type) == (2, "round", "TimeLimitError")
    assert given_up.message == said


async def test_a_stream_that_goes_quiet_is_given_up_with_what_it_sent(
    echo_tool: BaseTool,
) -> None:
    events: list[Event] = []
    model = Silent([calls(tool_call("echo", {"text": "a"}, "c1"))], model_name=MODEL)
    config = AgentConfig(streaming=True, model_timeout_s=0.3)
    agent = LLMAgent(model, [echo_tool], config, observers=[events.append])
    with pytest.raises(TimeLimitError) as info:
        await asyncio.wait_for(agent.arun("go"), SAFETY_S)

    err = info.value
    said = time_limit_text("model_stream", 0.3)
    assert (str(err), err.kind, err.reason) == (said, "model", "timeout")
    failed = check_partial(err)
    assert (failed.error_kind, failed.reason, failed.partial_text) == (
        "model",
        "timeout",
        "partial",
    )
    assert err.partial_text == "partial"
    given_up = _failed_call(events)
    assert (given_up.error_type, given_up.partial_text) == ("TimeLimitError", "partial")


async def test_a_long_stream_that_keeps_sending_is_never_cut() -> None:
    # 12 chunks 0.1 s apart take longer than the 0.5 s limit in all: the limit is on
    # silence (each chunk gives the model the limit again), not on the whole stream
    events: list[Event] = []
    model = Trickle([final("unused")], model_name=MODEL)
    config = AgentConfig(streaming=True, model_timeout_s=0.5)
    agent = LLMAgent(model, [], config, observers=[events.append])
    result = await asyncio.wait_for(agent.arun("go"), SAFETY_S)
    check_result(result)
    assert result.final_response.text == "word " * 12
    assert not any(isinstance(e, ModelCallFailed) for e in events)


async def test_a_pruning_call_that_never_answers_is_given_up_too(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    model = ScriptedChatModel(
        [calls(tool_call("echo", {"text": "x" * 50}, "c1")), final("never")], model_name=MODEL
    )
    config = AgentConfig(prune_tools=("echo",), prune_min_chars=10, model_timeout_s=0.2)
    pruner = Silent([], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], config, pruning_model=pruner, observers=[events.append])
    with pytest.raises(TimeLimitError) as info:
        await asyncio.wait_for(agent.arun("go"), SAFETY_S)
    assert (info.value.kind, info.value.reason) == ("model", "timeout")
    failed = check_partial(info.value)
    assert (failed.error_kind, failed.reason) == ("model", "timeout")
    given_up = _failed_call(events)
    assert (given_up.purpose, given_up.error_type) == ("pruning", "TimeLimitError")


async def test_a_stop_during_a_limited_call_is_still_a_stop(echo_tool: BaseTool) -> None:
    events: list[Event] = []
    model = Silent([], model_name=MODEL)
    agent = LLMAgent(
        model, [echo_tool], AgentConfig(model_timeout_s=SAFETY_S), observers=[events.append]
    )
    task = asyncio.create_task(agent.arun("go"))
    while not any(e.kind == "model_call_start" for e in events):
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, SAFETY_S)
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert (failed.cancelled, failed.error_type, failed.outcome) == (
        True,
        "CancelledError",
        "cancelled",
    )


async def test_a_models_own_timeout_error_is_its_failure_not_the_limit(
    echo_tool: BaseTool,
) -> None:
    model = ScriptedChatModel([TimeoutError("the provider timed out")], model_name=MODEL)
    agent = LLMAgent(model, [echo_tool], AgentConfig(model_timeout_s=SAFETY_S))
    with pytest.raises(ToolLoopError) as info:
        await agent.arun("go")
    assert not isinstance(info.value, TimeLimitError)
    assert isinstance(info.value.cause, TimeoutError)
    assert "the provider timed out" in str(info.value)


def test_model_calls_have_a_generous_limit_by_default() -> None:
    assert DEFAULT_MODEL_TIMEOUT_S == 600.0
    assert AgentConfig().model_timeout_s == DEFAULT_MODEL_TIMEOUT_S
    assert AgentConfig(model_timeout_s=None).model_timeout_s is None  # no limit, if asked
    assert "model_timeout_s" not in AgentConfig().changed()
