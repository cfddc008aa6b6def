"""The debugger's link to the browser: what Python sends, and what the page asks.

Python sends only new events, in batches of at most :data:`~.wire.MAX_BATCH_EVENTS`, at
most ``max_messages_per_second`` messages a second (:mod:`.coalesce`); each message also
carries the step state (a pause, a resume, the answer to the page's last request). A page
that opens (or reopens) says ``hello`` and is sent everything again, from the start; a new
run bumps the epoch, so a page drops what it holds of the old one.

Each message also carries the run list's rows that changed since the previous one (every
row after a hello; :mod:`.runs`): the rows are folded when a message goes out, never
per event, so a session's other runs (nested ones, a pinned view's newer ones) cost the
observer one append an event.

Saved notebook state stays small whatever the run's length and however many runs: live
events are messages, not traits; at the end of a run the newest rounds of the run shown
and the newest rows of the run list that fit in ``saved_state_bytes`` (each) are handed to
the widget once (``keep``), in their own paced slot after the last batch.

What the page sends: ``hello``; ``control`` (Continue, Step, Stop: ``on_control``); and
``intervene``, ``fork``, ``show_run`` or ``compare`` requests (``on_request``), whose
:class:`~.requests.Answer`, a refusal or a failure included, goes back with the next
message. Every answer carries the number the page gave its request (a request of a type
the debugger does not take, and one whose handler raised, are answered too), and every
answer given since the last message goes with the next one (``answers``): the page waits
for each. A click never raises in the kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolloop_lab._support.errortext import explain
from toolloop_lab._widget.coalesce import Coalescer, Scheduler
from toolloop_lab._widget.requests import REQUEST_TYPES, Answer, refusal, request_id, unknown_type
from toolloop_lab._widget.runs import RowFeed, let_go_text
from toolloop_lab._widget.shown import ShownRun
from toolloop_lab._widget.wire import (
    MAX_BATCH_EVENTS,
    event_payload,
    messages_left_out,
    saved_tail,
)

MAX_ANSWERS = 64
"""The most answers one message carries (the newest): more requests than that between two
messages is no page's doing."""


@dataclass(frozen=True, slots=True)
class Endpoints:
    """What the channel sends through and hands on: the widget's side of the link."""

    send: Callable[[dict[str, Any]], None]
    """Send one message to every page showing the widget."""
    silent: Callable[[], bool]
    """True when no page can ever receive a message (no kernel, or closed)."""
    state: Callable[[], dict[str, Any]]
    """The step state every message carries."""
    keep: Callable[[list[Any], int, int, list[Any], int], None]
    """Keep the end of a finished run (its events, and the rounds left out) and the newest
    rows of the run list (and the runs left out) as saved state."""
    on_control: Callable[[dict[Any, Any]], Answer]
    """Continue, Step or Stop, as the page sent it (answered when the page numbered it)."""
    on_request: Callable[[dict[Any, Any]], Answer]
    """Carry out a change, a fork, a run to show or a comparison the page asked for;
    refusals are answers."""
    heard: Callable[[], None] = lambda: None
    """A page's message came in (called on the thread the kernel reads it on)."""


