"""Scripted runs the widget and trace tests share, plus checks that they run as described.

The scenarios mirror the behaviour spec (features/tool_loop.feature): single round, round
cap synthesis, token budget, pruning, unknown tool, model exception, USD budget trip. They
drive the real LLMAgent through ScriptedChatModel, so every figure a test expects is
computed here from the script, independently of the RunView the widget draws from.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import comm
import ipywidgets as widgets
import pytest
from ipywidgets.widgets.widget import _instances
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool

from toolloop_lab import AgentConfig, LLMAgent, ScriptedChatModel, usd_budget
from toolloop_lab.builtin_tools import echo_tool, file_read_tool
from toolloop_lab.events import Event
from toolloop_lab.pricing import cost_of
from toolloop_lab.pruning import text_tokens
from toolloop_lab.usage import Usage
from toolloop_lab.widget import LoopDebugger

MODEL = "gpt-4o-mini"
WINDOW = 10_000
REPORT = "quarterly figures: revenue up 12%. " * 200
PRUNED = "revenue up 12% (quarterly figures)"


# -- scripted replies ---------------------------------------------------------------------
def usage_md(inp: int, out: int) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}


def call_reply(
    n: int,
    name: str = "echo",
    args: dict[str, Any] | None = None,
    *,
    text: str = "",
    tokens: tuple[int, int] | None = None,
    call_id: str | None = None,
) -> AIMessage:
    """A reply with one tool call; usage (10 + 2n, 5 + n) like the spec's steps."""
    inp, out = tokens or (10 + 2 * n, 5 + n)
    return AIMessage(
        content=text,
        tool_calls=[
            {
                "name": name,
                "args": args if args is not None else {"text": f"ping {n}"},
                "id": call_id or f"call_{n}",
                "type": "tool_call",
            }
        ],
        usage_metadata=usage_md(inp, out),
    )


def final_reply(text: str, n: int) -> AIMessage:
    return AIMessage(content=text, usage_metadata=usage_md(10 + 2 * n, 5 + n))


def price(inp: int, out: int) -> Decimal:
    cost = cost_of(Usage(inp, out), MODEL)
    assert cost is not None
    assert cost > 0
    return cost


# -- scenarios ----------------------------------------------------------------------------
@dataclass
class Scenario:
    """A scripted agent, what to run it with, and what the script makes it spend."""

    name: str
    script: list[Any]
    tools: list[BaseTool]
    config: AgentConfig
    pruning_script: list[Any] | None = None
    usd_limit: Decimal | None = None
    model_name: str = MODEL
    model: ScriptedChatModel = field(init=False)
    pruning_model: ScriptedChatModel | None = field(init=False)

    def __post_init__(self) -> None:
        self.model = ScriptedChatModel(self.script, model_name=self.model_name)
        self.pruning_model = (
            ScriptedChatModel(self.pruning_script, model_name=MODEL)
            if self.pruning_script is not None
            else None
        )

    def agent(self, observers: Sequence[Callable[[Event], object]] = ()) -> LLMAgent:
        return LLMAgent(
            self.model,
            self.tools,
            self.config,
            pruning_model=self.pruning_model,
            observers=observers,
        )

    def played(self) -> list[tuple[int, int]]:
        """(input, output) tokens of every main-model reply played so far."""
        out = []
        for item in self.script[: len(self.model.calls)]:
            if isinstance(item, AIMessage) and item.usage_metadata:
                out.append(
                    (item.usage_metadata["input_tokens"], item.usage_metadata["output_tokens"])
                )
        return out


