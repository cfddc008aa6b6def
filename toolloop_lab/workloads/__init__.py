"""Sample workloads for the scenario lab: tool backends written here, and scenarios on them.

:class:`FileSystem` and :class:`TicketTracker` are the backends (plain classes with
JSON-schema function docs, :data:`FILE_FUNCTIONS` and :data:`TICKET_FUNCTIONS`, the shape a
function-calling benchmark ships; ``tools_from_schema`` makes tools of them). The ``files``
workload (``toolloop-lab demo --workload files``) runs multi-turn scenarios on them:
:func:`files_scenarios` under one of :data:`FILES_CONFIGS`, :func:`files_sweep` under each,
every run's tools sharing one fresh :class:`Workbench`.
"""

from __future__ import annotations

from toolloop_lab.workloads._files import FILES_CONFIGS, Workbench, files_scenarios, files_sweep
from toolloop_lab.workloads._filesystem import FILE_FUNCTIONS, FileSystem, FileSystemError
from toolloop_lab.workloads._tickets import TICKET_FUNCTIONS, TicketError, TicketTracker

__all__ = [
    "FILES_CONFIGS",
    "FILE_FUNCTIONS",
    "TICKET_FUNCTIONS",
    "FileSystem",
    "FileSystemError",
    "TicketError",
    "TicketTracker",
    "Workbench",
    "files_scenarios",
    "files_sweep",
]
