"""Consumer-protocol payload codecs: golden bytes, kafka-python differential, properties."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor as KPCoop
from kafka.coordinator.assignors.range import RangePartitionAssignor as KPRange
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor as KPSticky
from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData as KPStickyData
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KPAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KPSubscription
from kafka.structs import TopicPartition as KPTopicPartition

from groupcoord.errors import InvalidPayload
from groupcoord.protocol import (
    ASSIGNMENT_MAX_VERSION,
    SUBSCRIPTION_MAX_VERSION,
    decode_assignment,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    encode_subscription,
)
from groupcoord.types import Assignment, Subscription, TopicPartition

TP = TopicPartition
Groups = list[tuple[str, list[int]]]

# --------------------------------------------------------------------------- strategies

int32s = st.integers(-(2**31), 2**31 - 1)
# Mostly Kafka-like names, sometimes arbitrary text (non-ASCII, empty); never surrogates.
topics = st.one_of(st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True), st.text(max_size=8))
user_datas = st.none() | st.binary(max_size=24)
racks = st.none() | topics
sub_versions = st.integers(0, SUBSCRIPTION_MAX_VERSION)
asg_versions = st.integers(0, ASSIGNMENT_MAX_VERSION)
# Topic groups as the wire carries them. Unique topics and non-empty partition lists: the
# only groupings a flat partition list can produce (our encoders group by topic).
groupings = st.lists(
    st.tuples(topics, st.lists(int32s, min_size=1, max_size=6)),
    max_size=6,
    unique_by=lambda g: g[0],
)
partition_lists = st.lists(st.builds(TP, topics, int32s), max_size=12)


def flatten(groups: Groups) -> list[TopicPartition]:
    return [TP(t, p) for t, ps in groups for p in ps]


def group_first_seen(partitions: Sequence[TopicPartition]) -> Groups:
    groups: dict[str, list[int]] = {}
    for t, p in partitions:
        groups.setdefault(t, []).append(p)
    return list(groups.items())


@st.composite
def subscriptions(draw: st.DrawFn, owned: st.SearchStrategy[Any] = partition_lists) -> Subscription:
    return Subscription(
        topics=draw(st.lists(topics, max_size=8)),
        owned_partitions=draw(owned),
        generation_id=draw(int32s),
        rack_id=draw(racks),
        user_data=draw(user_datas),
    )


def expected_after_round_trip(sub: Subscription, version: int) -> Subscription:
    """What decode(encode(sub, version)) must give: fields of that version, owned
    partitions regrouped by topic (first appearance), no group_instance_id."""
    return Subscription(
        topics=sub.topics,
        owned_partitions=flatten(group_first_seen(sub.owned_partitions)) if version >= 1 else (),
        generation_id=sub.generation_id if version >= 2 else -1,
        rack_id=sub.rack_id if version >= 3 else None,
        user_data=sub.user_data,
    )


def kp_subscription(sub: Subscription, groups: Groups, version: int) -> KPSubscription:
    return KPSubscription(
        version=version,
        topics=list(sub.topics),
        user_data=sub.user_data,
        owned_partitions=[
            KPSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in groups
        ],
        generation_id=sub.generation_id,
        rack_id=sub.rack_id,
    )


# --------------------------------------------------------------------------- golden bytes


def test_golden_subscription_v0() -> None:
    golden = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
    assert encode_subscription(Subscription(["t"]), 0) == golden
    assert decode_subscription(golden) == Subscription(["t"])


def test_golden_subscription_v3() -> None:
    sub = Subscription(
        ["t"], [TP("a", 1), TP("a", 2)], generation_id=5, rack_id="r", user_data=b"x"
    )
    golden = (
        b"\x00\x03"  # version
        b"\x00\x00\x00\x01\x00\x01t"  # topics ["t"]
        b"\x00\x00\x00\x01x"  # user_data b"x"
        b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"  # a: [1, 2]
        b"\x00\x00\x00\x05"  # generation_id
        b"\x00\x01r"  # rack_id
    )
    assert encode_subscription(sub, 3) == golden
    assert encode_subscription(sub) == golden  # 3 is the default
    assert decode_subscription(golden) == sub


def test_golden_subscription_versions_drop_fields() -> None:
    sub = Subscription(["t"], [TP("a", 7)], generation_id=9, rack_id=None)
    v0 = b"\x00\x00\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"
    owned = b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x01\x00\x00\x00\x07"
    assert encode_subscription(sub, 0) == v0
    assert encode_subscription(sub, 1) == b"\x00\x01" + v0[2:] + owned
    assert encode_subscription(sub, 2) == b"\x00\x02" + v0[2:] + owned + b"\x00\x00\x00\x09"
    assert encode_subscription(sub, 3) == (
        b"\x00\x03" + v0[2:] + owned + b"\x00\x00\x00\x09" + b"\xff\xff"
    )


def test_golden_assignment() -> None:
    body = (
        b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02\xff\xff\xff\xff"
    )
    for version in range(4):
        golden = bytes([0, version]) + body
        assert encode_assignment(Assignment([TP("a", 1), TP("a", 2)]), version) == golden
        assert decode_assignment(golden) == Assignment((TP("a", 1), TP("a", 2)))
    empty = b"\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00"
    assert encode_assignment(Assignment([], b"")) == empty
    assert decode_assignment(empty) == Assignment((), b"")


def test_golden_user_data() -> None:
    v0 = b"\x00\x00\x00\x01\x00\x01a\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x02"
    assert encode_sticky_user_data([TP("a", 1), TP("a", 2)], None) == v0
    assert encode_sticky_user_data([TP("a", 1), TP("a", 2)], 7) == v0 + b"\x00\x00\x00\x07"
    assert decode_sticky_user_data(v0) == ([TP("a", 1), TP("a", 2)], None)
    assert decode_sticky_user_data(v0 + b"\x00\x00\x00\x07") == ([TP("a", 1), TP("a", 2)], 7)
    assert encode_sticky_user_data([], None) == b"\x00\x00\x00\x00"
    assert encode_cooperative_user_data(-1) == b"\xff\xff\xff\xff"
    assert decode_cooperative_user_data(b"\x00\x00\x01\x00") == 256


def test_grouping_is_by_first_appearance_and_keeps_partition_order() -> None:
    a = Assignment([TP("b", 3), TP("a", 2), TP("b", 1), TP("a", 0)])
    decoded = decode_assignment(encode_assignment(a))
    assert list(decoded.partitions) == [TP("b", 3), TP("b", 1), TP("a", 2), TP("a", 0)]
    assert Counter(decoded.partitions) == Counter(a.partitions)


def test_non_ascii_strings() -> None:
    sub = Subscription(["topic-é", "话题"], [TP("ü", 1)], rack_id="räck")
    assert decode_subscription(encode_subscription(sub)) == sub
    # lengths are in UTF-8 bytes, not characters
    assert encode_subscription(Subscription(["é"]), 0)[6:9] == b"\x00\x02\xc3"


# --------------------------------------------------------------------------- kafka-python


@given(subscriptions(owned=st.just(())), groupings, sub_versions)
def test_subscription_bytes_equal_kafka_python(base: Subscription, groups: Groups, v: int) -> None:
    sub = Subscription(
        base.topics, flatten(groups), base.generation_id, base.rack_id, user_data=base.user_data
    )
    ours = encode_subscription(sub, v)
    theirs = kp_subscription(sub, groups, v).encode()
    assert ours == theirs
    assert decode_subscription(theirs) == expected_after_round_trip(sub, v)
    back = KPSubscription.decode(ours)
    assert (back.version, back.topics, back.user_data) == (v, list(sub.topics), sub.user_data)
    if v >= 1:
        assert [(g.topic, g.partitions) for g in back.owned_partitions] == groups
    if v >= 2:
        assert back.generation_id == sub.generation_id
    if v >= 3:
        assert back.rack_id == sub.rack_id


@given(groupings, user_datas, asg_versions)
def test_assignment_bytes_equal_kafka_python(
    groups: Groups, user_data: bytes | None, v: int
) -> None:
    a = Assignment(flatten(groups), user_data)
    ours = encode_assignment(a, v)
    theirs = KPAssignment(version=v, assigned_partitions=groups, user_data=user_data).encode()
    assert ours == theirs
    assert decode_assignment(theirs) == Assignment(tuple(flatten(groups)), user_data)
    back = KPAssignment.decode(ours)
    assert back.version == v
    assert [(g.topic, g.partitions) for g in back.assigned_partitions] == groups
    assert back.user_data == user_data


@given(groupings, st.none() | int32s)
def test_sticky_user_data_equals_kafka_python(groups: Groups, generation: int | None) -> None:
    ours = encode_sticky_user_data(flatten(groups), generation)
    if generation is None:
        theirs = KPStickyData(version=0, previous_assignment=groups).encode(header=False)
    else:
        theirs = KPStickyData(version=1, previous_assignment=groups, generation=generation).encode(
            header=False
        )
    assert ours == theirs
    assert decode_sticky_user_data(theirs) == (flatten(groups), generation)
    back = KPStickyData.decode(ours, version=0 if generation is None else 1, header=False)
    assert [(g.topic, g.partitions) for g in back.previous_assignment] == groups


def test_kafka_python_sticky_assignor_prefixes_its_user_data_with_a_version() -> None:
    """kafka-python 3.0.12's StickyPartitionAssignor embeds its user data with an int16
    version header, which Java's StickyAssignor does not write (nor read): the rest is
    the V1 layout. Our decoder, like Java's, does not accept the prefixed form."""
    owned = [KPTopicPartition("a", 1), KPTopicPartition("a", 2)]
    meta = KPSticky._metadata(["a"], owned, 7)
    user_data = KPSubscription.decode(meta.encode()).user_data
    assert user_data[:2] == b"\x00\x01"
    assert user_data[2:] == encode_sticky_user_data([TP("a", 1), TP("a", 2)], 7)
    with pytest.raises(InvalidPayload):
        decode_sticky_user_data(user_data)


