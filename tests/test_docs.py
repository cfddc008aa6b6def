"""The documentation site builds, strictly, and says what the code does.

``mkdocs build --strict`` runs once per session into a temporary folder (a broken link, a
missing page, a docstring mkdocstrings cannot read: any warning fails it). It needs the
``docs`` extra; outside CI a machine without it skips, under ``CI=true`` it fails instead,
as the Quickstart's test command installs it. The pages made from the code (every event
kind and field, every code of ``words.json``) are checked on the built site, and the
claims the docs make under a condition are checked against that condition.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from loopkit import MockComm

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PUBLIC_MODULES = (
    "toolloop_lab",
    "toolloop_lab.events",
    "toolloop_lab.errors",
    "toolloop_lab.lab",
    "toolloop_lab.otel",
    "toolloop_lab.workloads",
)
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
HISTORY = re.compile(
    r"issue #?\d+|round before|this round|\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b",
    re.IGNORECASE,
)
"""What a page that tells a reader how things are never holds: issue numbers, the history
of a change ("the round before", "this round"), commit hashes."""


def _text(markup: str) -> str:
    """A page's words, its tags dropped and its entities read."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built strictly from this checkout."""
    missing = [
        name
        for name in ("mkdocs", "material", "mkdocstrings_handlers.python", "mkdocs_jupyter")
        if importlib.util.find_spec(name.split(".")[0]) is None
    ]
    if missing:
        why = f"the docs extra is not installed ({', '.join(missing)}): pip install -e '.[docs]'"
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6_000:]
    return out


@pytest.mark.slow  # they read the site, built once (a minute)
def test_the_site_builds_strictly_with_every_page(site: Path) -> None:
    for page in ("index.html", "how-to/index.html", "reference/index.html"):
        assert (site / page).is_file(), page
    for module in PUBLIC_MODULES:
        page = site / "reference" / "api" / module.removeprefix("toolloop_lab.") / "index.html"
        assert page.is_file(), module
        assert f'id="{module}"' in page.read_text(encoding="utf-8"), module
    assert (site / "images" / "debugger.png").is_file()


def test_every_public_module_has_an_api_page_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for module in PUBLIC_MODULES:
        api = (DOCS / "reference" / "api").glob("*.md")
        pages = [p for p in api if f"::: {module}\n" in p.read_text(encoding="utf-8")]
        assert len(pages) == 1, module
        assert str(pages[0].relative_to(DOCS)) in nav, module


@pytest.mark.slow  # they read the site, built once (a minute)
def test_every_tutorial_is_a_page_with_its_stored_outputs(site: Path) -> None:
    notebooks = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(notebooks) >= 13
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for notebook in notebooks:
        assert f"tutorials/{notebook.name}" in nav, notebook.name
        page = site / "tutorials" / notebook.stem / "index.html"
        assert page.is_file(), f"{notebook.name} is not rendered as a page"
        shown = _text(page.read_text(encoding="utf-8"))
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        outputs = [
            "".join(out["text"])
            for cell in cells
            for out in cell.get("outputs", ())
            if out.get("output_type") == "stream"
        ]
        lines = [line.strip() for text in outputs for line in text.splitlines()]
        first = next((line for line in lines if line), None)
        if first is not None:  # the stored output is on the page: the notebook was not re-run
            assert first in shown, f"{notebook.name}: {first!r} not on its page"


@pytest.mark.slow  # they read the site, built once (a minute)
def test_the_events_page_lists_every_kind_and_field(site: Path) -> None:
    from dataclasses import fields

    from toolloop_lab.events import EVENT_TYPES

    page = (site / "reference" / "events" / "index.html").read_text(encoding="utf-8")
    for kind, cls in EVENT_TYPES.items():
        at = page.index(f'id="{kind}"')
        following = page.find("<h3", at + 1)
        section = page[at : following if following != -1 else len(page)]
        assert cls.__name__ in section, kind
        for field in fields(cls):
            if field.name != "kind":
                assert f"<code>{field.name}</code>" in section, f"{kind}.{field.name}"


