"""Static membership (KIP-345, KIP-814) and its regressions (KAFKA-8500, KAFKA-14009)."""

from __future__ import annotations

from coord_harness import Harness, rebalance

from groupcoord import Subscription
from groupcoord.coordinator import GroupState, LeaveGroupRequest, MemberIdentity
from groupcoord.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from groupcoord.protocol import encode_subscription


def _static_group(h: Harness, n: int = 2, version: int = 7) -> list:
    ms = [h.member(f"c{i}", instance_id=f"i{i}", join_version=version) for i in range(n)]
    rebalance(h, ms)
    return ms


def _restart_client(h: Harness, old, **kw):  # a fresh process with the same instance id
    return h.member(old.client_id, instance_id=old.instance_id, join_version=old.join_version, **kw)


def test_static_member_does_not_get_member_id_required() -> None:
    h = Harness()
    c = h.member("a", instance_id="i-a", join_version=5).join()
    assert h.response(c) is None  # parked in the join phase, not MEMBER_ID_REQUIRED
    assert h.snapshot().members[0].group_instance_id == "i-a"


def test_kip345_static_rejoin_of_stable_group_with_same_metadata_does_not_rebalance() -> None:
    h = Harness()
    a, b = _static_group(h)
    generation = h.snapshot().generation_id
    b2 = _restart_client(h, b)
    resp = h.response(b2.join())
    assert resp.error is None
    assert resp.generation_id == generation and resp.member_id != b.member_id
    assert resp.leader == a.member_id and resp.members == ()
    assert h.snapshot().state is GroupState.STABLE
    assert h.snapshot().generation_id == generation
    # The restarted member gets its old assignment by syncing the current generation.
    sync = b2.synced(b2.sync())
    assert sync.error is None and sync.assignment == b.assignment


def test_kip345_replaced_member_id_is_fenced() -> None:
    h = Harness()
    _a, b = _static_group(h)
    b2 = _restart_client(h, b)
    b2.joined(b2.join())
    assert b.heartbeat().error is FencedInstanceIdError
    assert h.response(b.sync()).error is FencedInstanceIdError
    commit = b.commit({("t", 0): 1})
    assert commit.topics[0].partitions[0].error is FencedInstanceIdError
    assert b.leave().members[0].error is FencedInstanceIdError
    assert b2.heartbeat().error is None


def test_kip345_static_member_rejoin_fences_its_parked_join() -> None:
    h = Harness()
    a, b = _static_group(h)
    parked = a.join()  # the leader rejoins: PreparingRebalance, a's join waits
    a2 = _restart_client(h, a)
    c2 = a2.join()
    resp = h.response(parked)
    assert resp.error is FencedInstanceIdError and resp.member_id == a.member_id
    assert h.response(c2) is None  # waits for b
    b.joined(b.join())
    assert a2.joined(c2).error is None
    assert a2.is_leader


def test_kafka_8500_two_unknown_static_joins_keep_one_member() -> None:
    # Two JoinGroups with the same group.instance.id and no member id while the group
    # rebalances: the first is fenced at once, the group keeps one member for the id.
    h = Harness()
    a, b, c = _static_group(h, n=3)
    a.join()  # rebalance starts; c has not rejoined yet, so the phase stays open
    x1 = _restart_client(h, b)
    x2 = _restart_client(h, b)
    c1 = x1.join()
    c2 = x2.join()
    r1 = h.response(c1)
    assert r1.error is FencedInstanceIdError
    assert h.response(c2) is None
    snap = h.snapshot()
    assert [m.group_instance_id for m in snap.members].count("i1") == 1
    assert len(snap.members) == 3
    c.joined(c.join())
    r2 = x2.joined(c2)
    assert r2.error is None and r2.generation_id == 2
    assert {m.member_id for m in h.snapshot().members} == {
        a.member_id,
        x2.member_id,
        c.member_id,
    }


def test_kip814_static_leader_rejoin_v9_is_told_to_skip_assignment() -> None:
    h = Harness()
    a, b = _static_group(h, version=9)
    a2 = _restart_client(h, a)
    resp = a2.joined(a2.join())
    assert resp.error is None and resp.skip_assignment is True
    assert resp.leader == resp.member_id
    assert {m.member_id for m in resp.members} == {resp.member_id, b.member_id}
    assert h.snapshot().state is GroupState.STABLE
    sync = a2.synced(a2.sync())  # no assignments: the group keeps its assignment
    assert sync.error is None and sync.assignment == a.assignment
    assert b.heartbeat().error is None


