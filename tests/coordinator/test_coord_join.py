"""JoinGroup scenarios, each named after the Kafka behaviour it pins."""

from __future__ import annotations

import logging

import pytest
from coord_harness import FAST, Harness, rebalance

from groupcoord import Subscription
from groupcoord.coordinator import GroupState, JoinGroupRequest, JoinGroupResponse
from groupcoord.errors import (
    GroupMaxSizeReachedError,
    InconsistentGroupProtocolError,
    InvalidGroupIdError,
    InvalidSessionTimeoutError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from groupcoord.protocol import encode_subscription


def _meta(*topics: str) -> bytes:
    return encode_subscription(Subscription(topics))


# ---------------------------------------------------------------------------- basics


def test_join_v3_adds_member_without_member_id_required() -> None:
    h = Harness()
    a = h.member("a", join_version=3)
    c = a.join()
    assert h.response(c) is None  # parked in the (initial) join phase
    h.advance(100)
    resp = a.joined(c)
    assert resp.error is None
    assert resp.member_id == "a-1" and resp.leader == "a-1" and resp.generation_id == 1
    assert [m.member_id for m in resp.members] == ["a-1"]  # the leader gets the members


def test_kip394_join_v4_unknown_member_gets_member_id_required_then_joins() -> None:
    h = Harness()
    first = h.send(h.member("a").join_request())
    assert first.error is MemberIdRequiredError
    assert first.error_code == 79
    assert first.member_id == "a-1"
    snap = h.snapshot()
    assert snap.pending_members == ("a-1",) and snap.members == ()
    rejoin = h.member("a").join_request(member_id="a-1")
    assert h.send(rejoin) is None
    assert h.snapshot().pending_members == ()
    assert [m.member_id for m in h.snapshot().members] == ["a-1"]


def test_kip394_pending_member_expires_after_its_session_timeout() -> None:
    h = Harness()
    h.send(h.member("a", session_timeout_ms=5000).join_request())
    assert h.coord.next_deadline() == 5000
    h.advance(4999)
    assert h.snapshot().pending_members == ("a-1",)
    h.advance(1)
    assert h.snapshot().pending_members == ()
    late = h.send(h.member("a").join_request(member_id="a-1"))
    assert late.error is UnknownMemberIdError


def test_kafka_7610_pending_members_are_bounded_by_their_session_timeout() -> None:
    # A client that keeps timing out and retrying JoinGroup without an id must not make
    # the group's bookkeeping grow without bound.
    h = Harness()
    for i in range(500):
        resp = h.send(h.member(f"c{i}", session_timeout_ms=6000).join_request())
        assert resp.error is MemberIdRequiredError
        h.advance(10)
    assert len(h.snapshot().pending_members) <= 6000 // 10 + 1
    h.advance(6000)
    assert h.snapshot().pending_members == ()
    assert h.coord.next_deadline() is None


def test_kafka_7610_new_member_that_never_completes_a_join_is_dropped() -> None:
    # Joins (v3, no member id required) parked in a join phase that cannot finish because
    # a long-rebalance-timeout member has not rejoined: Kafka drops new members after
    # NewMemberJoinTimeoutMs and answers their JoinGroup with UNKNOWN_MEMBER_ID.
    h = Harness({**FAST, "new_member_join_timeout_ms": 60_000})
    slow = h.member("slow", rebalance_timeout_ms=600_000, session_timeout_ms=30_000)
    rebalance(h, [slow])
    corrs = [h.member(f"n{i}", join_version=3).join() for i in range(5)]
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE
    for _ in range(6):  # the slow member stays alive but does not rejoin
        h.advance(10_000)
        slow.heartbeat()
    for c in corrs:
        resp = h.response(c)
        assert resp is not None and resp.error is UnknownMemberIdError
        assert resp.member_id == ""
    assert [m.member_id for m in h.snapshot().members] == [slow.member_id]


def test_invalid_group_id_for_empty_group_id() -> None:
    h = Harness()
    resp = h.send(h.member("a", group_id="").join_request())
    assert resp.error is InvalidGroupIdError
    assert h.coord.group_ids() == []


@pytest.mark.parametrize("timeout", [999, 1_800_001])
def test_session_timeout_outside_broker_bounds_is_invalid_session_timeout(timeout: int) -> None:
    h = Harness()
    resp = h.send(h.member("a", session_timeout_ms=timeout).join_request())
    assert resp.error is InvalidSessionTimeoutError
    assert resp.error_code == 26
    assert h.coord.group_ids() == []


def test_known_member_id_on_unknown_group_is_unknown_member_id() -> None:
    h = Harness()
    resp = h.send(h.member("a").join_request(member_id="ghost"))
    assert resp.error is UnknownMemberIdError
    assert resp.member_id == "ghost"


def test_unknown_member_id_for_existing_group_is_unknown_member_id() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    resp = h.send(h.member("b").join_request(member_id="ghost"))
    assert resp.error is UnknownMemberIdError


def test_v0_uses_session_timeout_as_rebalance_timeout() -> None:
    h = Harness()
    a = h.member("a", join_version=0, session_timeout_ms=8000)
    b = h.member("b", join_version=0, session_timeout_ms=8000)
    rebalance(h, [a, b])
    assert h.snapshot().member(a.member_id).rebalance_timeout_ms == 8000
    start = h.now
    ca = a.join()  # the leader rejoins; b stays alive by heartbeats but never rejoins
    for _ in range(2):
        h.advance(3000)
        assert b.heartbeat(version=0).error is RebalanceInProgressError
    h.advance_to(start + 7999)
    assert h.response(ca) is None
    h.advance_to(start + 8000)  # the join phase lasted the session timeout
    assert [m.member_id for m in a.joined(ca).members] == [a.member_id]


# ---------------------------------------------------------------------------- protocols


def test_generation_increments_on_every_completed_join_phase() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a])
    assert a.generation == 1
    rebalance(h, [b, a])  # b first: a's rejoin would otherwise complete the phase alone
    assert a.generation == b.generation == 2
    rebalance(h, [a, b])  # the leader rejoining forces a new generation
    assert a.generation == 3
    assert h.snapshot().generation_id == 3


