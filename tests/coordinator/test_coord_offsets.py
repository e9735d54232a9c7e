"""OffsetCommit (v0-v9) and OffsetFetch (v0-v9) scenarios."""

from __future__ import annotations

import dataclasses

import pytest
from coord_harness import Harness, rebalance
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupState,
    MemoryOffsetStore,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    commits,
)
from groupcoord.coordinator.offsets import OffsetAndMetadata, committed_at
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    OffsetMetadataTooLargeError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    UnsupportedVersionError,
)
from groupcoord.types import TopicPartition


def _errors(resp) -> dict[tuple[str, int], object]:
    return {(t.name, p.partition_index): p.error for t in resp.topics for p in t.partitions}


def _fetched(resp) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.committed_offset for t in resp.topics for p in t.partitions
    }


def test_commit_then_fetch_round_trip() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    resp = a.commit({("t", 0): 10, ("t", 1): 20, ("u", 0): 5})
    assert set(_errors(resp).values()) == {None}
    assert [t.name for t in resp.topics] == ["t", "u"]
    fetched = a.fetch({"t": [0, 1, 2], "u": [0]})
    assert fetched.error is None
    assert _fetched(fetched) == {("t", 0): 10, ("t", 1): 20, ("t", 2): -1, ("u", 0): 5}
    every = a.fetch(None)
    assert _fetched(every) == {("t", 0): 10, ("t", 1): 20, ("u", 0): 5}


def test_commit_fencing_by_generation_and_member() -> None:
    h = Harness()
    a = h.member("a", instance_id="ia")
    b = h.member("b")
    rebalance(h, [a, b])
    tp = {("t", 0): 1}
    assert set(_errors(b.commit(tp, generation_id_or_member_epoch=0)).values()) == {
        IllegalGenerationError
    }
    assert set(_errors(b.commit(tp, member_id="ghost")).values()) == {UnknownMemberIdError}
    assert set(_errors(a.commit(tp, member_id=b.member_id)).values()) == {FencedInstanceIdError}
    # generation -1 and no member id: only accepted while the group is empty
    assert set(_errors(b.commit(tp, generation_id_or_member_epoch=-1, member_id="")).values()) == {
        UnknownMemberIdError
    }


def test_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    h = Harness()
    a, b = h.member("a"), h.member("b")
    ca, cb = a.join(), b.join()
    h.advance(1000)
    a.joined(ca), b.joined(cb)
    assert h.snapshot().state is GroupState.COMPLETING_REBALANCE
    assert set(_errors(b.commit({("t", 0): 1})).values()) == {RebalanceInProgressError}


def test_commit_during_preparing_rebalance_is_accepted_and_keeps_the_member_alive() -> None:
    h = Harness()
    a = h.member("a", rebalance_timeout_ms=60_000)
    b = h.member("b", rebalance_timeout_ms=60_000)
    rebalance(h, [a, b])
    a.join()
    for i in range(5):  # commits alone keep b's session alive
        h.advance(8000)
        assert set(_errors(b.commit({("t", 0): i})).values()) == {None}
    assert b.member_id in {m.member_id for m in h.snapshot().members}
    assert h.coord.committed_offsets("g")[TopicPartition("t", 0)].committed_offset == 4


def test_simple_consumer_commit_with_generation_minus_one_creates_an_empty_group() -> None:
    h = Harness()
    simple = h.member("s", group_id="simple")
    resp = simple.commit({("t", 0): 42}, generation_id_or_member_epoch=-1, member_id="")
    assert set(_errors(resp).values()) == {None}
    snap = h.snapshot("simple")
    assert snap.state is GroupState.EMPTY and snap.protocol_type is None
    assert _fetched(simple.fetch({"t": [0]})) == {("t", 0): 42}


def test_commit_with_a_generation_for_an_unknown_group_is_illegal_generation() -> None:
    h = Harness()
    ghost = h.member("x", group_id="nope")
    ghost.generation, ghost.member_id = 3, "x-1"
    assert set(_errors(ghost.commit({("t", 0): 1})).values()) == {IllegalGenerationError}
    assert h.coord.snapshot("nope") is None


def test_v0_commit_has_no_generation_and_works_for_empty_groups() -> None:
    h = Harness()
    s = h.member("s", group_id="old")
    assert set(_errors(s.commit({("t", 0): 7}, version=0)).values()) == {None}
    assert _fetched(s.fetch({"t": [0]}, version=0)) == {("t", 0): 7}


@pytest.mark.parametrize("version", list(range(10)))
def test_commit_every_version(version: int) -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    extra = {}
    if 2 <= version <= 4:
        extra["retention_time_ms"] = 60_000
    if version == 0:
        resp = h.member("z", group_id="simple").commit({("t", 0): 3}, version=0)
    else:
        resp = a.commit({("t", 0): 3}, version=version, **extra)
    assert resp.version == version
    assert set(_errors(resp).values()) == {None}


def test_metadata_longer_than_offset_metadata_max_bytes_is_rejected_per_partition() -> None:
    h = Harness({"group.initial.rebalance.delay.ms": 100, "offset.metadata.max.bytes": 10})
    a = h.member("a", session_timeout_ms=10_000)
    rebalance(h, [a])
    req = OffsetCommitRequest(
        version=8,
        correlation=h.correlation(),
        group_id="g",
        generation_id_or_member_epoch=a.generation,
        member_id=a.member_id,
        topics=(
            OffsetCommitRequestTopic(
                name="t",
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=1, committed_metadata="x" * 10
                    ),
                    OffsetCommitRequestPartition(
                        partition_index=1, committed_offset=1, committed_metadata="x" * 11
                    ),
                    # Kafka counts UTF-16 code units: 5 emoji are 10 of them (20 UTF-8 bytes)
                    OffsetCommitRequestPartition(
                        partition_index=2, committed_offset=1, committed_metadata="😀" * 5
                    ),
                ),
            ),
        ),
    )
    resp = h.send(req)
    assert _errors(resp) == {
        ("t", 0): None,
        ("t", 1): OffsetMetadataTooLargeError,
        ("t", 2): None,
    }
    assert resp.topics[0].partitions[1].error_code == 12
    assert set(h.coord.committed_offsets("g")) == {TopicPartition("t", 0), TopicPartition("t", 2)}


