"""End to end: runs exported over OTLP into a real Phoenix, read back with Phoenix's client.

One Phoenix server per test session, started by the fixture below as a subprocess:
loopback only, free ports for HTTP and gRPC, a temporary working directory (its SQLite
database lives there), telemetry and external resources off. It takes 10 to 50 seconds to
start on a 2-core machine; the fixture waits for ``/healthz`` and kills the server at the
end of the session.

The server (``arize-phoenix``) runs from its own virtual environment, built from the
package index once per machine and reused by every later run (``venvcache.py``: about a
minute the first time; ``TOOLLOOP_PHOENIX_VENV`` names a directory to use instead). It
stays out of the test environment on purpose: it pins ``anthropic<2`` and brings
``pyarrow`` (which changes how pandas stores strings) and some 75 other packages, none of
which the rest of the suite should run with. If this interpreter already has
``phoenix.server``, that one is used. Only the light client, ``arize-phoenix-client``, is a
test dependency.

The test sends runs through :func:`otlp_tracer_provider` into its own Phoenix project (real
``LLMAgent`` runs of catalog scenarios with the observer live, a saved trace file, a built
failure) and checks what Phoenix stored: one trace per run, the span tree and Phoenix's own
span kinds (AGENT, LLM, TOOL, which Phoenix derives from ``gen_ai.operation.name``), token
sums equal to the runs' totals (in the ``gen_ai.usage.*`` attributes and in Phoenix's own
``llm.token_count.*``), the original timestamps and error statuses.

``TOOLLOOP_SKIP_PHOENIX_TEST=1`` skips it outside CI; under ``CI=true`` it always runs, and
anything missing fails it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from otelkit import RunBuilder, echo_call, usage
from venvcache import VenvError, cached_venv, venv_python

from toolloop_lab import TraceWriter, read_trace
from toolloop_lab.errors import ToolLoopLabError
from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    LoopStarted,
    ModelCallStarted,
    ToolDispatched,
)
from toolloop_lab.lab import Scenario, catalog
from toolloop_lab.lab._builtin_scenarios import CATALOG_PROMPT
from toolloop_lab.otel import OTelObserver, export_events, export_trace, otlp_tracer_provider

pytestmark = pytest.mark.slow

PHOENIX_REQUIREMENT = "arize-phoenix>=20.20"
"""The server the fixture installs (Phoenix reads ``gen_ai.*`` spans since 20.x)."""
START_TIMEOUT_S = float(os.environ.get("TOOLLOOP_PHOENIX_START_TIMEOUT_S", "180"))
INSTALL_TIMEOUT_S = 1_200
READ_TIMEOUT_S = 60.0
SKIP_ENV = "TOOLLOOP_SKIP_PHOENIX_TEST"
VENV_ENV = "TOOLLOOP_PHOENIX_VENV"


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Phoenix end-to-end test cannot run under CI: {reason}")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass(frozen=True)
class Phoenix:
    base_url: str
    log: Path

    @property
    def traces_endpoint(self) -> str:
        return f"{self.base_url}/v1/traces"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _has_server(python: Path) -> bool:
    probe = (
        "import importlib.util, sys; sys.exit(importlib.util.find_spec('phoenix.server') is None)"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, timeout=120, check=False)
    return done.returncode == 0


def _server_python() -> Path:
    """A Python that has ``phoenix.server``: this one, the one in ``TOOLLOOP_PHOENIX_VENV``,
    or the cached environment's (built on first use, see ``venvcache.py``)."""
    if importlib.util.find_spec("phoenix.server") is not None:
        return Path(sys.executable)
    if reuse := os.environ.get(VENV_ENV):
        python = venv_python(Path(reuse))
        if python.exists() and _has_server(python):
            return python
        _unavailable(f"{VENV_ENV}={reuse} has no phoenix.server")
    try:
        prefix = cached_venv("phoenix", [PHOENIX_REQUIREMENT], timeout=INSTALL_TIMEOUT_S)
    except VenvError as exc:
        _unavailable(f"no environment with {PHOENIX_REQUIREMENT}: {exc}")
    python = venv_python(prefix)
    if not _has_server(python):
        _unavailable(f"{prefix} has no phoenix.server")
    return python


def _server_env(**extra: str) -> dict[str, str]:
    """This environment without what would make another Python see our packages."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"}
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    if os.environ.get(SKIP_ENV) and os.environ.get("CI") != "true":
        pytest.skip(f"{SKIP_ENV} is set")
    if importlib.util.find_spec("phoenix.client") is None:
        _unavailable("arize-phoenix-client is not installed (pip install -e '.[test]')")
    python = _server_python()
    workdir = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = _server_env(
        PHOENIX_WORKING_DIR=str(workdir),
        PHOENIX_HOST="127.0.0.1",
        PHOENIX_PORT=str(port),
        PHOENIX_GRPC_PORT=str(grpc_port),
        PHOENIX_TELEMETRY_ENABLED="false",
        PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
        PHOENIX_DISABLE_AGENT_ASSISTANT="true",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    log = workdir / "server.log"
    base_url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(python), "-m", "phoenix.server.main", "serve"],
            env=env,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(base_url):
            if process.poll() is not None:
                pytest.fail(f"Phoenix exited with {process.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                pytest.fail(f"Phoenix not ready after {START_TIMEOUT_S:.0f} s:\n{_tail(log)}")
            time.sleep(0.25)
        yield Phoenix(base_url, log)
    finally:
        _stop(process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def _tail(log: Path, lines: int = 40) -> str:
    text = log.read_text("utf-8", "replace") if log.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def _provider(phoenix: Phoenix, project: str) -> Any:
    return otlp_tracer_provider(
        phoenix.traces_endpoint, resource_attributes={"openinference.project.name": project}
    )


def _read_spans(phoenix: Phoenix, project: str, expected: int) -> list[Any]:
    """Phoenix's spans of ``project``, once it has stored ``expected`` of them."""
    from phoenix.client import Client

    client = Client(base_url=phoenix.base_url)
    deadline = time.monotonic() + READ_TIMEOUT_S
    spans: list[Any] = []
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the project appears with its first span
            spans = list(client.spans.get_spans(project_identifier=project, limit=1_000))
        if len(spans) >= expected:
            time.sleep(0.5)  # and nothing beyond it arrives late
            return list(client.spans.get_spans(project_identifier=project, limit=1_000))
        time.sleep(0.25)
    pytest.fail(f"Phoenix stored {len(spans)} of {expected} spans:\n{_tail(phoenix.log)}")


