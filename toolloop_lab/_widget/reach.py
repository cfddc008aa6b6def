"""Which runs the page's controls reach: whether a click on Stop, or a pause the loop
waits at, can ever be answered while the run goes on.

A click is a comm message the kernel must read while the run is under way. That depends
on where the run runs and on how the kernel reads the page's messages:

* a run :meth:`LoopDebugger.start` made runs as a background task: the cell has ended, the
  kernel is free, every click arrives;
* ``await agent.arun(...)`` in a cell runs on the kernel's own event loop (the loop the
  debugger was made on). ipykernel 7.4 and later read a comm message while a cell awaits
  (ipykernel 7.0 to 7.3 and 6 wait for the cell to end);
* ``agent.run(...)`` in a cell runs on a background loop while the kernel's thread waits
  for it, so a message the kernel reads on that thread waits too;
* JupyterLab 4.4 and later (and Notebook 7 on it) send comm messages to a kernel subshell
  (its "Kernel Comms over subshells" setting, on by default), which ipykernel 7 reads on a
  thread of its own: then every click arrives whatever the kernel's thread does. The
  debugger sees it happen: the page's ``hello`` comes in on another thread than its own.

A run the clicks cannot reach is never held at a pause (it would wait forever): its
controls are off, and the reason is shown. A LangChain or LangGraph run seen through the
bridge, or read from OpenTelemetry spans, is observed, never driven: nothing here can
pause or stop it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any, Final

from toolloop_lab._support.words import REACH, REACH_HINT

COMMS_DURING_AWAIT: Final = (7, 4)
"""The first ipykernel that reads a comm message while a cell awaits (7.3.0's
``Kernel.shell_main`` still queues it behind the cell's lock)."""


@dataclass(frozen=True, slots=True)
class Reach:
    """Whether Stop (``stop``) and pausing, Step and Continue (``pause``) can act on a
    run; when one cannot, ``code`` names why (a key of the words file's ``reach`` table)."""

    stop: bool
    pause: bool
    code: str | None = None
    version: str = ""
    """The kernel's version, where the reason names it."""

    @property
    def why(self) -> str | None:
        """The reason, in words (a tooltip); ``None`` when both can act."""
        if self.code is None:
            return None
        return REACH.get(self.code, self.code).replace("{version}", self.version or "?")

    @property
    def hint(self) -> str | None:
        """The reason, short (the hint next to the controls)."""
        return None if self.code is None else REACH_HINT.get(self.code, self.code)

    def to_dict(self) -> dict[str, Any]:
        """What the page's ``control.reach`` holds."""
        return {
            "stop": self.stop,
            "pause": self.pause,
            "why": self.why,
            "code": self.code,
            "hint": self.hint,
        }


FULL: Final = Reach(True, True)
"""Both can act (a run :meth:`LoopDebugger.start` made; nothing shown yet)."""


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """The notebook kernel this process is, as far as clicks go."""

    version: str
    """ipykernel's version, as it says it."""

    @property
    def comms_during_await(self) -> bool:
        """True when it reads a comm message while a cell awaits."""
        return _parsed(self.version) >= COMMS_DURING_AWAIT


def kernel_info() -> KernelInfo | None:
    """The running ipykernel kernel, or ``None`` outside one (a script, a test, a
    console): ipykernel is never imported here, only looked at when it is loaded."""
    module = sys.modules.get("ipykernel")
    base = sys.modules.get("ipykernel.kernelbase")
    kernel = getattr(base, "Kernel", None)
    try:
        running = kernel is not None and bool(kernel.initialized())
    except Exception:  # noqa: BLE001 - a foreign class: anything but yes is no
        running = False
    if not running:
        return None
    return KernelInfo(str(getattr(module, "__version__", "")))


def _parsed(version: str) -> tuple[int, ...]:
    """The leading numbers of a version (``7.4.0rc1`` -> ``(7, 4, 0)``)."""
    numbers = re.findall(r"\d+", version.split("+")[0])[:3]
    return tuple(int(n) for n in numbers)


def decide(
    *,
    source: str,
    connected: bool,
    on_home_loop: bool,
    kernel: KernelInfo | None,
    page_off_home: bool,
) -> Reach:
    """What the page's controls can do for a run that just started (not one
    :meth:`LoopDebugger.start` made, which they always reach).

    ``source`` is its ``LoopStarted.source``; ``connected``: its agent holds the debugger's
    pause hook; ``on_home_loop``: it runs on the loop the debugger was made on (a cell's
    ``await``), not on another thread's (``agent.run()``); ``page_off_home``: the page's
    messages arrive on another thread than the kernel's (a subshell).
    """
    if source == "otel":
        return Reach(False, False, "spans")
    if source != "loop":
        return Reach(False, False, "bridged")
    if kernel is None:
        return Reach(False, False, "no_kernel")
    if page_off_home:
        clicks = True
    elif on_home_loop:
        clicks = kernel.comms_during_await
    else:
        return Reach(False, False, "sync_run")
    if not clicks:
        return Reach(False, False, "old_kernel", kernel.version)
    if not connected:
        return Reach(True, False, "not_connected")
    return FULL
