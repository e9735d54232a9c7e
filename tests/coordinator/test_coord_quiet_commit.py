"""``GroupCoordinator.quiet_offset_commit`` (through ``SyncShell.quiet_offset_commit``), and
``quiet_commit_offsets`` with ``commits.quiet_commit_answer``, do exactly what
``handle(OffsetCommitRequest)`` and the shell's write do whenever they accept, and nothing
when they decline.

Two coordinators are driven by the same hypothesis-drawn script (members joining, syncing,
heartbeating, committing with right and wrong generations, ids and instance ids, a
partition named twice, metadata too long, v0 commits, leaving, writes failing, and time
passing past session and rebalance deadlines): one handles every request, the other tries
``quiet_offset_commit`` first for commits and handles the request only when it declines.
After every step both have released the same responses, and hold the same groups,
deadlines, committed offsets, stored offsets and batch numbering.
"""

from __future__ import annotations

from typing import Any

import pytest
import twin_harness
from coord_harness import FakeMember, rebalance
from hypothesis import event, given, settings
from hypothesis import strategies as st
from twin_harness import GROUP, run_steps

from groupcoord.coordinator import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from groupcoord.coordinator.commits import quiet_commit_answer
from groupcoord.coordinator.offsets import OffsetsRecord, committed_at
from groupcoord.types import TopicPartition

CONFIG = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    "offset.metadata.max.bytes": 8,
}
STEP = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 3)),
    st.tuples(st.just("sync"), st.integers(0, 3)),
    st.tuples(st.just("heartbeat"), st.integers(0, 3)),
    st.tuples(
        st.just("commit"),
        st.integers(0, 3),
        st.sampled_from(
            [
                "right",
                "right",
                "right",
                "two-topics",
                "old-generation",
                "unknown-id",
                "instance",
                "twice",
                "long-metadata",
                "empty",
                "v0",
                "retention",
            ]
        ),
        st.integers(0, 1_000),
    ),
    st.tuples(st.just("leave"), st.integers(0, 3)),
    st.tuples(st.just("settle"), st.integers(1, 4)),
    st.tuples(st.just("fail-writes"), st.booleans()),
    st.tuples(st.just("advance"), st.sampled_from([1, 500, 2_000, 6_000, 12_000])),
)


class Twin(twin_harness.Twin):
    """Harness ``b`` takes commits through quiet_offset_commit."""

    def __init__(self, config: dict[str, object] = CONFIG) -> None:
        super().__init__(config)

    def quiet_answer(self, request: Any) -> Any:
        if not isinstance(request, OffsetCommitRequest):
            return None
        return self.b.shell.quiet_offset_commit(request, self.b.now)


class OffsetsTwin(Twin):
    """Harness ``b`` takes commits through quiet_commit_offsets: the request as ``like``
    and its own offsets (the simulator's processing lane passes the machine's request and
    new offsets), the answer built by quiet_commit_answer."""

    def quiet_answer(self, request: Any) -> Any:
        if not isinstance(request, OffsetCommitRequest):
            return None
        offsets = {
            TopicPartition(t.name, p.partition_index): p.committed_offset
            for t in request.topics
            for p in t.partitions
        }
        if len(offsets) != sum(len(t.partitions) for t in request.topics):
            return None  # a partition named twice: no such request is ever a ``like``
        taken = self.b.shell.quiet_commit_offsets(request, offsets, self.b.now)
        return None if taken is None else quiet_commit_answer(request, taken)


TWINS = pytest.mark.parametrize("twin_type", [Twin, OffsetsTwin], ids=["request", "offsets"])


def _commit(m: FakeMember, how: str, offset: int) -> None:
    if how == "old-generation":
        m.commit({("t", 0): offset}, generation_id_or_member_epoch=m.generation - 1)
    elif how == "unknown-id":
        m.commit({("t", 0): offset}, member_id=m.member_id + "x")
    elif how == "instance":
        m.commit({("t", 0): offset}, group_instance_id="other")
    elif how == "two-topics":
        m.commit({("t", 0): offset, ("t", 1): offset + 1, ("u", 2): offset})
    elif how == "twice":
        m.commit({}, topics=_twice_topics(offset))
    elif how == "long-metadata":
        m.commit({("t", 0): offset, ("t", 1): offset}, metadata="x" * 9)
    elif how == "empty":
        m.commit({})
    elif how == "v0":
        m.commit({("t", 0): offset}, version=0)
    elif how == "retention":
        m.commit({("t", 3): offset}, version=2, retention_time_ms=60_000)
    else:
        m.commit({("t", 0): offset, ("t", 1): offset})


