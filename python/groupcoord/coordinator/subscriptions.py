"""Which topics a group's members subscribe to: OffsetDelete refuses to delete, and
retention never expires, the offsets of a topic the group still consumes.

Kafka's rules (``ClassicGroup.isSubscribedToTopic``, ``ConsumerGroup.isSubscribedToTopic``):
a classic group of protocol type ``consumer`` subscribes to the union of its members'
ConsumerProtocolSubscription topics for the selected protocol (nothing when it has no
members); when that cannot be known (no protocol selected yet, a subscription that does not
decode) it counts as subscribed to every topic. A classic group of any other protocol type,
or none (a simple consumer's), subscribes to nothing. A KIP-848 consumer group subscribes
to its members' topic names and what their regexes match.
"""

from __future__ import annotations

from groupcoord.coordinator.consumer_group import ConsumerGroup
from groupcoord.coordinator.group import Group
from groupcoord.coordinator.topic_regex import compile_topic_regex
from groupcoord.coordinator.topics import TopicImage
from groupcoord.errors import InvalidPayload
from groupcoord.protocol import decode_subscription

__all__ = ["ALL_TOPICS", "subscribed_topics"]

#: "every topic": what a consumer group counts as when its subscriptions are unknown
ALL_TOPICS = None


def subscribed_topics(group: Group | ConsumerGroup, topics: TopicImage) -> frozenset[str] | None:
    """The topics ``group`` subscribes to, or ``ALL_TOPICS`` (``None``) when unknown.

    Read from the members as they are now (Kafka keeps the set computed when the
    generation started; the two differ only while a rebalance is under way)."""
    if isinstance(group, ConsumerGroup):
        return _consumer_group_topics(group, topics)
    if group.protocol_type != "consumer" or not group.members:
        return frozenset()
    protocol = group.protocol_name
    if protocol is None:
        return ALL_TOPICS
    names: set[str] = set()
    try:
        for member in group.members.values():
            names.update(decode_subscription(member.metadata(protocol)).topics)
    except (InvalidPayload, KeyError):
        return ALL_TOPICS
    return frozenset(names)


def _consumer_group_topics(group: ConsumerGroup, topics: TopicImage) -> frozenset[str]:
    names: set[str] = set()
    patterns: set[str] = set()
    for member in group.members.values():
        names.update(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            patterns.add(member.subscribed_topic_regex)
    for regex in patterns:
        pattern = compile_topic_regex(regex)
        names.update(t for t in topics.names() if pattern.fullmatch(t))
    return frozenset(names)
