"""A KIP-848 consumer group to and from its store records (Kafka's ConsumerGroupMetadata,
MemberMetadata, CurrentMemberAssignment and TargetAssignment records, in spirit).

What a restarted coordinator needs so that members go on without a rebalance: the group
epoch, the target assignment and its epoch, what the group subscribed to at its last
epoch bump, and each member (subscription, epochs, reconciliation state, current
assignment, target). Deadlines are not stored: sessions and revocation timeouts restart
from the load time, as Kafka's do when a coordinator takes over.

Records are written only for what changed: :class:`~groupcoord.coordinator.consumer_group.
ConsumerGroup` notes the members whose record changed (``dirty_members``) and the group's
epochs as last handed out (``stored_meta``), so :func:`take_records` of a steady
heartbeat is empty. If a write fails nothing of it is on disk; the group's memory is
ahead, so the records of the failed batch are written again from memory with the group's
next records (:func:`on_records_persisted`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from groupcoord.coordinator.consumer_group import (
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from groupcoord.coordinator.offsets import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberTombstone,
    StoredAssignment,
    StoredConsumerGroup,
    StoreRecord,
)

if TYPE_CHECKING:
    from groupcoord.coordinator.rebalance import Rebalancer

__all__ = [
    "flush_consumer_group",
    "flush_dirty_consumer_groups",
    "load_consumer_group",
    "member_from_record",
    "member_record",
    "on_records_persisted",
    "take_records",
]

log = logging.getLogger("groupcoord.coordinator")


def _stored(assignment: Assignment) -> StoredAssignment:
    return tuple((topic, tuple(sorted(ps))) for topic, ps in sorted(assignment.items()) if ps)


def _assignment(stored: StoredAssignment) -> dict[str, frozenset[int]]:
    return {topic: frozenset(ps) for topic, ps in stored if ps}


def member_record(group: ConsumerGroup, member: ConsumerMember) -> ConsumerMemberRecord:
    return ConsumerMemberRecord(
        group_id=group.group_id,
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        client_id=member.client_id,
        client_host=member.client_host,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        subscribed_topic_names=member.subscribed_topic_names,
        subscribed_topic_regex=member.subscribed_topic_regex,
        server_assignor=member.server_assignor,
        member_epoch=member.member_epoch,
        previous_member_epoch=member.previous_member_epoch,
        state=member.state.value,
        assigned=_stored(member.assigned),
        pending_revocation=_stored(member.pending_revocation),
        target=_stored(group.target_of(member.member_id)),
    )


def member_from_record(record: ConsumerMemberRecord) -> ConsumerMember:
    return ConsumerMember(
        member_id=record.member_id,
        instance_id=record.instance_id,
        rack_id=record.rack_id,
        client_id=record.client_id,
        client_host=record.client_host,
        rebalance_timeout_ms=record.rebalance_timeout_ms,
        subscribed_topic_names=tuple(record.subscribed_topic_names),
        subscribed_topic_regex=record.subscribed_topic_regex,
        server_assignor=record.server_assignor,
        member_epoch=record.member_epoch,
        previous_member_epoch=record.previous_member_epoch,
        state=MemberState(record.state),
        assigned=_assignment(record.assigned),
        pending_revocation=_assignment(record.pending_revocation),
    )


def _group_record(group: ConsumerGroup) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        group_id=group.group_id,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        subscription_metadata=tuple(sorted(group.subscription_metadata.items())),
        resolved_regexes=tuple(
            (regex, tuple(sorted(topics)))
            for regex, topics in sorted(group.resolved_regexes.items())
        ),
    )


def _meta_changed(group: ConsumerGroup) -> bool:
    stored = group.stored_meta
    if stored is None:
        return True
    epoch, assignment_epoch, metadata, regexes = stored
    if epoch != group.group_epoch or assignment_epoch != group.assignment_epoch:
        return True
    # _refresh_subscription replaces the dicts even when nothing changed: identity first
    return (
        metadata is not group.subscription_metadata and metadata != group.subscription_metadata
    ) or (regexes is not group.resolved_regexes and regexes != group.resolved_regexes)


def take_records(group: ConsumerGroup) -> tuple[StoreRecord, ...]:
    """The records of what changed in ``group`` since they were last taken (empty when
    nothing did); the group counts them as handed out."""
    records: list[StoreRecord] = []
    if _meta_changed(group):
        records.append(_group_record(group))
        group.stored_meta = (
            group.group_epoch,
            group.assignment_epoch,
            group.subscription_metadata,
            group.resolved_regexes,
        )
    dirty = group.dirty_members
    if dirty:
        members = group.members
        for member_id in sorted(dirty):
            member = members.get(member_id)
            if member is None:
                records.append(ConsumerMemberTombstone(group.group_id, member_id))
            else:
                records.append(member_record(group, member))
        dirty.clear()
    return tuple(records)


def on_records_persisted(
    rb: Rebalancer, group: ConsumerGroup, records: tuple[StoreRecord, ...], ok: bool
) -> None:
    """After a failed write, what it carried is written again from memory with the
    group's next records."""
    if ok:
        return
    log.warning("group %s: consumer group records were not persisted; rewriting", group.group_id)
    for record in records:
        if isinstance(record, ConsumerGroupRecord):
            group.stored_meta = None
        elif isinstance(record, ConsumerMemberRecord | ConsumerMemberTombstone):
            group.dirty_members.add(record.member_id)
    # not at once: a shell whose store keeps failing would be handed the same records
    # forever; the group's next heartbeat (or other change) takes them


