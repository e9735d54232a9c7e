"""RoundRobinAssignor: all partitions in (topic, partition) order dealt to members in turn.

A member not subscribed to a partition's topic is skipped, as Java's
``CircularIterator`` does, so non-uniform subscriptions work.
"""

from __future__ import annotations

from groupcoord.reference.assign.model import GroupModel
from groupcoord.reference.assign.range import kafka_member_order


def assign_roundrobin(model: GroupModel) -> list[list[int]]:
    result: list[list[int]] = [[] for _ in range(model.num_members)]
    order = kafka_member_order(model)
    topic_sets = [set(topics) for topics in model.member_topics]
    subscribed = {t for topics in model.member_topics for t in topics}
    cursor = 0
    n = len(order)
    for t in sorted(subscribed):
        for dense in range(model.offsets[t], model.offsets[t + 1]):
            # Terminates: at least one member subscribes to t.
            while t not in topic_sets[order[cursor]]:
                cursor = (cursor + 1) % n
            result[order[cursor]].append(dense)
            cursor = (cursor + 1) % n
    return result
