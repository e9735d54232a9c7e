"""What the coordinator may know of the cluster's topics: how many partitions each has.

Kafka's broker refuses an OffsetCommit for a topic or partition that does not exist with
UNKNOWN_TOPIC_OR_PARTITION, per partition, and commits the rest. The coordinator does the
same when it is given a :class:`TopicView` (``groupcoord serve`` gives it the topic log),
so every driver of the coordinator (the server, the tests, the simulator) gets the answer
the wire gets. Without one (the simulator, tests that have no topics) every partition is
taken to exist, as before.

The view is read on every commit, never copied: topics created or grown later count at
once.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["TopicView"]


class TopicView(Protocol):
    """Read-only: the partition count of ``topic``, ``None`` if it does not exist.
    Partitions ``0 .. count - 1`` exist; the coordinator never writes through it."""

    def partition_count(self, topic: str) -> int | None: ...
