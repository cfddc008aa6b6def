"""A recording played back as the run it recorded: the model's replies *and* the tools'
results as they were, through the real loop.

A recording holds every request a model was sent, so each tool result the run's model
read is in it (the request after the call). :func:`recorded_tools` makes a tool of each
name the recorded calls had bound that answers a call with that result, and
:func:`replay_recording` runs an ordinary :class:`~toolloop_lab._engine.agent.LLMAgent` on
a strict :class:`~toolloop_lab.ReplayChatModel` with them: the loop, its events and every
view are the real ones, nothing is folded a second way, and no network or key is needed.
Checks judge a recording this way (:mod:`toolloop_lab.checks`); ``toolloop-lab check``
does it from the command line.

What a recording cannot say is how the loop was set up. :class:`ReplaySettings` holds it:
read off the recorded run's events when they are at hand (:meth:`ReplaySettings.of_events`:
its round cap, token budget, USD limit, synthesis prompt, streaming, the stuck limit that
stopped it), else inferred from the recording (:meth:`ReplaySettings.of_recording`: a
final-answer call after ``n`` rounds is the round cap's, at ``n``). Limits, by
construction: a tool's error reads ``tool_error`` (the recording keeps the text the model
read, not why); pruning calls are not in the recording (the pruned text is, so the
conversation is the same); one recording is one run (a file holding several runs' calls
is refused, as ``recorded_calls`` left over say).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from pydantic import ConfigDict, PrivateAttr

from toolloop_lab._engine.agent import LLMAgent
from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._replay.chat_models import ReplayChatModel
from toolloop_lab._replay.recording_file import Recording
from toolloop_lab._replay.rerun import Rerun, rerun
from toolloop_lab._spend.budget import usd_budget
from toolloop_lab._spend.pricing import to_decimal_usd
from toolloop_lab._support.fields import shown
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.events import (
    Event,
    LoopStarted,
    ModelCalled,
    ModelCallStarted,
    SynthesisStarted,
)

_CONFIG_FIELDS: Final = frozenset(f.name for f in fields(AgentConfig))
_SAVED_FIELDS: Final = (
    "tool_max_rounds",
    "token_budget_percent",
    "context_window",
    "synthesis_prompt",
    "max_stuck_rounds",
    "streaming",
)
"""The settings a replay of a recording needs (the rest change nothing a recording holds)."""


class _RecordedTool(BaseTool):
    """A tool that answers each call with the result the recording says it had."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    response_format: Any = "content_and_artifact"  # the loop hands it the whole call, id too
    _results: Mapping[str, ToolMessage] = PrivateAttr(default_factory=dict)

    def _answer(self, call: Any) -> ToolMessage:
        call_id = call.get("id") if isinstance(call, Mapping) else None
        found = self._results.get(call_id) if isinstance(call_id, str) else None
        if found is None:
            return ToolMessage(
                content=f"the recording holds no result for call {call_id!r} of {self.name!r}",
                tool_call_id=str(call_id),
                status="error",
            )
        return ToolMessage(
            content=found.content, tool_call_id=found.tool_call_id, status=found.status
        )

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._answer(input)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self._answer(input)

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError  # never reached: invoke answers

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def recorded_results(recording: Recording) -> dict[str, ToolMessage]:
    """Every tool result the recorded requests carried, by call id."""
    return {
        m.tool_call_id: m
        for call in recording.calls
        for m in call.request
        if isinstance(m, ToolMessage)
    }


def recorded_tools(recording: Recording) -> list[BaseTool]:
    """A tool for each name the recorded calls had bound, in the order they were bound,
    answering each call with its recorded result."""
    names: dict[str, None] = {}
    for call in recording.calls:
        for name in call.tools or ():
            names.setdefault(name, None)
    results = recorded_results(recording)
    tools: list[BaseTool] = []
    for name in names:
        tool = _RecordedTool(
            name=name,
            description=f"{name}, answered with the results of a recording",
            args_schema={"type": "object", "properties": {}, "additionalProperties": True},
        )
        tool._results = results
        tools.append(tool)
    return tools


def _percent_for(tokens: int, window: int) -> float:
    """The smallest ``token_budget_percent`` the loop turns back into ``tokens`` of
    ``window`` (it keeps ``int(window * percent / 100)``)."""
    percent = max(tokens * 100 / window, 1e-9)
    for _ in range(64):
        if int(window * percent / 100) >= tokens:
            break
        percent = math.nextafter(percent, math.inf)
    return min(percent, 100.0)


