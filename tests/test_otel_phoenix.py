"""End to end: runs exported over OTLP into a real Phoenix, read back with Phoenix's client.

One Phoenix server per test session (``arize-phoenix``, started by the fixture below as a
subprocess of this interpreter): loopback only, free ports for HTTP and gRPC, a temporary
working directory (its SQLite database lives there), telemetry and external resources off.
It takes about ten seconds to start; the fixture waits for ``/healthz`` and kills the
server at the end of the session.

Each test sends runs through :func:`otlp_tracer_provider` into its own Phoenix project and
checks what Phoenix stored: one trace per run, the span tree and Phoenix's own span kinds
(AGENT, LLM, TOOL, which Phoenix derives from ``gen_ai.operation.name``), token sums equal
to the runs' totals (in the ``gen_ai.usage.*`` attributes and in Phoenix's own
``llm.token_count.*``), the original timestamps and error statuses.

Without Phoenix installed the tests skip, except under ``CI=true``, where they fail.
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
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_otel_builder import STARTED_AT, RunBuilder, echo_call, two_round_run, usage

from toolloop_lab.events import (
    Event,
    LoopFailed,
    LoopFinished,
    ModelCalled,
    ModelCallStarted,
    Pruned,
    ToolDispatched,
)
from toolloop_lab.otel import OTelObserver, export_events, export_trace, otlp_tracer_provider
from toolloop_lab.trace import write_trace

START_TIMEOUT_S = float(os.environ.get("TOOLLOOP_PHOENIX_START_TIMEOUT_S", "180"))
READ_TIMEOUT_S = 60.0


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


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    if importlib.util.find_spec("phoenix.server") is None:
        _unavailable("arize-phoenix is not installed (pip install -e '.[test]')")
    if importlib.util.find_spec("phoenix.client") is None:
        _unavailable("arize-phoenix-client is not installed")
    workdir = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    log = workdir / "server.log"
    base_url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "phoenix.server.main", "serve"],
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
    llm_spans: int
    tool_spans: int
    input_tokens: int
    output_tokens: int
    failed: bool

    @property
    def spans(self) -> int:
        return 1 + self.llm_spans + self.tool_spans


def expected_of(events: Sequence[Event]) -> Expected:
    end = events[-1]
    assert isinstance(end, (LoopFinished, LoopFailed))
    return Expected(
        run_id=end.run_id,
        llm_spans=sum(isinstance(e, ModelCallStarted) for e in events)
        or sum(isinstance(e, (ModelCalled, Pruned)) for e in events),
        tool_spans=sum(isinstance(e, ToolDispatched) for e in events),
        input_tokens=end.usage.input_tokens,
        output_tokens=end.usage.output_tokens,
        failed=isinstance(end, LoopFailed),
    )


def check_run_in_phoenix(spans: list[Any], trace_id: str, want: Expected) -> None:
    """One trace for the run: its tree, Phoenix's kinds, its token sums, its status."""
    mine = [s for s in spans if s["context"]["trace_id"] == trace_id]
    roots = [s for s in mine if not s.get("parent_id")]
    assert len(roots) == 1, [s["name"] for s in roots]
    root = roots[0]
    assert root["span_kind"] == "AGENT"
    assert root["attributes"]["toolloop.run_id"] == want.run_id
    assert datetime.fromisoformat(root["start_time"]) == datetime.fromisoformat(STARTED_AT)
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


def _gated_run(run_id: str) -> RunBuilder:
    b = RunBuilder(run_id)
    b.start(token_budget=100)
    b.round()
    b.reply(b.call_start(), usage(5_000, 200), tool_calls=[echo_call("c1")])
    b.gate("token", "100", "5200", passed=False)
    b.tool_done(
        "c1", content="budget spent", status="error", error_reason="token_budget", ran=False
    )
    b.synthesis("token_budget")
    call = b.call_start("synthesis", tools=())
    b.reply(call, usage(5_300, 30), text="best effort", purpose="synthesis")
    b.finish("best effort", outcome="token_budget_exhausted", synthesis_reason="token_budget")
    return b


def _failed_run(run_id: str) -> RunBuilder:
    b = RunBuilder(run_id)
    b.start()
    b.round()
    b.reply(b.call_start(), usage(30, 3), tool_calls=[echo_call("c1")])
    b.tool_start("c1")
    b.tool_done("c1")
    b.round()
    b.call_start()
    b.fail("APIConnectionError", "connection reset")
    return b


def test_runs_exported_over_otlp_land_in_phoenix_as_one_trace_each(
    phoenix: Phoenix, tmp_path: Path
) -> None:
    project = f"toolloop-{uuid.uuid4().hex[:8]}"
    runs = {
        "plain": two_round_run(RunBuilder("plain")).events,
        "gated": _gated_run("gated").events,
        "failed": _failed_run("failed").events,
    }
    provider = _provider(phoenix, project)
    try:
        live = OTelObserver(provider, use_current_context=False)  # as during a run
        *body, last = runs["plain"]
        for event in body:
            live(event)
        trace_ids = {"plain": live.trace_id("plain")}
        live(last)
        trace_ids.update(export_events(runs["gated"], provider).runs)
        path = write_trace(tmp_path / "failed.jsonl", runs["failed"])
        trace_ids.update(export_trace(path, provider).runs)
    finally:
        provider.shutdown()
    wanted = {run_id: expected_of(events) for run_id, events in runs.items()}

    spans = _read_spans(phoenix, project, sum(w.spans for w in wanted.values()))
    by_trace = defaultdict(list)
    for span in spans:
        by_trace[span["context"]["trace_id"]].append(span)
    assert len(by_trace) == len(runs)
    assert set(by_trace) == set(trace_ids.values())
    for run_id, want in wanted.items():
        check_run_in_phoenix(spans, trace_ids[run_id], want)
