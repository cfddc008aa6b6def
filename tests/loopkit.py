"""Builders shared by the tests (and the behave steps): scripts, reference prices, the
lab's scenarios as runs, hostile text, and a mock comm for the debugger widget.

Prices are computed here straight from genai-prices' public ``calc_price``, never through
toolloop_lab's pricing module, so a cost assertion compares two independent sums.

No test module imports another: what two test modules share lives here (or in
``hostile/hostilekit.py`` and ``browser/streams.py``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any

import genai_prices
from comm.base_comm import BaseComm
from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall
from langchain_core.messages.ai import UsageMetadata

__all__ = [
    "ALL",
    "CATALOG_NAMES",
    "IN_A_LOOP",
    "MODEL",
    "PAYLOADS",
    "FakeTime",
    "MockComm",
    "calls",
    "catalog_run",
    "changed_config",
    "channel",
    "final",
    "invalid_call",
    "received",
    "reference_cost",
    "server_tool",
    "strings",
    "tool_call",
    "until",
    "usage",
    "wait_until",
]

MODEL = "gpt-4o-mini"
"""A model genai-prices knows, so runs are priced."""

IN_A_LOOP = r"ignore:agent\.run\(\) was called inside a running event loop:RuntimeWarning"
"""A ``filterwarnings`` mark's filter for a test that calls ``agent.run()`` inside a running
event loop on purpose (as a notebook cell does): outside IPython that warns, once per loop
(tested in ``engine/test_sync_run.py``)."""


def changed_config(**fields: Any) -> Any:
    """An ``AgentConfig`` whose fields were changed after it was built, past the checks its
    constructor makes (as a patched or unpickled config can be): only the check a run makes
    when it starts refuses it."""
    from toolloop_lab import AgentConfig

    config = AgentConfig()
    for name, value in fields.items():
        object.__setattr__(config, name, value)
    return config


def usage(
    input_tokens: int, output_tokens: int, *, cache_read: int = 0, cache_write: int = 0
) -> UsageMetadata:
    """``usage_metadata`` as a provider reports it."""
    meta: UsageMetadata = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }
    if cache_read or cache_write:
        meta["input_token_details"] = {"cache_read": cache_read, "cache_creation": cache_write}
    return meta


def tool_call(name: str, args: dict[str, Any], call_id: str) -> ToolCall:
    """One well-formed tool call."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def invalid_call(
    name: str | None, args: str | None, call_id: str | None, error: str | None = None
) -> InvalidToolCall:
    """A tool call whose argument text is not valid JSON (as a provider reports one)."""
    return {"name": name, "args": args, "id": call_id, "error": error, "type": "invalid_tool_call"}


def calls(
    *tool_calls: ToolCall,
    text: str = "",
    tokens: tuple[int, int] = (10, 5),
    invalid: Sequence[InvalidToolCall] = (),
) -> AIMessage:
    """A reply that asks for ``tool_calls`` (and the ``invalid`` ones; empty ``text`` makes
    it a stuck reply)."""
    return AIMessage(
        content=text,
        tool_calls=list(tool_calls),
        invalid_tool_calls=list(invalid),
        usage_metadata=usage(*tokens),
    )


def final(text: str, tokens: tuple[int, int] = (10, 5)) -> AIMessage:
    """A final answer: text and no tool calls."""
    return AIMessage(content=text, usage_metadata=usage(*tokens))


def reference_cost(
    per_call: Iterable[tuple[int, int]] | Iterable[tuple[int, int, int, int]], model: str = MODEL
) -> Decimal:
    """Sum of genai-prices' price for each call's (input, output[, cache_read, cache_write])."""
    total = Decimal(0)
    for counts in per_call:
        inp, out, *cache = counts
        read, write = [*cache, 0, 0][:2]
        calc = genai_prices.calc_price(
            genai_prices.Usage(
                input_tokens=inp,
                output_tokens=out,
                cache_read_tokens=read,
                cache_write_tokens=write,
            ),
            model_ref=model,
        )
        total += Decimal(calc.total_price)
    return total


# -- a tool as an MCP server's, without a server ---------------------------------------------
def server_tool(
    name: str = "count",
    server: str = "inventory",
    *,
    said: Sequence[str] = ("counting {item}",),
    structured: bool = True,
    transport: str = "stdio",
) -> tuple[Any, Any]:
    """A tool carrying an MCP server's identity, as ``mcp_tools`` gives its tools, whose
    every call writes ``said`` (formatted with its arguments) to its server's log and
    answers with its structured content too: the loop's side of MCP (events, views,
    frames), with no server process. Returns the tool and its live server site (keep it
    referenced: the loop finds it by a weak reference)."""
    from langchain_core.tools import StructuredTool

    from toolloop_lab._tools.servers import METADATA_KEY, ServerSite, register

    site = ServerSite(server, transport)  # type: ignore[arg-type]
    site.session_id = "session-1" if transport == "streamable_http" else None
    register(site)

    def count(item: str) -> tuple[str, Any]:
        for line in said:
            site.log.note(line.format(item=item))
        artifact = {"structured_content": {"item": item, "count": 3}} if structured else None
        return f"3 {item}", artifact

    count.__doc__ = "Count an item in stock."
    tool = StructuredTool.from_function(
        count,
        name=name,
        response_format="content_and_artifact",
        metadata={METADATA_KEY: site.metadata()},
    )
    return tool, site


