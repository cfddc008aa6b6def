"""The controls in a real kernel, as a notebook drives them: ``LLMAgent(...,
observers=[dbg])``, then a cell awaiting ``agent.arun(...)`` or calling ``agent.run(...)``,
while a client plays the
page (its ``hello``, Step and Stop as comm messages on the shell channel, or on a kernel
subshell as JupyterLab sends them) and reads what the widget sends back on IOPub.

What must hold whatever the kernel's version: a run whose controls say they reach it
pauses, steps and stops (the cell then raises ``RunStopped``, one line, and the kernel is
free and clean); a run they do not reach is never held, runs to its end, and the page is
told why.
"""

from __future__ import annotations

import os
import queue
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from toolloop_lab._widget.reach import KernelInfo

jupyter_client = pytest.importorskip("jupyter_client")
manager = pytest.importorskip("jupyter_client.manager")

REPO = Path(__file__).resolve().parents[2]
_LIMIT_S = 60.0

SETUP = """
import asyncio
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
import ipykernel
from toolloop_lab import LLMAgent, ScriptedChatModel
from toolloop_lab._widget.debugger import LoopDebugger

@tool
async def slow(x: int) -> int:
    \"\"\"Wait a while, then give x back.\"\"\"
    await asyncio.sleep(0.4)
    return x

def make_agent(rounds, *observers):
    asks = [AIMessage("", tool_calls=[{"name": "slow", "args": {"x": i}, "id": f"c{i}",
            "type": "tool_call"}]) for i in range(rounds)]
    model = ScriptedChatModel([*asks, AIMessage("done")], model_name="gpt-4o-mini")
    return LLMAgent(model, [slow], observers=observers)

def make_parent(sub, *observers):
    @tool
    async def ask_helper(question: str) -> str:
        \"\"\"Ask the helper agent.\"\"\"
        return (await sub.arun(question)).final_response.text
    call = {"name": "ask_helper", "args": {"question": "q"}, "id": "h1", "type": "tool_call"}
    model = ScriptedChatModel([AIMessage("", tool_calls=[call]), AIMessage("parent done")],
                              model_name="gpt-4o-mini")
    return LLMAgent(model, [ask_helper], observers=observers)
print(ipykernel.__version__)
"""


@dataclass
class Kernel:
    """One kernel and its client; what the widget sent, as the page would read it."""

    client: Any
    version: str
    watched: str = ""
    """The comm whose messages :attr:`controls` keeps (the debugger a test plays)."""
    controls: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(self, code: str) -> str:
        """Run ``code`` to its end; its printed output."""
        out: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])

        reply = self.client.execute_interactive(code, output_hook=hook, timeout=_LIMIT_S)
        assert reply["content"]["status"] == "ok", reply["content"]
        return "".join(out)

    def submit(self, code: str) -> str:
        """Start ``code`` in a cell and return at once (a cell that raises does not make
        the kernel drop the cells sent right after it)."""
        msg_id: str = self.client.execute(code, stop_on_error=False)
        return msg_id

    def send(self, comm_id: str, content: dict[str, Any], subshell: str | None) -> None:
        """A custom message from the page to the widget."""
        data = {"method": "custom", "content": content}
        msg = self.client.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        if subshell is not None:
            msg["header"]["subshell_id"] = subshell
        self.client.shell_channel.send(msg)

    def subshell(self) -> str:
        """A new kernel subshell (what JupyterLab makes for widget messages)."""
        self.client.control_channel.send(self.client.session.msg("create_subshell_request", {}))
        reply = self.client.control_channel.get_msg(timeout=_LIMIT_S)
        subshell_id: str = reply["content"]["subshell_id"]
        return subshell_id

    def pump(self, done: Callable[[], bool], limit: float = _LIMIT_S) -> None:
        """Read IOPub and the shell's replies until ``done()``."""
        end = time.monotonic() + limit
        while not done():
            assert time.monotonic() < end, f"timed out; last control: {self.control()}"
            self._read(self.client.iopub_channel, self._iopub)
            self._read(self.client.shell_channel, self._shell)

    @staticmethod
    def _read(channel: Any, take: Callable[[dict[str, Any]], None]) -> None:
        try:
            take(channel.get_msg(timeout=0.02))
        except queue.Empty:
            return

    def _iopub(self, msg: dict[str, Any]) -> None:
        content = msg["content"]
        if msg["msg_type"] == "error":
            self.errors.append(content)
        data = content.get("data") if msg["msg_type"] == "comm_msg" else None
        if content.get("comm_id") != self.watched:
            return
        if isinstance(data, dict) and data.get("method") == "custom":
            control = data["content"].get("control")
            if control is not None:
                self.controls.append(control)

    def _shell(self, msg: dict[str, Any]) -> None:
        self.replies[msg["parent_header"].get("msg_id", "")] = msg["content"]

    def control(self) -> dict[str, Any]:
        return self.controls[-1] if self.controls else {}


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    path = os.pathsep.join([str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])
    km, client = manager.start_new_kernel(
        kernel_name="python3", env={**os.environ, "PYTHONPATH": path}
    )
    try:
        one = Kernel(client, "")
        one.version = one.run(SETUP).strip()
        yield one
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)


