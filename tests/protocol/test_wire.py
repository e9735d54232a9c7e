"""The wire codec: frames, headers, kio payloads, checked against kafka-python's encoder."""

from __future__ import annotations

import contextlib
import datetime
import itertools
import logging
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.consumer.group import HeartbeatRequest as KpHeartbeatRequest
from kafka.protocol.consumer.group import HeartbeatResponse as KpHeartbeatResponse
from kafka.protocol.consumer.group import JoinGroupRequest as KpJoinGroupRequest
from kafka.protocol.metadata import ApiVersionsRequest as KpApiVersionsRequest
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse
from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v3.response import ApiVersionsResponse as ApiVersionsResponseV3
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v0.request import HeartbeatRequest as HeartbeatRequestV0
from kio.schema.heartbeat.v4.request import HeartbeatRequest as HeartbeatRequestV4
from kio.schema.heartbeat.v4.response import HeartbeatResponse as HeartbeatResponseV4
from kio.schema.join_group.v5.request import JoinGroupRequest as JoinGroupRequestV5
from kio.schema.join_group.v5.request import JoinGroupRequestProtocol as ProtocolV5
from kio.schema.metadata.v13.request import MetadataRequest as MetadataRequestV13
from kio.static.primitive import i16, i32, i32Timedelta

from groupcoord.errors import InvalidRequestError, UnsupportedVersionError
from groupcoord.protocol.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    FrameBuffer,
    FrameSizeError,
    MalformedFrameError,
    RequestHeader,
    UnsupportedApiError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_frame,
    encode_request,
    encode_request_header,
    encode_response,
    kio_version_range,
    parse_frame_size,
    peek_correlation_id,
    request_header_version,
    response_header_version,
)

int32s = st.integers(-(2**31), 2**31 - 1)
client_ids = st.none() | st.text(max_size=40)


def ms(value: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=value))


def heartbeat_v4(group: str = "g", generation: int = 3, member: str = "m") -> HeartbeatRequestV4:
    return HeartbeatRequestV4(
        group_id=group, generation_id=i32(generation), member_id=member, group_instance_id=None
    )


# ---------------------------------------------------------------- frames


def test_default_frame_limit_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_BYTES == 100 * 1024 * 1024


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_frame_size_is_rejected(size: int) -> None:
    with pytest.raises(FrameSizeError) as info:
        parse_frame_size(struct.pack(">i", size))
    assert info.value.code == InvalidRequestError.code


def test_oversized_frame_is_rejected_at_the_configured_limit() -> None:
    assert parse_frame_size(struct.pack(">i", 100), max_frame_bytes=100) == 100
    with pytest.raises(FrameSizeError, match="over the limit"):
        parse_frame_size(struct.pack(">i", 101), max_frame_bytes=100)


