"""What the loop's own contract costs a round, part by part, beside ``LLMAgent`` itself.

Run: ``python benchmarks/bench_parts.py`` (about 2 minutes on a 2-core machine; ``--quick``
for a short smoke run). ``bench_loop.py`` says how far ``LLMAgent`` is from the bare
langchain-core loop (the floor); this says how much of that distance the parts that every
view, budget and stop relies on take when nothing else runs: the floor under
``bench_loop.py``'s goals. Where that least loop alone is above a goal, ``LLMAgent`` cannot
meet it without giving up a part. Each variant below is the
floor's own loop (same ``benchkit.InstantChatModel``, one ``echo`` call a round) with one
more part added to the one before, built from the package's real pieces:

1. **events**: the five events of a tool round (``round_start``, ``model_call_start``,
   ``model_call`` with the calls' arguments frozen, ``tool_start``, ``tool_dispatch``) and
   the run's ``loop_start`` and ``loop_finish``, each stamped with the run, round and time,
   kept and handed to an observer by the package's own ``RunState``, as in the loop;
2. **copies**: the start event carries the messages new since the last call, as frozen
   dicts (``events.message_dicts``), so the events alone rebuild the transcript;
3. **usage**: each reply's usage read and priced (``call_events.priced_usage``, genai-prices)
   and added to the run's total, which the USD budget and every view read;
4. **task**: each tool call awaited in a task of its own, so a stop never waits on a tool;
5. **dispatcher**: the package's ``dispatch`` instead of the bare task: a tool's failure,
   timeout or unprintable result becomes an error ``ToolMessage``, its result is text the
   moment it returns, a sub-agent it starts knows its parent;

then that least loop with a JSONL trace, and with a headless ``LoopDebugger``, as observers;
then ``LLMAgent`` with events on, which adds the rest (the budgets' gates, the pause points,
tool-call id checks, stuck-round detection, the run's start and end and its error guard),
and with a trace and a debugger. Before timing anything, :func:`check_faithful` makes sure
the least loop, every part on, emits what ``LLMAgent`` emits (``tests/test_bench_parts.py``
runs that check with the suite).

The variants run interleaved in one process and one event loop (``bench_loop``'s harness),
and the figures are CPU-time medians (the loops do no I/O), so the ratios hold on a shared
machine. It prints CPU µs a round, the ratio to the floor and what each step adds, then
``bench_loop.py``'s goals judged on ``LLMAgent``, each with the least loop's own figure
beside it. Not part of the test suite: timing lives here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from bench_loop import (
    BUDGET_S,
    EVENTS,
    FLOOR,
    LOOP_GOALS,
    SIZES,
    WIDGET,
    Variant,
    _agent,
    _debugger,
    agent_events,
    agent_trace,
    agent_widget,
    floor,
    measure_loops,
)
from bench_loop import TRACE as LOOP_TRACE
from benchkit import RUNNER, Cell, Goal, InstantChatModel, goal, load, print_goals, script
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from toolloop_lab import Usage, echo_tool
from toolloop_lab import events as ev
from toolloop_lab._engine.call_events import priced_usage, tool_started
from toolloop_lab._engine.run_state import RunState
from toolloop_lab._stream import finish_outcome
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab._tools.callers import RunCaller
from toolloop_lab._tools.dispatcher import DispatchHooks, DispatchOutcome, ToolBox, dispatch

PARTS = ("events", "copies", "usage", "task", "dispatcher")
"""Added one at a time, in this order: each variant has every part before it too."""
MODEL = "gpt-4o-mini"


async def parts_loop(
    rounds: int, parts: Collection[str], observer: Callable[[ev.Event], None] | None = None
) -> list[ev.Event]:
    """The floor's loop with ``parts`` added (see the module's docstring); its events."""
    tool = echo_tool()
    model = InstantChatModel(replies=script(rounds, "done"))
    bound = model.bind_tools([tool])
    box = ToolBox([tool]) if "dispatcher" in parts else None
    # the package's own run state: it stamps, keeps and hands on each event, as in the loop
    run = RunState((observer,) if observer is not None else (), [HumanMessage("go")])
    messages: list[BaseMessage] = run.messages
    number, usage = 0, Usage()
    events = "events" in parts
    if events:
        _started(run, rounds + 1)
    while True:
        run.round += 1
        number += 1
        if events:
            run.emit(ev.RoundStarted, max_rounds=rounds + 1)
            new: tuple[Any, ...] = ()
            if "copies" in parts:
                new = run.unsent_messages()
            run.emit(
                ev.ModelCallStarted,
                call=number,
                purpose="round",
                model_name=MODEL,
                tools=("echo",),
                messages=new,
            )
        reply = await bound.ainvoke(messages)
        assert isinstance(reply, AIMessage)
        messages.append(reply)
        if "usage" in parts:
            _name, usage = priced_usage(reply, messages, model=model, fallback=MODEL, prices=None)
            run.usage = run.usage + usage
        views = _views(reply, run, number, usage) if events else ()
        if not reply.tool_calls:
            if events:
                _finished(run, reply, "copies" in parts)
            return run.events
        args = {v.id: v.args for v in views}
        for call in reply.tool_calls:
            messages.append(await _tool_call(tool, box, call, args, run, parts))


def _started(run: RunState, max_rounds: int) -> None:
    run.emit(
        ev.LoopStarted,
        model_name=MODEL,
        tools=("echo",),
        max_rounds=max_rounds,
        token_budget=None,
        context_window=None,
        usd_limit=None,
        prune_tools=(),
        input_messages=1,
        started_at=datetime.now(UTC).isoformat(),
    )


def _finished(run: RunState, reply: AIMessage, copies: bool) -> None:
    run.emit(
        ev.LoopFinished,
        final_text=str(reply.text),
        rounds=run.round,
        usage=run.usage,
        budget_exhausted=False,
        synthesis_was_run=False,
        synthesis_reason=None,
        outcome=finish_outcome(budget_exhausted=False, synthesis_was_run=False),
        final_empty=False,
        final_truncated=False,
        messages=run.unsent_messages() if copies else (),
    )


def _views(
    reply: AIMessage, run: RunState, number: int, usage: Usage
) -> tuple[ev.ToolCallView, ...]:
    views = tuple(
        ev.ToolCallView(id=c["id"] or "", name=c["name"], args=frozen_json(c["args"]))
        for c in reply.tool_calls
    )
    run.emit(
        ev.ModelCalled,
        call=number,
        purpose="round",
        model_name=MODEL,
        usage=usage,
        accumulated=run.usage,
        latency_s=0.0,
        text=str(reply.text),
        tool_calls=views,
        finish_reason="stop",
        stuck=False,
    )
    return views


async def _tool_call(
    tool: Any,
    box: ToolBox | None,
    call: Any,
    args: Mapping[str, Any],
    run: RunState,
    parts: Collection[str],
) -> ToolMessage:
    """One call answered: bare, in a task, or by the dispatcher (events as the loop emits)."""
    call_id = call["id"] or ""
    frozen = args.get(call_id, {})
    events = "events" in parts
    if box is not None:
        hooks = DispatchHooks(
            started=lambda c: (
                tool_started(run.emit, call_id=call_id, name="echo", args=frozen)
                if events
                else None
            ),
            done=lambda o: run.emit_dispatch(o) if events else None,
        )
        outcomes = await dispatch(
            [{**call, "args": frozen}],
            box,
            hooks=hooks,
            finished={},
            caller=RunCaller(run.run_id, ()),
        )
        return outcomes[0].message
    if events:
        tool_started(run.emit, call_id=call_id, name="echo", args=frozen)
    began = time.perf_counter()
    work = tool.ainvoke({**call, "type": "tool_call"})
    message = await (asyncio.ensure_future(work) if "task" in parts else work)
    assert isinstance(message, ToolMessage)
    if events:
        took = time.perf_counter() - began
        run.emit_dispatch(DispatchOutcome(message, "echo", frozen, "success", None, took))
    return message


AGENT = "LLMAgent, events on (everything)"
TRACE = "+ JSONL trace"
DEBUGGER = "+ LoopDebugger (headless)"
_TRACES = tempfile.TemporaryDirectory(prefix="bench_parts_")


async def _with_trace(run: Callable[..., Any], rounds: int) -> None:
    """``run`` with a fresh ``TraceWriter`` observing it (one file a run, as in a notebook)."""
    from toolloop_lab import TraceWriter

    path = Path(_TRACES.name) / "trace.jsonl"
    writer = TraceWriter(path)
    try:
        await run(rounds, observer=writer)
    finally:
        writer.close()
        path.unlink()


async def _with_debugger(run: Callable[..., Any], rounds: int) -> None:
    """``run`` with the one headless ``LoopDebugger`` every run shares observing it."""
    await run(rounds, observer=_debugger())


def variants() -> dict[str, tuple[Variant, str | None]]:
    """Each variant and the one its step is measured from: the floor, each part added in
    turn, a trace and a debugger on the last of them, then ``LLMAgent`` likewise."""
    out: dict[str, tuple[Variant, str | None]] = {FLOOR: (floor, None)}
    before = FLOOR
    for count in range(1, len(PARTS) + 1):
        name = f"+ {PARTS[count - 1]}"
        out[name] = (partial(parts_loop, parts=frozenset(PARTS[:count])), before)
        before = name
    every = partial(parts_loop, parts=frozenset(PARTS))
    out[f"  {TRACE}"] = (partial(_with_trace, every), before)
    out[f"  {DEBUGGER}"] = (partial(_with_debugger, every), before)
    out[AGENT] = (agent_events, before)
    out[f"  {TRACE} "] = (agent_trace, AGENT)
    out[f"  {DEBUGGER} "] = (agent_widget, AGENT)
    return out


def report(
    cells: Mapping[tuple[str, int], Cell],
    bases: Mapping[str, str | None],
    sizes: Sequence[int],
) -> None:
    """CPU µs a round, the ratio to the floor and what each step added to it."""
    print(f"CPU µs per round (median), ratio to the floor, step from its base; load {load()}")
    print(f"{'variant':<36}" + "".join(f"{f'{r:,} rounds':>24}" for r in sizes))
    for name, base in bases.items():
        row = f"{name:<36}"
        for rounds in sizes:
            floor_cpu = cells[(FLOOR, rounds)].cpu_median
            cpu = cells[(name, rounds)].cpu_median
            step = ""
            if base is not None:
                step = f" {(cpu - cells[(base, rounds)].cpu_median) / floor_cpu:+.3f}"
            row += f"{f'{cpu:,.0f} {cpu / floor_cpu:.3f}x{step}':>24}"
        print(row)


LEAST = f"+ {PARTS[-1]}"
"""The least loop: the floor with every part."""
JUDGED = {
    EVENTS: (AGENT, LEAST),
    LOOP_TRACE: (f"  {TRACE} ", f"  {TRACE}"),
    WIDGET: (f"  {DEBUGGER} ", f"  {DEBUGGER}"),
}
"""Each of ``bench_loop.py``'s goals: the ``LLMAgent`` variant it judges and the least
loop's variant that does the same work."""