def _debugger(kernel: Kernel, name: str, pause_on: str, rounds: int) -> str:
    """``name`` = a debugger given to an agent with ``rounds`` slow rounds as its observer
    (``LLMAgent(..., observers=[dbg])``, the one way to connect it); its comm id."""
    return _watch(
        kernel,
        f"{name} = LoopDebugger(pause_on={pause_on!r})\n"
        f"{name}_agent = make_agent({rounds}, {name}); print({name}.comm.comm_id)",
    )


def _watch(kernel: Kernel, code: str) -> str:
    """Run ``code``, which prints a debugger's comm id: the test plays that debugger's page."""
    comm_id = kernel.run(code).strip()
    kernel.watched, kernel.controls = comm_id, []
    return comm_id


def _paused(kernel: Kernel, stage: str) -> Callable[[], bool]:
    return lambda: (kernel.control().get("paused_at") or {}).get("stage") == stage


def test_stop_and_step_reach_a_run_the_cell_awaits_with_the_debugger_as_its_observer(
    kernel: Kernel,
) -> None:
    comm_id = _debugger(kernel, "dbg", "tools", 4)
    kernel.send(comm_id, {"type": "hello"}, None)
    cell = kernel.submit("await dbg_agent.arun('go')")
    kernel.pump(lambda: kernel.control().get("running") is True or cell in kernel.replies)
    if not KernelInfo(kernel.version).comms_during_await:  # ipykernel < 7.4: told, not held
        kernel.pump(lambda: cell in kernel.replies)
        assert kernel.replies[cell]["status"] == "ok"
        assert kernel.control()["reach"]["code"] == "old_kernel"
        return
    assert kernel.control()["reach"] == {
        "stop": True,
        "pause": True,
        "why": None,
        "code": None,
        "hint": None,
    }
    kernel.pump(_paused(kernel, "tool_dispatch"))
    first = kernel.control()["paused_at"]
    kernel.send(comm_id, {"type": "control", "action": "step", "pause": first["pause"]}, None)
    kernel.pump(lambda: (kernel.control().get("paused_at") or {}).get("round") == 2)
    kernel.send(comm_id, {"type": "control", "action": "stop"}, None)
    # the reply comes on the shell channel and the error shown on IOPub: each is read on
    # its own, so the reply may be read first (seen on a slow machine); wait for both
    kernel.pump(
        lambda: cell in kernel.replies and any(e["ename"] == "RunStopped" for e in kernel.errors)
    )

    assert kernel.replies[cell]["ename"] == "RunStopped"
    [shown] = [e for e in kernel.errors if e["ename"] == "RunStopped"]
    assert len(shown["traceback"]) == 1  # one line, no asyncio traceback
    assert "stopped in round 2 (1 round done" in shown["traceback"][0]
    kernel.pump(lambda: kernel.control().get("running") is False)
    assert kernel.control()["stopped_by_user"] is True
    # the partial counts stay, and the cell's task is not left cancelled: the kernel is free
    after = kernel.run(
        "print(dbg.view.status, dbg.view.failure.rounds, asyncio.current_task().cancelling())"
    )
    assert after.split() == ["cancelled", "1", "0"]
    assert kernel.run("print(1 + 1)").strip() == "2"


def test_a_sync_run_the_clicks_cannot_reach_is_never_held(kernel: Kernel) -> None:
    comm_id = _debugger(kernel, "sync_dbg", "tools", 2)
    kernel.send(comm_id, {"type": "hello"}, None)
    kernel.pump(lambda: bool(kernel.controls))
    cell = kernel.submit("result = sync_dbg_agent.run('go'); print(result.final_response.text)")
    kernel.pump(lambda: kernel.control().get("reach", {}).get("code") == "sync_run")
    kernel.send(comm_id, {"type": "control", "action": "stop"}, None)  # read after the cell
    kernel.pump(lambda: cell in kernel.replies)
    assert kernel.replies[cell]["status"] == "ok", kernel.replies[cell]
    reach = kernel.control()["reach"]
    assert (reach["stop"], reach["pause"]) == (False, False)
    assert reach["why"].startswith("agent.run() keeps the kernel busy")
    assert kernel.run("print(sync_dbg.view.status, sync_dbg.pause_on)").split() == [
        "finished",
        "tools",
    ]


