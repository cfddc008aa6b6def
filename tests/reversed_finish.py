"""IPython start-up file for every kernel nbval starts (``notebookkit.py``): in it, tool
calls run at once finish in the reverse of the order they started in.

The loop runs a sync tool on a worker thread; which of a reply's concurrent calls finishes
first is up to the threads, so a tutorial that prints events in the order they came gives
a different output from run to run. Here the calls that start together (within a few
milliseconds, as a reply's concurrent calls do) each finish a little later than the one
after them: whatever a tutorial prints in completion order comes out reversed, and its
stored output no longer matches (``tests/test_tutorials.py``). ``TOOLLOOP_FINISH_LOG``
names a file that gets one line per group of calls reversed, so the test can tell the
reordering really happened.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import toolloop_lab._tools.dispatcher

_TOGETHER_S = 0.01
"""Calls started within this time of a group's first call belong to that group."""
_STEP_S = 0.03
"""How much later each call of a group finishes than the one started after it."""
_DEPTH = 5
"""Groups larger than this keep the order of their later calls."""

_run_in_executor = toolloop_lab._tools.dispatcher.run_in_executor
_lock = threading.Lock()
_group = {"started": -1.0, "size": 0}


def _place() -> int:
    """This call's position in its group (0 for the first)."""
    now = time.monotonic()
    with _lock:
        if now - _group["started"] > _TOGETHER_S:
            _group["started"], _group["size"] = now, 0
        place = int(_group["size"])
        _group["size"] += 1
    if place == 1 and (log := os.environ.get("TOOLLOOP_FINISH_LOG")):
        with open(log, "a", encoding="utf-8") as out:
            out.write("reversed a group\n")
    return place


async def _reversed(executor: Any, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    place = _place()
    try:
        return await _run_in_executor(executor, func, *args, **kwargs)
    finally:
        await asyncio.sleep(_STEP_S * max(_DEPTH - place, 0))


toolloop_lab._tools.dispatcher.run_in_executor = _reversed  # type: ignore[assignment]
