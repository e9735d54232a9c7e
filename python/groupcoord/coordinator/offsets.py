"""What the coordinator persists, the store interface, and the in-memory store.

The coordinator keeps every group and its committed offsets in memory (as Kafka's
coordinator does) and writes through to an :class:`OffsetStore`:

- ``commit_offsets`` for every accepted OffsetCommit; the coordinator releases the
  OffsetCommit response only after it returned, so a store that is durable on return makes
  every acknowledged commit durable;
- ``store_group`` whenever Kafka writes group metadata: a join phase that leaves the group
  Empty, a leader's assignment (the group becomes Stable), a static member replaced in a
  Stable group;
- ``delete_group`` for DeleteGroups (metadata and offsets).

``load`` returns what a restarted coordinator starts from. A store signals a write that did
not become durable by raising :class:`StoreError`; the coordinator then answers with
COORDINATOR_NOT_AVAILABLE (as Kafka does for a failed append) and keeps its old state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from groupcoord.errors import GroupcoordError
from groupcoord.types import TopicPartition

__all__ = [
    "GroupRecord",
    "MemberRecord",
    "MemoryOffsetStore",
    "OffsetAndMetadata",
    "OffsetStore",
    "StoreError",
    "StoredState",
]


class StoreError(GroupcoordError):
    """A store write that did not become durable (the coordinator reports it, never acks it)."""


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """One committed offset. ``leader_epoch`` -1 and ``expire_timestamp_ms`` -1 mean none."""

    committed_offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MemberRecord:
    """A member of a Stable group as persisted (enough to rejoin without a rebalance)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """A group's persisted metadata: ``state`` is ``"Empty"`` or ``"Stable"``."""

    group_id: str
    state: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberRecord, ...] = ()
    state_timestamp_ms: int = -1


@dataclass(slots=True)
class StoredState:
    """Everything a store holds: group metadata and committed offsets, by group id."""

    groups: dict[str, GroupRecord] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)


@runtime_checkable
class OffsetStore(Protocol):
    """Where committed offsets and group metadata go. Every write is atomic, and durable
    when it returns (or it raises :class:`StoreError`)."""

    def load(self) -> StoredState:
        """Everything stored, for a coordinator starting up."""
        ...

    def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        """Store ``offsets`` of ``group_id`` (replacing earlier ones of the same partitions)."""
        ...

    def store_group(self, record: GroupRecord) -> None:
        """Store a group's metadata (replacing the previous record)."""
        ...

    def delete_group(self, group_id: str) -> None:
        """Remove a group's metadata and all its offsets."""
        ...

    def close(self) -> None:
        """Release resources; the store is not used afterwards."""
        ...


class MemoryOffsetStore:
    """An :class:`OffsetStore` in a dict: for the simulator and tests.

    "Durable" means: a new coordinator built on the same store object sees it (a simulated
    coordinator restart). ``load`` returns copies, so a coordinator never shares state with
    the store.
    """

    __slots__ = ("_groups", "_offsets", "commits", "fail_writes")

    def __init__(self) -> None:
        self._groups: dict[str, GroupRecord] = {}
        self._offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        #: Number of successful ``commit_offsets`` calls (for tests and the simulator).
        self.commits = 0
        #: When true, every write raises :class:`StoreError` (fault injection).
        self.fail_writes = False

    def _check(self) -> None:
        if self.fail_writes:
            raise StoreError("writes are failing (fault injection)")

    def load(self) -> StoredState:
        return StoredState(
            groups=dict(self._groups),
            offsets={g: dict(o) for g, o in self._offsets.items()},
        )

    def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._check()
        self._offsets.setdefault(group_id, {}).update(offsets)
        self.commits += 1

    def store_group(self, record: GroupRecord) -> None:
        self._check()
        self._groups[record.group_id] = record  # immutable

    def delete_group(self, group_id: str) -> None:
        self._check()
        self._groups.pop(group_id, None)
        self._offsets.pop(group_id, None)

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        n = sum(len(o) for o in self._offsets.values())
        return f"MemoryOffsetStore(groups={len(self._groups)}, offsets={n})"