def test_offset_fetch_for_an_unknown_group_returns_minus_one() -> None:
    h = Harness()
    resp = h.member("a", group_id="nobody").fetch({"t": [0, 1]})
    assert resp.error is None
    assert _fetched(resp) == {("t", 0): -1, ("t", 1): -1}
    assert all(p.metadata == "" for t in resp.topics for p in t.partitions)
    assert h.member("a", group_id="nobody").fetch(None).topics == ()


def test_offset_fetch_v8_many_groups() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    a.commit({("t", 0): 9})
    resp = h.send(
        OffsetFetchRequest(
            version=8,
            correlation=h.correlation(),
            groups=(
                OffsetFetchRequestGroup(
                    group_id="g",
                    topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),),
                ),
                OffsetFetchRequestGroup(group_id="other"),
            ),
            require_stable=True,
        )
    )
    assert [g.group_id for g in resp.groups] == ["g", "other"]
    assert _fetched(resp.groups[0]) == {("t", 0): 9}
    assert resp.groups[1].topics == ()


def test_offset_fetch_returns_leader_epoch_and_metadata() -> None:
    h = Harness()
    a = h.member("a")
    rebalance(h, [a])
    h.send(
        OffsetCommitRequest(
            version=8,
            correlation=h.correlation(),
            group_id="g",
            generation_id_or_member_epoch=a.generation,
            member_id=a.member_id,
            topics=(
                OffsetCommitRequestTopic(
                    name="t",
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=5,
                            committed_leader_epoch=3,
                            committed_metadata="meta",
                        ),
                    ),
                ),
            ),
        )
    )
    p = a.fetch({"t": [0]}).topics[0].partitions[0]
    assert (p.committed_offset, p.committed_leader_epoch, p.metadata) == (5, 3, "meta")


def test_store_failure_answers_coordinator_not_available_and_keeps_the_old_offset() -> None:
    store = MemoryOffsetStore()
    h = Harness(store=store)
    a = h.member("a")
    rebalance(h, [a])
    a.commit({("t", 0): 1})
    store.fail_writes = True
    assert set(_errors(a.commit({("t", 0): 2})).values()) == {CoordinatorNotAvailableError}
    assert _fetched(a.fetch({"t": [0]})) == {("t", 0): 1}


def test_offset_request_validation() -> None:
    with pytest.raises(UnsupportedVersionError):
        OffsetCommitRequest(version=10, group_id="g", topics=())
    with pytest.raises(UnsupportedVersionError):
        OffsetCommitRequest(version=0, group_id="g", member_id="m", topics=())
    with pytest.raises(UnsupportedVersionError):
        OffsetCommitRequest(version=5, group_id="g", retention_time_ms=5, topics=())
    with pytest.raises(UnsupportedVersionError):
        OffsetFetchRequest(version=1, group_id="g", topics=None)
    with pytest.raises(UnsupportedVersionError):
        OffsetFetchRequest(version=8, group_id="g")
    with pytest.raises(UnsupportedVersionError):
        OffsetFetchRequest(version=6, group_id="g", require_stable=True)
    with pytest.raises(TypeError):
        OffsetCommitRequestPartition(partition_index="0", committed_offset=1)  # type: ignore[arg-type]


@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5)), min_size=1, unique=True
    ).map(lambda tps: sorted(tps, key=lambda tp: tp[0]))
)
def test_an_all_accepted_answer_is_the_one_built_partition_by_partition(
    partitions: list[tuple[str, int]],
) -> None:
    """``_response`` answers an all-accepted commit from ``_accepted``'s shared topics:
    equal to the answer built partition by partition, and one object for the same
    partitions, whatever the correlation."""
    tps = [TopicPartition(t, p) for t, p in partitions]
    topics = tuple(
        OffsetCommitRequestTopic(
            name=name,
            partitions=tuple(
                OffsetCommitRequestPartition(partition_index=tp.partition, committed_offset=1)
                for tp in tps
                if tp.topic == name
            ),
        )
        for name in dict.fromkeys(tp.topic for tp in tps)
    )
    answers = [
        commits._response(
            OffsetCommitRequest(
                version=8,
                correlation=correlation,
                group_id="g",
                generation_id_or_member_epoch=1,
                member_id="m",
                topics=topics,
            ),
            dict.fromkeys(tps),
            True,
        )
        for correlation in (1, 2)
    ]
    expected = tuple(
        OffsetCommitResponseTopic(
            name=t.name,
            partitions=tuple(
                OffsetCommitResponsePartition(partition_index=p.partition_index, error=None)
                for p in t.partitions
            ),
        )
        for t in topics
    )
    assert answers[0] == OffsetCommitResponse(version=8, correlation=1, topics=expected)
    assert answers[1].correlation == 2 and answers[1].topics is answers[0].topics


@given(offset=st.integers(0, 2**63 - 1), now=st.integers(-1, 2**63 - 1))
def test_committed_at_is_the_constructor(offset: int, now: int) -> None:
    """``committed_at`` (which sets the slots directly, for speed) builds the object the
    constructor builds: equal, the same hash and repr, every field set, still frozen."""
    fast = committed_at(offset, now)
    slow = OffsetAndMetadata(offset, -1, "", now, -1)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.committed_offset = 1  # type: ignore[misc]
