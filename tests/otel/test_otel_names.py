"""The export's ``gen_ai.*`` names are the conventions' names, letter for letter.

``opentelemetry-semantic-conventions`` generates its constants from the conventions'
registry; every name :mod:`toolloop_lab._otel_names` pins must be one of them, and the
schema URL one the package knows. The loop's own names stay under ``toolloop.``.
"""

from __future__ import annotations

import warnings

import pytest

import toolloop_lab.otel
from toolloop_lab import _otel_names as names

with warnings.catch_warnings():  # the package marks the GenAI names "moved", not gone
    warnings.simplefilter("ignore", DeprecationWarning)
    from opentelemetry.semconv._incubating.attributes import error_attributes as error
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
    from opentelemetry.semconv._incubating.attributes import mcp_attributes as mcp
    from opentelemetry.semconv._incubating.attributes import network_attributes as network
    from opentelemetry.semconv.schemas import Schemas

CONVENTIONS = {
    value
    for module in (gen_ai, error)
    for key, value in vars(module).items()
    if key.isupper() and isinstance(value, str)
}
OPERATIONS = {member.value for member in gen_ai.GenAiOperationNameValues}


def _pinned(namespace: type) -> dict[str, str]:
    return {
        key: value
        for key, value in vars(namespace).items()
        if key.isupper() and isinstance(value, str)
    }


@pytest.mark.parametrize(("key", "name"), sorted(_pinned(names.GEN_AI).items()))
def test_every_gen_ai_name_is_in_the_conventions(key: str, name: str) -> None:
    if key.startswith("OP_"):
        assert name in OPERATIONS
    else:
        assert name in CONVENTIONS


MCP_CONVENTIONS = {
    value
    for module in (mcp, network)
    for key, value in vars(module).items()
    if key.isupper() and isinstance(value, str)
}


@pytest.mark.parametrize(("key", "name"), sorted(_pinned(names.MCP).items()))
def test_every_mcp_name_is_in_the_conventions(key: str, name: str) -> None:
    if key == "METHOD_TOOLS_CALL":  # a value of mcp.method.name, not a name
        assert name in {member.value for member in mcp.McpMethodNameValues}
    elif key.startswith("TRANSPORT_"):
        assert name in {member.value for member in network.NetworkTransportValues}
    else:
        assert name in MCP_CONVENTIONS


def test_the_schema_url_is_a_published_one() -> None:
    assert names.SCHEMA_URL in {schema.value for schema in Schemas}


def test_the_loops_own_names_are_prefixed_and_unique() -> None:
    own = list(_pinned(names.TOOLLOOP).values())
    assert all(name.startswith(names.PREFIX + ".") for name in own)
    assert len(set(own)) == len(own)
    assert not set(own) & CONVENTIONS


def test_the_module_exports_are_sorted_and_importable() -> None:
    """Constants first, then the rest, each alphabetical (ruff's order, as in ``events``)."""
    exported = toolloop_lab.otel.__all__
    assert exported == sorted(exported, key=lambda name: (not name.isupper(), name))
    assert all(getattr(toolloop_lab.otel, name) is not None for name in exported)
