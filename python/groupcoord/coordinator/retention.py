"""Offsets retention (Kafka's ``offsets.retention.minutes``, KIP-211) and the expiry of
idle groups.

Which offsets may expire (Kafka's ``offsetExpirationCondition``):

- a classic group with a protocol type, once it is Empty: retention counts from the moment
  it became Empty (its state timestamp, persisted with the group, so it survives a
  restart);
- a group without one (a simple consumer's or an admin's commits, never a member): from
  each offset's commit;
- a KIP-848 consumer group: from each offset's commit, for topics no member subscribes to;
- an offset committed with an explicit retention (OffsetCommit v2-v4) at its own expiry
  time, when its group's condition holds.

Kafka scans every group every ``offsets.retention.check.interval.ms``; here each group has
one deadline in the coordinator's ``MemberExpiry`` (:meth:`Rebalancer.check_retention`),
set on the check grid at the time its first offset can expire, and only that group is
looked at then. Expired offsets go as one :class:`~groupcoord.coordinator.offsets.OffsetTombstone`;
an Empty group left with no offsets (or that never had any) is deleted with a
:class:`~groupcoord.coordinator.offsets.GroupTombstone`, as Kafka's cleanup deletes it.
Memory changes only once the shell reports the records persisted; a failed write is
retried at the next check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.consumer_records import flush_consumer_group
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.offsets import GroupTombstone, OffsetAndMetadata, OffsetTombstone
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.coordinator.subscriptions import subscribed_topics
from groupcoord.types import TopicPartition

__all__ = ["arm_after_commit", "arm_loaded_groups", "on_retention_deadline"]

log = logging.getLogger("groupcoord.coordinator")

_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD

#: offset -> the time its retention counts from
_Base = Callable[[OffsetAndMetadata], int]


def _commit_time(offset: OffsetAndMetadata) -> int:
    return offset.commit_timestamp_ms


def _base(group: Group | ConsumerGroup) -> _Base | None:
    """When each of the group's offsets starts its retention; ``None``: none can expire now."""
    if isinstance(group, ConsumerGroup) or not group.protocol_type:
        return _commit_time
    if group.state is _EMPTY:
        empty_since = group.state_timestamp_ms
        return lambda offset: empty_since
    return None  # members own them (Kafka's KIP-496 case of Stable groups: not yet)


def _expires_at(offset: OffsetAndMetadata, base: _Base, retention_ms: int) -> int:
    if offset.expire_timestamp_ms != -1:
        return offset.expire_timestamp_ms  # an explicit retention (OffsetCommit v2-v4)
    return base(offset) + retention_ms


def arm_after_commit(
    rb: Rebalancer, group: Group | ConsumerGroup, offsets: dict[TopicPartition, OffsetAndMetadata]
) -> None:
    """Offsets were committed: make sure a check will look at them if they can expire."""
    base = _base(group)
    if base is None:
        return  # checked once the group is Empty
    retention = rb.config.offsets_retention_ms
    rb.check_retention(
        group.group_id, min(_expires_at(o, base, retention) for o in offsets.values())
    )


def arm_loaded_groups(rb: Rebalancer) -> None:
    """After a restart: every group whose offsets can expire gets its check."""
    for group in rb.groups.values():
        if group.state is _EMPTY:
            rb.check_retention(group.group_id)


def on_retention_deadline(rb: Rebalancer, group_id: str) -> None:
    """The group's check is due: expire what has, delete the group if nothing is left,
    and arm the next check."""
    group: Group | ConsumerGroup | None = rb.groups.get(group_id) or rb.consumer_groups.get(
        group_id
    )
    if group is None or (isinstance(group, Group) and group.state is _DEAD):
        return
    base = _base(group)
    if base is None:
        return  # re-armed when the group becomes Empty
    now = rb.now
    retention = rb.config.offsets_retention_ms
    interval = rb.config.offsets_retention_check_interval_ms
    subscribed = subscribed_topics(group, rb.topics)
    expired: list[TopicPartition] = []
    next_at: int | None = None
    for tp, offset in group.offsets.items():
        at = _expires_at(offset, base, retention)
        if subscribed is None or tp.topic in subscribed:
            # a topic still consumed keeps its offset; look again at the next check
            at = max(at, now + interval)
        elif at <= now:
            expired.append(tp)
            continue
        next_at = at if next_at is None else min(next_at, at)
    if next_at is None and _is_idle(group):
        _delete_group(rb, group)
        return
    if next_at is not None:
        rb.check_retention(group_id, next_at)
    elif isinstance(group, Group):
        rb.check_retention(group_id)  # Empty, but a KIP-394 pending member may still join
    if expired:
        _expire(rb, group, tuple(expired))


def _is_idle(group: Group | ConsumerGroup) -> bool:
    if isinstance(group, ConsumerGroup):
        return group.is_empty()
    return group.state is _EMPTY and not group.pending_members


def _expire(
    rb: Rebalancer, group: Group | ConsumerGroup, expired: tuple[TopicPartition, ...]
) -> None:
    group_id = group.group_id

    def then(ok: bool) -> None:
        if not ok:
            log.warning("group %s: expired offsets were not deleted; retrying", group_id)
            rb.check_retention(group_id)
            return
        for tp in expired:
            group.offsets.pop(tp, None)
        log.info("group %s: %d offsets expired", group_id, len(expired))

    rb.persist((OffsetTombstone(group_id, expired),), then)


def _delete_group(rb: Rebalancer, group: Group | ConsumerGroup) -> None:
    """An idle group whose offsets all expired goes (Kafka's cleanup deletes it)."""
    before = None
    if isinstance(group, Group):
        before = (group.state, group.previous_state, group.state_timestamp_ms)
        group.transition_to(_DEAD, rb.now)  # nothing joins or commits meanwhile
    else:
        flush_consumer_group(rb, group)  # its last changes go before its tombstone
    then = partial(_on_deleted, rb, group, len(group.offsets), before)
    rb.persist((GroupTombstone(group.group_id),), then)


def _on_deleted(
    rb: Rebalancer,
    group: Group | ConsumerGroup,
    count: int,
    before: tuple[GroupState, GroupState | None, int] | None,
    ok: bool,
) -> None:
    group_id = group.group_id
    if not ok:
        log.warning("group %s: expiry was not persisted; retrying", group_id)
        if isinstance(group, Group) and before is not None:
            group.restore_state(*before)
        rb.check_retention(group_id)
        return
    if isinstance(group, ConsumerGroup):
        if rb.consumer_groups.get(group_id) is not group or not group.is_empty():
            # a member joined meanwhile: the group stays (its offsets went with the tombstone)
            group.offsets.clear()
            return
        del rb.consumer_groups[group_id]
    elif rb.groups.get(group_id) is group:
        del rb.groups[group_id]
    rb.rebalances_started.pop(group_id, None)
    rb.expiry.remove_group(group_id)
    log.info("group %s expired (%d offsets)", group_id, count)