@dataclass(frozen=True)
class Expected:
    """What one run's events say Phoenix must hold."""

    run_id: str
    started_at: str
    llm_spans: int
    tool_spans: int
    input_tokens: int
    output_tokens: int
    failed: bool

    @property
    def spans(self) -> int:
        return 1 + self.llm_spans + self.tool_spans


def expected_of(events: Sequence[Event]) -> Expected:
    (start,) = [e for e in events if isinstance(e, LoopStarted)]
    end = events[-1]
    assert isinstance(end, (LoopFinished, LoopFailed))
    return Expected(
        run_id=end.run_id,
        started_at=start.started_at,
        llm_spans=sum(isinstance(e, ModelCallStarted) for e in events),
        tool_spans=sum(isinstance(e, ToolDispatched) for e in events),
        input_tokens=end.usage.input_tokens,
        output_tokens=end.usage.output_tokens,
        failed=isinstance(end, LoopFailed),
    )


def check_run_in_phoenix(spans: list[Any], want: Expected) -> None:
    """One trace for the run: its tree, Phoenix's kinds, its token sums, its status."""
    roots = [s for s in spans if s["attributes"].get("toolloop.run_id") == want.run_id]
    assert len(roots) == 1
    root = roots[0]
    assert not root.get("parent_id")
    mine = [s for s in spans if s["context"]["trace_id"] == root["context"]["trace_id"]]
    assert root["span_kind"] == "AGENT"
    assert datetime.fromisoformat(root["start_time"]) == datetime.fromisoformat(want.started_at)
    kinds = Counter(s["span_kind"] for s in mine)
    assert kinds == Counter({"AGENT": 1, "LLM": want.llm_spans, "TOOL": want.tool_spans})
    children = [s for s in mine if s is not root]
    assert all(s["parent_id"] == root["context"]["span_id"] for s in children)
    llm = [s["attributes"] for s in mine if s["span_kind"] == "LLM"]
    for name, total in (
        ("gen_ai.usage.input_tokens", want.input_tokens),
        ("gen_ai.usage.output_tokens", want.output_tokens),
        ("llm.token_count.prompt", want.input_tokens),  # Phoenix's own reading of them
        ("llm.token_count.completion", want.output_tokens),
    ):
        assert sum(a.get(name, 0) for a in llm) == total, name
    assert root["attributes"]["toolloop.usage.input_tokens"] == want.input_tokens
    assert "llm.token_count.prompt" not in root["attributes"]  # no double count in Phoenix
    assert root["status_code"] == ("ERROR" if want.failed else "UNSET")


LIVE = ("multi_round", "pruning", "token_budget", "model_exception")
"""Catalog scenarios run by a real ``LLMAgent`` with the observer sending live."""


def _run_live(scenario: Scenario, provider: Any) -> list[Event]:
    events: list[Event] = []
    agent = scenario.build_agent([OTelObserver(provider), events.append])
    with contextlib.suppress(ToolLoopLabError):  # model_exception fails on purpose
        agent.run(scenario.prompt)
    return events


def test_runs_exported_over_otlp_land_in_phoenix_as_one_trace_each(
    phoenix: Phoenix, tmp_path: Path
) -> None:
    project = f"toolloop-{uuid.uuid4().hex[:8]}"
    scenarios = {s.name: s for s in catalog()}
    provider = _provider(phoenix, project)
    try:
        runs = [_run_live(scenarios[name], provider) for name in LIVE]
        # a run saved to a trace file, exported afterwards with its original timestamps
        path = tmp_path / "saved.jsonl"
        with TraceWriter(path) as writer:
            scenarios["single_round"].build_agent([writer]).run(CATALOG_PROMPT)
        exported = export_trace(path, provider)
        runs.append(list(read_trace(path).events))
        # and a run built event by event, with a tool failure and a call cut off by an error
        built = _failed_run("built-failure").events
        export_events(built, provider)
        runs.append(built)
    finally:
        provider.shutdown()
    wanted = [expected_of(events) for events in runs]

    spans = _read_spans(phoenix, project, sum(w.spans for w in wanted))
    assert len(spans) == sum(w.spans for w in wanted)
    assert len({s["context"]["trace_id"] for s in spans}) == len(runs)
    assert set(exported.runs.values()) <= {s["context"]["trace_id"] for s in spans}
    for want in wanted:
        check_run_in_phoenix(spans, want)


def _failed_run(run_id: str) -> RunBuilder:
    b = RunBuilder(run_id)
    b.start()
    b.round()
    b.reply(b.call_start(), usage(30, 3), tool_calls=[echo_call("c1"), echo_call("c2")])
    b.tool_start("c1")
    b.tool_done("c1", content="disk full", status="error", error_reason="tool_error")
    b.tool_done("c2", "nope", content="no such tool", status="error", error_reason="not_available")
    b.round()
    b.call_start()
    b.fail("APIConnectionError", "connection reset")
    return b
