"""What each group API needs the caller to be allowed, and the answer when it is not.

Kafka's checks (``KafkaApis`` / ``GroupCoordinatorService`` of Kafka 4.x):

- JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat (KIP-848): READ on
  the group, else GROUP_AUTHORIZATION_FAILED.
- OffsetCommit: READ on the group (else GROUP_AUTHORIZATION_FAILED on every partition),
  and READ on each topic: the partitions of a topic the caller may not read get
  TOPIC_AUTHORIZATION_FAILED, the others are committed.
- OffsetFetch: DESCRIBE on each group (else GROUP_AUTHORIZATION_FAILED for it) and on
  each topic: a named topic the caller may not describe gets TOPIC_AUTHORIZATION_FAILED
  on its partitions; a fetch of all topics leaves such topics out.
- DescribeGroups and ConsumerGroupDescribe: DESCRIBE on each group, DeleteGroups: DELETE
  on each group; a group that fails gets GROUP_AUTHORIZATION_FAILED in its own entry.
- OffsetDelete: DELETE on the group (else GROUP_AUTHORIZATION_FAILED for the whole
  request) and READ on each topic: the partitions of a topic the caller may not read get
  TOPIC_AUTHORIZATION_FAILED; the coordinator is asked about the rest, even when none is
  left (so an unknown group is still GROUP_ID_NOT_FOUND), and its group-level error wins.
- ListGroups: every group with DESCRIBE on the cluster, else only the groups the caller
  may describe.
- FindCoordinator: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or on the
  transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

:func:`check_group_request` returns the part of a request the coordinator should see (or
``None``: nothing) and how to complete the coordinator's answer into the client's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    DescribedConsumerGroup,
)
from groupcoord.coordinator.messages import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupRequest,
)
from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse
from groupcoord.errors import (
    GroupAuthorizationFailedError,
    KafkaError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from groupcoord.protocol.group_messages import error_response
from groupcoord.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from groupcoord.security.authorizer import AclAuthorizer, Allowed

__all__ = ["Allowed", "GroupCheck", "caller_check", "check_group_request", "coordinator_refusal"]

_GROUP_READ = (
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    ConsumerGroupHeartbeatRequest,
)


class GroupCheck(NamedTuple):
    """``forward``: what the coordinator should handle (``None``: nothing, the answer is
    ``finish(None)``); ``finish``: the client's response from the coordinator's."""

    forward: CoordinatorRequest | None
    finish: Callable[[CoordinatorResponse | None], CoordinatorResponse]


def caller_check(authorizer: AclAuthorizer, principal: str, host: str) -> Allowed:
    """The check of one connection's caller (``host`` as the ACLs name it: the address)."""
    authorize = authorizer.authorize

    def allowed(operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return authorize(principal, host, operation, resource_type, name)

    return allowed


def _as_is(response: CoordinatorResponse | None) -> CoordinatorResponse:
    assert response is not None
    return response


def _refused(request: CoordinatorRequest, error: type[KafkaError]) -> GroupCheck:
    response = error_response(
        request.API_KEY, request.version, request, error, correlation=request.correlation
    )
    return GroupCheck(None, lambda _: response)


def check_group_request(request: CoordinatorRequest, allowed: Allowed) -> GroupCheck:
    """What the coordinator sees of ``request`` and how its answer is completed."""
    if isinstance(request, _GROUP_READ):
        if allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return GroupCheck(request, _as_is)
        return _refused(request, GroupAuthorizationFailedError)
    if isinstance(request, OffsetCommitRequest):
        return _offset_commit(request, allowed)
    if isinstance(request, OffsetFetchRequest):
        return _offset_fetch(request, allowed)
    if isinstance(request, DescribeGroupsRequest):
        return _per_group(request, allowed, AclOperation.DESCRIBE)
    if isinstance(request, DeleteGroupsRequest):
        return _per_group(request, allowed, AclOperation.DELETE)
    if isinstance(request, ConsumerGroupDescribeRequest):
        return _per_group(request, allowed, AclOperation.DESCRIBE)
    if isinstance(request, OffsetDeleteRequest):
        return _offset_delete(request, allowed)
    assert isinstance(request, ListGroupsRequest), type(request)
    if allowed(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return GroupCheck(request, _as_is)

    def visible(response: CoordinatorResponse | None) -> CoordinatorResponse:
        assert isinstance(response, ListGroupsResponse)
        groups = tuple(
            g
            for g in response.groups
            if allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
        )
        return dataclasses.replace(response, groups=groups)

    return GroupCheck(request, visible)


def coordinator_refusal(allowed: Allowed) -> Callable[[int, str], KafkaError | None]:
    """FindCoordinator's check of one key (key type 0 a group, 1 a transactional id)."""

    def refuse(key_type: int, key: str) -> KafkaError | None:
        if key_type == 0 and not allowed(AclOperation.DESCRIBE, ResourceType.GROUP, key):
            return GroupAuthorizationFailedError()
        if key_type == 1 and not allowed(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
            return TransactionalIdAuthorizationFailedError()
        return None

    return refuse


# ------------------------------------------------------------------ OffsetCommit


def _offset_commit(request: OffsetCommitRequest, allowed: Allowed) -> GroupCheck:
    if not allowed(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _refused(request, GroupAuthorizationFailedError)
    denied = {
        t.name for t in request.topics if not allowed(AclOperation.READ, ResourceType.TOPIC, t.name)
    }
    if not denied:
        return GroupCheck(request, _as_is)
    refused = {
        t.name: OffsetCommitResponseTopic(
            name=t.name,
            partitions=tuple(
                OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error=TopicAuthorizationFailedError
                )
                for p in t.partitions
            ),
        )
        for t in request.topics
        if t.name in denied
    }
    kept = tuple(t for t in request.topics if t.name not in denied)

    def merged(response: CoordinatorResponse | None) -> CoordinatorResponse:
        answered = {} if response is None else {t.name: t for t in _topics(response)}
        # the request's order; a topic named twice is answered once per mention
        topics = tuple(
            refused[t.name] if t.name in refused else answered[t.name] for t in request.topics
        )
        return OffsetCommitResponse(
            version=request.version, correlation=request.correlation, topics=topics
        )

    # nothing left to commit: Kafka answers without asking the coordinator
    return GroupCheck(dataclasses.replace(request, topics=kept) if kept else None, merged)


def _topics(response: CoordinatorResponse) -> tuple[OffsetCommitResponseTopic, ...]:
    assert isinstance(response, OffsetCommitResponse)
    return response.topics


# ------------------------------------------------------------------ OffsetFetch


def _offset_fetch(request: OffsetFetchRequest, allowed: Allowed) -> GroupCheck:
    def may_describe_topic(name: str) -> bool:
        return allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, name)

    groups = request.requested_groups()
    denied_groups = {
        g.group_id
        for g in groups
        if not allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
    }
    if request.version < 8 and denied_groups:
        return _refused(request, GroupAuthorizationFailedError)
    # per group: the topics asked for that the caller may not describe
    denied_topics = {
        g.group_id: [t for t in g.topics if not may_describe_topic(t.name)]
        for g in groups
        if g.topics is not None and g.group_id not in denied_groups
    }
    fetch_all = any(g.topics is None for g in groups)
    if not denied_groups and not any(denied_topics.values()) and not fetch_all:
        return GroupCheck(request, _as_is)

    def kept_group(g: OffsetFetchRequestGroup) -> OffsetFetchRequestGroup:
        if g.topics is None:
            return g
        kept = tuple(t for t in g.topics if may_describe_topic(t.name))
        return dataclasses.replace(g, topics=kept)

    def answered_topics(
        asked: OffsetFetchRequestGroup, topics: tuple[OffsetFetchResponseTopic, ...]
    ) -> tuple[OffsetFetchResponseTopic, ...]:
        visible = tuple(t for t in topics if may_describe_topic(t.name))
        refused = tuple(
            OffsetFetchResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetFetchResponsePartition(
                        partition_index=p, error=TopicAuthorizationFailedError
                    )
                    for p in t.partition_indexes
                ),
            )
            for t in denied_topics.get(asked.group_id, ())
        )
        return visible + refused

    if request.version < 8:
        (only,) = groups
        forward = dataclasses.replace(request, topics=kept_group(only).topics)

        def single(response: CoordinatorResponse | None) -> CoordinatorResponse:
            assert isinstance(response, OffsetFetchResponse)
            if response.error is not None:
                return response
            return dataclasses.replace(response, topics=answered_topics(only, response.topics))

        return GroupCheck(forward, single)

    kept = tuple(kept_group(g) for g in groups if g.group_id not in denied_groups)

    def batched(response: CoordinatorResponse | None) -> CoordinatorResponse:
        answered = {}
        if response is not None:
            assert isinstance(response, OffsetFetchResponse)
            answered = {g.group_id: g for g in response.groups}
        out = []
        for g in groups:
            if g.group_id in denied_groups:
                out.append(
                    OffsetFetchResponseGroup(
                        group_id=g.group_id, error=GroupAuthorizationFailedError
                    )
                )
                continue
            got = answered[g.group_id]
            if got.error is None:
                got = dataclasses.replace(got, topics=answered_topics(g, got.topics))
            out.append(got)
        return OffsetFetchResponse(
            version=request.version, correlation=request.correlation, groups=tuple(out)
        )

    return GroupCheck(dataclasses.replace(request, groups=kept) if kept else None, batched)


