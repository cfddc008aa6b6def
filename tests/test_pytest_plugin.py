"""The pytest plugin, run as a user runs it: pytest in a subprocess on a sample project.

The sample's tests drive the real ``ChatOpenAI`` client through ``toolloop_recording``: an
``LLMAgent`` run and a LangChain ``create_agent`` run watched through the bridge. They
record once against the tests' loopback OpenAI stub, replay with the network off
(pytest-socket), fail with the changed request message and the round-by-round diff after a
tool's output changes, and fail with the command that records a missing recording. The
plugin is found through the ``pytest11`` entry point (no ``-p``), beside pytest-recording,
which owns ``--record-mode`` when it is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

ROOT = Path(__file__).resolve().parents[1]

SAMPLE = '''
import os

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from toolloop_lab import LLMAgent, watch
from toolloop_lab.checks import answer_contains, called, called_in_order, outcome

STATUS = os.environ.get("TICKET_STATUS", "open")


@tool
def lookup_ticket(ticket: str) -> str:
    """Look a support ticket up."""
    return f"{ticket}: {STATUS}"


def make_model():
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=os.environ["STUB_URL"], api_key="test", max_retries=0
    )


def test_ticket(toolloop_recording):
    model = toolloop_recording.model(make_model)
    result = LLMAgent(model, [lookup_ticket]).run("Is T-7 open?")
    toolloop_recording.verify(
        result,
        [
            called("lookup_ticket", ticket="T-7"),
            outcome("final_answer"),
            answer_contains(os.environ.get("WANT_IN_ANSWER", "open")),
        ],
    )


def test_langchain_agent(toolloop_recording):
    from langchain.agents import create_agent

    events = []
    model = toolloop_recording.model(make_model)
    with watch(events.append):
        create_agent(model, [lookup_ticket]).invoke({"messages": [("user", "Is T-8 open?")]})
    toolloop_recording.verify(events, [called_in_order("lookup_ticket"), outcome("final_answer")])


def test_plugins(pytestconfig):
    plugins = pytestconfig.pluginmanager
    assert plugins.has_plugin("toolloop_lab")  # from the pytest11 entry point, no -p
    assert plugins.has_plugin("recording") is (os.environ.get("WITH_RECORDING") == "1")
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A sample project, and a site folder holding the package's entry point as installing
    it writes one (the package itself comes from this checkout)."""
    sample = tmp_path / "sample"
    (sample / "tests").mkdir(parents=True)
    (sample / "tests" / "test_agent.py").write_text(SAMPLE, encoding="utf-8")
    (sample / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    plugins = entry["project"]["entry-points"]["pytest11"]
    site = tmp_path / "site" / "toolloop_lab-0.1.0.dist-info"
    site.mkdir(parents=True)
    (site / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: toolloop-lab\nVersion: 0.1.0\n", encoding="utf-8"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in plugins.items())
    (site / "entry_points.txt").write_text(f"[pytest11]\n{lines}", encoding="utf-8")
    return sample


def pytest_in(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    paths = [str(ROOT), str(project.parent / "site"), os.environ.get("PYTHONPATH", "")]
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), **env}
    environ.pop("PYTEST_ADDOPTS", None)
    environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    command = [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-p"]
    command += ["no:randomly", "-rA", "--tb=short", *args]
    return subprocess.run(
        command, cwd=project, env=environ, capture_output=True, text=True, timeout=300, check=False
    )


def queue_two_runs(stub: OpenAIStub) -> None:
    for ticket in ("T-7", "T-8"):
        stub.reply(
            tool_calls=[OpenAIToolCall("lookup_ticket", {"ticket": ticket})],
            usage=OpenAIUsage(80, 12),
        )
        stub.reply(text=f"{ticket} is open.", usage=OpenAIUsage(120, 6))


def test_records_once_replays_offline_then_fails_with_the_diff_and_the_recording_command(
    project: Path, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    queue_two_runs(oai)
    url = oai.base_url
    recorded = pytest_in(project, "--record-mode=once", STUB_URL=url, WITH_RECORDING="1")
    assert recorded.returncode == 0, recorded.stdout[-4000:] + recorded.stderr[-2000:]
    assert len(oai.requests) == 4
    folder = project / "tests" / "recordings" / "test_agent"
    kept = sorted(p.name for p in folder.iterdir())
    assert kept == [
        "test_langchain_agent.checks.json",
        "test_langchain_agent.jsonl",
        "test_langchain_agent.trace.jsonl",
        "test_ticket.checks.json",
        "test_ticket.jsonl",
        "test_ticket.trace.jsonl",
    ]

    # offline: no socket can be opened, and the stub hears nothing more
    offline = ("--disable-socket", "--allow-unix-socket")
    replayed = pytest_in(project, *offline, STUB_URL=url, WITH_RECORDING="1")
    assert replayed.returncode == 0, replayed.stdout[-4000:] + replayed.stderr[-2000:]
    assert "3 passed" in replayed.stdout
    assert len(oai.requests) == 4

    # a tool's output changed: the replay leaves its recording where the request changed
    changed = pytest_in(
        project, *offline, "-k", "test_ticket", STUB_URL=url, TICKET_STATUS="closed"
    )
    out = changed.stdout
    assert changed.returncode == 1, out[-4000:]
    assert "toolloop_lab replay" in out
    assert "The replay of tests/recordings/test_agent/test_ticket.jsonl left the recording" in out
    assert "expected tool [call_stub1_0, success] 'T-7: open', received tool" in out
    assert "[call_stub1_0, success] 'T-7: closed'" in out
    assert "The run, round by round, against the recorded run (a: recorded):" in out
    assert "round 1: differs" in out
    assert "-lookup_ticket(ticket='T-7') -> success" in out or "-T-7: open" in out
    assert "+T-7: closed" in out
    assert (
        "If the change is intended, record the test again: "
        "pytest tests/test_agent.py::test_ticket --record-mode=rewrite"
    ) in out

    # a check that fails on a replay that kept to its recording: its evidence, and the run
    # round by round against the recorded one (the same: the checks changed)
    checked = pytest_in(
        project, *offline, "-k", "test_ticket", STUB_URL=url, WANT_IN_ANSWER="closed"
    )
    out = checked.stdout
    assert checked.returncode == 1, out[-4000:]
    assert "ChecksFailed" in out
    assert "answer_contains('closed'): failed" in out
    assert "seen:     the answer 'T-7 is open.'" in out
    assert "Every round did what the recorded run did: the checks changed since it was" in out

    # a recording that is missing: the failure is the command that records it
    (folder / "test_langchain_agent.jsonl").unlink()
    missing = pytest_in(project, *offline, "-k", "langchain", STUB_URL=url)
    assert missing.returncode == 1
    assert (
        "no recording tests/recordings/test_agent/test_langchain_agent.jsonl to replay "
        "(--record-mode=none)" in missing.stdout
    )
    assert "pytest tests/test_agent.py::test_langchain_agent --record-mode=once" in missing.stdout
    assert len(oai.requests) == 4
    oai.assert_clean()


def test_without_pytest_recording_the_plugin_owns_record_mode(project: Path) -> None:
    help_text = pytest_in(project, "-p", "no:recording", "--help").stdout
    assert help_text.count("--record-mode") == 1
    assert "toolloop_lab: recorded chat models" in help_text
    done = pytest_in(
        project, "-p", "no:recording", "--record-mode=none", "-k", "plugins", WITH_RECORDING="0"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    bad = pytest_in(project, "-p", "no:recording", "--record-mode=sometimes")
    assert bad.returncode == 4  # a usage error, as pytest-recording gives
    assert "invalid choice: 'sometimes'" in bad.stderr


def test_beside_pytest_recording_pytest_starts_and_both_read_one_option(project: Path) -> None:
    help_text = pytest_in(project, "--help").stdout
    assert help_text.count("--record-mode") == 1  # pytest-recording's, which both read
    assert "VCR.py record mode" in help_text
    done = pytest_in(project, "--record-mode=none", "-k", "plugins", WITH_RECORDING="1")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_a_test_that_fails_while_recording_keeps_no_recording(
    project: Path, oai: OpenAIStub
) -> None:
    oai.chunk_interval = 0
    oai.reply(text="I cannot say.", usage=OpenAIUsage(50, 5))
    done = pytest_in(project, "--record-mode=once", "-k", "test_ticket", STUB_URL=oai.base_url)
    assert done.returncode == 1
    assert "so its recording was not kept" in done.stdout
    assert not (project / "tests" / "recordings" / "test_agent" / "test_ticket.jsonl").exists()


def test_the_entry_point_names_the_plugin_module() -> None:
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert entry["project"]["entry-points"]["pytest11"] == {
        "toolloop_lab": "toolloop_lab._pytest_plugin"
    }


def test_the_plugin_loads_nothing_beyond_the_package_root() -> None:
    """pytest loads the plugin in every session of a project that has the package: it adds
    nothing to what ``import toolloop_lab`` loads (no checks, replay, pandas or widget)."""
    code = textwrap.dedent(
        """
        import sys
        import toolloop_lab
        before = set(sys.modules)
        import toolloop_lab._pytest_plugin
        added = set(sys.modules) - before - {"toolloop_lab._pytest_plugin"}
        heavy = {"pandas", "ipywidgets", "matplotlib", "langchain_openai"}
        print(sorted(m for m in added if m.startswith("toolloop_lab") or m in heavy))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"
