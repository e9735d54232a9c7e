"""DescribeGroups (v0-v5), ListGroups (v0-v5), DeleteGroups (v0-v2) and KIP-848's
ConsumerGroupDescribe (v0-v1)."""

from __future__ import annotations

import dataclasses
import logging
from functools import partial

from groupcoord.coordinator.consumer_group import Assignment, ConsumerGroup, ConsumerMember
from groupcoord.coordinator.consumer_heartbeat import preferred_assignor
from groupcoord.coordinator.consumer_messages import (
    CONSUMER_MEMBER_TYPE,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
)
from groupcoord.coordinator.consumer_records import flush_consumer_group
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.messages import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorClass,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from groupcoord.coordinator.offsets import GroupTombstone
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.coordinator.topics import TopicImage
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    NonEmptyGroupError,
)
from groupcoord.protocol import described_assignment, described_subscription

__all__ = [
    "handle_consumer_group_describe",
    "handle_delete_groups",
    "handle_describe_groups",
    "handle_list_groups",
]

log = logging.getLogger("groupcoord.coordinator")

_STABLE = GroupState.STABLE
_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD


def handle_describe_groups(rb: Rebalancer, req: DescribeGroupsRequest) -> None:
    rb.out.append(
        DescribeGroupsResponse(
            version=req.version,
            correlation=req.correlation,
            groups=tuple(
                _with_operations(
                    _describe(rb, group_id, req.version), req.include_authorized_operations
                )
                for group_id in req.groups
            ),
        )
    )


#: What Kafka 4 reports for a group when asked (v3+) and no authorizer is configured:
#: every operation a group resource has (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS; AclOperation codes 3, 6, 8, 10, 11). Kafka 3.9 lists the first three.
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))


def _with_operations(group: DescribedGroup, include: bool) -> DescribedGroup:
    # Kafka fills them in for the groups described without an error (a v6 GROUP_ID_NOT_FOUND
    # keeps the "not asked" value)
    if not include or group.error is not None:
        return group
    return dataclasses.replace(group, authorized_operations=GROUP_OPERATIONS)


def _describe(rb: Rebalancer, group_id: str, version: int) -> DescribedGroup:
    group = rb.groups.get(group_id)
    if group is None:
        if version < 6:
            return DescribedGroup(
                group_id=group_id, group_state=_DEAD.value, protocol_type="", protocol_data=""
            )
        # v6 (KIP-1043) names why: Kafka's GroupIdNotFoundException messages
        why = "is not a classic group" if group_id in rb.consumer_groups else "not found"
        return DescribedGroup(
            group_id=group_id,
            error=GroupIdNotFoundError,
            error_message=f"Group {group_id} {why}.",
            group_state=_DEAD.value,
            protocol_type="",
            protocol_data="",
        )
    stable = group.state is _STABLE and group.protocol_name is not None
    consumer = group.protocol_type == "consumer"
    members = []
    for m in group.members.values():
        metadata = m.metadata(group.protocol_name) if stable and group.protocol_name else b""
        assignment = m.assignment if stable else b""
        members.append(
            DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=metadata,
                member_assignment=assignment,
                subscription=described_subscription(metadata) if consumer else None,
                assignment=described_assignment(assignment) if consumer else None,
            )
        )
    return DescribedGroup(
        group_id=group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=tuple(members),
    )


def handle_consumer_group_describe(rb: Rebalancer, req: ConsumerGroupDescribeRequest) -> None:
    """Kafka's ``consumerGroupDescribe``: a classic group, or none, is GROUP_ID_NOT_FOUND
    (Java's admin then describes it with DescribeGroups)."""
    groups = []
    for group_id in req.group_ids:
        group = rb.consumer_groups.get(group_id)
        if group is None:
            # Kafka's GroupIdNotFoundException messages (GroupMetadataManager.consumerGroup)
            why = "is not a consumer group" if group_id in rb.groups else "not found"
            groups.append(
                DescribedConsumerGroup(
                    group_id=group_id,
                    error=GroupIdNotFoundError,
                    error_message=f"Group {group_id} {why}.",
                )
            )
            continue
        described = _describe_consumer_group(rb.topics, group)
        if req.include_authorized_operations:
            described = dataclasses.replace(described, authorized_operations=GROUP_OPERATIONS)
        groups.append(described)
    rb.out.append(
        ConsumerGroupDescribeResponse(
            version=req.version, correlation=req.correlation, groups=tuple(groups)
        )
    )


def _describe_consumer_group(topics: TopicImage, group: ConsumerGroup) -> DescribedConsumerGroup:
    return DescribedConsumerGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=preferred_assignor(group),
        members=tuple(
            _describe_consumer_member(topics, m, group.target_of(m.member_id))
            for m in group.members.values()
        ),
    )


def _describe_consumer_member(
    topics: TopicImage, member: ConsumerMember, target: Assignment
) -> DescribedConsumerMember:
    return DescribedConsumerMember(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        # Kafka 4.4.0 answers "" for a member without a regex (measured), not null
        subscribed_topic_regex=member.subscribed_topic_regex or "",
        assignment=_described_partitions(topics, member.assigned),
        target_assignment=_described_partitions(topics, target),
        member_type=CONSUMER_MEMBER_TYPE,
    )


