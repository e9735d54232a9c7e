"""The sans-IO client codec: numbering, matching, decoding whatever the chunking."""

from __future__ import annotations

import datetime
import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode
from kio.schema.heartbeat.v4.request import HeartbeatRequest as HeartbeatV4
from kio.schema.heartbeat.v4.response import HeartbeatResponse as HeartbeatResponseV4
from kio.static.primitive import i32, i32Timedelta

from groupcoord.protocol.client import ClientCodec
from groupcoord.protocol.wire import MalformedFrameError, decode_request, encode_response


def heartbeat(generation: int) -> HeartbeatV4:
    return HeartbeatV4(group_id="g", generation_id=i32(generation), member_id="m")


def answer(frame: bytes, error: int) -> bytes:
    """What a server sends back for one request frame."""
    header, _ = decode_request(frame[4:])
    if header.api_key == 18:
        return encode_response(
            header, ApiVersionsResponseV0(error_code=ErrorCode(error), api_keys=())
        )
    no_throttle = i32Timedelta.parse(datetime.timedelta(0))
    return encode_response(
        header, HeartbeatResponseV4(throttle_time=no_throttle, error_code=ErrorCode(error))
    )


@given(
    kinds=st.lists(st.booleans(), min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=12),
    order=st.randoms(use_true_random=False),
)
def test_responses_are_matched_to_their_requests_in_any_order_and_chunking(
    kinds: list[bool], cuts: list[int], order: random.Random
) -> None:
    codec = ClientCodec(client_id="c")
    sent = []
    for i, is_heartbeat in enumerate(kinds):
        request = heartbeat(i) if is_heartbeat else ApiVersionsV0()
        correlation_id, frame = codec.encode(request)
        sent.append((correlation_id, is_heartbeat, frame, 27 if is_heartbeat else 35))
    assert [c for c, *_ in sent] == list(range(1, len(kinds) + 1))
    assert codec.in_flight == len(kinds)
    replies = list(sent)
    order.shuffle(replies)
    stream = b"".join(answer(frame, error) for _, _, frame, error in replies)
    points = sorted({c for c in cuts if c < len(stream)} | {0, len(stream)})
    got = []
    for a, b in itertools.pairwise(points):
        got += codec.feed(stream[a:b])
    assert [r.correlation_id for r in got] == [c for c, *_ in replies]
    for received, (_, is_heartbeat, _, error) in zip(got, replies, strict=True):
        assert received.api_key == (12 if is_heartbeat else 18)
        assert received.response.error_code == ErrorCode(error)
    assert codec.in_flight == 0


def test_a_padded_response_is_read_and_the_stream_goes_on() -> None:
    codec = ClientCodec()
    _, first = codec.encode(heartbeat(1))
    _, second = codec.encode(heartbeat(2))
    padded = answer(first, 27)
    padded = (int.from_bytes(padded[:4], "big") + 3).to_bytes(4, "big") + padded[4:] + bytes(3)
    received = codec.feed(padded + answer(second, 0))
    assert [r.response.error_code for r in received] == [ErrorCode(27), ErrorCode(0)]
    assert codec.in_flight == 0


def test_a_response_to_nothing_in_flight_is_malformed() -> None:
    codec = ClientCodec()
    _, frame = codec.encode(ApiVersionsV0())
    reply = answer(frame, 0)
    codec.feed(reply)
    with pytest.raises(MalformedFrameError, match="unknown correlation id"):
        codec.feed(reply)


def test_requests_without_a_response_are_not_tracked() -> None:
    codec = ClientCodec()
    codec.encode(ApiVersionsV0(), expect_response=False)
    assert codec.in_flight == 0