def test_selected_protocol_has_most_votes_among_those_all_members_support() -> None:
    h = Harness()
    m1 = h.member("m1", protocols=(("range", _meta("t")), ("roundrobin", _meta("t"))))
    m2 = h.member("m2", protocols=(("roundrobin", _meta("t")), ("range", _meta("t"))))
    m3 = h.member("m3", protocols=(("roundrobin", _meta("t")), ("range", _meta("t"))))
    rebalance(h, [m1, m2, m3])
    assert m1.protocol_name == "roundrobin"
    assert h.snapshot().protocol_name == "roundrobin"


def test_selected_protocol_ignores_protocols_not_supported_by_everyone() -> None:
    h = Harness()
    m1 = h.member("m1", protocols=(("x", b"1"), ("y", b"1")), protocol_type="p")
    m2 = h.member("m2", protocols=(("x", b"2"), ("y", b"2")), protocol_type="p")
    m3 = h.member("m3", protocols=(("y", b"3"),), protocol_type="p")
    corrs = [m.join() for m in (m1, m2, m3)]
    h.advance(1000)
    for m, c in zip((m1, m2, m3), corrs, strict=True):
        m.joined(c)
    assert h.snapshot().protocol_name == "y"
    leader = next(m for m in (m1, m2, m3) if m.is_leader)
    assert {r.member_id: r.metadata for r in leader.join_members} == {
        m1.member_id: b"1",
        m2.member_id: b"2",
        m3.member_id: b"3",
    }


def test_protocol_type_mismatch_is_inconsistent_group_protocol() -> None:
    h = Harness()
    rebalance(h, [h.member("a")])
    resp = h.send(h.member("b", protocol_type="connect").join_request())
    assert resp.error is InconsistentGroupProtocolError and resp.member_id == ""


