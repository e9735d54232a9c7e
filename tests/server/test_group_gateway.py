"""The gateway between the event loop and the coordinator: immediate and parked answers,
OffsetCommit filtering against the topic table, the deadline timer."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupCoordinator,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    RebalanceCompleted,
    SequentialMemberIds,
)
from groupcoord.coordinator.messages import HeartbeatRequest
from groupcoord.errors import UnknownTopicOrPartitionError
from groupcoord.server import WallClock
from groupcoord.server.group_gateway import GroupGateway, log_rebalance

TOPICS = {"a": 3, "b": 1}

commits = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-2, 5), st.integers(0, 10**6)),
    max_size=12,
)


def gateway(delay_ms: int = 0) -> GroupGateway:
    coordinator = GroupCoordinator(
        {"group.initial.rebalance.delay.ms": delay_ms}, member_id_factory=SequentialMemberIds()
    )
    clock = WallClock()
    return GroupGateway(coordinator, clock, lambda: TOPICS)


@settings(max_examples=60, deadline=None)
@given(items=commits)
def test_commit_answers_every_partition_in_request_order(
    items: list[tuple[str, int, int]],
) -> None:
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for topic, partition, offset in items:
        by_topic.setdefault(topic, []).append(
            OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
        )
    request = OffsetCommitRequest(
        version=8,
        group_id="g",
        topics=tuple(
            OffsetCommitRequestTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()
        ),
    )

    async def run() -> tuple[OffsetCommitResponse, GroupGateway]:
        gw = gateway()
        answer = gw.submit(request)
        assert not isinstance(answer, asyncio.Future)  # commits are answered at once
        assert isinstance(answer, OffsetCommitResponse)
        return answer, gw

    response, gw = asyncio.run(run())
    got = [(t.name, p.partition_index, p.error) for t in response.topics for p in t.partitions]
    expected = [
        (
            t,
            p.partition_index,
            None if 0 <= p.partition_index < TOPICS.get(t, 0) else UnknownTopicOrPartitionError,
        )
        for t, ps in by_topic.items()
        for p in ps
    ]
    assert got == expected
    committed = gw.coordinator.committed_offsets("g")
    assert {(tp.topic, tp.partition) for tp in committed} == {
        (t, i) for t, i, error in expected if error is None
    }


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
