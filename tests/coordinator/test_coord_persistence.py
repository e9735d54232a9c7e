"""Durability as output: the coordinator hands out records, holds back the responses that
depend on them until the shell reports them, and answers a failed write with Kafka's
error. Driven by hand here (the shell is the test), so every window between a request and
its ``persisted`` report can be probed."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from groupcoord.coordinator import (
    DeleteGroupsRequest,
    GroupCoordinator,
    GroupRecord,
    GroupState,
    GroupTombstone,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberRemoved,
    MemoryOffsetStore,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetsRecord,
    Output,
    RebalanceCompleted,
    RemovalCause,
    SequentialMemberIds,
    SyncGroupRequest,
    WriteBatch,
)
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    RebalanceInProgressError,
)
from groupcoord.types import TopicPartition

TP = TopicPartition("t", 0)


class ManualShell:
    """Keeps the batches the coordinator hands out until the test persists them."""

    def __init__(self) -> None:
        self.coord = GroupCoordinator(
            {"group.initial.rebalance.delay.ms": 100, "group.min.session.timeout.ms": 10},
            member_id_factory=SequentialMemberIds(),
        )
        self.store = MemoryOffsetStore()
        self.batches: deque[WriteBatch] = deque()
        self.responses: dict[object, Any] = {}
        self.events: list[Any] = []
        self.now = 0

    def take(self, out: Output) -> Output:
        for r in out.responses:
            assert r.correlation not in self.responses, f"answered twice: {r}"
            self.responses[r.correlation] = r
        self.events += out.events
        if out.writes is not None:
            self.batches.append(out.writes)
        return out

    def send(self, request: Any) -> Output:
        return self.take(self.coord.handle(request, self.now))

    def tick(self, to: int) -> Output:
        self.now = to
        return self.take(self.coord.tick(to))

    def persist(self, ok: bool = True) -> Output:
        batch = self.batches.popleft()
        if ok:
            self.store.write(batch.records)
        return self.take(self.coord.persisted(batch.batch_id, ok, self.now))

    def state(self, group: str) -> GroupState | None:
        return self.coord.group_state(group)


def commit(correlation: int, offset: int, group: str = "g", **member: Any) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        version=8,
        correlation=correlation,
        group_id=group,
        generation_id_or_member_epoch=member.get("generation", -1),
        member_id=member.get("member_id", ""),
        topics=(
            OffsetCommitRequestTopic(
                name=TP.topic,
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=TP.partition, committed_offset=offset
                    ),
                ),
            ),
        ),
    )


def join(correlation: object, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        version=8,
        correlation=correlation,
        group_id="g",
        member_id=member_id,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type="consumer",
        protocols=(("range", b""),),
        client_id="c",
    )


def sync(correlation: object, member_id: str, generation: int, leader: bool) -> SyncGroupRequest:
    return SyncGroupRequest(
        version=5,
        correlation=correlation,
        group_id="g",
        generation_id=generation,
        member_id=member_id,
        protocol_type="consumer",
        protocol_name="range",
        assignments=((member_id, b"mine"),) if leader else (),
    )


def form_group(shell: ManualShell, members: int) -> tuple[list[str], int]:
    """``members`` members in a CompletingRebalance group (no SyncGroup sent yet)."""
    ids = []
    for i in range(members):
        shell.send(join(f"j{i}"))
        ids.append(shell.responses[f"j{i}"].member_id)  # MEMBER_ID_REQUIRED
        shell.send(join(f"J{i}", ids[-1]))
    while shell.state("g") is GroupState.PREPARING_REBALANCE:
        deadline = shell.coord.next_deadline()
        assert deadline is not None
        shell.tick(deadline)  # the initial delay (extended per new member) ends
    first = shell.responses["J0"]
    assert first.error is None
    assert shell.state("g") is GroupState.COMPLETING_REBALANCE
    return ids, first.generation_id


# ---------------------------------------------------------------------------- commits


def test_commit_is_answered_and_visible_only_once_persisted() -> None:
    shell = ManualShell()
    out = shell.send(commit(1, 5))
    assert out.responses == []
    assert out.writes is not None
    assert out.writes.records == (OffsetsRecord("g", {TP: out.writes.records[0].offsets[TP]}),)  # type: ignore[union-attr]
    assert shell.coord.committed_offsets("g") == {}  # a fetch does not see it yet
    assert shell.coord.unpersisted_batches == 1
    shell.persist()
    assert shell.responses[1].topics[0].partitions[0].error is None
    assert shell.coord.committed_offsets("g")[TP].committed_offset == 5
    assert shell.store.load().offsets["g"][TP].committed_offset == 5
    assert shell.coord.unpersisted_batches == 0


def test_a_failed_write_is_coordinator_not_available_and_keeps_the_old_offset() -> None:
    shell = ManualShell()
    shell.send(commit(1, 5))
    shell.persist()
    shell.send(commit(2, 6))
    shell.persist(ok=False)
    assert shell.responses[2].topics[0].partitions[0].error is CoordinatorNotAvailableError
    assert shell.coord.committed_offsets("g")[TP].committed_offset == 5


def test_batches_are_reported_in_the_order_they_were_handed_out() -> None:
    shell = ManualShell()
    first = shell.send(commit(1, 5)).writes
    second = shell.send(commit(2, 6)).writes
    assert first is not None and second is not None
    assert second.batch_id != first.batch_id
    with pytest.raises(ValueError, match=f"oldest unreported batch is {first.batch_id}"):
        shell.coord.persisted(second.batch_id, True, 0)
    shell.persist()
    shell.persist()
    assert [shell.responses[c].topics[0].partitions[0].error for c in (1, 2)] == [None, None]
    assert shell.coord.committed_offsets("g")[TP].committed_offset == 6


def test_one_call_hands_out_one_batch_and_heartbeats_none() -> None:
    shell = ManualShell()
    ids, generation = form_group(shell, 1)
    shell.send(sync("s", ids[0], generation, leader=True))
    shell.persist()
    out = shell.send(
        HeartbeatRequest(
            version=4, correlation="hb", group_id="g", generation_id=generation, member_id=ids[0]
        )
    )
    assert out == ([shell.responses["hb"]], None, ())
    assert shell.responses["hb"].error is None


# ---------------------------------------------------------------------------- SyncGroup


def test_the_assignment_is_sent_only_once_persisted() -> None:
    shell = ManualShell()
    (leader, follower), generation = form_group(shell, 2)
    shell.send(sync("f", follower, generation, leader=False))
    out = shell.send(sync("l", leader, generation, leader=True))
    assert out.responses == []
    assert out.writes is not None
    (record,) = out.writes.records
    assert isinstance(record, GroupRecord) and record.state == "Stable"
    # not Stable before the metadata is on disk
    assert shell.state("g") is GroupState.COMPLETING_REBALANCE
    shell.persist()
    assert shell.state("g") is GroupState.STABLE
    assert shell.responses["l"].error is None and shell.responses["f"].error is None
    assert shell.responses["l"].assignment == b"mine"


def test_a_failed_assignment_write_answers_coordinator_not_available_and_rebalances() -> None:
    shell = ManualShell()
    (leader,), generation = form_group(shell, 1)
    shell.send(sync("l", leader, generation, leader=True))
    shell.persist(ok=False)
    assert shell.responses["l"].error is CoordinatorNotAvailableError
    assert shell.state("g") is GroupState.PREPARING_REBALANCE


def test_an_assignment_persisted_after_the_generation_moved_on_releases_nothing() -> None:
    shell = ManualShell()
    (leader, follower), generation = form_group(shell, 2)
    shell.send(sync("l", leader, generation, leader=True))
    # the follower leaves before the assignment is on disk: a new rebalance answers the
    # leader's parked SyncGroup at once
    shell.send(LeaveGroupRequest(version=2, correlation="leave2", group_id="g", member_id=follower))
    assert shell.responses["l"].error is RebalanceInProgressError
    before = shell.coord.snapshot("g")
    shell.persist()
    assert shell.coord.snapshot("g") == before
    assert shell.state("g") is not GroupState.STABLE


# ---------------------------------------------------------------------------- DeleteGroups


def _empty_group_with_offset(shell: ManualShell) -> None:
    shell.send(commit(1, 5))
    shell.persist()


def test_a_deleted_group_is_dead_until_its_tombstone_is_persisted() -> None:
    shell = ManualShell()
    _empty_group_with_offset(shell)
    out = shell.send(DeleteGroupsRequest(version=2, correlation="del", groups_names=("g",)))
    assert out.responses == []
    assert out.writes is not None and out.writes.records == (GroupTombstone("g"),)
    assert shell.state("g") is GroupState.DEAD
    # nothing commits to a group being deleted
    late = shell.send(commit(2, 9))
    assert late.writes is None
    assert shell.responses[2].topics[0].partitions[0].error is CoordinatorNotAvailableError
    shell.persist()
    assert shell.responses["del"].results[0].error is None
    assert shell.coord.group_ids() == []
    assert shell.store.load().offsets == {}


def test_a_failed_delete_brings_the_group_back_as_it_was() -> None:
    shell = ManualShell()
    _empty_group_with_offset(shell)
    snapshot = shell.coord.snapshot("g")
    shell.send(DeleteGroupsRequest(version=2, correlation="del", groups_names=("g",)))
    shell.persist(ok=False)
    assert shell.responses["del"].results[0].error is CoordinatorNotAvailableError
    assert shell.coord.snapshot("g") == snapshot
    assert shell.coord.committed_offsets("g")[TP].committed_offset == 5
    # and it works as before: a commit goes through
    shell.send(commit(3, 6))
    shell.persist()
    assert shell.coord.committed_offsets("g")[TP].committed_offset == 6


# ---------------------------------------------------------------------------- events


def test_events_are_outputs_of_the_call_that_caused_them() -> None:
    shell = ManualShell()
    (leader,), generation = form_group(shell, 1)
    (completed,) = shell.events
    assert isinstance(completed, RebalanceCompleted)
    assert completed.members == (leader,) and completed.generation_id == generation
    shell.send(sync("l", leader, generation, leader=True))
    shell.persist()
    out = shell.tick(shell.now + 10_001)  # the session expires
    removed, emptied = out.events
    assert isinstance(removed, MemberRemoved)
    assert removed.member_id == leader and removed.cause is RemovalCause.SESSION_TIMEOUT
    assert isinstance(emptied, RebalanceCompleted) and emptied.members == ()
    # the empty generation is stored too
    assert out.writes is not None
    (record,) = out.writes.records
    assert isinstance(record, GroupRecord) and record.state == "Empty"
