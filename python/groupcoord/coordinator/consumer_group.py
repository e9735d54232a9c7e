"""One KIP-848 consumer group: its members, epochs, target assignment and partition owners.
No I/O, no clock, no deadlines (the coordinator owns those, as for classic groups).

Kafka's ``ConsumerGroup`` and ``ConsumerGroupMember``:

- the **group epoch** is bumped whenever the group changes in a way the target assignment
  depends on (a member joins or leaves, changes its subscription, a subscribed topic
  changes its partition count);
- the **target assignment** (and its epoch, the group epoch it was computed for) is what
  the server-side assignor wants each member to have;
- each member has a **member epoch** and a **current assignment**: the partitions it may
  use, plus the ones it must still revoke. A member reaches the target epoch only by
  reconciliation (:mod:`groupcoord.coordinator.reconciliation`);
- the **partition epochs** say which member epoch owns each partition now (assigned or
  pending revocation): a partition is handed to a member only once nobody owns it.

Members are immutable values (:class:`ConsumerMember`): a change replaces the member, so
the group can keep its owner index exact in :meth:`ConsumerGroup.update_member`, and note
which members changed since their records were last handed out (``dirty_members``), so
that a heartbeat that changes nothing persists nothing
(:mod:`groupcoord.coordinator.consumer_records`).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, TypeAlias

from groupcoord.coordinator.offsets import OffsetAndMetadata
from groupcoord.types import TopicPartition

if TYPE_CHECKING:
    from groupcoord.assignors.server import GroupTarget

__all__ = [
    "Assignment",
    "ConsumerGroup",
    "ConsumerGroupState",
    "ConsumerMember",
    "MemberState",
]

#: ``{topic name: frozenset of partitions}``; topics with no partitions are left out.
Assignment: TypeAlias = Mapping[str, frozenset[int]]

EMPTY_ASSIGNMENT: Final[Assignment] = {}


class MemberState(enum.Enum):
    """Where a member is in its reconciliation (Kafka's ``MemberState``)."""

    #: at the target epoch with everything it may have
    STABLE = "stable"
    #: must acknowledge revoking partitions before it moves on (it keeps its epoch)
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    #: at the target epoch, waiting for partitions other members still own
    UNRELEASED_PARTITIONS = "unreleased_partitions"


class ConsumerGroupState(enum.Enum):
    """A consumer group's state; ``.value`` is Kafka's name (ListGroups, describe)."""

    EMPTY = "Empty"
    #: the group epoch is ahead of the target assignment's
    ASSIGNING = "Assigning"
    #: some member has not reached the target assignment
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


def _check_assignment(value: object, name: str) -> None:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a mapping of topic to frozenset of partitions")
    for topic, partitions in value.items():
        if not isinstance(topic, str) or not isinstance(partitions, frozenset) or not partitions:
            raise TypeError(f"{name} must map topic names to non-empty frozensets, got {topic!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerMember:
    """A member of a consumer group (Kafka's ``ConsumerGroupMember``)."""

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
    state: MemberState = MemberState.STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.member_id, str) or not self.member_id:
            raise ValueError(f"member_id must be a non-empty str, got {self.member_id!r}")
        if not isinstance(self.state, MemberState):
            raise TypeError(f"state must be a MemberState, not {type(self.state).__name__}")
        _check_assignment(self.assigned, "assigned")
        _check_assignment(self.pending_revocation, "pending_revocation")
        for topic, partitions in self.pending_revocation.items():
            if partitions & self.assigned.get(topic, frozenset()):
                raise ValueError(f"{topic}: a partition both assigned and pending revocation")

    def with_epoch(self, epoch: int, **changes: object) -> ConsumerMember:
        """A copy at member epoch ``epoch`` (the old one becomes the previous epoch)."""
        return dataclasses.replace(
            self,
            member_epoch=epoch,
            previous_member_epoch=self.member_epoch,
            **changes,  # type: ignore[arg-type]
        )

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def owned_partitions(self) -> list[TopicPartition]:
        """Assigned and pending revocation: what no other member may be given."""
        return [
            TopicPartition(topic, p)
            for source in (self.assigned, self.pending_revocation)
            for topic, partitions in source.items()
            for p in partitions
        ]


class ConsumerGroup:
    """A consumer group's state (Kafka's ``ConsumerGroup``)."""

    __slots__ = (
        "assignment_epoch",
        "dirty_members",
        "group_epoch",
        "group_id",
        "members",
        "offsets",
        "partition_epochs",
        "removed_since_target",
        "resolved_regexes",
        "revocation_epochs",
        "static_members",
        "stored_meta",
        "subscription_metadata",
        "target",
        "target_keeper",
        "target_kept",
    )

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        #: the group epoch the target assignment was computed for
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        #: instance id -> member id
        self.static_members: dict[str, str] = {}
        #: member id -> its target assignment
        self.target: dict[str, Assignment] = {}
        #: partition -> epoch of the member that owns it (assigned or revoking)
        self.partition_epochs: dict[TopicPartition, int] = {}
        #: partition count of every topic a member subscribes to (that exists), as of the
        #: last group epoch bump: a change of it bumps the group epoch again
        self.subscription_metadata: dict[str, int] = {}
        #: regex -> the topic names it matched then (a change also bumps the group epoch)
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        #: member id -> the member epoch its revocation deadline was armed for
        self.revocation_epochs: dict[str, int] = {}
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        #: members (present or removed) whose record changed since it was last handed out
        self.dirty_members: set[str] = set()
        #: ``(group epoch, assignment epoch, subscription metadata, resolved regexes)`` as
        #: last handed out in a group record (``None``: never, or its write failed)
        self.stored_meta: tuple[int, int, object, object] | None = None
        #: the assignor's own copy of ``target`` (kept inside the extension: recomputing
        #: from it reads no million partitions back from Python), usable while
        #: ``target_kept``: only a recomputation and member removals (which it takes for
        #: leaves) changed ``target`` since it was made. Not persisted.
        self.target_keeper: GroupTarget | None = None
        self.target_kept = False
        #: members removed from ``target`` since the last recomputation (one of them back
        #: under the same id must not inherit what the keeper still holds for it)
        self.removed_since_target: set[str] = set()

    # ---------------------------------------------------------------- queries

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        target = self.assignment_epoch
        if all(m.is_reconciled_to(target) for m in self.members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members[member_id]

    def current_partition_epoch(self, topic: str, partition: int) -> int:
        """The epoch of the member owning the partition, -1 when it is free."""
        return self.partition_epochs.get(TopicPartition(topic, partition), -1)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY_ASSIGNMENT)

    # ---------------------------------------------------------------- changes

    def update_member(self, member: ConsumerMember) -> None:
        """Add or replace ``member``, keeping the partition owners and the static index."""
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and old.instance_id != member.instance_id:
                self.static_members.pop(old.instance_id, None)
        self.members[member.member_id] = member
        self.dirty_members.add(member.member_id)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        epochs = self.partition_epochs
        for tp in member.owned_partitions():
            owner = epochs.get(tp)
            if owner is not None:
                raise AssertionError(
                    f"group {self.group_id}: {tp} given to {member.member_id} "
                    f"while epoch {owner} owns it"
                )
            epochs[tp] = member.member_epoch

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        """Remove the member, its target assignment and its ownership of partitions."""
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        self._release(member)
        self.dirty_members.add(member_id)
        if member.instance_id is not None and self.static_members.get(member.instance_id) == (
            member_id
        ):
            del self.static_members[member.instance_id]
        if self.target.pop(member_id, None) is not None:
            self.removed_since_target.add(member_id)
        self.revocation_epochs.pop(member_id, None)
        return member

    def set_target(self, target: dict[str, Assignment], epoch: int) -> None:
        """A new target assignment for group epoch ``epoch``; members whose target changed
        become dirty."""
        old = self.target
        for member_id in old.keys() | target.keys():
            if old.get(member_id) != target.get(member_id):
                self.dirty_members.add(member_id)
        self.target = target
        self.assignment_epoch = epoch

    def _release(self, member: ConsumerMember) -> None:
        epochs = self.partition_epochs
        for tp in member.owned_partitions():
            epochs.pop(tp, None)

    def __repr__(self) -> str:
        return (
            f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch}, "
            f"assignment_epoch={self.assignment_epoch}, members={len(self.members)})"
        )
