"""Rebalance behaviours: the eager -> cooperative two-bounce upgrade, metadata changes,
held callbacks, static restarts."""

from __future__ import annotations

from member_harness import GROUP, Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor, RebalanceProtocol
from groupcoord.assignors.base import Assignor
from groupcoord.coordinator.messages import JoinGroupRequest
from groupcoord.member import CallbackKind, MemberMachine, MemberState


def _restart(cluster: Cluster, name: str, assignors: list[Assignor]) -> None:
    cluster.close(name)
    cluster.run_for(300)
    cluster.add(name, member_config(["t"], assignors))
    cluster.run_for(2_000)
    assert cluster.is_settled()


def test_two_bounce_upgrade_from_eager_range_to_cooperative_sticky() -> None:
    cluster = Cluster({"t": 9})
    names = ["a", "b", "c"]
    for name in names:
        cluster.add(name, member_config(["t"], [RangeAssignor()]))
    cluster.run_for(3_000)
    assert cluster.is_settled()
    snap = cluster.coordinator.snapshot(GROUP)
    assert snap is not None and snap.protocol_name == "range"

    coop = CooperativeStickyAssignor()
    for name in names:  # first bounce: both assignors, still eager
        _restart(cluster, name, [coop, RangeAssignor()])
    assert all(m.machine.protocol is RebalanceProtocol.EAGER for m in cluster.live())
    snap = cluster.coordinator.snapshot(GROUP)
    assert snap is not None and snap.protocol_name == "cooperative-sticky"

    for name in names:  # second bounce: cooperative only
        _restart(cluster, name, [coop])
    assert all(m.machine.protocol is RebalanceProtocol.COOPERATIVE for m in cluster.live())

    # now cooperative: a newcomer makes the others revoke only what moves to it
    mark = len(cluster.delivered)
    cluster.add("d", member_config(["t"], [coop]))
    cluster.run_for(3_000)
    assert cluster.is_settled()
    revoked = [
        d.call.partitions for d in cluster.delivered[mark:] if d.call.kind is CallbackKind.REVOKED
    ]
    assert revoked and all(len(ps) <= 1 for ps in revoked)
    sizes = sorted(len(m.machine.assignment) for m in cluster.live())
    assert sizes == [2, 2, 2, 3]


def test_leader_rejoins_when_a_topic_grows() -> None:
    cluster = Cluster({"t": 2})
    a = cluster.add("a", member_config(["t"], [CooperativeStickyAssignor()]))
    b = cluster.add("b", member_config(["t"], [CooperativeStickyAssignor()]))
    cluster.run_for(2_000)
    generation = cluster.coordinator_generation()
    leader = a if a.machine.is_leader else b
    assert leader.machine.metadata_topics() == frozenset({"t"})
    cluster.partitions_per_topic["t"] = 6
    leader.machine.set_metadata({"t": 6}, cluster.now)
    assert leader.machine.rejoin_needed
    cluster.run_for(2_000)
    assert cluster.coordinator_generation() > generation
    assert cluster.is_settled()
    assert sum(len(m.machine.assignment) for m in cluster.live()) == 6


def test_followers_do_not_rejoin_on_metadata_changes() -> None:
    cluster = Cluster({"t": 2})
    a = cluster.add("a", member_config(["t"], [RangeAssignor()]))
    b = cluster.add("b", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(2_000)
    follower = b if a.machine.is_leader else a
    follower.machine.set_metadata({"t": 6}, cluster.now)
    assert not follower.machine.rejoin_needed


def test_held_callbacks_keep_the_join_back_until_done() -> None:
    cluster = Cluster({"t": 2})
    a = cluster.add("a", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(500)
    machine = a.machine
    a.next_poll_ms = 10**9  # drive this member by hand from here
    cluster.add("b", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(400)
    assert machine.rejoin_needed
    machine.poll(cluster.now)  # eager: revoke everything first
    calls = machine.take_callbacks(hold=True)
    assert [c.kind for c in calls] == [CallbackKind.REVOKED]
    assert not [r for r in machine.next_requests(cluster.now) if isinstance(r, JoinGroupRequest)]
    machine.callbacks_done()
    assert [r for r in machine.next_requests(cluster.now) if isinstance(r, JoinGroupRequest)]


def test_generation_is_minus_one_unless_stable() -> None:
    machine = MemberMachine(member_config(["t"], [RangeAssignor()]))
    assert machine.generation == -1 and machine.state is MemberState.UNJOINED
    cluster = Cluster({"t": 2})
    a = cluster.add("a", member_config(["t"], [RangeAssignor()]))
    cluster.run_for(300)
    assert a.machine.generation == cluster.coordinator_generation() >= 1
    a.machine.close(cluster.now)
    assert a.machine.generation == -1


def test_static_member_restarted_within_the_session_gets_its_partitions_without_rebalance() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [CooperativeStickyAssignor()], group_instance_id="a"))
    cluster.add("b", member_config(["t"], [CooperativeStickyAssignor()], group_instance_id="b"))
    cluster.run_for(3_000)
    assert cluster.is_settled()
    generation = cluster.coordinator_generation()
    owned = a.machine.assignment
    cluster.kill("a")
    cluster.run_for(300)  # well within the 1 s session
    again = cluster.add(
        "a", member_config(["t"], [CooperativeStickyAssignor()], group_instance_id="a")
    )
    cluster.run_for(1_500)
    assert cluster.coordinator_generation() == generation
    assert again.machine.assignment == owned
    assert cluster.is_settled()
