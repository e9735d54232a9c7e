"""Every error path of the member, as the Java consumer handles it.

Most scenarios run against the real coordinator (member_harness). Answers our coordinator does
not give in that situation are written by hand as the coordinator's own response types and
fed to a member that the real coordinator brought to a known state.
"""

from __future__ import annotations

from member_harness import GROUP, Cluster, SimMember, member_config

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor
from groupcoord.assignors.base import Assignor
from groupcoord.coordinator.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    MemberIdRequiredError,
    NetworkException,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnsupportedVersionError,
)
from groupcoord.member import CallbackKind, CommitFailedError, MemberMachine, MemberState
from groupcoord.protocol import encode_assignment
from groupcoord.types import Assignment, TopicPartition

COOP = CooperativeStickyAssignor()


def _kinds(cluster: Cluster, name: str) -> list[str]:
    return [d.call.kind.value for d in cluster.delivered if d.member == name]


def _one_stable(assignor: object = COOP, **kw: object) -> tuple[Cluster, SimMember]:
    cluster = Cluster({"t": 4})
    member = cluster.add("a", member_config(["t"], [assignor], **kw))  # type: ignore[list-item, arg-type]
    cluster.run_for(300)
    assert member.machine.state is MemberState.STABLE
    return cluster, member


def _next_heartbeat(cluster: Cluster, machine: MemberMachine) -> HeartbeatRequest:
    deadline = machine.next_deadline()
    assert deadline is not None
    cluster.now = max(cluster.now, deadline)
    requests = machine.next_requests(cluster.now)
    beats = [r for r in requests if isinstance(r, HeartbeatRequest)]
    assert len(beats) == 1, requests
    return beats[0]


def _answer(request: HeartbeatRequest, error: type | None) -> HeartbeatResponse:
    return HeartbeatResponse(version=request.version, correlation=request.correlation, error=error)


# --------------------------------------------------------------------- join errors


def test_member_id_required_is_answered_by_rejoining_with_the_given_id() -> None:
    cluster = Cluster({"t": 2})
    cluster.add("a", member_config(["t"], [COOP]))
    cluster.run_for(200)
    joins = [r for _t, _n, r in cluster.sent if isinstance(r, JoinGroupRequest)]
    assert joins[0].member_id == ""
    assert joins[1].member_id != "" and joins[1].member_id == cluster.members["a"].machine.member_id
    assert cluster.is_settled()


