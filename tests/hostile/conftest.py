"""Fixtures of the hostile catalogue (shared checks live in ``hostilekit.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


@pytest.fixture
async def no_leftover_tasks() -> AsyncIterator[None]:
    """Every task a test starts is finished by its end (``asyncio.all_tasks()`` before and
    after; the fixture's own setup and teardown tasks aside)."""
    before = asyncio.all_tasks()
    yield
    left = asyncio.all_tasks() - before - {asyncio.current_task()}
    assert not left, f"tasks left over: {left}"