class Channel:
    """Paced batches of a run's events to the page, and the page's messages back."""

    def __init__(
        self,
        run: ShownRun,
        ends: Endpoints,
        *,
        max_text_chars: int,
        saved_state_bytes: int,
        max_messages_per_second: float,
        schedule: Scheduler,
    ) -> None:
        self._run = run
        self._ends = ends
        self.max_text_chars = max_text_chars
        self.saved_state_bytes = saved_state_bytes
        self._epoch = run.epoch
        self._sent = 0
        self._save_pending = False
        self.frontend = False
        """True once a page said hello (only then is the static snapshot worth updating)."""
        self._answer: dict[str, Any] | None = None
        """The newest answer (every message carries it, as ``answer``)."""
        self._answers: list[dict[str, Any]] = []
        """The answers no message carried yet (the next one carries them, as ``answers``)."""
        self._answer_due = False
        """An answer no message carried yet."""
        self.rows = RowFeed(max_text_chars)
        """What the page holds of the run list."""
        # 1% slower than asked, so drift between the pacing clock (monotonic) and the wall
        # clock that stamps kernel messages never shows max + 1 messages in one second
        self.pacer = Coalescer(
            self._flush,
            max_per_second=max_messages_per_second * 0.99,
            clock=run.clock,
            schedule=schedule,
        )

    def request(self) -> None:
        """Ask for a send at the paced rate; send at once when no timer can be armed."""
        pacer = self.pacer
        pacer.request()
        if pacer.dirty and not pacer.armed:
            pacer.flush()

    def finished(self) -> None:
        """The run ended: keep its saved state, in its own paced slot after the last batch."""
        self._save_pending = True
        self.request()

    def keep_saved(self) -> None:
        """Hand the end of the finished run to the widget as saved state (bounded)."""
        run = self._run
        with run.lock:
            events = list(run.events)
            session = run.session
            rows, runs_left_out = self.rows.saved(
                session.summaries(), session.left_out, self.saved_state_bytes
            )
        saved, omitted = saved_tail(events, self.max_text_chars, self.saved_state_bytes)
        messages = messages_left_out(events, saved) if omitted else 0
        self._ends.keep(saved, omitted, messages, rows, runs_left_out)

    def _flush(self) -> None:
        """One message: the next batch of events, else the saved state of a finished run,
        else the step state alone (a pause, a resume)."""
        run = self._run
        with run.lock:
            if self._epoch != run.epoch:  # a new run: everything of it is still to send
                self._epoch, self._sent = run.epoch, 0
            if self._sent >= len(run.events) and self._save_pending:
                self._save_pending = False
                self.keep_saved()
                if self._answer_due:  # an answer came meanwhile: it goes in the next slot
                    self.request()
                return
            if self._ends.silent():
                return
            message = self._next_message()
            more = self._sent < len(run.events) or self._save_pending
        self._ends.send(message)
        if more:
            self.request()

    def _next_message(self) -> dict[str, Any]:
        """The next batch of events and the step state (under the run's lock)."""
        run = self._run
        first = self._sent
        batch = run.events[first : first + MAX_BATCH_EVENTS]
        self._sent = first + len(batch)
        self._answer_due = False
        message = {
            "type": "events",
            "epoch": run.epoch,
            "first": first,
            "reset": first == 0,
            "events": [event_payload(e, self.max_text_chars) for e in batch],
            "now": run.now(),
            "control": {**self._ends.state(), "answer": self._answer, "answers": self._answers},
        }
        self._answers = []
        session = run.session
        runs = self.rows.next(
            session.summaries(), session.left_out, run.pinned, let_go_text(session)
        )
        if runs is not None:
            message["runs"] = runs
        return message

    def receive(self, content: Any) -> None:
        """A message from the page."""
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind in ("hello", "control"):
            self._ends.heard()
        if kind == "hello":  # a new page or view: send everything again, from the start
            with self._run.lock:
                self.frontend = True
                self._sent = 0
                # the newest answer was for a request of an earlier page, maybe; those not
                # sent yet go all the same (a page that missed a batch still waits for them;
                # another page ignores a number it did not give)
                self._answer = None
                self.rows.hello()
            self.request()
        elif kind in REQUEST_TYPES:
            handle = self._ends.on_control if kind == "control" else self._ends.on_request
            try:
                answer = handle(content)
            except Exception as exc:  # noqa: BLE001 - a click must never raise in the kernel
                answer = refusal(content, "failed", explain(exc))
            if kind != "control" or answer.request is not None:  # a plain click: no one waits
                self.reply(answer)
        elif request_id(content) is not None:  # numbered: a page waits for its answer
            self.reply(unknown_type(content))

    def reply(self, answer: Answer) -> None:
        """Send the answer to a request with the next message (with the step state)."""
        with self._run.lock:
            self._answer = answer.to_dict()
            self._answers = [*self._answers[-(MAX_ANSWERS - 1) :], self._answer]
            self._answer_due = True
        self.request()