def goals(cells: Mapping[tuple[str, int], Cell], sizes: Sequence[int]) -> list[Goal]:
    """``bench_loop.py``'s goals on this run's ``LLMAgent`` figures, the least loop's beside."""

    def ratio(name: str, rounds: int) -> float:
        return cells[(name, rounds)].cpu_median / cells[(FLOOR, rounds)].cpu_median

    out: list[Goal] = []
    for name, limit in LOOP_GOALS:
        agent, least = JUDGED[name]
        out += [
            goal(
                f"{name} / floor at {r:,} rounds",
                ratio(agent, r),
                at_most=limit,
                note=f"; the required parts alone: {ratio(least, r):.2f}x",
            )
            for r in sizes
        ]
    return out


def check_faithful(rounds: int = 3, parts: Collection[str] = PARTS) -> None:
    """With ``parts`` (every part, by default) the loop emits the events ``LLMAgent``
    emits, in its order, with the same messages carried and the same spend, and a view
    reads the same run of them: else the comparison would be unfair. ``AssertionError``
    names the first difference. ``tests/test_bench_parts.py`` runs it, so the least loop
    cannot drift from ``LLMAgent`` unnoticed."""
    from toolloop_lab import RunView

    ours = RUNNER.run(parts_loop(rounds, parts))
    agent = RUNNER.run(_agent(rounds).arun("go")).events
    assert [e.kind for e in ours] == [e.kind for e in agent], "the events differ"
    mine_view, real_view = RunView.from_events(ours), RunView.from_events(agent)
    assert mine_view.status == real_view.status == "finished"
    assert mine_view.rounds_run == real_view.rounds_run == rounds + 1  # and the answer
    theirs = agent
    for mine, real in zip(ours, theirs, strict=True):
        for name in (
            *("messages", "tool_calls", "usage", "accumulated", "args", "content"),
            *("round", "rounds", "max_rounds", "final_text", "outcome"),
        ):
            if hasattr(real, name):
                assert _same(getattr(mine, name), getattr(real, name)), (mine.kind, name)


def _same(mine: Any, real: Any) -> bool:
    """Equal, but for the id langchain-core gives each reply as the run makes it."""
    if isinstance(mine, tuple) and mine and isinstance(mine[0], Mapping):
        return len(mine) == len(real) and all(map(_same, mine, real))
    if isinstance(mine, Mapping) and isinstance(mine.get("data"), Mapping):
        return {**mine["data"], "id": None} == {**real["data"], "id": None}
    return bool(mine == real)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the repeats")
    parser.add_argument("--rounds", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    check_faithful()
    chosen = variants()
    runs = {name: variant for name, (variant, _base) in chosen.items()}
    cells, notes = measure_loops(runs, args.rounds, args.quick, BUDGET_S)
    report(cells, {name: base for name, (_variant, base) in chosen.items()}, args.rounds)
    for note in notes:
        print(f"note: {note}")
    print_goals(goals(cells, args.rounds), "goals (ratios of CPU-time medians)")


if __name__ == "__main__":
    main()