def test_member_id_required_answer_sets_the_id_even_without_coordinator() -> None:
    machine = MemberMachine(member_config(["t"], [COOP]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    assert isinstance(join, JoinGroupRequest)
    machine.receive(
        JoinGroupResponse(
            version=join.version,
            correlation=join.correlation,
            error=MemberIdRequiredError,
            member_id="given-1",
        ),
        1,
    )
    (again,) = machine.next_requests(1)
    assert isinstance(again, JoinGroupRequest) and again.member_id == "given-1"
    assert again.reason is not None and "given-1" in again.reason


def test_fatal_join_error_is_stored_and_nothing_more_is_sent() -> None:
    machine = MemberMachine(member_config(["t"], [COOP]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.receive(
        JoinGroupResponse(
            version=join.version, correlation=join.correlation, error=GroupMaxSizeReachedError
        ),
        1,
    )
    assert isinstance(machine.fatal_error, GroupMaxSizeReachedError)
    assert machine.state is MemberState.FATAL
    machine.poll(2)
    assert machine.next_requests(10_000) == []
    assert machine.next_deadline() is None
    handle = machine.commit({TopicPartition("t", 0): 1}, 3)
    assert handle.done and handle.error is machine.fatal_error


def test_unknown_member_id_on_join_resets_the_id_and_rejoins() -> None:
    machine = MemberMachine(member_config(["t"], [COOP]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.receive(
        JoinGroupResponse(
            version=join.version, correlation=join.correlation, error=UnknownMemberIdError
        ),
        1,
    )
    (again,) = machine.next_requests(1)
    assert isinstance(again, JoinGroupRequest) and again.member_id == ""


def test_coordinator_error_on_join_rediscovers_after_backoff_then_rejoins() -> None:
    machine = MemberMachine(member_config(["t"], [COOP], retry_backoff_ms=70))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.receive(
        JoinGroupResponse(
            version=join.version, correlation=join.correlation, error=NotCoordinatorError
        ),
        5,
    )
    assert not machine.coordinator_known
    assert machine.next_requests(6) == []
    assert not machine.coordinator_lookup_due(74) and machine.coordinator_lookup_due(75)
    assert machine.next_deadline() == 75
    machine.coordinator_found(75)
    (again,) = machine.next_requests(75)
    assert isinstance(again, JoinGroupRequest)


def test_static_membership_needs_join_v5_and_a_cap_below_is_a_typed_fatal_error() -> None:
    config = member_config(["t"], [COOP], group_instance_id="i1")
    machine = MemberMachine(config)
    machine.set_max_versions({JoinGroupRequest.API_KEY: 4})
    machine.coordinator_found(0)
    machine.poll(0)
    assert machine.next_requests(0) == []
    assert isinstance(machine.fatal_error, UnsupportedVersionError)


def test_capped_versions_leave_out_fields_the_version_lacks() -> None:
    cluster = Cluster({"t": 2})
    member = cluster.add("a", member_config(["t"], [RangeAssignor()]))
    member.machine.set_max_versions({11: 3, 14: 2, 12: 2, 13: 2})
    cluster.run_for(300)
    assert cluster.is_settled()
    kinds = {type(r): r.version for _t, _n, r in cluster.sent}
    assert kinds[JoinGroupRequest] == 3 and kinds[SyncGroupRequest] == 2
    assert kinds[HeartbeatRequest] == 2
    joins = [r for _t, _n, r in cluster.sent if isinstance(r, JoinGroupRequest)]
    assert all(j.reason is None for j in joins)
    cluster.close("a")
    leaves = [r for _t, _n, r in cluster.sent if isinstance(r, LeaveGroupRequest)]
    assert len(leaves) == 1 and leaves[0].version == 2 and leaves[0].member_id


# --------------------------------------------------------------------- heartbeat errors


def test_rebalance_in_progress_on_heartbeat_requests_a_rejoin_and_keeps_heartbeating() -> None:
    cluster, a = _one_stable()
    a.poll_every_ms = 10_000  # the application is busy: the rejoin waits for its poll
    a.next_poll_ms = cluster.now + 10_000
    cluster.add("b", member_config(["t"], [COOP]))
    start = cluster.now
    cluster.run_for(700)
    assert a.machine.rejoin_needed and a.machine.state is MemberState.STABLE
    beats = [
        r for t, n, r in cluster.sent if n == "a" and t > start and isinstance(r, HeartbeatRequest)
    ]
    assert len(beats) >= 6  # session (1 s) kept alive through the pending rebalance
    a.poll_every_ms = 50
    a.next_poll_ms = cluster.now
    cluster.run_for(1_000)
    assert cluster.is_settled()


def test_illegal_generation_on_heartbeat_marks_partitions_lost_and_rejoins() -> None:
    cluster, a = _one_stable()
    owned = a.machine.assignment
    beat = _next_heartbeat(cluster, a.machine)
    a.machine.receive(_answer(beat, IllegalGenerationError), cluster.now)
    assert a.machine.generation == -1 and a.machine.member_id == ""
    assert a.machine.assignment == frozenset()
    (lost,) = a.machine.peek_callbacks()
    assert lost.kind is CallbackKind.LOST and lost.partitions == owned
    assert a.machine.rejoin_needed


def test_stale_unknown_member_answer_after_a_rejoin_is_ignored() -> None:
    cluster, a = _one_stable()
    beat = _next_heartbeat(cluster, a.machine)
    stale = HeartbeatRequest(
        version=beat.version,
        correlation=beat.correlation,
        group_id=GROUP,
        generation_id=beat.generation_id - 1,
        member_id=beat.member_id,
    )
    a.machine._inflight[beat.correlation].request = stale  # an answer to an older beat
    a.machine.receive(_answer(stale, UnknownMemberIdError), cluster.now)
    assert a.machine.state is MemberState.STABLE and a.machine.assignment


def test_session_expiry_at_the_coordinator_means_lost_partitions_and_a_fresh_join() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP]))
    cluster.add("b", member_config(["t"], [COOP]))
    cluster.run_for(2_000)
    assert cluster.is_settled()
    a_owned = a.machine.assignment
    cluster.drop_to.add("a")  # a's requests vanish: the coordinator expires its session
    cluster.run_for(1_500)
    assert (
        not (cluster.members["b"].machine.assignment & a_owned)
        or a.machine.assignment == frozenset()
    )
    cluster.drop_to.clear()
    cluster.run_for(3_000)
    assert "lost" in _kinds(cluster, "a")
    assert cluster.is_settled()


def test_fenced_instance_id_is_fatal_for_the_replaced_static_member() -> None:
    cluster = Cluster({"t": 4}, exclusive=False)
    old = cluster.add("old", member_config(["t"], [COOP], group_instance_id="same"))
    cluster.run_for(500)
    cluster.add("new", member_config(["t"], [COOP], group_instance_id="same"))
    cluster.run_for(1_000)
    assert isinstance(old.machine.fatal_error, FencedInstanceIdError)
    assert old.machine.state is MemberState.FATAL
    assert cluster.members["new"].machine.state is MemberState.STABLE
    assert old.machine.assignment == frozenset() and _kinds(cluster, "old")[-1] == "lost"


def test_coordinator_not_available_on_heartbeat_then_found_again_resumes() -> None:
    cluster, a = _one_stable()
    generation = a.machine.generation
    beat = _next_heartbeat(cluster, a.machine)
    a.machine.receive(_answer(beat, CoordinatorNotAvailableError), cluster.now)
    assert not a.machine.coordinator_known
    cluster.run_for(1_000)  # the harness looks it up again when due
    assert a.machine.coordinator_known and a.machine.generation == generation
    assert cluster.is_settled()


def test_transport_failure_of_a_commit_requeues_it_after_rediscovery() -> None:
    cluster, a = _one_stable()
    handle = a.machine.commit({TopicPartition("t", 0): 5}, cluster.now)
    (commit,) = [
        r for r in a.machine.next_requests(cluster.now) if isinstance(r, OffsetCommitRequest)
    ]
    a.machine.request_failed(commit, NetworkException, cluster.now)
    assert not a.machine.coordinator_known and not handle.done
    cluster.run_for(500)
    assert handle.done and handle.error is None
    assert (
        cluster.coordinator.committed_offsets(GROUP)[TopicPartition("t", 0)].committed_offset == 5
    )


# --------------------------------------------------------------------- sync errors


def test_rebalance_in_progress_on_sync_rejoins_without_a_new_poll() -> None:
    machine = MemberMachine(member_config(["t"], [COOP]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.receive(
        JoinGroupResponse(
            version=join.version,
            correlation=join.correlation,
            generation_id=1,
            protocol_type="consumer",
            protocol_name=COOP.name,
            leader="other",
            member_id="me",
        ),
        1,
    )
    (sync,) = machine.next_requests(1)
    assert isinstance(sync, SyncGroupRequest) and sync.assignments == ()
    machine.receive(
        SyncGroupResponse(
            version=sync.version, correlation=sync.correlation, error=RebalanceInProgressError
        ),
        2,
    )
    (again,) = machine.next_requests(2)
    assert isinstance(again, JoinGroupRequest) and again.member_id == "me"


# --------------------------------------------------------------------- commits


def _commit_answer(request: OffsetCommitRequest, error: type | None) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        version=request.version,
        correlation=request.correlation,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=p.partition_index, error=error)
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
    )


def test_rebalance_in_progress_on_commit_is_retried_once_the_rebalance_completes() -> None:
    cluster, a = _one_stable()
    handle = a.machine.commit({TopicPartition("t", 1): 42}, cluster.now)
    (commit,) = [
        r for r in a.machine.next_requests(cluster.now) if isinstance(r, OffsetCommitRequest)
    ]
    a.machine.receive(_commit_answer(commit, RebalanceInProgressError), cluster.now)
    assert not handle.done and a.machine.rejoin_needed
    cluster.run_for(1_000)
    assert handle.done and handle.error is None
    assert (
        cluster.coordinator.committed_offsets(GROUP)[TopicPartition("t", 1)].committed_offset == 42
    )
    resent = [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, OffsetCommitRequest)]
    assert resent and resent[-1].generation_id > commit.generation_id


def test_commit_answered_unknown_member_fails_with_commit_failed_and_loses_partitions() -> None:
    cluster, a = _one_stable()
    handle = a.machine.commit({TopicPartition("t", 1): 42}, cluster.now)
    (commit,) = [
        r for r in a.machine.next_requests(cluster.now) if isinstance(r, OffsetCommitRequest)
    ]
    a.machine.receive(_commit_answer(commit, UnknownMemberIdError), cluster.now)
    assert handle.done and isinstance(handle.error, CommitFailedError)
    assert handle.partition_errors == {TopicPartition("t", 1): UnknownMemberIdError}
    assert [c.kind for c in a.machine.peek_callbacks()] == [CallbackKind.LOST]


def test_commit_during_a_rebalance_waits_for_the_new_generation() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP]))
    b = cluster.add("b", member_config(["t"], [COOP]))
    cluster.run_for(2_000)
    b.slow(cluster.now, 800)  # b is busy: the join phase waits for it
    cluster.add("c", member_config(["t"], [COOP]))
    cluster.run_for(400)
    assert a.machine.state is MemberState.PREPARING_REBALANCE
    before = cluster.coordinator_generation()
    handle = a.machine.commit({TopicPartition("t", 0): 7}, cluster.now)
    cluster.run_for(10)
    assert not handle.done
    cluster.run_for(2_000)
    assert handle.done and handle.error is None
    commits = [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, OffsetCommitRequest)]
    assert commits[0].generation_id > before
    assert (
        cluster.coordinator.committed_offsets(GROUP)[TopicPartition("t", 0)].committed_offset == 7
    )


