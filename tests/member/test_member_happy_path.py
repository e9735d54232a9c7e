"""Members join, sync and heartbeat against the real coordinator: eager and cooperative."""

from __future__ import annotations

import itertools

import pytest
from member_harness import Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor, StickyAssignor
from groupcoord.assignors.base import Assignor
from groupcoord.coordinator.messages import HeartbeatRequest, JoinGroupRequest
from groupcoord.member import CallbackKind, MemberState


def _calls(cluster: Cluster, member: str) -> list[tuple[str, list[int]]]:
    return [
        (d.call.kind.value, sorted(tp.partition for tp in d.call.partitions))
        for d in cluster.delivered
        if d.member == member
    ]


@pytest.mark.parametrize(
    "assignor", [RangeAssignor(), StickyAssignor(), CooperativeStickyAssignor()], ids=repr
)
def test_three_members_settle_on_a_full_balanced_assignment(assignor: Assignor) -> None:
    cluster = Cluster({"t": 7, "u": 3})
    for name in "abc":
        cluster.add(name, member_config(["t", "u"], [assignor]))
        cluster.run_for(1_500)
    assert cluster.is_settled()
    sizes = sorted(len(m.machine.assignment) for m in cluster.live())
    assert sum(sizes) == 10 and sizes[-1] - sizes[0] <= 1  # (range: 3+1, 2+1, 2+1)
    generation = cluster.coordinator_generation()
    assert all(m.machine.generation == generation for m in cluster.live())


def test_eager_member_revokes_everything_before_rejoining() -> None:
    cluster = Cluster({"t": 4})
    cluster.add("a", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(500)
    cluster.add("b", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(1_500)
    assert _calls(cluster, "a") == [
        ("assigned", [0, 1, 2, 3]),
        ("revoked", [0, 1, 2, 3]),
        ("assigned", [0, 1]),
    ]
    assert _calls(cluster, "b") == [("assigned", [2, 3])]


def test_cooperative_member_revokes_only_what_moves_then_rejoins() -> None:
    cluster = Cluster({"t": 4})
    cluster.add("a", member_config(["t"], [CooperativeStickyAssignor()]))
    cluster.run_for(500)
    generation_alone = cluster.members["a"].machine.generation
    cluster.add("b", member_config(["t"], [CooperativeStickyAssignor()]))
    cluster.run_for(1_500)
    a_calls = _calls(cluster, "a")
    assert a_calls[0] == ("assigned", [0, 1, 2, 3])
    revoked = [p for kind, ps in a_calls if kind == "revoked" for p in ps]
    assert len(revoked) == 2  # only the two partitions that move to b
    b_added = [p for kind, ps in _calls(cluster, "b") if kind == "assigned" for p in ps]
    assert sorted(b_added) == sorted(revoked)
    assert cluster.is_settled()
    # the revocation round and the follow-up round: two generations after a's first
    assert cluster.coordinator_generation() == generation_alone + 2


def test_heartbeats_flow_at_the_interval_while_stable() -> None:
    cluster = Cluster({"t": 2})
    cluster.add("a", member_config(["t"], [RangeAssignor()], heartbeat_interval_ms=100))
    cluster.run_for(300)
    start = cluster.now
    cluster.run_for(1_000)
    beats = [t for t, _n, r in cluster.sent if isinstance(r, HeartbeatRequest) and t > start]
    assert 9 <= len(beats) <= 11
    assert all(b - a == 100 for a, b in itertools.pairwise(beats))
    assert cluster.members["a"].machine.state is MemberState.STABLE


def test_join_request_carries_rebalance_timeout_reason_and_owned_partitions() -> None:
    cluster = Cluster({"t": 2})
    cluster.add(
        "a", member_config(["t"], [CooperativeStickyAssignor()], max_poll_interval_ms=2_500)
    )
    cluster.run_for(300)
    cluster.add(
        "b", member_config(["t"], [CooperativeStickyAssignor()], max_poll_interval_ms=2_500)
    )
    cluster.run_for(1_000)
    joins = [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, JoinGroupRequest)]
    assert all(j.rebalance_timeout_ms == 2_500 and j.version == 9 for j in joins)
    assert joins[0].reason and joins[0].member_id == ""
    from groupcoord.protocol import decode_subscription

    rejoin = decode_subscription(joins[-1].protocols[0][1])
    assert rejoin.generation_id >= 1 and rejoin.owned_partitions
    assert cluster.delivered[0].call.kind is CallbackKind.ASSIGNED
