"""A sweep against a real provider's client: a 429 with ``Retry-After`` from the loopback
OpenAI stub is waited for and sent again by the loop (``rate_limit_retries``), counted in
the events and the frames, and the row reads answered; a rate limiter paces the requests."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
from langchain_core.rate_limiters import InMemoryRateLimiter
from stubs.clients import chat_openai
from stubs.openai_stub import OpenAIStub, OpenAIToolCall, OpenAIUsage

from toolloop_lab import AgentConfig
from toolloop_lab._engine.rate_limit import MAX_RETRY_AFTER_S, retry_after_s
from toolloop_lab.events import ModelCallFailed
from toolloop_lab.lab import Scenario, run_scenarios


@pytest.fixture
def oai() -> Any:
    with OpenAIStub() as stub:
        yield stub
        stub.assert_clean()


def _scenario(oai: OpenAIStub, retries: int, **options: Any) -> Scenario:
    return Scenario(
        "rate_limited",
        functools.partial(chat_openai, oai, **options),
        prompt="Echo hi, then answer.",
        config=AgentConfig(rate_limit_retries=retries),
    )


def test_a_429_is_waited_for_sent_again_and_the_row_reads_answered(oai: OpenAIStub) -> None:
    oai.reply(tool_calls=[OpenAIToolCall("echo", {"text": "hi"})], usage=OpenAIUsage(50, 10))
    oai.fault(429, "slow down", headers={"Retry-After": "0.2"})
    oai.reply(text="done", usage=OpenAIUsage(80, 5))
    results = run_scenarios([_scenario(oai, retries=2)], progress=False)
    row = results.runs.iloc[0]
    assert row["outcome"] == "final_answer"
    assert row["retried_calls"] == 1
    assert row["rate_limit_wait_s"] == pytest.approx(0.2)
    assert row["prompt_tokens"] == 130  # the refused call cost nothing
    assert len(oai.requests) == 3
    failed = [e for e in results.records[0].events if isinstance(e, ModelCallFailed)]
    assert [(f.retry_after_s, f.error_type, f.round) for f in failed] == [
        (pytest.approx(0.2), "OpenAIRateLimitError", 2)
    ]
    rounds = results.rounds.set_index("round")
    assert rounds.loc[2, "failed_calls"] == 1
    assert rounds.loc[2, "prompt_tokens"] == 80


def test_without_retries_a_429_fails_the_row(oai: OpenAIStub) -> None:
    oai.fault(429, "slow down", headers={"Retry-After": "0.2"})
    row = run_scenarios([_scenario(oai, retries=0)], progress=False).runs.iloc[0]
    assert row["outcome"] == "failed"
    assert row["retried_calls"] == 0
    assert "RateLimitError" in row["error_reason"]


def test_retries_run_out_and_the_last_refusal_fails_the_row(oai: OpenAIStub) -> None:
    for _ in range(2):
        oai.fault(429, "slow down", headers={"retry-after-ms": "50"})
    results = run_scenarios([_scenario(oai, retries=1)], progress=False)
    row = results.runs.iloc[0]
    assert row["outcome"] == "failed"
    assert row["retried_calls"] == 1  # the first refusal was sent again, the second failed
    assert len(oai.requests) == 2


class CountingLimiter(InMemoryRateLimiter):
    """langchain-core's limiter, counting the requests it let through."""

    def __init__(self) -> None:
        super().__init__(requests_per_second=50, check_every_n_seconds=0.01, max_bucket_size=1)
        self.granted = 0

    async def aacquire(self, *, blocking: bool = True) -> bool:
        granted = await super().aacquire(blocking=blocking)
        self.granted += int(granted)
        return granted


def test_a_sweep_keeps_to_the_rate_limiter_its_model_is_given(oai: OpenAIStub) -> None:
    limiter = CountingLimiter()
    for _ in range(3):
        oai.reply(text="done", usage=OpenAIUsage(10, 2))
    scenarios = [
        Scenario(f"s{i}", functools.partial(chat_openai, oai, rate_limiter=limiter))
        for i in range(3)
    ]
    results = run_scenarios(scenarios, progress=False)
    assert (results.runs["outcome"] == "final_answer").all()
    assert limiter.granted == len(oai.requests) == 3


class _Error(Exception):
    def __init__(self, status: int | None, headers: dict[str, str]) -> None:
        super().__init__("x")
        self.status_code = status
        self.response = type("R", (), {"headers": headers})()


@pytest.mark.parametrize(
    ("status", "headers", "wait"),
    [
        (429, {"retry-after": "3"}, 3.0),
        (429, {"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        (429, {}, 1.0),  # no header: a second
        (429, {"retry-after": "86400"}, MAX_RETRY_AFTER_S),  # bounded
        (429, {"retry-after": "soon"}, 1.0),
        (500, {"retry-after": "3"}, None),  # no rate limit
        (None, {}, None),
    ],
)
def test_retry_after_is_read_and_bounded(
    status: int | None, headers: dict[str, str], wait: float | None
) -> None:
    assert retry_after_s(_Error(status, headers)) == wait


def test_retry_after_as_an_http_date() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = retry_after_s(_Error(429, {"retry-after": when}))
    assert wait is not None
    assert 25 <= wait <= 30
