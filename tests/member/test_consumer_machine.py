"""The KIP-848 member machine against the real coordinator in virtual time
(tests/member/consumer_member_harness.py checks one owner per partition and
revoke-before-assign throughout every test)."""

from __future__ import annotations

import pytest
from consumer_member_harness import ConsumerCluster, InvariantViolation

from groupcoord.config import ConfigError
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.messages import OffsetCommitRequest
from groupcoord.errors import GroupMaxSizeReachedError, UnsupportedAssignorError
from groupcoord.member.config import ConsumerMemberConfig
from groupcoord.member.consumer_machine import ConsumerMemberMachine
from groupcoord.member.consumer_states import (
    CONSUMER_TRANSITIONS,
    ConsumerMemberState,
    IllegalConsumerTransition,
    check_consumer_transition,
)
from groupcoord.member.listener import CallbackKind
from groupcoord.types import TopicPartition

S = ConsumerMemberState


def kinds(member: object) -> list[tuple[str, list[int]]]:
    return [(c.kind.value, sorted(tp.partition for tp in c.partitions)) for c in member.calls]  # type: ignore[attr-defined]


def sizes(cluster: ConsumerCluster) -> list[int]:
    return sorted(len(a) for a in cluster.assignments().values())


def test_one_member_joins_and_owns_everything() -> None:
    c = ConsumerCluster({"orders": 6})
    a = c.add("a")
    c.run_for(1_000)
    assert c.settled()
    assert a.machine.assignment == c.all_partitions()
    assert a.machine.state is S.STABLE and a.machine.generation >= 1
    assert kinds(a) == [("assigned", [0, 1, 2, 3, 4, 5])]


def test_scale_out_moves_only_what_the_new_member_gets_revoked_first() -> None:
    c = ConsumerCluster({"orders": 6})
    a = c.add("a")
    c.run_for(1_000)
    b = c.add("b")
    c.run_for(2_000)
    assert c.settled() and sizes(c) == [3, 3]
    revoked = [call for call in a.calls if call.kind is CallbackKind.REVOKED]
    assert len(revoked) == 1 and revoked[0].partitions == b.machine.assignment
    # a kept the rest throughout: nothing of it was revoked or lost
    assert not any(call.kind is CallbackKind.LOST for call in a.calls)
    assert b.machine.generation > 1


def test_clean_leave_hands_partitions_to_the_others() -> None:
    c = ConsumerCluster({"orders": 6})
    for name in "abc":
        c.add(name)
    c.run_for(3_000)
    assert c.settled() and sizes(c) == [2, 2, 2]
    leaving = c.members["c"]
    had = leaving.machine.assignment
    c.close("c")
    assert ("revoked", sorted(tp.partition for tp in had)) in kinds(leaving)
    c.run_for(2_000)
    assert leaving.machine.done and not leaving.running
    assert c.settled() and sizes(c) == [3, 3]


def test_crash_is_noticed_after_the_session_and_partitions_move() -> None:
    c = ConsumerCluster({"orders": 4})
    c.add("a")
    c.add("b")
    c.run_for(2_000)
    assert c.settled()
    c.crash("b")
    c.run_for(2_000)  # within group.consumer.session.timeout.ms (3 s): nothing moves yet
    assert sizes(c) == [2]
    c.run_for(3_000)
    assert c.settled() and sizes(c) == [4]


def test_fenced_member_loses_its_partitions_and_rejoins_under_its_id() -> None:
    c = ConsumerCluster({"orders": 4})
    a = c.add("a")
    b = c.add("b")
    c.run_for(2_000)
    before = b.machine.assignment
    assert before
    c.cut("b")  # the network fails: b's heartbeats do not arrive
    c.run_for(4_000)  # longer than the session: the coordinator drops b
    assert a.machine.assignment == c.all_partitions()
    # like Java's member, b does not know yet (the coordinator's session is not its own)
    assert b.machine.assignment == before
    c.heal("b")
    c.run_for(3_000)
    assert ("lost", sorted(tp.partition for tp in before)) in kinds(b)
    assert b.machine.member_id == "b-id"  # KIP-848: the member keeps its id
    assert c.settled() and sizes(c) == [2, 2]


