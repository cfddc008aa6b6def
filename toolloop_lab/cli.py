"""``toolloop-lab`` command: the main job runs on the built-in scripted models."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from langchain_core.messages import AIMessage

from toolloop_lab.agent import AgentConfig, LLMAgent
from toolloop_lab.builtin_tools import echo_tool
from toolloop_lab.models import ScriptedChatModel

__all__ = ["main"]


def _demo_model() -> ScriptedChatModel:
    def call(n: int, text: str) -> AIMessage:
        return AIMessage(
            "",
            tool_calls=[{"name": "echo", "args": {"text": text}, "id": f"call_{n}"}],
            usage_metadata={
                "input_tokens": 120 * n,
                "output_tokens": 18,
                "total_tokens": 120 * n + 18,
            },
        )

    final = AIMessage(
        "The echo tool answered both times; the loop is done.",
        usage_metadata={"input_tokens": 410, "output_tokens": 24, "total_tokens": 434},
    )
    return ScriptedChatModel([call(1, "first"), call(2, "second"), final], model_name="gpt-4o-mini")


def _demo(_args: argparse.Namespace) -> int:
    agent = LLMAgent(_demo_model(), [echo_tool()], AgentConfig(tool_max_rounds=5))
    result = agent.run("Echo 'first', then 'second', then say you are done.")
    print(f"final answer : {result.final_response.text}")
    print(f"rounds       : {result.rounds}")
    print(f"prompt tokens: {result.accumulated_prompt}")
    print(f"output tokens: {result.accumulated_completion}")
    cost = "unpriced" if result.cost_usd is None else f"${result.cost_usd:.6f}"
    print(f"cost         : {cost}")
    print(f"events       : {len(result.events)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``toolloop-lab`` command."""
    parser = argparse.ArgumentParser(prog="toolloop-lab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the built-in scripted demo and print its spend")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
