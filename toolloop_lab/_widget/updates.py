"""Updating a displayed output from a run that ends after the cell that started it.

``dbg.start(agent, prompt)`` runs the agent in a background task: the cell returns at once,
and the run ends while a later cell runs, or between cells. ipykernel sends a message under
the execute request of the context it is sent from, so an update sent when such a run ends
goes out under the cell that *started* it, long finished. JupyterLab applies it anyway (it
routes an update by its display id), but a notebook runner (nbclient, ``nbconvert
--execute``, papermill) takes only the messages of the cell it is running now, and drops
it: the file keeps the debugger as it was displayed, "waiting for a run".

So an update is sent under the request the kernel runs now (:func:`update_output`), and one
sent while no cell runs is sent again as the next cell starts, under that cell. Outside an
IPython kernel it is a plain ``update_display`` (nothing to route).
"""

from __future__ import annotations

import threading
from typing import Any


def _shell() -> Any:
    """The running IPython shell, or ``None`` (a script, a test)."""
    try:
        from IPython.core.getipython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    getter: Any = get_ipython  # typed in some IPython releases, not in others
    return getter()


def _parent(shell: Any) -> dict[str, Any] | None:
    """The execute request the kernel runs now (ipykernel 6 and later), if it says."""
    kernel = getattr(shell, "kernel", None)
    getter = getattr(kernel, "get_parent", None)
    try:
        parent = getter() if callable(getter) else None
    except Exception:  # noqa: BLE001 - a kernel without that API: no routing
        return None
    return parent if isinstance(parent, dict) and parent.get("header") else None


def _send(data: dict[str, Any], metadata: dict[str, Any], display_id: str, parent: Any) -> None:
    """``update_display`` under ``parent`` (when given and the kernel can route by it)."""
    from IPython import display

    publisher = getattr(_shell(), "display_pub", None)
    set_parent = getattr(publisher, "set_thread_parent", None)
    reset = getattr(publisher, "reset_thread_parent", None)
    token = set_parent(parent) if parent is not None and callable(set_parent) else None
    try:
        update: Any = display.update_display
        update(data, raw=True, metadata=metadata, display_id=display_id)
    finally:
        if token is not None and callable(reset):
            reset(token)


class _Requests:
    """The cell the kernel runs now, and the updates to send again when the next starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.shell: Any = None
        self.running = False
        self.latest: dict[str, Any] | None = None
        self.pending: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        """The newest update of each output sent while no cell ran, by display id."""

    def watch(self) -> None:
        """Follow the shell's cells (once per shell)."""
        shell = _shell()
        events = getattr(shell, "events", None)
        with self.lock:
            if events is None or shell is self.shell:
                return
            self.shell = shell
        events.register("pre_run_cell", self._cell_starts)
        events.register("post_run_cell", self._cell_ends)

    def _cell_starts(self, *_info: Any) -> None:
        """A cell starts: note its request, and send it what no cell took."""
        with self.lock:
            self.running = True
            self.latest = _parent(self.shell)
            pending, self.pending = self.pending, {}
        for display_id, (data, metadata) in pending.items():
            _send(data, metadata, display_id, self.latest)

    def _cell_ends(self, *_result: Any) -> None:
        with self.lock:
            self.running = False

    def update(self, data: dict[str, Any], metadata: dict[str, Any], display_id: str) -> None:
        """Send the update under the cell running now; when none runs, keep it for the next."""
        with self.lock:
            parent, running = self.latest, self.running
            if not running and self.shell is not None:
                self.pending[display_id] = (data, metadata)
        _send(data, metadata, display_id, parent)


_requests = _Requests()


def watch_cells() -> None:
    """Start following the shell's cells (a debugger does when it is displayed)."""
    _requests.watch()


def update_output(data: dict[str, Any], metadata: dict[str, Any], display_id: str) -> None:
    """Update the output ``display_id`` so that the notebook file keeps it, whichever
    context (a background task's, a timer's) it is called from (see the module doc)."""
    _requests.update(data, metadata, display_id)