# ------------------------------------------------------------------ per-group APIs


@dataclass(frozen=True, slots=True)
class _PerGroupApi:
    """Where a per-group API keeps its group names and entries, and a refused entry."""

    names_field: str  # the request's tuple of group ids
    entries_field: str  # the response's tuple of per-group entries
    response: type[Any]
    refused: Callable[[str], Any]


_PER_GROUP: dict[type[Any], _PerGroupApi] = {
    DescribeGroupsRequest: _PerGroupApi(
        "groups",
        "groups",
        DescribeGroupsResponse,
        lambda n: DescribedGroup(
            group_id=n,
            error=GroupAuthorizationFailedError,
            group_state="",
            protocol_type="",
            protocol_data="",
        ),
    ),
    DeleteGroupsRequest: _PerGroupApi(
        "groups_names",
        "results",
        DeleteGroupsResponse,
        lambda n: DeletableGroupResult(group_id=n, error=GroupAuthorizationFailedError),
    ),
    ConsumerGroupDescribeRequest: _PerGroupApi(
        "group_ids",
        "groups",
        ConsumerGroupDescribeResponse,
        lambda n: DescribedConsumerGroup(group_id=n, error=GroupAuthorizationFailedError),
    ),
}


def _per_group(request: Any, allowed: Allowed, operation: AclOperation) -> GroupCheck:
    """An API answering per group: the groups the caller may not ``operation`` get
    GROUP_AUTHORIZATION_FAILED in their own entry, the others go to the coordinator."""
    api = _PER_GROUP[type(request)]
    names: tuple[str, ...] = getattr(request, api.names_field)
    denied = {n for n in names if not allowed(operation, ResourceType.GROUP, n)}
    if not denied:
        return GroupCheck(request, _as_is)
    kept = tuple(n for n in names if n not in denied)

    def merged(response: CoordinatorResponse | None) -> CoordinatorResponse:
        answered = {}
        if response is not None:
            assert isinstance(response, api.response)
            answered = {e.group_id: e for e in getattr(response, api.entries_field)}
        entries = tuple(api.refused(n) if n in denied else answered[n] for n in names)
        out: CoordinatorResponse = api.response(
            version=request.version,
            correlation=request.correlation,
            **{api.entries_field: entries},
        )
        return out

    forward = dataclasses.replace(request, **{api.names_field: kept}) if kept else None
    return GroupCheck(forward, merged)


