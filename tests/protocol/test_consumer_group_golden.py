"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) v1 against bytes assembled by
hand from Kafka's JSON message specs (``clients/src/main/resources/common/message/
ConsumerGroup{Heartbeat,Describe}{Request,Response}.json``), field by field.

The round trips of ``test_group_messages`` prove that our mapping and kio agree with each
other; these prove that the bytes are Kafka's: flexible versions (compact strings and
arrays, unsigned varint lengths plus one, tagged-field sections), request header v2,
response header v1, a UUID as 16 bytes and a nullable struct as an int8 marker.
"""

from __future__ import annotations

import struct
import uuid

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
from groupcoord.errors import GroupIdNotFoundError
from groupcoord.protocol.group_messages import (
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

TOPIC = uuid.UUID("0123456789abcdef0123456789abcdef")
NO_TAGS = b"\x00"


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    """COMPACT_(NULLABLE_)STRING: length + 1 as an unsigned varint (0 is null)."""
    if s is None:
        return uvarint(0)
    raw = s.encode()
    return uvarint(len(raw) + 1) + raw


def carray(items: list[bytes] | None) -> bytes:
    """COMPACT_(NULLABLE_)ARRAY: count + 1 as an unsigned varint (0 is null)."""
    if items is None:
        return uvarint(0)
    return uvarint(len(items) + 1) + b"".join(items)


def frame(body: bytes) -> bytes:
    return i32(len(body)) + body


def request_header_v2(api_key: int, correlation_id: int, client_id: str) -> bytes:
    # the client id stays a (non-compact) nullable string even in header v2
    return (
        i16(api_key)
        + i16(1)
        + i32(correlation_id)
        + i16(len(client_id))
        + client_id.encode()
        + NO_TAGS
    )


HEARTBEAT_V1_REQUEST = frame(
    request_header_v2(68, 7, "rdkafka")
    + cstr("orders-group")  # GroupId
    + cstr("m-1")  # MemberId
    + i32(3)  # MemberEpoch
    + cstr(None)  # InstanceId
    + cstr("rack-a")  # RackId
    + i32(-1)  # RebalanceTimeoutMs: unchanged
    + carray([cstr("orders")])  # SubscribedTopicNames
    + cstr(None)  # SubscribedTopicRegex (v1+)
    + cstr(None)  # ServerAssignor
    + carray([TOPIC.bytes + carray([i32(0), i32(2)]) + NO_TAGS])  # TopicPartitions
    + NO_TAGS
)


def test_heartbeat_v1_request_bytes() -> None:
    ours = ConsumerGroupHeartbeatRequest(
        version=1,
        group_id="orders-group",
        member_id="m-1",
        member_epoch=3,
        rack_id="rack-a",
        subscribed_topic_names=("orders",),
        topic_partitions=(TopicPartitions(topic_id=TOPIC, partitions=(0, 2)),),
    )
    assert encode_request(68, 1, 7, "rdkafka", to_kio_request(ours)) == HEARTBEAT_V1_REQUEST
    header, kio_request = decode_request(HEARTBEAT_V1_REQUEST[4:])
    back = to_coordinator_request(68, 1, kio_request, client_id="rdkafka", client_host="h")
    assert back == ConsumerGroupHeartbeatRequest(
        version=1,
        group_id="orders-group",
        member_id="m-1",
        member_epoch=3,
        rack_id="rack-a",
        subscribed_topic_names=("orders",),
        topic_partitions=(TopicPartitions(topic_id=TOPIC, partitions=(0, 2)),),
        client_id="rdkafka",
        client_host="h",
    )
    assert header.correlation_id == 7


def _header_of(api_key: int, version: int) -> object:
    header, _ = decode_request(
        frame(request_header_v2(api_key, 7, "c"))[4:]
        + (
            cstr("g") + cstr("m") + i32(0) + cstr(None) + cstr(None) + i32(-1)
            + carray(None) + cstr(None) + cstr(None) + carray(None) + NO_TAGS
            if api_key == 68
            else carray([cstr("g")]) + b"\x00" + NO_TAGS
        )
    )  # fmt: skip
    return header


def test_heartbeat_v1_response_bytes() -> None:
    ours = ConsumerGroupHeartbeatResponse(
        version=1,
        member_id="m-1",
        member_epoch=4,
        heartbeat_interval_ms=5000,
        assignment=(TopicPartitions(topic_id=TOPIC, partitions=(1,)),),
    )
    expected = frame(
        i32(7) + NO_TAGS  # response header v1
        + i32(0)  # ThrottleTimeMs
        + i16(0)  # ErrorCode
        + cstr(None)  # ErrorMessage
        + cstr("m-1")  # MemberId
        + i32(4)  # MemberEpoch
        + i32(5000)  # HeartbeatIntervalMs
        + i8(1)  # Assignment: present
        + carray([TOPIC.bytes + carray([i32(1)]) + NO_TAGS])  # .TopicPartitions
        + NO_TAGS  # Assignment's tagged fields
        + NO_TAGS
    )  # fmt: skip
    header = _header_of(68, 1)
    assert encode_response(header, to_kio_response(ours)) == expected  # type: ignore[arg-type]
    _, kio_response = decode_response(68, 1, expected[4:])
    assert from_kio_response(68, 1, kio_response) == ours


def test_heartbeat_v1_error_response_bytes_have_a_null_assignment() -> None:
    ours = ConsumerGroupHeartbeatResponse(
        version=1, error=GroupIdNotFoundError, error_message="Group g not found."
    )
    expected = frame(
        i32(7) + NO_TAGS + i32(0) + i16(69) + cstr("Group g not found.") + cstr(None)
        + i32(0) + i32(0)
        + i8(-1)  # Assignment: null
        + NO_TAGS
    )  # fmt: skip
    assert encode_response(_header_of(68, 1), to_kio_response(ours)) == expected  # type: ignore[arg-type]


def test_describe_v1_request_and_response_bytes() -> None:
    request = ConsumerGroupDescribeRequest(version=1, group_ids=("g",))
    assert encode_request(69, 1, 7, "c", to_kio_request(request)) == frame(
        request_header_v2(69, 7, "c") + carray([cstr("g")]) + b"\x00" + NO_TAGS
    )
    parts = (DescribedTopicPartitions(topic_id=TOPIC, topic_name="orders", partitions=(0, 1)),)
    ours = ConsumerGroupDescribeResponse(
        version=1,
        groups=(
            DescribedConsumerGroup(
                group_id="g",
                group_state="Stable",
                group_epoch=2,
                assignment_epoch=2,
                assignor_name="uniform",
                members=(
                    DescribedConsumerMember(
                        member_id="m-1",
                        member_epoch=2,
                        client_id="c",
                        client_host="/127.0.0.1",
                        subscribed_topic_names=("orders",),
                        assignment=parts,
                        target_assignment=parts,
                        member_type=1,
                    ),
                ),
            ),
        ),
    )
    assignment = (
        carray([TOPIC.bytes + cstr("orders") + carray([i32(0), i32(1)]) + NO_TAGS]) + NO_TAGS
    )
    member = (
        cstr("m-1") + cstr(None) + cstr(None)  # MemberId, InstanceId, RackId
        + i32(2) + cstr("c") + cstr("/127.0.0.1")  # MemberEpoch, ClientId, ClientHost
        + carray([cstr("orders")]) + cstr(None)  # SubscribedTopicNames, SubscribedTopicRegex
        + assignment + assignment  # Assignment, TargetAssignment (structs, not nullable)
        + i8(1)  # MemberType (v1+)
        + NO_TAGS
    )  # fmt: skip
    expected = frame(
        i32(7) + NO_TAGS + i32(0)  # header, ThrottleTimeMs
        + carray([
            i16(0) + cstr(None) + cstr("g") + cstr("Stable")  # ErrorCode .. GroupState
            + i32(2) + i32(2) + cstr("uniform")  # GroupEpoch, AssignmentEpoch, AssignorName
            + carray([member])
            + i32(-(2**31))  # AuthorizedOperations
            + NO_TAGS
        ])
        + NO_TAGS
    )  # fmt: skip
    assert encode_response(_header_of(69, 1), to_kio_response(ours)) == expected  # type: ignore[arg-type]
    _, kio_response = decode_response(69, 1, expected[4:])
    assert from_kio_response(69, 1, kio_response) == ours
