"""The hand-written OffsetCommit codec against the generic kio path it stands in for.

The generic path is ``wire.decode_request`` + ``group_messages.to_coordinator_request``
for requests and ``group_messages.to_kio_response`` + ``wire.encode_response`` for
responses. On the common frames both must agree exactly; on anything else the codec must
step aside (``None``), so the generic path answers as it always did.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord import errors
from groupcoord.coordinator import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.protocol.group_messages import (
    GROUP_API_VERSIONS,
    to_coordinator_request,
    to_kio_request,
    to_kio_response,
)
from groupcoord.protocol.offset_commit_codec import (
    decode_offset_commit_request,
    encode_offset_commit_response,
    offset_commit_prefixes,
)
from groupcoord.protocol.wire import (
    RequestHeader,
    decode_request,
    encode_request,
    encode_response,
)

versions = st.integers(2, 9)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.integers(-(2**63), 2**63 - 1)
#: short enough that every length fits the codec's one-byte varints
texts = st.text(max_size=30)
names = st.text(min_size=1, max_size=20)

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
def commit_requests(draw: st.DrawFn) -> OffsetCommitRequest:
    version = draw(versions)
    topics = draw(
        st.lists(
            st.builds(
                lambda name, parts: OffsetCommitRequestTopic(name=name, partitions=tuple(parts)),
                names,
                st.lists(
                    st.builds(
                        OffsetCommitRequestPartition,
                        partition_index=int32s,
                        committed_offset=int64s,
                        committed_leader_epoch=int32s if version >= 6 else st.just(-1),
                        committed_metadata=st.none() | texts,
                    ),
                    max_size=4,
                ),
            ),
            max_size=3,
        )
    )
    return OffsetCommitRequest(
        version=version,
        correlation=None,
        group_id=draw(texts),
        generation_id_or_member_epoch=draw(int32s),
        member_id=draw(texts),
        group_instance_id=draw(st.none() | texts) if version >= 7 else None,
        retention_time_ms=-1,
        topics=tuple(topics),
    )


def frame_of(request: OffsetCommitRequest, correlation_id: int, client_id: str | None) -> bytes:
    frame = encode_request(8, request.version, correlation_id, client_id, to_kio_request(request))
    return frame[4:]  # the size prefix is the connection's business


def generic_decode(frame: bytes, correlation: object) -> tuple[int, Any]:
    header, request = decode_request(frame)
    ours = to_coordinator_request(
        8, header.api_version, request, correlation=correlation, client_id="", client_host=""
    )
    return header.correlation_id, ours


def test_prefixes_cover_the_served_versions_it_reads() -> None:
    lo, hi = GROUP_API_VERSIONS[8]
    assert sorted(offset_commit_prefixes(lo, hi).values()) == list(range(max(lo, 2), hi + 1))
    assert offset_commit_prefixes(0, 1) == {}


@settings(max_examples=300, deadline=None)
@given(request=commit_requests(), correlation_id=int32s, client_id=st.none() | texts)
def test_common_frames_decode_exactly_as_the_generic_path(
    request: OffsetCommitRequest, correlation_id: int, client_id: str | None
) -> None:
    frame = frame_of(request, correlation_id, client_id)
    decoded = decode_offset_commit_request(frame, "token")
    assert decoded is not None, "a common frame must not fall back"
    assert decoded == generic_decode(frame, "token")
    assert decoded[1] == dataclasses.replace(request, correlation="token")


@settings(max_examples=300, deadline=None)
@given(
    request=commit_requests(),
    cut=st.integers(0, 200),
    flip=st.tuples(st.integers(0, 400), st.integers(1, 255)),
    data=st.data(),
)
def test_damaged_frames_fall_back_or_agree(
    request: OffsetCommitRequest, cut: int, flip: tuple[int, int], data: st.DataObject
) -> None:
    frame = bytearray(frame_of(request, 7, "c"))
    if data.draw(st.booleans()):
        del frame[len(frame) - min(cut, len(frame)) :]
    elif frame:
        at, mask = flip
        frame[at % len(frame)] ^= mask
    decoded = decode_offset_commit_request(bytes(frame), "token")
    if decoded is None:
        return  # the generic path answers (or refuses) it, as before
    assert decoded == generic_decode(bytes(frame), "token")


def test_what_the_codec_leaves_to_the_generic_path() -> None:
    base = OffsetCommitRequest(
        version=8,
        group_id="g",
        topics=(
            OffsetCommitRequestTopic(
                name="t",
                partitions=(OffsetCommitRequestPartition(partition_index=0, committed_offset=1),),
            ),
        ),
    )
    assert decode_offset_commit_request(frame_of(base, 1, "c")) is not None
    long_group = dataclasses.replace(base, group_id="g" * 200)
    assert decode_offset_commit_request(frame_of(long_group, 1, "c")) is None  # 2-byte varint
    assert decode_offset_commit_request(frame_of(base, 1, "c") + b"\x00") is None  # trailing
    retained = dataclasses.replace(base, version=2, retention_time_ms=60_000)
    assert decode_offset_commit_request(frame_of(retained, 1, "c")) is None  # kio's timedelta
    v1 = frame_of(dataclasses.replace(base, version=2), 1, "c")
    assert decode_offset_commit_request(v1[:2] + b"\x00\x01" + v1[4:]) is None  # v1 layout


@settings(max_examples=300, deadline=None)
@given(
    version=versions,
    correlation_id=int32s,
    topics=st.lists(
        st.tuples(
            names,
            st.lists(st.tuples(int32s, st.sampled_from(ERROR_CLASSES)), max_size=4),
        ),
        max_size=3,
    ),
)
def test_responses_are_byte_identical(
    version: int, correlation_id: int, topics: list[tuple[str, list[tuple[int, Any]]]]
) -> None:
    response = OffsetCommitResponse(
        version=version,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=name,
                partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=i, error=e) for i, e in parts
                ),
            )
            for name, parts in topics
        ),
    )
    header = RequestHeader(api_key=8, api_version=version, correlation_id=correlation_id)
    expected = encode_response(header, to_kio_response(response))
    assert encode_offset_commit_response(correlation_id, response) == expected
