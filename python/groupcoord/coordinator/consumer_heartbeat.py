"""ConsumerGroupHeartbeat (v0-v1) and the deadlines of KIP-848 consumer groups, as Kafka 4.x's
``GroupMetadataManager.consumerGroupHeartbeat`` handles them.

One heartbeat, in order:

1. check the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION);
   epoch -1 / -2 is a leave (:func:`_leave`);
2. find the group (epoch 0 may create it, or replace an *empty* classic group) and the
   member (epoch 0 may create it, or replace a static member that left with -2), and check
   the member epoch (FENCED_MEMBER_EPOCH), the instance id (UNRELEASED_INSTANCE_ID,
   FENCED_INSTANCE_ID) and the group size (GROUP_MAX_SIZE_REACHED) -- nothing has changed
   yet when one of these is answered;
3. update the member; bump the group epoch if its subscription changed or the partition
   counts of the subscribed topics did;
4. if the group epoch is ahead of the target assignment's, run the server-side assignor
   (sticky to the current target) for the new target;
5. reconcile the member towards its target (:mod:`groupcoord.coordinator.reconciliation`)
   with what it says it owns, arm or clear its revocation deadline, refresh its session;
6. answer with its epoch, the heartbeat interval and, when its assignment changed or the
   request was a full one, its assignment.

Regular expressions are resolved against the coordinator's topics at once (Kafka resolves
them in the background and bumps the group epoch when the result changes; the outcome seen
by members is the same, one heartbeat sooner). What a heartbeat changed is handed to the
shell as records (:mod:`groupcoord.coordinator.consumer_records`) and its answer waits for
them; a heartbeat that changed nothing writes nothing and is answered at once. Changes
made by deadlines and topic updates are handed out by the coordinator after the call.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections import Counter
from collections.abc import Collection
from functools import partial
from typing import Final

from groupcoord.assignors.server import (
    GroupTarget,
    RangeAssignor,
    ServerAssignor,
    ServerMember,
    UniformAssignor,
)
from groupcoord.coordinator.consumer_group import (
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from groupcoord.coordinator.consumer_messages import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.consumer_records import on_records_persisted, take_records
from groupcoord.coordinator.events import MemberRemoved, RemovalCause
from groupcoord.coordinator.offsets import StoreRecord
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.reconciliation import reconcile
from groupcoord.coordinator.states import GroupState
from groupcoord.coordinator.topic_regex import compile_topic_regex
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    InvalidRequestError,
    KafkaError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from groupcoord.types import TopicPartition

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNOR",
    "arm_revocation",
    "handle_consumer_group_heartbeat",
    "on_consumer_deadline",
    "preferred_assignor",
    "refresh_all_subscriptions",
]

log = logging.getLogger("groupcoord.coordinator")

#: ``group.consumer.assignors``: the server-side assignors, the first is the default.
ASSIGNORS: dict[str, ServerAssignor] = {"uniform": UniformAssignor(), "range": RangeAssignor()}
DEFAULT_ASSIGNOR = "uniform"

_SESSION: Final = "session"
_JOIN: Final = "join"


# ------------------------------------------------------------------------------ entry


def handle_consumer_group_heartbeat(rb: Rebalancer, req: ConsumerGroupHeartbeatRequest) -> None:
    try:
        _validate(req)
        if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            response = _leave(rb, req)
        else:
            response = _heartbeat(rb, req)
    except KafkaError as e:
        log.debug("group %s: heartbeat of %s refused: %s", req.group_id, req.member_id, e)
        response = ConsumerGroupHeartbeatResponse(
            version=req.version,
            correlation=req.correlation,
            error=type(e),
            error_message=e.message or None,
        )
    group = rb.consumer_groups.get(req.group_id)
    records = () if group is None else take_records(group)
    if group is None or not records:
        rb.out.append(response)
        return
    # The answer waits for what it tells the member (its epoch, its assignment) to be
    # durable, as Kafka's waits for its offsets-topic append.
    rb.dirty_consumer_groups.discard(req.group_id)
    rb.persist(records, partial(_on_persisted, rb, group, records, response))


def _on_persisted(
    rb: Rebalancer,
    group: ConsumerGroup,
    records: tuple[StoreRecord, ...],
    response: ConsumerGroupHeartbeatResponse,
    ok: bool,
) -> None:
    on_records_persisted(rb, group, records, ok)
    if not ok:
        response = ConsumerGroupHeartbeatResponse(
            version=response.version,
            correlation=response.correlation,
            error=CoordinatorNotAvailableError,
        )
    rb.out.append(response)


def _validate(req: ConsumerGroupHeartbeatRequest) -> None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
    if not req.group_id:
        raise InvalidRequestError("GroupId can't be empty.")
    if req.instance_id == "":
        raise InvalidRequestError("InstanceId can't be empty.")
    if req.rack_id == "":
        raise InvalidRequestError("RackId can't be empty.")
    epoch = req.member_epoch
    if req.version >= 1 and not req.member_id:
        raise InvalidRequestError("MemberId can't be empty.")
    if epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
        if not req.member_id:
            raise InvalidRequestError("MemberId can't be empty.")
    elif epoch == 0:
        if req.rebalance_timeout_ms == -1:
            raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            raise InvalidRequestError(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                "(re-)joining."
            )
    elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if not req.member_id:
            raise InvalidRequestError("MemberId can't be empty.")
        if req.instance_id is None:
            raise InvalidRequestError("InstanceId can't be null.")
    else:
        raise InvalidRequestError(f"MemberEpoch {epoch} is invalid.")
    if req.rebalance_timeout_ms < -1:
        raise InvalidRequestError("RebalanceTimeoutMs must be -1 or a timeout.")
    if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
        raise UnsupportedAssignorError(
            f"ServerAssignor {req.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(ASSIGNORS)}."
        )
    if req.subscribed_topic_regex:
        compile_topic_regex(req.subscribed_topic_regex)  # INVALID_REGULAR_EXPRESSION


# ------------------------------------------------------------------------------ heartbeat


def _get_or_maybe_create_group(rb: Rebalancer, group_id: str, create: bool) -> ConsumerGroup:
    """The consumer group (not yet registered if new: nothing changes before the checks)."""
    group = rb.consumer_groups.get(group_id)
    if group is not None:
        return group
    classic = rb.groups.get(group_id)
    if classic is not None and not (create and classic.state is GroupState.EMPTY):
        # Kafka 4.x upgrades a classic group with members online when its migration
        # policy allows it; groupcoord does not (yet).
        raise GroupIdNotFoundError(f"Group {group_id} is not a consumer group.")
    if not create:
        raise GroupIdNotFoundError(f"Consumer group {group_id} not found.")
    return ConsumerGroup(group_id)


def _register(rb: Rebalancer, group: ConsumerGroup) -> None:
    """Make a new group the coordinator's; an empty classic group of that id gives way
    (its committed offsets stay with the id, as Kafka's offsets do)."""
    gid = group.group_id
    if rb.consumer_groups.get(gid) is group:
        return
    classic = rb.groups.pop(gid, None)
    if classic is not None:
        group.offsets.update(classic.offsets)
        rb.expiry.remove_group(gid)
        rb.rebalances_started.pop(gid, None)
        if group.offsets:
            rb.check_retention(gid)  # the classic group's retention check went with it
        log.info("group %s: empty classic group replaced by a consumer group", gid)
    rb.consumer_groups[gid] = group


def _check_epoch(
    member: ConsumerMember, received: int, owned: Collection[TopicPartition] | None
) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``, with KAFKA-19233: epoch 0 is
    a rejoin, always allowed (a fenced member rejoins under its member id)."""
    if received == 0:
        return
    current = member.member_epoch
    if received > current:
        raise FencedMemberEpochError(
            f"The consumer group member has a greater member epoch ({received}) than the one "
            f"known by the group coordinator ({current}). The member must abandon all its "
            "partitions and rejoin."
        )
    if received < current and (
        received != member.previous_member_epoch or not _is_subset(owned, member.assigned)
    ):
        # The previous epoch is accepted when the member owns no more than it has: the
        # response that bumped its epoch may have been lost.
        raise FencedMemberEpochError(
            f"The consumer group member has a smaller member epoch ({received}) than the one "
            f"known by the group coordinator ({current}). The member must abandon all its "
            "partitions and rejoin."
        )


def _is_subset(owned: Collection[TopicPartition] | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(tp.partition in assigned.get(tp.topic, ()) for tp in owned)


def _owned(rb: Rebalancer, req: ConsumerGroupHeartbeatRequest) -> list[TopicPartition] | None:
    """What the member says it owns, by topic name (ids of unknown topics are dropped)."""
    if req.topic_partitions is None:
        return None
    owned: list[TopicPartition] = []
    for tps in req.topic_partitions:
        topic = rb.topics.by_id(tps.topic_id)
        if topic is not None:
            owned.extend(TopicPartition(topic.name, p) for p in tps.partitions)
    return owned


def _find_member(
    rb: Rebalancer,
    group: ConsumerGroup,
    req: ConsumerGroupHeartbeatRequest,
    member_id: str,
    owned: list[TopicPartition] | None,
) -> tuple[ConsumerMember, ConsumerMember | None]:
    """The member as it is (a fresh one for a new member) and, for a static member that
    replaces the one holding its instance id, that one."""
    joining = req.member_epoch == 0
    instance_id = req.instance_id
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of the group.")
            member = ConsumerMember(member_id=member_id)
        _check_epoch(member, req.member_epoch, owned)
        return member, None
    existing = group.static_member(instance_id)
    if joining:
        if existing is None:
            member = group.members.get(member_id) or ConsumerMember(member_id=member_id)
            return member, None
        if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise UnreleasedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} cannot join the "
                f"group because the instance id is owned by {existing.member_id} member."
            )
        # The instance id comes back: the new member takes over the old one's assignment.
        replacement = dataclasses.replace(
            existing, member_id=member_id, member_epoch=0, previous_member_epoch=0
        )
        return replacement, existing
    if existing is None:
        raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
    if existing.member_id != member_id:
        raise FencedInstanceIdError(
            f"Static member {member_id} with instance id {instance_id} was fenced by member "
            f"{existing.member_id}."
        )
    _check_epoch(existing, req.member_epoch, owned)
    return existing, None


def _updated(member: ConsumerMember, req: ConsumerGroupHeartbeatRequest) -> ConsumerMember:
    """The member with what the request changes (absent fields change nothing)."""
    if (
        req.rebalance_timeout_ms == -1
        and req.subscribed_topic_names is None
        and req.subscribed_topic_regex is None
        and req.instance_id is None
        and req.rack_id is None
        and req.server_assignor is None
        and req.client_id == member.client_id
        and req.client_host == member.client_host
    ):
        return member  # a steady heartbeat: rebuilding the member was half of its cost
    changes: dict[str, object] = {"client_id": req.client_id, "client_host": req.client_host}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex or None
    return dataclasses.replace(member, **changes)  # type: ignore[arg-type]


def _heartbeat(
    rb: Rebalancer, req: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    joining = req.member_epoch == 0
    group = _get_or_maybe_create_group(rb, req.group_id, joining)
    member_id = req.member_id or str(uuid.uuid4())  # v0: the coordinator makes the id
    max_size = rb.config.group_consumer_max_size
    if len(group.members) >= max_size and member_id not in group.members:
        raise GroupMaxSizeReachedError(
            f"The consumer group has reached its maximum capacity of {max_size} members."
        )
    owned = _owned(rb, req)
    member, replaced = _find_member(rb, group, req, member_id, owned)

    # ---- from here on the request is accepted: change the group
    _register(rb, group)
    gid = group.group_id
    if replaced is not None:
        log.info(
            "group %s: static member %s replaces %s (instance id %s)",
            gid,
            member_id,
            replaced.member_id,
            replaced.instance_id,
        )
        target = group.target.get(replaced.member_id)
        group.remove_member(replaced.member_id)
        rb.expiry.clear(gid, replaced.member_id)
        if target is not None:
            group.target[member_id] = target  # its member record is written below
            group.target_kept = False  # the assignor's copy has it under the old id
    elif member_id not in group.members:
        log.info("group %s: member %s joins the consumer group", gid, member_id)
    updated = _updated(member, req)
    bump = group.group_epoch == 0 or (
        updated.subscribed_topic_names != member.subscribed_topic_names
        or updated.subscribed_topic_regex != member.subscribed_topic_regex
    )
    current = group.members.get(member_id)
    if updated is not current and updated != current:
        group.update_member(updated)
    if bump:
        _refresh_subscription(rb, group)
        _bump(group, "member subscription changed")
    if group.group_epoch > group.assignment_epoch:
        _update_target(rb, group)

    reconciled = updated
    if not updated.is_reconciled_to(group.assignment_epoch):
        reconciled = reconcile(
            updated,
            group.assignment_epoch,
            group.target_of(member_id),
            owned,
            group.current_partition_epoch,
        )
        if reconciled != updated:
            group.update_member(reconciled)
            arm_revocation(rb, group, reconciled)
    session = rb.config.group_consumer_session_timeout_ms
    rb.expiry.heartbeat(gid, member_id, rb.now, session)

    full = joining or (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None
    )
    return ConsumerGroupHeartbeatResponse(
        version=req.version,
        correlation=req.correlation,
        member_id=member_id,
        member_epoch=reconciled.member_epoch,
        heartbeat_interval_ms=rb.config.group_consumer_heartbeat_interval_ms,
        assignment=_wire_assignment(rb, reconciled.assigned)
        if full or reconciled.assigned != member.assigned
        else None,
    )


def _wire_assignment(rb: Rebalancer, assigned: Assignment) -> tuple[TopicPartitions, ...]:
    out: list[TopicPartitions] = []
    for topic in sorted(assigned):
        meta = rb.topics.by_name(topic)
        if meta is not None:  # a deleted topic: nothing to consume
            out.append(
                TopicPartitions(topic_id=meta.topic_id, partitions=tuple(sorted(assigned[topic])))
            )
    return tuple(out)


def arm_revocation(rb: Rebalancer, group: ConsumerGroup, member: ConsumerMember) -> None:
    """While a member owes revocations it has its rebalance timeout to make them."""
    gid, mid = group.group_id, member.member_id
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        group.revocation_epochs[mid] = member.member_epoch
        rb.expiry.expect_join(gid, mid, rb.now + max(member.rebalance_timeout_ms, 0))
    elif group.revocation_epochs.pop(mid, None) is not None:
        rb.expiry.clear(gid, mid, _JOIN)


# ------------------------------------------------------------------------------ epochs


def _bump(group: ConsumerGroup, why: str) -> None:
    group.group_epoch += 1
    log.info("group %s: bumped group epoch to %d (%s)", group.group_id, group.group_epoch, why)


def _subscribed_topics(rb: Rebalancer, member: ConsumerMember) -> set[str]:
    topics = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        pattern = compile_topic_regex(member.subscribed_topic_regex)
        topics.update(t for t in rb.topics.names() if pattern.fullmatch(t))
    return topics


def _subscription_signature(
    rb: Rebalancer, group: ConsumerGroup
) -> tuple[dict[str, int], dict[str, frozenset[str]]]:
    """Partition counts of the subscribed topics that exist, and what each regex resolves to."""
    topics: set[str] = set()
    regexes: dict[str, frozenset[str]] = {}
    for member in group.members.values():
        topics.update(member.subscribed_topic_names)
        regex = member.subscribed_topic_regex
        if regex and regex not in regexes:
            pattern = compile_topic_regex(regex)
            regexes[regex] = frozenset(t for t in rb.topics.names() if pattern.fullmatch(t))
    for matched in regexes.values():
        topics |= matched
    metadata: dict[str, int] = {}
    for name in sorted(topics):
        meta = rb.topics.by_name(name)
        if meta is not None:
            metadata[name] = meta.partitions
    return metadata, regexes


def _refresh_subscription(rb: Rebalancer, group: ConsumerGroup) -> bool:
    """Recompute what the group subscribes to; whether it changed."""
    metadata, regexes = _subscription_signature(rb, group)
    changed = metadata != group.subscription_metadata or regexes != group.resolved_regexes
    group.subscription_metadata = metadata
    group.resolved_regexes = regexes
    return changed


def refresh_all_subscriptions(rb: Rebalancer) -> None:
    """The topics changed: bump the epoch of every group whose subscription they change
    (a new partition count, a topic created or deleted, a regex matching other topics)."""
    for group in rb.consumer_groups.values():
        if group.members and _refresh_subscription(rb, group):
            _bump(group, "subscribed topics changed")
            rb.dirty_consumer_groups.add(group.group_id)


def preferred_assignor(group: ConsumerGroup) -> str:
    """The assignor most members ask for (ties: by name), else the default."""
    votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    if not votes:
        return DEFAULT_ASSIGNOR
    return min(votes, key=lambda name: (-votes[name], name))


def _update_target(rb: Rebalancer, group: ConsumerGroup) -> None:
    """A new target assignment for the group epoch (Kafka's ``TargetAssignmentBuilder``)."""
    name = preferred_assignor(group)
    members = {
        m.member_id: ServerMember(
            topics=_subscribed_topics(rb, m), rack=m.rack_id, instance_id=m.instance_id
        )
        for m in group.members.values()
    }
    keeper = group.target_keeper
    if (
        keeper is not None
        and group.target_kept
        and keeper.assignor.name == name
        and group.removed_since_target.isdisjoint(members)
    ):
        # the keeper's target is group.target plus the members removed since: absent from
        # ``members``, they are leaves to it, as to ``assign(current=group.target)``
        result = keeper.assign(members, group.subscription_metadata)
    else:
        keeper = group.target_keeper = GroupTarget(ASSIGNORS[name])
        result = keeper.assign(members, group.subscription_metadata, current=group.target)
    group.target_kept = True
    group.removed_since_target.clear()
    group.set_target(
        {
            member_id: {topic: frozenset(ps) for topic, ps in topics.items() if ps}
            for member_id, topics in result.items()
        },
        group.group_epoch,
    )
    log.info(
        "group %s: computed a new target assignment for epoch %d with the %s assignor",
        group.group_id,
        group.group_epoch,
        name,
    )


# ------------------------------------------------------------------------------ leaving


def _leave(rb: Rebalancer, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    """Kafka's ``consumerGroupLeave``: -1 leaves for good, -2 (static) for a while."""
    group = rb.consumer_groups.get(req.group_id)
    if group is None:
        raise GroupIdNotFoundError(f"Consumer group {req.group_id} not found.")
    instance_id = req.instance_id
    if instance_id is None:
        member = group.members.get(req.member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {req.member_id} is not a member of the group.")
        fence_member(rb, group, member, RemovalCause.LEFT, "left the consumer group")
    else:
        member = group.static_member(instance_id)
        if member is None:
            raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
        if member.member_id != req.member_id:
            raise FencedInstanceIdError(
                f"Static member {req.member_id} with instance id {instance_id} was fenced by "
                f"member {member.member_id}."
            )
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # Keeps its assignment (and its session) so that its instance can come back
            # without a rebalance; what it was revoking is free now.
            log.info(
                "group %s: static member %s (instance id %s) temporarily left",
                group.group_id,
                member.member_id,
                instance_id,
            )
            group.update_member(
                dataclasses.replace(
                    member,
                    member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
                    state=MemberState.STABLE,
                    pending_revocation={},
                )
            )
            if group.revocation_epochs.pop(member.member_id, None) is not None:
                rb.expiry.clear(group.group_id, member.member_id, _JOIN)
        else:
            fence_member(rb, group, member, RemovalCause.LEFT, "left the consumer group")
    return ConsumerGroupHeartbeatResponse(
        version=req.version,
        correlation=req.correlation,
        member_id=req.member_id,
        member_epoch=req.member_epoch,
    )


def fence_member(
    rb: Rebalancer, group: ConsumerGroup, member: ConsumerMember, cause: RemovalCause, why: str
) -> None:
    """Remove the member (its partitions become free) and bump the group epoch (Kafka's
    ``consumerGroupFenceMember``)."""
    gid, mid = group.group_id, member.member_id
    log.info("group %s: member %s removed (%s)", gid, mid, why)
    group.remove_member(mid)
    rb.expiry.clear(gid, mid)
    if group.is_empty():
        rb.check_retention(gid)  # idle now: its offsets may expire, the group with them
    _refresh_subscription(rb, group)
    _bump(group, f"member {mid} {why}")
    rb.dirty_consumer_groups.add(gid)
    rb.events.append(
        MemberRemoved(
            group_id=gid,
            member_id=mid,
            group_instance_id=member.instance_id,
            cause=cause,
            reason=why,
            at_ms=rb.now,
        )
    )


def on_consumer_deadline(rb: Rebalancer, group_id: str, member_id: str, kind: str) -> None:
    group = rb.consumer_groups.get(group_id)
    if group is None:
        return
    member = group.members.get(member_id)
    if member is None:
        return
    if kind == _SESSION:
        fence_member(rb, group, member, RemovalCause.SESSION_TIMEOUT, "session expired")
    elif kind == _JOIN:
        armed = group.revocation_epochs.pop(member_id, None)
        if armed is not None and armed == member.member_epoch:
            fence_member(
                rb,
                group,
                member,
                RemovalCause.NOT_REVOKED,
                f"did not revoke its partitions within {member.rebalance_timeout_ms} ms",
            )