def test_frame_prefix_must_be_four_bytes() -> None:
    with pytest.raises(MalformedFrameError):
        parse_frame_size(b"\x00\x00")


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(0, 3000), max_size=10),
)
def test_frame_buffer_returns_every_frame_whatever_the_chunking(
    payloads: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    points = sorted({c for c in cuts if c < len(stream)} | {0, len(stream)})
    buf = FrameBuffer()
    got: list[bytes] = []
    for a, b in itertools.pairwise(points):
        got += buf.feed(stream[a:b])
    assert got == payloads
    assert buf.pending_bytes == 0


def test_frame_buffer_holds_a_partial_frame_back() -> None:
    buf = FrameBuffer()
    frame = encode_frame(b"abcdef")
    assert buf.feed(frame[:7]) == []
    assert buf.pending_bytes == 7
    assert buf.feed(frame[7:]) == [b"abcdef"]


def test_frame_buffer_stays_broken_after_a_bad_size() -> None:
    buf = FrameBuffer(max_frame_bytes=10)
    with pytest.raises(FrameSizeError):
        buf.feed(encode_frame(b"x" * 11))
    with pytest.raises(FrameSizeError):
        buf.feed(encode_frame(b"ok"))


# ---------------------------------------------------------------- headers


@given(
    api_key=st.integers(-(2**15), 2**15 - 1),
    version=st.integers(-(2**15), 2**15 - 1),
    correlation_id=int32s,
    client_id=client_ids,
    header_version=st.sampled_from([0, 1, 2]),
)
def test_request_header_layout(
    api_key: int, version: int, correlation_id: int, client_id: str | None, header_version: int
) -> None:
    header = RequestHeader(
        api_key=api_key,
        api_version=version,
        correlation_id=correlation_id,
        client_id=client_id if header_version else None,
        header_version=header_version,
    )
    raw = encode_request_header(header)
    assert struct.unpack_from(">hhi", raw) == (api_key, version, correlation_id)
    if header_version == 0:
        assert len(raw) == 8
        return
    (length,) = struct.unpack_from(">h", raw, 8)
    if client_id is None:
        assert length == -1
    else:
        assert raw[10 : 10 + length].decode() == client_id
    assert raw.endswith(b"\x00") if header_version == 2 else True


@given(correlation_id=int32s, client_id=client_ids)
def test_flexible_request_header_round_trip(correlation_id: int, client_id: str | None) -> None:
    frame = encode_request(12, 4, correlation_id, client_id, heartbeat_v4())
    header, request = decode_request(frame[4:])
    assert header == RequestHeader(
        api_key=12,
        api_version=4,
        correlation_id=correlation_id,
        client_id=client_id,
        header_version=2,
    )
    assert request == heartbeat_v4()


def test_header_tagged_fields_are_skipped() -> None:
    body = encode_request(12, 4, 5, "c", heartbeat_v4())[4:]
    # header: 8 fixed + 2 + len("c") = 11 bytes, then the tagged-field count (0)
    assert body[11] == 0
    tagged = body[:11] + bytes([1, 7, 2, 0xAA, 0xBB]) + body[12:]
    header, request = decode_request(tagged)
    assert header.correlation_id == 5
    assert request == heartbeat_v4()


def test_header_versions_follow_the_kio_schemas() -> None:
    assert request_header_version(12, 0) == 1
    assert request_header_version(12, 4) == 2
    assert response_header_version(12, 3) == 0
    assert response_header_version(12, 4) == 1
    # ApiVersions responses are always header v0, even the flexible v3+
    assert request_header_version(18, 3) == 2
    assert response_header_version(18, 3) == 0
    assert request_header_version(12, 99) is None
    assert kio_version_range(12) == (0, 4)
    assert kio_version_range(9999) is None


# ---------------------------------------------------------------- kafka-python byte comparison


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_heartbeat_request_bytes_match_kafka_python(version: int) -> None:
    import importlib

    module = importlib.import_module(f"kio.schema.heartbeat.v{version}.request")
    fields = {"group_id": "group-1", "generation_id": i32(42), "member_id": "member-1"}
    if version >= 3:
        fields["group_instance_id"] = "static-1"
    ours = encode_request(12, version, 99, "client-x", module.HeartbeatRequest(**fields))
    theirs = KpHeartbeatRequest[version](
        **{k: int(v) if k == "generation_id" else v for k, v in fields.items()}
    )
    theirs.with_header(correlation_id=99, client_id="client-x")
    assert ours == bytes(theirs.encode(framed=True, header=True))


def test_join_group_v5_request_bytes_match_kafka_python() -> None:
    ours = encode_request(
        11,
        5,
        1,
        "cli",
        JoinGroupRequestV5(
            group_id="g",
            session_timeout=ms(10_000),
            rebalance_timeout=ms(300_000),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(ProtocolV5(name="range", metadata=b"\x00\x01meta"),),
        ),
    )
    theirs = KpJoinGroupRequest[5](
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=300_000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[("range", b"\x00\x01meta")],
    )
    theirs.with_header(correlation_id=1, client_id="cli")
    assert ours == bytes(theirs.encode(framed=True, header=True))


def test_api_versions_v3_request_with_null_client_id_matches_kafka_python() -> None:
    ours = encode_request(
        18,
        3,
        1,
        None,
        ApiVersionsRequestV3(client_software_name="a", client_software_version="1"),
    )
    theirs = KpApiVersionsRequest[3](client_software_name="a", client_software_version="1")
    theirs.with_header(correlation_id=1, client_id=None)
    assert ours == bytes(theirs.encode(framed=True, header=True))


def test_heartbeat_v4_response_decodes_as_kafka_python_reads_it() -> None:
    request_header, _ = decode_request(encode_request(12, 4, 77, "c", heartbeat_v4())[4:])
    frame = encode_response(
        request_header,
        HeartbeatResponseV4(throttle_time=ms(0), error_code=ErrorCode(27)),
    )
    assert struct.unpack(">i", frame[:4])[0] == len(frame) - 4
    assert peek_correlation_id(frame[4:]) == 77
    # flexible response header: correlation id then an empty tagged-field section
    decoded = KpHeartbeatResponse[4].decode(frame[9:])
    assert decoded.error_code == 27
    assert decode_response(12, 4, frame[4:])[1].error_code == ErrorCode(27)


def test_api_versions_v3_response_uses_header_v0() -> None:
    request_header, _ = decode_request(
        encode_request(
            18,
            3,
            5,
            "c",
            ApiVersionsRequestV3(client_software_name="x", client_software_version="y"),
        )[4:]
    )
    response = ApiVersionsResponseV3(
        error_code=ErrorCode.none,
        api_keys=(),
        throttle_time=ms(0),
    )
    body = encode_response(request_header, response)[4:]
    kp = KpApiVersionsResponse[3].decode(body[4:])  # no tagged-field byte after the id
    assert kp.error_code == 0
    assert decode_response(18, 3, body) == (5, response)


# ---------------------------------------------------------------- unsupported and malformed


def test_unknown_api_key_is_reported_with_its_header() -> None:
    body = struct.pack(">hhi", 9999, 0, 31) + struct.pack(">h", 3) + b"abc"
    with pytest.raises(UnsupportedApiError) as info:
        decode_request_header(body)
    assert info.value.header.correlation_id == 31
    assert info.value.header.client_id == "abc"
    assert info.value.code == UnsupportedVersionError.code


def test_unsupported_version_is_reported_with_its_header() -> None:
    body = struct.pack(">hhi", 12, 50, 8) + struct.pack(">h", -1) + b"\x00garbage"
    with pytest.raises(UnsupportedApiError, match="version 50") as info:
        decode_request(body)
    assert info.value.header.api_key == 12
    assert info.value.header.correlation_id == 8


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"\x00\x0c\x00",
        struct.pack(">hhi", 12, 0, 1),  # v1 header without client id
        struct.pack(">hhi", 12, 0, 1) + struct.pack(">h", 50) + b"short",
        struct.pack(">hhi", 12, 0, 1) + struct.pack(">h", -5),
        struct.pack(">hhi", 12, 0, 1) + struct.pack(">h", 2) + b"\xff\xfe",
        struct.pack(">hhi", 12, 4, 1) + struct.pack(">h", -1) + b"\x05",
        struct.pack(">hhi", 12, 4, 1) + struct.pack(">h", -1) + b"\x01\x01\x7f",
    ],
)
def test_malformed_headers_raise_typed_errors(body: bytes) -> None:
    with pytest.raises(MalformedFrameError):
        decode_request(body)


