"""Every attribute, span and event name the export writes (and spans in read back), in one place.

The ``gen_ai.*`` and ``error.type`` names are those of the OpenTelemetry GenAI semantic
conventions (status *Development*) as released with semantic conventions v1.41.0, the last
release before they moved to their own repository (``semantic-conventions-genai``). The
``opentelemetry-semantic-conventions`` package carries them in a private, incubating module
that now marks every one as "moved", so the names are pinned here and a test checks each
against that package: a typo fails the test, and so does a rename the package picks up.

The loop's own facts (round, cost, pruning, gates, outcome) have no conventional name; they
live under :data:`PREFIX`.
"""

from __future__ import annotations

from typing import Final

SEMCONV_VERSION: Final = "1.41.0"
"""The semantic-conventions release whose GenAI names and span shapes the export follows."""

SCHEMA_URL: Final = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
"""The schema URL every tracer of the export declares."""

TRACER_NAME: Final = "toolloop_lab"
"""The instrumentation scope name of every span."""

PREFIX: Final = "toolloop"
"""Namespace of the loop's own attributes and span events."""


class MCP:
    """The MCP conventions' names (``mcp.*``, ``network.transport``) on the span of a call
    of an MCP server's tool, beside its ``gen_ai.tool.name``."""

    METHOD_NAME: Final = "mcp.method.name"
    SESSION_ID: Final = "mcp.session.id"
    NETWORK_TRANSPORT: Final = "network.transport"

    METHOD_TOOLS_CALL: Final = "tools/call"
    TRANSPORT_PIPE: Final = "pipe"
    """``network.transport`` of a server reached over its stdin and stdout."""
    TRANSPORT_TCP: Final = "tcp"
    """``network.transport`` of a server reached over streamable HTTP."""


class GEN_AI:
    """``gen_ai.*`` and ``error.type`` attribute names, and the operation names."""

    OPERATION_NAME: Final = "gen_ai.operation.name"
    PROVIDER_NAME: Final = "gen_ai.provider.name"
    AGENT_NAME: Final = "gen_ai.agent.name"
    CONVERSATION_ID: Final = "gen_ai.conversation.id"
    REQUEST_MODEL: Final = "gen_ai.request.model"
    REQUEST_STREAM: Final = "gen_ai.request.stream"
    RESPONSE_MODEL: Final = "gen_ai.response.model"
    RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
    RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"
    USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
    USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
    USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
    USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
    INPUT_MESSAGES: Final = "gen_ai.input.messages"
    OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
    TOOL_DEFINITIONS: Final = "gen_ai.tool.definitions"
    TOOL_NAME: Final = "gen_ai.tool.name"
    TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
    TOOL_TYPE: Final = "gen_ai.tool.type"
    TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
    TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
    ERROR_TYPE: Final = "error.type"

    OP_INVOKE_AGENT: Final = "invoke_agent"
    OP_CHAT: Final = "chat"
    OP_EXECUTE_TOOL: Final = "execute_tool"