def test_fetch_committed_returns_only_partitions_with_an_offset() -> None:
    cluster, a = _one_stable()
    done = a.machine.commit({TopicPartition("t", 2): 9}, cluster.now)
    cluster.run_for(50)
    assert done.done
    fetch = a.machine.fetch_committed([TopicPartition("t", 2), TopicPartition("t", 3)], cluster.now)
    cluster.run_for(50)
    assert fetch.done and fetch.error is None
    assert fetch.offsets == {TopicPartition("t", 2): 9}


# --------------------------------------------------------------------- poll timeout


def test_slow_processing_beyond_session_but_within_max_poll_keeps_the_generation() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add(
        "a", member_config(["t"], [COOP], session_timeout_ms=500, max_poll_interval_ms=5_000)
    )
    cluster.add(
        "b", member_config(["t"], [COOP], session_timeout_ms=500, max_poll_interval_ms=5_000)
    )
    cluster.run_for(2_000)
    assert cluster.is_settled()
    generation = cluster.coordinator_generation()
    a.slow(cluster.now, 3_000)  # 6 session timeouts, below max.poll.interval.ms
    cluster.run_for(4_000)
    assert cluster.coordinator_generation() == generation
    assert a.machine.generation == generation and not a.machine.poll_expired


def test_dynamic_member_past_max_poll_leaves_loses_partitions_and_rejoins_on_poll() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP], max_poll_interval_ms=1_500))
    b = cluster.add("b", member_config(["t"], [COOP], max_poll_interval_ms=1_500))
    cluster.run_for(2_000)
    assert cluster.is_settled()
    a_owned = a.machine.assignment
    a.slow(cluster.now, 2_500)
    cluster.run_for(2_000)  # past a's max.poll.interval, a has not polled yet
    leaves = [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, LeaveGroupRequest)]
    assert len(leaves) == 1 and "poll" in (leaves[0].members[0].reason or "")
    assert a.machine.poll_expired and a.machine.assignment == frozenset()
    assert a_owned <= b.machine.assignment  # the partitions moved to b
    late = a.machine.commit({next(iter(a_owned)): 1}, cluster.now)
    assert late.done and isinstance(late.error, CommitFailedError)
    cluster.run_for(3_000)  # a polls again and rejoins
    assert "lost" in _kinds(cluster, "a")
    assert cluster.is_settled() and a.machine.assignment


