"""server.access: what each group API needs, checked against a real coordinator (the
allowed part goes through ``SyncShell.handle``, the answer is completed by ``finish``)."""

from __future__ import annotations

from groupcoord.coordinator import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    SyncShell,
)
from groupcoord.coordinator.output import CoordinatorRequest as AnyRequest
from groupcoord.coordinator.output import CoordinatorResponse as AnyResponse
from groupcoord.errors import (
    GroupAuthorizationFailedError,
    GroupIdNotFoundError,
    TopicAuthorizationFailedError,
)
from groupcoord.security import (
    AclAuthorizer,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.server.access import caller_check, check_group_request, coordinator_refusal

ME = "User:me"


def grant(rtype: ResourceType, name: str, op: AclOperation, principal: str = ME) -> AclBinding:
    return AclBinding(
        resource_type=rtype,
        name=name,
        pattern_type=PatternType.LITERAL,
        principal=principal,
        host="*",
        operation=op,
        permission=AclPermissionType.ALLOW,
    )


def through(shell: SyncShell, request: AnyRequest, authorizer: AclAuthorizer) -> AnyResponse:
    forward, finish = check_group_request(request, caller_check(authorizer, ME, "10.0.0.1"))
    if forward is None:
        return finish(None)
    (answer,) = shell.handle(forward, 0)
    return finish(answer)


def commit(group: str, *topics: str, version: int = 8) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        version=version,
        correlation=1,
        group_id=group,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=t,
                partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=7),),
            )
            for t in topics
        ),
    )


def errors_of(response: AnyResponse) -> dict[str, object]:
    assert isinstance(response, OffsetCommitResponse)
    return {t.name: t.partitions[0].error for t in response.topics}


def test_heartbeat_needs_read_on_the_group() -> None:
    shell = SyncShell()
    request = HeartbeatRequest(
        version=4, correlation=3, group_id="g", generation_id=1, member_id="m"
    )
    denied = through(shell, request, AclAuthorizer())
    assert isinstance(denied, HeartbeatResponse) and denied.error is GroupAuthorizationFailedError
    assert denied.correlation == 3
    allowed = through(
        shell, request, AclAuthorizer([grant(ResourceType.GROUP, "g", AclOperation.READ)])
    )
    assert (
        isinstance(allowed, HeartbeatResponse)
        and allowed.error is not GroupAuthorizationFailedError
    )


