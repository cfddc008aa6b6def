"""Recording files as untrusted bytes on a real disk: odd text, bad lines, failed writes.

Every failure here is typed: a bad file raises ``RecordingFormatError`` naming the line, the
field and the reason; a reply that came back but could not be written raises an error that
is also a ``PaidCallError`` carrying the reply, so the paid tokens are never lost.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from loopkit import MODEL, tool_call, usage

from toolloop_lab import LLMAgent, Recording, RecordingChatModel, ReplayChatModel, ScriptedChatModel
from toolloop_lab.errors import (
    PaidCallError,
    RecordingError,
    RecordingFormatError,
    RecordingWriteError,
    ToolLoopError,
    ToolLoopLabError,
)

ODD_TEXT = "line\u2028separator\u2029paragraph\x85next-line and caf\u00e9"
LONE_SURROGATE = "half a pair: \ud800 (a lone surrogate)"


def _tool_returning(text: str) -> BaseTool:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"{key}: {text}"

    return lookup


def _session(path: Path, tools: list[BaseTool]) -> Any:
    """A two-call session through a recorder: one tool round, then the answer."""
    inner = ScriptedChatModel(
        [
            AIMessage(
                "Looking.",
                tool_calls=[tool_call("lookup", {"key": "k"}, "c1")],
                usage_metadata=usage(40, 6),
            ),
            AIMessage("Found it.", usage_metadata=usage(70, 4)),
        ],
        model_name=MODEL,
    )
    return LLMAgent(RecordingChatModel(inner, path), tools).run("Look k up.")


# -- text that JSON allows but naive line handling breaks ------------------------------


def test_line_separators_in_a_tool_result_replay(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    tools = [_tool_returning(ODD_TEXT)]
    live = _session(path, tools)

    assert path.read_bytes().isascii()  # the writer escapes everything past ASCII
    again = LLMAgent(ReplayChatModel.from_file(path), tools).run("Look k up.")

    assert again.usage == live.usage
    results = [m.content for m in again.messages if isinstance(m, ToolMessage)]
    assert results == [f"k: {ODD_TEXT}"]


def test_a_recording_written_with_raw_line_separators_still_loads(tmp_path: Path) -> None:
    """Recordings written before the writer escaped non-ASCII hold U+2028 etc. raw."""
    path = tmp_path / "odd.jsonl"
    tools = [_tool_returning(ODD_TEXT)]
    live = _session(path, tools)
    lines = [json.loads(line) for line in path.read_bytes().split(b"\n") if line]
    raw = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    assert "\u2028" in raw
    path.write_text(raw, encoding="utf-8")

    recording = Recording.from_file(path)
    again = LLMAgent(ReplayChatModel(recording), tools).run("Look k up.")

    assert len(recording) == 2
    assert again.usage == live.usage


def test_a_lone_surrogate_in_a_tool_result_is_recorded_and_replayed(tmp_path: Path) -> None:
    path = tmp_path / "surrogate.jsonl"
    tools = [_tool_returning(LONE_SURROGATE)]

    live = _session(path, tools)

    assert live.final_response.text == "Found it."
    assert live.usage.input_tokens == 110  # the second (paid) call is counted and kept
    recording = Recording.from_file(path)
    assert len(recording) == 2
    assert recording.calls[1].request[-1].content == f"k: {LONE_SURROGATE}"
    again = LLMAgent(ReplayChatModel(recording), tools).run("Look k up.")
    assert again.usage == live.usage


def test_surrogate_halves_in_a_tool_result_replay_strictly(tmp_path: Path) -> None:
    """Two halves of a pair as separate code points must not come back joined: strict
    replay would then see a different conversation and refuse an unchanged run."""
    path = tmp_path / "halves.jsonl"
    text = "halves \udbff\udc00 and a character \U0010fc00"
    tools = [_tool_returning(text)]

    live = _session(path, tools)

    recording = Recording.from_file(path)
    assert recording.calls[1].request[-1].content == f"k: {text}"
    again = LLMAgent(ReplayChatModel.from_file(path), tools).run("Look k up.")
    assert again.usage == live.usage
    assert [m.content for m in again.messages] == [m.content for m in live.messages]


# -- a reply that came back must never be lost -----------------------------------------


def test_a_failed_write_raises_a_paid_call_error_carrying_the_reply(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    inner = ScriptedChatModel(
        [
            AIMessage("one", usage_metadata=usage(10, 5)),
            AIMessage("two", usage_metadata=usage(30, 7)),
        ],
        model_name=MODEL,
    )
    recorder = RecordingChatModel(inner, path)
    recorder.invoke("first")
    path.unlink()
    path.mkdir()  # the file became a directory mid-session

    with pytest.raises(PaidCallError) as info:
        recorder.invoke("second")

    err = info.value
    assert isinstance(err, RecordingWriteError)
    assert isinstance(err, RecordingError)
    assert isinstance(err.reply, AIMessage)
    assert err.reply.text == "two"
    assert err.reply.usage_metadata == usage(30, 7)
    assert err.reply.response_metadata["model_name"] == MODEL
    assert (err.path, err.call_index) == (str(path), 1)
    assert isinstance(err.__cause__, OSError)
    assert recorder.recorded_calls == 1


async def test_a_failed_write_while_streaming_keeps_the_streamed_reply(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    inner = ScriptedChatModel(
        [AIMessage("a streamed reply of several pieces", usage_metadata=usage(12, 9))],
        model_name=MODEL,
    )
    recorder = RecordingChatModel(inner, path)
    path.mkdir()

    with pytest.raises(PaidCallError) as info:
        async for _chunk in recorder.astream("go"):
            pass

    reply = info.value.reply
    assert isinstance(reply, AIMessage)
    assert reply.text == "a streamed reply of several pieces"
    assert reply.usage_metadata == usage(12, 9)


def test_the_loop_counts_a_paid_call_whose_recording_failed(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    tools = [_tool_returning("v")]

    def break_the_file(messages: list[Any], _tools: list[Any]) -> AIMessage:
        path.unlink()
        path.mkdir()
        return AIMessage("Found it.", usage_metadata=usage(70, 4))

    inner = ScriptedChatModel(
        [
            AIMessage(
                "Looking.",
                tool_calls=[tool_call("lookup", {"key": "k"}, "c1")],
                usage_metadata=usage(40, 6),
            ),
            break_the_file,
        ],
        model_name=MODEL,
    )
    with pytest.raises(ToolLoopError) as info:
        LLMAgent(RecordingChatModel(inner, path), tools).run("Look k up.")

    assert isinstance(info.value.cause, PaidCallError)
    assert info.value.accumulated_prompt == 110
    assert info.value.accumulated_completion == 10


# -- bad content is a typed error naming the line and the field -------------------------


def _good_line(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "good.jsonl"
    RecordingChatModel(ScriptedChatModel(["caf\u00e9 ok"], model_name=MODEL), path).invoke(
        [HumanMessage("hi")]
    )
    line: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return line


def _write_lines(path: Path, *lines: dict[str, Any]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_a_line_cut_inside_a_utf8_character_is_a_format_error(tmp_path: Path) -> None:
    good = _good_line(tmp_path)
    path = tmp_path / "cut.jsonl"
    second = json.dumps(good, ensure_ascii=False).encode("utf-8")
    cut = second[: second.index("é".encode()) + 1]  # the first byte of a two-byte char
    path.write_bytes(json.dumps(good).encode() + b"\n" + cut)

    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)

    err = info.value
    assert (err.path, err.line, err.reason) == (str(path), 2, "not_utf8")
    assert err.field == "response.data.content"  # the field the cut fell in
    assert isinstance(err, ToolLoopLabError)


def test_bytes_that_are_neither_utf8_nor_json_name_no_field(tmp_path: Path) -> None:
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"\x89PNG\r\x1a\x00\xff\xfe binary\n")
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)
    assert (info.value.line, info.value.reason, info.value.field) == (1, "not_utf8", None)


def test_a_bad_byte_in_a_line_nested_too_deep_to_read_names_no_field(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"[" * 100_000 + b"\xff\n")
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)
    assert (info.value.line, info.value.reason, info.value.field) == (1, "not_utf8", None)


def test_a_bad_byte_inside_a_field_names_the_field(tmp_path: Path) -> None:
    good = _good_line(tmp_path)
    path = tmp_path / "byte.jsonl"
    text = json.dumps(good, ensure_ascii=False).encode("utf-8")
    path.write_bytes(text.replace("é".encode(), b"\xc3"))  # a lead byte without its partner

    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)

    err = info.value
    assert (err.line, err.reason, err.field) == (1, "not_utf8", "response.data.content")


@pytest.mark.parametrize(
    ("key", "value", "field"),
    [
        ("tools", 5, "tools"),
        ("tools", ["add", 5], "tools.1"),
        ("model_name", 5, "model_name"),
        ("call", "0", "call"),
        ("call", True, "call"),
        ("profile", [], "profile"),
        ("profile", {"max_input_tokens": "x"}, "profile.max_input_tokens"),
        ("profile", {"max_input_tokens": True}, "profile.max_input_tokens"),
        ("profile", {"max_input_tokens": 0}, "profile.max_input_tokens"),
        ("profile", {"max_output_tokens": -1}, "profile.max_output_tokens"),
        ("profile", {"tool_calling": "yes"}, "profile.tool_calling"),
        ("request", 3, "request"),
        ("request", [{"type": "human"}], "request.0.data"),
        ("request", [{"type": "nonsense", "data": {}}], "request.0.type"),
        ("error", {"type": "x"}, "error.message"),
        ("error", {"type": "x", "message": "m", "status_code": "429"}, "error.status_code"),
    ],
)
def test_a_hand_edited_field_is_a_format_error_naming_it(
    tmp_path: Path, key: str, value: Any, field: str
) -> None:
    path = tmp_path / "edited.jsonl"
    good = _good_line(tmp_path)
    _write_lines(path, good, {**good, key: value})

    with pytest.raises(RecordingFormatError) as info:
        ReplayChatModel.from_file(path)

    assert (info.value.line, info.value.field, info.value.reason) == (2, field, "invalid_field")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"content": 5}, "response.data.content"),
        ({"content": "x", "usage_metadata": {"input_tokens": "1"}}, "response.data.usage_metadata"),
        ({"content": "x", "tool_calls": 7}, "response.data.tool_calls"),
    ],
)
def test_a_hand_edited_message_is_a_format_error_naming_its_field(
    tmp_path: Path, data: dict[str, Any], field: str
) -> None:
    path = tmp_path / "edited.jsonl"
    good = _good_line(tmp_path)
    _write_lines(path, {**good, "response": {"type": "ai", "data": data}})

    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)

    assert (info.value.line, info.value.reason) == (1, "invalid_field")
    assert info.value.field is not None
    assert info.value.field.startswith(field)


def test_a_response_that_is_not_an_ai_message_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "human.jsonl"
    good = _good_line(tmp_path)
    _write_lines(path, {**good, "response": {"type": "human", "data": {"content": "x"}}})
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)
    assert (info.value.field, info.value.reason) == ("response.type", "invalid_field")


@pytest.mark.parametrize(
    ("text", "line", "reason", "field"),
    [
        ("", None, "empty", None),
        ("{not json\n", 1, "not_json", None),
        ("[" * 100_000 + "\n", 1, "not_json", None),
        ("[1, 2]\n", 1, "not_a_recording", None),
        ('{"format": "other"}\n', 1, "not_a_recording", "format"),
        (
            '\n{"format": "toolloop_lab.recording", "version": 9}\n',
            2,
            "unsupported_version",
            "version",
        ),
        (
            '{"format": "toolloop_lab.recording", "version": true}\n',
            1,
            "unsupported_version",
            "version",
        ),
    ],
)
def test_whole_line_problems_have_their_own_reasons(
    tmp_path: Path, text: str, line: int | None, reason: str, field: str | None
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(path)
    assert (info.value.line, info.value.reason, info.value.field) == (line, reason, field)


def test_a_directory_is_an_unreadable_recording(tmp_path: Path) -> None:
    with pytest.raises(RecordingFormatError) as info:
        Recording.from_file(tmp_path)
    assert (info.value.line, info.value.reason, info.value.field) == (None, "unreadable", None)


def test_the_new_error_fields_survive_pickle() -> None:
    """Errors cross process boundaries (Dask sweeps): every field must come back."""
    reply = AIMessage("paid", usage_metadata=usage(3, 4))
    write = RecordingWriteError("w", path="p.jsonl", call_index=7, reply=reply)
    back = pickle.loads(pickle.dumps(write))
    assert isinstance(back, RecordingWriteError)
    assert isinstance(back, PaidCallError)
    assert (back.path, back.call_index, back.reply, str(back)) == ("p.jsonl", 7, reply, "w")

    fmt = RecordingFormatError("f", path="p", line=3, field="tools.1", reason="invalid_field")
    again = pickle.loads(pickle.dumps(fmt))
    assert (again.path, again.line, again.field, again.reason) == (
        "p",
        3,
        "tools.1",
        "invalid_field",
    )