def test_on_a_subshell_a_sync_run_is_held_exactly_when_clicks_reach_it(kernel: Kernel) -> None:
    """JupyterLab sends widget messages to a subshell: ipykernel 7.0 to 7.3 read them on its
    own thread (a sync run is reached), 7.4 routes a cell-made widget's back to the main
    shell (it is not). Either way the debugger must say what it does."""
    subshell = kernel.subshell()
    comm_id = _debugger(kernel, "sub_dbg", "tools", 3)
    kernel.send(comm_id, {"type": "hello"}, subshell)
    kernel.pump(lambda: bool(kernel.controls))
    cell = kernel.submit("sub_dbg_agent.run('go')")
    kernel.pump(lambda: kernel.control().get("running") is True or cell in kernel.replies)
    reach = kernel.control()["reach"]
    if reach["stop"]:
        kernel.pump(_paused(kernel, "tool_dispatch"))
        kernel.send(comm_id, {"type": "control", "action": "stop"}, subshell)
        kernel.pump(lambda: cell in kernel.replies)
        assert kernel.replies[cell]["ename"] == "RunStopped"
    else:
        assert reach["code"] == "sync_run"
        kernel.pump(lambda: cell in kernel.replies)
        assert kernel.replies[cell]["status"] == "ok"
        assert all(c.get("paused_at") is None for c in kernel.controls[-3:])


def test_a_nested_run_is_held_only_through_its_parent(kernel: Kernel) -> None:
    """A sub-agent awaited by a tool of the held run, connected too: the page pauses the
    parent only (the sub-agent never waits at a pause of its own), and a Stop of the
    parent is what ends it."""
    if not KernelInfo(kernel.version).comms_during_await:
        pytest.skip(f"ipykernel {kernel.version} reads clicks only after a cell ends")
    comm_id = _watch(
        kernel,
        'nest = LoopDebugger(pause_on="model"); helper = make_agent(1, nest)\n'
        "nest_agent = make_parent(helper, nest)\n"
        "print(nest.comm.comm_id)",
    )
    kernel.send(comm_id, {"type": "hello"}, None)
    cell = kernel.submit("await nest_agent.arun('go')")
    kernel.pump(_paused(kernel, "model_call"))
    first = kernel.control()["paused_at"]
    kernel.send(comm_id, {"type": "control", "action": "step", "pause": first["pause"]}, None)
    # the helper runs its two model calls unheld; the parent waits again before its second
    kernel.pump(lambda: (kernel.control().get("paused_at") or {}).get("round") == 2)
    second = kernel.control()["paused_at"]
    assert second["run_id"] == first["run_id"]
    kernel.send(comm_id, {"type": "control", "action": "stop"}, None)
    kernel.pump(lambda: cell in kernel.replies)
    assert kernel.replies[cell]["ename"] == "RunStopped"
    runs = kernel.run(
        "print(*[(r.run_id == r0, r.outcome) for r0 in [nest.runs[-2].run_id]"
        " for r in nest.runs[-2:]], nest.runs[-1].parent_run_id == nest.runs[-2].run_id)"
    )
    assert runs.split() == ["(True,", "'cancelled')", "(False,", "'final_answer')", "True"]


def test_stop_reaches_a_run_that_only_reports_to_the_debugger(kernel: Kernel) -> None:
    """An agent that feeds the debugger its events without having it as an observer (a
    function of its own in between): the run has no pause hook, so it never pauses, and
    the page says how to connect it; Stop still reaches it."""
    if not KernelInfo(kernel.version).comms_during_await:
        pytest.skip(f"ipykernel {kernel.version} reads clicks only after a cell ends")
    comm_id = _watch(
        kernel,
        'seen = LoopDebugger(pause_on="tools"); seen_agent = make_agent(4, lambda e: seen(e))\n'
        "print(seen.comm.comm_id)",
    )
    kernel.send(comm_id, {"type": "hello"}, None)
    cell = kernel.submit("await seen_agent.arun('go')")
    kernel.pump(lambda: kernel.control().get("running") is True)
    reach = kernel.control()["reach"]
    assert (reach["stop"], reach["pause"], reach["code"]) == (True, False, "not_connected")
    assert "observers=[dbg]" in reach["why"]
    kernel.send(comm_id, {"type": "control", "action": "stop"}, None)
    kernel.pump(lambda: cell in kernel.replies)
    assert kernel.replies[cell]["ename"] == "RunStopped"
    assert all(c.get("paused_at") is None for c in kernel.controls[-20:])
