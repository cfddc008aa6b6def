"""Per-span cost of ``SpanSource``, the span processor that turns GenAI spans into events.

Run: ``python benchmarks/bench_spans.py`` (under a minute; ``--quick`` for a smoke run).
Each repeat traces the same run with the SDK's own tracer: one ``invoke_agent`` span and,
per round, a ``chat`` span carrying usage, a model name and the conversation so far as
``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON (as pydantic-ai records them),
then an ``execute_tool`` span with its arguments and result. The variants are interleaved
repeat by repeat (order rotated), so load and drift hit them alike:

* ``provider, no processor``: the SDK creating and ending spans (the baseline);
* ``+ no-op processor``: the SDK's processor dispatch, which any processor pays;
* ``+ SpanSource, no observer``: reading every span and building every event;
* ``+ SpanSource(RunView)``: the fold every view reads;
* ``+ SpanSource(LoopDebugger)``: the live debugger, headless (built once).

Printed per variant: the median wall-clock and process-CPU µs per span, and the cost over
the no-op processor per span (what ``SpanSource`` itself adds). Messages grow with the
run, so the per-span cost of reading them grows too: two run lengths are timed.

Not part of the test suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import Tracer

from toolloop_lab import RunView
from toolloop_lab.events import Event
from toolloop_lab.otel import SpanSource

SIZES = (10, 100)
REPEATS = {10: 41, 100: 11}


class _NoOp(SpanProcessor):
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        return None


def _messages(rounds: int) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "Go."}]}]
    for n in range(rounds):
        call = {"type": "tool_call", "id": f"c{n}", "name": "echo", "arguments": {"text": f"r{n}"}}
        said.append({"role": "assistant", "parts": [call]})
        answer = {"type": "tool_call_response", "id": f"c{n}", "response": f"r{n}"}
        said.append({"role": "user", "parts": [answer]})
    return said


def trace_run(tracer: Tracer, rounds: int) -> int:
    """One run's spans; returns how many."""
    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        for n in range(rounds):
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 50 + n,
                "gen_ai.usage.output_tokens": 10,
                "gen_ai.input.messages": json.dumps(_messages(n)),
                "gen_ai.output.messages": json.dumps(_messages(n + 1)[-2:-1]),
            }
            with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
                pass
            tool = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "echo",
                "gen_ai.tool.call.id": f"c{n}",
                "gen_ai.tool.call.arguments": json.dumps({"text": f"r{n}"}),
                "gen_ai.tool.call.result": f"r{n}",
            }
            with tracer.start_as_current_span("execute_tool echo", attributes=tool):
                pass
    return 1 + 2 * rounds


def _variants() -> dict[str, Callable[[], TracerProvider]]:
    def with_(processor: Callable[[], SpanProcessor | None]) -> Callable[[], TracerProvider]:
        def build() -> TracerProvider:
            provider = TracerProvider()
            made = processor()
            if made is not None:
                provider.add_span_processor(made)
            return provider

        return build

    from toolloop_lab._widget.debugger import LoopDebugger

    dbg = LoopDebugger()
    sink: list[Event] = []
    return {
        "provider, no processor": with_(lambda: None),
        "+ no-op processor": with_(_NoOp),
        "+ SpanSource, no observer": with_(lambda: SpanSource()),
        "+ SpanSource(RunView)": with_(lambda: SpanSource(RunView().apply)),
        "+ SpanSource(list.append)": with_(lambda: SpanSource(sink.append)),
        "+ SpanSource(LoopDebugger)": with_(lambda: SpanSource(dbg)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    variants = _variants()
    for rounds in SIZES:
        repeats = max(3, REPEATS[rounds] // 4) if quick else REPEATS[rounds]
        wall: dict[str, list[float]] = {name: [] for name in variants}
        cpu: dict[str, list[float]] = {name: [] for name in variants}
        names = list(variants)
        for repeat in range(repeats):
            shift = repeat % len(names)
            for name in itertools.chain(names[shift:], names[:shift]):
                provider = variants[name]()
                tracer = provider.get_tracer("bench")
                w0, c0 = time.perf_counter(), time.process_time()
                spans = trace_run(tracer, rounds)
                w1, c1 = time.perf_counter(), time.process_time()
                wall[name].append((w1 - w0) / spans * 1e6)
                cpu[name].append((c1 - c0) / spans * 1e6)
        base = statistics.median(wall["+ no-op processor"])
        print(f"\n{rounds} rounds ({1 + 2 * rounds} spans a run), {repeats} repeats")
        print(f"{'variant':30} {'µs/span wall':>13} {'µs/span CPU':>12} {'over no-op':>11}")
        for name in names:
            w, c = statistics.median(wall[name]), statistics.median(cpu[name])
            print(f"{name:30} {w:13.1f} {c:12.1f} {w - base:11.1f}")


if __name__ == "__main__":
    main()
