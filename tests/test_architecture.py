"""``docs/architecture.md`` says where everything lives; these tests keep it true.

Every private package and module it names exists where it says, every module and package
directly under ``toolloop_lab/`` has its line in the folder table, and the layer picture
names the layers ``pyproject.toml``'s import-linter contract checks (``lint-imports``),
in the same order.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "toolloop_lab"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")

_PRIVATE_PACKAGE = re.compile(r"(?<![\w./-])(_[a-z][a-z0-9_]*)/")
_MODULE = re.compile(r"(?<![\w./-])((?:_?[a-z][a-z0-9_]*/)*_?[a-z][a-z0-9_]*\.py)\b")


def _exists(named: str) -> bool:
    """``named`` (``_engine/hooks.py``, ``_otel_names.py``, ``_foreign``) is in the package:
    a path from its root, or a name found in some folder of it (the folder table names a
    folder's modules bare, in that folder's row)."""
    if (PACKAGE / named).exists():
        return True
    return any(p.as_posix().endswith(f"/{named}") for p in PACKAGE.rglob("*"))


def _children() -> set[str]:
    """Every module and package directly under ``toolloop_lab/`` (not its ``__init__``)."""
    found = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    return found | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}


def _table() -> list[str]:
    """The first column of the folder table, as written (``_engine/``, ``events.py``)."""
    section = DOC.split("## One line per folder", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, re.M)


def _picture() -> str:
    return DOC.split("## The layers", 1)[1].split("```", 2)[1]


def test_every_private_package_and_module_named_exists() -> None:
    packages = set(_PRIVATE_PACKAGE.findall(DOC))
    modules = {m for m in _MODULE.findall(DOC) if re.search(r"(^|/)_[a-z]", m)}
    assert {"_foreign", "_engine", "_widget"} <= packages  # the patterns find what is there
    assert {"_otel_names.py", "_runview.py", "_foreign/spans.py"} <= modules
    missing = sorted(name for name in packages | modules if not _exists(name))
    assert missing == [], f"docs/architecture.md names what is not in the package: {missing}"


def test_the_folder_table_has_a_line_for_everything_under_the_package() -> None:
    written = {name.removesuffix("/").removesuffix(".py") for name in _table()}
    assert _children() - written == set()
    assert written - _children() - {"words.json", "__init__"} == set()


def test_the_layer_picture_names_the_checked_layers_in_their_order() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers"]
    checked = [name for layer in layers for name in re.split(r"\s*[|:]\s*", layer)]
    assert set(checked) == _children()  # the contract places everything (exhaustive)
    picture = _picture()
    drawn = [m.group(1) for m in re.finditer(r"(?<![\w./-])(\w+)(?:/|\.py)", picture)]
    assert [name for name in drawn if name in set(checked)] == checked
