"""Heartbeat (v0-v4) and LeaveGroup (v0-v5) scenarios, including KAFKA-8896."""

from __future__ import annotations

import pytest
from coord_harness import Harness, rebalance

from groupcoord.coordinator import GroupState, LeaveGroupRequest, MemberIdentity
from groupcoord.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    InvalidGroupIdError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnsupportedVersionError,
)

# ---------------------------------------------------------------------------- heartbeat


def test_heartbeat_resets_the_session_deadline() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    for _ in range(20):  # 20 x 9 s: far past one 10 s session
        h.advance(9000)
        assert a.heartbeat().error is None
        assert b.heartbeat().error is None
    assert h.snapshot().generation_id == 1


def test_member_without_heartbeat_expires_after_session_timeout_and_group_rebalances() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    synced_at = h.now
    h.advance_to(synced_at + 9_999)
    a.heartbeat()
    assert len(h.snapshot().members) == 2
    h.advance_to(synced_at + 10_000)
    assert [m.member_id for m in h.snapshot().members] == [a.member_id]
    assert a.heartbeat().error is RebalanceInProgressError


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_heartbeat_during_preparing_rebalance_is_rebalance_in_progress_and_resets_deadline(
    version: int,
) -> None:
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=60_000)
    b = h.member("b", rebalance_timeout_ms=60_000)
    rebalance(h, [a, b])
    a.join()  # PreparingRebalance for up to 60 s
    for _ in range(5):  # b keeps its session alive through the 40 s it takes to rejoin
        h.advance(8000)
        assert b.heartbeat(version=version).error is RebalanceInProgressError
    assert {m.member_id for m in h.snapshot().members} == {a.member_id, b.member_id}
    b.join()
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE


def test_heartbeat_in_completing_rebalance_is_accepted() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    ca, cb = a.join(), b.join()
    h.advance(1000)
    a.joined(ca), b.joined(cb)
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    assert b.heartbeat().error is None


def test_members_awaiting_join_do_not_expire() -> None:
    # Kafka's hasSatisfiedHeartbeat: a member parked in the join phase cannot heartbeat.
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=60_000)
    b = h.member("b", rebalance_timeout_ms=60_000)
    rebalance(h, [a, b])
    start = h.now
    ca = a.join()
    for _ in range(6):  # b stays alive without rejoining; a sends nothing for 48 s
        h.advance(8000)
        assert b.heartbeat().error is RebalanceInProgressError
    assert a.member_id in {m.member_id for m in h.snapshot().members}
    h.advance_to(start + 60_000)  # the join phase ends at 60 s without b
    resp = a.joined(ca)
    assert resp.error is None and [m.member_id for m in resp.members] == [a.member_id]


def test_members_awaiting_sync_do_not_expire() -> None:
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=60_000)
    b = h.member("b", rebalance_timeout_ms=60_000)
    ca, cb = a.join(), b.join()
    h.advance(1000)
    a.joined(ca), b.joined(cb)
    follower = b if a.is_leader else a
    leader = a if a.is_leader else b
    parked = follower.sync()
    for _ in range(5):
        h.advance(8000)
        leader.heartbeat()
    assert follower.member_id in {m.member_id for m in h.snapshot().members}
    leader.sync()
    assert follower.synced(parked).error is None
    # its session restarted when the assignment was sent
    h.advance(9000)
    assert follower.heartbeat().error is None


def test_new_member_awaiting_its_first_join_is_not_subject_to_its_session_timeout() -> None:
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=60_000)
    rebalance(h, [a])
    c = h.member("c", session_timeout_ms=6000, rebalance_timeout_ms=60_000)
    cc = c.join()  # a must rejoin; c waits up to 60 s (new-member timeout: 5 min)
    for _ in range(4):
        h.advance(8000)
        assert a.heartbeat().error is RebalanceInProgressError
    assert c.member_id in {m.member_id for m in h.snapshot().members}
    a.joined(a.join())
    assert c.joined(cc).error is None


def test_kafka_8896_heartbeat_of_a_removed_member_is_unknown_member_id() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    h.advance(10_000)  # both expire
    assert h.snapshot().state is GroupState.EMPTY
    assert a.heartbeat().error is UnknownMemberIdError
    assert b.heartbeat().error is UnknownMemberIdError
    # the group still works
    c = h.member("c")
    rebalance(h, [c])
    assert h.snapshot().state is GroupState.STABLE