def test_decodes_kafka_python_assignor_metadata() -> None:
    # Range/round-robin send v0 with empty (not null) user data.
    assert decode_subscription(KPRange.metadata(["b", "a"]).encode()) == Subscription(
        ["b", "a"], user_data=b""
    )
    # Cooperative-sticky sends v1: owned partitions, no generation (so -1).
    coop = KPCoop()
    coop.member_assignment = [KPTopicPartition("b", 2), KPTopicPartition("a", 1)]
    sub = decode_subscription(coop.metadata(["z", "a"]).encode())
    assert sub.topics == ("a", "z")
    assert sorted(sub.owned_partitions) == [TP("a", 1), TP("b", 2)]
    assert sub.generation_id == -1


# --------------------------------------------------------------------------- round trips


@given(subscriptions(), sub_versions)
def test_subscription_round_trip(sub: Subscription, v: int) -> None:
    data = encode_subscription(sub, v)
    decoded = decode_subscription(data)
    assert decoded == expected_after_round_trip(sub, v)
    if v >= 1:
        assert Counter(decoded.owned_partitions) == Counter(sub.owned_partitions)
    assert encode_subscription(decoded, v) == data  # decoded payloads re-encode exactly


@given(partition_lists, user_datas, asg_versions)
def test_assignment_round_trip(parts: list[TopicPartition], ud: bytes | None, v: int) -> None:
    data = encode_assignment(Assignment(parts, ud), v)
    decoded = decode_assignment(data)
    assert isinstance(decoded.partitions, tuple)
    assert list(decoded.partitions) == flatten(group_first_seen(parts))
    assert Counter(decoded.partitions) == Counter(parts)
    assert decoded.user_data == ud
    assert encode_assignment(decoded, v) == data


