"""``TicketTracker``: a small issue tracker as a tool backend, sharing a run's file system.

Tickets get ids 1, 2, 3... in the order they are opened, so a scripted model can name them.
``attach_file`` reads from the :class:`~toolloop_lab.workloads._filesystem.FileSystem` the
tracker was built with: the two backends of one run share state, which is why a scenario
builds every tool of a run in one ``tools_factory``. :data:`TICKET_FUNCTIONS` describes the
methods as JSON-schema function docs in the OpenAI tools format.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from toolloop_lab.workloads._filesystem import FileSystem, FileSystemError, function_doc


class TicketError(Exception):
    """An operation the tracker cannot do; its text is what the model reads."""


_ID: Final = {"type": "integer", "minimum": 1}
_PRIORITY: Final = {
    "type": "integer",
    "minimum": 1,
    "maximum": 5,
    "default": 3,
    "description": "1 is the most urgent, 5 the least.",
}

TICKET_FUNCTIONS: Final[tuple[dict[str, Any], ...]] = (
    function_doc(
        "create_ticket",
        "Open a ticket; returns it with its id.",
        {
            "title": {"type": "string", "minLength": 1, "maxLength": 120},
            "description": {"type": "string", "default": ""},
            "priority": _PRIORITY,
        },
        ("title",),
    ),
    function_doc("get_ticket", "A ticket with its comments.", {"ticket_id": _ID}, ("ticket_id",)),
    function_doc(
        "list_tickets",
        "Every ticket, or those with the given status.",
        {"status": {"type": "string", "enum": ["open", "resolved"]}},
    ),
    function_doc(
        "comment",
        "Add a comment to a ticket.",
        {"ticket_id": _ID, "text": {"type": "string", "minLength": 1}},
        ("ticket_id", "text"),
    ),
    function_doc(
        "attach_file",
        "Attach a file's current text to a ticket (as a comment).",
        {"ticket_id": _ID, "file_name": {"type": "string", "minLength": 1}},
        ("ticket_id", "file_name"),
    ),
    function_doc(
        "resolve_ticket",
        "Close a ticket with a resolution.",
        {"ticket_id": _ID, "resolution": {"type": "string", "minLength": 1}},
        ("ticket_id", "resolution"),
    ),
)
"""The docs of every public method, as a model is given them."""


class TicketTracker:
    """An in-memory ticket tracker; ``files`` is the file system ``attach_file`` reads."""

    def __init__(self, files: FileSystem | None = None) -> None:
        self._lock = threading.Lock()
        self._files = files
        self._tickets: dict[int, dict[str, Any]] = {}

    def _get(self, ticket_id: int) -> dict[str, Any]:
        ticket = self._tickets.get(ticket_id)
        if ticket is None:
            raise TicketError(f"no ticket {ticket_id}")
        return ticket

    @staticmethod
    def _summary(ticket: dict[str, Any]) -> dict[str, Any]:
        keys = ("id", "title", "status", "priority")
        return {k: ticket[k] for k in keys} | {"comments": len(ticket["comments"])}

    def create_ticket(self, title: str, description: str = "", priority: int = 3) -> dict[str, Any]:
        with self._lock:
            ticket_id = len(self._tickets) + 1
            self._tickets[ticket_id] = {
                "id": ticket_id,
                "title": title,
                "description": description,
                "priority": priority,
                "status": "open",
                "resolution": None,
                "comments": [],
            }
            return self._summary(self._tickets[ticket_id])

    def get_ticket(self, ticket_id: int) -> dict[str, Any]:
        with self._lock:
            ticket = self._get(ticket_id)
            return {**ticket, "comments": list(ticket["comments"])}

    def list_tickets(self, status: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [
                self._summary(t)
                for t in self._tickets.values()
                if status is None or t["status"] == status
            ]

    def comment(self, ticket_id: int, text: str, /) -> dict[str, Any]:
        with self._lock:
            ticket = self._get(ticket_id)
            if ticket["status"] != "open":
                raise TicketError(f"ticket {ticket_id} is {ticket['status']}")
            ticket["comments"].append(text)
            return self._summary(ticket)

    def attach_file(self, ticket_id: int, file_name: str) -> dict[str, Any]:
        if self._files is None:
            raise TicketError("this tracker has no file system to read from")
        try:
            text = self._files.cat(file_name)
        except FileSystemError as exc:
            raise TicketError(f"cannot attach {file_name}: {exc}") from None
        return self.comment(ticket_id, f"[{file_name}]\n{text}")

    def resolve_ticket(self, ticket_id: int, resolution: str) -> dict[str, Any]:
        with self._lock:
            ticket = self._get(ticket_id)
            if ticket["status"] == "resolved":
                raise TicketError(f"ticket {ticket_id} is already resolved")
            ticket["status"] = "resolved"
            ticket["resolution"] = resolution
            return self._summary(ticket)
