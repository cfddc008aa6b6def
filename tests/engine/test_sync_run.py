"""``agent.run`` is synchronous outside and inside a running event loop (the notebook case),
keeps the caller's USD budget either way, and reuses one event loop across calls."""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
import signal
import threading
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import IN_A_LOOP, MODEL, calls, final, reference_cost, tool_call

from toolloop_lab import LLMAgent, ScriptedChatModel, ToolLoopResult, usd_budget
from toolloop_lab.errors import ExecutionError
from toolloop_lab.events import Event, LoopFailed, LoopStarted, ToolDispatched

# asyncio.run stands in for a notebook cell here, but is no IPython shell: the warning
# for asyncio apps is tested on its own, at the end
pytestmark = pytest.mark.filterwarnings(IN_A_LOOP)

SAFETY_S = 30.0
"""Only a deadlock guard: turns a hang into a failure, never a timing assertion."""


def _model() -> ScriptedChatModel:
    return ScriptedChatModel(
        [
            calls(tool_call("echo", {"text": "hi"}, "c1"), tokens=(100, 10)),
            final("sync ok", (200, 20)),
        ],
        model_name=MODEL,
    )


def test_run_without_an_event_loop(echo_tool: BaseTool) -> None:
    result = LLMAgent(_model(), [echo_tool]).run("go")
    assert result.final_response.text == "sync ok"
    assert (result.accumulated_prompt, result.accumulated_completion) == (300, 30)
    assert result.cost_usd == reference_cost([(100, 10), (200, 20)])


async def test_run_inside_a_running_event_loop() -> None:
    # what a notebook cell does: a loop is already running when run() is called
    caller = threading.get_ident()
    threads: list[int] = []

    @tool
    def echo(text: str) -> str:
        """Echo, remembering which thread the loop ran on."""
        threads.append(threading.get_ident())
        return text

    asyncio.get_running_loop()  # precondition: we are inside a loop
    result = LLMAgent(_model(), [echo]).run("go")
    assert result.final_response.text == "sync ok"
    assert result.accumulated_prompt == 300
    assert len(threads) == 1
    assert threads[0] != caller


@pytest.mark.parametrize("inside_loop", [False, True])
def test_run_keeps_the_callers_usd_budget(inside_loop: bool, echo_tool: BaseTool) -> None:
    limit = reference_cost([(100, 10)]) / 2

    def call_run() -> ExecutionError:
        with usd_budget(limit), pytest.raises(ExecutionError) as info:
            LLMAgent(_model(), [echo_tool]).run("go")
        return info.value

    if inside_loop:

        async def notebook_cell() -> ExecutionError:
            return call_run()

        err = asyncio.run(notebook_cell())
    else:
        err = call_run()
    assert (err.kind, err.reason) == ("cost", "budget_exhausted")
    assert err.cost_usd == reference_cost([(100, 10)])
    started = err.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit == limit


async def test_run_inside_a_loop_sees_a_generous_budget_as_a_limit() -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    with usd_budget(Decimal(3)):
        result = LLMAgent(_model(), [echo]).run("go")
    started = result.events[0]
    assert isinstance(started, LoopStarted)
    assert started.usd_limit == Decimal(3)


class LoopBoundPool:
    """Like a provider SDK's pooled HTTP client: bound to the loop that first used it."""

    def __init__(self) -> None:
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def request(self) -> str:
        loop = asyncio.get_running_loop()
        if self.loops and self.loops[0] is not loop:
            raise RuntimeError(
                "Event loop is closed" if self.loops[0].is_closed() else "bound to another loop"
            )
        self.loops.append(loop)
        await asyncio.sleep(0)
        return "pooled ok"


def _pooled_agent(pool: LoopBoundPool, replies: int) -> tuple[LLMAgent, ScriptedChatModel]:
    @tool
    async def fetch() -> str:
        """Uses the pooled client."""
        return await pool.request()

    script: list[Any] = []
    for n in range(replies):
        script += [calls(tool_call("fetch", {}, f"f{n}")), final(f"run {n}")]
    model = ScriptedChatModel(script, model_name=MODEL)
    return LLMAgent(model, [fetch]), model


