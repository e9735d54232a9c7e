"""kio <-> coordinator message mapping: round trips over the wire for every version.

Each test draws a coordinator message valid for its version, maps it to kio, encodes it
to bytes, decodes the bytes and maps it back: the result must equal the original. So a
field dropped, renamed or carried in the wrong unit in either direction fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
    TopicPartitions,
)
from groupcoord.coordinator.messages import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberIdentity,
    MemberResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.coordinator.output import CoordinatorRequest as AnyRequest
from groupcoord.coordinator.output import CoordinatorResponse as AnyResponse
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    IllegalGenerationError,
    KafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
)
from groupcoord.protocol.consumer import encode_assignment, encode_subscription
from groupcoord.protocol.group_messages import (
    GROUP_API_VERSIONS,
    from_kio_response,
    to_coordinator_request,
    to_kio_request,
    to_kio_response,
)
from groupcoord.protocol.wire import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from groupcoord.types import Assignment, Subscription, TopicPartition

names = st.text(max_size=8)
opt_names = st.none() | names
int32 = st.integers(-(2**31), 2**31 - 1)
non_neg32 = st.integers(0, 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
errors: st.SearchStrategy[type[KafkaError] | None] = st.sampled_from(
    [
        None,
        UnknownMemberIdError,
        IllegalGenerationError,
        RebalanceInProgressError,
        CoordinatorNotAvailableError,
        UnknownTopicOrPartitionError,
        FencedMemberEpochError,
        GroupIdNotFoundError,
    ]
)
blobs = st.binary(max_size=16)

ALL_VERSIONS = [(k, v) for k, (lo, hi) in GROUP_API_VERSIONS.items() for v in range(lo, hi + 1)]


def since(v: int, first: int, strategy: st.SearchStrategy[Any], absent: Any) -> Any:
    return strategy if v >= first else st.just(absent)


# ---------------------------------------------------------------- request strategies


def join_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        JoinGroupRequest,
        version=st.just(v),
        group_id=names,
        session_timeout_ms=non_neg32,
        rebalance_timeout_ms=non_neg32 if v >= 1 else st.just(-1),
        member_id=names,
        group_instance_id=since(v, 5, opt_names, None),
        protocol_type=names,
        protocols=st.dictionaries(names, blobs, max_size=3).map(lambda d: tuple(d.items())),
        reason=since(v, 8, opt_names, None),
    )


def sync_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        SyncGroupRequest,
        version=st.just(v),
        group_id=names,
        generation_id=int32,
        member_id=names,
        group_instance_id=since(v, 3, opt_names, None),
        protocol_type=since(v, 5, opt_names, None),
        protocol_name=since(v, 5, opt_names, None),
        assignments=st.lists(st.tuples(names, blobs), max_size=3).map(tuple),
    )


def heartbeat_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        HeartbeatRequest,
        version=st.just(v),
        group_id=names,
        generation_id=int32,
        member_id=names,
        group_instance_id=since(v, 3, opt_names, None),
    )


def leave_request(v: int) -> st.SearchStrategy[AnyRequest]:
    if v < 3:
        return st.builds(LeaveGroupRequest, version=st.just(v), group_id=names, member_id=names)
    member = st.builds(
        MemberIdentity,
        member_id=names,
        group_instance_id=opt_names,
        reason=since(v, 5, opt_names, None),
    )
    return st.builds(
        LeaveGroupRequest,
        version=st.just(v),
        group_id=names,
        members=st.lists(member, max_size=3).map(tuple),
    )


def commit_request(v: int) -> st.SearchStrategy[AnyRequest]:
    partition = st.builds(
        OffsetCommitRequestPartition,
        partition_index=int32,
        committed_offset=int64,
        committed_leader_epoch=since(v, 6, int32, -1),
        committed_metadata=opt_names,
    )
    topic = st.builds(
        OffsetCommitRequestTopic,
        name=names,
        partitions=st.lists(partition, max_size=3).map(tuple),
    )
    return st.builds(
        OffsetCommitRequest,
        version=st.just(v),
        group_id=names,
        generation_id_or_member_epoch=int32,
        member_id=names,
        group_instance_id=since(v, 7, opt_names, None),
        # kio carries it as a timedelta, which ends near 8.6e16 ms
        retention_time_ms=st.integers(-(10**15), 10**15) if 2 <= v <= 4 else st.just(-1),
        topics=st.lists(topic, max_size=3).map(tuple),
    )


def fetch_topics(nullable: bool) -> st.SearchStrategy[Any]:
    topics = st.lists(
        st.builds(
            OffsetFetchRequestTopic,
            name=names,
            partition_indexes=st.lists(int32, max_size=3).map(tuple),
        ),
        max_size=3,
    ).map(tuple)
    return (st.none() | topics) if nullable else topics


def fetch_request(v: int) -> st.SearchStrategy[AnyRequest]:
    stable = since(v, 7, st.booleans(), False)
    if v < 8:
        return st.builds(
            OffsetFetchRequest,
            version=st.just(v),
            group_id=names,
            topics=fetch_topics(v >= 2),
            require_stable=stable,
        )
    group = st.builds(
        OffsetFetchRequestGroup,
        group_id=names,
        topics=fetch_topics(True),
        member_id=since(v, 9, opt_names, None),
        member_epoch=since(v, 9, int32, -1),
    )
    return st.builds(
        OffsetFetchRequest,
        version=st.just(v),
        groups=st.lists(group, max_size=3).map(tuple),
        require_stable=stable,
    )


def describe_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        DescribeGroupsRequest,
        version=st.just(v),
        groups=st.lists(names, max_size=3).map(tuple),
        include_authorized_operations=since(v, 3, st.booleans(), False),
    )


def list_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        ListGroupsRequest,
        version=st.just(v),
        states_filter=since(v, 4, st.lists(names, max_size=2).map(tuple), ()),
        types_filter=since(v, 5, st.lists(names, max_size=2).map(tuple), ()),
    )


def delete_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        DeleteGroupsRequest, version=st.just(v), groups_names=st.lists(names, max_size=3).map(tuple)
    )


def offset_delete_request(v: int) -> st.SearchStrategy[AnyRequest]:
    topic = st.builds(
        OffsetDeleteRequestTopic,
        name=names,
        partitions=st.lists(st.integers(0, 2**31 - 1), max_size=3).map(tuple),
    )
    return st.builds(
        OffsetDeleteRequest,
        version=st.just(v),
        group_id=names,
        topics=st.lists(topic, max_size=3).map(tuple),
    )


topic_ids = st.uuids()
partition_ids = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
owned_topics = st.lists(
    st.builds(TopicPartitions, topic_id=topic_ids, partitions=partition_ids), max_size=3
).map(tuple)


def consumer_heartbeat_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        ConsumerGroupHeartbeatRequest,
        version=st.just(v),
        group_id=names,
        member_id=names,
        member_epoch=int32,
        instance_id=opt_names,
        rack_id=opt_names,
        rebalance_timeout_ms=int32,
        subscribed_topic_names=st.none() | st.lists(names, max_size=3).map(tuple),
        subscribed_topic_regex=since(v, 1, opt_names, None),
        server_assignor=opt_names,
        topic_partitions=st.none() | owned_topics,
        client_id=names,
        client_host=names,
    )


def consumer_describe_request(v: int) -> st.SearchStrategy[AnyRequest]:
    return st.builds(
        ConsumerGroupDescribeRequest,
        version=st.just(v),
        group_ids=st.lists(names, max_size=3).map(tuple),
        include_authorized_operations=st.booleans(),
    )


REQUESTS = {
    11: join_request,
    14: sync_request,
    12: heartbeat_request,
    13: leave_request,
    8: commit_request,
    9: fetch_request,
    15: describe_request,
    16: list_request,
    42: delete_request,
    47: offset_delete_request,
    68: consumer_heartbeat_request,
    69: consumer_describe_request,
}


# ---------------------------------------------------------------- response strategies


def join_response(v: int) -> st.SearchStrategy[AnyResponse]:
    member = st.builds(
        JoinGroupResponseMember,
        member_id=names,
        group_instance_id=since(v, 5, opt_names, None),
        metadata=blobs,
    )
    # before v7 protocol_name is not nullable: "" on the wire is read back as None
    protocol_name = opt_names if v >= 7 else st.none() | st.text(min_size=1, max_size=8)
    return st.builds(
        JoinGroupResponse,
        version=st.just(v),
        error=errors,
        generation_id=int32,
        protocol_type=since(v, 7, opt_names, None),
        protocol_name=protocol_name,
        leader=names,
        skip_assignment=since(v, 9, st.booleans(), False),
        member_id=names,
        members=st.lists(member, max_size=3).map(tuple),
    )


def sync_response(v: int) -> st.SearchStrategy[AnyResponse]:
    return st.builds(
        SyncGroupResponse,
        version=st.just(v),
        error=errors,
        protocol_type=since(v, 5, opt_names, None),
        protocol_name=since(v, 5, opt_names, None),
        assignment=blobs,
    )


def heartbeat_response(v: int) -> st.SearchStrategy[AnyResponse]:
    return st.builds(HeartbeatResponse, version=st.just(v), error=errors)


def leave_response(v: int) -> st.SearchStrategy[AnyResponse]:
    member = st.builds(MemberResponse, member_id=names, group_instance_id=opt_names, error=errors)
    return st.builds(
        LeaveGroupResponse,
        version=st.just(v),
        error=errors,
        members=since(v, 3, st.lists(member, max_size=3).map(tuple), ()),
    )


def commit_response(v: int) -> st.SearchStrategy[AnyResponse]:
    partition = st.builds(OffsetCommitResponsePartition, partition_index=int32, error=errors)
    topic = st.builds(
        OffsetCommitResponseTopic,
        name=names,
        partitions=st.lists(partition, max_size=3).map(tuple),
    )
    return st.builds(
        OffsetCommitResponse, version=st.just(v), topics=st.lists(topic, max_size=3).map(tuple)
    )


def fetch_response(v: int) -> st.SearchStrategy[AnyResponse]:
    partition = st.builds(
        OffsetFetchResponsePartition,
        partition_index=int32,
        committed_offset=int64,
        committed_leader_epoch=since(v, 5, int32, -1),
        metadata=opt_names,
        error=errors,
    )
    topics = st.lists(
        st.builds(
            OffsetFetchResponseTopic,
            name=names,
            partitions=st.lists(partition, max_size=3).map(tuple),
        ),
        max_size=3,
    ).map(tuple)
    if v < 8:
        return st.builds(
            OffsetFetchResponse,
            version=st.just(v),
            error=since(v, 2, errors, None),
            topics=topics,
        )
    group = st.builds(OffsetFetchResponseGroup, group_id=names, topics=topics, error=errors)
    return st.builds(
        OffsetFetchResponse, version=st.just(v), groups=st.lists(group, max_size=3).map(tuple)
    )


def describe_response(v: int) -> st.SearchStrategy[AnyResponse]:
    member = st.builds(
        DescribedGroupMember,
        member_id=names,
        group_instance_id=since(v, 4, opt_names, None),
        client_id=names,
        client_host=names,
        member_metadata=blobs,
        member_assignment=blobs,
    )
    group = st.builds(
        DescribedGroup,
        error=errors,
        group_id=names,
        group_state=names,
        # "consumer" payloads are decoded as well: test_described_consumer_members covers it
        protocol_type=st.sampled_from(["", "connect"]),
        protocol_data=names,
        members=st.lists(member, max_size=3).map(tuple),
        authorized_operations=since(v, 3, int32, -(2**31)),
    )
    return st.builds(
        DescribeGroupsResponse, version=st.just(v), groups=st.lists(group, max_size=3).map(tuple)
    )


def list_response(v: int) -> st.SearchStrategy[AnyResponse]:
    group = st.builds(
        ListedGroup,
        group_id=names,
        protocol_type=names,
        group_state=since(v, 4, names, ""),
        group_type=since(v, 5, names, "classic"),
    )
    return st.builds(
        ListGroupsResponse,
        version=st.just(v),
        error=errors,
        groups=st.lists(group, max_size=3).map(tuple),
    )


def delete_response(v: int) -> st.SearchStrategy[AnyResponse]:
    result = st.builds(DeletableGroupResult, group_id=names, error=errors)
    return st.builds(
        DeleteGroupsResponse, version=st.just(v), results=st.lists(result, max_size=3).map(tuple)
    )


def offset_delete_response(v: int) -> st.SearchStrategy[AnyResponse]:
    partition = st.builds(
        OffsetDeleteResponsePartition, partition_index=st.integers(0, 2**31 - 1), error=errors
    )
    topic = st.builds(
        OffsetDeleteResponseTopic,
        name=names,
        partitions=st.lists(partition, max_size=3).map(tuple),
    )
    return st.builds(
        OffsetDeleteResponse,
        version=st.just(v),
        error=errors,
        topics=st.lists(topic, max_size=3).map(tuple),
    )


def consumer_heartbeat_response(v: int) -> st.SearchStrategy[AnyResponse]:
    return st.builds(
        ConsumerGroupHeartbeatResponse,
        version=st.just(v),
        error=errors,
        error_message=opt_names,
        member_id=opt_names,
        member_epoch=int32,
        heartbeat_interval_ms=int32,
        assignment=st.none() | owned_topics,
    )


def consumer_describe_response(v: int) -> st.SearchStrategy[AnyResponse]:
    described = st.lists(
        st.builds(
            DescribedTopicPartitions,
            topic_id=topic_ids,
            topic_name=names,
            partitions=partition_ids,
        ),
        max_size=3,
    ).map(tuple)
    member = st.builds(
        DescribedConsumerMember,
        member_id=names,
        instance_id=opt_names,
        rack_id=opt_names,
        member_epoch=int32,
        client_id=names,
        client_host=names,
        subscribed_topic_names=st.lists(names, max_size=3).map(tuple),
        subscribed_topic_regex=opt_names,
        assignment=described,
        target_assignment=described,
        member_type=since(v, 1, st.sampled_from([-1, 0, 1]), -1),
    )
    group = st.builds(
        DescribedConsumerGroup,
        error=errors,
        error_message=opt_names,
        group_id=names,
        group_state=names,
        group_epoch=int32,
        assignment_epoch=int32,
        assignor_name=names,
        members=st.lists(member, max_size=3).map(tuple),
        authorized_operations=int32,
    )
    return st.builds(
        ConsumerGroupDescribeResponse,
        version=st.just(v),
        groups=st.lists(group, max_size=3).map(tuple),
    )


RESPONSES = {
    11: join_response,
    14: sync_response,
    12: heartbeat_response,
    13: leave_response,
    8: commit_response,
    9: fetch_response,
    15: describe_response,
    16: list_response,
    42: delete_response,
    47: offset_delete_response,
    68: consumer_heartbeat_response,
    69: consumer_describe_response,
}


# ---------------------------------------------------------------- round trips


def test_versions_are_the_intersection_of_kio_and_the_coordinator() -> None:
    # kio (Kafka 4.x schemas) has OffsetCommit only from v2 and OffsetFetch from v1
    assert GROUP_API_VERSIONS[8] == (2, 9)
    assert GROUP_API_VERSIONS[9] == (1, 9)
    assert GROUP_API_VERSIONS[11] == (0, 9)
    assert GROUP_API_VERSIONS[15] == (0, 6)
    assert GROUP_API_VERSIONS[68] == (0, 1)
    assert GROUP_API_VERSIONS[69] == (0, 1)


#: requests whose client id and host come from the header and the connection
_FROM_CONNECTION = (JoinGroupRequest, ConsumerGroupHeartbeatRequest)


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_request_round_trip_over_the_wire(api_key: int, version: int, data: st.DataObject) -> None:
    ours = data.draw(REQUESTS[api_key](version))
    frame = encode_request(api_key, version, 17, "client-a", to_kio_request(ours))
    header, kio_request = decode_request(frame[4:])
    back = to_coordinator_request(
        header.api_key,
        header.api_version,
        kio_request,
        correlation=ours.correlation,
        client_id=ours.client_id if isinstance(ours, _FROM_CONNECTION) else "",
        client_host=ours.client_host if isinstance(ours, _FROM_CONNECTION) else "",
    )
    assert back == ours


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_response_round_trip_over_the_wire(api_key: int, version: int, data: st.DataObject) -> None:
    ours = data.draw(RESPONSES[api_key](version))
    header, _ = decode_request(
        encode_request(
            api_key, version, 5, "c", to_kio_request(data.draw(REQUESTS[api_key](version)))
        )[4:]
    )
    frame = encode_response(header, to_kio_response(ours))
    correlation_id, kio_response = decode_response(api_key, version, frame[4:])
    assert correlation_id == 5
    assert from_kio_response(api_key, version, kio_response) == ours


def test_join_client_details_come_from_the_connection() -> None:
    ours = JoinGroupRequest(
        version=5,
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=60_000,
        protocol_type="consumer",
        protocols=(("range", b"x"),),
    )
    _, kio_request = decode_request(encode_request(11, 5, 1, "cid", to_kio_request(ours))[4:])
    back = to_coordinator_request(
        11, 5, kio_request, correlation=("conn", 1), client_id="cid", client_host="10.0.0.1"
    )
    assert isinstance(back, JoinGroupRequest)
    assert (back.client_id, back.client_host, back.correlation) == ("cid", "10.0.0.1", ("conn", 1))
    assert back.session_timeout_ms == 10_000 and back.rebalance_timeout_ms == 60_000


def test_join_v0_has_no_rebalance_timeout() -> None:
    ours = JoinGroupRequest(
        version=0,
        group_id="g",
        session_timeout_ms=10_000,
        protocol_type="consumer",
        protocols=(("range", b""),),
    )
    _, kio_request = decode_request(encode_request(11, 0, 1, None, to_kio_request(ours))[4:])
    back = to_coordinator_request(11, 0, kio_request)
    assert isinstance(back, JoinGroupRequest)
    assert back.rebalance_timeout_ms == -1
    assert back.effective_rebalance_timeout_ms == 10_000


def test_described_consumer_members_are_decoded_on_the_client_side() -> None:
    subscription = Subscription(topics=["orders"])
    assignment = Assignment(partitions=[TopicPartition("orders", 0)])
    meta = encode_subscription(subscription, 0)
    assign = encode_assignment(assignment, 0)
    ours = DescribeGroupsResponse(
        version=5,
        groups=(
            DescribedGroup(
                group_id="g",
                group_state="Stable",
                protocol_type="consumer",
                protocol_data="range",
                members=(
                    DescribedGroupMember(
                        member_id="m",
                        group_instance_id=None,
                        client_id="c",
                        client_host="/127.0.0.1",
                        member_metadata=meta,
                        member_assignment=assign,
                    ),
                ),
            ),
        ),
    )
    header, _ = decode_request(
        encode_request(
            15, 5, 9, "c", to_kio_request(DescribeGroupsRequest(version=5, groups=("g",)))
        )[4:]
    )
    _, kio_response = decode_response(15, 5, encode_response(header, to_kio_response(ours))[4:])
    back = from_kio_response(15, 5, kio_response)
    assert isinstance(back, DescribeGroupsResponse)
    member = back.groups[0].members[0]
    assert member.member_metadata == meta and member.member_assignment == assign
    assert member.subscription is not None and list(member.subscription.topics) == ["orders"]
    assert member.assignment is not None
    assert list(member.assignment.partitions) == [TopicPartition("orders", 0)]


@pytest.mark.parametrize(("api_key", "version"), [(8, 1), (9, 0), (15, 7), (12, 5), (11, 10)])
def test_versions_outside_the_intersection_are_refused(api_key: int, version: int) -> None:
    with pytest.raises(UnsupportedVersionError):
        to_coordinator_request(api_key, version, object())
    with pytest.raises(UnsupportedVersionError):
        from_kio_response(api_key, version, object())


# ---------------------------------------------------------------- prepare


def _codec_caches() -> tuple[int, ...]:
    from groupcoord.protocol import wire
    from groupcoord.protocol.apis import kio_mapping

    return (
        len(wire._CLASSES),
        len(wire._READERS),
        len(wire._WRITERS),
        len(kio_mapping._HINTS),
        kio_mapping.payload_class.cache_info().currsize,
    )


def _forget_codecs() -> None:
    from groupcoord.protocol import wire
    from groupcoord.protocol.apis import kio_mapping

    wire._CLASSES.clear()
    wire._READERS.clear()
    wire._WRITERS.clear()
    kio_mapping._HINTS.clear()
    kio_mapping.payload_class.cache_clear()


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_prepare_leaves_nothing_for_the_first_messages_to_build(
    api_key: int, version: int, data: st.DataObject
) -> None:
    """After prepare(api, version), a request and its response go both ways over the wire
    (client encodes, server decodes and answers, client decodes) without building any
    codec, schema class or type hint: the first SyncGroup costs what the second does."""
    from groupcoord.protocol.group_messages import prepare

    request = data.draw(REQUESTS[api_key](version))
    response = data.draw(RESPONSES[api_key](version))
    _forget_codecs()
    prepare(api_key, version)
    prepared = _codec_caches()
    header, kio_request = decode_request(
        encode_request(api_key, version, 5, "c", to_kio_request(request))[4:]
    )
    to_coordinator_request(api_key, version, kio_request, correlation=5)
    frame = encode_response(header, to_kio_response(response))
    _, kio_response = decode_response(api_key, version, frame[4:])
    assert from_kio_response(api_key, version, kio_response) == response
    assert _codec_caches() == prepared
