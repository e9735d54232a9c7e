"""SyncGroup scenarios (v0-v5), including KAFKA-12890."""

from __future__ import annotations

import pytest
from coord_harness import Harness, rebalance

from groupcoord.coordinator import GroupState, MemoryOffsetStore, SyncGroupRequest
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnsupportedVersionError,
)
from groupcoord.protocol import decode_assignment


def _joined(h: Harness, n: int = 3, **kw) -> list:
    ms = [h.member(f"m{i}", **kw) for i in range(n)]
    corrs = [m.join() for m in ms]
    h.advance(1000)
    for m, c in zip(ms, corrs, strict=True):
        assert m.joined(c).error is None
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    return ms


def test_leader_assignment_reaches_every_member_and_followers_wait() -> None:
    h = Harness()
    ms = _joined(h)
    leader = next(m for m in ms if m.is_leader)
    followers = [m for m in ms if not m.is_leader]
    parked = [f.sync() for f in followers]
    assert all(h.response(c) is None for c in parked)
    assert leader.synced(leader.sync()).error is None
    for f, c in zip(followers, parked, strict=True):
        resp = f.synced(c)
        assert resp.error is None
        assert resp.protocol_type == "consumer" and resp.protocol_name == "range"
    owned = [tp for m in ms for tp in m.partitions()]
    assert sorted(owned) == [("t", p) for p in range(4)]
    assert h.snapshot().state is GroupState.STABLE


def test_members_missing_from_the_leader_assignment_get_an_empty_one() -> None:
    h = Harness()
    ms = _joined(h)
    leader = next(m for m in ms if m.is_leader)
    parked = {m.client_id: m.sync() for m in ms if not m.is_leader}
    leader.sync(assignments=((leader.member_id, b"mine"), ("stranger", b"x")))
    assert leader.assignment == b"mine"
    for m in ms:
        if not m.is_leader:
            assert m.synced(parked[m.client_id]).assignment == b""
    assert {m.member_id for m in h.snapshot().members} == {m.member_id for m in ms}


def test_sync_in_stable_returns_the_current_assignment() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    again = b.synced(b.sync())
    assert again.error is None and decode_assignment(again.assignment).partitions


def test_follower_sync_before_the_leader_then_rebalance_gets_rebalance_in_progress() -> None:
    h = Harness()
    ms = _joined(h)
    follower = next(m for m in ms if not m.is_leader)
    parked = follower.sync()
    h.member("late").join()  # a new member: the sync phase is abandoned
    resp = h.response(parked)
    assert resp.error is RebalanceInProgressError
    assert resp.protocol_name is None and resp.assignment == b""


def test_sync_errors_illegal_generation_unknown_member_rebalance_in_progress() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    assert h.response(b.sync(generation_id=7)).error is IllegalGenerationError
    assert h.response(b.sync(member_id="ghost")).error is UnknownMemberIdError
    assert h.response(b.sync(group_id="nope")).error is UnknownMemberIdError
    assert h.response(b.sync(group_id="")).error is InvalidGroupIdError
    h.member("c").join()  # PreparingRebalance
    assert h.response(b.sync()).error is RebalanceInProgressError


def test_sync_v5_protocol_type_and_name_must_match() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    assert h.response(b.sync(protocol_name="roundrobin")).error is (InconsistentGroupProtocolError)
    assert h.response(b.sync(protocol_type="connect")).error is InconsistentGroupProtocolError
    # v5 made both fields mandatory.
    assert h.response(b.sync(protocol_name=None)).error is InconsistentGroupProtocolError
    # v4 and below do not have them.
    b.sync_version = 4
    assert h.response(b.sync()).error is None
    with pytest.raises(UnsupportedVersionError):
        SyncGroupRequest(
            version=4, group_id="g", generation_id=1, member_id="x", protocol_name="range"
        )


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4, 5])
def test_sync_every_version(version: int) -> None:
    h = Harness()
    ms = _joined(h, 2, sync_version=version, join_version=min(version + 2, 9))
    corrs = [m.sync() for m in sorted(ms, key=lambda m: m.is_leader)]
    for m, c in zip(sorted(ms, key=lambda m: m.is_leader), corrs, strict=True):
        resp = m.synced(c)
        assert resp.error is None and resp.version == version


def test_static_member_sync_with_wrong_instance_id_is_fenced() -> None:
    h = Harness()
    a = h.member("a", instance_id="ia")
    b = h.member("b", instance_id="ib")
    rebalance(h, [a, b])
    assert h.response(b.sync(group_instance_id="ia")).error is FencedInstanceIdError


def test_kafka_12890_members_that_never_sync_are_removed_and_the_group_rebalances() -> None:
    h = Harness()
    ms = _joined(h, 3, session_timeout_ms=45_000)  # rebalance timeout 30 s
    leader = next(m for m in ms if m.is_leader)
    lazy = [m for m in ms if not m.is_leader]
    assert leader.synced(leader.sync()).error is None
    assert h.snapshot().state is GroupState.STABLE
    deadline = h.coord.next_deadline()  # the join phase ended at 200: sync by 30 200
    assert deadline == 30_200
    h.advance_to(deadline - 1)
    assert len(h.snapshot().members) == 3
    h.advance_to(deadline)
    snap = h.snapshot()
    assert [m.member_id for m in snap.members] == [leader.member_id]
    assert snap.state is GroupState.PREPARING_REBALANCE
    for m in lazy:
        assert m.heartbeat().error is UnknownMemberIdError
    assert leader.heartbeat().error is RebalanceInProgressError


def test_kafka_12890_group_stuck_in_completing_rebalance_without_leader_sync() -> None:
    h = Harness()
    ms = _joined(h, 2, session_timeout_ms=45_000)
    follower = next(m for m in ms if not m.is_leader)
    parked = follower.sync()
    h.advance(30_000)  # the leader never syncs
    snap = h.snapshot()
    assert [m.member_id for m in snap.members] == [follower.member_id]
    assert h.response(parked).error is RebalanceInProgressError
    # the follower rejoins alone and becomes leader of generation 2
    follower.joined(follower.join())
    assert follower.is_leader and follower.generation == 2


def test_sync_deadline_is_cancelled_once_everyone_synced() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    for _ in range(10):
        h.advance(5000)
        assert a.heartbeat().error is None and b.heartbeat().error is None
    assert h.snapshot().generation_id == 1


def test_store_failure_on_the_leader_assignment_is_coordinator_not_available() -> None:
    store = MemoryOffsetStore()
    h = Harness(store=store)
    ms = _joined(h, 2)
    leader = next(m for m in ms if m.is_leader)
    follower = next(m for m in ms if not m.is_leader)
    parked = follower.sync()
    store.fail_writes = True
    resp = h.response(leader.sync())
    assert resp.error is CoordinatorNotAvailableError
    assert h.response(parked).error is CoordinatorNotAvailableError
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE
    store.fail_writes = False
    rebalance(h, [follower, leader])
    assert h.snapshot().state is GroupState.STABLE
