"""OffsetDelete (v0): what ``kafka-consumer-groups --delete-offsets`` and Java's
``Admin.deleteConsumerGroupOffsets`` send.

As Kafka's ``OffsetMetadataManager.deleteOffsets`` (with ``KafkaApis``' topic checks):

- a group that does not exist, or is being deleted (Dead), is GROUP_ID_NOT_FOUND; a classic
  group with members whose protocol type is not ``consumer`` is NON_EMPTY_GROUP (both for
  the whole request, with no topics);
- a partition of a topic that does not exist (with a ``TopicView``) is
  UNKNOWN_TOPIC_OR_PARTITION;
- a partition of a topic the group subscribes to
  (:func:`~groupcoord.coordinator.subscriptions.subscribed_topics`) is
  GROUP_SUBSCRIBED_TO_TOPIC, so an Empty group, or a topic no member consumes, can lose
  its offsets while a live member's cannot;
- every other partition succeeds, whether it had an offset or not.

The offsets that existed go as one
:class:`~groupcoord.coordinator.offsets.OffsetTombstone`; the answer is released, and
OffsetFetch stops seeing them, once the shell reports it persisted (a failed write answers
COORDINATOR_NOT_AVAILABLE and keeps them).
"""

from __future__ import annotations

import logging

from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.messages import (
    ErrorClass,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.coordinator.offsets import OffsetTombstone
from groupcoord.coordinator.rebalance import Rebalancer
from groupcoord.coordinator.states import GroupState
from groupcoord.coordinator.subscriptions import subscribed_topics
from groupcoord.errors import (
    CoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NonEmptyGroupError,
    UnknownTopicOrPartitionError,
)
from groupcoord.types import TopicPartition

__all__ = ["handle_offset_delete"]

log = logging.getLogger("groupcoord.coordinator")

_EMPTY = GroupState.EMPTY
_DEAD = GroupState.DEAD

#: (topic, partition, error) in the request's order
_Results = list[tuple[str, int, ErrorClass]]


def _group_error(group: Group | ConsumerGroup | None) -> ErrorClass:
    """Kafka's ``validateOffsetDelete`` (a consumer group never refuses)."""
    if group is None:
        return GroupIdNotFoundError
    if isinstance(group, Group):
        if group.state is _DEAD:
            return GroupIdNotFoundError
        if group.state is not _EMPTY and group.protocol_type != "consumer":
            return NonEmptyGroupError
    return None


def handle_offset_delete(rb: Rebalancer, req: OffsetDeleteRequest) -> None:
    group_id = req.group_id
    group: Group | ConsumerGroup | None = rb.consumer_groups.get(group_id) or rb.groups.get(
        group_id
    )
    error = _group_error(group)
    if error is not None or group is None:
        _respond(rb, req, [], error)
        return
    subscribed = subscribed_topics(group, rb.topics)
    view = rb.topic_view
    results: _Results = []
    doomed: dict[TopicPartition, None] = {}
    for topic in req.topics:
        name = topic.name
        count = None if view is None else view.partition_count(name)
        for index in topic.partitions:
            if view is not None and (count is None or not 0 <= index < count):
                results.append((name, index, UnknownTopicOrPartitionError))
            elif subscribed is None or name in subscribed:
                results.append((name, index, GroupSubscribedToTopicError))
            else:
                results.append((name, index, None))
                tp = TopicPartition(name, index)
                if tp in group.offsets:
                    doomed[tp] = None
    if not doomed:
        _respond(rb, req, results, None)
        return
    partitions = tuple(doomed)

    def then(ok: bool) -> None:
        if not ok:
            log.warning("group %s: offset delete was not persisted", group_id)
            _respond(rb, req, [], CoordinatorNotAvailableError)
            return
        for tp in partitions:
            group.offsets.pop(tp, None)
        log.info("group %s: %d offsets deleted", group_id, len(partitions))
        _respond(rb, req, results, None)

    rb.persist((OffsetTombstone(group_id, partitions),), then)


def _respond(
    rb: Rebalancer, req: OffsetDeleteRequest, results: _Results, error: ErrorClass
) -> None:
    """One entry per topic named (a topic named twice is answered once, with all its
    partitions, as Kafka's response keys topics by name)."""
    by_topic: dict[str, list[OffsetDeleteResponsePartition]] = {}
    for name, index, e in results:
        by_topic.setdefault(name, []).append(
            OffsetDeleteResponsePartition(partition_index=index, error=e)
        )
    rb.out.append(
        OffsetDeleteResponse(
            version=req.version,
            correlation=req.correlation,
            error=error,
            topics=tuple(
                OffsetDeleteResponseTopic(name=name, partitions=tuple(parts))
                for name, parts in by_topic.items()
            ),
        )
    )
