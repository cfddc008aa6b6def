"""What watching a foreign run costs: the LangChain callback bridge and the spans-in source.

Run: ``python benchmarks/bench_bridges.py`` (about 5 minutes on a 2-core machine;
``--quick``, under 2 minutes, for a smoke run; ``--only langchain`` or ``--only spans`` for
one half). Both halves interleave their variants repeat by repeat (order rotated) in one
process, so drift and other processes' load hit all of them alike, and print wall-clock and
process-CPU figures (CPU time, which other processes' load barely moves, is what the closing
lines use). The project set no goal for either: the script ends with the headline figures,
each marked ``[no goal]``.

**The LangChain callback bridge** (``watch``, ``EventBridge``): langchain's
``create_agent`` on an instant scripted model, one ``echo`` tool call per round, 10, 100
and 300 rounds; the agent is built before each timed run, so only the run is measured. The
variants separate what the bridge costs from what any callback handler costs:

* ``create_agent`` alone (the baseline);
* ``+ no-op callback handler``: langchain-core's own callback dispatch (run managers,
  tracing copies of the prompt), which any callback-based tool pays;
* ``+ watch(), no observer``: the bridge building every event, nobody reading them;
* ``+ watch(RunView)``: the fold every view reads;
* ``+ watch(TraceWriter)``: a JSONL line per event;
* ``+ watch(LoopDebugger)``: the live debugger, headless (built once, as in a notebook);
* the same ``create_agent`` streamed (``astream(stream_mode="messages")``) bare and with
  ``watch(RunView)``, where the bridge also coalesces the streamed fragments.

It prints µs per round (median and min-max wall, median and least CPU), each as a ratio to
its bare run, and the tracemalloc peak per round; then the µs per round spent inside the
bridge's callbacks (observers included), timed around each callback: a direct figure.

**Spans in** (``SpanSource``): each repeat traces one run with the OpenTelemetry SDK's own
tracer: an ``invoke_agent`` span and, per round, a ``chat`` span carrying usage, a model
name and the conversation so far as ``gen_ai.input.messages`` / ``gen_ai.output.messages``
JSON (as pydantic-ai records them), then an ``execute_tool`` span with its arguments and
result; 10 and 100 rounds (the messages grow with the run, and so does reading them):

* ``provider, no processor``: the SDK creating and ending spans;
* ``+ no-op processor``: the SDK's processor dispatch (the baseline: any processor pays it);
* ``+ SpanSource, no observer``: reading every span and building every event;
* ``+ SpanSource(RunView)`` and ``+ SpanSource(list.append)``: the fold, or a plain sink;
* ``+ SpanSource(LoopDebugger)``: the live debugger, headless (built once).

It prints µs per span (median wall and CPU) and what each adds over the no-op processor.

Not part of the test suite: timing figures live here, never in tests.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from benchkit import (
    RUNNER,
    Cell,
    Goal,
    Run,
    load,
    no_goal,
    peak_per_round,
    print_goals,
    script,
    time_once,
)
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import HumanMessage
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import Tracer

from toolloop_lab import (
    EventBridge,
    LoopDebugger,
    RunView,
    ScriptedChatModel,
    TraceWriter,
    echo_tool,
    watch,
)
from toolloop_lab.events import Event, LoopFinished
from toolloop_lab.otel import SpanSource

# -- the LangChain callback bridge ---------------------------------------------------------
Variant = Callable[[Any, int], Coroutine[Any, Any, None]]
"""One run of an already built agent: ``variant(agent, rounds)``."""

BRIDGE_SIZES = (10, 100, 300)
BRIDGE_REPEATS = {10: 31, 100: 11, 300: 7}
"""Interleaved repeats per size (``--quick`` takes a quarter, at least 3)."""


def _agent(rounds: int) -> Any:
    return create_agent(
        ScriptedChatModel(
            script(rounds, "done, and this answer streams in a few pieces"),
            model_name="gpt-4o-mini",
        ),
        [echo_tool()],
    )


def _config(rounds: int, callbacks: list[Any] | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"recursion_limit": 2 * rounds + 10}
    if callbacks:
        config["callbacks"] = callbacks
    return config


_INPUT = {"messages": [HumanMessage("go")]}


class NoOp(BaseCallbackHandler):
    """A callback handler that does nothing (langchain-core's dispatch cost alone).

    It must define ``on_chat_model_start``: a handler without it makes langchain-core fall
    back to ``on_llm_start`` with every prompt turned into text, a cost that grows with the
    conversation and would not be the dispatch cost at all."""

    run_inline = True

    def on_chat_model_start(self, *args: Any, **kwargs: Any) -> None:
        return None


async def bare(agent: Any, rounds: int) -> None:
    await agent.ainvoke(_INPUT, _config(rounds))


async def noop_handler(agent: Any, rounds: int) -> None:
    await agent.ainvoke(_INPUT, _config(rounds, [NoOp()]))


async def _watched(agent: Any, rounds: int, observer: Any, *, stream: bool = False) -> None:
    observers = () if observer is None else (observer,)
    with watch(*observers):
        if stream:
            async for _ in agent.astream(_INPUT, _config(rounds), stream_mode="messages"):
                pass
        else:
            await agent.ainvoke(_INPUT, _config(rounds))


async def bridge_only(agent: Any, rounds: int) -> None:
    await _watched(agent, rounds, None)


async def bridge_runview(agent: Any, rounds: int) -> None:
    view = RunView()
    await _watched(agent, rounds, view.apply)
    assert view.status == "finished"


_TRACE_DIR = tempfile.TemporaryDirectory(prefix="bench_bridge_")
_TRACES = itertools.count()


async def bridge_trace(agent: Any, rounds: int) -> None:
    path = Path(_TRACE_DIR.name) / f"trace{next(_TRACES)}.jsonl"
    writer = TraceWriter(path)
    try:
        await _watched(agent, rounds, writer)
    finally:
        writer.close()
        path.unlink()


_DEBUGGER: list[Any] = []


async def bridge_debugger(agent: Any, rounds: int) -> None:
    if not _DEBUGGER:
        _DEBUGGER.append(LoopDebugger())
    await _watched(agent, rounds, _DEBUGGER[0])


async def stream_bare(agent: Any, rounds: int) -> None:
    async for _ in agent.astream(_INPUT, _config(rounds), stream_mode="messages"):
        pass


async def stream_runview(agent: Any, rounds: int) -> None:
    view = RunView()
    await _watched(agent, rounds, view.apply, stream=True)
    assert view.status == "finished"


BASE = "create_agent"
STREAM_BASE = "create_agent, streamed"
VARIANTS: dict[str, Variant] = {
    BASE: bare,
    "+ no-op callback handler": noop_handler,
    "+ watch(), no observer": bridge_only,
    "+ watch(RunView)": bridge_runview,
    "+ watch(TraceWriter)": bridge_trace,
    "+ watch(LoopDebugger)": bridge_debugger,
    STREAM_BASE: stream_bare,
    "streamed + watch(RunView)": stream_runview,
}
BASELINE = {name: (STREAM_BASE if name.startswith("streamed") else BASE) for name in VARIANTS}
BASELINE[STREAM_BASE] = STREAM_BASE


def _check() -> None:
    """Every bridged variant sees the whole run (a benchmark of a broken bridge is no use)."""
    events: list[Event] = []

    async def run() -> None:
        with watch(events.append):
            await _agent(3).ainvoke(_INPUT, _config(3))

    RUNNER.run(run())
    [end] = [e for e in events if isinstance(e, LoopFinished)]
    assert end.rounds == 4
    assert end.usage.requests == 4


def _timed(variant: Variant, rounds: int) -> Run:
    """The run to time: the agent is built here, outside the timed run (its cost is the same
    everywhere)."""
    return partial(variant, _agent(rounds), rounds)


def measure_bridge(sizes: Sequence[int], quick: bool) -> dict[tuple[str, int], Cell]:
    cells = {(name, size): Cell() for name in VARIANTS for size in sizes}
    names = list(VARIANTS)
    started = time.perf_counter()
    for rounds in sizes:
        repeats = BRIDGE_REPEATS.get(rounds, 3)
        if quick:
            repeats = max(3, repeats // 4)
        for done in range(repeats):
            shift = done % len(names)
            for name in names[shift:] + names[:shift]:
                wall, cpu = time_once(_timed(VARIANTS[name], rounds), rounds)
                cells[(name, rounds)].wall.append(wall)
                cells[(name, rounds)].cpu.append(cpu)
        for name in names:
            cells[(name, rounds)].peak = peak_per_round(_timed(VARIANTS[name], rounds), rounds)
        print(
            f"  {rounds:>5} rounds: {repeats} interleaved repeats, "
            f"{time.perf_counter() - started:.0f} s so far",
            file=sys.stderr,
        )
    return cells


def report_bridge(cells: dict[tuple[str, int], Cell], sizes: Sequence[int]) -> None:
    header = (
        f"{'variant':28} {'rounds':>6} {'wall µs/round':>13} {'min-max':>13} {'x base':>6} "
        f"{'cpu µs/round':>12} {'x base':>6} {'cpu min':>8} {'x base':>6} {'peak KiB/round':>14}"
    )
    print(header)
    print("-" * len(header))
    for name in VARIANTS:
        for rounds in sizes:
            cell, base = cells[(name, rounds)], cells[(BASELINE[name], rounds)]
            wall, cpu = statistics.median(cell.wall), statistics.median(cell.cpu)
            spread = f"{min(cell.wall):.0f}-{max(cell.wall):.0f}"
            print(
                f"{name:28} {rounds:>6} {wall:>13.0f} {spread:>13} "
                f"{wall / statistics.median(base.wall):>6.2f} {cpu:>12.0f} "
                f"{cpu / statistics.median(base.cpu):>6.2f} {min(cell.cpu):>8.0f} "
                f"{min(cell.cpu) / min(base.cpu):>6.2f} {cell.peak / 1024:>14.1f}"
            )


# -- time spent inside the bridge ----------------------------------------------------------
_CALLBACKS = (
    "on_chain_start",
    "on_chain_end",
    "on_chain_error",
    "on_chat_model_start",
    "on_llm_new_token",
    "on_llm_end",
    "on_llm_error",
    "on_tool_start",
    "on_tool_end",
    "on_tool_error",
)
INSIDE: dict[str, Variant] = {
    "watch(), no observer": bridge_only,
    "watch(RunView)": bridge_runview,
    "watch(TraceWriter)": bridge_trace,
    "watch(LoopDebugger)": bridge_debugger,
    "streamed + watch(RunView)": stream_runview,
}


def measure_inside(sizes: Sequence[int], repeats: int) -> dict[tuple[str, int], float]:
    """µs per round spent inside the bridge's callbacks (its observers included), timed
    around each callback: a direct figure, unlike the end-to-end ratios, which other
    processes' load blurs on a shared machine. Median of ``repeats`` runs."""
    spent = [0.0]
    originals = {name: getattr(EventBridge, name) for name in _CALLBACKS}

    def timed(method: Any) -> Any:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return wrapper

    for name, method in originals.items():
        setattr(EventBridge, name, timed(method))
    found: dict[tuple[str, int], float] = {}
    try:
        for rounds in sizes:
            for label, variant in INSIDE.items():
                samples = []
                for _ in range(repeats):
                    agent = _agent(rounds)
                    spent[0] = 0.0
                    RUNNER.run(variant(agent, rounds))
                    samples.append(spent[0] * 1e6 / rounds)
                found[(label, rounds)] = statistics.median(samples)
    finally:
        for name, method in originals.items():
            setattr(EventBridge, name, method)
    return found


# -- spans in ------------------------------------------------------------------------------
SPAN_SIZES = (10, 100)
SPAN_REPEATS = {10: 41, 100: 11}
"""Interleaved repeats per run length (``--quick`` takes a quarter, at least 3)."""


class NoOpProcessor(SpanProcessor):
    """A span processor that does nothing (the SDK's dispatch cost alone)."""

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


SPAN_BASE = "+ no-op processor"


def span_variants() -> dict[str, Callable[[], TracerProvider]]:
    """Each variant: a function building its tracer provider, processors attached."""

    def with_(processor: Callable[[], SpanProcessor | None]) -> Callable[[], TracerProvider]:
        def build() -> TracerProvider:
            provider = TracerProvider()
            made = processor()
            if made is not None:
                provider.add_span_processor(made)
            return provider

        return build

    dbg = LoopDebugger()
    sink: list[Event] = []
    return {
        "provider, no processor": with_(lambda: None),
        "+ no-op processor": with_(NoOpProcessor),
        "+ SpanSource, no observer": with_(lambda: SpanSource()),
        "+ SpanSource(RunView)": with_(lambda: SpanSource(RunView().apply)),
        "+ SpanSource(list.append)": with_(lambda: SpanSource(sink.append)),
        "+ SpanSource(LoopDebugger)": with_(lambda: SpanSource(dbg)),
    }


def measure_spans(quick: bool) -> dict[int, dict[str, tuple[float, float]]]:
    """Per run length and variant: the median wall-clock and CPU µs per span."""
    variants = span_variants()
    names = list(variants)
    found: dict[int, dict[str, tuple[float, float]]] = {}
    for rounds in SPAN_SIZES:
        repeats = max(3, SPAN_REPEATS[rounds] // 4) if quick else SPAN_REPEATS[rounds]
        cells = {name: Cell() for name in names}
        for repeat in range(repeats):
            shift = repeat % len(names)
            for name in itertools.chain(names[shift:], names[:shift]):
                tracer = variants[name]().get_tracer("bench")
                w0, c0 = time.perf_counter(), time.process_time()
                spans = trace_run(tracer, rounds)
                w1, c1 = time.perf_counter(), time.process_time()
                cells[name].wall.append((w1 - w0) / spans * 1e6)
                cells[name].cpu.append((c1 - c0) / spans * 1e6)
        found[rounds] = {n: (c.median, c.cpu_median) for n, c in cells.items()}
        base_wall, base_cpu = found[rounds][SPAN_BASE]
        print(f"\n{rounds} rounds ({1 + 2 * rounds} spans a run), {repeats} repeats")
        print(
            f"{'variant':30} {'µs/span wall':>13} {'µs/span CPU':>12} "
            f"{'over no-op, wall':>17} {'CPU':>7}"
        )
        for name in names:
            w, c = found[rounds][name]
            print(f"{name:30} {w:13.1f} {c:12.1f} {w - base_wall:17.1f} {c - base_cpu:7.1f}")
    return found


# -- the closing lines ---------------------------------------------------------------------
def bridge_figures(
    cells: dict[tuple[str, int], Cell], inside: dict[tuple[str, int], float], sizes: Sequence[int]
) -> list[Goal]:
    """The bridge's headline figures: watching with a view or a debugger against the bare
    run (CPU medians), and the time inside the bridge with a view."""

    def ratio(name: str, rounds: int) -> str:
        cpu = statistics.median(cells[(name, rounds)].cpu)
        return f"{cpu / statistics.median(cells[(BASE, rounds)].cpu):.2f}x"

    out = [
        no_goal(f"create_agent {name} / bare, CPU at {r:,} rounds", ratio(name, r))
        for name in ("+ watch(RunView)", "+ watch(LoopDebugger)")
        for r in sizes
    ]
    out += [
        no_goal(
            f"inside the bridge's callbacks, watch(RunView), at {r:,} rounds",
            f"{inside[('watch(RunView)', r)]:,.0f} µs a round",
        )
        for r in sizes
    ]
    return out


def span_figures(found: dict[int, dict[str, tuple[float, float]]]) -> list[Goal]:
    """Spans in: what ``SpanSource`` with a view or a debugger adds a span (CPU medians)."""
    return [
        no_goal(
            f"{name} over a no-op processor, CPU at {rounds:,} rounds",
            f"{by_name[name][1] - by_name[SPAN_BASE][1]:,.0f} µs a span",
        )
        for name in ("+ SpanSource(RunView)", "+ SpanSource(LoopDebugger)")
        for rounds, by_name in found.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke run")
    parser.add_argument("--only", choices=("langchain", "spans"), help="one half only")
    args = parser.parse_args()
    started = time.perf_counter()
    load_before = load()
    figures: list[Goal] = []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, one process")
    if args.only in (None, "langchain"):
        _check()
        for variant in VARIANTS.values():  # warm imports and caches
            RUNNER.run(variant(_agent(2), 2))
        sizes = BRIDGE_SIZES
        cells = measure_bridge(sizes, args.quick)
        print(
            "\nthe LangChain callback bridge: create_agent on an instant scripted model, "
            "one echo tool call per round\n"
        )
        report_bridge(cells, sizes)
        inside = measure_inside(sizes, 3 if args.quick else 7)
        print("\ntime inside the bridge's callbacks (observers included), µs per round:")
        print(f"  {'':28}" + "".join(f"{f'{r} rounds':>12}" for r in sizes))
        for label in INSIDE:
            print(f"  {label:28}" + "".join(f"{inside[(label, r)]:>12.0f}" for r in sizes))
        figures += bridge_figures(cells, inside, sizes)
    if args.only in (None, "spans"):
        print("\nspans in: SpanSource on the OpenTelemetry SDK's tracer")
        figures += span_figures(measure_spans(args.quick))
    print(
        f"\nload average before {load_before}, after {load()}; total "
        f"{time.perf_counter() - started:.0f} s"
    )
    print_goals(figures, "figures (the project set no goal for these)")


if __name__ == "__main__":
    main()
