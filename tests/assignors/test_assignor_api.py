"""The public contract of the assignor classes (docs/architecture.md, "Data model and API
contract")."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import typing

import pytest

from groupcoord import (
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from groupcoord.errors import GroupcoordError, InvalidAssignorInput, InvalidPayload
from groupcoord.protocol import encode_sticky_user_data, encode_subscription

ALL = [RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor]
BACKENDS = ["rust", "python"]


def tps(*pairs: tuple[str, int]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in pairs]


def lists(result: dict[str, Assignment]) -> dict[str, list[TopicPartition]]:
    return {m: list(a.partitions) for m, a in result.items()}


def test_names_match_the_java_protocol_names() -> None:
    assert [c.name for c in ALL] == ["range", "roundrobin", "sticky", "cooperative-sticky"]
    assert [c().name for c in ALL] == ["range", "roundrobin", "sticky", "cooperative-sticky"]


def test_topic_partition_is_a_hashable_ordered_named_tuple() -> None:
    a, b = TopicPartition("a", 2), TopicPartition("a", 10)
    assert a < b and a.topic == "a" and a.partition == 2 and len({a, TopicPartition("a", 2)}) == 1


def test_subscription_refuses_a_bare_string_of_topics() -> None:
    with pytest.raises(TypeError, match="sequence of str"):
        Subscription("orders")  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", ALL)
def test_every_member_is_in_the_result_even_without_partitions(cls: type, backend: str) -> None:
    subs = {"a": Subscription(["t"]), "b": Subscription(["t"]), "c": Subscription(["other"])}
    result = cls(backend=backend).assign({"t": 1}, subs)
    assert set(result) == {"a", "b", "c"}
    assert all(isinstance(a, Assignment) for a in result.values())
    assert result["c"].partitions == ()


@pytest.mark.parametrize("backend", BACKENDS)
def test_range_gives_contiguous_ranges_and_the_remainder_to_the_first(backend: str) -> None:
    subs = {m: Subscription(["t0", "t1"]) for m in ("c1", "c0", "c2")}
    result = RangeAssignor(backend=backend).assign({"t0": 4, "t1": 3}, subs)
    assert lists(result) == {
        "c0": tps(("t0", 0), ("t0", 1), ("t1", 0)),
        "c1": tps(("t0", 2), ("t1", 1)),
        "c2": tps(("t0", 3), ("t1", 2)),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_range_orders_static_members_first_by_instance_id(backend: str) -> None:
    subs = {
        "a-dynamic": Subscription(["t"]),
        "b": Subscription(["t"], group_instance_id="zeta"),
        "c": Subscription(["t"], group_instance_id="alpha"),
    }
    result = RangeAssignor(backend=backend).assign({"t": 3}, subs)
    assert lists(result) == {"c": tps(("t", 0)), "b": tps(("t", 1)), "a-dynamic": tps(("t", 2))}


@pytest.mark.parametrize("backend", BACKENDS)
def test_roundrobin_skips_members_not_subscribed(backend: str) -> None:
    # kafka-python 3.0.12 raises KeyError on exactly this group.
    subs = {
        "c0": Subscription(["t0"]),
        "c1": Subscription(["t0", "t1"]),
        "c2": Subscription(["t1"]),
    }
    result = RoundRobinAssignor(backend=backend).assign({"t0": 3, "t1": 3}, subs)
    assert lists(result) == {
        # t0-2 skips c2 (not subscribed) and goes to c0; t1-2 skips c0 and goes to c1.
        "c0": tps(("t0", 0), ("t0", 2)),
        "c1": tps(("t0", 1), ("t1", 0), ("t1", 2)),
        "c2": tps(("t1", 1)),
    }


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", ALL)
def test_missing_topics_are_skipped_and_bad_claims_ignored(cls: type, backend: str) -> None:
    subs = {
        "a": Subscription(
            ["t", "ghost"], owned_partitions=tps(("t", 7), ("ghost", 0), ("t", -1)), generation_id=3
        ),
        "b": Subscription(["t"]),
    }
    result = cls(backend=backend).assign({"t": 2}, subs)
    assigned = sorted(tp for a in result.values() for tp in a.partitions)
    assert assigned == tps(("t", 0), ("t", 1))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    ("ppt", "subs", "match"),
    [
        ({"t": -1}, {"a": Subscription(["t"])}, "negative partition count"),
        ({"t": "3"}, {"a": Subscription(["t"])}, "must be an int"),
        ({"t": True}, {"a": Subscription(["t"])}, "must be an int"),
        ({"t": 1}, {"": Subscription(["t"])}, "non-empty"),
        ({"t": 1}, {"a": ["t"]}, "must be a Subscription"),
    ],
)
def test_bad_input_raises_a_typed_error(
    cls: type, backend: str, ppt: dict, subs: dict, match: str
) -> None:
    with pytest.raises(InvalidAssignorInput, match=match) as info:
        cls(backend=backend).assign(ppt, subs)
    assert isinstance(info.value, GroupcoordError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize(
    "claim", [("t",), ("t", "0"), ("t", True), (0, 0), "t0", ["t", 0], ("t", 2**31)]
)
def test_owned_partitions_must_be_str_int32_pairs(cls: type, backend: str, claim: object) -> None:
    # range and round-robin do not use owned partitions, but refuse bad ones alike
    sub = Subscription(["t"], owned_partitions=[claim], generation_id=1)  # type: ignore[list-item]
    with pytest.raises(InvalidAssignorInput, match=r"\(str, int32\) pairs"):
        cls(backend=backend).assign({"t": 1}, {"a": sub})


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        RangeAssignor(backend="java")  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", BACKENDS)
def test_sticky_reads_previous_ownership_from_user_data(backend: str) -> None:
    # Eager members send no owned_partitions: the sticky assignor reads its
    # StickyAssignorUserData V1 (partitions + generation) instead.
    subs = {
        "a": Subscription(["t"], user_data=encode_sticky_user_data(tps(("t", 2), ("t", 3)), 4)),
        "b": Subscription(["t"], user_data=encode_sticky_user_data(tps(("t", 0), ("t", 1)), 4)),
    }
    result = StickyAssignor(backend=backend).assign({"t": 4}, subs)
    assert lists(result) == {"a": tps(("t", 2), ("t", 3)), "b": tps(("t", 0), ("t", 1))}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
def test_unreadable_user_data_is_ignored_with_a_warning(
    cls: type, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A leader cannot refuse to assign; Java ignores user data it cannot parse too.
    subs = {"a": Subscription(["t"], user_data=b"\x00\x00\x00\x05xx"), "b": Subscription(["t"])}
    with caplog.at_level(logging.WARNING, logger="groupcoord.assignors"):
        result = cls(backend=backend).assign({"t": 4}, subs)
    assert sorted(len(a.partitions) for a in result.values()) == [2, 2]
    assert any("unreadable" in r.getMessage() and "a" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sticky_reads_kafka_python_version_prefixed_user_data(backend: str) -> None:
    # kafka-python 3.0.12's StickyPartitionAssignor puts an int16 version before the body.
    body = encode_sticky_user_data(tps(("t", 3)), 7)
    subs = {"kp": Subscription(["t"], user_data=b"\x00\x01" + body), "b": Subscription(["t"])}
    result = StickyAssignor(backend=backend).assign({"t": 4}, subs)
    assert TopicPartition("t", 3) in result["kp"].partitions


@pytest.mark.parametrize("backend", BACKENDS)
def test_highest_generation_wins_and_same_generation_claims_cancel(backend: str) -> None:
    subs = {
        "a": Subscription(["t"], owned_partitions=tps(("t", 0), ("t", 1)), generation_id=5),
        "b": Subscription(["t"], owned_partitions=tps(("t", 0)), generation_id=4),
        "c": Subscription(["t"], owned_partitions=tps(("t", 2)), generation_id=5),
        "d": Subscription(["t"], owned_partitions=tps(("t", 2)), generation_id=5),
    }
    result = StickyAssignor(backend=backend).assign({"t": 4}, subs)
    # a keeps t-0 (gen 5 beats gen 4), t-2 is nobody's: c and d claimed it in gen 5.
    assert TopicPartition("t", 0) in result["a"].partitions
    assert sorted(len(a.partitions) for a in result.values()) == [1, 1, 1, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_cooperative_withholds_a_moving_partition_for_one_round(backend: str) -> None:
    subs = {
        "a": Subscription(["t"], owned_partitions=tps(("t", 0), ("t", 1)), generation_id=1),
        "b": Subscription(["t"]),
    }
    first = CooperativeStickyAssignor(backend=backend).assign({"t": 2}, subs)
    assert lists(first) == {"a": tps(("t", 0)), "b": []}
    subs = {
        "a": Subscription(["t"], owned_partitions=tps(("t", 0)), generation_id=2),
        "b": Subscription(["t"], generation_id=2),
    }
    second = CooperativeStickyAssignor(backend=backend).assign({"t": 2}, subs)
    assert lists(second) == {"a": tps(("t", 0)), "b": tps(("t", 1))}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls", ALL)
def test_assign_encoded_decodes_to_what_assign_returns(cls: type, backend: str) -> None:
    from groupcoord.protocol import decode_assignment

    subs = {
        f"m{i}": Subscription(["a", "b"], owned_partitions=tps(("a", i)), generation_id=2)
        for i in range(4)
    }
    ppt = {"a": 5, "b": 3}
    assignor = cls(backend=backend)
    objects = assignor.assign(ppt, subs)
    encoded = assignor.assign_encoded(ppt, {m: encode_subscription(s, 3) for m, s in subs.items()})
    assert {m: sorted(decode_assignment(b).partitions) for m, b in encoded.items()} == {
        m: sorted(a.partitions) for m, a in objects.items()
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_encoded_answers_in_the_members_subscription_version(backend: str) -> None:
    subs = {
        "old": encode_subscription(Subscription(["t"]), 0),
        "new": encode_subscription(Subscription(["t"]), 3),
    }
    encoded = RangeAssignor(backend=backend).assign_encoded({"t": 2}, subs)
    assert encoded["old"][:2] == b"\x00\x00" and encoded["new"][:2] == b"\x00\x03"


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_encoded_uses_group_instance_ids_for_range_order(backend: str) -> None:
    subs = {m: encode_subscription(Subscription(["t"]), 1) for m in ("a", "b")}
    from groupcoord.protocol import decode_assignment

    plain = RangeAssignor(backend=backend).assign_encoded({"t": 2}, subs)
    static = RangeAssignor(backend=backend).assign_encoded(
        {"t": 2}, subs, group_instance_ids={"b": "i"}
    )
    assert list(decode_assignment(plain["a"]).partitions) == tps(("t", 0))
    assert list(decode_assignment(static["b"]).partitions) == tps(("t", 0))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "payload", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05ab", b"\xff\xff\x00\x00\x00\x00"]
)
def test_assign_encoded_rejects_garbage_with_invalid_payload(backend: str, payload: bytes) -> None:
    with pytest.raises(InvalidPayload, match=r"[\"']m[\"']"):
        StickyAssignor(backend=backend).assign_encoded({"t": 1}, {"m": payload})


def test_assignment_partitions_is_typed_and_built_as_a_tuple() -> None:
    # mypy --strict users read the field's declared type: it must say tuple, as the value is
    hints = typing.get_type_hints(Assignment)
    assert hints["partitions"] == tuple[TopicPartition, ...]
    built = Assignment([TopicPartition("t", 1)], bytearray(b"x"))
    assert built.partitions == (TopicPartition("t", 1),) and built.user_data == b"x"
    assert built == Assignment((TopicPartition("t", 1),), b"x")
    assert dataclasses.replace(built, user_data=None).partitions == built.partitions
    with pytest.raises(TypeError, match="sequence of TopicPartition"):
        Assignment("t0")  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", ALL)
def test_assignor_docstrings_document_the_backend_argument(cls: type) -> None:
    doc = inspect.getdoc(cls) or ""
    assert 'backend="rust"' in doc and 'backend="python"' in doc
