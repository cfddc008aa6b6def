"""Record a real session once, then replay it offline and ask "what if" for free.

Three steps, each one line in a notebook::

    from toolloop_lab import AgentConfig, LLMAgent
    from toolloop_lab.recording import RecordingChatModel, ReplayChatModel, what_if

    # 1. record: wrap the paid model; every call is appended to the JSONL file
    live = RecordingChatModel(ChatOpenAI(model="gpt-4o-mini"), "session.jsonl")
    result = LLMAgent(live, tools).run("How do I rotate the API keys?")

    # 2. replay: same replies, usage and model names, so same rounds, tokens and cost;
    #    no network and no key. A changed conversation raises ReplayDivergedError.
    replay = ReplayChatModel.from_file("session.jsonl")
    again = LLMAgent(replay, tools).run("How do I rotate the API keys?")

    # 3. what if: the same session under another config, on the recorded replies
    report = what_if("session.jsonl", AgentConfig(tool_max_rounds=2), tools=tools)
    print(report.summary)            # recorded vs what-if: outcome, rounds, tokens, cost
    report.replayed.outcome          # "final_answer", "synthesis", "beyond_recording", ...

Streams work too: ``live.stream(...)`` streams through the wrapped model and records the
chunks it sent; replay streams the same chunks back. Replay needs deterministic tools (the
tool results are part of the conversation it checks). Rounds beyond the recording have no
replies: a what-if run that needs one ends with outcome ``"beyond_recording"``. See
:class:`ReplayChatModel` for exactly what strict and relaxed replay compare, and
:mod:`toolloop_lab.replay.recording_file` for the file format.

Errors are :class:`RecordingError` and its subclasses (all
:class:`~toolloop_lab.errors.ToolLoopLabError`; inside ``LLMAgent`` they arrive as the
``cause`` of a ``ToolLoopError`` carrying the partial counts). They are defined, and drawn
in the exception tree, in :mod:`toolloop_lab.errors`; import them from here or from there.
"""

from __future__ import annotations

from toolloop_lab.replay.chat_models import (
    RecordingChatModel,
    ReplayChatModel,
    ReplayMode,
    ServedReply,
)
from toolloop_lab.replay.recording_file import (
    FormatProblem,
    RecordedCall,
    RecordedCallError,
    RecordedError,
    Recording,
    RecordingError,
    RecordingFormatError,
    RecordingWriteError,
    ReplayDivergedError,
    ReplayExhaustedError,
)
from toolloop_lab.replay.whatif import Outcome, RunFigures, WhatIfResult, awhat_if, what_if

__all__ = [
    "FormatProblem",
    "Outcome",
    "RecordedCall",
    "RecordedCallError",
    "RecordedError",
    "Recording",
    "RecordingChatModel",
    "RecordingError",
    "RecordingFormatError",
    "RecordingWriteError",
    "ReplayChatModel",
    "ReplayDivergedError",
    "ReplayExhaustedError",
    "ReplayMode",
    "RunFigures",
    "ServedReply",
    "WhatIfResult",
    "awhat_if",
    "what_if",
]
