"""An mkdocs hook: the reference tables that must never drift from the code, made at build time.

A page says ``<!-- generated: events -->`` where the table of every event kind and field goes,
and ``<!-- generated: words GROUP -->`` where the words a view shows for one group of
``toolloop_lab/words.json`` go. The events come from ``EVENT_TYPES`` and the source of
``toolloop_lab/events.py`` (each field's type as written, and the docstring under it); the
words from the words file itself. So a field added to an event, or a word changed, is on the
site at the next build, and ``tests/test_docs.py`` checks the built pages hold every one.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "toolloop_lab"
MARKER = re.compile(r"^<!-- generated: (events|words) ?([a-z_]*) -->$", re.MULTILINE)

# how the field types of events.py read to a person (the aliases live in _support/fields.py)
ALIASES = {
    "Text": "str",
    "Count": "int ≥ 0",
    "PositiveInt": "int > 0",
    "Seconds": "float seconds ≥ 0",
    "Flag": "bool",
    "FiniteDecimal": "Decimal",
    "JsonObject": "JSON object",
    "JsonValue": "JSON value",
}
# the three fields every event has, whose declarations carry no docstring of their own
BASE_DOCS = {
    "run_id": "The run this event belongs to.",
    "round": "The round it belongs to; 0 before the first round.",
}
VALUES = {
    "ToolCallView": ("events.py", "a tool call as the model asked for it"),
    "ToolCallDelta": ("events.py", "a fragment of a streamed tool call"),
    "Usage": ("_spend/usage.py", "tokens and cost of one or more model calls"),
}


@dataclasses.dataclass(frozen=True)
class Field:
    name: str
    type: str
    doc: str


def _type(annotation: ast.expr) -> str:
    text = ast.unparse(annotation)
    return re.sub(r"\b[A-Za-z]+\b", lambda m: ALIASES.get(m.group(0), m.group(0)), text)


def _one_line(doc: str) -> str:
    return " ".join(_sphinx_as_markdown(doc).split()).replace("|", "\\|")


@cache
def _roles() -> Any:
    """griffe_roles.py beside this file (a hook's folder is not always importable)."""
    spec = importlib.util.spec_from_file_location(
        "griffe_roles", Path(__file__).with_name("griffe_roles.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sphinx_as_markdown(doc: str) -> str:
    """A docstring's Sphinx roles as inline code, as the API pages show them."""
    text: str = _roles().markdown(doc)
    return text


@cache
def _classes(source: str) -> dict[str, tuple[str, list[Field]]]:
    """Each class of a module: its docstring and its annotated fields, in source order."""
    tree = ast.parse((PACKAGE / source).read_text(encoding="utf-8"))
    found: dict[str, tuple[str, list[Field]]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: list[Field] = []
        body = node.body
        for i, item in enumerate(body):
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                after = body[i + 1] if i + 1 < len(body) else None
                doc = ""
                if (
                    isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)
                ):
                    doc = after.value.value
                name = item.target.id
                doc = doc or (BASE_DOCS.get(name, "") if node.name == "_Base" else "")
                fields.append(Field(name, _type(item.annotation), _one_line(doc)))
        found[node.name] = (_one_line(ast.get_docstring(node) or ""), fields)
    return found


def event_fields() -> dict[str, tuple[str, str, list[Field]]]:
    """Every event kind: its class, what it means, and every field but ``kind``."""
    from toolloop_lab.events import EVENT_TYPES

    classes = _classes("events.py")
    base = classes["_Base"][1]
    table = {}
    for kind, cls in EVENT_TYPES.items():
        doc, own = classes[cls.__name__]
        fields = {f.name: f for f in [*base, *own]}
        names = [f.name for f in dataclasses.fields(cls) if f.name != "kind"]
        table[kind] = (cls.__name__, doc, [fields[name] for name in names])
    return table


def _field_rows(fields: list[Field]) -> list[str]:
    rows = ["| field | type | what it holds |", "| --- | --- | --- |"]
    rows += [f"| `{f.name}` | `{f.type}` | {f.doc} |" for f in fields]
    return rows


def events_markdown() -> str:
    table = event_fields()
    lines = ["| kind | class | when |", "| --- | --- | --- |"]
    lines += [
        f"| [`{kind}`](#{kind}) | `{cls}` | {doc.split('. ')[0].rstrip('.')} |"
        for kind, (cls, doc, _) in table.items()
    ]
    lines.append("")
    lines.append(
        "Every event also has `run_id` (the run it belongs to), `round` (0 before the first "
        "round) and `t` (seconds since the run started), listed with each kind below."
    )
    for kind, (cls, doc, fields) in table.items():
        lines += ["", f"### `{kind}` {{#{kind}}}", "", f"`{cls}`: {doc}", ""]
        lines += _field_rows(fields)
    lines += ["", "## Values inside events"]
    for name, (source, what) in VALUES.items():
        _, fields = _classes(source)[name]
        lines += ["", f"### `{name}`", "", f"{what[0].upper()}{what[1:]}.", ""]
        lines += _field_rows(fields)
    return "\n".join(lines)


@cache
def words() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PACKAGE / "words.json").read_text(encoding="utf-8"))
    return data


def words_markdown(group: str) -> str:
    entries = words()[group]
    lines = ["| code | what every view says |", "| --- | --- |"]
    # a placeholder ("after {calls}") as an entity, or attr_list would read it as attributes
    lines += [
        f"| `{code}` | {_one_line(text).replace('{', '&#123;')} |" for code, text in entries.items()
    ]
    return "\n".join(lines)


def generated(markdown: str) -> str:
    """The page with each marker replaced by what it stands for."""

    def table(match: re.Match[str]) -> str:
        what, group = match.groups()
        return events_markdown() if what == "events" else words_markdown(group)

    return MARKER.sub(table, markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return generated(markdown)