def single_round() -> Scenario:
    return Scenario(
        "single_round",
        [call_reply(1), final_reply("Final answer from loop", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )


def round_cap() -> Scenario:
    return Scenario(
        "round_cap",
        [call_reply(n, text=f"Let me call the tool again ({n}).") for n in (1, 2)],
        [echo_tool()],
        AgentConfig(tool_max_rounds=1, context_window=WINDOW),
    )


def token_budget() -> Scenario:
    return Scenario(
        "token_budget",
        [call_reply(1, tokens=(5_000, 200)), final_reply("Budget exhausted answer", 2)],
        [echo_tool()],
        AgentConfig(token_budget_percent=1.0, context_window=WINDOW),
    )


def pruning(root: Path) -> Scenario:
    (root / "report.txt").write_text(REPORT)
    return Scenario(
        "pruning",
        [call_reply(1, "file_read", {"path": "report.txt"}), final_reply("Pruned answer", 2)],
        [file_read_tool(root)],
        AgentConfig(prune_tools=("file_read",), prune_min_chars=1_000, context_window=WINDOW),
        pruning_script=[AIMessage(PRUNED, usage_metadata=usage_md(900, 40))],
    )


def unknown_tool() -> Scenario:
    return Scenario(
        "unknown_tool",
        [call_reply(1, "does_not_exist"), final_reply("After error answer", 2)],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )


def model_exception() -> Scenario:
    error = RuntimeError("provider exploded")
    error.__cause__ = ConnectionError("connection reset by peer")
    return Scenario(
        "model_exception",
        [call_reply(1), error],
        [echo_tool()],
        AgentConfig(context_window=WINDOW),
    )


def usd_trip() -> Scenario:
    first, second = call_reply(1), final_reply("cost triggered", 2)
    limit = price(12, 6) + price(14, 7) / 2
    return Scenario(
        "usd_trip",
        [first, second],
        [echo_tool()],
        AgentConfig(tool_max_rounds=5, context_window=WINDOW),
        usd_limit=limit,
    )


def spec_scenarios(root: Path) -> list[Scenario]:
    return [
        single_round(),
        round_cap(),
        token_budget(),
        pruning(root),
        unknown_tool(),
        model_exception(),
        usd_trip(),
    ]


SCENARIO_NAMES = [
    "single_round",
    "round_cap",
    "token_budget",
    "pruning",
    "unknown_tool",
    "model_exception",
    "usd_trip",
]


def scenario_by_name(name: str, root: Path) -> Scenario:
    return next(s for s in spec_scenarios(root) if s.name == name)


@dataclass
class Outcome:
    result: Any
    error: BaseException | None
    events: tuple[Event, ...]


def run(scenario: Scenario, *observers: Callable[[Event], object]) -> Outcome:
    """Run the scenario to its end (or failure) with the given observers."""
    seen: list[Event] = []
    agent = scenario.agent([*observers, seen.append])

    async def go() -> Any:
        if scenario.usd_limit is None:
            return await agent.arun("Use the tool, then answer.")
        with usd_budget(scenario.usd_limit):
            return await agent.arun("Use the tool, then answer.")

    try:
        return Outcome(asyncio.run(go()), None, tuple(seen))
    except Exception as exc:  # noqa: BLE001 - the tests assert on the exact type
        return Outcome(None, exc, tuple(seen))


# -- reading widget values back ---------------------------------------------------------
class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "div", "tr", "pre"):
            self.parts.append("\n")


def text_of(html: str) -> str:
    """What a browser shows for ``html`` (entities decoded), roughly."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


class _Table(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def table_rows(html: str) -> list[list[str]]:
    """The cell texts of every row of the (first-level) table(s) in ``html``."""
    parser = _Table()
    parser.feed(html)
    parser.close()
    return parser.rows


def timeline(dbg: LoopDebugger) -> list[dict[str, str]]:
    """The timeline table as one dict per row, keyed by column heading."""
    rows = table_rows(dbg.panels["timeline"])
    head, body = rows[0], rows[1:]
    return [dict(zip(head, row, strict=True)) for row in body]


def all_widgets(root: Any) -> list[Any]:
    """``root``, every widget inside it, and their layouts and styles."""
    out: list[Any] = []
    stack = [root]
    while stack:
        widget = stack.pop()
        out.append(widget)
        for part in ("layout", "style"):
            sub = getattr(widget, part, None)
            if isinstance(sub, widgets.Widget):
                out.append(sub)
        stack.extend(getattr(widget, "children", ()))
    return out


# -- fake time ----------------------------------------------------------------------------
class FakeTime:
    """A clock and a timer queue the test advances by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> bool:
        heapq.heappush(self._timers, (self.now + delay, next(self._seq), callback))
        return True

    def advance(self, seconds: float) -> None:
        target = self.now + seconds
        while self._timers and self._timers[0][0] <= target:
            due, _seq, callback = heapq.heappop(self._timers)
            self.now = max(self.now, due)
            callback()
        self.now = target

    @property
    def pending(self) -> int:
        return len(self._timers)


# -- comms ----------------------------------------------------------------------------------
class CountingComm(comm.DummyComm):  # type: ignore[misc]
    """A comm that counts the update messages a widget sends to the frontend."""

    sent: list[dict[str, Any]]

    def publish_msg(self, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if msg_type == "comm_msg":
            CountingComm.sent.append(data or {})


CountingComm.sent = []


@pytest.fixture
def no_widget_leaks() -> Iterator[None]:
    """Every widget a test makes is closed by the end of it (``LoopDebugger.close``)."""
    before = set(_instances)
    yield
    leaked = set(_instances) - before
    assert not leaked, f"{len(leaked)} widgets left open"


# -- the scenarios do what the tests rely on ------------------------------------------------
@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_runs_as_described(name: str, tmp_path: Path) -> None:
    scenario = scenario_by_name(name, tmp_path)
    outcome = run(scenario)
    assert outcome.events[0].kind == "loop_start"
    failing = {"model_exception", "usd_trip"}
    if name in failing:
        assert outcome.error is not None
        assert outcome.events[-1].kind == "loop_failure"
    else:
        assert outcome.error is None, repr(outcome.error)
        assert outcome.events[-1].kind == "loop_finish"
    if name == "pruning":
        assert text_tokens(REPORT) > text_tokens(PRUNED)
        assert len(scenario.pruning_model.calls) == 1  # type: ignore[union-attr]
