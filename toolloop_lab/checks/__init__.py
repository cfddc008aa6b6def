"""Checks on a run: keep what a debugging session found as something that runs again.

::

    from toolloop_lab.checks import called, called_in_order, max_cost_usd, max_tool_rounds
    from toolloop_lab.checks import outcome, verify

    verify(result, [
        called_in_order("lookup_ticket", "reply"),   # it looks the ticket up before it answers
        max_tool_rounds(3),                           # in at most three rounds
        max_cost_usd(0.01),                           # for under a cent
        outcome("final_answer"),
    ])

:func:`verify` raises :class:`~toolloop_lab.errors.ChecksFailed` when a check fails, its
message each failed check's expected, seen and where (the round, the tool call and its
id); :func:`evaluate` returns the :class:`CheckReport` whatever it says
(``report.to_frame()``: one row per check). A run is anything the package reads as one:
a result, the error a failed run raised, a list of events (a bridged or spans-in run's),
a trace, or a recording (played back through the loop with its recorded replies and tool
results). Every check reads the run's one fold (``RunView``), so a check says what every
view says.

The checks: what the run did (:func:`called` with arguments a value or a matcher,
:func:`contains`, :func:`matches`, a predicate; :func:`not_called`,
:func:`called_in_order`, :func:`no_tool_errors`), what it spent
(:func:`max_tool_rounds`, :func:`max_model_calls`, :func:`max_tokens`,
:func:`max_cost_usd`), how it ended and what it answered (:func:`outcome`,
:func:`answer_contains`, :func:`answer_matches`), a chat model's yes or no on its answer
(:func:`llm_judge`, its spend counted apart), and anything else (:func:`satisfies`, a
predicate over its events). Each refuses what it could not judge where it is written.

In pytest, the ``toolloop_recording`` fixture records a model once and replays it offline
after; ``toolloop-lab check`` replays recordings with the checks saved beside them; a
debugger's "Save as test" (or :func:`save_test` on any run of ``LLMAgent``) writes a run's
recording, checks read off it and a test file (see the how-to "Checks and recorded tests").
"""

from __future__ import annotations

from toolloop_lab.checks._base import Check, CheckResult
from toolloop_lab.checks._judge import llm_judge
from toolloop_lab.checks._kinds import (
    answer_contains,
    answer_matches,
    called,
    called_in_order,
    max_cost_usd,
    max_model_calls,
    max_tokens,
    max_tool_rounds,
    no_tool_errors,
    not_called,
    outcome,
    satisfies,
)
from toolloop_lab.checks._matchers import Matcher, contains, matches
from toolloop_lab.checks._report import CheckReport, evaluate, verify
from toolloop_lab.checks._run import CallSeen, CheckedRun
from toolloop_lab.checks._test_file import save_test

__all__ = [
    "CallSeen",
    "Check",
    "CheckReport",
    "CheckResult",
    "CheckedRun",
    "Matcher",
    "answer_contains",
    "answer_matches",
    "called",
    "called_in_order",
    "contains",
    "evaluate",
    "llm_judge",
    "matches",
    "max_cost_usd",
    "max_model_calls",
    "max_tokens",
    "max_tool_rounds",
    "no_tool_errors",
    "not_called",
    "outcome",
    "satisfies",
    "save_test",
    "verify",
]
