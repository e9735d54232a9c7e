"""``member.offsets``: which queued commits and fetches are due, and reading answers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groupcoord.coordinator.messages import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from groupcoord.errors import CoordinatorLoadInProgressError, UnknownTopicOrPartitionError
from groupcoord.member.handles import CommitHandle, FetchHandle
from groupcoord.member.offsets import (
    QueuedCommit,
    QueuedFetch,
    checked_offsets,
    fail_commits,
    fetched_offsets,
    split_due_commits,
    split_due_fetches,
)
from groupcoord.types import TopicPartition

TP = TopicPartition("t", 0)
TIMES = st.integers(0, 100)


@given(
    entries=st.lists(st.tuples(TIMES, st.integers(-1, 5))),
    now_ms=TIMES,
    generation=st.integers(-1, 5),
)
def test_due_commits_are_those_past_their_time_and_generation_in_queue_order(
    entries: list[tuple[int, int]], now_ms: int, generation: int
) -> None:
    queue = [QueuedCommit(CommitHandle({TP: i}), t, g) for i, (t, g) in enumerate(entries)]
    due, keep = split_due_commits(queue, now_ms, generation)
    assert sorted(map(id, due + keep)) == sorted(map(id, queue))
    assert due == [q for q in queue if q.not_before_ms <= now_ms and generation >= q.min_generation]
    assert keep == [q for q in queue if q not in due]


@given(times=st.lists(TIMES), now_ms=TIMES)
def test_due_fetches_are_those_past_their_time_in_queue_order(
    times: list[int], now_ms: int
) -> None:
    queue = [QueuedFetch(FetchHandle(frozenset({TP})), t) for t in times]
    due, keep = split_due_fetches(queue, now_ms)
    assert due == [q for q in queue if q.not_before_ms <= now_ms]
    assert keep == [q for q in queue if q.not_before_ms > now_ms]


def test_failed_commits_each_get_their_own_error_and_the_queue_empties() -> None:
    queue = [QueuedCommit(CommitHandle({TP: 1})), QueuedCommit(CommitHandle({TP: 2}))]
    handles = [q.handle for q in queue]
    fail_commits(queue, lambda: UnknownTopicOrPartitionError("gone"))
    assert queue == []
    assert all(h.done and isinstance(h.error, UnknownTopicOrPartitionError) for h in handles)
    assert handles[0].error is not handles[1].error


@pytest.mark.parametrize(
    ("offsets", "raised"),
    [
        ({("t", 0): -1}, ValueError),
        ({("t", 0): True}, TypeError),
        ({"t": 1}, TypeError),
        ({("t", 0): 2**63}, ValueError),
    ],
)
def test_malformed_offsets_are_refused(offsets: dict[object, object], raised: type) -> None:
    with pytest.raises(raised):
        checked_offsets(offsets)  # type: ignore[arg-type]


def test_checked_offsets_are_topic_partitions() -> None:
    assert checked_offsets({("t", 3): 7}) == {TopicPartition("t", 3): 7}  # type: ignore[dict-item]


def _partitions(*parts: OffsetFetchResponsePartition) -> tuple[OffsetFetchResponseTopic, ...]:
    return (OffsetFetchResponseTopic(name="t", partitions=parts),)


def test_fetched_offsets_leave_out_uncommitted_partitions_in_both_layouts() -> None:
    topics = _partitions(
        OffsetFetchResponsePartition(partition_index=0, committed_offset=5),
        OffsetFetchResponsePartition(partition_index=1),
    )
    old = OffsetFetchResponse(version=7, correlation=1, topics=topics)
    new = OffsetFetchResponse(
        version=8, correlation=1, groups=(OffsetFetchResponseGroup(group_id="g", topics=topics),)
    )
    for response in (old, new):
        assert fetched_offsets(response) == ({TopicPartition("t", 0): 5}, None)


def test_fetched_offsets_report_the_group_or_partition_error() -> None:
    group_error = OffsetFetchResponse(
        version=8,
        correlation=1,
        groups=(OffsetFetchResponseGroup(group_id="g", error=CoordinatorLoadInProgressError),),
    )
    assert fetched_offsets(group_error)[1] is CoordinatorLoadInProgressError
    partition_error = OffsetFetchResponse(
        version=7,
        correlation=1,
        topics=_partitions(
            OffsetFetchResponsePartition(partition_index=0, error=UnknownTopicOrPartitionError)
        ),
    )
    assert fetched_offsets(partition_error)[1] is UnknownTopicOrPartitionError