def _twice_topics(offset: int) -> tuple[OffsetCommitRequestTopic, ...]:
    """Partition 0 of topic t named twice in one request."""
    parts = tuple(
        OffsetCommitRequestPartition(partition_index=0, committed_offset=offset + i)
        for i in range(2)
    )
    return (OffsetCommitRequestTopic(name="t", partitions=parts),)


@TWINS
@settings(max_examples=150, deadline=None)
@given(
    static=st.lists(st.booleans(), min_size=4, max_size=4),
    steps=st.lists(STEP, min_size=1, max_size=60),
)
def test_quiet_commit_is_handle_when_it_accepts(
    twin_type: type[Twin], static: list[bool], steps: list[Any]
) -> None:
    twin = twin_type()
    members = twin.members(static)
    twin.wire()

    def act(step: Any) -> None:
        if step[0] == "fail-writes":
            twin.a.store.fail_writes = twin.b.store.fail_writes = step[1]
        elif step[0] == "heartbeat":
            members[step[1]].heartbeat()
        else:  # commit
            _commit(members[step[1]], step[2], step[3])

    run_steps(twin, members, steps, act)
    event(f"quiet commits: {min(twin.quiet, 3)}{'+' if twin.quiet >= 3 else ''}")


@TWINS
def test_the_quiet_case_is_taken(twin_type: type[Twin]) -> None:
    """Not vacuous: a stable group's commits go through the quiet path; a failed write is
    answered as handle() answers it; a deadline due first is handle()'s."""
    twin = twin_type({**CONFIG, "group.initial.rebalance.delay.ms": 100})
    twin.wire()
    members = [FakeMember(twin.a, f"c{i}", group_id=GROUP) for i in range(2)]
    rebalance(twin.a, members)
    twin.check()
    for i in range(5):
        twin.advance(1_000)
        for m in members:
            m.commit({("t", 0): i, ("t", 1): 2 * i})
        twin.check()
    assert twin.quiet == 10
    twin.a.store.fail_writes = twin.b.store.fail_writes = True
    members[0].commit({("t", 0): 99})
    twin.check()
    assert twin.quiet == 11
    twin.a.store.fail_writes = twin.b.store.fail_writes = False
    twin.advance(20_000)
    members[0].commit({("t", 0): 100})
    twin.check()
    assert twin.quiet == 11


class TakenTwin(OffsetsTwin):
    """Harness ``b`` as the simulator's processing lane drives it: a member's commit goes
    through quiet_commit_offsets until one is taken; from then on, while nothing else has
    reached ``b`` (no handle, no tick), the member's commits are taken without a call into
    the coordinator (its session refreshed by its expiry handle, its record kept aside)
    and handed over with ``store_taken_commits`` before anything else reaches ``b``."""

    def __init__(self, config: dict[str, object] = CONFIG) -> None:
        super().__init__(config)
        #: handle() and tick() calls on b: a member known in an older version is not
        self.version = 0
        #: what a lane member's commits share (see ``shape``) -> (version, expiry handle,
        #: session timeout)
        self.known: dict[tuple[Any, ...], tuple[int, int, int]] = {}
        self.taken: list[OffsetsRecord] = []
        self.taken_here = 0

    def hand_over(self) -> None:
        if self.taken:
            self.b.shell.store_taken_commits(GROUP, self.taken)
            self.taken = []

    def quiet_answer(self, request: Any) -> Any:
        if not isinstance(request, OffsetCommitRequest):
            return self.declined()
        offsets = [
            (TopicPartition(t.name, p.partition_index), p.committed_offset)
            for t in request.topics
            for p in t.partitions
        ]
        shape = self.shape(request)
        known = self.known.get(shape)
        expiry = self.b.coord.member_expiry
        due = expiry.next_deadline()
        if (
            known is not None
            and known[0] == self.version
            and offsets
            and (due is None or due > self.b.now)
        ):
            _, handle, session = known
            expiry.heartbeat_handle(handle, self.b.now, session)
            # the record quiet_commit_offsets writes
            now = self.b.now
            self.taken.append(
                OffsetsRecord(GROUP, {tp: committed_at(o, now) for tp, o in sorted(offsets)})
            )
            self.taken_here += 1
            return quiet_commit_answer(request, True)
        self.hand_over()
        answer = super().quiet_answer(request)
        if answer is None:
            return self.declined()
        if not any(p.error for t in answer.topics for p in t.partitions):
            deadline = expiry.deadline(GROUP, request.member_id, "session")
            assert deadline is not None
            self.known[shape] = (
                self.version,
                expiry.handle(GROUP, request.member_id),
                deadline - self.b.now,
            )
        return answer

    @staticmethod
    def shape(request: OffsetCommitRequest) -> tuple[Any, ...]:
        """What every commit of one lane member has in common: it sends one request again
        and again (``like``), with new offsets."""
        return (
            request.version,
            request.member_id,
            request.generation_id_or_member_epoch,
            request.group_instance_id,
            request.retention_time_ms,
            tuple(
                (p.committed_leader_epoch, p.commit_timestamp, p.committed_metadata)
                for t in request.topics
                for p in t.partitions
            ),
        )

    def declined(self) -> None:
        """b handles the request next: what was taken goes first, and the members known
        are not any more."""
        self.hand_over()
        self.version += 1
        return None

    def advance(self, ms: int) -> list[Any]:
        self.declined()
        return super().advance(ms)

    def check(self) -> None:
        self.hand_over()
        super().check()


