"""The documented path of :mod:`toolloop_lab.tools.schema` (kept so existing imports work)."""

from __future__ import annotations

from toolloop_lab.tools.schema import (
    MAX_ARG_DEPTH,
    ArgumentProblem,
    FunctionDoc,
    FunctionSpec,
    SchemaCheckError,
    argument_problem,
    depth_problem,
    function_spec,
    json_schema_problem,
    tools_from_schema,
)

__all__ = [
    "MAX_ARG_DEPTH",
    "ArgumentProblem",
    "FunctionDoc",
    "FunctionSpec",
    "SchemaCheckError",
    "argument_problem",
    "depth_problem",
    "function_spec",
    "json_schema_problem",
    "tools_from_schema",
]