def test_truncated_payloads_are_malformed_and_padded_ones_are_read() -> None:
    request = HeartbeatRequestV0(group_id="g", generation_id=i32(1), member_id="m")
    body = encode_request(12, 0, 1, "c", request)[4:]
    with pytest.raises(MalformedFrameError):
        decode_request(body[:-1])
    # bytes after the body are ignored, as Kafka's request parsing ignores them
    assert decode_request(body + b"\x00") == decode_request(body)
    assert decode_request(body + b"\xff" * 9)[1] == request


def metadata_v13_all_topics() -> MetadataRequestV13:
    return MetadataRequestV13(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


def test_metadata_v13_all_topics_with_trailing_bytes_reads_as_without_them() -> None:
    """librdkafka 2.16 sends Metadata v13 "all topics" with three stray bytes after the
    body; Kafka reads the schema and ignores them, so must we (debug-logged)."""
    body = encode_request(3, 13, 2, "rdkafka", metadata_v13_all_topics())[4:]
    header, request = decode_request(body + bytes(3))
    assert (header, request) == decode_request(body)
    assert request.topics is None
    # a truncated body is still refused (the 4-byte body cut anywhere before its end)
    for cut in range(1, 5):
        with pytest.raises(MalformedFrameError):
            decode_request(body[:-cut])


def test_librdkafka_2_16_metadata_all_topics_frame_is_read_as_kafka_reads_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The frame librdkafka 2.16 sent (captured): it reserves 4 bytes for the topic count
    and leaves them 0, then allow_auto_topic_creation 1, include_topic_authorized_operations
    0 and its tagged fields. A schema reader (Kafka, and us) takes the first 0 as a null
    topic array, the next three as the two booleans and the tagged fields, and ignores the
    3 bytes left."""
    frame = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    with caplog.at_level(logging.DEBUG, logger="groupcoord.protocol"):
        header, request = decode_request(frame)
    assert (header.api_key, header.api_version, header.correlation_id) == (3, 13, 3)
    assert header.client_id == "rdkafka"
    assert request == metadata_v13_all_topics()
    assert "API 3 v13" in caplog.text and "3 trailing bytes" in caplog.text


@given(st.binary(max_size=64))
def test_garbage_never_escapes_as_an_untyped_error(garbage: bytes) -> None:
    with contextlib.suppress(MalformedFrameError, UnsupportedApiError):
        decode_request(garbage)


@given(st.binary(max_size=40))
def test_garbage_after_a_valid_header_is_malformed_or_a_request(garbage: bytes) -> None:
    body = struct.pack(">hhi", 11, 7, 1) + struct.pack(">h", -1) + garbage
    try:
        header, _ = decode_request(body)
    except MalformedFrameError:
        return
    assert header.api_key == 11


def test_encode_request_checks_the_payload_matches_the_api() -> None:
    with pytest.raises(ValueError, match="not API 12 v3"):
        encode_request(12, 3, 1, None, heartbeat_v4())
    with pytest.raises(TypeError):
        encode_request(12, 4, 1, None, object())


def test_api_versions_v0_fallback_is_read_in_place_of_a_newer_version() -> None:
    fallback = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersionV0(api_key=i16(18), min_version=i16(0), max_version=i16(3)),),
    )
    header = RequestHeader(api_key=18, api_version=4, correlation_id=3, client_id="c")
    body = encode_response(header, fallback)[4:]
    correlation_id, response = decode_response(18, 4, body)
    assert correlation_id == 3
    assert response == fallback


def test_api_versions_v0_fallback_with_trailing_bytes_is_still_the_fallback() -> None:
    fallback = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersionV0(api_key=i16(18), min_version=i16(0), max_version=i16(3)),),
    )
    header = RequestHeader(api_key=18, api_version=4, correlation_id=3, client_id="c")
    body = encode_response(header, fallback)[4:]
    assert decode_response(18, 4, body + bytes(3)) == (3, fallback)
    # and a response of the version asked for, padded, is that response
    v3 = ApiVersionsResponseV3(error_code=ErrorCode.none, api_keys=(), throttle_time=ms(0))
    body = encode_response(RequestHeader(api_key=18, api_version=3, correlation_id=4), v3)[4:]
    assert decode_response(18, 3, body + b"\x01\x02") == (4, v3)


def test_trailing_bytes_after_a_response_are_ignored_as_kafka_clients_do(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kafka's NetworkClient.parseResponse reads the schema and ignores what follows."""
    header = RequestHeader(api_key=12, api_version=4, correlation_id=3)
    response = HeartbeatResponseV4(throttle_time=ms(0), error_code=ErrorCode.none)
    body = encode_response(header, response)[4:]
    with caplog.at_level(logging.DEBUG, logger="groupcoord.protocol"):
        assert decode_response(12, 4, body + bytes(3)) == (3, response)
    assert "API 12 v4 response" in caplog.text and "3 trailing bytes" in caplog.text


def test_truncated_response_is_malformed() -> None:
    header = RequestHeader(api_key=12, api_version=4, correlation_id=3)
    body = encode_response(
        header,
        HeartbeatResponseV4(throttle_time=ms(0), error_code=ErrorCode.none),
    )[4:]
    with pytest.raises(MalformedFrameError):
        decode_response(12, 4, body[:-2])


def test_unknown_payload_tagged_field_is_malformed_not_a_crash() -> None:
    # kio does not skip tagged fields it has no schema for (Kafka would): the frame is
    # refused as malformed, with the reason, instead of escaping as a KeyError
    body = encode_request(12, 4, 1, "c", heartbeat_v4())[4:]
    assert body.endswith(b"\x00")
    tagged = body[:-1] + bytes([1, 9, 1, 0])
    with pytest.raises(MalformedFrameError, match="KeyError"):
        decode_request(tagged)


def test_null_for_a_non_nullable_array_is_malformed() -> None:
    header = struct.pack(">hhih", 0, 9, 1, -1) + b"\x00"  # Produce v9, header v2
    # transactional_id null, acks 1, timeout 5000, topic_data null (count 0 = null), no tags
    payload = b"\x00" + struct.pack(">hi", 1, 5000) + b"\x00" + b"\x00"
    with pytest.raises(MalformedFrameError, match="non-nullable array topic_data is null"):
        decode_request(header + payload)


def test_null_where_the_schema_allows_it_is_accepted() -> None:
    # OffsetFetch v7: topics is nullable since v2 (null fetches every committed offset)
    header = struct.pack(">hhih", 9, 7, 1, -1) + b"\x00"
    payload = b"\x02g" + b"\x00" + b"\x00" + b"\x00"  # group "g", topics null, stable, tags
    _, request = decode_request(header + payload)
    assert request.group_id == "g" and request.topics is None


def test_nested_null_arrays_are_found() -> None:
    # OffsetCommit v8: one topic whose partitions array is null
    header = struct.pack(">hhih", 8, 8, 1, -1) + b"\x00"
    payload = (
        b"\x02g"  # group_id
        + struct.pack(">i", -1)  # generation
        + b"\x01"  # member_id ""
        + b"\x00"  # group_instance_id null
        + b"\x02"  # one topic
        + b"\x02t"  # name "t"
        + b"\x00"  # partitions: null
        + b"\x00"  # topic tags
        + b"\x00"  # tags
    )
    with pytest.raises(MalformedFrameError, match=r"topics\[\]\.partitions"):
        decode_request(header + payload)
