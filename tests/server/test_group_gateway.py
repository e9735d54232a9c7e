"""The gateway between the event loop and the coordinator: immediate and parked answers,
the deadline timer. (OffsetCommit against the topics: tests/coordinator/test_coord_topic_view.py
and, over the wire, tests/server/test_server.py.)"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from groupcoord.coordinator import (
    GroupCoordinator,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    RebalanceCompleted,
    SequentialMemberIds,
)
from groupcoord.coordinator.messages import HeartbeatRequest
from groupcoord.server import WallClock
from groupcoord.server.group_gateway import GroupGateway, log_rebalance


def gateway(delay_ms: int = 0) -> GroupGateway:
    coordinator = GroupCoordinator(
        {"group.initial.rebalance.delay.ms": delay_ms}, member_id_factory=SequentialMemberIds()
    )
    clock = WallClock()
    return GroupGateway(coordinator, clock)


def test_parked_join_is_answered_by_the_timer() -> None:
    async def run() -> JoinGroupResponse:
        gw = gateway(delay_ms=200)
        join = JoinGroupRequest(
            version=3,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=(("range", b""),),
        )
        parked = gw.submit(join)
        assert isinstance(parked, asyncio.Future)
        assert gw.pending == 1
        # a heartbeat in the meantime is answered at once, not behind the join
        heartbeat = gw.submit(
            HeartbeatRequest(version=3, group_id="g", generation_id=0, member_id="x")
        )
        assert isinstance(heartbeat, HeartbeatResponse)
        # nothing else reaches the coordinator: only the gateway's timer can end the delay
        response = await asyncio.wait_for(parked, 10)
        gw.close()
        assert isinstance(response, JoinGroupResponse)
        return response

    response = asyncio.run(run())
    assert response.error is None and response.generation_id == 1


def test_close_cancels_parked_requests() -> None:
    async def run() -> None:
        gw = gateway(delay_ms=60_000)
        join = JoinGroupRequest(
            version=3,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocol_type="consumer",
            protocols=(("range", b""),),
        )
        parked = gw.submit(join)
        assert isinstance(parked, asyncio.Future)
        gw.close()
        assert parked.cancelled()
        assert gw.pending == 0
        after = gw.submit(join)
        assert isinstance(after, asyncio.Future) and after.cancelled()

    asyncio.run(run())


def test_rebalance_line_names_at_most_twenty_members(caplog: pytest.LogCaptureFixture) -> None:
    event = RebalanceCompleted(
        group_id="big",
        generation_id=7,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="m0",
        members=tuple(f"m{i}" for i in range(25)),
        reason="scale out",
        started_ms=1_000,
        completed_ms=1_250,
    )
    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        log_rebalance(event)
    (line,) = [r.getMessage() for r in caplog.records]
    assert "group=big generation=7 members=25" in line
    assert "m19, ... (+5 more)" in line and "m20" not in line
    assert "duration_ms=250 reason=scale out" in line


def test_wall_clock_starts_at_the_epoch_time_and_never_goes_back() -> None:
    before = time.time_ns() // 1_000_000
    clock = WallClock()
    readings = [clock() for _ in range(1000)]
    after = time.time_ns() // 1_000_000
    assert before <= readings[0] <= after + 1
    assert readings == sorted(readings)


def test_a_join_phase_without_members_is_logged_as_the_group_becoming_empty(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # what the coordinator emits when the last member leaves during a rebalance
    event = RebalanceCompleted(
        group_id="g",
        generation_id=4,
        protocol_type="consumer",
        protocol_name=None,
        leader_id=None,
        members=(),
        reason="removing member m1 on LeaveGroup",
        started_ms=1_000,
        completed_ms=1_000,
    )
    with caplog.at_level(logging.INFO, logger="groupcoord.server"):
        log_rebalance(event)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "group g with generation 4 is now empty: duration_ms=0"
        " reason=removing member m1 on LeaveGroup"
    )
