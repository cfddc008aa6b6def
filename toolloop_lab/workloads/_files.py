"""The ``files`` workload: multi-turn office chores on a file system and a ticket tracker.

Three conversations of two or three user turns each, on scripted models: tidying notes into
a folder, turning a log's errors into a ticket, cleaning a build folder. Each run gets one
fresh :class:`Workbench` (a :class:`~toolloop_lab.workloads._filesystem.FileSystem` seeded
with :data:`SEED_FILES` and a :class:`~toolloop_lab.workloads._tickets.TicketTracker` that
reads it), whose state carries over from turn to turn: a file moved in turn 1 is where turn
2 looks for it. Several replies make order-dependent calls in one reply (``cd`` then
``cat``), so both configurations run a reply's calls in order.

The replies give no token counts: usage is estimated from what each call really sends, so
later turns, carrying the whole conversation, cost more, and a config that changes what the
tools returned changes the spend too. The replies are grouped by turn
(:class:`~toolloop_lab.lab.ScriptedTurns`), so a turn cut short by a round cap leaves the
next turn's replies where they were, and the backend in whatever state the short turn left
it: under ``tight`` the later turns' calls fail where the earlier turn never did its work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from langchain_core.tools import BaseTool

from toolloop_lab._engine.config import AgentConfig
from toolloop_lab._tools.schema import tools_from_schema
from toolloop_lab.lab._scenario import Reply, Scenario, ToolCallSpec, Turn
from toolloop_lab.workloads._filesystem import FILE_FUNCTIONS, FileSystem
from toolloop_lab.workloads._tickets import TICKET_FUNCTIONS, TicketTracker

SEED_FILES: Final[tuple[tuple[str, str], ...]] = (
    ("/notes.txt", "Ops sync 2025-03-04\n- ledger-db pool is too small\n- exports retry 3x\n"),
    ("/todo.txt", "- rotate the API keys\n- update the runbook\n"),
    (
        "/logs/app.log",
        "09:00:01 INFO export started\n"
        "09:00:31 ERROR export failed: timeout talking to ledger-db\n"
        "09:01:02 INFO retrying export\n"
        "09:01:32 ERROR export failed: timeout talking to ledger-db\n"
        "09:02:03 INFO queue drained\n",
    ),
    ("/build/README", "Build output. main.o is the release object; the rest can go.\n"),
    ("/build/main.o", "<release object>"),
    ("/build/tmp1.o", "<scratch object>"),
    ("/build/tmp2.o", "<scratch object>"),
)
"""The file system every run starts from."""

SYSTEM_PROMPT: Final = (
    "You help with office chores using a file system and a ticket tracker. Work in small "
    "steps and say what you did."
)

FILES_CONFIGS: Final[Mapping[str, AgentConfig]] = MappingProxyType(
    {
        "roomy": AgentConfig(
            tool_max_rounds=6, parallel_tool_calls=False, system_prompt=SYSTEM_PROMPT
        ),
        "tight": AgentConfig(
            tool_max_rounds=2, parallel_tool_calls=False, system_prompt=SYSTEM_PROMPT
        ),
    }
)
"""The two configurations the sweep compares: six tool rounds a turn, or two."""


@dataclass(frozen=True, slots=True)
class Workbench:
    """The tools factory of a run: one fresh file system (seeded with ``files``) and one
    ticket tracker reading it, as validated tools. Plain data, so it pickles to workers."""

    files: tuple[tuple[str, str], ...] = SEED_FILES

    def __call__(self) -> list[BaseTool]:
        files = FileSystem(dict(self.files))
        tracker = TicketTracker(files)
        return [
            *tools_from_schema(files, FILE_FUNCTIONS),
            *tools_from_schema(tracker, TICKET_FUNCTIONS),
        ]


def _call(name: str, text: str = "", **args: Any) -> Reply:
    return Reply(text, (ToolCallSpec(name, args),))


def _calls(text: str, *calls: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(text, tuple(ToolCallSpec(name, args) for name, args in calls))


def _turns() -> dict[str, tuple[str, tuple[Turn, ...]]]:
    """Each scenario's description and turns."""
    tidy = (
        Turn(
            "Put notes.txt and todo.txt into a new folder called archive.",
            (
                _call("ls", "Let me look around first."),
                _call("mkdir", "Creating the folder.", dir_name="archive"),
                _calls(
                    "Moving both files.",
                    ("mv", {"source": "notes.txt", "destination": "archive"}),
                    ("mv", {"source": "todo.txt", "destination": "archive"}),
                ),
                Reply.final("notes.txt and todo.txt are now in archive/."),
            ),
        ),
        Turn(
            "What is still on the todo list?",
            (
                _calls(
                    "Reading it.",
                    ("cd", {"folder": "archive"}),
                    ("cat", {"file_name": "todo.txt"}),
                ),
                Reply.final("Two items: rotate the API keys, and update the runbook."),
            ),
        ),
        Turn(
            "Add 'ship v2' to it.",
            (
                _call(
                    "write", "Appending.", file_name="todo.txt", content="- ship v2\n", append=True
                ),
                _call("cat", "Checking.", file_name="todo.txt"),
                Reply.final("Added: the list has three items now."),
            ),
        ),
    )
    incident = (
        Turn(
            "Find the errors in logs/app.log and open a ticket for them.",
            (
                _call("grep", "Searching the log.", file_name="logs/app.log", pattern="ERROR"),
                _call(
                    "create_ticket",
                    "Opening a ticket.",
                    title="Export times out",
                    priority="urgent",
                ),
                _call(
                    "create_ticket",
                    "Priority is a number; trying again.",
                    title="Export times out talking to ledger-db",
                    description="Two ERROR lines in logs/app.log, 09:00:31 and 09:01:32.",
                    priority=1,
                ),
                Reply.final("Ticket 1 is open, priority 1."),
            ),
        ),
        Turn(
            "Attach the log to it and note the likely cause.",
            (
                _calls(
                    "Attaching and commenting.",
                    ("attach_file", {"ticket_id": 1, "file_name": "logs/app.log"}),
                    (
                        "comment",
                        {
                            "ticket_id": 1,
                            "text": "Likely cause: the ledger-db pool is too small (notes.txt).",
                        },
                    ),
                ),
                Reply.final("The log is attached and the cause noted on ticket 1."),
            ),
        ),
        Turn(
            "It is fixed now: close the ticket.",
            (
                _call(
                    "resolve_ticket",
                    "Closing it.",
                    ticket_id=1,
                    resolution="Raised the ledger-db pool size.",
                ),
                _call("get_ticket", "Checking.", ticket_id=1),
                Reply.final("Ticket 1 is resolved."),
            ),
        ),
    )
    build = (
        Turn(
            "Delete the scratch objects in build, but keep main.o.",
            (
                _calls("Looking inside build.", ("cd", {"folder": "build"}), ("ls", {})),
                _calls(
                    "Removing the scratch objects.",
                    ("rm", {"name": "tmp1.o"}),
                    ("rm", {"name": "tmp2.o"}),
                ),
                _call("ls", "Checking what is left."),
                Reply.final("tmp1.o and tmp2.o are gone; main.o and README stay."),
            ),
        ),
        Turn(
            "Open a low-priority ticket saying what was removed.",
            (
                _call(
                    "create_ticket",
                    "Opening it.",
                    title="Removed scratch objects from build/",
                    description="tmp1.o and tmp2.o; main.o kept.",
                    priority=5,
                ),
                Reply.final("Ticket 1 records the clean-up."),
            ),
        ),
    )
    return {
        "tidy_notes": ("Move two files into a new folder, then read and extend one.", tidy),
        "incident_ticket": (
            "Turn a log's errors into a ticket, attach the log, close it.",
            incident,
        ),
        "clean_build": ("Remove scratch files in a folder, then record it in a ticket.", build),
    }


def files_scenarios(config: str = "roomy", *, suffix: bool = False) -> tuple[Scenario, ...]:
    """The workload's scenarios under one of :data:`FILES_CONFIGS` (tagged ``files`` and the
    config's name); ``suffix`` appends ``[config]`` to each name, so two configs can share a
    sweep."""
    chosen = FILES_CONFIGS[config]
    return tuple(
        Scenario.scripted(
            f"{name}[{config}]" if suffix else name,
            turns=turns,
            tools_factory=Workbench(),
            config=chosen,
            tags=("files", config),
            description=description,
        )
        for name, (description, turns) in _turns().items()
    )


def files_sweep(configs: Iterable[str] = tuple(FILES_CONFIGS)) -> tuple[Scenario, ...]:
    """Every scenario under every config in ``configs`` (names suffixed ``[config]``)."""
    return tuple(s for config in configs for s in files_scenarios(config, suffix=True))