def test_kafka_8896_heartbeat_for_member_removed_during_completing_rebalance() -> None:
    h = Harness()
    ms = [h.member(f"m{i}") for i in range(3)]
    rebalance(h, ms)
    leaver = ms[2]
    corrs = [m.join() for m in ms[:2]]
    leaver.leave()
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    assert all(h.response(c) is not None for c in corrs)
    assert leaver.heartbeat().error is UnknownMemberIdError
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    assert h.pending() == []


def test_heartbeat_errors() -> None:
    h = Harness()
    a, b = h.member("a", instance_id="ia"), h.member("b")
    rebalance(h, [a, b])
    assert a.heartbeat(generation_id=0).error is IllegalGenerationError
    assert a.heartbeat(member_id="ghost").error is FencedInstanceIdError
    assert b.heartbeat(member_id="ghost").error is UnknownMemberIdError
    assert b.heartbeat(group_id="other").error is UnknownMemberIdError
    assert b.heartbeat(group_id="").error is InvalidGroupIdError


# ---------------------------------------------------------------------------- leave


def test_leave_batch_by_member_id_and_instance_id_with_per_member_errors() -> None:
    h = Harness()
    a = h.member("a")
    b = h.member("b", instance_id="ib")
    c = h.member("c")
    rebalance(h, [a, b, c])
    resp = h.send(
        LeaveGroupRequest(
            version=5,
            correlation=h.correlation(),
            group_id="g",
            members=(
                MemberIdentity(member_id=a.member_id, reason="shutdown"),
                MemberIdentity(member_id=b.member_id, group_instance_id="ib"),
                MemberIdentity(member_id="ghost"),
                MemberIdentity(member_id=c.member_id, group_instance_id="ib"),
            ),
        )
    )
    assert resp.error is None
    assert [(m.member_id, m.error) for m in resp.members] == [
        (a.member_id, None),
        (b.member_id, None),
        ("ghost", UnknownMemberIdError),
        (c.member_id, UnknownMemberIdError),  # ib is gone by then
    ]
    assert [m.member_id for m in h.snapshot().members] == [c.member_id]


def test_leave_v0_to_v2_reports_the_member_error_at_top_level() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    ok = b.leave(version=0)
    assert ok.error is None and ok.members == ()
    again = b.leave(version=2)
    assert again.error is UnknownMemberIdError and again.members == ()


def test_leave_for_unknown_group_is_unknown_member_id_per_member() -> None:
    h = Harness()
    resp = h.member("a", group_id="nope").leave()
    assert resp.error is None and resp.members[0].error is UnknownMemberIdError
    assert h.member("a", group_id="").leave().error is InvalidGroupIdError


def test_pending_member_leaving_is_just_removed() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    resp = h.send(h.member("p").join_request())
    pending = resp.member_id
    assert h.snapshot().pending_members == (pending,)
    out = h.send(
        LeaveGroupRequest(
            version=3,
            correlation=h.correlation(),
            group_id="g",
            members=(MemberIdentity(member_id=pending),),
        )
    )
    assert out.members[0].error is None
    snap = h.snapshot()
    assert snap.pending_members == () and snap.state is GroupState.STABLE


def test_last_member_leaving_makes_the_group_empty_with_a_new_generation() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    assert a.leave().members[0].error is None
    snap = h.snapshot()
    assert snap.state is GroupState.EMPTY and snap.generation_id == 2
    assert snap.protocol_name is None and snap.members == ()


def test_member_leaving_during_join_phase_lets_it_complete() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    ca = a.join()
    b.leave()
    resp = a.joined(ca)
    assert resp.error is None and [m.member_id for m in resp.members] == [a.member_id]


def test_leave_request_validation() -> None:
    with pytest.raises(UnsupportedVersionError):
        LeaveGroupRequest(version=2, group_id="g", members=(MemberIdentity(member_id="x"),))
    with pytest.raises(UnsupportedVersionError):
        LeaveGroupRequest(version=3, group_id="g", member_id="x")
    with pytest.raises(UnsupportedVersionError):
        LeaveGroupRequest(
            version=4, group_id="g", members=(MemberIdentity(member_id="x", reason="r"),)
        )
