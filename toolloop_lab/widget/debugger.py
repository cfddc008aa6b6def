"""``LoopDebugger``: the live ipywidgets view of one tool-loop run.

It is an observer (``LLMAgent(..., observers=[dbg])`` or ``dbg.attach(agent)``): each
event is folded into a :class:`RunView`, and the panels are redrawn from that view alone,
at most ``max_redraws_per_second`` times (see :mod:`.coalesce`), each redraw inside
``hold_sync`` so a child widget sends one message per redraw. Finishing, failing and
pausing always draw the complete state at once.

Saved notebook state stays small and the DOM bounded whatever the run's length: the
timeline shows one page of rows (``page_size``), the inspector renders only the selected
round, and long texts are cut to ``preview_chars`` unless "show all" is ticked.

Only the public agent API is used: ``observers``, ``subscribe``, ``add_pause_hook`` and
``arun`` (see :class:`DebuggableAgent`); the loop itself never imports this package.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol, TypeVar

import ipywidgets as widgets

from toolloop_lab.errors import describe
from toolloop_lab.events import Event, LoopFailed, LoopFinished, LoopStarted, Observer
from toolloop_lab.hooks import PauseHook, PausePoint
from toolloop_lab.runview import RoundRow, RunView
from toolloop_lab.trace import TraceRead, read_trace
from toolloop_lab.widget.coalesce import Clock, Coalescer, Scheduler, loop_scheduler
from toolloop_lab.widget.html import (
    PRUNING_PREVIEW,
    failure_html,
    gauges_html,
    header_html,
    inspector_html,
    pruning_html,
    round_label,
    timeline_html,
)
from toolloop_lab.widget.step import PauseMode, StepController
from toolloop_lab.widget.text import summary_text

__all__ = ["DebuggableAgent", "LoopDebugger"]

R_co = TypeVar("R_co", covariant=True)
R = TypeVar("R")

NEWEST: Final = -1
"""Inspector choice meaning "follow the newest round"."""

_PAUSE_OPTIONS: Final = (
    ("off", "off"),
    ("model calls", "model"),
    ("tool dispatch", "tools"),
    ("both", "both"),
)


class DebuggableAgent(Protocol[R_co]):
    """The public agent API the debugger needs (``LLMAgent`` has it)."""

    @property
    def observers(self) -> tuple[Observer, ...]: ...

    def subscribe(self, callback: Observer) -> Callable[[], None]: ...

    def add_pause_hook(self, hook: PauseHook) -> Callable[[], None]: ...

    async def arun(self, prompt_or_messages: str | Sequence[Any]) -> R_co: ...


def _title(text: str) -> Any:
    return widgets.HTML(f'<b style="font-size:13px">{text}</b>')


class LoopDebugger(widgets.VBox):  # type: ignore[misc]  # ipywidgets ships no type hints
    """Live debugger for one tool-loop run: display it, then run the agent."""

    def __init__(
        self,
        *,
        page_size: int = 20,
        preview_chars: int = 1_000,
        max_redraws_per_second: float = 10.0,
        pause_on: PauseMode = "off",
        clock: Clock = time.monotonic,
        schedule: Scheduler = loop_scheduler,
    ) -> None:
        if page_size < 1 or preview_chars < 1:
            raise ValueError("page_size and preview_chars must be >= 1")
        self.page_size = page_size
        self.preview_chars = preview_chars
        self._lock = threading.RLock()
        self._view = RunView()
        self._note: str | None = None
        self._last_event: Event | None = None
        self._selected: int | None = None
        self._anchor: int | None = None
        self._syncing = False
        self._task: asyncio.Task[Any] | None = None
        self._detachers: dict[int, Callable[[], None]] = {}
        self._controller = StepController(
            mode=pause_on, on_pause=self._on_pause, on_resume=self._on_resume
        )
        self._coalescer = Coalescer(
            self._draw, max_per_second=max_redraws_per_second, clock=clock, schedule=schedule
        )

        self._header = widgets.HTML()
        self._gauges = widgets.HTML()
        self._pause_on = widgets.ToggleButtons(
            options=_PAUSE_OPTIONS,
            value=pause_on,
            description="Pause before",
            style={"button_width": "8.5em"},
        )
        self._continue = widgets.Button(description="Continue", icon="play", disabled=True)
        self._step = widgets.Button(description="Step", icon="step-forward", disabled=True)
        self._stop = widgets.Button(description="Stop", icon="stop", disabled=True)
        self._timeline = widgets.HTML()
        self._older = widgets.Button(description="◀ older", disabled=True)
        self._newer = widgets.Button(description="newer ▶", disabled=True)
        self._latest = widgets.Button(description="newest", disabled=True)
        self._page_label = widgets.HTML()
        self._pick = widgets.Dropdown(
            options=(("newest", NEWEST),), value=NEWEST, description="Inspect"
        )
        self._show_all = widgets.Checkbox(value=False, description="show all", indent=False)
        self._inspector = widgets.HTML()
        self._pruning = widgets.HTML()
        self._failure = widgets.HTML()
        controls = widgets.HBox([self._pause_on, self._continue, self._step, self._stop])
        pager = widgets.HBox([self._older, self._newer, self._latest, self._page_label])
        inspect_bar = widgets.HBox([self._pick, self._show_all])
        titles = [_title("Round timeline"), _title("Message inspector")]
        super().__init__(
            [
                self._header,
                self._gauges,
                controls,
                titles[0],
                self._timeline,
                pager,
                titles[1],
                inspect_bar,
                self._inspector,
                self._pruning,
                self._failure,
            ]
        )
        self._drawn = [
            self._header,
            self._gauges,
            self._pause_on,
            self._continue,
            self._step,
            self._stop,
            self._timeline,
            self._older,
            self._newer,
            self._latest,
            self._page_label,
            self._pick,
            self._inspector,
            self._pruning,
            self._failure,
            self._pruning.layout,
            self._failure.layout,
        ]
        self._pause_on.observe(self._on_mode, names="value")
        self._pick.observe(self._on_pick, names="value")
        self._show_all.observe(self._on_show_all, names="value")
        self._continue.on_click(lambda _b: self.continue_())
        self._step.on_click(lambda _b: self.step())
        self._stop.on_click(lambda _b: self.stop())
        self._older.on_click(lambda _b: self.page_older())
        self._newer.on_click(lambda _b: self.page_newer())
        self._latest.on_click(lambda _b: self.page_newest())
        self._coalescer.force()

    # -- observer ---------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """Fold one event in and ask for a (coalesced) redraw; final events draw at once."""
        if not self._apply(event):
            return
        self._coalescer.request()
        if isinstance(event, (LoopFinished, LoopFailed)):
            self._coalescer.flush()

    def _apply(self, event: Event) -> bool:
        with self._lock:
            if event is self._last_event:  # attached twice: never count an event twice
                return False
            self._last_event = event
            view = self._view
            if (
                isinstance(event, LoopStarted)
                and view.run_id not in (None, event.run_id)
                and (view.done or view.status == "idle")
            ):
                self._reset()
            self._view.apply(event)
            return True

    def _reset(self) -> None:
        with self._lock:
            self._view = RunView()
            self._note = None
            self._last_event = None
            self._selected = None
            self._anchor = None

    # -- wiring -----------------------------------------------------------------------
    def attach(self, agent: DebuggableAgent[Any]) -> Callable[[], None]:
        """Feed this view from ``agent``'s runs (and hold them in step mode); returns detach."""
        key = id(agent)
        existing = self._detachers.get(key)
        if existing is not None:
            return existing
        removers: list[Callable[[], None]] = []
        if not any(o is self for o in agent.observers):
            removers.append(agent.subscribe(self))
        removers.append(agent.add_pause_hook(self._controller))

        def detach() -> None:
            for remove in removers:
                remove()
            removers.clear()
            self._detachers.pop(key, None)

        self._detachers[key] = detach
        return detach

    def start(self, agent: DebuggableAgent[R], prompt: str | Sequence[Any]) -> asyncio.Task[R]:
        """Run ``agent`` on ``prompt`` as a background task on the running event loop.

        The kernel stays responsive, so Continue, Step and Stop work during the run; the
        task's result (or exception) is there afterwards: ``await task`` or
        ``task.result()``.
        """
        if self._task is not None and not self._task.done():
            raise RuntimeError("a run is already in progress: stop() it or wait for it")
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise RuntimeError(
                "start() needs a running event loop (a notebook cell has one); elsewhere "
                "attach the debugger and `await agent.arun(...)`"
            ) from None
        temporary = id(agent) not in self._detachers
        detach = self.attach(agent)
        self._reset()
        task: asyncio.Task[R] = loop.create_task(
            agent.arun(prompt),
            name="toolloop-debugger-run",
        )
        self._task = task
        self._controller.arm(task)

        def done(finished: asyncio.Task[R]) -> None:
            if temporary:
                detach()
            if self._task is finished:  # a newer start() keeps its own arming
                self._controller.arm(None)
            if finished.cancelled():
                if self._view.status in ("idle", "running", "paused"):
                    self._note = "the run was stopped"
            else:
                exc = finished.exception()  # marks it retrieved; the task still raises it
                if exc is not None and self._view.failure is None:
                    self._note = f"the run raised {type(exc).__name__}: {describe(exc)}"
            self._coalescer.force()

        task.add_done_callback(done)
        self._coalescer.force()
        return task

    @property
    def task(self) -> asyncio.Task[Any] | None:
        """The task of the last :meth:`start`, if any."""
        return self._task

    # -- step mode --------------------------------------------------------------------
    @property
    def pause_on(self) -> PauseMode:
        """Where step mode pauses a run started with :meth:`start`."""
        return self._controller.mode

    @pause_on.setter
    def pause_on(self, mode: PauseMode) -> None:
        if mode not in dict(_PAUSE_OPTIONS).values():
            raise ValueError(f"pause_on must be one of off, model, tools, both; got {mode!r}")
        self._controller.mode = mode
        self._coalescer.force()

    @property
    def paused_at(self) -> PausePoint | None:
        """Where the loop waits right now, if it does."""
        return self._controller.paused_at

    def _on_pause(self, point: PausePoint) -> None:
        with self._lock:
            self._view.pause(point)
        self._coalescer.force()

    def _on_resume(self) -> None:
        with self._lock:
            self._view.resume()
        self._coalescer.request()

    def step(self) -> bool:
        """Let the paused loop go on to the next pause point."""
        return self._controller.step()

    def continue_(self) -> bool:
        """Turn step mode off and let the loop run to its end."""
        released = self._controller.continue_()
        self._coalescer.force()
        return released

    def stop(self) -> bool:
        """Cancel the run cleanly; the view then shows the partial counts."""
        task = self._task
        if task is not None and not task.done():
            loop = task.get_loop()
            try:
                same = asyncio.get_running_loop() is loop
            except RuntimeError:
                same = False
            if same:
                task.cancel()
            else:
                loop.call_soon_threadsafe(task.cancel)
            return True
        return self._controller.stop()

    # -- navigation -------------------------------------------------------------------
    def _page(self) -> tuple[list[RoundRow], int]:
        rows = self._view.rounds
        last_start = max(0, len(rows) - self.page_size)
        start = last_start if self._anchor is None else min(self._anchor, last_start)
        return rows[start : start + self.page_size], start

    def page_older(self) -> None:
        """Show the page of rows before the one shown."""
        with self._lock:
            _rows, start = self._page()
            self._anchor = max(0, start - self.page_size)
        self._coalescer.force()

    def page_newer(self) -> None:
        """Show the page of rows after the one shown (the newest page follows the run)."""
        with self._lock:
            _rows, start = self._page()
            nxt = start + self.page_size
            self._anchor = None if nxt >= len(self._view.rounds) - self.page_size else nxt
        self._coalescer.force()

    def page_newest(self) -> None:
        """Follow the newest rows again."""
        with self._lock:
            self._anchor = None
        self._coalescer.force()

    @property
    def selected_round(self) -> int | None:
        """The round the inspector shows; ``None`` follows the newest."""
        return self._selected

    @selected_round.setter
    def selected_round(self, number: int | None) -> None:
        with self._lock:
            self._selected = None if number is None or number == NEWEST else int(number)
        self._coalescer.force()

    @property
    def show_all(self) -> bool:
        """True shows long texts whole instead of cut to ``preview_chars``."""
        return bool(self._show_all.value)

    @show_all.setter
    def show_all(self, value: bool) -> None:
        self._show_all.value = bool(value)

    def _on_mode(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self.pause_on = change["new"]

    def _on_pick(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self.selected_round = change["new"]

    def _on_show_all(self, _change: dict[str, Any]) -> None:
        self._coalescer.force()

    # -- drawing ----------------------------------------------------------------------
    @property
    def view(self) -> RunView:
        """The fold of the events seen so far (read it, do not change it)."""
        return self._view

    @property
    def draws(self) -> int:
        """Redraws so far."""
        return self._coalescer.draws

    @property
    def redraw_requests(self) -> int:
        """Redraws asked for so far (one per event, plus UI actions)."""
        return self._coalescer.requests

    def _selected_row(self) -> RoundRow | None:
        view = self._view
        if self._selected is not None:
            row = view.row(self._selected)
            if row is not None:
                return row
        return view.rounds[-1] if view.rounds else None

    def _draw(self) -> None:
        with self._lock:
            view = self._view
            limit = None if self._show_all.value else self.preview_chars
            rows, start = self._page()
            total = len(view.rounds)
            selected = self._selected_row()
            options: list[tuple[str, int]] = [("newest", NEWEST)]
            options += [(round_label(r), r.number) for r in rows]
            if self._selected is not None and self._selected not in {n for _l, n in options}:
                row = view.row(self._selected)
                if row is not None:
                    options.insert(1, (round_label(row), row.number))
            if rows:
                page = f"rows {start + 1} to {start + len(rows)} of {total}"
                page += " · following the newest" if self._anchor is None else ""
            else:
                page = "no rows yet"
            pruning = pruning_html(view, limit=None if self._show_all.value else PRUNING_PREVIEW)
            failure = failure_html(view, limit=limit)
            paused = self._controller.paused
            running = self._task is not None and not self._task.done()
            with contextlib.ExitStack() as stack:
                for widget in self._drawn:
                    stack.enter_context(widget.hold_sync())
                self._syncing = True
                try:
                    self._header.value = header_html(view, limit=limit, note=self._note)
                    self._gauges.value = gauges_html(view)
                    self._pause_on.value = self._controller.mode
                    self._continue.disabled = not paused
                    self._step.disabled = not paused
                    self._stop.disabled = not (paused or running)
                    self._stop.button_style = "" if self._stop.disabled else "danger"
                    self._timeline.value = timeline_html(
                        view, rows, selected=selected.number if selected else None
                    )
                    self._older.disabled = start == 0
                    self._newer.disabled = self._anchor is None
                    self._latest.disabled = self._anchor is None
                    self._page_label.value = page
                    if tuple(self._pick.options) != tuple(options):
                        self._pick.options = tuple(options)
                    values = {n for _label, n in options}
                    self._pick.value = self._selected if self._selected in values else NEWEST
                    self._inspector.value = inspector_html(view, selected, limit=limit)
                    self._pruning.value = pruning
                    self._pruning.layout.display = "" if pruning else "none"
                    self._failure.value = failure
                    self._failure.layout.display = "" if failure else "none"
                finally:
                    self._syncing = False

    def redraw(self) -> None:
        """Draw the complete current state now."""
        self._coalescer.force()

    @property
    def panels(self) -> dict[str, str]:
        """Every panel's current widget value, by name (what the frontend shows)."""
        return {
            "header": self._header.value,
            "gauges": self._gauges.value,
            "timeline": self._timeline.value,
            "pager": self._page_label.value,
            "picker": " | ".join(label for label, _n in self._pick.options),
            "inspector": self._inspector.value,
            "pruning": self._pruning.value,
            "failure": self._failure.value,
        }

    # -- replay -----------------------------------------------------------------------
    @classmethod
    def from_trace(
        cls,
        source: Iterable[Event] | TraceRead | str | os.PathLike[str],
        *,
        run_id: str | None = None,
        **options: Any,
    ) -> LoopDebugger:
        """A debugger showing a finished run, from its events or a saved JSONL trace.

        With several runs in the source, ``run_id`` picks one (default: the last that
        started), just as a live debugger ends up showing the last run it saw.
        """
        note = None
        if isinstance(source, (str, os.PathLike)):
            source = read_trace(source)
        if isinstance(source, TraceRead):
            events: Sequence[Event] = source.run(run_id)
            if source.skipped:
                note = f"{len(source.skipped)} unreadable trace line(s) skipped"
                if source.partial_line is not None:
                    note += " (a partial last line: the writer stopped mid-run)"
        else:
            events = list(source)
            wanted = run_id
            if wanted is None:
                starts = [e.run_id for e in events if isinstance(e, LoopStarted)]
                wanted = starts[-1] if starts else (events[-1].run_id if events else None)
            events = [e for e in events if e.run_id == wanted]
        debugger = cls(**options)
        for event in events:
            debugger._apply(event)
        debugger._note = note
        debugger.redraw()
        return debugger

    # -- text -------------------------------------------------------------------------
    def summary(self) -> str:
        """A concise plain-text summary (what frontends without widgets show)."""
        with self._lock:
            return summary_text(self._view, note=self._note)

    def __repr__(self) -> str:
        if "_view" not in self.__dict__:  # during construction
            return "LoopDebugger()"
        return self.summary()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text("LoopDebugger(...)" if cycle else self.summary())

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["text/plain"] = self.summary()
        return data

    # -- lifecycle --------------------------------------------------------------------
    def close(self) -> None:
        """Close every child widget (and their layouts and styles) and detach."""
        for detach in list(self._detachers.values()):
            detach()
        for widget in _descendants(self):
            for part in ("layout", "style"):
                sub = getattr(widget, part, None)
                if isinstance(sub, widgets.Widget):
                    sub.close()
            if widget is not self:
                widget.close()
        super().close()


def _descendants(root: Any) -> list[Any]:
    """``root`` and every widget inside it, depth first."""
    out = [root]
    for child in getattr(root, "children", ()):
        out.extend(_descendants(child))
    return out
