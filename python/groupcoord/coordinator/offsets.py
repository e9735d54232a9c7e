"""What the coordinator persists (its records), the store interface, and the in-memory store.

The coordinator keeps every group and its committed offsets in memory (as Kafka's
coordinator does) and hands its shell the records to persist (Kafka's offsets-topic
records), never writing them itself:

- an :class:`OffsetsRecord` for every accepted OffsetCommit;
- a :class:`GroupRecord` whenever Kafka writes group metadata: a join phase that leaves the
  group Empty, a leader's assignment (the group becomes Stable), a static member replaced
  in a Stable group;
- a :class:`GroupTombstone` for DeleteGroups and for an Empty group whose offsets all
  expired (metadata and offsets);
- an :class:`OffsetTombstone` for OffsetDelete and for offsets past their retention.

The shell writes them with :meth:`OffsetStore.write` (one atomic, durable transaction for
any number of records) and tells the coordinator whether they were persisted; a response
that depends on records is released only then. ``load`` returns what a restarted
coordinator starts from. A store signals a write that did not become durable by raising
:class:`StoreError`; the coordinator then answers with COORDINATOR_NOT_AVAILABLE (as Kafka
does for a failed append) and keeps its old state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from groupcoord.errors import GroupcoordError
from groupcoord.types import TopicPartition

__all__ = [
    "GroupRecord",
    "GroupTombstone",
    "MemberRecord",
    "MemoryOffsetStore",
    "OffsetAndMetadata",
    "OffsetStore",
    "OffsetTombstone",
    "OffsetsRecord",
    "StoreError",
    "StoreRecord",
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


@dataclass(frozen=True, slots=True)
class OffsetsRecord:
    """Offsets committed for a group (replacing earlier ones of the same partitions)."""

    group_id: str
    offsets: Mapping[TopicPartition, OffsetAndMetadata]


@dataclass(frozen=True, slots=True)
class GroupTombstone:
    """A deleted group: its metadata and all its offsets go."""

    group_id: str


@dataclass(frozen=True, slots=True)
class OffsetTombstone:
    """Committed offsets of a group that go (OffsetDelete, retention); the group stays."""

    group_id: str
    partitions: tuple[TopicPartition, ...]


#: What a store writes; a batch is applied in order (a later record wins).
StoreRecord = OffsetsRecord | GroupRecord | GroupTombstone | OffsetTombstone


@dataclass(slots=True)
class StoredState:
    """Everything a store holds: group metadata and committed offsets, by group id."""

    groups: dict[str, GroupRecord] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)


@runtime_checkable
class OffsetStore(Protocol):
    """Where committed offsets and group metadata go."""

    def load(self) -> StoredState:
        """Everything stored, for a coordinator starting up."""
        ...

    def write(self, records: Sequence[StoreRecord]) -> None:
        """Apply ``records`` in order, all or none: atomic, and durable when it returns
        (or it raises :class:`StoreError` and nothing was applied)."""
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

    __slots__ = ("_groups", "_offsets", "commits", "fail_writes", "writes")

    def __init__(self) -> None:
        self._groups: dict[str, GroupRecord] = {}
        self._offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        #: Number of offset commits written (for tests and the simulator).
        self.commits = 0
        #: Number of successful ``write`` calls (transactions).
        self.writes = 0
        #: When true, every write raises :class:`StoreError` (fault injection).
        self.fail_writes = False

    def load(self) -> StoredState:
        return StoredState(
            groups=dict(self._groups),
            offsets={g: dict(o) for g, o in self._offsets.items()},
        )

    def write(self, records: Sequence[StoreRecord]) -> None:
        if self.fail_writes:
            raise StoreError("writes are failing (fault injection)")
        for record in records:
            if isinstance(record, OffsetsRecord):
                self._offsets.setdefault(record.group_id, {}).update(record.offsets)
                self.commits += 1
            elif isinstance(record, GroupRecord):
                self._groups[record.group_id] = record  # immutable
            elif isinstance(record, GroupTombstone):
                self._groups.pop(record.group_id, None)
                self._offsets.pop(record.group_id, None)
            elif isinstance(record, OffsetTombstone):
                offsets = self._offsets.get(record.group_id)
                if offsets is not None:
                    for tp in record.partitions:
                        offsets.pop(tp, None)
                    if not offsets:
                        del self._offsets[record.group_id]
            else:
                raise TypeError(f"not a store record: {type(record).__name__}")
        self.writes += 1

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        n = sum(len(o) for o in self._offsets.values())
        return f"MemoryOffsetStore(groups={len(self._groups)}, offsets={n})"