def _described_partitions(
    topics: TopicImage, assignment: Assignment
) -> tuple[DescribedTopicPartitions, ...]:
    # as Kafka, a topic no longer in the image is left out
    out = []
    for name in sorted(assignment):
        meta = topics.by_name(name)
        if meta is not None:
            out.append(
                DescribedTopicPartitions(
                    topic_id=meta.topic_id,
                    topic_name=name,
                    partitions=tuple(sorted(assignment[name])),
                )
            )
    return tuple(out)


def handle_list_groups(rb: Rebalancer, req: ListGroupsRequest) -> None:
    states = {s.lower() for s in req.states_filter}
    types = {t.lower() for t in req.types_filter}
    listed: list[ListedGroup] = []
    if not types or "classic" in types:
        for group in rb.groups.values():
            if states and group.state.value.lower() not in states:
                continue
            listed.append(
                ListedGroup(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    group_state=group.state.value,
                )
            )
    if not types or "consumer" in types:
        for cg in rb.consumer_groups.values():
            state = cg.state.value
            if states and state.lower() not in states:
                continue
            listed.append(
                ListedGroup(
                    group_id=cg.group_id,
                    protocol_type="consumer",
                    group_state=state,
                    group_type="consumer",
                )
            )
    rb.out.append(
        ListGroupsResponse(version=req.version, correlation=req.correlation, groups=tuple(listed))
    )


def handle_delete_groups(rb: Rebalancer, req: DeleteGroupsRequest) -> None:
    """Empty groups are deleted (metadata and offsets): each goes Dead at once, so nothing
    joins or commits to it meanwhile, and is dropped once its tombstone is persisted; a
    failed write brings it back as it was and answers COORDINATOR_NOT_AVAILABLE."""
    errors: dict[str, ErrorClass] = {}
    doomed: list[tuple[Group, tuple[GroupState, GroupState | None, int]]] = []
    doomed_consumer: list[str] = []
    for group_id in dict.fromkeys(req.groups_names):
        consumer_group = rb.consumer_groups.get(group_id)
        if consumer_group is not None:
            # only an empty consumer group may go (Kafka's validateDeleteGroup)
            if consumer_group.is_empty():
                flush_consumer_group(rb, consumer_group)  # its last changes go first
                errors[group_id] = None
                doomed_consumer.append(group_id)
            else:
                errors[group_id] = NonEmptyGroupError
            continue
        group = rb.groups.get(group_id)
        if group is None or group.state is _DEAD:
            errors[group_id] = GroupIdNotFoundError
        elif group.state is not _EMPTY:
            errors[group_id] = NonEmptyGroupError
        else:
            errors[group_id] = None
            doomed.append((group, (group.state, group.previous_state, group.state_timestamp_ms)))
            group.transition_to(_DEAD, rb.now)
    if doomed or doomed_consumer:
        rb.persist(
            tuple(GroupTombstone(group.group_id) for group, _ in doomed)
            + tuple(GroupTombstone(group_id) for group_id in doomed_consumer),
            partial(_on_deleted, rb, req, errors, doomed, doomed_consumer),
        )
        return
    _respond(rb, req, errors)


def _on_deleted(
    rb: Rebalancer,
    req: DeleteGroupsRequest,
    errors: dict[str, ErrorClass],
    doomed: list[tuple[Group, tuple[GroupState, GroupState | None, int]]],
    doomed_consumer: list[str],
    ok: bool,
) -> None:
    for group_id in doomed_consumer:
        consumer_group = rb.consumer_groups.get(group_id)
        if not ok:
            errors[group_id] = CoordinatorNotAvailableError
        elif consumer_group is not None and consumer_group.is_empty():
            # (a member that joined meanwhile keeps the group, as it would have in Kafka,
            # where the delete and the join are ordered)
            del rb.consumer_groups[group_id]
            rb.expiry.remove_group(group_id)
            log.info("consumer group %s deleted", group_id)
    for group, before in doomed:
        group_id = group.group_id
        if not ok:
            log.warning("group %s: delete was not persisted", group_id)
            group.restore_state(*before)
            errors[group_id] = CoordinatorNotAvailableError
            continue
        if rb.groups.get(group_id) is group:
            del rb.groups[group_id]
        rb.rebalances_started.pop(group_id, None)
        rb.expiry.remove_group(group_id)
        log.info("group %s deleted (%d offsets)", group_id, len(group.offsets))
    _respond(rb, req, errors)


def _respond(rb: Rebalancer, req: DeleteGroupsRequest, errors: dict[str, ErrorClass]) -> None:
    rb.out.append(
        DeleteGroupsResponse(
            version=req.version,
            correlation=req.correlation,
            results=tuple(
                DeletableGroupResult(group_id=group_id, error=error)
                for group_id, error in errors.items()
            ),
        )
    )
