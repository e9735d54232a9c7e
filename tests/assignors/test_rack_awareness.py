"""KIP-881 rack-aware classic assignors (range, sticky, cooperative-sticky).

The Rust core and the reference agree with racks too; racks never change balance; racks
that match nothing change nothing; and the Java behaviours we copy hold on small,
hand-checked groups.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from assign_checks import check_balanced, check_valid, next_round
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rack_checks import RackedGroup, racked_groups, wrong_partition_racks

from groupcoord import (
    Assignor,
    CooperativeStickyAssignor,
    RangeAssignor,
    StickyAssignor,
    Subscription,
    TopicPartition,
)
from groupcoord.protocol import encode_subscription

RACK_AWARE = [RangeAssignor, StickyAssignor, CooperativeStickyAssignor]
TP = TopicPartition


def as_lists(result: dict[str, Any]) -> dict[str, list[TopicPartition]]:
    return {m: list(a.partitions) for m, a in result.items()}


@pytest.mark.parametrize("cls", RACK_AWARE)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=40, max_topics=8, max_partitions=40))
def test_rust_and_reference_agree_with_racks(cls: type[Assignor], racked: RackedGroup) -> None:
    g = racked.group
    rust = cls(backend="rust").assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    python = cls(backend="python").assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    assert as_lists(rust) == as_lists(python)


@pytest.mark.parametrize("cls", RACK_AWARE)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=20, max_topics=6, max_partitions=30))
def test_rust_and_reference_agree_on_bytes_with_racks(
    cls: type[Assignor], racked: RackedGroup
) -> None:
    g = racked.group
    # v3 carries rack_id; the racks must reach both backends through the bytes
    encoded = {m: encode_subscription(s, 3) for m, s in g.subscriptions.items()}
    rust = cls(backend="rust").assign_encoded(
        g.partitions_per_topic, encoded, partition_racks=racked.partition_racks
    )
    python = cls(backend="python").assign_encoded(
        g.partitions_per_topic, encoded, partition_racks=racked.partition_racks
    )
    assert rust == python
    decoded = cls(backend="rust").assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    from groupcoord.protocol import decode_assignment

    assert {m: list(decode_assignment(b).partitions) for m, b in rust.items()} == as_lists(decoded)


@pytest.mark.parametrize("cls", RACK_AWARE)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=30, max_topics=6, max_partitions=40, disjoint=True))
def test_racks_that_match_nothing_change_nothing(cls: type[Assignor], racked: RackedGroup) -> None:
    g = racked.group
    plain = {m: replace(s, rack_id=None) for m, s in g.subscriptions.items()}
    with_racks = cls().assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    assert as_lists(with_racks) == as_lists(cls().assign(g.partitions_per_topic, plain))


@pytest.mark.parametrize("cls", [StickyAssignor, CooperativeStickyAssignor])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=30, max_topics=6, max_partitions=40))
def test_rack_preference_never_breaks_balance(cls: type[Assignor], racked: RackedGroup) -> None:
    g = racked.group
    assignor = cls()
    subs = g.subscriptions
    result = assignor.assign(g.partitions_per_topic, subs, partition_racks=racked.partition_racks)
    # cooperative holds back partitions in flight: judge the round where the group settles
    # (sticky settles at once; cooperative in as many rounds as without racks)
    rounds = 4 if cls is CooperativeStickyAssignor else 1
    for generation in range(1, rounds + 1):
        again = assignor.assign(
            g.partitions_per_topic,
            next_round(subs, result, generation),
            partition_racks=racked.partition_racks,
        )
        if as_lists(again) == as_lists(result):
            break
        subs, result = next_round(subs, result, generation), again
    else:
        pytest.fail(f"no fixed point in {rounds} rounds")
    check_valid(g.partitions_per_topic, subs, result)
    check_balanced(subs, result)
    if len({frozenset(s.topics) for s in subs.values()}) == 1:
        without = cls().assign(g.partitions_per_topic, subs)
        sizes = sorted(len(a.partitions) for a in result.values())
        assert sizes == sorted(len(a.partitions) for a in without.values())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=30, max_topics=6, max_partitions=40))
def test_range_keeps_its_per_topic_quotas_with_racks(racked: RackedGroup) -> None:
    g = racked.group
    result = RangeAssignor().assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    check_valid(g.partitions_per_topic, g.subscriptions, result)
    for topic, count in g.partitions_per_topic.items():
        subscribers = [m for m, s in g.subscriptions.items() if topic in s.topics]
        if not subscribers:
            continue
        got = sorted(sum(tp.topic == topic for tp in result[m].partitions) for m in subscribers)
        low, extra = divmod(count, len(subscribers))
        assert got == sorted([low + 1] * extra + [low] * (len(subscribers) - extra))


@pytest.mark.parametrize("cls", RACK_AWARE)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racked=racked_groups(max_members=20, max_topics=5, max_partitions=30), seed=st.integers())
def test_deterministic_whatever_the_input_order(
    cls: type[Assignor], racked: RackedGroup, seed: int
) -> None:
    g = racked.group
    rnd = random.Random(seed)
    members = list(g.subscriptions.items())
    rnd.shuffle(members)
    racks = list(racked.partition_racks.items())
    rnd.shuffle(racks)
    first = cls().assign(
        g.partitions_per_topic, g.subscriptions, partition_racks=racked.partition_racks
    )
    second = cls().assign(g.partitions_per_topic, dict(members), partition_racks=dict(racks))
    assert as_lists(first) == as_lists(second)


def test_sticky_members_give_up_partitions_they_are_not_local_to() -> None:
    """Java's racksMismatch rule: an owned partition on no replica of the owner's rack moves
    to a rack-local member when balance allows."""
    subs = {
        "a": Subscription(
            ["t"], owned_partitions=[TP("t", 0), TP("t", 1)], generation_id=1, rack_id="x"
        ),
        "b": Subscription(
            ["t"], owned_partitions=[TP("t", 2), TP("t", 3)], generation_id=1, rack_id="y"
        ),
    }
    racks = {
        TP("t", 0): frozenset({"x"}),
        TP("t", 1): frozenset({"y"}),
        TP("t", 2): frozenset({"x"}),
        TP("t", 3): frozenset({"y"}),
    }
    for backend in ("rust", "python"):
        result = StickyAssignor(backend=backend).assign({"t": 4}, subs, partition_racks=racks)
        assert as_lists(result) == {"a": [TP("t", 0), TP("t", 2)], "b": [TP("t", 1), TP("t", 3)]}


def test_range_follows_javas_rack_matching() -> None:
    """RangeAssignorTest-style case: 3 members on racks a, b, c; replicas of partition p on
    rack (p % 3). Without racks range gives [0, 1], [2, 3], [4, 5]; with racks each member
    takes its local partitions within the same per-topic quota."""
    racks = "abc"
    subs = {f"c{i}": Subscription(["t1", "t2"], rack_id=racks[i]) for i in range(3)}
    partition_racks = {TP(t, p): frozenset({racks[p % 3]}) for t in ("t1", "t2") for p in range(6)}
    for backend in ("rust", "python"):
        result = RangeAssignor(backend=backend).assign(
            {"t1": 6, "t2": 6}, subs, partition_racks=partition_racks
        )
        # co-partitioned: partition p of both topics to the same member
        assert as_lists(result) == {
            "c0": [TP("t1", 0), TP("t1", 3), TP("t2", 0), TP("t2", 3)],
            "c1": [TP("t1", 1), TP("t1", 4), TP("t2", 1), TP("t2", 4)],
            "c2": [TP("t1", 2), TP("t1", 5), TP("t2", 2), TP("t2", 5)],
        }


def test_a_member_without_a_rack_takes_what_racks_leave() -> None:
    subs = {
        "a": Subscription(["t"], rack_id="x"),
        "b": Subscription(["t"]),
        "c": Subscription(["t"], rack_id=""),
    }
    partition_racks = {
        TP("t", p): frozenset({"x"}) if p >= 4 else frozenset({"y"}) for p in range(6)
    }
    for cls in RACK_AWARE:
        result = cls().assign({"t": 6}, subs, partition_racks=partition_racks)
        assert set(result["a"].partitions) == {TP("t", 4), TP("t", 5)}, cls


def outcome(call: Callable[[], object]) -> tuple[str, object]:
    try:
        result = call()
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return "ok", as_lists(result) if isinstance(result, dict) else result  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", RACK_AWARE)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(racks=wrong_partition_racks())
def test_both_backends_refuse_wrong_racks_alike(cls: type[Assignor], racks: Any) -> None:
    ppt = {"a": 3, "b": 2}
    subs = {"m1": Subscription(["a", "b"], rack_id="r0"), "m2": Subscription(["a"], rack_id="r1")}
    rust = outcome(lambda: cls(backend="rust").assign(ppt, subs, partition_racks=racks))
    python = outcome(lambda: cls(backend="python").assign(ppt, subs, partition_racks=racks))
    assert rust == python
    if rust[0] != "ok":
        assert rust[0] == "InvalidAssignorInput", rust


def test_a_bare_string_of_racks_is_refused_by_name() -> None:
    from groupcoord.errors import InvalidAssignorInput

    for backend in ("rust", "python"):
        with pytest.raises(
            InvalidAssignorInput,
            match=r"racks of TopicPartition\(topic='t', partition=0\) must be a set",
        ):
            StickyAssignor(backend=backend).assign(
                {"t": 1},
                {"m": Subscription(["t"])},
                partition_racks={TP("t", 0): "r0"},  # type: ignore[dict-item]
            )


def test_round_robin_ignores_racks_as_javas_does() -> None:
    from groupcoord import RoundRobinAssignor

    subs = {"a": Subscription(["t"], rack_id="x"), "b": Subscription(["t"], rack_id="y")}
    racks = {TP("t", p): frozenset({"y"}) for p in range(4)}
    for backend in ("rust", "python"):
        assignor = RoundRobinAssignor(backend=backend)
        with_racks = assignor.assign({"t": 4}, subs, partition_racks=racks)
        assert as_lists(with_racks) == as_lists(assignor.assign({"t": 4}, subs))
