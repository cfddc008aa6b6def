"""The how-to page's Python blocks run as written, in order, in one namespace (as a reader
runs them in a notebook), with nothing but the package and its scripted models."""

from __future__ import annotations

import re
from pathlib import Path

import comm
import pytest
from loopkit import MockComm

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "checks-and-recorded-tests.md"
FENCE = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def test_every_python_block_of_the_page_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(comm, "create_comm", MockComm)
    text = PAGE.read_text(encoding="utf-8")
    blocks = [(text[: m.start()].count("\n") + 2, m.group(1)) for m in FENCE.finditer(text)]
    assert len(blocks) >= 6
    namespace: dict[str, object] = {"__name__": "howto"}
    for line, code in blocks:
        exec(compile(code, f"{PAGE}:{line}", "exec"), namespace)
    out = capsys.readouterr().out
    # what the page says it shows, shown
    assert "max_tool_rounds(0): failed" in out
    assert "expected: at most 0 tool rounds" in out
    assert "def test_ticket_lookup() -> None:" in out
    assert "'test_ticket_lookup.checks.json', 'test_ticket_lookup.jsonl'" in out
    assert out.splitlines()[-2].startswith("all 2 checks passed on run")
    assert out.splitlines()[-1].startswith("1 of 1 checks failed on run")