def test_no_common_protocol_is_inconsistent_group_protocol() -> None:
    h = Harness()
    rebalance(h, [h.member("a")])
    resp = h.send(h.member("b", protocols=(("sticky", _meta("t")),)).join_request())
    assert resp.error is InconsistentGroupProtocolError


def test_empty_protocol_list_or_type_on_empty_group_is_inconsistent_group_protocol() -> None:
    h = Harness()
    assert h.send(h.member("a", protocols=()).join_request(protocols=())).error is (
        InconsistentGroupProtocolError
    )
    assert h.send(h.member("b", protocol_type="").join_request()).error is (
        InconsistentGroupProtocolError
    )


# ---------------------------------------------------------------------------- join phase


def test_initial_rebalance_delay_extends_per_new_joiner_capped_by_rebalance_timeout() -> None:
    h = Harness({**FAST, "group.initial.rebalance.delay.ms": 3000})
    first = h.member("m0", rebalance_timeout_ms=10_000)
    c0 = first.join()
    assert h.coord.next_deadline() == 3000
    # A new member arrives in every delay window: the phase is extended by one delay
    # each time (3000, 6000, 9000), but never past the rebalance timeout (10000).
    for i, t in enumerate([2500, 5000, 7500, 9500], start=1):
        h.advance_to(t)
        assert h.response(c0) is None
        h.member(f"m{i}", rebalance_timeout_ms=10_000).join()
    h.advance_to(9_999)
    assert h.response(c0) is None
    h.advance_to(10_000)
    assert first.joined(c0).error is None
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    assert len(h.snapshot().members) == 5


def test_initial_rebalance_delay_without_new_joiners_ends_after_one_delay() -> None:
    h = Harness({**FAST, "group.initial.rebalance.delay.ms": 3000})
    a = h.member("a")
    c = a.join()
    h.advance(2999)
    assert h.response(c) is None
    h.advance(1)
    assert a.joined(c).error is None


def test_initial_rebalance_waits_even_if_everyone_joined() -> None:
    # Kafka never completes the initial join phase early: more members may come.
    h = Harness({**FAST, "group.initial.rebalance.delay.ms": 3000})
    c = h.member("a").join()
    h.advance(1000)
    assert h.response(c) is None


def test_join_phase_ends_as_soon_as_every_known_member_rejoined() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    ca = a.join()  # the leader rejoins: rebalance
    assert h.response(ca) is None
    assert b.heartbeat().error is RebalanceInProgressError
    cb = b.join()
    assert h.response(ca) is not None and h.response(cb) is not None
    assert a.joined(ca).generation_id == 2


def test_join_phase_ends_at_rebalance_timeout_dropping_dynamic_members_not_rejoined() -> None:
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=20_000, session_timeout_ms=60_000)
    b = h.member("b", rebalance_timeout_ms=5_000, session_timeout_ms=60_000)
    rebalance(h, [a, b])
    start = h.now
    ca = a.join()
    # The group's rebalance timeout is the largest member's: 20 s.
    assert h.coord.next_deadline() == start + 20_000
    h.advance_to(start + 19_999)
    assert h.response(ca) is None
    h.advance_to(start + 20_000)
    resp = a.joined(ca)
    assert resp.error is None and resp.generation_id == 2
    assert [m.member_id for m in resp.members] == [a.member_id]
    assert b.heartbeat().error is UnknownMemberIdError


def test_reason_is_truncated_to_255_characters_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    h = Harness()
    a = h.member("a", join_version=8)
    rebalance(h, [a])
    with caplog.at_level(logging.INFO, logger="groupcoord.coordinator"):
        a.join(reason="r" * 300)
    text = caplog.text
    assert "r" * 255 in text and "r" * 256 not in text


