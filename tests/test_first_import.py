"""A notebook's first cell, ``from toolloop_lab import LLMAgent, LoopDebugger``, stays cheap.

jsonschema (whose format checkers import ``rfc3987_syntax``, which builds a grammar at
import: about 1.4 s where JupyterLab is installed) and the widget stack (ipywidgets,
anywidget, traitlets) load only when first used. Each check runs in a fresh interpreter, so
modules other tests loaded cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

HEAVY = ("jsonschema", "rfc3987_syntax", "ipywidgets", "anywidget", "traitlets", "comm")
"""Never loaded by importing the agent, the debugger's name or running a plain run."""


def loaded_after(code: str) -> list[str]:
    """The modules of :data:`HEAVY` (and pandas, matplotlib) loaded after ``code`` runs in a
    fresh interpreter."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        f"""
        import json, sys
        watched = {(*HEAVY, "pandas", "matplotlib")!r}
        print(json.dumps(sorted(m for m in watched if m in sys.modules)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_importing_the_agent_and_the_debugger_name_loads_nothing_heavy() -> None:
    assert loaded_after("from toolloop_lab import LLMAgent, LoopDebugger") == []


def test_a_plain_run_and_an_isinstance_check_load_nothing_heavy() -> None:
    code = """
        from langchain_core.messages import AIMessage
        from langchain_core.tools import tool
        from toolloop_lab import LLMAgent, LoopDebugger, ScriptedChatModel

        @tool
        def echo(text: str) -> str:
            \"\"\"Echo.\"\"\"
            return text

        call = {"name": "echo", "args": {"text": "a"}, "id": "c1"}
        model = ScriptedChatModel([AIMessage("", tool_calls=[call]), AIMessage("done")])
        result = LLMAgent(model, [echo]).run("go")
        assert result.final_response.content == "done", result
        assert not isinstance(result, LoopDebugger)
        """
    assert loaded_after(code) == []


def test_the_debugger_loads_its_widget_when_first_built() -> None:
    code = """
        from toolloop_lab import LoopDebugger
        from toolloop_lab._widget.debugger import LoopDebugger as Widget
        assert isinstance(LoopDebugger(), Widget)
        """
    assert {"ipywidgets", "anywidget", "traitlets"} <= set(loaded_after(code))


def test_a_schema_check_at_a_pause_loads_jsonschema_then() -> None:
    code = """
        from langchain_core.tools import StructuredTool
        from toolloop_lab._engine.interventions import check_args

        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        tool = StructuredTool(name="t", description="d", args_schema=schema, func=lambda n: n)
        assert "'x' is not of type 'integer'" in check_args(tool, {"n": "x"})
        """
    assert "jsonschema" in loaded_after(code)
