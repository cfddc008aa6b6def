"""``toolloop_lab.__all__`` stays complete and sorted (the httpx habit).

Some names are loaded lazily from modules other parts of the project provide (widget, lab,
recording); only the eager names are imported here.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

import toolloop_lab
from toolloop_lab import errors

SPEC_NAMES = [
    "LLMAgent",
    "AgentConfig",
    "ToolLoopResult",
    "ScriptedChatModel",
    "usd_budget",
    "ExecutionError",
    "ConfigurationError",
    "ToolLoopError",
]
LAZY = set(toolloop_lab._LAZY)
EAGER = [name for name in toolloop_lab.__all__ if name not in LAZY]


def test_all_is_sorted_and_unique() -> None:
    assert toolloop_lab.__all__ == sorted(toolloop_lab.__all__)
    assert len(set(toolloop_lab.__all__)) == len(toolloop_lab.__all__)


def test_every_public_name_is_exported() -> None:
    public = {
        name
        for name, value in vars(toolloop_lab).items()
        if not name.startswith("_")
        and not isinstance(value, ModuleType)
        and getattr(value, "__module__", "").startswith("toolloop_lab")
    }
    assert public - LAZY <= set(toolloop_lab.__all__)
    assert set(toolloop_lab.__all__) >= LAZY


def test_lazy_names_point_at_project_modules() -> None:
    # LoopDebugger is no lazy name but a stand-in that loads the widget on first use
    # (tests/test_first_import.py)
    expected = {
        "Scenario",
        "run_scenarios",
        "arun_scenarios",
        "catalog",
        "LabResults",
        "RecordingChatModel",
        "ReplayChatModel",
    }
    assert expected <= LAZY  # other parts of the project may add lazy names
    assert all(module.startswith("toolloop_lab.") for module in toolloop_lab._LAZY.values())


@pytest.mark.parametrize("name", EAGER)
def test_eager_names_import(name: str) -> None:
    value = getattr(toolloop_lab, name)
    assert value is not None
    module = importlib.import_module(value.__module__)
    assert getattr(module, name) is value


def test_spec_names_are_exported() -> None:
    assert set(SPEC_NAMES) <= set(EAGER)


def test_spec_alias_for_the_tool_loop_error() -> None:
    assert errors._ToolLoopError is toolloop_lab.ToolLoopError


def test_unknown_attributes_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'NotAThing'"):
        _ = toolloop_lab.NotAThing


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


def test_every_exception_lives_in_errors_and_keeps_its_old_paths() -> None:
    from toolloop_lab._replay import recording_file as recording_format

    strays = {
        cls.__qualname__
        for cls in _subclasses(errors.ToolLoopLabError)
        if cls.__module__.startswith("toolloop_lab") and cls.__module__ != errors.__name__
    }
    assert strays == set()
    for name in ("RecordingError", "RecordingFormatError", "ReplayDivergedError"):
        assert getattr(recording_format, name) is getattr(errors, name)
        assert name in errors.__all__


def test_the_exception_tree_is_drawn_once() -> None:
    root = Path(__file__).resolve().parents[1]
    files = [*root.joinpath("toolloop_lab").rglob("*.py"), *root.joinpath("docs").rglob("*.md")]
    drawn = {
        str(path.relative_to(root))
        for path in [*files, root / "README.md"]
        if any(
            ("├──" in line or "└──" in line) and "Error" in line
            for line in path.read_text(encoding="utf-8").splitlines()
        )
    }
    assert drawn == {"toolloop_lab/errors.py"}


DATA_TABLES = {("lab/builtin_scenarios.py", "catalog"), ("workloads/files.py", "_turns")}
"""Functions that only spell out data (the built-in scenarios, a workload's turns)."""


def test_no_function_is_longer_than_fifty_lines() -> None:
    import ast

    root = Path(toolloop_lab.__file__).parent
    long = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 50 and (where, node.name) not in DATA_TABLES:
                    long.append(f"{where}::{node.name} ({lines} lines)")
    assert long == []


def test_the_layers_show_on_disk() -> None:
    """At most twelve modules at the package's top (the public face and the documented
    paths); everything else lives in a subpackage named for its layer."""
    package = Path(__file__).resolve().parents[1] / "toolloop_lab"
    top = sorted(p.name for p in package.glob("*.py"))
    assert len(top) <= 12, top
    for layer in ("engine", "tools", "models", "spend", "replay", "_support"):
        assert (package / layer / "__init__.py").is_file(), layer


def test_no_hand_written_front_end_module_is_over_400_lines() -> None:
    src = Path(__file__).resolve().parents[1] / "toolloop_lab" / "_widget" / "src"
    sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in src.glob("*.js")}
    assert len(sizes) > 1
    assert {name: n for name, n in sizes.items() if n >= 400} == {}
    assert all(p.read_text(encoding="utf-8").startswith("// @ts-check") for p in src.glob("*.js"))
