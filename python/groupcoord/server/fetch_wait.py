"""Fetch long polls: hold a Fetch until ``min_bytes`` are readable or ``max_wait_ms``
passes, woken by the topic log's append listener (no polling loop)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

__all__ = ["FetchWaiter"]


def _wait_s(request: Any) -> float:
    max_wait = request.max_wait
    if isinstance(max_wait, datetime.timedelta):
        return max(0.0, max_wait.total_seconds())
    return max(0.0, int(max_wait) / 1000)


class FetchWaiter:
    """``satisfied(request)`` says whether a Fetch can be answered now (the data APIs'
    ``fetch_satisfied``). Register :meth:`on_append` as the log's append listener."""

    def __init__(self, satisfied: Callable[[Any], bool]) -> None:
        self._satisfied = satisfied
        self._wakeups: set[asyncio.Future[None]] = set()
        self._closed = False

    @property
    def waiting(self) -> int:
        return len(self._wakeups)

    def on_append(self, topic: str, partition: int) -> None:
        # Any append may satisfy any waiting Fetch (they can span partitions and count
        # bytes across them): wake them all and let each re-check.
        wakeups, self._wakeups = self._wakeups, set()
        for future in wakeups:
            if not future.done():
                future.set_result(None)

    async def wait(self, request: Any) -> None:
        """Return when ``request`` is satisfied or its ``max_wait`` has passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _wait_s(request)
        while not self._closed and not self._satisfied(request):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            wakeup: asyncio.Future[None] = loop.create_future()
            self._wakeups.add(wakeup)
            try:
                await asyncio.wait((wakeup,), timeout=remaining)
            finally:
                self._wakeups.discard(wakeup)
                if not wakeup.done():
                    wakeup.cancel()

    def close(self) -> None:
        """Shutdown: every waiting Fetch answers now with what it has."""
        self._closed = True
        self.on_append("", -1)
