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
- an :class:`OffsetTombstone` for OffsetDelete and for offsets past their retention;
- for a KIP-848 consumer group (Kafka's ConsumerGroupMetadata, MemberMetadata,
  CurrentMemberAssignment and TargetAssignment records, folded into two): a
  :class:`ConsumerGroupRecord` when its epochs or what it subscribes to change, a
  :class:`ConsumerMemberRecord` when a member, its current assignment or its target
  change, a :class:`ConsumerMemberTombstone` when a member goes; a group goes with a
  :class:`GroupTombstone`. A group id has one type in a store: writing one kind of group
  record drops the other kind's records of that id.

The shell writes them with :meth:`OffsetStore.write` (one atomic, durable transaction for
any number of records) and tells the coordinator whether they were persisted; a response
that depends on records is released only then. ``load`` returns what a restarted
coordinator starts from. A store signals a write that did not become durable by raising
:class:`StoreError`; the coordinator then answers with COORDINATOR_NOT_AVAILABLE (as Kafka
does for a failed append) and keeps its old state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from groupcoord.errors import GroupcoordError
from groupcoord.types import TopicPartition

__all__ = [
    "ConsumerGroupRecord",
    "ConsumerMemberRecord",
    "ConsumerMemberTombstone",
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
    "StoredAssignment",
    "StoredConsumerGroup",
    "StoredState",
    "committed_at",
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


def _slot_setters(cls: type, *names: str) -> tuple[Callable[[object, Any], None], ...]:
    return tuple(getattr(cls, name).__set__ for name in names)


_new = object.__new__
_set_offset, _set_epoch, _set_metadata, _set_commit_time, _set_expire = _slot_setters(
    OffsetAndMetadata,
    "committed_offset",
    "leader_epoch",
    "metadata",
    "commit_timestamp_ms",
    "expire_timestamp_ms",
)


def committed_at(
    committed_offset: int, commit_timestamp_ms: int, leader_epoch: int = -1, metadata: str = ""
) -> OffsetAndMetadata:
    """``OffsetAndMetadata(committed_offset, leader_epoch, metadata, commit_timestamp_ms,
    -1)``: the offset of a commit with no retention of its own (an auto-commit's has no
    leader epoch or metadata either).

    Why not the constructor: the simulator stores one per auto-commit, hundreds of
    thousands per simulated hour, and the native shell one per partition of each commit it
    takes; a frozen dataclass's generated ``__init__`` sets each field through
    ``object.__setattr__`` (1.7 µs here), and setting the slots directly builds the same
    object (equal, and every field set) in about half the time."""
    offset: OffsetAndMetadata = _new(OffsetAndMetadata)
    _set_offset(offset, committed_offset)
    _set_epoch(offset, leader_epoch)
    _set_metadata(offset, metadata)
    _set_commit_time(offset, commit_timestamp_ms)
    _set_expire(offset, -1)
    return offset


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


#: ``((topic, (partition, ...)), ...)``, topics and partitions ascending: an assignment
#: by topic name, so a store does not depend on topic ids.
StoredAssignment = tuple[tuple[str, tuple[int, ...]], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRecord:
    """A KIP-848 consumer group's epochs and what it subscribed to when its epoch was last
    bumped (so that a restarted coordinator bumps it again only for a real change)."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    #: ``((topic, partition count), ...)`` of the subscribed topics that exist
    subscription_metadata: tuple[tuple[str, int], ...] = ()
    #: ``((regex, (topic, ...)), ...)``: what each subscribed regex matched
    resolved_regexes: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerMemberRecord:
    """One member of a KIP-848 consumer group: its subscription, epochs, reconciliation
    state (``"stable"``, ``"unrevoked_partitions"``, ``"unreleased_partitions"``), current
    assignment and target assignment. Replaces an earlier record of the same member."""

    group_id: str
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: str = "stable"
    assigned: StoredAssignment = ()
    pending_revocation: StoredAssignment = ()
    target: StoredAssignment = ()


@dataclass(frozen=True, slots=True)
class ConsumerMemberTombstone:
    """A member that left a consumer group (the group stays)."""

    group_id: str
    member_id: str


#: What a store writes; a batch is applied in order (a later record wins).
StoreRecord = (
    OffsetsRecord
    | GroupRecord
    | GroupTombstone
    | OffsetTombstone
    | ConsumerGroupRecord
    | ConsumerMemberRecord
    | ConsumerMemberTombstone
)


@dataclass(slots=True)
class StoredConsumerGroup:
    """A consumer group as stored: its record (``None`` if only members were written) and
    its members by id, in the order they were first written."""

    record: ConsumerGroupRecord | None = None
    members: dict[str, ConsumerMemberRecord] = field(default_factory=dict)


@dataclass(slots=True)
class StoredState:
    """Everything a store holds: group metadata and committed offsets, by group id."""

    groups: dict[str, GroupRecord] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = field(default_factory=dict)
    consumer_groups: dict[str, StoredConsumerGroup] = field(default_factory=dict)


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

    __slots__ = ("_consumer_groups", "_groups", "_offsets", "commits", "fail_writes", "writes")

    def __init__(self) -> None:
        self._groups: dict[str, GroupRecord] = {}
        self._consumer_groups: dict[str, StoredConsumerGroup] = {}
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
            consumer_groups={
                g: StoredConsumerGroup(c.record, dict(c.members))
                for g, c in self._consumer_groups.items()
            },
        )

    def write(self, records: Sequence[StoreRecord]) -> None:
        if self.fail_writes:
            raise StoreError("writes are failing (fault injection)")
        for record in records:
            if isinstance(record, OffsetsRecord):
                self._offsets.setdefault(record.group_id, {}).update(record.offsets)
                self.commits += 1
            elif isinstance(record, ConsumerMemberRecord):
                self._consumer_group(record.group_id).members[record.member_id] = record
            elif isinstance(record, ConsumerGroupRecord):
                self._consumer_group(record.group_id).record = record
            elif isinstance(record, ConsumerMemberTombstone):
                stored = self._consumer_groups.get(record.group_id)
                if stored is not None:
                    stored.members.pop(record.member_id, None)
            elif isinstance(record, GroupRecord):
                self._consumer_groups.pop(record.group_id, None)  # one type per group id
                self._groups[record.group_id] = record  # immutable
            elif isinstance(record, GroupTombstone):
                self._groups.pop(record.group_id, None)
                self._consumer_groups.pop(record.group_id, None)
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

    def _consumer_group(self, group_id: str) -> StoredConsumerGroup:
        stored = self._consumer_groups.get(group_id)
        if stored is None:
            self._groups.pop(group_id, None)  # one type per group id
            stored = self._consumer_groups[group_id] = StoredConsumerGroup()
        return stored

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        n = sum(len(o) for o in self._offsets.values())
        return (
            f"MemoryOffsetStore(groups={len(self._groups)}, "
            f"consumer_groups={len(self._consumer_groups)}, offsets={n})"
        )