# -- the lab's catalog, run ------------------------------------------------------------------
def _catalog_names() -> list[str]:
    from toolloop_lab.lab import catalog

    return [s.name for s in catalog()]


CATALOG_NAMES = _catalog_names()
"""Every scenario of the lab's built-in catalog (the spec's behaviours), by name."""


def catalog_run(name: str, *observers: Callable[[Any], object]) -> Any:
    """Run the catalog's scenario ``name`` to its end with ``observers`` watching; returns
    its :class:`~toolloop_lab.lab.ScenarioRun` (``events``, ``outcome``, error fields). The
    scenario runs under its own USD limit, so failing scenarios are rows, not raises."""
    from toolloop_lab.lab import catalog
    from toolloop_lab.lab._runner import arun_one

    scenario = next(s for s in catalog() if s.name == name)
    return asyncio.run(arun_one(scenario, observers=observers))


# -- hostile text ----------------------------------------------------------------------------
PAYLOADS = [
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    '" onmouseover="alert(1)',
    "' onfocus='alert(1)' autofocus='",
    '<a href="javascript:alert(1)">click me</a>',
    "javascript:alert(1)",
    "<style>*{display:none!important}</style>",
    "<svg/onload=alert(1)>",
    "<iframe src=javascript:alert(1)></iframe>",
    "</pre></td></tr></table></div></script><b onclick=alert(1)>out</b>",
    "&lt;b&gt;already escaped&lt;/b&gt;",
]
"""The one list of hostile text every rendering test puts in every field: tags, event
handlers breaking out of quoted attributes, ``javascript:`` links, style blocks, SVG and
iframe tricks, markup closing our own containers (a ``<script>`` block included), and text
that is already escaped. In a browser, each would call ``alert`` if it ever ran."""
ALL = " ".join(PAYLOADS)


# -- the debugger's comm, mocked ----------------------------------------------------------
class MockComm(BaseComm):  # type: ignore[misc]
    """A comm that keeps what the widget publishes, and lets a test answer as a browser
    (``monkeypatch.setattr(comm, "create_comm", MockComm)`` before making the widget)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.published: list[tuple[str, dict[str, Any]]] = []
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, *args: Any, **kwargs: Any) -> None:
        self.published.append((msg_type, data or {}))

    def custom(self) -> list[dict[str, Any]]:
        """The custom messages sent so far (the event batches)."""
        return [
            d["content"]
            for kind, d in self.published
            if kind == "comm_msg" and d.get("method") == "custom"
        ]

    def updates(self) -> list[dict[str, Any]]:
        """The trait updates sent so far."""
        return [
            d["state"]
            for kind, d in self.published
            if kind == "comm_msg" and d.get("method") == "update"
        ]

    def from_browser(self, content: Any) -> None:
        """Deliver ``content`` as a custom message from the front end."""
        self.handle_msg(
            {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
        )


def channel(widget: Any) -> MockComm:
    """The mock comm of ``widget`` (made while ``comm.create_comm`` is ``MockComm``)."""
    assert isinstance(widget.comm, MockComm)
    return widget.comm


def received(widget: Any) -> list[dict[str, Any]]:
    """The events a browser folding every batch of ``widget`` in order ends up with
    (resets honoured); asserts each batch starts where the last one ended."""
    events: list[dict[str, Any]] = []
    for msg in channel(widget).custom():
        assert msg["type"] == "events"
        if msg["reset"]:
            events = []
        assert msg["first"] == len(events), "a batch must start where the last one ended"
        events.extend(msg["events"])
    return events


def strings(value: Any) -> Iterator[str]:
    """Every string in JSON data, dict keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


async def until(predicate: Callable[[], bool], limit: float = 10.0) -> None:
    """Wait on the running event loop until ``predicate()`` holds; fail after ``limit`` s."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while not predicate():
        assert loop.time() < end, "timed out waiting"
        await asyncio.sleep(0.005)


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Block this thread until ``condition()`` holds: whether it did within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


class FakeTime:
    """A clock and a timer queue the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def schedule(self, delay: float, callback: Callable[[], None]) -> bool:
        self.timers.append((self.now + delay, callback))
        return True

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        while True:
            due = sorted((t for t in self.timers if t[0] <= end), key=lambda t: t[0])
            if not due:
                break
            at, callback = due[0]
            self.timers.remove(due[0])
            self.now = max(self.now, at)
            callback()
        self.now = end
