"""A pydantic-ai agent watched through its OpenTelemetry spans, live, in a real JupyterLab.

A cell awaits ``agent.run(...)`` inside ``watch_spans(provider, dbg)``: the debugger shows
the run while it is in flight (the Running badge, its first round), with Continue, Step,
Stop and the pause selector off and saying why (the run is read from spans, not driven),
then the finished run: the answer, the tool calls, the tokens pydantic-ai reported, and
"Fork from here" off with its reason (no agent of ours to run it again with).

Screenshots (light, dark, 600 px) go to ``test-artifacts/spans_*.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from browser.jupyterkit import (
    Jupyter,
    looks,
    ours,
    run_all_cells,
    shot,
    wait_idle,
    widget,
    write_notebook,
)

pytestmark = pytest.mark.browser

AGENT = '''\
import asyncio
from opentelemetry.sdk.trace import TracerProvider
from pydantic_ai import Agent
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage
from toolloop_lab import LoopDebugger

replies = iter([
    ModelResponse(parts=[ToolCallPart("lookup", {"ticket": 7}, tool_call_id="t7")],
                  usage=RequestUsage(input_tokens=420, output_tokens=18)),
    ModelResponse(parts=[ToolCallPart("lookup", {"ticket": 8}, tool_call_id="t8")],
                  usage=RequestUsage(input_tokens=470, output_tokens=18)),
    ModelResponse(parts=[TextPart("Ticket 7 is open; ticket 8 is closed.")],
                  usage=RequestUsage(input_tokens=530, output_tokens=12)),
])


async def model(messages, info):
    await asyncio.sleep(0.8)
    return next(replies)


agent = Agent(FunctionModel(model, model_name="gpt-4o-mini"), name="support")


@agent.tool_plain
async def lookup(ticket: int) -> str:
    """Look a ticket up (slowly)."""
    await asyncio.sleep(0.8)
    return f"ticket {ticket}: " + ("open" if ticket == 7 else "closed")


provider = TracerProvider()
agent.instrument = InstrumentationSettings(tracer_provider=provider)
'''

SPANS_WHY = "reads this run from its OpenTelemetry spans but does not drive it"


def test_a_pydantic_ai_run_shows_live_from_its_spans(page_for: Any, jupyter: Jupyter) -> None:
    name = write_notebook(
        jupyter.root,
        "spans_pydantic_ai.ipynb",
        [
            AGENT,
            "dbg = LoopDebugger()\ndbg",
            "from toolloop_lab.otel import watch_spans\n"
            "with watch_spans(provider, dbg):\n"
            '    result = await agent.run("Are tickets 7 and 8 open?")\n'
            "result.output",
        ],
    )
    page = page_for(name, "lab")
    try:
        run_all_cells(page)
        live = widget(page, 0)
        hint = live.locator(".tl-reach-hint")
        hint.get_by_text(
            "Run read from spans: the debugger cannot pause, edit or stop it"
        ).wait_for()
        live.locator(".tl-badge", has_text="Running").wait_for()  # in flight
        shot(live, "spans_running")
        for label in ("Continue", "Step", "Stop"):
            button = live.get_by_role("button", name=label)
            assert button.is_disabled(), label
            assert SPANS_WHY in (button.get_attribute("title") or ""), label
        assert live.locator(".tl-controls select").is_disabled()

        live.locator(".tl-badge", has_text="Finished").wait_for(timeout=30_000)
        text = " ".join(live.inner_text().split())
        assert "Answered: Ticket 7 is open; ticket 8 is closed." in text
        assert "lookup" in text
        assert "1,420" in text  # input tokens: 420 + 470 + 530, as pydantic-ai reported them
        assert "unpriced" not in text  # gpt-4o-mini is priced by genai-prices
        fork = live.get_by_role("button", name="Fork from here")
        assert fork.is_disabled()  # no agent of ours to run it again with
        assert "knows no agent to fork with" in (fork.get_attribute("title") or "")
        wait_idle(page)
        output = page.locator(".jp-Notebook .jp-Cell").nth(2).locator(".jp-OutputArea")
        output.get_by_text("Ticket 7 is open; ticket 8 is closed.").wait_for()
        looks(page, live, "spans_finished")
        assert not ours(page.errors), page.errors
    except BaseException:
        shot(page, "spans_failure")
        print("\n".join(page.errors))
        print(jupyter.log_tail())
        raise
