"""What the loop's own contract costs a round, part by part, beside ``LLMAgent`` itself.

Run: ``python benchmarks/bench_parts.py`` (about 5 minutes on a 2-core machine; ``--quick``
for a short smoke run). ``bench_loop.py`` says how far ``LLMAgent`` is from the bare
langchain-core loop (the floor); this says how much of that distance the parts that every
view, budget and stop relies on take when nothing else runs. Each variant below is the
floor's own loop (same ``benchkit.InstantChatModel``, one ``echo`` call a round) with one
more part added to the one before, built from the package's real pieces:

1. **events**: the five events of a tool round (``round_start``, ``model_call_start``,
   ``model_call`` with the calls' arguments frozen, ``tool_start``, ``tool_dispatch``),
   each stamped with the run, round and time and kept, as ``RunState.emit`` does;
2. **copies**: the start event carries the messages new since the last call, as frozen
   dicts (``events.message_dicts``), so the events alone rebuild the transcript;
3. **usage**: each reply's usage read and priced (``call_events.priced_usage``, genai-prices)
   and added to the run's total, which the USD budget and every view read;
4. **task**: each tool call awaited in a task of its own, so a stop never waits on a tool;
5. **dispatcher**: the package's ``dispatch`` instead of the bare task: a tool's failure,
   timeout or unprintable result becomes an error ``ToolMessage``, its result is text the
   moment it returns, a sub-agent it starts knows its parent;

then ``LLMAgent`` with events on, which adds the rest: the budgets' gates, the pause points,
tool-call id checks, stuck-round detection, the run's start and end and its error guard.

The variants run interleaved in one process and one event loop (``bench_loop``'s harness),
and the figures are CPU-time medians (the loops do no I/O), so the ratios hold on a shared
machine. Not part of the test suite: timing lives here, never in tests.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

from bench_loop import (
    BUDGET_S,
    FLOOR,
    SIZES,
    Variant,
    _agent,
    agent_events,
    floor,
    measure_loops,
)
from benchkit import RUNNER, Cell, InstantChatModel, load, script
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from toolloop_lab import events as ev
from toolloop_lab._support.jsonsafe import frozen_json
from toolloop_lab.engine.call_events import priced_usage
from toolloop_lab.spend.usage import Usage
from toolloop_lab.tools.builtin import echo_tool
from toolloop_lab.tools.dispatcher import (
    DispatchHooks,
    DispatchOutcome,
    RunCaller,
    ToolBox,
    dispatch,
)

PARTS = ("events", "copies", "usage", "task", "dispatcher")
"""Added one at a time, in this order: each variant has every part before it too."""
MODEL = "gpt-4o-mini"


class _Run:
    """The least a run keeps: its events, the round, the clock, the total so far."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []
        self.round = 0
        self.t0 = time.perf_counter()
        self.sent = 0
        self.usage = Usage()

    def emit(self, kind: Callable[..., ev.Event], **fields: Any) -> None:
        self.events.append(
            kind(run_id="run", round=self.round, t=time.perf_counter() - self.t0, **fields)
        )


async def parts_loop(rounds: int, parts: Collection[str]) -> list[ev.Event]:
    """The floor's loop with ``parts`` added (see the module's docstring); its events."""
    tool = echo_tool()
    model = InstantChatModel(replies=script(rounds, "done"))
    bound = model.bind_tools([tool])
    box = ToolBox([tool]) if "dispatcher" in parts else None
    messages: list[BaseMessage] = [HumanMessage("go")]
    run, number, usage = _Run(), 0, Usage()
    events = "events" in parts
    while True:
        run.round += 1
        number += 1
        if events:
            run.emit(ev.RoundStarted, max_rounds=rounds + 1)
            new: tuple[Any, ...] = ()
            if "copies" in parts:
                new, run.sent = ev.message_dicts(messages[run.sent :]), len(messages)
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
            return run.events
        args = {v.id: v.args for v in views}
        for call in reply.tool_calls:
            messages.append(await _tool_call(tool, box, call, args, run, parts))