def _fetch_status(result: ToolLoopResult) -> list[tuple[str, str]]:
    return [(str(m.content), m.status) for m in result.messages if isinstance(m, ToolMessage)]


def test_repeated_sync_runs_share_one_event_loop() -> None:
    pool = LoopBoundPool()
    agent, _ = _pooled_agent(pool, 3)
    results = [agent.run("go") for _ in range(3)]
    assert [r.final_response.text for r in results] == ["run 0", "run 1", "run 2"]
    assert [_fetch_status(r) for r in results] == [[("pooled ok", "success")]] * 3
    assert len(pool.loops) == 3
    assert len(set(map(id, pool.loops))) == 1
    assert not pool.loops[0].is_closed()


async def test_repeated_runs_inside_a_running_loop_share_one_background_loop() -> None:
    pool = LoopBoundPool()
    agent, _ = _pooled_agent(pool, 2)
    first = agent.run("go")
    second = agent.run("go")
    assert _fetch_status(first) == _fetch_status(second) == [("pooled ok", "success")]
    assert pool.loops[0] is pool.loops[1]
    assert pool.loops[0] is not asyncio.get_running_loop()


def test_each_thread_gets_its_own_loop_and_it_is_closed_with_the_thread() -> None:
    pool_main, pool_thread = LoopBoundPool(), LoopBoundPool()
    main_agent, _ = _pooled_agent(pool_main, 1)
    thread_agent, _ = _pooled_agent(pool_thread, 1)
    main_agent.run("go")
    worker = threading.Thread(target=thread_agent.run, args=("go",))
    worker.start()
    worker.join()
    del worker
    gc.collect()
    assert pool_thread.loops[0] is not pool_main.loops[0]
    assert pool_thread.loops[0].is_closed()
    assert not pool_main.loops[0].is_closed()


@pytest.mark.parametrize("inside_loop", [False, True])
def test_runs_after_an_interrupted_run_still_work(inside_loop: bool, echo_tool: BaseTool) -> None:
    def two_runs() -> tuple[list[Event], str]:
        events: list[Event] = []
        model = ScriptedChatModel([KeyboardInterrupt(), final("after")], model_name=MODEL)
        agent = LLMAgent(model, [echo_tool], observers=[events.append])
        with pytest.raises(KeyboardInterrupt):
            agent.run("go")
        return events, agent.run("again").final_response.text

    if inside_loop:

        async def cell() -> tuple[list[Event], str]:
            return two_runs()

        events, text = asyncio.run(cell())
    else:
        events, text = two_runs()
    assert text == "after"
    failed = next(e for e in events if isinstance(e, LoopFailed))
    assert failed.cancelled is True
    assert [e.kind for e in events].count("loop_finish") == 1


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
@pytest.mark.parametrize("inside_loop", [False, True])
def test_ctrl_c_while_run_waits_cancels_the_run_before_raising(inside_loop: bool) -> None:
    # A real SIGINT reaches the main thread while the run is blocked in a tool; the run is
    # cancelled, its open call answered and its final event emitted before the caller
    # sees KeyboardInterrupt.
    main = threading.main_thread().ident
    assert main == threading.get_ident()
    events: list[Event] = []

    @tool
    async def hang() -> str:
        """Presses Ctrl-C on the main thread, then waits to be cancelled."""
        sender = threading.Thread(target=signal.pthread_kill, args=(main, signal.SIGINT))
        sender.start()
        # Bounded: a Ctrl-C that never reaches the run fails the test ("DID NOT RAISE")
        # after a minute instead of hanging the suite (a full run on Python 3.12 hung here
        # once, with the main thread idle in the event loop; not reproduced in 3,000 more).
        await asyncio.sleep(60)
        return "unreachable"

    model = ScriptedChatModel([calls(tool_call("hang", {}, "h1")), final("never")])
    agent = LLMAgent(model, [hang], observers=[events.append])

    def press() -> None:
        with pytest.raises(KeyboardInterrupt):
            agent.run("go")

    if inside_loop:

        async def cell() -> None:
            # ipykernel runs a cell with Python's default SIGINT handler (asyncio.run's own
            # handler would only cancel this coroutine, which is blocked in run())
            previous = signal.signal(signal.SIGINT, signal.default_int_handler)
            try:
                press()
            finally:
                signal.signal(signal.SIGINT, previous)

        asyncio.run(cell())
    else:
        press()
    assert [e.kind for e in events][-2:] == ["tool_dispatch", "loop_failure"]
    closed = events[-2]
    assert isinstance(closed, ToolDispatched)
    assert (closed.tool_call_id, closed.error_reason) == ("h1", "cancelled")
    failed = events[-1]
    assert isinstance(failed, LoopFailed)
    assert failed.cancelled is True
    assert len(model.calls) == 1