def test_static_member_past_max_poll_sends_no_leave_and_stops_heartbeating() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add(
        "a",
        member_config(["t"], [COOP], max_poll_interval_ms=1_500, group_instance_id="a-1"),
    )
    cluster.run_for(1_000)
    a.slow(cluster.now, 3_000)
    cluster.run_for(2_000)
    assert a.machine.poll_expired
    after = cluster.now - 400
    assert not [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, LeaveGroupRequest)]
    assert not [
        r for t, n, r in cluster.sent if n == "a" and t > after and isinstance(r, HeartbeatRequest)
    ]
    cluster.run_for(2_000)
    assert cluster.is_settled() and a.machine.assignment == cluster.all_partitions()


# --------------------------------------------------------------------- close


def test_close_revokes_then_leaves_and_the_partitions_move() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP]))
    b = cluster.add("b", member_config(["t"], [COOP]))
    cluster.run_for(2_000)
    cluster.close("a")
    assert _kinds(cluster, "a")[-1] == "revoked"
    assert [r for _t, n, r in cluster.sent if n == "a" and isinstance(r, LeaveGroupRequest)]
    cluster.run_for(1_000)
    assert a.machine.done
    assert b.machine.assignment == cluster.all_partitions()


def test_static_member_close_sends_no_leave() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP], group_instance_id="s"))
    cluster.run_for(500)
    cluster.close("a")
    assert not [r for _t, n, r in cluster.sent if isinstance(r, LeaveGroupRequest)]
    assert a.machine.done and a.machine.state is MemberState.CLOSED