def test_offset_commit_commits_the_readable_topics_only() -> None:
    shell = SyncShell()
    authorizer = AclAuthorizer(
        [
            grant(ResourceType.GROUP, "g", AclOperation.READ),
            grant(ResourceType.TOPIC, "a", AclOperation.READ),
        ]
    )
    response = through(shell, commit("g", "b", "a"), authorizer)
    assert list(errors_of(response)) == ["b", "a"]  # the request's order
    assert errors_of(response) == {"b": TopicAuthorizationFailedError, "a": None}
    fetched = through(
        shell,
        OffsetFetchRequest(version=7, group_id="g", topics=None),
        AclAuthorizer(
            [
                grant(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
                grant(ResourceType.TOPIC, "a", AclOperation.DESCRIBE),
                grant(ResourceType.TOPIC, "b", AclOperation.DESCRIBE),
            ]
        ),
    )
    assert isinstance(fetched, OffsetFetchResponse)
    assert {t.name: t.partitions[0].committed_offset for t in fetched.topics} == {"a": 7}


def test_offset_commit_without_any_readable_topic_never_reaches_the_coordinator() -> None:
    shell = SyncShell()
    authorizer = AclAuthorizer([grant(ResourceType.GROUP, "g", AclOperation.READ)])
    response = through(shell, commit("g", "a"), authorizer)
    assert errors_of(response) == {"a": TopicAuthorizationFailedError}
    assert shell.coordinator.group_state("g") is None  # no group was created
    denied = through(shell, commit("g", "a"), AclAuthorizer())
    assert errors_of(denied) == {"a": GroupAuthorizationFailedError}


def offset_delete(group: str, *topics: str) -> OffsetDeleteRequest:
    return OffsetDeleteRequest(
        version=0,
        correlation=2,
        group_id=group,
        topics=tuple(OffsetDeleteRequestTopic(name=t, partitions=(0, 1)) for t in topics),
    )


def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic() -> None:
    shell = SyncShell()
    may_commit = AclAuthorizer(
        [grant(ResourceType.GROUP, "g", AclOperation.READ)]
        + [grant(ResourceType.TOPIC, t, AclOperation.READ) for t in "ab"]
    )
    through(shell, commit("g", "a", "b"), may_commit)
    # READ on the group is not enough: Kafka asks for DELETE, and answers for the group
    refused = through(shell, offset_delete("g", "a"), may_commit)
    assert isinstance(refused, OffsetDeleteResponse)
    assert (refused.error, refused.topics) == (GroupAuthorizationFailedError, ())
    authorizer = AclAuthorizer(
        [
            grant(ResourceType.GROUP, "g", AclOperation.DELETE),
            grant(ResourceType.TOPIC, "a", AclOperation.READ),
        ]
    )
    response = through(shell, offset_delete("g", "b", "a"), authorizer)
    assert isinstance(response, OffsetDeleteResponse) and response.error is None
    assert [
        (t.name, [(p.partition_index, p.error) for p in t.partitions]) for t in response.topics
    ] == [
        ("b", [(0, TopicAuthorizationFailedError), (1, TopicAuthorizationFailedError)]),
        ("a", [(0, None), (1, None)]),
    ]
    assert set(shell.coordinator.committed_offsets("g")) == {("b", 0)}
    # no readable topic left: the coordinator still says the group does not exist
    only_group = AclAuthorizer([grant(ResourceType.GROUP, "nope", AclOperation.DELETE)])
    missing = through(shell, offset_delete("nope", "b"), only_group)
    assert isinstance(missing, OffsetDeleteResponse)
    assert (missing.error, missing.topics) == (GroupIdNotFoundError, ())


def test_offset_fetch_hides_or_refuses_topics_the_caller_may_not_describe() -> None:
    shell = SyncShell()
    everything = AclAuthorizer(super_users=[ME])
    through(shell, commit("g", "a", "b"), everything)
    authorizer = AclAuthorizer(
        [
            grant(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
            grant(ResourceType.TOPIC, "a", AclOperation.READ),  # READ implies DESCRIBE
        ]
    )
    # all topics: b is left out
    every = through(shell, OffsetFetchRequest(version=7, group_id="g", topics=None), authorizer)
    assert isinstance(every, OffsetFetchResponse)
    assert [t.name for t in every.topics] == ["a"]
    # named: b is refused
    named = through(
        shell,
        OffsetFetchRequest(
            version=7,
            group_id="g",
            topics=(
                OffsetFetchRequestTopic(name="a", partition_indexes=(0,)),
                OffsetFetchRequestTopic(name="b", partition_indexes=(0,)),
            ),
        ),
        authorizer,
    )
    assert isinstance(named, OffsetFetchResponse)
    assert {
        t.name: (t.partitions[0].error, t.partitions[0].committed_offset) for t in named.topics
    } == {
        "a": (None, 7),
        "b": (TopicAuthorizationFailedError, -1),
    }
    # batched (v8): a group the caller may not describe gets the error on its own entry
    batched = through(
        shell,
        OffsetFetchRequest(
            version=8,
            groups=(
                OffsetFetchRequestGroup(group_id="g", topics=None),
                OffsetFetchRequestGroup(group_id="secret", topics=None),
            ),
        ),
        authorizer,
    )
    assert isinstance(batched, OffsetFetchResponse)
    assert [(g.group_id, g.error) for g in batched.groups] == [
        ("g", None),
        ("secret", GroupAuthorizationFailedError),
    ]
    assert [t.name for t in batched.groups[0].topics] == ["a"]


def test_describe_delete_and_list_groups_per_group() -> None:
    shell = SyncShell()
    everything = AclAuthorizer(super_users=[ME])
    for group in ("g", "h"):
        through(shell, commit(group, "a"), everything)
    authorizer = AclAuthorizer(
        [
            grant(ResourceType.GROUP, "g", AclOperation.DESCRIBE),
            grant(ResourceType.GROUP, "h", AclOperation.DELETE),
        ]
    )
    described = through(shell, DescribeGroupsRequest(version=5, groups=("h", "g")), authorizer)
    assert isinstance(described, DescribeGroupsResponse)
    assert [(g.group_id, g.error) for g in described.groups] == [
        ("h", None),  # DELETE implies DESCRIBE
        ("g", None),
    ]
    listed = through(
        shell,
        ListGroupsRequest(version=4),
        AclAuthorizer([grant(ResourceType.GROUP, "g", AclOperation.READ)]),
    )
    assert isinstance(listed, ListGroupsResponse)
    assert [g.group_id for g in listed.groups] == ["g"]
    cluster = AclAuthorizer([grant(ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE)])
    every = through(shell, ListGroupsRequest(version=4), cluster)
    assert isinstance(every, ListGroupsResponse)
    assert sorted(g.group_id for g in every.groups) == ["g", "h"]
    deleted = through(shell, DeleteGroupsRequest(version=2, groups_names=("g", "h")), authorizer)
    assert isinstance(deleted, DeleteGroupsResponse)
    assert [(r.group_id, r.error) for r in deleted.results] == [
        ("g", GroupAuthorizationFailedError),
        ("h", None),
    ]
    assert shell.coordinator.group_state("g") is not None
    assert shell.coordinator.group_state("h") is None


def test_find_coordinator_refusal() -> None:
    authorizer = AclAuthorizer(
        [
            grant(ResourceType.GROUP, "g", AclOperation.READ),
            grant(ResourceType.TRANSACTIONAL_ID, "t", AclOperation.WRITE),
        ]
    )
    refuse = coordinator_refusal(caller_check(authorizer, ME, "10.0.0.1"))
    assert refuse(0, "g") is None
    assert isinstance(refuse(0, "h"), GroupAuthorizationFailedError)
    assert refuse(1, "t") is None
    assert refuse(1, "u") is not None


def test_kip848_apis_need_read_and_describe_on_the_group() -> None:
    import uuid

    from groupcoord.coordinator.consumer_messages import (
        ConsumerGroupDescribeRequest,
        ConsumerGroupDescribeResponse,
        ConsumerGroupHeartbeatRequest,
        ConsumerGroupHeartbeatResponse,
    )
    from groupcoord.coordinator.topics import TopicMetadata

    shell = SyncShell()
    shell.coordinator.update_topics(
        [TopicMetadata(name="t", topic_id=uuid.uuid4(), partitions=2)], 0
    )
    join = ConsumerGroupHeartbeatRequest(
        version=1,
        correlation=5,
        group_id="g",
        member_id=str(uuid.uuid4()),
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("t",),
        topic_partitions=(),
    )
    denied = through(shell, join, AclAuthorizer())
    assert isinstance(denied, ConsumerGroupHeartbeatResponse)
    assert denied.error is GroupAuthorizationFailedError and denied.correlation == 5
    assert shell.coordinator.group_state("g") is None
    allowed = through(
        shell, join, AclAuthorizer([grant(ResourceType.GROUP, "g", AclOperation.READ)])
    )
    assert isinstance(allowed, ConsumerGroupHeartbeatResponse) and allowed.error is None
    described = through(
        shell,
        ConsumerGroupDescribeRequest(version=1, group_ids=("secret", "g")),
        AclAuthorizer([grant(ResourceType.GROUP, "g", AclOperation.DESCRIBE)]),
    )
    assert isinstance(described, ConsumerGroupDescribeResponse)
    assert [(g.group_id, g.error) for g in described.groups] == [
        ("secret", GroupAuthorizationFailedError),
        ("g", None),
    ]
    assert len(described.groups[1].members) == 1