class TOOLLOOP:
    """The loop's own attribute and span-event names, all under ``toolloop.``."""

    RUN_ID: Final = f"{PREFIX}.run_id"
    PARENT_RUN_ID: Final = f"{PREFIX}.parent_run_id"
    TAGS: Final = f"{PREFIX}.tags"
    """The run's tags (``run(..., tags=)``), a string array."""
    METADATA: Final = f"{PREFIX}.metadata"
    """The prefix of the run's metadata (``run(..., metadata=)``): one attribute per key,
    ``toolloop.metadata.<key>``, a scalar as it is and anything else as JSON text."""
    SOURCE: Final = f"{PREFIX}.source"
    TOOLS: Final = f"{PREFIX}.tools"
    PRUNE_TOOLS: Final = f"{PREFIX}.prune_tools"
    MAX_ROUNDS: Final = f"{PREFIX}.max_rounds"
    TOKEN_BUDGET: Final = f"{PREFIX}.token_budget"
    CONTEXT_WINDOW: Final = f"{PREFIX}.context_window"
    USD_LIMIT: Final = f"{PREFIX}.usd_limit"
    INPUT_MESSAGES: Final = f"{PREFIX}.input_messages"

    ROUND: Final = f"{PREFIX}.round"
    ROUNDS: Final = f"{PREFIX}.rounds"
    CALL_NUMBER: Final = f"{PREFIX}.call.number"
    CALL_PURPOSE: Final = f"{PREFIX}.call.purpose"
    COST_USD: Final = f"{PREFIX}.cost_usd"
    COST_KNOWN: Final = f"{PREFIX}.cost_known"
    USAGE_ESTIMATED: Final = f"{PREFIX}.usage.estimated"
    USAGE_INPUT_TOKENS: Final = f"{PREFIX}.usage.input_tokens"
    USAGE_OUTPUT_TOKENS: Final = f"{PREFIX}.usage.output_tokens"
    USAGE_CACHE_READ_INPUT_TOKENS: Final = f"{PREFIX}.usage.cache_read.input_tokens"
    USAGE_CACHE_CREATION_INPUT_TOKENS: Final = f"{PREFIX}.usage.cache_creation.input_tokens"
    USAGE_REQUESTS: Final = f"{PREFIX}.usage.requests"
    REPLY_STUCK: Final = f"{PREFIX}.reply.stuck"
    REPLY_EMPTY: Final = f"{PREFIX}.reply.empty"
    REPLY_TRUNCATED: Final = f"{PREFIX}.reply.truncated"
    REPLY_TOOL_CALLS: Final = f"{PREFIX}.reply.tool_calls"

    TOOL_RAN: Final = f"{PREFIX}.tool.ran"
    TOOL_STATUS: Final = f"{PREFIX}.tool.status"
    TOOL_ERROR_REASON: Final = f"{PREFIX}.tool.error_reason"
    TOOL_OUTPUT_CHARS: Final = f"{PREFIX}.tool.output_chars"

    PRUNING_TOOL_CALL_ID: Final = f"{PREFIX}.pruning.tool_call_id"
    PRUNING_TOOL_NAME: Final = f"{PREFIX}.pruning.tool_name"
    PRUNING_TOKENS_BEFORE: Final = f"{PREFIX}.pruning.tokens_before"
    PRUNING_TOKENS_AFTER: Final = f"{PREFIX}.pruning.tokens_after"
    PRUNING_TOKENS_SAVED: Final = f"{PREFIX}.pruning.tokens_saved"
    PRUNING_NET_SAVED: Final = f"{PREFIX}.pruning.net_saved"
    PRUNING_CALLS: Final = f"{PREFIX}.pruning.calls"

    GATE_TOKEN_LIMIT: Final = f"{PREFIX}.gate.token.limit"
    GATE_TOKEN_SPENT: Final = f"{PREFIX}.gate.token.spent"
    GATE_TOKEN_PASSED: Final = f"{PREFIX}.gate.token.passed"
    GATE_USD_LIMIT: Final = f"{PREFIX}.gate.usd.limit"
    GATE_USD_SPENT: Final = f"{PREFIX}.gate.usd.spent"
    GATE_USD_PASSED: Final = f"{PREFIX}.gate.usd.passed"
    GATE: Final = f"{PREFIX}.gate"
    GATE_STAGE: Final = f"{PREFIX}.gate.stage"
    GATE_LIMIT: Final = f"{PREFIX}.gate.limit"
    GATE_SPENT: Final = f"{PREFIX}.gate.spent"
    GATE_PASSED: Final = f"{PREFIX}.gate.passed"

    SYNTHESIS_REASON: Final = f"{PREFIX}.synthesis.reason"
    OUTCOME: Final = f"{PREFIX}.outcome"
    BUDGET_EXHAUSTED: Final = f"{PREFIX}.budget_exhausted"
    FINAL_EMPTY: Final = f"{PREFIX}.final.empty"
    FINAL_TRUNCATED: Final = f"{PREFIX}.final.truncated"
    INTERVENTIONS: Final = f"{PREFIX}.interventions"
    INTERVENTION_ACTION: Final = f"{PREFIX}.intervention.action"
    INTERVENTION_STAGE: Final = f"{PREFIX}.intervention.stage"
    INTERVENTION_TOOL_CALL_ID: Final = f"{PREFIX}.intervention.tool_call_id"
    INTERVENTION_BEFORE: Final = f"{PREFIX}.intervention.before"
    INTERVENTION_AFTER: Final = f"{PREFIX}.intervention.after"
    PAUSED_S: Final = f"{PREFIX}.paused_s"
    PAUSE_STAGE: Final = f"{PREFIX}.pause.stage"
    PAUSE_PURPOSE: Final = f"{PREFIX}.pause.purpose"
    PAUSE_SECONDS: Final = f"{PREFIX}.pause.seconds"
    ERROR_KIND: Final = f"{PREFIX}.error.kind"
    ERROR_REASON: Final = f"{PREFIX}.error.reason"
    ERROR_CAUSE_TYPE: Final = f"{PREFIX}.error.cause_type"
    ANY_INVOCATION_MADE: Final = f"{PREFIX}.any_invocation_made"
    INCOMPLETE: Final = f"{PREFIX}.incomplete"
    INTERRUPTED: Final = f"{PREFIX}.interrupted"
    """On a tool span: a LangGraph ``interrupt()`` paused it (its run's outcome is
    ``interrupted``); it ends waiting for input, not in error."""

    MCP_SERVER: Final = f"{PREFIX}.mcp.server"
    """On a tool span: the name of the MCP server its tool came from."""
    MCP_LOG_LINES: Final = f"{PREFIX}.mcp.log.lines"
    MCP_LOG_FIRST_LINE: Final = f"{PREFIX}.mcp.log.first_line"
    MCP_LOG_DROPPED: Final = f"{PREFIX}.mcp.log.dropped"

    EVENT_ROUND: Final = f"{PREFIX}.round_start"
    EVENT_SERVER_LOG: Final = f"{PREFIX}.mcp.server_log"
    """What an MCP server logged: on its call's span (while it ran), else on the run's."""
    EVENT_GATE: Final = f"{PREFIX}.budget_gate"
    EVENT_SYNTHESIS: Final = f"{PREFIX}.synthesis"
    EVENT_INTERVENTION: Final = f"{PREFIX}.intervention"
    EVENT_PAUSE: Final = f"{PREFIX}.pause"
