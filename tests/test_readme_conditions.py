"""The README keeps its promises to a newcomer: read in five minutes, every link and picture
there, and a Quickstart whose two commands are the ones that work.

* At most 200 lines; the screenshot it shows is a PNG in the repository, wide enough to read.
* ``## Quickstart`` is one bash block of exactly two commands: install and run the demo;
  install the test tools (the ``docs`` extra among them, so the docs build runs rather than
  skips) and run every check.
* Every relative link resolves, and the Binder badge opens a tutorial that exists.

What the README used to say under a condition (saved notebooks, bridged runs) moved into
the docs, and tests/test_docs.py checks it there.
"""

from __future__ import annotations

import re
import struct
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LINK = re.compile(r"\]\(([^)\s]+)\)")

DEMO = "python3 -m pip install -e . && toolloop-lab demo"
TESTS = (
    'python3 -m pip install -e ".[test,dask,docs]" && python3 -m ruff check . && '
    "python3 -m ruff format --check . && python3 -m mypy && lint-imports && "
    "python3 -m behave --format progress features && "
    "python3 -m pytest tests notebooks --nbval --nbval-sanitize-with "
    "notebooks/nbval_sanitize.cfg --nbval-kernel-name toolloop-binder -p no:randomly "
    "-n 2 --dist loadscope"
)


def section(title: str) -> str:
    """The README's text under ``## title``, up to the next ``## `` heading."""
    at = README.index(f"\n## {title}\n")
    end = README.find("\n## ", at + 1)
    return README[at : end if end != -1 else len(README)]


def test_the_readme_reads_in_five_minutes() -> None:
    assert len(README.splitlines()) <= 200


def test_the_quickstart_is_one_block_of_two_commands() -> None:
    quickstart = section("Quickstart")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", quickstart, re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1
    language, body = blocks[0]
    assert language == "bash"
    assert body.splitlines() == [DEMO, TESTS]


def test_the_quickstart_installs_what_its_commands_need() -> None:
    assert PYPROJECT["project"]["scripts"]["toolloop-lab"] == "toolloop_lab._cli:main"
    extras = PYPROJECT["project"]["optional-dependencies"]
    installed = re.search(r'-e "\.\[([a-z,]+)\]"', TESTS)
    assert installed is not None
    for extra in installed.group(1).split(","):
        assert extra in extras, extra
    docs = " ".join(extras["docs"])
    for tool in ("mkdocs", "mkdocs-material", "mkdocstrings", "mkdocs-jupyter"):
        assert f"{tool}>=" in docs, tool  # the docs build runs in the test command, unskipped


def test_the_screenshot_is_there_and_readable() -> None:
    shown = re.findall(r"!\[([^\]]+)\]\(([^)]+)\)", README)
    pictures = [(alt, path) for alt, path in shown if path.endswith(".png")]
    assert pictures, "the README shows no screenshot"
    alt, path = pictures[0]
    assert path == "docs/images/debugger.png"
    assert "debugger" in alt.lower()
    data = (ROOT / path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800, width
    assert height >= 400, height
    assert (ROOT / "scripts" / "screenshot.py").is_file()  # how to make it again


def test_every_relative_link_resolves() -> None:
    for target in LINK.findall(README):
        if target.startswith(("http://", "https://", "#")):
            continue
        assert (ROOT / target.split("#")[0]).exists(), target


def test_the_binder_badge_opens_the_first_tutorial() -> None:
    badge = re.search(r"https://mybinder\.org/v2/gh/[^)]+urlpath=lab/tree/([^)]+)\)", README)
    assert badge is not None
    assert (ROOT / badge.group(1)).is_file()
    assert (ROOT / "binder").is_dir()


def test_each_main_job_has_its_section_and_example() -> None:
    for title in (
        "Run an agent and read its spend",
        "Watch it live",
        "Step, edit and fork",
        "Sweep scenarios",
        "Watch an agent you already have",
    ):
        assert "```python\n" in section(title), title