def test_no_poll_for_max_poll_interval_leaves_then_the_next_poll_rejoins() -> None:
    c = ConsumerCluster({"orders": 4})
    c.add("a")
    b = c.add("b", max_poll_interval_ms=2_000)
    c.run_for(2_000)
    had = b.machine.assignment
    c.stall("b", 5_000)
    c.run_for(3_000)
    # b left at once (epoch -1), well before its session would have run out
    assert b.machine.state is S.STALE and b.machine.assignment == frozenset()
    assert c.members["a"].machine.assignment == c.all_partitions()
    c.run_for(4_000)  # b polls again: it hears of the loss, rejoins, gets a share back
    assert ("lost", sorted(tp.partition for tp in had)) in kinds(b)
    assert c.settled() and sizes(c) == [2, 2]


def test_static_member_that_closes_comes_back_to_its_partitions() -> None:
    c = ConsumerCluster({"orders": 6})
    c.add("a", instance_id="ia")
    s = c.add("s", instance_id="is")
    c.run_for(2_000)
    mine = s.machine.assignment
    assert len(mine) == 3
    c.close("s")
    c.run_for(1_000)  # -2: the coordinator keeps s's partitions for its session
    assert c.members["a"].machine.assignment == c.all_partitions() - mine
    back = c.add("s2", instance_id="is", member_id="s-new")
    c.run_for(1_000)
    assert back.machine.assignment == mine
    assert c.settled()


def test_close_before_joining_sends_nothing() -> None:
    c = ConsumerCluster({"orders": 2})
    a = c.add("a", poll_every_ms=10_000_000)
    a.next_poll_ms = 10_000_000  # never polls, so never joins
    c.close("a")
    assert a.machine.done and a.machine.state is S.UNSUBSCRIBED


def test_commits_carry_the_member_epoch_and_fetch_reads_them_back() -> None:
    c = ConsumerCluster({"orders": 2})
    a = c.add("a")
    c.run_for(1_000)
    handle = a.machine.commit({TopicPartition("orders", 0): 42}, c.now)
    sent = a.machine.next_requests(c.now)
    commit = next(r for r in sent if isinstance(r, OffsetCommitRequest))
    assert commit.generation_id_or_member_epoch == a.machine.member_epoch
    assert commit.member_id == "a-id" and commit.version >= 9
    # put it back through the cluster's routing (it was taken out by hand above)
    token = (a.incarnation, commit.correlation)  # type: ignore[attr-defined]
    import dataclasses

    c._routes[token] = a
    c._route(c.shell.handle(dataclasses.replace(commit, correlation=token), c.now))
    assert handle.done and handle.error is None
    fetch = a.machine.fetch_committed([("orders", 0), ("orders", 1)], c.now)
    c.run_for(10)
    assert fetch.done and fetch.error is None
    assert fetch.offsets == {TopicPartition("orders", 0): 42}


def test_assignment_of_an_unknown_topic_id_waits_for_metadata() -> None:
    c = ConsumerCluster({"orders": 2})
    a = c.add("a")
    a.machine.set_metadata({}, 0, {})  # what a member knows before its first Metadata
    a.machine._names.clear()
    a.machine._ids.clear()
    c.run_for(500)
    assert a.machine.needs_metadata and a.machine.assignment == frozenset()
    c._metadata(a)
    c.run_for(500)
    assert not a.machine.needs_metadata and a.machine.assignment == c.all_partitions()


def test_group_max_size_is_fatal_for_the_member_that_does_not_fit() -> None:
    settings = {
        "group.consumer.session.timeout.ms": 3_000,
        "group.consumer.min.session.timeout.ms": 1_000,
        "group.consumer.heartbeat.interval.ms": 500,
        "group.consumer.min.heartbeat.interval.ms": 100,
        "group.consumer.max.size": 1,
    }
    c = ConsumerCluster({"orders": 2}, settings)
    c.add("a")
    c.run_for(500)
    b = c.add("b")
    c.run_for(500)
    assert b.machine.state is S.FATAL
    assert isinstance(b.machine.fatal_error, GroupMaxSizeReachedError)
    handle = b.machine.commit({TopicPartition("orders", 0): 1}, c.now)
    assert handle.done and isinstance(handle.error, GroupMaxSizeReachedError)


