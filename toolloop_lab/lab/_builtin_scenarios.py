"""``catalog()``: the built-in scenarios, one per behaviour of the spec.

They mirror ``features/tool_loop.feature`` on scripted models priced as a real model
(gpt-4o-mini by genai-prices): call ``n`` of a script uses ``10 + 2n`` input and ``5 + n``
output tokens, like the spec's steps, so every total is known in advance. The USD limits
are derived from those same prices when the catalog is built, so the budget scenarios trip
exactly where the spec says, whatever the price table holds.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._spend.pricing import cost_of
from toolloop_lab._spend.usage import Usage
from toolloop_lab.errors import ConfigurationError
from toolloop_lab.lab._scenario import DEFAULT_MODEL_NAME, Reply, Scenario

CATALOG_PROMPT: Final = "Use the tool, then answer."

PRUNING_REPLY: Final = Reply.final(
    "Q3: revenue +12% q/q; churn 2.1%; incidents #41 (38 min) and #44 (2 h), both fixed.",
    input_tokens=900,
    output_tokens=40,
)
"""The scripted pruning model's one reply: it costs tokens and shortens the file a lot."""


def scripted_call(n: int, tool: str = "echo", *, text: str = "") -> Reply:
    """Call ``n`` of a script: one tool call with the spec's usage."""
    args = {"path": "report.txt"} if tool == "file_read" else {"text": f"ping {n}"}
    return Reply.call(tool, args, text=text, input_tokens=10 + 2 * n, output_tokens=5 + n)


def repeated_call(n: int) -> Reply:
    """Call ``n`` of a stuck script: the very same tool call every time (no progress)."""
    return Reply.call("echo", {"text": "ping"}, input_tokens=10 + 2 * n, output_tokens=5 + n)


def scripted_final(n: int, text: str) -> Reply:
    """Call ``n`` of a script: a final answer with the spec's usage."""
    return Reply.final(text, input_tokens=10 + 2 * n, output_tokens=5 + n)


def _cost(reply: Reply, model_name: str) -> Decimal:
    assert reply.input_tokens is not None
    assert reply.output_tokens is not None
    cost = cost_of(Usage(reply.input_tokens, reply.output_tokens), model_name)
    if cost is None or cost <= 0:
        raise ConfigurationError(
            f"{model_name!r} has no known price; the USD-budget scenarios need one",
            field="model_name",
        )
    return cost


def _refused_at_run(**fields: Any) -> AgentConfig:
    """A config with ``fields`` set past the checks ``AgentConfig(...)`` makes (as a patched
    or unpickled config can be): ``bad_config`` shows the check every run makes again,
    which refuses it before any model call."""
    config = AgentConfig()
    for name, value in fields.items():
        object.__setattr__(config, name, value)
    return config


def catalog(*, model_name: str = DEFAULT_MODEL_NAME) -> tuple[Scenario, ...]:
    """Every spec behaviour as a scenario: happy paths, synthesis, budgets, pruning, failures."""
    pruning_cfg = AgentConfig(prune_tools=("file_read",), prune_min_chars=1_000)
    usd_script = (scripted_call(1), scripted_final(2, "cost triggered"))
    skipped_script = (scripted_call(1, "file_read"), scripted_final(2, "Final text"))

    def scripted(name: str, replies: tuple[Reply, ...], **fields: Any) -> Scenario:
        return Scenario.scripted(
            name, replies, model_name=model_name, prompt=CATALOG_PROMPT, **fields
        )

    return (
        scripted(
            "single_round",
            (scripted_call(1), scripted_final(2, "Final answer from loop")),
            tags=("basic",),
            description="One echo round, then a final answer.",
        ),
        scripted(
            "multi_round",
            (scripted_call(1), scripted_call(2), scripted_final(3, "Final answer two rounds")),
            tags=("basic",),
            description="Two echo rounds; tokens accumulate over every call.",
        ),
        scripted(
            "round_cap",
            (
                scripted_call(1, text="Let me call the tool again."),
                scripted_final(2, "Best answer within the round cap"),
            ),
            config=AgentConfig(tool_max_rounds=1),
            tags=("synthesis",),
            description="tool_max_rounds=1 is used up; one synthesis call without tools.",
        ),
        scripted(
            "token_budget",
            (
                Reply.call("echo", {"text": "ping 1"}, input_tokens=5_000, output_tokens=200),
                scripted_final(2, "Budget exhausted answer"),
            ),
            config=AgentConfig(token_budget_percent=1.0, context_window=10_000),
            tags=("budget", "synthesis"),
            description="A 100-token budget (1% of 10,000) trips in round 1; synthesis.",
        ),
        scripted(
            "stuck_model",
            (
                repeated_call(1),
                repeated_call(2),
                repeated_call(3),
                scripted_final(4, "Synthesis answer"),
            ),
            config=AgentConfig(tool_max_rounds=5, max_stuck_rounds=2),
            tags=("synthesis",),
            description="The same tool call three times in a row (two repeats): synthesis, "
            "reason stuck, before the round cap.",
        ),
        scripted(
            "pruning",
            (scripted_call(1, "file_read"), scripted_final(2, "Pruned answer")),
            tools=("file_read",),
            config=pruning_cfg,
            pruning_replies=(PRUNING_REPLY,),
            tags=("pruning",),
            description="A 5 kB file_read output is shortened by the pruning model.",
        ),
        scripted(
            "unknown_tool",
            (scripted_call(1, "does_not_exist"), scripted_final(2, "After error answer")),
            tags=("tools", "failure"),
            description="A call to a tool the agent lacks comes back as an error ToolMessage.",
        ),
        scripted(
            "model_exception",
            (scripted_call(1), Reply.failure("provider exploded")),
            tags=("failure",),
            description="The provider raises in round 2; partial counts are kept.",
        ),
        scripted(
            "bad_config",
            (scripted_final(1, "never requested"),),
            config=_refused_at_run(tool_max_rounds=0),
            tags=("failure", "config"),
            description="tool_max_rounds=0 is refused before any model call.",
        ),
        scripted(
            "usd_budget",
            usd_script,
            config=AgentConfig(tool_max_rounds=5),
            usd_limit=_cost(usd_script[0], model_name) + _cost(usd_script[1], model_name) / 2,
            tags=("budget", "cost"),
            description="The USD limit fits call 1; call 2 pushes spend over it.",
        ),
        scripted(
            "pruning_skipped_after_budget",
            skipped_script,
            tools=("file_read",),
            config=pruning_cfg,
            pruning_replies=(PRUNING_REPLY,),
            usd_limit=_cost(skipped_script[0], model_name) / 2,
            tags=("budget", "cost", "pruning"),
            description="Round 1 alone exceeds the USD limit, so pruning never runs.",
        ),
    )
