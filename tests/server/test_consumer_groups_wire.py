"""KIP-848 consumer groups through ``groupcoord serve``'s sockets: ConsumerGroupHeartbeat
and ConsumerGroupDescribe on the wire, the topic ids the coordinator hands out matching
Metadata's, topics created and deleted reaching the coordinator's image, and the classic
admin APIs (ListGroups with types, DescribeGroups) answering for a consumer group as Kafka
4.x does."""

from __future__ import annotations

import datetime
import uuid

from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta
from server_harness import run_scenario
from wire_client import WireClient

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.errors import GroupIdNotFoundError
from groupcoord.protocol.group_messages import from_kio_response, to_kio_request
from groupcoord.server import Server

FAST = CoordinatorConfig(
    group_initial_rebalance_delay_ms=0,
    group_consumer_heartbeat_interval_ms=500,
    group_consumer_min_heartbeat_interval_ms=500,
)


async def call(client: WireClient, request: object) -> object:
    kio_response = await client.call(to_kio_request(request))  # type: ignore[arg-type]
    return from_kio_response(request.API_KEY, request.version, kio_response)  # type: ignore[attr-defined]


async def heartbeat(
    client: WireClient, member: str, epoch: int, **fields: object
) -> ConsumerGroupHeartbeatResponse:
    response = await call(
        client,
        ConsumerGroupHeartbeatRequest(
            version=1, group_id="g", member_id=member, member_epoch=epoch, **fields
        ),
    )
    assert isinstance(response, ConsumerGroupHeartbeatResponse)
    return response


async def topic_ids(client: WireClient, *names: str) -> dict[str, uuid.UUID]:
    """What Metadata v12 tells a client (KIP-848 clients map assignment ids through it)."""
    response = await client.call(
        MetadataRequest(
            topics=tuple(MetadataRequestTopic(name=TopicName(n), topic_id=None) for n in names),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    return {t.name: t.topic_id for t in response.topics}


JOIN = {"rebalance_timeout_ms": 30_000, "topic_partitions": ()}


def test_heartbeats_assign_by_the_topic_ids_metadata_gives() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        ids = await topic_ids(client, "orders")
        a = await heartbeat(client, "a", 0, subscribed_topic_names=("orders",), **JOIN)
        assert a.error is None and a.member_epoch == 1 and a.heartbeat_interval_ms == 500
        assert a.assignment == (TopicPartitions(topic_id=ids["orders"], partitions=(0, 1, 2)),)

        described = await call(client, ConsumerGroupDescribeRequest(version=1, group_ids=("g",)))
        assert isinstance(described, ConsumerGroupDescribeResponse)
        (group,) = described.groups
        assert (group.error, group.group_state, group.group_epoch) == (None, "Stable", 1)
        assert group.assignor_name == "uniform"
        (member,) = group.members
        assert member.member_id == "a" and member.member_type == 1
        assert (
            member.client_id == "wire-test" and member.client_host == "/127.0.0.1"
        )  # as Kafka prints it
        assert [(t.topic_id, t.topic_name, t.partitions) for t in member.assignment] == [
            (ids["orders"], "orders", (0, 1, 2))
        ]
        assert member.target_assignment == member.assignment
        await client.close()

    run_scenario(scenario, topics=(("orders", 3),), coordinator=FAST)


def test_topics_created_and_deleted_reach_the_coordinator() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        a = await heartbeat(client, "a", 0, subscribed_topic_names=("late",), **JOIN)
        assert a.member_epoch == 1 and a.assignment == ()  # subscribed to nothing that exists
        created = await client.call(
            CreateTopicsRequest(
                topics=(
                    CreatableTopic(
                        name=TopicName("late"),
                        num_partitions=i32(2),
                        replication_factor=i16(1),
                        assignments=(),
                        configs=(),
                    ),
                ),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
                validate_only=False,
            )
        )
        assert created.topics[0].error_code == 0
        ids = await topic_ids(client, "late")
        a = await heartbeat(client, "a", 1)
        assert a.member_epoch == 2
        assert a.assignment == (TopicPartitions(topic_id=ids["late"], partitions=(0, 1)),)
        deleted = await client.call(
            DeleteTopicsRequest(
                topics=(DeleteTopicState(name=TopicName("late"), topic_id=None),),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
            )
        )
        assert deleted.responses[0].error_code == 0
        a = await heartbeat(client, "a", 2, topic_partitions=a.assignment)
        assert a.member_epoch == 3 and a.assignment == ()
        await client.close()

    run_scenario(scenario, coordinator=FAST)


def test_classic_admin_apis_answer_for_a_consumer_group_as_kafka() -> None:
    async def scenario(server: Server) -> None:
        client = await WireClient.connect("127.0.0.1", server.port)
        await heartbeat(client, "a", 0, subscribed_topic_names=("orders",), **JOIN)

        listed = await call(client, ListGroupsRequest(version=5))
        assert isinstance(listed, ListGroupsResponse)
        assert [
            (g.group_id, g.protocol_type, g.group_state, g.group_type) for g in listed.groups
        ] == [("g", "consumer", "Stable", "consumer")]
        for types, expected in ((("consumer",), ["g"]), (("classic",), []), (("Consumer",), ["g"])):
            only = await call(client, ListGroupsRequest(version=5, types_filter=types))
            assert isinstance(only, ListGroupsResponse)
            assert [g.group_id for g in only.groups] == expected

        # Kafka 4.x (GroupMetadataManager.describeGroups): a consumer group is no classic
        # group, so DescribeGroups up to v5 reports it Dead, with no error and no members
        described = await call(client, DescribeGroupsRequest(version=5, groups=("g",)))
        assert isinstance(described, DescribeGroupsResponse)
        (group,) = described.groups
        assert (group.error, group.group_state, group.protocol_type, group.members) == (
            None,
            "Dead",
            "",
            (),
        )
        # from v6 (KIP-1043) it says why, as Kafka 4.4 does, over the wire
        described = await call(client, DescribeGroupsRequest(version=6, groups=("g", "nobody")))
        assert isinstance(described, DescribeGroupsResponse)
        assert [
            (g.group_id, g.error, g.error_message, g.group_state) for g in described.groups
        ] == [
            ("g", GroupIdNotFoundError, "Group g is not a classic group.", "Dead"),
            ("nobody", GroupIdNotFoundError, "Group nobody not found.", "Dead"),
        ]

        # ... and ConsumerGroupDescribe says GROUP_ID_NOT_FOUND for what is not a consumer group
        none = await call(client, ConsumerGroupDescribeRequest(version=1, group_ids=("nobody",)))
        assert isinstance(none, ConsumerGroupDescribeResponse)
        assert none.groups[0].error is GroupIdNotFoundError
        assert none.groups[0].error_message == "Group nobody not found."
        await client.close()

    run_scenario(scenario, topics=(("orders", 3),), coordinator=FAST)