@pytest.mark.slow  # they read the site, built once (a minute)
def test_the_words_page_shows_every_word_of_the_words_file(site: Path) -> None:
    words = json.loads((ROOT / "toolloop_lab" / "words.json").read_text(encoding="utf-8"))
    source = (DOCS / "reference" / "words.md").read_text(encoding="utf-8")
    shown = _text((site / "reference" / "words" / "index.html").read_text(encoding="utf-8"))
    shown = " ".join(shown.split())
    for group, entries in words.items():
        if group == "_about":
            continue
        assert f"<!-- generated: words {group} -->" in source, f"words.md leaves out {group}"
        for code, text in entries.items():
            assert code in shown, f"{group}.{code}"
            said = " ".join(text.replace("`", "").split())  # `code` shows as code
            assert said in shown, f"{group}.{code}: {text!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_tells_history(page: Path) -> None:
    found = HISTORY.findall(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.relative_to(ROOT)}: {found}"


def test_the_history_check_catches_what_it_should() -> None:
    caught = ("fixed in issue #44", "issue 12", "the round before", "this round", "see 3f9c2a7e")
    for said in caught:
        assert HISTORY.search(said), said
    for said in ("0.0000612", "1,240 tokens", "rounds=4", "round 2 of 10", "call_1"):
        assert not HISTORY.search(said), said


# -- what the docs promise under a condition, and the condition --------------------------

PLUGIN = Path(sys.prefix).joinpath(
    "share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager/schemas",
    "@jupyter-widgets/jupyterlab-manager/plugin.json",
)


def _said(page: str, start: str) -> str:
    """A page's text from ``start`` to the next bullet or heading, on one line."""
    text = (DOCS / page).read_text(encoding="utf-8")
    at = text.index(start)
    end = re.search(r"\n(- \*\*|#|\d+\. )", text[at + 1 :])
    return " ".join(text[at : at + 1 + (end.start() if end else len(text))].split())


def test_saved_notebooks_state_the_setting_and_its_default() -> None:
    said = _said("how-to/share-a-notebook.md", "- **Saved from JupyterLab or Notebook 7 with")
    assert '"Save Widget State Automatically", off by default' in said
    assert "Executed without a widget front end" in _said(
        "how-to/share-a-notebook.md", "- **Executed without"
    )
    assert "without widget state** (their default)" in _said(
        "how-to/share-a-notebook.md", "- **Saved from JupyterLab or Notebook 7 without"
    )
    why = (DOCS / "saved-notebooks.md").read_text(encoding="utf-8")
    assert '"Error displaying widget: model not found"' in why
    if not PLUGIN.exists():
        pytest.skip("the JupyterLab widget manager is not installed here")
    schema = json.loads(PLUGIN.read_text(encoding="utf-8"))
    assert schema["properties"]["saveState"]["default"] is False  # "off by default" holds


@pytest.fixture
def mock_comm(monkeypatch: pytest.MonkeyPatch) -> None:
    import comm

    monkeypatch.setattr(comm, "create_comm", MockComm)


@pytest.mark.usefixtures("mock_comm")
async def test_a_bridged_run_is_observed_and_cannot_pause() -> None:
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from loopkit import MODEL, calls, final, tool_call

    from toolloop_lab import LoopDebugger, ScriptedChatModel, watch
    from toolloop_lab.errors import NoPauseError

    said = _said("how-to/watch-langchain.md", "- **Observed, never driven**")
    assert "cannot hold it" in said
    assert "`next_pause()` raises `NoPauseError`" in said
    dbg = LoopDebugger(pause_on="both")
    refused: list[str] = []

    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers (and ask the debugger for a pause while the run goes on)."""
        with pytest.raises(NoPauseError) as caught:
            await dbg.next_pause(timeout=1)
        refused.append(str(caught.value))
        return a + b

    replies = [calls(tool_call("add", {"a": 2, "b": 3}, "c1")), final("5")]
    graph = create_agent(ScriptedChatModel(replies, model_name=MODEL), [add])
    with watch(dbg):
        await graph.ainvoke({"messages": [("user", "2 + 3?")]})
    assert len(refused) == 1
    assert "no run this debugger can pause" in refused[0]
    assert dbg.view.status == "finished"  # it ran to its end: nothing held it
    assert dbg.reach.to_dict()["pause"] is False
    dbg.close()
