"""OffsetDelete (API 47) in the sans-IO coordinator, as Kafka's
``OffsetMetadataManager.deleteOffsets`` answers it."""

from __future__ import annotations

import uuid

from coord_harness import Harness, rebalance

from groupcoord.coordinator import (
    GroupState,
    MemoryOffsetStore,
    OffsetTombstone,
    SyncShell,
)
from groupcoord.coordinator.consumer_messages import ConsumerGroupHeartbeatRequest
from groupcoord.coordinator.messages import (
    DeleteGroupsRequest,
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
)
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    UnknownTopicOrPartitionError,
)
from groupcoord.types import TopicPartition


def _delete(h: Harness, group: str = "g", **topics: tuple[int, ...]):
    return h.send(
        OffsetDeleteRequest(
            version=0,
            correlation=h.correlation(),
            group_id=group,
            topics=tuple(OffsetDeleteRequestTopic(name=t, partitions=p) for t, p in topics.items()),
        )
    )


def _errors(resp) -> dict[tuple[str, int], object]:
    return {(t.name, p.partition_index): p.error for t in resp.topics for p in t.partitions}


def _simple_commit(h: Harness, group: str, offsets: dict[tuple[str, int], int]) -> None:
    m = h.member("admin", group_id=group)
    resp = m.commit(offsets, generation_id_or_member_epoch=-1, member_id="")
    assert all(p.error is None for t in resp.topics for p in t.partitions)


def test_unknown_group_is_group_id_not_found() -> None:
    h = Harness()
    resp = _delete(h, "nope", t=(0,))
    assert resp.error is GroupIdNotFoundError and resp.topics == ()
    assert h.coord.snapshot("nope") is None  # no group made by asking


def test_empty_group_loses_the_offsets_named_and_keeps_the_rest() -> None:
    h = Harness()
    _simple_commit(h, "g", {("t", 0): 5, ("t", 1): 6, ("u", 0): 7})
    resp = _delete(h, t=(0, 9))  # partition 9 never had an offset: still no error
    assert resp.error is None and _errors(resp) == {("t", 0): None, ("t", 9): None}
    assert set(h.coord.committed_offsets("g")) == {TopicPartition("t", 1), TopicPartition("u", 0)}
    # the tombstone reached the store: a restarted coordinator does not see the offset
    again = SyncShell(h.store)
    assert set(again.coordinator.committed_offsets("g")) == {
        TopicPartition("t", 1),
        TopicPartition("u", 0),
    }


def test_stable_consumer_group_refuses_subscribed_topics_only() -> None:
    h = Harness()
    a = h.member("a", topics=("t",))
    rebalance(h, [a])
    a.commit({("t", 0): 1})
    _simple_commit_as_member = a.commit({("old", 0): 2})
    assert _simple_commit_as_member.topics[0].partitions[0].error is None
    resp = _delete(h, t=(0,), old=(0,))
    assert resp.error is None
    assert _errors(resp) == {("t", 0): GroupSubscribedToTopicError, ("old", 0): None}
    assert set(h.coord.committed_offsets("g")) == {TopicPartition("t", 0)}


def test_non_consumer_protocol_group_with_members_is_non_empty_group() -> None:
    h = Harness()
    a = h.member("a", protocol_type="connect")
    rebalance(h, [a])
    resp = _delete(h, t=(0,))
    assert resp.error is NonEmptyGroupError and resp.topics == ()


def test_rebalancing_consumer_group_without_a_protocol_counts_as_subscribed_to_all() -> None:
    h = Harness()
    a = h.member("a", topics=("t",))
    a.join()  # the first join phase waits for the initial delay: no protocol yet
    assert h.snapshot().state is GroupState.PREPARING_REBALANCE
    resp = _delete(h, other=(0,))
    assert _errors(resp) == {("other", 0): GroupSubscribedToTopicError}


def test_dead_group_is_group_id_not_found() -> None:
    h = Harness()
    _simple_commit(h, "g", {("t", 0): 5})
    # a delete whose tombstone is still being written leaves the group Dead meanwhile
    coord = h.coord
    out = coord.handle(DeleteGroupsRequest(version=2, correlation=-1, groups_names=("g",)), h.now)
    assert out.writes is not None and coord.group_state("g") is GroupState.DEAD
    resp = coord.handle(
        OffsetDeleteRequest(
            version=0,
            correlation=-2,
            group_id="g",
            topics=(OffsetDeleteRequestTopic(name="t", partitions=(0,)),),
        ),
        h.now,
    ).responses
    assert resp[0].error is GroupIdNotFoundError


def test_unknown_topics_and_partitions_with_a_topic_view() -> None:
    class Topics:
        def partition_count(self, name: str) -> int | None:
            return {"t": 2}.get(name)

    h = Harness(topics=Topics())
    _simple_commit(h, "g", {("t", 0): 5})
    resp = _delete(h, t=(0, 2), gone=(0,))
    assert _errors(resp) == {
        ("t", 0): None,
        ("t", 2): UnknownTopicOrPartitionError,
        ("gone", 0): UnknownTopicOrPartitionError,
    }
    assert h.coord.committed_offsets("g") == {}


def test_answer_waits_for_the_tombstone_and_a_failed_write_keeps_the_offsets() -> None:
    store = MemoryOffsetStore()
    h = Harness(store=store)
    _simple_commit(h, "g", {("t", 0): 5})
    coord = h.coord
    req = OffsetDeleteRequest(
        version=0,
        correlation=-1,
        group_id="g",
        topics=(OffsetDeleteRequestTopic(name="t", partitions=(0,)),),
    )
    out = coord.handle(req, h.now)
    assert out.responses == [] and out.writes is not None
    assert out.writes.records == (OffsetTombstone("g", (TopicPartition("t", 0),)),)
    assert TopicPartition("t", 0) in coord.committed_offsets("g")  # not yet
    (resp,) = coord.persisted(out.writes.batch_id, False, h.now).responses
    assert resp.error is CoordinatorNotAvailableError
    assert TopicPartition("t", 0) in coord.committed_offsets("g")


def test_consumer_group_refuses_its_members_topics() -> None:
    h = Harness()
    coord = h.coord
    t_id = uuid.uuid4()
    coord.update_topics([TopicMetadata(name="t", topic_id=t_id, partitions=2)], h.now)
    _simple_commit(h, "cg", {("t", 0): 1, ("u", 0): 2})
    out = coord.handle(
        ConsumerGroupHeartbeatRequest(
            version=1,
            correlation=-1,
            group_id="cg",
            member_id="m1",
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=("t",),
            topic_partitions=(),
        ),
        h.now,
    )
    assert out.responses == [] and out.writes is not None  # held until the group is stored
    (joined,) = coord.persisted(out.writes.batch_id, True, h.now).responses
    assert joined.error is None
    resp = _delete(h, "cg", t=(0,), u=(0,))
    assert _errors(resp) == {("t", 0): GroupSubscribedToTopicError, ("u", 0): None}
    assert set(coord.committed_offsets("cg")) == {TopicPartition("t", 0)}