def _views(reply: AIMessage, run: _Run, number: int, usage: Usage) -> tuple[ev.ToolCallView, ...]:
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
    run: _Run,
    parts: Collection[str],
) -> ToolMessage:
    """One call answered: bare, in a task, or by the dispatcher (events as the loop emits)."""
    call_id = call["id"] or ""
    frozen = args.get(call_id, {})
    events = "events" in parts
    if box is not None:
        hooks = DispatchHooks(
            started=lambda c: (
                run.emit(ev.ToolStarted, tool_call_id=call_id, name="echo", args=frozen)
                if events
                else None
            ),
            done=lambda o: _dispatched(run, o) if events else None,
        )
        outcomes = await dispatch(
            [{**call, "args": frozen}], box, hooks=hooks, finished={}, caller=RunCaller("run", ())
        )
        return outcomes[0].message
    if events:
        run.emit(ev.ToolStarted, tool_call_id=call_id, name="echo", args=frozen)
    began = time.perf_counter()
    work = tool.ainvoke({**call, "type": "tool_call"})
    message = await (asyncio.ensure_future(work) if "task" in parts else work)
    assert isinstance(message, ToolMessage)
    if events:
        _dispatched(
            run,
            DispatchOutcome(message, "echo", frozen, "success", None, time.perf_counter() - began),
        )
    return message


def _dispatched(run: _Run, outcome: DispatchOutcome) -> None:
    content = str(outcome.message.content)
    run.emit(
        ev.ToolDispatched,
        tool_call_id=outcome.message.tool_call_id,
        name=outcome.name,
        args=outcome.args,
        status=outcome.status,
        error_reason=outcome.error_reason,
        duration_s=outcome.duration_s,
        output_chars=len(content),
        content=content,
    )


AGENT = "LLMAgent, events on (everything)"


def variants() -> dict[str, Variant]:
    """The floor, each part added in turn, then ``LLMAgent``."""
    out: dict[str, Variant] = {FLOOR: floor}
    for count in range(1, len(PARTS) + 1):
        out[f"+ {PARTS[count - 1]}"] = partial(parts_loop, parts=frozenset(PARTS[:count]))
    out[AGENT] = agent_events
    return out


def report(
    cells: Mapping[tuple[str, int], Cell], names: Sequence[str], sizes: Sequence[int]
) -> None:
    """CPU µs a round, the ratio to the floor and what each part added to it."""
    print(f"CPU µs per round (median), ratio to the floor, step from the line above; load {load()}")
    print(f"{'variant':<36}" + "".join(f"{f'{r:,} rounds':>24}" for r in sizes))
    for index, name in enumerate(names):
        row = f"{name:<36}"
        for rounds in sizes:
            base = cells[(FLOOR, rounds)].cpu_median
            cpu = cells[(name, rounds)].cpu_median
            step = (
                ""
                if index == 0
                else f" {cpu / base - cells[(names[index - 1], rounds)].cpu_median / base:+.3f}"
            )
            row += f"{f'{cpu:,.0f} {cpu / base:.3f}x{step}':>24}"
        print(row)


def check_faithful(rounds: int = 3) -> None:
    """Every part on, the loop emits the round events ``LLMAgent`` emits, in its order, with
    the same messages carried and the same spend: else the comparison would be unfair."""
    ours = RUNNER.run(parts_loop(rounds, PARTS))
    agent = RUNNER.run(_agent(rounds).arun("go")).events
    kept = {type(e) for e in ours}
    theirs = [e for e in agent if type(e) in kept]
    assert [e.kind for e in ours] == [e.kind for e in theirs], "the events differ"
    for mine, real in zip(ours, theirs, strict=True):
        for name in ("messages", "tool_calls", "usage", "accumulated", "args", "content"):
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
    check_faithful()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a quarter of the repeats")
    parser.add_argument("--rounds", type=int, nargs="+", default=list(SIZES))
    args = parser.parse_args()
    chosen = variants()
    cells, notes = measure_loops(chosen, args.rounds, args.quick, BUDGET_S)
    report(cells, list(chosen), args.rounds)
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