def test_join_heartbeat_is_full_and_later_ones_send_only_changes() -> None:
    config = ConsumerMemberConfig(group_id="g", topics=["t"], max_poll_interval_ms=5_000)
    m = ConsumerMemberMachine(config, member_id="m1")
    m.coordinator_found(0)
    m.poll(0)
    (join,) = m.next_requests(0)
    assert isinstance(join, ConsumerGroupHeartbeatRequest)
    assert join.member_epoch == 0 and join.member_id == "m1"
    assert join.subscribed_topic_names == ("t",) and join.topic_partitions == ()
    assert join.rebalance_timeout_ms == 5_000
    m.receive(
        ConsumerGroupHeartbeatResponse(
            version=join.version,
            correlation=join.correlation,
            member_id="m1",
            member_epoch=3,
            heartbeat_interval_ms=400,
            assignment=(),
        ),
        5,
    )
    assert m.take_callbacks() and m.state is S.ACKNOWLEDGING
    (ack,) = m.next_requests(5)
    assert isinstance(ack, ConsumerGroupHeartbeatRequest)
    assert (
        ack.member_epoch == 3 and ack.topic_partitions == () and ack.subscribed_topic_names is None
    )
    m.receive(
        ConsumerGroupHeartbeatResponse(
            version=ack.version,
            correlation=ack.correlation,
            member_id="m1",
            member_epoch=3,
            heartbeat_interval_ms=400,
        ),
        6,
    )
    assert m.state is S.STABLE and m.next_deadline() == 406
    assert m.next_requests(300) == []
    (beat,) = m.next_requests(406)
    assert isinstance(beat, ConsumerGroupHeartbeatRequest)
    assert beat.topic_partitions is None and beat.rebalance_timeout_ms == -1


def test_unsupported_assignor_answer_is_fatal() -> None:
    config = ConsumerMemberConfig(group_id="g", topics=["t"], server_assignor="range")
    m = ConsumerMemberMachine(config)
    m.coordinator_found(0)
    m.poll(0)
    (join,) = m.next_requests(0)
    assert isinstance(join, ConsumerGroupHeartbeatRequest) and join.server_assignor == "range"
    m.receive(
        ConsumerGroupHeartbeatResponse(
            version=join.version, correlation=join.correlation, error=UnsupportedAssignorError
        ),
        1,
    )
    assert m.state is S.FATAL and isinstance(m.fatal_error, UnsupportedAssignorError)


def test_config_refuses_an_unknown_server_assignor() -> None:
    with pytest.raises(ConfigError, match=r"group\.remote\.assignor"):
        ConsumerMemberConfig(group_id="g", topics=["t"], server_assignor="sticky")


def test_transition_table_refuses_moves_it_does_not_list() -> None:
    for source, targets in CONSUMER_TRANSITIONS.items():
        for target in S:
            if target is source or target in targets:
                check_consumer_transition(source, target)
            else:
                with pytest.raises(IllegalConsumerTransition, match=source.value):
                    check_consumer_transition(source, target)


def test_harness_catches_a_double_owner() -> None:
    c = ConsumerCluster({"orders": 2})
    a = c.add("a")
    b = c.add("b")
    c.run_for(1_000)
    b.machine._owned = a.machine.assignment | b.machine.assignment
    with pytest.raises(InvariantViolation, match="owned by"):
        c._check_exclusive()


def test_a_revocation_waits_for_the_application_to_run_it() -> None:
    c = ConsumerCluster({"orders": 6})
    a = c.add("a")
    c.run_for(1_000)
    c.stall("a", 3_000)  # busy between polls, heartbeats go on
    b = c.add("b")
    c.run_for(2_500)
    # a's heartbeats keep it in the group, but it has not run on_partitions_revoked yet:
    # nothing of a's may reach b before it has
    assert a.machine.assignment == c.all_partitions()
    assert b.machine.assignment == frozenset()
    assert a.machine.state is S.RECONCILING
    c.run_for(2_000)
    assert c.settled() and sizes(c) == [3, 3]
