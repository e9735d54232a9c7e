"""The hand-written Heartbeat codec against the generic kio path it replaces.

The generic path is ``wire.decode_request`` + ``group_messages.to_coordinator_request``
for requests and ``group_messages.to_kio_response`` + ``wire.encode_response`` for
responses; every test here runs both on the same input and compares.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema

from groupcoord import errors
from groupcoord.coordinator import HeartbeatRequest, HeartbeatResponse
from groupcoord.protocol.group_messages import to_coordinator_request, to_kio_response
from groupcoord.protocol.heartbeat_codec import (
    decode_heartbeat_request,
    encode_heartbeat_response,
    heartbeat_prefixes,
)
from groupcoord.protocol.wire import (
    MalformedFrameError,
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
)

versions = st.integers(0, 4)
int32s = st.integers(-(2**31), 2**31 - 1)
texts = st.text(max_size=30)  # hypothesis text: any code point but surrogates
client_ids = st.none() | texts

#: every Kafka error class groupcoord knows, and None (no error)
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


def kio_heartbeat(
    version: int, group: str, generation: int, member: str, instance: str | None
) -> Any:
    cls = load_request_schema(12, version)
    fields: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member}
    if version >= 3:
        fields["group_instance_id"] = instance
    return cls(**fields)


@st.composite
def heartbeat_frames(
    draw: st.DrawFn, versions: st.SearchStrategy[int] = versions
) -> tuple[int, bytes]:
    """(version, frame body without the size prefix) encoded by kio."""
    version = draw(versions)
    request = kio_heartbeat(
        version,
        draw(texts),
        draw(int32s),
        draw(texts),
        draw(st.none() | texts) if version >= 3 else None,
    )
    frame = encode_request(12, version, draw(int32s), draw(client_ids), request)
    return version, frame[4:]


def generic_decode(frame: bytes, correlation: object) -> tuple[int, HeartbeatRequest]:
    header, request = decode_request(frame)
    ours = to_coordinator_request(
        12, header.api_version, request, correlation=correlation, client_id="", client_host=""
    )
    assert isinstance(ours, HeartbeatRequest)
    return header.correlation_id, ours


def generic_encode(
    correlation_id: int, version: int, error: type[errors.KafkaError] | None
) -> bytes:
    header = RequestHeader(api_key=12, api_version=version, correlation_id=correlation_id)
    return encode_response(header, to_kio_response(HeartbeatResponse(version=version, error=error)))


def outcome(decode: Any, frame: bytes) -> object:
    """The decoded (correlation id, request), or the class of the error raised."""
    try:
        return decode(frame, 7)
    except Exception as e:
        return type(e)


# ------------------------------------------------------------------------------ requests


@given(heartbeat_frames())
def test_decodes_what_the_generic_path_decodes(case: tuple[int, bytes]) -> None:
    _, frame = case
    assert decode_heartbeat_request(frame, 7) == generic_decode(frame, 7)


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("length", [126, 127, 128, 300, 16_000])
def test_long_strings_decode_like_the_generic_path(version: int, length: int) -> None:
    """Compact string lengths of 127 bytes and more take two varint bytes (and another
    reader than the common case); legacy ones are int16 whatever their length."""
    text = ("\u00e9" * length)[: length // 2] + "x" * (length - length // 2 * 2)
    for group, member, instance in [(text, "m", None), ("g", text, text), ("g", "m", text)]:
        request = kio_heartbeat(version, group, 9, member, instance if version >= 3 else None)
        frame = encode_request(12, version, 3, "client", request)[4:]
        assert decode_heartbeat_request(frame, 7) == generic_decode(frame, 7)


@given(
    heartbeat_frames(st.just(4)),
    st.lists(st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=20)), min_size=1, max_size=4),
)
def test_skips_unknown_body_tagged_fields_as_kafka_does(
    case: tuple[int, bytes], tags: list[tuple[int, bytes]]
) -> None:
    """v4 bodies end with tagged fields; Heartbeat defines none, so all are unknown:
    skipped (kio would refuse them), the request is the one without them."""
    _, frame = case
    assert frame[-1:] == b"\x00"  # kio writes an empty tagged-field section
    section = uvarint(len(tags)) + b"".join(
        uvarint(tag) + uvarint(len(data)) + data for tag, data in sorted(tags)
    )
    tagged = frame[:-1] + section
    assert decode_heartbeat_request(tagged, 7) == generic_decode(frame, 7)
    with pytest.raises(MalformedFrameError):
        generic_decode(tagged, 7)


@given(heartbeat_frames(st.just(4)), st.binary(min_size=1, max_size=12))
def test_header_tagged_fields_are_skipped_by_both(case: tuple[int, bytes], data: bytes) -> None:
    _, frame = case
    client_length = struct.unpack_from(">h", frame, 8)[0]
    at = 10 + max(client_length, 0)
    assert frame[at] == 0  # no header tagged fields from kio
    tagged = frame[:at] + b"\x01\x03" + uvarint(len(data)) + data + frame[at + 1 :]
    assert decode_heartbeat_request(tagged, 7) == generic_decode(tagged, 7)
    assert decode_heartbeat_request(tagged, 7) == generic_decode(frame, 7)


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


@given(heartbeat_frames(), st.binary(min_size=1, max_size=12))
def test_trailing_bytes_are_ignored_by_both_as_kafka_does(
    case: tuple[int, bytes], junk: bytes
) -> None:
    """Bytes after the body (a v4 body ends with its tagged fields) are not read: both
    paths give the request without them, as Kafka's request parsing does."""
    _, frame = case
    expected = generic_decode(frame, 7)
    assert decode_heartbeat_request(frame + junk, 7) == generic_decode(frame + junk, 7) == expected