def flush_consumer_group(rb: Rebalancer, group: ConsumerGroup) -> None:
    """Hand the group's changed records to the shell (nothing waits for them)."""
    rb.dirty_consumer_groups.discard(group.group_id)
    records = take_records(group)
    if records:
        rb.persist(records, lambda ok: on_records_persisted(rb, group, records, ok))


def flush_dirty_consumer_groups(rb: Rebalancer) -> None:
    """Hand out the records of every group changed by deadlines or topic updates."""
    if not rb.dirty_consumer_groups:
        return
    for group_id in sorted(rb.dirty_consumer_groups):
        group = rb.consumer_groups.get(group_id)
        if group is not None:
            flush_consumer_group(rb, group)
    rb.dirty_consumer_groups.clear()


def load_consumer_group(group_id: str, stored: StoredConsumerGroup) -> ConsumerGroup:
    """The group as the store holds it (as already persisted: nothing dirty)."""
    group = ConsumerGroup(group_id)
    record = stored.record
    if record is not None:
        group.group_epoch = record.group_epoch
        group.assignment_epoch = record.assignment_epoch
        group.subscription_metadata = dict(record.subscription_metadata)
        group.resolved_regexes = {
            regex: frozenset(topics) for regex, topics in record.resolved_regexes
        }
    targets: dict[str, Assignment] = {}
    for member_record_ in stored.members.values():
        member = _without_conflicts(group, member_from_record(member_record_))
        group.update_member(member)
        if member_record_.target:
            targets[member.member_id] = _assignment(member_record_.target)
    group.target = targets
    group.dirty_members.clear()
    if record is not None:
        group.stored_meta = (
            group.group_epoch,
            group.assignment_epoch,
            group.subscription_metadata,
            group.resolved_regexes,
        )
    return group


def _without_conflicts(group: ConsumerGroup, member: ConsumerMember) -> ConsumerMember:
    """A store written by this coordinator never has two owners of a partition; should
    one (edited by hand, say), the later member loses the partition rather than the load
    failing."""
    epochs = group.partition_epochs
    if not any(tp in epochs for tp in member.owned_partitions()):
        return member

    def free(assignment: Mapping[str, frozenset[int]]) -> dict[str, frozenset[int]]:
        out: dict[str, frozenset[int]] = {}
        for topic, ps in assignment.items():
            kept = frozenset(p for p in ps if group.current_partition_epoch(topic, p) == -1)
            if kept:
                out[topic] = kept
        return out

    log.warning(
        "group %s: member %s loaded with partitions another member owns",
        group.group_id,
        member.member_id,
    )
    return dataclasses.replace(
        member, assigned=free(member.assigned), pending_revocation=free(member.pending_revocation)
    )
