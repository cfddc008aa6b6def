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
controls are off, and the reason is shown. A run whose agent the debugger is not connected
to (it sends the debugger its events some other way than as its observer) has no step hook:
Stop reaches it, pausing does not, and the page says how to connect it.

:class:`Holder` is the debugger's side of it for a run it did not start: ``LLMAgent(...,
observers=[dbg])`` then ``await agent.arun(...)`` (or ``agent.run(...)``) runs in a task the
debugger never made, the cell's own or the sync runner's. When such a run starts and is the
run shown, the holder decides (:func:`decide`) whether the page's clicks can reach it; if
they can, it takes the run's task (``asyncio.current_task()`` at its ``loop_start``) as the
one step mode holds and Stop cancels, for that run only. A nested run (a sub-agent called by
a tool) is never taken: a stop of its parent ends it, and its pauses are not the shown
run's. Stop cancels through :func:`~toolloop_lab._engine.stopping.request_stop`, on the
run's own loop, which acts only while that run still goes on in the task: a late click
never cancels what a cell does after the run. The run then raises
:class:`~toolloop_lab.errors.RunStopped` with its partial counts. A LangChain or
LangGraph run seen through the bridge, or read from OpenTelemetry spans, is observed, never
driven: nothing here can pause or stop it.
"""

from __future__ import annotations

import asyncio
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any, Final

from toolloop_lab._engine.stopping import request_stop
from toolloop_lab._support.words import REACH, REACH_HINT
from toolloop_lab._widget.steps import StepController
from toolloop_lab.events import LoopStarted

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


@dataclass(frozen=True, slots=True)
class _Held:
    """A run the controls act on: its id, the task it runs in and that task's loop."""

    run_id: str
    task: asyncio.Task[object]
    loop: asyncio.AbstractEventLoop


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Holder:
    """What the controls reach of the run shown, and the run they hold when it is not
    one :meth:`LoopDebugger.start` made."""

    def __init__(self, steps: StepController) -> None:
        self._steps = steps
        self._lock = threading.Lock()
        self._home_loop = _running_loop()
        """The loop the debugger was made on (a notebook's: the kernel's)."""
        self._home_thread = threading.get_ident()
        self.page_off_home = False
        """The page's last message came in on another thread than the kernel's."""
        self.reach: Reach = FULL
        """What the controls can do for the run shown."""
        self._held: _Held | None = None
        self._ended = False
        self._connected: str | None = None
        """The last run a connected agent started."""

    def heard_page(self) -> None:
        """A page's message came in (on the thread reading it now)."""
        self.page_off_home = threading.get_ident() != self._home_thread

    def connected(self, run_id: str) -> None:
        """Run ``run_id``, starting now, is a connected agent's (it has the step hook)."""
        self._connected = run_id

    def started(self, event: LoopStarted, *, own: asyncio.Task[object] | None) -> None:
        """The run shown started (its observer calls this inside the run): decide what
        the controls reach, and hold the run when they reach it. ``own`` is the task of
        the debugger's own :meth:`start`."""
        if event.parent_run_id is not None:
            return  # reached through its parent only
        loop = _running_loop()
        task = None if loop is None else asyncio.current_task()
        if own is not None and task is own:
            with self._lock:
                self.reach, self._held, self._ended = FULL, None, False
            return
        reach = decide(
            source=event.source,
            connected=event.run_id == self._connected,
            on_home_loop=loop is not None and loop is self._home_loop,
            kernel=kernel_info(),
            page_off_home=self.page_off_home,
        )
        held = None
        if reach.stop and task is not None and loop is not None:
            held = _Held(event.run_id, task, loop)
        with self._lock:
            self.reach, self._held, self._ended = reach, held, False
            self._steps.arm(task if held is not None and reach.pause else None)

    def ended(self, run_id: str) -> None:
        """The run shown ended (its final event): hold it no more."""
        with self._lock:
            held = self._held
            if held is None or held.run_id != run_id:
                return
            self._ended = True
            self._steps.disarm(held.task)

    def running(self) -> bool:
        """True while a held run goes on."""
        with self._lock:
            return self._held is not None and not self._ended

    def stop(self) -> bool:
        """Stop the held run (on its own loop); False when none goes on."""
        with self._lock:
            held = self._held
            if held is None or self._ended:
                return False

        def act() -> None:
            request_stop(held.task, held.run_id)

        if _running_loop() is held.loop:
            act()
            return True
        try:
            held.loop.call_soon_threadsafe(act)
        except RuntimeError:  # its loop was closed: the run is over
            return False
        return True
