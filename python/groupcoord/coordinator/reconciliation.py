"""Moving one member towards the target assignment (Kafka's ``CurrentAssignmentBuilder``).

A pure function of the member, the target, what the member says it owns and who owns each
partition now. The rule that keeps a partition from having two owners:

- partitions the member has but the target does not give it are **revoked first**: the
  member keeps its epoch and waits in UNREVOKED_PARTITIONS until a heartbeat no longer
  lists any of them (or the rebalance timeout fences it);
- only then does it move to the target epoch and get the partitions of its target that are
  **free** (no other member owns them, assigned or revoking); the rest it waits for in
  UNRELEASED_PARTITIONS, picking them up on later heartbeats as their owners let go.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from groupcoord.coordinator.consumer_group import Assignment, ConsumerMember, MemberState
from groupcoord.types import TopicPartition

__all__ = ["PartitionEpoch", "reconcile"]

#: ``(topic, partition) -> epoch of its owner, or -1 when free``
PartitionEpoch = Callable[[str, int], int]


def _owns_any(owned: Collection[TopicPartition] | None, partitions: Assignment) -> bool:
    """Whether the member still reports one of ``partitions`` (``None``: it did not say,
    so it may)."""
    if owned is None:
        return True
    return any(tp.partition in partitions.get(tp.topic, ()) for tp in owned)


def reconcile(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owned: Collection[TopicPartition] | None,
    partition_epoch: PartitionEpoch,
) -> ConsumerMember:
    """The member's next state (``member`` itself when it cannot move on)."""
    state = member.state
    if state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    if state is MemberState.UNREVOKED_PARTITIONS and _owns_any(owned, member.pending_revocation):
        return member  # it has not acknowledged the revocation yet
    return _next_assignment(member, target_epoch, target, owned, partition_epoch)


def _next_assignment(
    member: ConsumerMember,
    target_epoch: int,
    target: Assignment,
    owned: Collection[TopicPartition] | None,
    partition_epoch: PartitionEpoch,
) -> ConsumerMember:
    current = member.assigned
    own_revoking = member.pending_revocation
    assigned: dict[str, frozenset[int]] = {}
    revoking: dict[str, frozenset[int]] = {}
    to_assign: dict[str, frozenset[int]] = {}
    unreleased = False
    for topic in sorted(target.keys() | current.keys()):
        wanted = target.get(topic, frozenset())
        has = current.get(topic, frozenset())
        kept = has & wanted
        if kept:
            assigned[topic] = kept
        lost = has - kept
        if lost:
            revoking[topic] = lost
        mine = own_revoking.get(topic, frozenset())
        free: set[int] = set()
        for p in wanted - kept:
            # a partition this member is itself revoking is not held by anyone else
            if partition_epoch(topic, p) != -1 and p not in mine:
                unreleased = True
            else:
                free.add(p)
        if free:
            to_assign[topic] = frozenset(free)

    if revoking and _owns_any(owned, revoking):
        # Revoke first, in the current epoch; nothing new until the member acknowledges.
        return member.with_epoch(
            member.member_epoch,
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned=assigned,
            pending_revocation=revoking,
        )
    for topic, partitions in to_assign.items():
        assigned[topic] = assigned.get(topic, frozenset()) | partitions
    return member.with_epoch(
        target_epoch,
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        assigned=assigned,
        pending_revocation={},
    )
