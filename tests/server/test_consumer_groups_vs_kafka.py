"""The same KIP-848 exchange against Apache Kafka 4.4.0 and ``groupcoord serve``, answers
compared field by field (marked ``kafka``): one member joins a consumer group with
ConsumerGroupHeartbeat v1 and heartbeats until it owns its target; then ListGroups v5,
DescribeGroups v5 of the consumer group, DescribeGroups v6 of it, of a group that does
not exist and of a classic group, ConsumerGroupDescribe v1 of it, of a group that
does not exist and of a classic group. Topic ids differ between the two (each broker makes
its own): they are checked against each one's Metadata and compared by name.

Epochs are compared relative to the member's last one: Kafka's coordinator may learn of the
topic just created a moment after its Metadata shows it, and then the member's first
heartbeat is answered before the topic counts (epoch 1, nothing assigned) and a later one
bumps the epoch again (measured: 2 where we answer 1, now and then)."""

from __future__ import annotations

import datetime
import socket
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.consumer_group_heartbeat.v1.request import TopicPartitions as OwnedPartitions
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.describe_groups.v6.request import DescribeGroupsRequest as DescribeGroupsV6
from kio.schema.join_group.v9.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from groupcoord.protocol.client import ClientCodec

pytestmark = pytest.mark.kafka

TOPIC = "kip848-vs"
GROUP = "kip848-vs-group"
CLASSIC = "kip848-vs-classic"
DEADLINE_S = 30.0


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


class Conn:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.codec = ClientCodec(client_id="vs-kafka")

    def call(self, request: Any) -> Any:
        self.sock.sendall(self.codec.encode(request)[1])
        while True:
            data = self.sock.recv(65536)
            assert data, "the broker closed the connection"
            received = self.codec.feed(data)
            if received:
                return received[0].response

    def close(self) -> None:
        self.sock.close()


def exchange(port: int) -> dict[str, Any]:
    """The answers of one broker, with topic ids replaced by names."""
    conn = Conn(port)
    try:
        created = conn.call(
            CreateTopicsRequest(
                topics=(
                    CreatableTopic(
                        name=TopicName(TOPIC),
                        num_partitions=i32(3),
                        replication_factor=i16(1),
                        assignments=(),
                        configs=(),
                    ),
                ),
                timeout=ms(10_000),
                validate_only=False,
            )
        )
        assert created.topics[0].error_code == 0
        metadata = conn.call(
            MetadataRequest(
                topics=(MetadataRequestTopic(name=TopicName(TOPIC), topic_id=None),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        names = {t.topic_id: t.name for t in metadata.topics}
        member = str(uuid.uuid4())
        epoch, owned, answers = 0, (), []
        deadline = time.monotonic() + DEADLINE_S
        while True:
            answer = conn.call(
                ConsumerGroupHeartbeatRequest(
                    group_id=GroupId(GROUP),
                    member_id=member,
                    member_epoch=i32(epoch),
                    rebalance_timeout=ms(30_000) if epoch == 0 else ms(-1),
                    subscribed_topic_names=(TopicName(TOPIC),) if epoch == 0 else None,
                    topic_partitions=owned,
                )
            )
            assert answer.error_code == 0, answer
            answers.append(answer)
            epoch = answer.member_epoch
            if answer.assignment is not None:
                owned = tuple(
                    OwnedPartitions(topic_id=t.topic_id, partitions=t.partitions)
                    for t in answer.assignment.topic_partitions
                )
            if owned and answer.assignment is None:
                break  # the member has its assignment and nothing changed since
            assert time.monotonic() < deadline, answers
        conn.call(
            JoinGroupRequest(
                group_id=GroupId(CLASSIC),
                session_timeout=ms(10_000),
                rebalance_timeout=ms(10_000),
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
                reason=None,
            )
        )
        listed = conn.call(ListGroupsRequest(states_filter=(), types_filter=("consumer",)))
        described = conn.call(
            DescribeGroupsRequest(groups=(GroupId(GROUP),), include_authorized_operations=False)
        )
        described_v6 = conn.call(
            DescribeGroupsV6(
                groups=(GroupId(GROUP), GroupId("nobody"), GroupId(CLASSIC)),
                include_authorized_operations=False,
            )
        )
        consumer_described = conn.call(
            ConsumerGroupDescribeRequest(
                group_ids=(GroupId(GROUP), GroupId("nobody"), GroupId(CLASSIC)),
                include_authorized_operations=False,
            )
        )
    finally:
        conn.close()

    def by_name(topics: Any) -> list[tuple[str, tuple[int, ...]]]:
        return sorted((names[t.topic_id], tuple(sorted(t.partitions))) for t in topics)

    # Kafka answers in the order of its coordinator shards, not the request's
    by_id = {g.group_id: g for g in consumer_described.groups}
    ok, missing, classic = by_id[GROUP], by_id["nobody"], by_id[CLASSIC]
    last = answers[-1].member_epoch
    return {
        "first heartbeat": (answers[0].member_epoch > 0, answers[0].heartbeat_interval),
        "owned": by_name(owned),
        "listed": [
            (g.group_id, g.protocol_type, g.group_state, g.group_type)
            for g in listed.groups
            if g.group_id == GROUP
        ],
        "DescribeGroups v5": [
            (g.error_code, g.group_state, g.protocol_type, g.protocol_data, g.members)
            for g in described.groups
        ],
        # KIP-1043: v6 says why a group is not described (the classic group is mid-join);
        # Kafka lists them in its shard order
        "DescribeGroups v6": sorted(
            (g.group_id, g.error_code, g.error_message, g.group_state, g.protocol_type)
            for g in described_v6.groups
        ),
        "ConsumerGroupDescribe": (
            ok.error_code,
            ok.group_state,
            ok.group_epoch - last,
            ok.assignment_epoch - last,
            ok.assignor_name,
        ),
        "members": [
            (
                m.member_id == member,
                m.member_epoch - last,
                m.client_id,
                m.client_host,
                m.member_type,
                tuple(m.subscribed_topic_names),
                m.subscribed_topic_regex,
                by_name(m.assignment.topic_partitions),
                by_name(m.target_assignment.topic_partitions),
            )
            for m in ok.members
        ],
        "missing": (missing.error_code, missing.error_message, missing.group_state),
        "classic": (classic.error_code, classic.error_message),
    }


def test_the_exchange_gets_kafkas_answers(
    kafka_broker: Any, serve_factory: Callable[..., Any]
) -> None:
    ours = exchange(serve_factory("--group-initial-rebalance-delay-ms", "0").port)
    theirs = exchange(kafka_broker.port)
    assert ours == theirs
