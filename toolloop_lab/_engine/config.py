"""``AgentConfig``: how the loop runs, declared as constrained fields.

A config is checked when it is built: a bad value raises ``ConfigurationError(field=...)``
naming the field and what it should be, where it was written (it used to fail inside the
first run, as "tool loop failed in round 0", which read like a bug of the loop). A run
checks its config again with :meth:`AgentConfig.validated` before any model call, for a
config that did not come through the constructor (unpickled, or changed with
``object.__setattr__``). The constraints live in the field annotations (pydantic enforces
them, strictly: no ``"5"`` for ``5``, no ``"yes"`` for ``True``), not in hand-written checks.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Final

from annotated_types import Gt, Le, MinLen
from pydantic import (
    AllowInfNan,
    BeforeValidator,
    ConfigDict,
    Strict,
    TypeAdapter,
    ValidationError,
)

from toolloop_lab._engine.pruning import DEFAULT_PRUNING_PROMPT
from toolloop_lab._support.fields import (
    Count,
    PositiveInt,
    Prompt,
    TimeoutSeconds,
    refused,
)
from toolloop_lab._support.pickling import quick_pickle

DEFAULT_SYNTHESIS_PROMPT: Final = (
    "Stop calling tools now. Using only what the conversation above already contains, "
    "give your best final answer to the original request, and say briefly what is still "
    "missing, if anything."
)

DEFAULT_MODEL_TIMEOUT_S: Final = 600.0
"""How long a model call may keep silent by default: ten minutes, the default request
timeout of the OpenAI and Anthropic SDKs (so it never gives up a call their clients would
still wait for), long enough for a slow reasoning model's whole reply, yet a call that
never answers no longer holds a notebook or a sweep for ever."""


def _names(value: Any) -> Any:
    """Lists and sets of names are accepted and kept as a tuple (the config is frozen)."""
    if isinstance(value, (list, set, frozenset)):
        return tuple(sorted(value) if isinstance(value, (set, frozenset)) else value)
    return value


_Percent = Annotated[float, AllowInfNan(False), Gt(0), Le(100)]
_ToolName = Annotated[str, Strict(), MinLen(1)]


@quick_pickle  # scenarios carry one to every worker
@dataclass(frozen=True, slots=True)
class AgentConfig:
    """How the loop runs. Immutable; checked when it is built (``ConfigurationError``
    naming the first bad field), and again by :meth:`validated` when a run starts."""

    tool_max_rounds: PositiveInt = 10
    """Tool rounds before the loop stops calling tools and runs synthesis."""
    token_budget_percent: _Percent | None = None
    """Token budget as % of the context window; ``None`` means no token budget."""
    context_window: PositiveInt | None = None
    """Overrides the model profile's ``max_input_tokens`` (default 128,000 if neither)."""
    prune_tools: Annotated[tuple[_ToolName, ...], BeforeValidator(_names)] = ()
    """Tools whose large outputs the pruning model shortens (outputs of text: one that
    holds an image or a file, content blocks an MCP tool returned, is sent as it is)."""
    prune_min_chars: Count = 2_000
    """Only outputs longer than this many characters are pruned."""
    pruning_prompt: Prompt = DEFAULT_PRUNING_PROMPT
    synthesis_prompt: Prompt = DEFAULT_SYNTHESIS_PROMPT
    max_stuck_rounds: PositiveInt | None = None
    """Stop early (synthesis, reason ``stuck``) once the model has repeated a round's exact
    tool calls, same names and arguments, this many times in a row; ``None``: never."""
    tool_timeout_s: TimeoutSeconds | None = None
    """Per-tool-call timeout; a call that takes longer gets an error ToolMessage."""
    system_prompt: Prompt | None = None
    """Prepended when :meth:`LLMAgent.arun` is given a plain prompt; ``None``: none. Blank
    text is refused, as for every prompt (providers refuse whitespace-only text)."""
    streaming: bool = False
    """Read replies as streams where the model implements streaming (``model_delta``
    events with the text as it arrives, time to first token). A streamed reply is the
    same message as an invoked one: usage from the provider's final chunk, tool-call
    arguments parsed as strictly. Off by default, so a run sends exactly the requests it
    always did."""
    parallel_tool_calls: bool = True
    """Run the calls of one reply concurrently (results still in call order); ``False``
    runs them one after another, in order, for tools whose calls depend on each other."""
    model_timeout_s: TimeoutSeconds | None = DEFAULT_MODEL_TIMEOUT_S
    """The most seconds a model may keep silent in one call (round, final-answer and
    pruning calls alike) before the call is given up: for an invoked call, the whole wait
    for its reply; for a streamed one, the wait for its first chunk and then for each next
    one (a stream that keeps sending is working and being billed, and its usage comes in
    its last chunk: it is never cut for being long, only for going quiet). A call given
    up raises :class:`~toolloop_lab.errors.TimeLimitError` (``kind="model"``,
    ``reason="timeout"``) with the run's partial counts, after its ``model_call_failed``
    and the run's ``loop_failure``. Default 600 s (see ``DEFAULT_MODEL_TIMEOUT_S``);
    ``None``: no limit."""

    rate_limit_retries: Count = 0
    """How many times a model call the provider refused for a rate limit (HTTP 429) is
    sent again, each after the wait its ``Retry-After`` header asks (at most
    ``MAX_RETRY_AFTER_S``, 60 s; 1 s without one). Each refusal is a ``model_call_failed``
    event saying how long the loop waited (``retry_after_s``), so the wait is counted and
    seen, and the run goes on. For a sweep against a real provider; give the client
    ``max_retries=0`` so the waits are the loop's, not hidden in the client. 0: a refused
    call fails the run, as any failed call does."""

    def __post_init__(self) -> None:
        # every field checked in declaration order; lists of names become tuples
        for name, adapter in _field_adapters().items():
            value = getattr(self, name)
            try:
                checked = adapter.validate_python(value)
            except ValidationError as exc:
                raise refused(name, exc.errors()[0]["msg"], value) from None
            if checked is not value:
                object.__setattr__(self, name, checked)

    def validated(self) -> AgentConfig:
        """This config, checked again (a copy made through the constructor); raises
        :class:`ConfigurationError` naming the first bad field. A config built with
        ``AgentConfig(...)`` always passes; one that was not (unpickled, or changed with
        ``object.__setattr__``) may not, and a run refuses it before any model call."""
        return dataclasses.replace(self)

    def validate(self) -> None:
        """Raise :class:`ConfigurationError` naming the first bad field."""
        self.validated()

    def changed(self) -> dict[str, Any]:
        """The fields that differ from ``AgentConfig()``, by name."""
        default = AgentConfig()
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }


_STRICT: Final = ConfigDict(strict=True)


@cache
def _field_adapters() -> dict[str, TypeAdapter[Any]]:
    """One strict validator per field of :class:`AgentConfig`, from its annotation."""
    hints = typing.get_type_hints(AgentConfig, include_extras=True)
    return {
        f.name: TypeAdapter(hints[f.name], config=_STRICT) for f in dataclasses.fields(AgentConfig)
    }
