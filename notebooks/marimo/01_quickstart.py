import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo

    mo.md(
        """
        # Quickstart in marimo: watch a tool loop run

        An LLM agent works in **rounds**: the model is called with tools bound, it asks for
        some tool calls, the tools run, their results go back into the conversation, and the
        model is called again, until it answers without asking for tools.

        This is the marimo version of the quickstart notebook: the same agent, the same live
        `LoopDebugger` (marimo draws it as it draws any anywidget, in its light or dark
        theme), the same figures. Everything runs offline on a scripted model: no API key,
        the same numbers every time. Run it with `marimo edit notebooks/marimo/01_quickstart.py`.
        """
    )
    return (mo,)


@app.cell
def _(mo):
    mo.md(
        """
        ## 1. A model and two tools

        `ScriptedChatModel` is a real langchain-core chat model that plays back replies
        written in advance, priced as `gpt-4o-mini`. Round 1 reads the quarterly report with
        `file_read` and echoes a snippet of the company web page with `echo`; round 2 asks
        for one more `echo`; then the answer. A second scripted model **prunes** the long
        report before the main model sees it.
        """
    )
    return


@app.cell
def _():
    from langchain_core.messages import AIMessage

    from toolloop_lab import (
        AgentConfig,
        LLMAgent,
        LoopDebugger,
        ScriptedChatModel,
        echo_tool,
        file_read_tool,
    )
    from toolloop_lab.lab import sample_data_dir

    def usage(input_tokens, output_tokens):
        """Token counts as a provider reports them."""
        return {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
        }

    def tool_call(name, args, call_id):
        return {"name": name, "args": args, "id": call_id, "type": "tool_call"}

    snippet = '<img src=x onerror="alert(1)"> shows the revenue chart'
    model = ScriptedChatModel(
        [
            AIMessage(
                "I'll read the report and note how the web page shows the chart.",
                tool_calls=[
                    tool_call("file_read", {"path": "report.txt"}, "call_read"),
                    tool_call("echo", {"text": snippet}, "call_snippet"),
                ],
                usage_metadata=usage(1_000, 50),
            ),
            AIMessage(
                "One more check.",
                tool_calls=[tool_call("echo", {"text": "churn 2.1%"}, "call_check")],
                usage_metadata=usage(3_500, 100),
            ),
            AIMessage(
                "Final answer: revenue grew 12% quarter on quarter and churn fell to 2.1%.",
                usage_metadata=usage(600, 40),
            ),
        ],
        model_name="gpt-4o-mini",
    )
    pruner = ScriptedChatModel(
        [
            AIMessage(
                "Q3: revenue +12% q/q; churn 2.1%; 2 incidents, both fixed.",
                usage_metadata=usage(900, 40),
            )
        ],
        model_name="gpt-4o-mini",
    )
    tools = [file_read_tool(sample_data_dir()), echo_tool()]
    config = AgentConfig(
        tool_max_rounds=6,
        token_budget_percent=50,
        context_window=10_000,
        prune_tools=("file_read",),
        prune_min_chars=1_000,
    )
    return LLMAgent, LoopDebugger, config, model, pruner, tools


@app.cell
def _(mo):
    mo.md(
        """
        ## 2. The live debugger

        A debugger is an **observer** of the agent's runs: build the agent with it among its
        `observers`, show it, then run the agent. It updates while the loop runs: the status,
        the question asked, the token and USD gauges, step-mode controls, a timeline of the
        whole run, one row per round, and every message of any round.
        """
    )
    return


@app.cell
def _(LLMAgent, LoopDebugger, config, model, pruner, tools):
    dbg = LoopDebugger()
    agent = LLMAgent(model, tools, config, pruning_model=pruner, observers=[dbg])
    dbg
    return agent, dbg


@app.cell
async def _(agent):
    result = await agent.arun("How did revenue and churn do last quarter?", name="quarterly")
    print(result.final_response.text)
    return (result,)


@app.cell
def _(mo):
    mo.md(
        """
        ## 3. What happened

        Round 1 ran both tools; the report was pruned before the main model saw it, and the
        echoed snippet's HTML shows as text (a tool's output never runs). Round 2 pushed spend
        past the 5,000-token budget, so the token gate tripped: the round's tool call was not
        run, and one **synthesis** call without tools asked for the best answer so far. The
        same facts are on the result:
        """
    )
    return


@app.cell
def _(result):
    print("rounds:          ", result.rounds)
    print("tool rounds:     ", result.tool_rounds)
    print("model calls:     ", result.model_calls)
    print("synthesis:       ", result.synthesis_was_run, "-", result.synthesis_reason)
    print("input tokens:    ", result.accumulated_prompt)
    print("output tokens:   ", result.accumulated_completion)
    print("cost (USD):      ", result.cost_usd)
    return


@app.cell
def _(mo):
    mo.md(
        """
        ## 4. Keep it, send it

        `dbg.export_html(path)` writes one HTML file with the whole view of every run the
        debugger kept (its code, styles and events inside): it opens offline in any browser,
        with no kernel and no package. `to_markdown(dbg.events)` gives a run as text to paste into an
        issue or a model.
        """
    )
    return


@app.cell
def _(dbg):
    import tempfile
    from pathlib import Path

    from toolloop_lab import to_markdown

    shared = dbg.export_html(Path(tempfile.mkdtemp()) / "quarterly.html")
    print(shared.name, f"{shared.stat().st_size // 1024} KB")
    print(to_markdown(dbg.events).splitlines()[0])
    return


if __name__ == "__main__":
    app.run()