@given(partition_lists, st.none() | int32s)
def test_sticky_round_trip(parts: list[TopicPartition], generation: int | None) -> None:
    data = encode_sticky_user_data(iter(parts), generation)  # any iterable
    decoded, gen = decode_sticky_user_data(data)
    assert decoded == flatten(group_first_seen(parts))
    assert gen == generation


@given(int32s)
def test_cooperative_round_trip(generation: int) -> None:
    assert decode_cooperative_user_data(encode_cooperative_user_data(generation)) == generation


def test_decoders_accept_bytes_like_input() -> None:
    data = encode_subscription(Subscription(["t"], [TP("t", 0)]))
    expected = decode_subscription(data)
    assert decode_subscription(bytearray(data)) == expected
    assert decode_subscription(memoryview(data)) == expected
    assert decode_subscription(memoryview(b"xx" + data)[2:]) == expected
    interleaved = bytes(b for x in data for b in (x, 0))
    assert decode_subscription(memoryview(interleaved)[::2]) == expected  # not contiguous


# --------------------------------------------------------------------------- bad input


def raises_only_invalid_payload(decode: Callable[[bytes], object], data: object) -> bool:
    """True if decode accepted data, False if it raised InvalidPayload; anything else fails."""
    try:
        decode(data)  # type: ignore[arg-type]
    except InvalidPayload:
        return False
    except Exception as exc:  # pragma: no cover - the failure we are testing for
        pytest.fail(f"{decode.__name__} raised {type(exc).__name__}: {exc!r}")
    return True


