"""Waiting for a condition with a deadline: how tests that run real processes and threads
observe them without a fixed sleep standing in for an assertion."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    what: str,
    diagnostics: Callable[[], str] | None = None,
) -> T:
    """Poll ``condition`` every 50 ms until it returns something truthy (which is returned);
    past ``timeout_s`` fail the test naming ``what``, followed by ``diagnostics()`` if given."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            extra = f"\n{diagnostics()}" if diagnostics is not None else ""
            raise AssertionError(f"timed out after {timeout_s:.1f} s waiting for {what}{extra}")
        time.sleep(0.05)


async def wait_until_async(condition: Callable[[], object], timeout_s: float = 10.0) -> None:
    """In a scenario on the event loop: poll ``condition`` every 10 ms (letting the loop
    run) until it is truthy; past ``timeout_s`` fail with TimeoutError."""
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)
