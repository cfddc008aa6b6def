"""Real provider clients pointed at the loopback stubs, shared by the real-client tests."""

from __future__ import annotations

from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI

from stubs.anthropic_stub import AnthropicStub
from stubs.openai_stub import OpenAIStub

__all__ = ["chat_anthropic", "chat_openai"]


def chat_openai(stub: OpenAIStub, **options: Any) -> ChatOpenAI:
    """The real ``ChatOpenAI`` client talking to ``stub``, with no retries.

    ``options`` go to the constructor as they are (``streaming=True``,
    ``stream_usage=True``, ``timeout=...``).
    """
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=stub.base_url, api_key="test", max_retries=0, **options
    )


def chat_anthropic(stub: AnthropicStub, **options: Any) -> ChatAnthropic:
    """The real ``ChatAnthropic`` client talking to ``stub``, with no retries.

    ``options`` go to the constructor as they are (``streaming=True``, ``timeout=...``).
    """
    return ChatAnthropic(
        model="claude-3-5-haiku-latest",
        base_url=stub.base_url,
        api_key="test",
        max_retries=0,
        **options,
    )
