"""An output updated from a run that ends after its cell reaches the cell the kernel runs.

ipykernel sends a message under the execute request of the context it is sent from; a run
started with ``dbg.start`` ends in its task's context, that of the cell that started it,
long finished, and a notebook runner drops what comes under a finished cell. The update
goes out under the cell running now, and one made while no cell runs is sent again, under
the next cell, as it starts. Here a stand-in shell plays the kernel (the real one is
``tests/widget/test_widget_saved_notebook.py``'s nbclient run).
"""

from __future__ import annotations

from typing import Any

import pytest
from IPython import display
from IPython.core.events import EventManager, available_events

from toolloop_lab._widget import updates


class Publisher:
    """The display publisher's parent header, set per context as ipykernel's is."""

    def __init__(self) -> None:
        self.parent: dict[str, Any] | None = None

    def set_thread_parent(self, parent: dict[str, Any]) -> dict[str, Any] | None:
        token, self.parent = self.parent, parent
        return token

    def reset_thread_parent(self, token: dict[str, Any] | None) -> None:
        self.parent = token


class Kernel:
    def __init__(self) -> None:
        self.request: dict[str, Any] = {}

    def get_parent(self) -> dict[str, Any]:
        return self.request


class Shell:
    def __init__(self) -> None:
        self.events = EventManager(self, available_events)
        self.kernel = Kernel()
        self.display_pub = Publisher()

    def run_cell(self, msg_id: str, body: Any = None) -> None:
        """A cell's execute request: its hooks around ``body``."""
        self.kernel.request = {"header": {"msg_id": msg_id}}
        self.display_pub.parent = None
        self.events.trigger("pre_run_cell", None)
        if body is not None:
            body()
        self.events.trigger("post_run_cell", None)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Shell:
    fake = Shell()
    monkeypatch.setattr(updates, "_shell", lambda: fake)
    monkeypatch.setattr(updates, "_requests", updates._Requests())  # a fresh kernel's
    return fake


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch, shell: Shell) -> list[tuple[str, str, Any]]:
    """Every update sent: (display id, its text, the request it went out under)."""
    out: list[tuple[str, str, Any]] = []

    def update_display(data: Any, *, display_id: str, **_kw: Any) -> None:
        parent = shell.display_pub.parent
        out.append((display_id, data["text/plain"], parent and parent["header"]["msg_id"]))

    monkeypatch.setattr(display, "update_display", update_display)
    return out


def test_an_update_made_while_a_cell_runs_goes_out_under_that_cell(
    shell: Shell, sent: list[tuple[str, str, Any]]
) -> None:
    updates.watch_cells()
    shell.run_cell("starts the run")
    shell.run_cell(
        "awaits it", lambda: updates.update_output({"text/plain": "finished"}, {}, "out-1")
    )
    shell.run_cell("later")
    assert sent == [("out-1", "finished", "awaits it")]  # once, under the running cell


def test_an_update_made_between_cells_is_sent_again_as_the_next_cell_starts(
    shell: Shell, sent: list[tuple[str, str, Any]]
) -> None:
    updates.watch_cells()
    shell.run_cell("starts the run")
    updates.update_output({"text/plain": "running"}, {}, "out-1")  # between cells
    updates.update_output({"text/plain": "finished"}, {}, "out-1")
    shell.run_cell("next")
    shell.run_cell("after")
    assert sent == [
        ("out-1", "running", "starts the run"),
        ("out-1", "finished", "starts the run"),
        ("out-1", "finished", "next"),  # the newest, once, under the cell that started
    ]


def test_outside_a_kernel_an_update_is_a_plain_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out: list[Any] = []
    monkeypatch.setattr(updates, "_shell", lambda: None)
    monkeypatch.setattr(updates, "_requests", updates._Requests())
    monkeypatch.setattr(display, "update_display", lambda data, **kw: out.append(kw["display_id"]))
    updates.watch_cells()
    updates.update_output({"text/plain": "x"}, {}, "out-1")
    assert out == ["out-1"]