def test_leader_rejoining_stable_group_triggers_rebalance() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    assert a.is_leader
    a.join()
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_follower_rejoining_stable_group_unchanged_gets_current_generation() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    resp = h.response(b.join())
    assert resp.error is None and resp.generation_id == 1 and resp.members == ()
    assert resp.leader == a.member_id
    assert h.snapshot().state is GroupState.STABLE


def test_follower_rejoining_stable_group_with_new_metadata_triggers_rebalance() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    b.protocols = (("range", _meta("t", "u")),)
    assert h.response(b.join()) is None
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_rejoin_during_completing_rebalance_with_same_metadata_gets_same_generation() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    ca, cb = a.join(), b.join()
    h.advance(1000)
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    again = h.response(a.join())  # the leader lost its response and asks again
    assert again.error is None and again.generation_id == h.response(ca).generation_id
    assert len(again.members) == 2
    assert h.response(cb).error is None


def test_rejoin_during_completing_rebalance_with_new_metadata_rebalances() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    ca, cb = a.join(), b.join()
    h.advance(1000)
    a.joined(ca), b.joined(cb)
    cs = b.sync()  # the follower waits for the leader
    assert h.response(cs) is None
    b.protocols = (("range", _meta("t", "u")),)
    rejoin = b.join()
    # b's parked SyncGroup is answered REBALANCE_IN_PROGRESS, its JoinGroup waits.
    assert h.response(cs).error is RebalanceInProgressError
    assert h.response(rejoin) is None
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE


def test_group_max_size_rejects_new_members_but_not_existing_ones() -> None:
    h = Harness({**FAST, "group.max.size": 2})
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    resp = h.send(h.member("c", join_version=3).join_request())
    assert resp.error is GroupMaxSizeReachedError and resp.member_id == ""
    rebalance(h, [a, b])  # existing members still rejoin
    assert h.snapshot().generation_id == 2


def test_group_max_size_counts_rejoined_members_during_preparing_rebalance() -> None:
    # While PreparingRebalance, the members that already rejoined count against the
    # limit: a lowered group.max.size kicks out the last members to rejoin.
    h = Harness({**FAST, "group.max.size": 3})
    ms = [h.member(f"m{i}") for i in range(3)]
    rebalance(h, ms)
    h2 = Harness({**FAST, "group.max.size": 2}, store=h.store, now=h.now)
    for m in ms:
        m.h = h2
    assert h2.snapshot().state is GroupState.PREPARING_REBALANCE  # over capacity on load
    c0, c1 = ms[0].join(), ms[1].join()
    late = h2.response(ms[2].join())
    assert late.error is GroupMaxSizeReachedError
    assert h2.response(c0) is not None and h2.response(c1) is not None
    assert len(h2.snapshot().members) == 2


def test_duplicate_join_answers_the_superseded_request() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    first = a.join()
    second = a.join()
    assert h.response(first).error is RebalanceInProgressError
    assert h.response(second) is None
    b.join()
    assert h.response(second).error is None
    assert h.pending() == []


def test_join_request_validation() -> None:
    from groupcoord.errors import UnsupportedVersionError

    base = dict(
        group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=1, protocol_type="consumer"
    )
    with pytest.raises(UnsupportedVersionError):
        JoinGroupRequest(version=10, protocols=(), **base)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedVersionError):
        JoinGroupRequest(version=4, protocols=(), group_instance_id="i", **base)  # type: ignore[arg-type]
    with pytest.raises(UnsupportedVersionError):
        JoinGroupRequest(version=7, protocols=(), reason="x", **base)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="twice"):
        JoinGroupRequest(version=7, protocols=(("a", b""), ("a", b"")), **base)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        JoinGroupRequest(version=7, protocols=(("a", "str"),), **base)  # type: ignore[arg-type]
    req = JoinGroupRequest(version=7, protocols=[("a", bytearray(b"x"))], **base)  # type: ignore[arg-type]
    assert req.protocols == (("a", b"x"),)
    assert isinstance(JoinGroupResponse(version=0).error_code, int)