def test_static_leader_rejoin_before_v9_is_given_the_old_leader_id() -> None:
    h = Harness()
    a, _b = _static_group(h, version=8)
    a2 = _restart_client(h, a)
    resp = a2.joined(a2.join())
    assert resp.error is None and resp.skip_assignment is False
    assert resp.leader == a.member_id != resp.member_id  # so it does not assign
    assert resp.members == ()
    assert h.snapshot().leader_id == resp.member_id


def test_static_rejoin_that_changes_the_selected_protocol_rebalances() -> None:
    h = Harness()
    meta = encode_subscription(Subscription(["t"]))
    a = h.member("a", instance_id="ia", protocols=(("range", meta), ("roundrobin", meta)))
    b = h.member("b", instance_id="ib", protocols=(("range", meta), ("roundrobin", meta)))
    rebalance(h, [a, b])
    assert h.snapshot().protocol_name == "range"
    b2 = _restart_client(h, b, protocols=(("roundrobin", meta),))
    assert h.response(b2.join()) is None
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_static_rejoin_with_new_subscription_but_same_protocol_does_not_rebalance() -> None:
    # Kafka only checks whether the selected protocol would change, not the metadata.
    h = Harness()
    _a, b = _static_group(h)
    b2 = _restart_client(h, b, topics=("t", "u"))
    resp = h.response(b2.join())
    assert resp.error is None
    assert h.snapshot().state is GroupState.STABLE


def test_static_rejoin_during_completing_rebalance_rebalances_again() -> None:
    h = Harness()
    a, b = _static_group(h)
    ca, cb = a.join(), b.join()
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    a.joined(ca), b.joined(cb)
    parked = b.sync()
    b2 = _restart_client(h, b)
    c2 = b2.join()
    assert h.response(parked).error is FencedInstanceIdError
    assert h.response(c2) is None
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_kafka_14009_static_rejoin_refreshes_the_rebalance_timeout() -> None:
    h = Harness()
    a, b = _static_group(h)
    b2 = _restart_client(h, b, rebalance_timeout_ms=90_000)
    b2.joined(b2.join())
    assert h.snapshot().member(b2.member_id).rebalance_timeout_ms == 90_000
    # The next join phase waits the new, larger timeout for b2.
    start = h.now
    ca = a.join()
    for _ in range(10):
        h.advance(8000)
        assert b2.heartbeat().error is RebalanceInProgressError
        assert a.heartbeat().error is RebalanceInProgressError
    assert h.response(ca) is None  # 80 s > the old 30 s timeout
    h.advance_to(start + 90_000)
    assert h.response(ca) is not None


def test_static_members_that_did_not_rejoin_stay_in_the_group() -> None:
    # Only dynamic members are dropped at the end of the join phase.
    h = Harness()
    a, b = _static_group(h)
    d = h.member("d")
    start = h.now
    cd, ca = d.join(), a.join()
    for _ in range(3):  # b stays alive but does not rejoin before the 30 s timeout
        h.advance(8000)
        assert b.heartbeat().error is RebalanceInProgressError
    h.advance_to(start + 30_000)
    assert b.heartbeat().error is IllegalGenerationError  # it must rejoin now
    assert d.joined(cd).error is None and a.joined(ca).error is None
    snap = h.snapshot()
    assert b.member_id in {m.member_id for m in snap.members}
    assert {m.member_id for m in a.join_members} == {a.member_id, b.member_id, d.member_id}
    assert snap.generation_id == 2


def test_static_member_removed_by_group_instance_id_alone() -> None:
    h = Harness()
    a, _b = _static_group(h)
    resp = h.send(
        LeaveGroupRequest(
            version=4,
            correlation=h.correlation(),
            group_id="g",
            members=(
                MemberIdentity(group_instance_id="i1"),
                MemberIdentity(group_instance_id="nope"),
            ),
        )
    )
    assert [m.error for m in resp.members] == [None, UnknownMemberIdError]
    assert resp.members[0].member_id == ""
    assert [m.member_id for m in h.snapshot().members] == [a.member_id]
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_unknown_group_instance_id_with_a_member_id_is_unknown_member_id() -> None:
    h = Harness()
    a, _b = _static_group(h)
    assert a.heartbeat(group_instance_id="other").error is UnknownMemberIdError
