"""KIP-415 delayed imbalance resolution: the assignor option, property-tested round by round,
and end to end with members and the real coordinator."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from member_harness import Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor
from groupcoord.assignors.delayed_imbalance import (
    DelayedImbalance,
    decode_scheduled_delay,
    encode_scheduled_delay,
)
from groupcoord.errors import InvalidAssignorInput
from groupcoord.protocol import decode_assignment, encode_subscription
from groupcoord.types import Assignment, Subscription, TopicPartition

DELAY = 10_000


class Group:
    """Members of one group and what each owns, driven one rebalance at a time."""

    def __init__(self, assignor: CooperativeStickyAssignor, partitions: int) -> None:
        self.assignor = assignor
        self.ppt = {"t": partitions}
        self.owned: dict[str, frozenset[TopicPartition]] = {}
        self.instance: dict[str, str | None] = {}
        self.generation = 0

    def add(self, member_id: str, instance: str | None) -> None:
        self.owned[member_id] = frozenset()
        self.instance[member_id] = instance

    def remove(self, member_id: str) -> None:
        del self.owned[member_id]
        del self.instance[member_id]

    def rebalance(self, now_ms: int) -> dict[str, Assignment]:
        subs = {
            m: Subscription(
                ["t"],
                owned_partitions=sorted(self.owned[m]),
                generation_id=self.generation if self.owned[m] else -1,
                group_instance_id=self.instance[m],
            )
            for m in self.owned
        }
        result = self.assignor.assign(self.ppt, subs, now_ms=now_ms)
        self.generation += 1
        for m, a in result.items():
            self.owned[m] = frozenset(a.partitions)
        return result

    def assigned(self) -> frozenset[TopicPartition]:
        return frozenset(tp for ps in self.owned.values() for tp in ps)


def _everything(partitions: int) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition("t", p) for p in range(partitions))


group_shapes = st.tuples(
    st.integers(1, 24),  # partitions
    st.integers(2, 5),  # static members
    st.integers(0, 2),  # dynamic members
)


def _settled_group(partitions: int, statics: int, dynamics: int) -> Group:
    group = Group(CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=DELAY), partitions)
    for i in range(statics):
        group.add(f"s{i}", f"inst-{i}")
    for i in range(dynamics):
        group.add(f"d{i}", None)
    for _ in range(3):
        group.rebalance(0)
    assert group.assigned() == _everything(partitions)
    return group


@settings(max_examples=60, deadline=None)
@given(
    shape=group_shapes,
    which=st.integers(0, 4),
    times=st.lists(st.integers(0, DELAY - 1), min_size=1, max_size=4),
)
def test_departed_static_members_partitions_go_to_nobody_before_the_delay(
    shape: tuple[int, int, int], which: int, times: list[int]
) -> None:
    group = _settled_group(*shape)
    departed = f"s{which % shape[1]}"
    theirs = group.owned[departed]
    group.remove(departed)
    start = 1_000  # the first rebalance without it notices the departure
    for t in [0, *sorted(times)]:
        result = group.rebalance(start + t)
        handed_out = {tp for a in result.values() for tp in a.partitions}
        assert not handed_out & theirs
        if theirs:
            delays = {decode_scheduled_delay(a.user_data) for a in result.values()}
            assert delays == {DELAY - t}
    group.rebalance(start + DELAY - 1)
    assert group.assigned() == _everything(shape[0]) - theirs


@settings(max_examples=60, deadline=None)
@given(shape=group_shapes, which=st.integers(0, 4), extra=st.integers(0, 5_000))
def test_after_the_delay_every_partition_is_assigned(
    shape: tuple[int, int, int], which: int, extra: int
) -> None:
    group = _settled_group(*shape)
    departed = f"s{which % shape[1]}"
    group.remove(departed)
    group.rebalance(1_000)
    later = 1_000 + DELAY + extra
    first = group.rebalance(later)
    assert all(a.user_data is None for a in first.values())
    group.rebalance(later + 1)  # the cooperative follow-up round
    assert group.assigned() == _everything(shape[0])
    sizes = [len(ps) for ps in group.owned.values()]
    assert max(sizes) - min(sizes) <= 1
    assert group.assignor.delayed_imbalance.pending() == {}


@settings(max_examples=60, deadline=None)
@given(shape=group_shapes, which=st.integers(0, 4), back_after=st.integers(0, DELAY - 1))
def test_a_return_within_the_delay_restores_exactly_its_partitions(
    shape: tuple[int, int, int], which: int, back_after: int
) -> None:
    group = _settled_group(*shape)
    index = which % shape[1]
    departed = f"s{index}"
    theirs = group.owned[departed]
    others = {m: ps for m, ps in group.owned.items() if m != departed}
    group.remove(departed)
    group.rebalance(1_000)
    group.add(f"s{index}-restarted", f"inst-{index}")  # a new member id, the same instance
    result = group.rebalance(1_000 + back_after)
    assert frozenset(result[f"s{index}-restarted"].partitions) == theirs
    assert {m: group.owned[m] for m in others} == others
    assert all(a.user_data is None for a in result.values())


@settings(max_examples=60, deadline=None)
@given(
    shape=group_shapes,
    steps=st.lists(st.tuples(st.booleans(), st.integers(0, 20)), min_size=1, max_size=6),
)
def test_without_departed_static_members_it_equals_plain_cooperative_sticky(
    shape: tuple[int, int, int], steps: list[tuple[bool, int]]
) -> None:
    partitions, statics, dynamics = shape
    delayed = Group(CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=DELAY), partitions)
    plain = Group(CooperativeStickyAssignor(), partitions)
    for g in (delayed, plain):
        for i in range(statics):
            g.add(f"s{i}", f"inst-{i}")
        for i in range(dynamics):
            g.add(f"d{i}", None)
    now = 0
    for join, n in steps:
        # churn among dynamic members only (static ones never leave here)
        for g in (delayed, plain):
            name = f"x{n}"
            if join and name not in g.owned:
                g.add(name, None)
            elif not join and name in g.owned:
                g.remove(name)
        now += 100
        a = delayed.rebalance(now)
        b = plain.assignor.assign(
            plain.ppt,
            {
                m: Subscription(
                    ["t"],
                    owned_partitions=sorted(plain.owned[m]),
                    generation_id=plain.generation if plain.owned[m] else -1,
                    group_instance_id=plain.instance[m],
                )
                for m in plain.owned
            },
        )
        plain.generation += 1
        for m, x in b.items():
            plain.owned[m] = frozenset(x.partitions)
        assert a == b


def test_delay_needs_the_time_and_zero_delay_keeps_the_old_signature() -> None:
    subs = {"m": Subscription(["t"])}
    with pytest.raises(InvalidAssignorInput, match="now_ms"):
        CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=5).assign({"t": 1}, subs)
    plain = CooperativeStickyAssignor().assign({"t": 2}, subs)
    assert plain["m"].partitions == (TopicPartition("t", 0), TopicPartition("t", 1))
    with pytest.raises(ValueError):
        CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=-1)
    with pytest.raises(TypeError):
        DelayedImbalance(1.5)  # type: ignore[arg-type]


def test_assign_encoded_applies_the_delay_and_writes_it_in_the_user_data() -> None:
    assignor = CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=DELAY)
    subs = {
        "a": encode_subscription(Subscription(["t"]), 3),
        "b": encode_subscription(Subscription(["t"]), 3),
    }
    ids = {"a": "ia", "b": "ib"}
    first = assignor.assign_encoded({"t": 4}, subs, ids, now_ms=0)
    owned_b = decode_assignment(first["b"]).partitions
    assert owned_b
    second = assignor.assign_encoded(
        {"t": 4},
        {
            "a": encode_subscription(
                Subscription(["t"], list(decode_assignment(first["a"]).partitions), 1), 3
            )
        },
        {"a": "ia"},
        now_ms=500,
    )
    got = decode_assignment(second["a"])
    assert not set(got.partitions) & set(owned_b)
    assert decode_scheduled_delay(got.user_data) == DELAY


def test_user_data_codec_round_trips_and_ignores_foreign_bytes() -> None:
    assert decode_scheduled_delay(encode_scheduled_delay(1234)) == 1234
    assert decode_scheduled_delay(None) is None and decode_scheduled_delay(b"") is None
    assert decode_scheduled_delay(b"\x00\x00\x00\x01") is None  # a cooperative generation
    assert decode_scheduled_delay(b"\x00\x07\x00\x00\x00\x01") is None  # unknown version
    with pytest.raises(ValueError):
        encode_scheduled_delay(-1)


# --------------------------------------------------------------------- end to end


def _static_cluster(delay_ms: int) -> Cluster:
    cluster = Cluster({"t": 6})
    for name in "abc":
        cluster.add(
            name,
            member_config(
                ["t"],
                [CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=delay_ms)],
                group_instance_id=f"inst-{name}",
            ),
        )
    cluster.run_for(3_000)
    assert cluster.is_settled()
    return cluster


def _non_leader(cluster: Cluster) -> str:
    return next(m.name for m in cluster.live() if not m.machine.is_leader)


def test_members_hold_a_departed_static_members_partitions_then_rebalance_after_the_delay() -> None:
    cluster = _static_cluster(5_000)
    victim = _non_leader(cluster)
    theirs = cluster.members[victim].machine.assignment
    cluster.kill(victim)
    cluster.run_for(2_000)  # session (1 s) expired: rebalanced without the victim
    held = cluster.all_partitions() - {tp for m in cluster.live() for tp in m.machine.assignment}
    assert held == theirs
    cluster.run_for(5_000)  # the scheduled rejoin fires; the leader hands them out
    assert cluster.is_settled()


def test_a_static_member_back_within_the_delay_gets_its_partitions_back() -> None:
    cluster = _static_cluster(8_000)
    victim = _non_leader(cluster)
    theirs = cluster.members[victim].machine.assignment
    cluster.kill(victim)
    cluster.run_for(2_500)
    back = cluster.add(
        victim,
        member_config(
            ["t"],
            [CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=8_000)],
            group_instance_id=f"inst-{victim}",
        ),
    )
    cluster.run_for(2_000)
    assert back.machine.assignment == theirs
    assert cluster.is_settled()
    revoked = [d for d in cluster.delivered if d.call.kind.value == "revoked"]
    assert revoked == []  # nobody had to give anything up
