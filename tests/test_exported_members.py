"""The public surface, held in one place (httpx's ``tests/test_exported_members.py`` habit).

A newcomer imports from the package root and six documented public modules, and from
nothing else. :data:`PUBLIC` lists every public module and the exact, sorted ``__all__`` of
each: the list *is* the review, so a change to the public surface changes this file. The
tests below keep the edges: each public name has one public home and a docstring, ``__all__``
lives on public modules only, and every other module is private (its name, or a package
above it, starts with an underscore).
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import toolloop_lab
from toolloop_lab import errors

PACKAGE = Path(toolloop_lab.__file__).resolve().parent

PUBLIC: dict[str, list[str]] = {
    "toolloop_lab": [
        "AgentConfig",
        "EventBridge",
        "Fork",
        "ForkResult",
        "LLMAgent",
        "LoopDebugger",
        "PausePoint",
        "Recording",
        "RecordingChatModel",
        "ReplayChatModel",
        "RunComparison",
        "RunSummary",
        "RunView",
        "ScriptedChatModel",
        "TokenPrice",
        "ToolLoopMiddleware",
        "ToolLoopResult",
        "TraceRead",
        "TraceWriter",
        "Usage",
        "WhatIfResult",
        "afork",
        "awhat_if",
        "compare",
        "echo_tool",
        "file_read_tool",
        "fork",
        "prepare_fork",
        "read_trace",
        "to_markdown",
        "tools_from_schema",
        "usd_budget",
        "watch",
        "what_if",
    ],
    "toolloop_lab.checks": [
        "CallSeen",
        "Check",
        "CheckReport",
        "CheckResult",
        "CheckedRun",
        "Matcher",
        "answer_contains",
        "answer_matches",
        "called",
        "called_in_order",
        "contains",
        "evaluate",
        "llm_judge",
        "matches",
        "max_cost_usd",
        "max_model_calls",
        "max_tokens",
        "max_tool_rounds",
        "no_tool_errors",
        "not_called",
        "outcome",
        "satisfies",
        "save_test",
        "verify",
    ],
    "toolloop_lab.errors": [
        "ChecksFailed",
        "ConfigurationError",
        "ConversationError",
        "DivergedField",
        "ExecutionError",
        "FormatProblem",
        "InterventionError",
        "McpServerError",
        "NoPauseError",
        "PaidCallError",
        "PartialRun",
        "PauseTimeoutError",
        "RecordedCallError",
        "RecordingError",
        "RecordingFormatError",
        "RecordingWriteError",
        "ReplayDivergedError",
        "ReplayExhaustedError",
        "RunStopped",
        "ScriptError",
        "TimeLimitError",
        "ToolLoopError",
        "ToolLoopLabError",
        "TraceError",
        "UnknownRunError",
    ],
    "toolloop_lab.events": [
        "BudgetGate",
        "CallPurpose",
        "EVENT_TYPES",
        "Event",
        "FAILED_OUTCOMES",
        "Intervention",
        "InterventionAction",
        "LoopFailed",
        "LoopFinished",
        "LoopStarted",
        "McpTransport",
        "ModelCallFailed",
        "ModelCallStarted",
        "ModelCalled",
        "ModelDelta",
        "OUTCOMES",
        "Observer",
        "Outcome",
        "PauseStage",
        "Paused",
        "Pruned",
        "RoundStarted",
        "ServerLogged",
        "SynthesisReason",
        "SynthesisStarted",
        "ToolCallDelta",
        "ToolCallView",
        "ToolDispatched",
        "ToolStarted",
        "ToolStatus",
        "by_run",
        "event_from_dict",
        "parse_event",
        "run_ids",
        "select_run",
        "tool_rounds_of",
        "top_level_run_ids",
        "transcript",
    ],
    "toolloop_lab.lab": [
        "LabResults",
        "Reply",
        "Scenario",
        "ScenarioRun",
        "ScriptedModel",
        "ScriptedTurns",
        "SweepComparison",
        "ToolCallSpec",
        "Turn",
        "VOLATILE_COLUMNS",
        "Variant",
        "arun_scenarios",
        "catalog",
        "compare_sweeps",
        "drop_volatile",
        "run_scenarios",
        "run_scenarios_on_dask",
        "sample_data_dir",
    ],
    "toolloop_lab.mcp": [
        "McpServer",
        "mcp_tools",
    ],
    "toolloop_lab.otel": [
        "ExportOptions",
        "ExportedTrace",
        "OTelObserver",
        "SEMCONV_VERSION",
        "SpanSource",
        "export_events",
        "export_trace",
        "otlp_tracer_provider",
        "watch_spans",
    ],
    "toolloop_lab.workloads": [
        "FILES_CONFIGS",
        "FILE_FUNCTIONS",
        "FileSystem",
        "FileSystemError",
        "TICKET_FUNCTIONS",
        "TicketError",
        "TicketTracker",
        "Workbench",
        "files_scenarios",
        "files_sweep",
    ],
}
"""Every public module, and every name it exports (sorted), in one place."""

PUBLIC_NAMES = [(module, name) for module, names in PUBLIC.items() for name in names]

MEMBERS: dict[str, list[str]] = {
    # sharing a run, and a run list for thousands of runs: no new public name, these members
    "LoopDebugger": ["export_html", "max_run_bytes", "runs_left_out"],
    "RunView": ["question", "tool_errors"],
    "RunSummary": ["question", "tool_errors"],
}
"""Members of public classes that a how-to page teaches (a method or property with its
docstring, a dataclass field, or a constructor argument), held here as the names are."""


def _dotted(path: Path) -> str:
    """The module name of a file under the package (a package for its ``__init__.py``)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_dotted(path): path for path in sorted(PACKAGE.rglob("*.py"))}