DECODERS = [
    decode_subscription,
    decode_assignment,
    decode_sticky_user_data,
    decode_cooperative_user_data,
]


@pytest.mark.parametrize("decode", DECODERS)
@pytest.mark.parametrize("data", [None, "text", 42, [0, 0], object(), b"", b"\x00"])
def test_non_bytes_and_empty_input(decode: Callable[[bytes], object], data: object) -> None:
    with pytest.raises(InvalidPayload):
        decode(data)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff", "unsupported version -1"),
        (b"\x80\x00", "unsupported version -32768"),
        (b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff", "not nullable"),  # null topics array
        (b"\x00\x00\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff", "not nullable"),  # null topic
        (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe", "length is -2"),  # user_data
        (b"\x00\x00\x7f\xff\xff\xff", "count 2147483647"),  # no 2^31 allocation
        (b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe\xff\xff\xff\xff", "UTF-8"),
        (b"\x00\x00\x00\x00\x00\x01\x00\x05ab", "truncated"),
        (b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05ab", "truncated"),
        (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x00", "trailing"),  # v0 + 1 byte
        (b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff", "truncated owned_partitions"),
        (
            b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x01\x00\x00\xff\xff\xff\xff",
            "not nullable",
        ),
        (b"\x00\x03\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x07", "rack_id"),
        (b"\x00\x03\x00\x00\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00\x00\x00\x07\xff\xfe", "-2"),
    ],
)
def test_malformed_subscriptions(data: bytes, message: str) -> None:
    with pytest.raises(InvalidPayload, match=message):
        decode_subscription(data)


def test_malformed_assignments_and_user_data() -> None:
    with pytest.raises(InvalidPayload, match="not nullable"):
        decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00\x01a\xff\xff\xff\xff\xff\xff\xff\xff")
    with pytest.raises(InvalidPayload, match="trailing"):
        decode_assignment(b"\x00\x03\x00\x00\x00\x00\xff\xff\xff\xff\x00")
    v1 = encode_sticky_user_data([TP("a", 1)], 3)
    with pytest.raises(InvalidPayload, match="expected 0 or 4"):
        decode_sticky_user_data(v1 + b"\x00")  # 5 bytes after the body: neither V0 nor V1
    with pytest.raises(InvalidPayload, match="expected 0 or 4"):
        decode_sticky_user_data(v1[:-1])
    with pytest.raises(InvalidPayload, match="trailing"):
        decode_cooperative_user_data(b"\x00\x00\x00\x01\x00")


def test_newer_versions_are_read_as_v3_and_trailing_fields_ignored() -> None:
    sub = Subscription(["t"], [TP("t", 1)], generation_id=4, rack_id="r", user_data=b"u")
    v3 = encode_subscription(sub, 3)
    v9 = b"\x00\x09" + v3[2:] + b"new fields"
    assert decode_subscription(v9) == sub
    with pytest.raises(InvalidPayload, match="rack_id"):
        decode_subscription(b"\x00\x09" + v3[2:-3])  # v4+ still needs every v3 field
    a = encode_assignment(Assignment([TP("t", 1)], b"u"))
    assert decode_assignment(b"\x7f\xff" + a[2:] + b"\x00") == Assignment((TP("t", 1),), b"u")


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_garbage_raises_only_invalid_payload(data: bytes) -> None:
    for decode in DECODERS:
        raises_only_invalid_payload(decode, data)


@given(subscriptions(), sub_versions, st.none() | int32s)
def test_truncated_payloads_raise_invalid_payload(
    sub: Subscription, v: int, generation: int | None
) -> None:
    data = encode_subscription(sub, v)
    for end in range(len(data)):
        assert not raises_only_invalid_payload(decode_subscription, data[:end])
    asg = encode_assignment(Assignment(sub.owned_partitions, sub.user_data), min(v, 3))
    for end in range(len(asg)):
        assert not raises_only_invalid_payload(decode_assignment, asg[:end])
    sticky = encode_sticky_user_data(sub.owned_partitions, generation)
    body_len = len(encode_sticky_user_data(sub.owned_partitions, None))
    for end in range(len(sticky)):
        # a V1 payload cut after its body is a valid V0 payload
        assert raises_only_invalid_payload(decode_sticky_user_data, sticky[:end]) == (
            end == body_len
        )


@given(subscriptions(), sub_versions, st.data())
def test_mutated_payloads_decode_canonically_or_raise_invalid_payload(
    sub: Subscription, v: int, data: st.DataObject
) -> None:
    payload = bytearray(encode_subscription(sub, v))
    i = data.draw(st.integers(0, len(payload) - 1))
    payload[i] = data.draw(st.integers(0, 255))
    assume(bytes(payload) != encode_subscription(sub, v))
    try:
        decoded = decode_subscription(bytes(payload))
    except InvalidPayload:
        return
    version = struct.unpack_from(">h", payload)[0]
    if version <= SUBSCRIPTION_MAX_VERSION:
        # anything a known version accepts is exactly what we would have written
        assert encode_subscription(decoded, version) == payload
    for decode in DECODERS[1:]:
        raises_only_invalid_payload(decode, bytes(payload))


# --------------------------------------------------------------------------- encoder arguments


@pytest.mark.parametrize("version", [-1, 4, 2**15])
def test_encoders_reject_versions_out_of_range(version: int) -> None:
    with pytest.raises(ValueError, match="version"):
        encode_subscription(Subscription(["t"]), version)
    with pytest.raises(ValueError, match="version"):
        encode_assignment(Assignment([]), version)


def test_encoders_reject_bad_arguments() -> None:
    with pytest.raises(TypeError):
        encode_subscription(Subscription(["t"]), True)
    with pytest.raises(TypeError):
        encode_subscription(Subscription(["t"]), "3")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_subscription(Assignment([]))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        encode_assignment(Subscription(["t"]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partition"):
        encode_assignment(Assignment([TP("t", "0")]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partition"):
        encode_assignment(Assignment([TP("t", 1.0)]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="partition"):
        encode_assignment(Assignment([TP("t", True)]))
    with pytest.raises(ValueError, match="int32"):
        encode_assignment(Assignment([TP("t", 2**31)]))
    with pytest.raises(ValueError, match="int32"):
        encode_subscription(Subscription(["t"], [TP("t", -(2**31) - 1)]), 1)
    with pytest.raises(TypeError, match="topic"):
        encode_assignment(Assignment([TP(b"t", 0)]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pairs"):
        encode_assignment(Assignment([("t", 0, 1)]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="32767"):
        encode_subscription(Subscription(["x" * 32768]), 0)
    with pytest.raises(ValueError, match="UTF-8"):
        encode_subscription(Subscription(["\ud800"]), 0)
    with pytest.raises(ValueError, match="int32"):
        encode_sticky_user_data([], 2**31)
    with pytest.raises(TypeError):
        encode_sticky_user_data("ab", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="int32"):
        encode_cooperative_user_data(-(2**31) - 1)
    # a topic of exactly 32767 bytes is fine
    assert decode_subscription(encode_subscription(Subscription(["x" * 32767]), 0)).topics == (
        "x" * 32767,
    )


def test_owned_partitions_are_left_out_before_v1() -> None:
    # not validated either: v0 does not carry them
    sub = Subscription(["t"], [TP("t", 2**40)])
    assert decode_subscription(encode_subscription(sub, 0)) == Subscription(["t"])
