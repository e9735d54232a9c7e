"""Results that complete later: an offset commit and an offset fetch.

The machine returns a handle at once and completes it when the coordinator answers (or
fails it without asking, when the request cannot be valid). Handles are plain mutable
objects owned by the machine; a runner waits for ``done`` and then reads ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from groupcoord.errors import CommitFailedError, GroupcoordError, KafkaError
from groupcoord.types import TopicPartition

__all__ = ["CommitFailedError", "CommitHandle", "FetchHandle", "MemberClosedError"]


class MemberClosedError(GroupcoordError):
    """The member was closed before the operation could be sent."""


class CommitHandle:
    """An offset commit in progress. ``done`` becomes True once; then ``error`` is ``None``
    (every offset stored) or the first failure, and ``partition_errors`` names the Kafka
    error of each partition the coordinator refused."""

    __slots__ = ("_error", "_partition_errors", "done", "offsets")

    def __init__(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.offsets: Mapping[TopicPartition, int] = MappingProxyType(dict(offsets))
        self.done = False
        self._error: GroupcoordError | None = None
        self._partition_errors: dict[TopicPartition, type[KafkaError]] = {}

    @property
    def error(self) -> GroupcoordError | None:
        return self._error

    @property
    def partition_errors(self) -> Mapping[TopicPartition, type[KafkaError]]:
        return MappingProxyType(self._partition_errors)

    def succeed(self) -> None:
        self.done = True

    def fail(
        self,
        error: GroupcoordError,
        partition_errors: Mapping[TopicPartition, type[KafkaError]] | None = None,
    ) -> None:
        self.done = True
        self._error = error
        if partition_errors:
            self._partition_errors.update(partition_errors)

    def __repr__(self) -> str:
        return f"CommitHandle(done={self.done}, error={self._error!r}, n={len(self.offsets)})"


class FetchHandle:
    """An OffsetFetch in progress; ``offsets`` holds the committed offset of each asked
    partition that has one (partitions without a committed offset are absent)."""

    __slots__ = ("_error", "done", "offsets", "partitions")

    def __init__(self, partitions: frozenset[TopicPartition]) -> None:
        self.partitions = partitions
        self.offsets: dict[TopicPartition, int] = {}
        self.done = False
        self._error: GroupcoordError | None = None

    @property
    def error(self) -> GroupcoordError | None:
        return self._error

    def succeed(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.offsets = dict(offsets)
        self.done = True

    def fail(self, error: GroupcoordError) -> None:
        self.done = True
        self._error = error

    def __repr__(self) -> str:
        return f"FetchHandle(done={self.done}, error={self._error!r}, n={len(self.partitions)})"
