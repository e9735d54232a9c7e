"""The hand-written ConsumerGroupHeartbeat codec against the generic kio path it stands in
for (``wire.decode_request`` + ``group_messages.to_coordinator_request`` for requests,
``group_messages.to_kio_response`` + ``wire.encode_response`` for responses): on common
frames both agree exactly; on anything else the codec steps aside (``None``)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord import errors
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.protocol.consumer_heartbeat_codec import (
    consumer_heartbeat_prefixes,
    decode_consumer_heartbeat_request,
    encode_consumer_heartbeat_response,
)
from groupcoord.protocol.group_messages import (
    GROUP_API_VERSIONS,
    to_coordinator_request,
    to_kio_request,
    to_kio_response,
)
from groupcoord.protocol.wire import RequestHeader, decode_request, encode_request, encode_response

versions = st.integers(0, 1)
int32s = st.integers(-(2**31), 2**31 - 1)
#: short enough that every length fits the codec's one-byte varints
texts = st.text(max_size=30)
ids = st.uuids().filter(lambda u: u.int != 0)
topic_partitions = st.lists(
    st.builds(
        lambda topic_id, parts: TopicPartitions(topic_id=topic_id, partitions=tuple(parts)),
        ids,
        st.lists(int32s, max_size=6),
    ),
    max_size=4,
).map(tuple)

ERROR_CLASSES: list[type[errors.KafkaError] | None] = [
    None,
    *sorted(
        (
            c
            for c in vars(errors).values()
            if isinstance(c, type) and issubclass(c, errors.KafkaError) and c.code > 0
        ),
        key=lambda c: (c.code, c.__name__),
    ),
]


@st.composite
def heartbeats(draw: st.DrawFn) -> ConsumerGroupHeartbeatRequest:
    version = draw(versions)
    return ConsumerGroupHeartbeatRequest(
        version=version,
        correlation=None,
        group_id=draw(texts),
        member_id=draw(texts),
        member_epoch=draw(int32s),
        instance_id=draw(st.none() | texts),
        rack_id=draw(st.none() | texts),
        rebalance_timeout_ms=draw(int32s),
        subscribed_topic_names=draw(st.none() | st.lists(texts, max_size=4).map(tuple)),
        subscribed_topic_regex=draw(st.none() | texts) if version >= 1 else None,
        server_assignor=draw(st.none() | texts),
        topic_partitions=draw(st.none() | topic_partitions),
    )


def frame_of(
    request: ConsumerGroupHeartbeatRequest, correlation_id: int, client_id: str | None
) -> bytes:
    frame = encode_request(68, request.version, correlation_id, client_id, to_kio_request(request))
    return frame[4:]


def generic_decode(frame: bytes, correlation: object, client_host: str) -> tuple[int, Any]:
    header, request = decode_request(frame)
    ours = to_coordinator_request(
        68,
        header.api_version,
        request,
        correlation=correlation,
        client_id=header.client_id or "",
        client_host=client_host,
    )
    return header.correlation_id, ours


def test_prefixes_cover_the_served_versions() -> None:
    lo, hi = GROUP_API_VERSIONS[68]
    assert sorted(consumer_heartbeat_prefixes(lo, hi).values()) == list(range(lo, hi + 1))


@settings(max_examples=400, deadline=None)
@given(request=heartbeats(), correlation_id=int32s, client_id=st.none() | texts)
def test_common_frames_decode_exactly_as_the_generic_path(
    request: ConsumerGroupHeartbeatRequest, correlation_id: int, client_id: str | None
) -> None:
    frame = frame_of(request, correlation_id, client_id)
    decoded = decode_consumer_heartbeat_request(frame, "token", "/127.0.0.1")
    assert decoded is not None, "a common frame must not fall back"
    assert decoded == generic_decode(frame, "token", "/127.0.0.1")
    assert decoded[1] == dataclasses.replace(
        request, correlation="token", client_id=client_id or "", client_host="/127.0.0.1"
    )


@settings(max_examples=400, deadline=None)
@given(
    request=heartbeats(),
    cut=st.integers(0, 200),
    flip=st.tuples(st.integers(0, 400), st.integers(1, 255)),
    data=st.data(),
)
def test_damaged_frames_fall_back_or_agree(
    request: ConsumerGroupHeartbeatRequest,
    cut: int,
    flip: tuple[int, int],
    data: st.DataObject,
) -> None:
    frame = bytearray(frame_of(request, 7, "c"))
    if data.draw(st.booleans()):
        del frame[len(frame) - min(cut, len(frame)) :]
    elif frame:
        at, mask = flip
        frame[at % len(frame)] ^= mask
    decoded = decode_consumer_heartbeat_request(bytes(frame), "token", "h")
    if decoded is None:
        return  # the generic path answers (or refuses) it, as before
    assert decoded == generic_decode(bytes(frame), "token", "h")


def test_what_the_codec_leaves_to_the_generic_path() -> None:
    base = ConsumerGroupHeartbeatRequest(version=1, group_id="g", member_id="m", member_epoch=3)
    assert decode_consumer_heartbeat_request(frame_of(base, 1, "c")) is not None
    long_group = dataclasses.replace(base, group_id="g" * 200)
    assert decode_consumer_heartbeat_request(frame_of(long_group, 1, "c")) is None
    assert decode_consumer_heartbeat_request(frame_of(base, 1, "c") + b"\x00") is None
    frame = frame_of(base, 1, "c")
    assert decode_consumer_heartbeat_request(frame[:2] + b"\x00\x02" + frame[4:]) is None  # v2
    null_id = dataclasses.replace(
        base, topic_partitions=(TopicPartitions(topic_id=uuid.UUID(int=1), partitions=(0,)),)
    )
    raw = frame_of(null_id, 1, "c").replace(uuid.UUID(int=1).bytes, bytes(16))
    assert decode_consumer_heartbeat_request(raw) is None  # the null UUID


@settings(max_examples=400, deadline=None)
@given(
    version=versions,
    correlation_id=int32s,
    error=st.sampled_from(ERROR_CLASSES),
    message=st.none() | texts,
    member_id=st.none() | texts,
    epoch=int32s,
    interval=int32s,
    assignment=st.none() | topic_partitions,
)
def test_responses_are_byte_identical(
    version: int,
    correlation_id: int,
    error: type[errors.KafkaError] | None,
    message: str | None,
    member_id: str | None,
    epoch: int,
    interval: int,
    assignment: tuple[TopicPartitions, ...] | None,
) -> None:
    response = ConsumerGroupHeartbeatResponse(
        version=version,
        error=error,
        error_message=message,
        member_id=member_id,
        member_epoch=epoch,
        heartbeat_interval_ms=interval,
        assignment=assignment,
    )
    header = RequestHeader(api_key=68, api_version=version, correlation_id=correlation_id)
    expected = encode_response(header, to_kio_response(response))
    assert encode_consumer_heartbeat_response(correlation_id, response) == expected


@settings(max_examples=200, deadline=None)
@given(
    version=versions,
    group_id=texts,
    member_id=texts,
    epoch=int32s,
    correlation_id=int32s,
    client_id=st.none() | texts,
)
def test_steady_heartbeats_take_the_one_pass_reader_and_agree(
    version: int,
    group_id: str,
    member_id: str,
    epoch: int,
    correlation_id: int,
    client_id: str | None,
) -> None:
    from groupcoord.protocol.consumer_heartbeat_codec import _decode_steady

    request = ConsumerGroupHeartbeatRequest(
        version=version, group_id=group_id, member_id=member_id, member_epoch=epoch
    )
    frame = frame_of(request, correlation_id, client_id)
    steady = _decode_steady(frame, "token", "/h")
    assert steady is not None
    assert steady == generic_decode(frame, "token", "/h")