def _joined_by_hand(partitions: list[int], assignor: Assignor = COOP) -> MemberMachine:
    """A follower brought to STABLE by hand-written coordinator answers; its assigned call is
    still undelivered (the application has not polled since)."""
    machine = MemberMachine(member_config(["t"], [assignor]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.receive(
        JoinGroupResponse(
            version=join.version,
            correlation=join.correlation,
            generation_id=1,
            protocol_type="consumer",
            protocol_name=assignor.name,
            leader="other",
            member_id="me",
        ),
        1,
    )
    (sync,) = machine.next_requests(1)
    payload = encode_assignment(Assignment([TopicPartition("t", p) for p in partitions]))
    machine.receive(
        SyncGroupResponse(version=sync.version, correlation=sync.correlation, assignment=payload),
        2,
    )
    assert machine.state is MemberState.STABLE
    return machine


def test_partitions_lost_before_the_application_heard_of_them_are_never_announced() -> None:
    machine = _joined_by_hand([0, 1])
    (beat,) = machine.next_requests(200)
    machine.receive(_answer(beat, IllegalGenerationError), 201)
    # neither "assigned {0, 1}" (they are gone) nor "lost {0, 1}" (it never had them)
    assert machine.peek_callbacks() == ()


def test_lost_covers_only_what_the_application_was_told() -> None:
    machine = _joined_by_hand([0, 1])
    assert [c.kind for c in machine.take_callbacks()] == [CallbackKind.ASSIGNED]
    (beat,) = machine.next_requests(200)
    machine.receive(_answer(beat, UnknownMemberIdError), 201)
    (lost,) = machine.peek_callbacks()
    assert lost.kind is CallbackKind.LOST
    assert lost.partitions == {TopicPartition("t", 0), TopicPartition("t", 1)}


def test_a_poll_after_max_poll_interval_without_any_tick_still_leaves_and_rejoins() -> None:
    machine = _joined_by_hand([0, 1])
    machine.take_callbacks()
    late = 2 + machine.config.max_poll_interval_ms + 1  # nobody called the machine meanwhile
    machine.poll(late)
    assert [c.kind for c in machine.peek_callbacks()] == [CallbackKind.LOST]
    requests = machine.next_requests(late)
    assert [type(r) for r in requests] == [LeaveGroupRequest, JoinGroupRequest]
    leave = requests[0]
    assert isinstance(leave, LeaveGroupRequest) and leave.members[0].member_id == "me"
    assert not machine.poll_expired  # the poll that noticed it already started the rejoin


def test_a_failed_coordinator_lookup_pushes_the_next_one_back() -> None:
    machine = MemberMachine(member_config(["t"], [COOP], retry_backoff_ms=40))
    assert machine.coordinator_lookup_due(0)
    machine.coordinator_lookup_failed(10)
    assert not machine.coordinator_lookup_due(49)
    assert machine.coordinator_lookup_due(50) and machine.next_deadline() == 50


def test_commits_between_losing_the_membership_and_rejoining_fail() -> None:
    machine = _joined_by_hand([0, 1])
    machine.take_callbacks()
    (beat,) = machine.next_requests(200)
    machine.receive(_answer(beat, UnknownMemberIdError), 201)
    machine.poll(202)  # the rejoin is under way
    assert machine.state in (MemberState.UNJOINED, MemberState.PREPARING_REBALANCE)
    handle = machine.commit({TopicPartition("t", 0): 3}, 203)
    assert handle.done and isinstance(handle.error, CommitFailedError)
    assert not [r for r in machine.next_requests(204) if isinstance(r, OffsetCommitRequest)]


def test_a_member_too_busy_to_rejoin_a_pending_rebalance_gives_its_partitions_up_in_time() -> None:
    cluster = Cluster({"t": 4})
    a = cluster.add("a", member_config(["t"], [COOP], max_poll_interval_ms=3_000))
    b = cluster.add("b", member_config(["t"], [COOP], max_poll_interval_ms=3_000))
    cluster.run_for(2_000)
    a_owned = a.machine.assignment
    assert a_owned and cluster.is_settled()
    # between two of a's heartbeats, c joins: a rebalance starts; a polls once before
    # its next heartbeat could tell it, then stays busy for less than max.poll.interval.ms
    while not [t for t, n, r in cluster.sent if n == "a" and t == cluster.now - 50]:
        cluster.run_for(1)  # halfway between two of a's heartbeats
    cluster.add("c", member_config(["t"], [COOP], max_poll_interval_ms=3_000))
    a.next_poll_ms = cluster.now + 5
    cluster.run_for(5)
    assert not a.machine.rejoin_needed
    a.slow(cluster.now, 2_997)  # next poll 2 ms before its own max.poll.interval.ms
    # the rebalance c started ends (rebalance timeout) before a polls again: a must count
    # its partitions lost before anyone else can get them (the harness checks it)
    cluster.run_for(8_000)
    assert "lost" in [d.call.kind.value for d in cluster.delivered if d.member == "a"]
    assert cluster.is_settled()
    assert b.machine.assignment and a.machine.assignment


def test_a_revocation_not_yet_delivered_becomes_lost_when_the_membership_goes() -> None:
    machine = _joined_by_hand([0, 1], RangeAssignor())
    machine.take_callbacks()
    (beat,) = machine.next_requests(200)
    machine.receive(_answer(beat, RebalanceInProgressError), 200)
    machine.poll(201)  # eager: revoke everything before rejoining...
    assert [c.kind for c in machine.peek_callbacks()] == [CallbackKind.REVOKED]
    (beat,) = machine.next_requests(300)  # ...but the application has not heard it yet
    machine.receive(_answer(beat, IllegalGenerationError), 300)
    (lost,) = machine.peek_callbacks()
    assert lost.kind is CallbackKind.LOST
    assert lost.partitions == {TopicPartition("t", 0), TopicPartition("t", 1)}


def test_request_failed_with_a_non_kafka_error_counts_as_a_transport_failure() -> None:
    machine = MemberMachine(member_config(["t"], [COOP]))
    machine.coordinator_found(0)
    machine.poll(0)
    (join,) = machine.next_requests(0)
    machine.request_failed(join, ConnectionResetError, 1)  # type: ignore[arg-type]
    assert not machine.coordinator_known and machine.state is MemberState.UNJOINED
    machine.coordinator_found(200)
    assert [type(r) for r in machine.next_requests(200)] == [JoinGroupRequest]