def test_trailing_bytes_are_logged_at_debug_by_both(caplog: pytest.LogCaptureFixture) -> None:
    frame = encode_request(12, 4, 3, "c", kio_heartbeat(4, "g", 1, "m", None))[4:] + bytes(3)
    for decode in (decode_heartbeat_request, generic_decode):
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="groupcoord.protocol"):
            decode(frame, 7)
        assert [r.getMessage() for r in caplog.records] == [
            "API 12 v4 request from client 'c': ignoring 3 trailing bytes after the body"
        ]


@given(heartbeat_frames(), st.data())
def test_truncated_frames_fail_like_the_generic_path(
    case: tuple[int, bytes], data: st.DataObject
) -> None:
    _, frame = case
    cut = data.draw(st.integers(4, len(frame) - 1))
    fast, generic = (
        outcome(decode_heartbeat_request, frame[:cut]),
        outcome(generic_decode, frame[:cut]),
    )
    assert fast == generic == MalformedFrameError


@given(heartbeat_frames(), st.data())
def test_corrupted_frames_give_the_generic_outcome(
    case: tuple[int, bytes], data: st.DataObject
) -> None:
    """Bytes after the api key and version overwritten, inserted or appended at random:
    the same request or the same error class as the generic path."""
    version, frame = case
    at = data.draw(st.integers(4, len(frame)))
    junk = data.draw(st.binary(min_size=1, max_size=8))
    replace = data.draw(st.booleans())
    bad = frame[:at] + junk + frame[at + (len(junk) if replace else 0) :]
    fast, generic = outcome(decode_heartbeat_request, bad), outcome(generic_decode, bad)
    if generic is MalformedFrameError and fast is not MalformedFrameError:
        # the one deliberate difference: kio refuses body tagged fields, we skip them
        assert version == 4
        with pytest.raises(MalformedFrameError, match="Unknown tagged field"):
            decode_request(bad)
        return
    assert fast == generic


@pytest.mark.parametrize(
    ("body", "version"),
    [
        (struct.pack(">h", -1) + struct.pack(">i", 1) + b"\x00\x01m", 0),  # null group id
        (struct.pack(">h", -2) + struct.pack(">i", 1) + b"\x00\x01m", 1),  # negative length
        (b"\x00\x01\xff" + struct.pack(">i", 1) + b"\x00\x01m", 2),  # not UTF-8
        (b"\x00\x01g" + struct.pack(">i", 1) + b"\x00\x01m" + struct.pack(">h", -2), 3),
        (b"\x00" + struct.pack(">i", 1) + b"\x02m\x00\x00", 4),  # null compact group id
        (b"\x02g" + struct.pack(">i", 1) + b"\x02m\x00", 4),  # no tagged-field section
        (b"\x82\x80\x80\x80\x80\x01" + b"g", 4),  # varint longer than 5 bytes
        (b"\x02g" + struct.pack(">i", 1) + b"\x02m\x00\x01\x05\x09ab", 4),  # tag past end
    ],
)
def test_known_bad_bodies_are_malformed_on_both_paths(body: bytes, version: int) -> None:
    header = struct.pack(">hhih", 12, version, 5, 1) + b"c" + (b"\x00" if version >= 4 else b"")
    frame = header + body
    assert outcome(decode_heartbeat_request, frame) is MalformedFrameError
    assert outcome(generic_decode, frame) is MalformedFrameError


def test_a_bad_client_id_is_malformed_on_both_paths() -> None:
    frame = struct.pack(">hhih", 12, 0, 5, 1) + b"\xff" + b"\x00\x01g" + bytes(4) + b"\x00\x01m"
    assert outcome(decode_heartbeat_request, frame) is MalformedFrameError
    assert outcome(generic_decode, frame) is MalformedFrameError


def test_refuses_frames_of_other_apis_and_versions() -> None:
    frame = struct.pack(">hhih", 12, 5, 1, -1)
    with pytest.raises(ValueError, match="not a Heartbeat"):
        decode_heartbeat_request(frame)
    with pytest.raises(ValueError, match="not a Heartbeat"):
        decode_heartbeat_request(struct.pack(">hhih", 13, 0, 1, -1))


# ------------------------------------------------------------------------------ responses


@settings(max_examples=300)
@given(int32s, versions, st.sampled_from(ERROR_CLASSES))
def test_encodes_what_the_generic_path_encodes(
    correlation_id: int, version: int, error: type[errors.KafkaError] | None
) -> None:
    code = 0 if error is None else error.code
    assert encode_heartbeat_response(correlation_id, version, code) == generic_encode(
        correlation_id, version, error
    )


def test_response_versions_outside_heartbeats_are_refused() -> None:
    with pytest.raises(ValueError, match="versions 0-4"):
        encode_heartbeat_response(1, 5, 0)


# ------------------------------------------------------------------------------ prefixes


@given(st.integers(-3, 6), st.integers(-3, 6))
def test_prefixes_name_exactly_the_served_heartbeat_versions(lo: int, hi: int) -> None:
    prefixes = heartbeat_prefixes(lo, hi)
    expected = [v for v in range(5) if lo <= v <= hi]
    assert sorted(prefixes.values()) == expected
    for prefix, version in prefixes.items():
        assert struct.unpack(">hh", prefix) == (12, version)