#: a member commits 1-4 times in a row (member 0 last: the first settle leaves it a
#: generation behind, and hypothesis favours the first choice)
COMMIT = st.tuples(
    st.just("commit"),
    st.sampled_from([1, 2, 3, 0]),
    st.sampled_from(["right"] * 6 + ["two-topics", "old-generation", "unknown-id", "retention"]),
    st.integers(0, 1_000),
    st.integers(1, 4),
)
#: STEP without failing writes, half of them commits
TAKEN_STEP = st.one_of(
    COMMIT,
    st.one_of(
        st.tuples(st.just("settle"), st.integers(1, 4)),
        st.tuples(st.just("heartbeat"), st.integers(0, 3)),
        st.tuples(st.just("join"), st.integers(0, 3)),
        st.tuples(st.just("sync"), st.integers(0, 3)),
        st.tuples(st.just("leave"), st.integers(0, 3)),
        st.tuples(st.just("advance"), st.sampled_from([1, 500, 2_000, 6_000])),
    ),
)


@settings(max_examples=150, deadline=None)
@given(
    static=st.lists(st.booleans(), min_size=4, max_size=4),
    steps=st.lists(TAKEN_STEP, min_size=1, max_size=60),
)
def test_taken_commits_are_quiet_commits(static: list[bool], steps: list[Any]) -> None:
    """``store_taken_commits``'s contract (the simulator's processing lane relies on it):
    commits taken aside by expiry handle while nothing else reached the coordinator, then
    handed over, leave it and its store as quiet_commit_offsets of each at its time does.
    (Only for a store that does not fail: the lane answers before it writes.)"""
    twin = TakenTwin()
    members = twin.members(static)
    twin.wire()

    def act(step: Any) -> None:
        if step[0] == "heartbeat":
            members[step[1]].heartbeat()
        else:  # commit
            for i in range(step[4]):
                _commit(members[step[1]], step[2], step[3] + i)

    # (from a Stable group of all four, where commits can be taken)
    run_steps(twin, members, [("settle", 4), *steps], act)
    event(f"taken aside: {min(twin.taken_here, 3)}{'+' if twin.taken_here >= 3 else ''}")


def test_taken_commits_are_taken_and_a_failed_write_is_an_error() -> None:
    """Not vacuous: a known member's commits are taken aside and stored as the coordinator
    stores them; a store that fails them raises (they were answered already)."""
    twin = TakenTwin({**CONFIG, "group.initial.rebalance.delay.ms": 100})
    twin.wire()
    members = [FakeMember(twin.a, f"c{i}", group_id=GROUP) for i in range(2)]
    rebalance(twin.a, members)
    twin.check()
    twin.advance(1_000)
    for i in range(5):
        for m in members:
            m.commit({("t", 0): i, ("t", 1): 2 * i})
    assert twin.taken_here == 8  # each member's first commit made it known
    twin.check()
    assert twin.b.coord.committed_offsets(GROUP)[TopicPartition("t", 1)].committed_offset == 8
    members[0].commit({("t", 0): 50, ("t", 1): 50})
    twin.b.store.fail_writes = True
    with pytest.raises(RuntimeError, match="not persisted"):
        twin.hand_over()