@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """How the loop that made a recording was set up, as far as its replay needs."""

    config: AgentConfig
    usd_limit: Decimal | None = None
    """The run's USD limit (a replay runs under ``usd_budget(usd_limit)``)."""

    @classmethod
    def of_events(cls, events: Sequence[Event]) -> ReplaySettings:
        """Read off a recorded run's events (one run's): its round cap, token budget,
        context window, USD limit, streaming, synthesis prompt, and the stuck limit when
        a stuck model stopped it."""
        start = next((e for e in events if isinstance(e, LoopStarted)), None)
        changes: dict[str, Any] = {}
        usd = None
        if start is not None:
            if start.max_rounds is not None:
                changes["tool_max_rounds"] = start.max_rounds
            window = start.context_window
            if window is not None:
                changes["context_window"] = window
                if start.token_budget is not None:
                    changes["token_budget_percent"] = _percent_for(start.token_budget, window)
            usd = start.usd_limit
        if any(isinstance(e, ModelCallStarted) and e.streaming for e in events):
            changes["streaming"] = True
        synthesis = next((e for e in events if isinstance(e, SynthesisStarted)), None)
        if synthesis is not None:
            changes["synthesis_prompt"] = synthesis.prompt
            if synthesis.reason == "stuck":
                changes["max_stuck_rounds"] = _trailing_stuck(events) or 1
        return cls(AgentConfig(**changes), usd)

    @classmethod
    def of_recording(cls, recording: Recording) -> ReplaySettings:
        """Inferred from the recording alone: the round cap is the rounds it recorded (a
        final-answer call after them read as the cap's), its synthesis prompt the one that
        call was sent, streaming if a call was streamed, the context window its profile's."""
        calls = recording.calls
        rounds = sum(1 for c in calls if c.tools_bound)
        changes: dict[str, Any] = {"tool_max_rounds": max(rounds, 1)}
        last = calls[-1]
        if not last.tools_bound and rounds and last.request:
            prompt = last.request[-1]
            text = prompt.content if isinstance(prompt, HumanMessage) else None
            if isinstance(text, str) and text.strip():
                changes["synthesis_prompt"] = text
        if any(c.streamed for c in calls):
            changes["streaming"] = True
        return cls(AgentConfig(**changes))

    def to_json(self) -> dict[str, Any]:
        """The settings as JSON (saved beside a recording, with its checks)."""
        config = {name: getattr(self.config, name) for name in _SAVED_FIELDS}
        usd = None if self.usd_limit is None else str(self.usd_limit)
        return {"config": config, "usd_limit": usd}

    @classmethod
    def from_json(cls, data: Any, *, where: str) -> ReplaySettings:
        """Read back :meth:`to_json`; anything else is a ``ConfigurationError`` naming
        ``where`` and the field."""
        if not isinstance(data, Mapping):
            raise ConfigurationError(f"{where}: replay takes an object", field="replay")
        config = data.get("config") or {}
        if not isinstance(config, Mapping):
            raise ConfigurationError(f"{where}: replay.config takes an object", field="replay")
        unknown = sorted(set(config) - _CONFIG_FIELDS)
        if unknown:
            raise ConfigurationError(
                f"{where}: replay.config has no field {unknown[0]!r}", field="replay.config"
            )
        try:
            built = AgentConfig(**config)
            usd = data.get("usd_limit")
            limit = None if usd is None else to_decimal_usd(usd, field="replay.usd_limit")
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}", field=f"replay.{exc.field}") from None
        return cls(built, limit)


def _trailing_stuck(events: Iterable[Event]) -> int:
    """How many round replies in a row were stuck at the end of the tool rounds."""
    count = 0
    for event in events:
        if isinstance(event, ModelCalled) and event.purpose == "round":
            count = count + 1 if event.stuck else 0
    return count


@dataclass(frozen=True, slots=True)
class PlayedBack:
    """A recording played back: how the run ended, and the recorded calls it left unused."""

    run: Rerun
    unused: int
    """Recorded calls the run never asked for (a recording of several runs has some)."""


async def replay_recording(
    recording: Recording,
    settings: ReplaySettings | None = None,
    *,
    make_agent: Callable[[BaseChatModel], Any] | None = None,
) -> PlayedBack:
    """Run the recording's task on a strict replay of it, under ``settings`` (by default
    :meth:`ReplaySettings.of_recording`), its calls answered by its recorded results
    (:func:`recorded_tools`), or by the agent ``make_agent`` builds on the replay's model
    (your real tools: a change in them makes the replay diverge where it shows); every
    stop but a bad config is the result's."""
    chosen = settings if settings is not None else ReplaySettings.of_recording(recording)
    model = ReplayChatModel(recording)
    if make_agent is None:
        agent = LLMAgent(model, recorded_tools(recording), chosen.config)
    else:
        agent = make_agent(model)
        if not isinstance(agent, LLMAgent):
            raise ConfigurationError(
                f"the agent function returned {shown(agent)}, not an LLMAgent built on the "
                "model it was given",
                field="agent",
            )
    if chosen.usd_limit is None:
        played = await rerun(agent, recording.task)
    else:
        with usd_budget(chosen.usd_limit):
            played = await rerun(agent, recording.task)
    return PlayedBack(played, model.remaining)


def settings_of(value: Any, field: str) -> ReplaySettings | None:
    """``value`` as replay settings: ``None``, :class:`ReplaySettings`, or an
    ``AgentConfig`` (no USD limit)."""
    if value is None or isinstance(value, ReplaySettings):
        return value
    if isinstance(value, AgentConfig):
        return ReplaySettings(value)
    raise ConfigurationError(
        f"{field} takes an AgentConfig or None, got {shown(value)}", field=field
    )
