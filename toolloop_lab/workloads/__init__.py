"""Sample workloads for the scenario lab: tool backends written here, and scenarios on them.

:mod:`.filesystem` and :mod:`.tickets` are the backends (plain classes with JSON-schema
function docs, the shape a function-calling benchmark ships); :mod:`.files` is the
``files`` workload (``toolloop-lab demo --workload files``): multi-turn scenarios whose
tools share one fresh backend per run.
"""

from __future__ import annotations

from toolloop_lab.workloads._filesystem import FILE_FUNCTIONS, FileSystem, FileSystemError
from toolloop_lab.workloads._tickets import TICKET_FUNCTIONS, TicketError, TicketTracker

__all__ = [
    "FILE_FUNCTIONS",
    "TICKET_FUNCTIONS",
    "FileSystem",
    "FileSystemError",
    "TicketError",
    "TicketTracker",
]
