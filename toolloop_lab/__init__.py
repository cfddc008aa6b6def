"""toolloop_lab: see, live in the notebook, what an LLM agent's tool loop does."""

from toolloop_lab.agent import AgentConfig, LLMAgent, ToolLoopResult
from toolloop_lab.budget import usd_budget
from toolloop_lab.errors import (
    ConfigurationError,
    ExecutionError,
    ScriptError,
    ToolLoopError,
    ToolLoopLabError,
)
from toolloop_lab.models import ScriptedChatModel
from toolloop_lab.pricing import TokenPrice
from toolloop_lab.usage import Usage

__all__ = [
    "AgentConfig",
    "ConfigurationError",
    "ExecutionError",
    "LLMAgent",
    "ScriptError",
    "ScriptedChatModel",
    "TokenPrice",
    "ToolLoopError",
    "ToolLoopLabError",
    "ToolLoopResult",
    "Usage",
    "usd_budget",
]