class _Litter:
    """Garbage an earlier test left behind: a cycle only the collector frees, whose
    finalizer runs Python code (as a coroutine's, a generator's or an unclosed loop's do)."""

    def __init__(self, inside: threading.Event, pressed: threading.Event) -> None:
        self.inside, self.pressed, self.cycle = inside, pressed, self

    def __del__(self) -> None:
        self.inside.set()
        self.pressed.wait(SAFETY_S)  # the Ctrl-C reaches the main thread in here


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="needs POSIX signals")
def test_ctrl_c_while_a_finalizer_runs_still_stops_the_run() -> None:
    # A Ctrl-C reaches Python as KeyboardInterrupt raised wherever the main thread is at
    # that moment. When the collector is running a finalizer there (garbage of earlier
    # tests, freed by a collection a tool's allocation triggers), Python can only print
    # "Exception ignored in __del__" and go on: the Ctrl-C was lost, the run went on to its
    # end, and the test waited for its tool's sleep (what timed out in the unit subset).
    # A sync run takes Ctrl-C as asyncio.run does: it cancels the run, wherever it lands.
    main = threading.main_thread().ident
    events: list[Event] = []
    inside, pressed = threading.Event(), threading.Event()

    def press() -> None:
        inside.wait(SAFETY_S)
        signal.pthread_kill(main, signal.SIGINT)  # type: ignore[arg-type]
        pressed.set()

    @tool
    async def busy() -> str:
        """Works while the collector frees an earlier test's garbage."""
        threading.Thread(target=press).start()
        _Litter(inside, pressed)
        gc.collect()  # as a collection the tool's own allocations trigger would
        await asyncio.sleep(SAFETY_S)
        return "the Ctrl-C was lost"

    model = ScriptedChatModel([calls(tool_call("busy", {}, "b1")), final("never")])
    agent = LLMAgent(model, [busy], observers=[events.append])
    with pytest.raises(KeyboardInterrupt):
        agent.run("go")
    assert [e.kind for e in events][-2:] == ["tool_dispatch", "loop_failure"]
    closed, failed = events[-2:]
    assert isinstance(closed, ToolDispatched)
    assert (closed.tool_call_id, closed.error_reason) == ("b1", "cancelled")
    assert isinstance(failed, LoopFailed)
    assert failed.cancelled is True
    assert len(model.calls) == 1


def test_a_job_interrupted_before_it_started_is_closed_and_never_started() -> None:
    from toolloop_lab._support.sync_runner import _background_runner, _Submitted

    async def body() -> str:
        return "must never run"

    coro = body()
    job = _Submitted(coro)
    background = _background_runner()
    background._cancel(job)  # the caller's interruption came before _start was queued
    assert job.done.is_set()
    assert job.abandoned is True
    # closed: no "never awaited" warning, nothing pending
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED
    background._start(job)
    assert job.task is None


# -- a sync run inside a run (issue 12, item 8) ---------------------------------------------


def _notebook_cell(body: Any) -> list[Any]:
    """Run ``body`` the way a notebook cell does: synchronously, on a thread whose own event
    loop is running. Returns what it returned (or raised); a hang is a failure, not a hang."""
    out: list[Any] = []

    def thread() -> None:
        async def cell() -> None:
            try:
                out.append(body())
            except BaseException as exc:  # noqa: BLE001 - handed to the test
                out.append(exc)

        asyncio.run(cell())

    worker = threading.Thread(target=thread, daemon=True)
    worker.start()
    worker.join(SAFETY_S)
    assert not worker.is_alive(), "the nested run hung"
    return out


