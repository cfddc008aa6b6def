"""``watch``: every LangChain run started inside a block, handed to observers.

``watch`` uses langchain-core's configure hook (``register_configure_hook``): while the
block runs, a context variable holds one :class:`~.handler.EventBridge`, and langchain-core
adds it to the callbacks of every run configured in that context (and of everything those
runs start), so no call needs a ``config`` argument. The hook is registered once, when this
module is imported; outside a block the variable is ``None`` and costs langchain-core one
lookup per run. Because it is a context variable, a run sees the block it was *started* in:
an ``asyncio`` task created inside the block is watched even if it ends later, a bare
thread started inside it is not (langchain-core's own executors copy the context).

To pass the handler yourself instead, make one: ``config={"callbacks": [EventBridge(dbg)]}``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

from langchain_core.tracers.context import register_configure_hook

from toolloop_lab._spend.pricing import PriceTable
from toolloop_lab._stream import checked_observers
from toolloop_lab.events import Observer

from .handler import EventBridge
from .run import Clock

_ACTIVE: Final[ContextVar[EventBridge | None]] = ContextVar("toolloop_lab_bridge", default=None)
register_configure_hook(_ACTIVE, inheritable=True)


@contextmanager
def watch(
    *observers: Observer, prices: PriceTable | None = None, clock: Clock = time.perf_counter
) -> Iterator[EventBridge]:
    """Feed ``observers`` the events of every LangChain or LangGraph run started inside the
    block: ``with watch(dbg): graph.invoke(inputs)`` shows the run live in a debugger (any
    observers: ``watch(dbg, TraceWriter("run.jsonl"))``). To pass the handler to one call
    instead: ``config={"callbacks": [EventBridge(dbg)]}`` (what a bridge can and cannot
    know is :class:`EventBridge`'s docstring).

    Blocks nest: an inner block's runs also reach the outer block's observers (once each).
    A hand-written loop's run still open when the block ends is closed here: failed with
    the block's exception, else finished with its last reply.
    """
    outer = _ACTIVE.get()
    joined = list(checked_observers(observers, spread="watch"))
    if outer is not None:
        joined += [o for o in outer.observers if not any(o is mine for mine in observers)]
    bridge = EventBridge(*joined, prices=prices, clock=clock)
    token = _ACTIVE.set(bridge)
    try:
        yield bridge
    except BaseException as exc:
        bridge.close(exc)
        raise
    else:
        bridge.close()
    finally:
        _ACTIVE.reset(token)
