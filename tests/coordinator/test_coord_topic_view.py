"""OffsetCommit against the coordinator's view of the topics (``topics=``): partitions
that do not exist are refused UNKNOWN_TOPIC_OR_PARTITION per partition, as Kafka's broker
refuses them, and the rest is handled as without a view."""

from __future__ import annotations

from typing import Any

from coord_harness import Harness, rebalance
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import (
    GroupCoordinator,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    SyncShell,
)
from groupcoord.errors import IllegalGenerationError, UnknownTopicOrPartitionError
from groupcoord.types import TopicPartition


class Topics:
    """A TopicView over a dict that tests may change between calls."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.partitions = partitions

    def partition_count(self, topic: str) -> int | None:
        return self.partitions.get(topic)


TOPICS = {"a": 3, "b": 1}


def commit(
    entries: list[tuple[str, list[tuple[int, int]]]], *, generation: int = -1, member: str = ""
) -> OffsetCommitRequest:
    return OffsetCommitRequest(
        version=8,
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=tuple(
            OffsetCommitRequestTopic(
                name=name,
                partitions=tuple(
                    OffsetCommitRequestPartition(partition_index=i, committed_offset=o)
                    for i, o in parts
                ),
            )
            for name, parts in entries
        ),
    )


def answer(shell: SyncShell, request: OffsetCommitRequest, now_ms: int = 0) -> OffsetCommitResponse:
    (response,) = shell.handle(request, now_ms)
    assert isinstance(response, OffsetCommitResponse)
    return response


def flat(response: OffsetCommitResponse) -> list[tuple[str, int, Any]]:
    return [(t.name, p.partition_index, p.error) for t in response.topics for p in t.partitions]


def exists(topic: str, partition: int) -> bool:
    return 0 <= partition < TOPICS.get(topic, 0)


def entries(lowest: int) -> st.SearchStrategy[list[tuple[str, list[tuple[int, int]]]]]:
    """Commits of partitions ``lowest .. 4`` of topics a, b, c; a topic may be named twice
    and a partition twice (both are answered as named)."""
    return st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.lists(st.tuples(st.integers(lowest, 4), st.integers(0, 10**6)), max_size=4),
        ),
        max_size=5,
    )


@settings(max_examples=150, deadline=None)
@given(named=entries(-2))
def test_every_partition_is_answered_in_request_order(
    named: list[tuple[str, list[tuple[int, int]]]],
) -> None:
    shell = SyncShell(topics=Topics(TOPICS))
    response = answer(shell, commit(named))
    assert flat(response) == [
        (name, i, None if exists(name, i) else UnknownTopicOrPartitionError)
        for name, parts in named
        for i, _ in parts
    ]
    expected = {
        TopicPartition(name, i): offset
        for name, parts in named
        for i, offset in parts
        if exists(name, i)
    }  # the last of a partition named twice wins
    committed = shell.coordinator.committed_offsets("g")
    assert {tp: o.committed_offset for tp, o in committed.items()} == expected


@settings(max_examples=100, deadline=None)
@given(named=entries(0))
def test_where_every_partition_exists_the_view_changes_nothing(
    named: list[tuple[str, list[tuple[int, int]]]],
) -> None:
    """Without a view every partition counts as existing: the answers and the state are
    those of a view in which they all exist."""
    everything = Topics({"a": 5, "b": 5, "c": 5})
    with_view, without = SyncShell(topics=everything), SyncShell()
    request = commit(named)
    assert flat(answer(with_view, request)) == flat(answer(without, request))
    assert with_view.coordinator.committed_offsets("g") == without.coordinator.committed_offsets(
        "g"
    )
    assert with_view.coordinator.group_ids() == without.coordinator.group_ids()


def test_without_a_view_every_partition_is_committed() -> None:
    shell = SyncShell()
    response = answer(shell, commit([("ghost", [(7, 1)])]))
    assert flat(response) == [("ghost", 7, None)]
    committed = shell.coordinator.committed_offsets("g")
    assert {tp: o.committed_offset for tp, o in committed.items()} == {
        TopicPartition("ghost", 7): 1
    }


def test_a_commit_of_nothing_that_exists_does_not_touch_the_group() -> None:
    shell = SyncShell(topics=Topics(TOPICS))
    # a generation that would be ILLEGAL_GENERATION for a group that does not exist: the
    # group is never looked at, so the answer is only about the topics
    request = commit([("c", [(0, 1)]), ("a", [(3, 1)])], generation=4, member="m")
    assert flat(answer(shell, request)) == [
        ("c", 0, UnknownTopicOrPartitionError),
        ("a", 3, UnknownTopicOrPartitionError),
    ]
    assert shell.coordinator.group_ids() == []
    # an unknown topic with no partitions named is refused the same way: no group either
    assert flat(answer(shell, commit([("c", [])]))) == []
    assert shell.coordinator.group_ids() == []
    # a simple consumer's commit of a partition that exists creates its group
    answer(shell, commit([("c", [(0, 1)]), ("a", [(0, 1)])]))
    assert shell.coordinator.group_ids() == ["g"]


def test_the_group_errors_reach_only_the_partitions_that_exist() -> None:
    shell = SyncShell(topics=Topics(TOPICS))
    request = commit([("a", [(0, 1), (9, 1)]), ("c", [(0, 1)])], generation=4, member="m")
    assert flat(answer(shell, request)) == [
        ("a", 0, IllegalGenerationError),
        ("a", 9, UnknownTopicOrPartitionError),
        ("c", 0, UnknownTopicOrPartitionError),
    ]
    assert shell.coordinator.committed_offsets("g") == {}


def test_a_member_of_a_stable_group_commits_what_exists() -> None:
    h = Harness(topics=Topics({"t": 2}))
    a = h.member("a")
    rebalance(h, [a])
    response = a.commit({("t", 0): 10, ("t", 2): 20, ("u", 0): 5})
    assert flat(response) == [
        ("t", 0, None),
        ("t", 2, UnknownTopicOrPartitionError),
        ("u", 0, UnknownTopicOrPartitionError),
    ]
    assert {tp: o.committed_offset for tp, o in h.coord.committed_offsets(a.group_id).items()} == {
        TopicPartition("t", 0): 10
    }


def test_the_view_is_read_at_every_commit() -> None:
    topics = Topics({})
    coordinator = GroupCoordinator(topics=topics)
    request = commit([("late", [(0, 3)])])
    out = coordinator.handle(request, 0)
    assert out.writes is None  # refused: nothing to persist
    assert [flat(r) for r in out.responses] == [[("late", 0, UnknownTopicOrPartitionError)]]
    topics.partitions["late"] = 1  # created after the coordinator was built
    out = coordinator.handle(request, 1)
    assert out.writes is not None and out.responses == []  # held until persisted
    released = coordinator.persisted(out.writes.batch_id, True, 2).responses
    assert [flat(r) for r in released] == [[("late", 0, None)]]
