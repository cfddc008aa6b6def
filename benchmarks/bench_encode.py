"""What writing an event costs: each event kind of a 20-round run, as a trace line.

Run: ``python benchmarks/bench_encode.py`` (a few seconds). The run is ``LLMAgent`` on
``benchkit.InstantChatModel`` with one ``echo`` call a round. For every event kind it times,
side by side in one process, ``Event.to_json()`` (orjson, what trace lines and the page's
events are made from) against the event schema's own pydantic serialiser
(``EVENT_ADAPTER.dump_json``, how ``to_json`` wrote them before), checks the bytes are the
same, and sums the five events of a tool round (``round_start``, ``model_call_start``,
``model_call``, ``tool_start``, ``tool_dispatch``). Not part of the test suite: timing
figures live here only.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial

from benchkit import RUNNER, InstantChatModel, load, script

from toolloop_lab import AgentConfig, LLMAgent, echo_tool
from toolloop_lab.events import Event, _adapter

EVENT_ADAPTER = _adapter()  # the events' own (de)serialiser, private to events.py

ROUND = ("round_start", "model_call_start", "model_call", "tool_start", "tool_dispatch")
CALLS = 2_000


def events_of_a_run(rounds: int = 20) -> dict[str, Event]:
    """One event of each kind, from the middle of a ``rounds``-round run."""
    seen: list[Event] = []
    model = InstantChatModel(replies=script(rounds, "done"))
    config = AgentConfig(tool_max_rounds=rounds + 1)
    agent = LLMAgent(model, [echo_tool()], config, observers=(seen.append,))
    RUNNER.run(agent.arun("go"))
    by_kind: dict[str, list[Event]] = {}
    for event in seen:
        by_kind.setdefault(event.kind, []).append(event)
    return {kind: events[len(events) // 2] for kind, events in by_kind.items()}


def per_call(write: Callable[[], object], repeats: int = 5) -> float:
    """Median µs per call of ``write`` over ``repeats`` batches of :data:`CALLS`."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(CALLS):
            write()
        times.append((time.perf_counter() - started) / CALLS * 1e6)
    return statistics.median(times)


def main() -> None:
    print(f"load {load()}; µs per event, median of 5 batches of {CALLS:,}")
    print(f"{'event':<18} {'to_json':>8} {'pydantic':>9} {'same bytes':>11}")
    totals = [0.0, 0.0]
    for kind, event in events_of_a_run().items():
        fast = per_call(event.to_json)
        slow = per_call(partial(EVENT_ADAPTER.dump_json, event))
        same = event.to_json() == EVENT_ADAPTER.dump_json(event)
        print(f"{kind:<18} {fast:8.1f} {slow:9.1f} {same!s:>11}")
        if kind in ROUND:
            totals[0] += fast
            totals[1] += slow
    print(f"{'a tool round (5)':<18} {totals[0]:8.1f} {totals[1]:9.1f}")


if __name__ == "__main__":
    main()
