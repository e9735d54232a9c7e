"""Rebalance events: one per completed join phase, with its cause and duration, returned
in the coordinator's output and delivered to a shell's listeners."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupCoordinator,
    JoinGroupRequest,
    JoinGroupResponse,
    RebalanceCompleted,
    SequentialMemberIds,
    SyncShell,
)


def join(member_id: str = "", reason: str | None = None, version: int = 8) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=version,
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=(("range", b""),),
        reason=reason,
        client_id="c",
    )


def test_initial_rebalance_reports_members_generation_and_delay() -> None:
    coord = GroupCoordinator(
        {"group.initial.rebalance.delay.ms": 3000}, member_id_factory=SequentialMemberIds()
    )
    # v4+: the first join is answered MEMBER_ID_REQUIRED with an id to rejoin with
    (first,), _, events = coord.handle(join(reason="starting up"), 1000)
    assert isinstance(first, JoinGroupResponse)
    assert events == ()
    assert coord.handle(join(first.member_id, reason="starting up"), 1000) == ([], None, ())
    released, writes, events = coord.tick(4000)
    assert len(released) == 1
    assert writes is None  # a rebalance to a non-empty generation stores nothing yet
    (event,) = events
    assert isinstance(event, RebalanceCompleted)
    assert event.group_id == "g"
    assert event.generation_id == 1
    assert event.members == (first.member_id,)
    assert event.leader_id == first.member_id
    assert event.protocol_name == "range"
    assert event.duration_ms == 3000
    assert "starting up" in event.reason


@settings(max_examples=20, deadline=None)
@given(delay=st.integers(0, 10_000), start=st.integers(0, 10**9))
def test_duration_is_the_time_from_first_join_to_the_new_generation(delay: int, start: int) -> None:
    events: list[RebalanceCompleted] = []
    shell = SyncShell(
        None,
        {"group.initial.rebalance.delay.ms": delay},
        member_id_factory=SequentialMemberIds(),
        now_ms=start,
    )
    shell.add_rebalance_listener(events.append)
    (first,) = shell.handle(join(), start)
    shell.handle(join(first.member_id), start)
    shell.tick(start + delay)
    assert [e.duration_ms for e in events] == [delay]
    assert events[0].started_ms == start