def test_an_async_tool_may_run_a_sub_agent_synchronously() -> None:
    sub = LLMAgent(ScriptedChatModel([final("inner answer", (7, 3))], model_name=MODEL))

    @tool
    async def ask_sub_agent(question: str) -> str:
        """Asks another agent, with its sync API (as a notebook user would write it)."""
        return sub.run(question).final_response.text

    outer = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("ask_sub_agent", {"question": "q"}, "s1")), final("outer done")],
            model_name=MODEL,
        ),
        [ask_sub_agent],
    )
    (result,) = _notebook_cell(lambda: outer.run("go"))
    assert isinstance(result, ToolLoopResult), result
    assert result.final_response.text == "outer done"
    answer = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert (answer.status, answer.content) == ("success", "inner answer")


def test_sync_runs_nest_more_than_one_level() -> None:
    innermost = LLMAgent(ScriptedChatModel([final("deep")], model_name=MODEL))

    @tool
    async def level_two(q: str) -> str:
        """Runs the innermost agent."""
        return innermost.run(q).final_response.text

    middle = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("level_two", {"q": "x"}, "m1")), final("middle")], model_name=MODEL
        ),
        [level_two],
    )

    @tool
    async def level_one(q: str) -> str:
        """Runs the middle agent."""
        return middle.run(q).messages[2].text

    outer = LLMAgent(
        ScriptedChatModel(
            [calls(tool_call("level_one", {"q": "x"}, "o1")), final("outer")], model_name=MODEL
        ),
        [level_one],
    )
    (result,) = _notebook_cell(lambda: outer.run("go"))
    assert isinstance(result, ToolLoopResult), result
    answer = next(m for m in result.messages if isinstance(m, ToolMessage))
    assert answer.content == "deep"


# -- run() in an asyncio app (issue 28, "Async apps") ---------------------------------------
ARUN_HINT = r"await agent\.arun\(\.\.\.\)"


@pytest.fixture
def no_ipython_shell() -> None:
    """An app outside IPython: earlier tests in this process may have made a shell."""
    from IPython.core.interactiveshell import InteractiveShell

    InteractiveShell.clear_instance()


@pytest.mark.usefixtures("no_ipython_shell")
def test_run_inside_an_asyncio_app_warns_once_pointing_to_arun() -> None:
    agent = LLMAgent(ScriptedChatModel(["one", "two", "three"], model_name=MODEL))

    async def app() -> list[str]:
        with pytest.warns(RuntimeWarning, match=ARUN_HINT) as seen:
            texts = [agent.run("go").final_response.text for _ in range(2)]
        warned = [w for w in seen if issubclass(w.category, RuntimeWarning)]
        assert len(warned) == 1, "once per event loop"
        assert warned[0].filename == __file__, "it points at the line that called run()"
        assert "blocks" in str(warned[0].message)
        return texts

    assert asyncio.run(app()) == ["one", "two"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert agent.run("go").final_response.text == "three", "no loop runs: no warning"


async def test_awaiting_run_says_to_await_arun() -> None:
    agent = LLMAgent(ScriptedChatModel(["done", "again"], model_name=MODEL))
    with (
        pytest.warns(RuntimeWarning, match=ARUN_HINT),
        pytest.raises(TypeError, match=rf"^agent\.run\(\.\.\.\) is synchronous.*{ARUN_HINT}"),
    ):
        await agent.run("go")  # type: ignore[misc]
    assert (await agent.arun("go")).final_response.text == "again"


def test_run_in_a_jupyter_kernel_does_not_warn(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    root = Path(__file__).resolve().parents[2]
    cell = "\n".join(
        [
            "import asyncio, warnings",
            "warnings.simplefilter('error')  # a warning fails the cell",
            "from toolloop_lab import LLMAgent, ScriptedChatModel",
            "agent = LLMAgent(ScriptedChatModel(['a', 'b'], model_name='gpt-4o-mini'))",
            "loop = asyncio.get_running_loop()  # a kernel runs its cells inside a loop",
            "print(agent.run('go').final_response.text, agent.run('go').final_response.text)",
        ]
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    env = {"PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
        client.execute(cwd=str(tmp_path))
    outputs = notebook.cells[0].outputs
    assert [o.get("name") for o in outputs] == ["stdout"], outputs
    assert outputs[0]["text"] == "a b\n"
