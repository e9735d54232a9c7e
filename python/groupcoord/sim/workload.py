"""The records a simulated topic receives: a steady stream per partition.

Partition ``p`` receives ``rate`` records per second from the moment it exists: record ``k``
(0-based offset) arrives at ``start_ms + (k + 1) * 1000 / rate``. Arrivals are
deterministic so that runs differ only where the scenario says they should (processing
times, latency); lag, backlog and unavailability are measured against this clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PartitionStream"]


@dataclass(slots=True)
class PartitionStream:
    """One partition's arrival clock and what has been processed of it."""

    start_ms: int
    rate_per_s: float
    #: one past the highest offset any application has processed (records below it were
    #: processed at least once; processing below it again is a duplicate)
    processed_end: int = 0

    def arrived(self, now_ms: float) -> int:
        """How many records (offsets 0 .. n-1) have arrived by ``now_ms``."""
        if self.rate_per_s <= 0 or now_ms <= self.start_ms:
            return 0
        return math.floor((now_ms - self.start_ms) * self.rate_per_s / 1000.0 + 1e-9)

    def arrival_ms(self, offset: int) -> float:
        """When record ``offset`` arrives."""
        return self.start_ms + (offset + 1) * 1000.0 / self.rate_per_s

    def next_arrival_ms(self, offset: int) -> int | None:
        """The integer millisecond at which record ``offset`` has arrived (``None``: never)."""
        if self.rate_per_s <= 0:
            return None
        return math.ceil(self.arrival_ms(offset) - 1e-9)