# ------------------------------------------------------------------ OffsetDelete


def _offset_delete(request: OffsetDeleteRequest, allowed: Allowed) -> GroupCheck:
    """Kafka's ``KafkaApis.handleOffsetDeleteRequest``."""
    if not allowed(AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return _refused(request, GroupAuthorizationFailedError)
    denied = {
        t.name for t in request.topics if not allowed(AclOperation.READ, ResourceType.TOPIC, t.name)
    }
    if not denied:
        return GroupCheck(request, _as_is)
    kept = tuple(t for t in request.topics if t.name not in denied)

    def merged(response: CoordinatorResponse | None) -> CoordinatorResponse:
        assert isinstance(response, OffsetDeleteResponse)
        if response.error is not None:
            return response  # the group's error is the whole answer, as in Kafka
        answered = {t.name: t for t in response.topics}
        topics: dict[str, OffsetDeleteResponseTopic] = {}
        for t in request.topics:
            if t.name in topics:
                continue
            if t.name in denied:
                parts = tuple(
                    OffsetDeleteResponsePartition(
                        partition_index=p, error=TopicAuthorizationFailedError
                    )
                    for u in request.topics
                    if u.name == t.name
                    for p in u.partitions
                )
                topics[t.name] = OffsetDeleteResponseTopic(name=t.name, partitions=parts)
            elif t.name in answered:
                topics[t.name] = answered[t.name]
        return dataclasses.replace(response, topics=tuple(topics.values()))

    return GroupCheck(dataclasses.replace(request, topics=kept), merged)