"""Every module and package of the package, by name."""


def _private(module: str) -> bool:
    return any(part.startswith("_") for part in module.split(".")[1:])


@pytest.mark.parametrize("module", PUBLIC)
def test_each_public_module_exports_exactly_its_listed_names(module: str) -> None:
    assert PUBLIC[module] == sorted(PUBLIC[module])
    assert sorted(importlib.import_module(module).__all__) == PUBLIC[module]


@pytest.mark.parametrize(("module", "name"), PUBLIC_NAMES)
def test_every_public_name_is_there_and_is_documented(module: str, name: str) -> None:
    value = getattr(importlib.import_module(module), name)
    assert value is not None
    assert _docstring(module, name, value), f"{module}.{name} has no docstring"


def test_no_name_is_exported_from_two_public_modules() -> None:
    counts = Counter(name for _, name in PUBLIC_NAMES)
    assert [name for name, n in counts.items() if n > 1] == []


def test_every_module_without_an_underscore_is_a_public_one() -> None:
    """Anything not public is private by its name (or its package's): nobody finds a
    module to import that is not one of :data:`PUBLIC`."""
    assert {m for m in MODULES if not _private(m)} == set(PUBLIC)


@pytest.mark.parametrize("module", [m for m in MODULES if _private(m)])
def test_no_private_module_has_an_all(module: str) -> None:
    assert "__all__" not in _assigned(ast.parse(MODULES[module].read_text(encoding="utf-8")))


def test_names_the_root_loads_on_first_use_are_defined_in_private_modules() -> None:
    lazy = toolloop_lab._LAZY
    assert set(lazy) <= set(toolloop_lab.__all__)
    for name, module in lazy.items():
        assert _private(module), module
        assert getattr(importlib.import_module(module), name) is getattr(toolloop_lab, name)
    assert set(PUBLIC["toolloop_lab"]) <= set(dir(toolloop_lab))


def test_unknown_attributes_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NotAThing'"):
        _ = toolloop_lab.NotAThing


def test_exceptions_are_not_at_the_root() -> None:
    """One public home each: ``toolloop_lab.errors``."""
    for name in errors.__all__:
        assert not hasattr(toolloop_lab, name), name


# -- the exception tree -----------------------------------------------------------------


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_exception_lives_in_errors_and_is_public_there() -> None:
    ours = {
        c for c in _subclasses(errors.ToolLoopLabError) if c.__module__.startswith(PACKAGE.name)
    }
    assert {c.__qualname__ for c in ours if c.__module__ != errors.__name__} == set()
    assert {c.__name__ for c in ours} <= set(errors.__all__)


def test_the_spec_alias_for_the_tool_loop_error() -> None:
    assert errors._ToolLoopError is errors.ToolLoopError


def test_the_exception_tree_is_drawn_once() -> None:
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *root.joinpath("docs").rglob("*.md"), root / "README.md"]
    drawn = {
        str(path.relative_to(root))
        for path in files
        if any(
            ("├──" in line or "└──" in line) and "Error" in line
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    }
    assert drawn == {"toolloop_lab/errors.py"}


# -- helpers ------------------------------------------------------------------------------


def _assigned(tree: ast.Module) -> set[str]:
    """The names a module assigns at its top level."""
    names: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _docstring(module: str, name: str, value: Any) -> str:
    """A class's or a function's own docstring (not a dataclass's made-up signature);
    for a constant or a type alias, the string under its assignment where it is defined."""
    if inspect.isclass(value) or inspect.isroutine(value):
        doc = inspect.getdoc(value) or ""
        return "" if doc.startswith(f"{name}(") else doc
    return _attribute_doc(module, name)


def _attribute_doc(module: str, name: str, depth: int = 0) -> str:
    """The docstring of ``name`` in ``module``, following the imports that bring it there."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node, after in zip(tree.body, [*tree.body[1:], None], strict=True):
        if name in _assigned(ast.Module(body=[node], type_ignores=[])):
            docs = isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
            return str(after.value.value) if docs else ""  # type: ignore[union-attr]
        imported = isinstance(node, ast.ImportFrom) and node.module and depth < 5
        if imported and any((a.asname or a.name) == name for a in node.names):  # type: ignore[attr-defined]
            return _attribute_doc(node.module, name, depth + 1)  # type: ignore[attr-defined]
    return ""


@pytest.mark.parametrize(
    ("cls", "member"), [(c, m) for c, members in MEMBERS.items() for m in members]
)
def test_each_taught_member_is_there(cls: str, member: str) -> None:
    import dataclasses

    owner = getattr(toolloop_lab, cls)
    if dataclasses.is_dataclass(owner) and member in {f.name for f in dataclasses.fields(owner)}:
        return
    if member in inspect.signature(owner).parameters:
        return
    found = getattr(owner, member)  # a property's getattr on the class is the property
    doc = inspect.getdoc(found.fget if isinstance(found, property) else found)
    assert doc, f"{cls}.{member} has no docstring"
