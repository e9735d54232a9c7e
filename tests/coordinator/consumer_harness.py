"""Test helper for KIP-848 consumer groups: a coordinator behind a SyncShell on a virtual
clock, topics with fixed ids, and heartbeat builders that speak topic names."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from groupcoord.coordinator import SyncShell
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.topics import TopicMetadata

CONFIG = {
    "group.consumer.session.timeout.ms": 3_000,
    "group.consumer.min.session.timeout.ms": 1_000,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 100,
}
SESSION_MS = 3_000
REBALANCE_MS = 2_000


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


class ConsumerHarness:
    def __init__(
        self,
        topics: Mapping[str, int],
        config: Mapping[str, object] | None = None,
        *,
        store: Any = None,
        now: int = 0,
    ) -> None:
        self.now = now
        self.shell = SyncShell(store, dict(CONFIG if config is None else config), now_ms=now)
        self.coord = self.shell.coordinator
        self._corr = itertools.count(1)
        self.set_topics(topics)

    def set_topics(self, topics: Mapping[str, int]) -> None:
        self.topics = dict(topics)
        self.shell.update_topics(
            [TopicMetadata(name=n, topic_id=topic_id(n), partitions=p) for n, p in topics.items()],
            self.now,
        )

    def advance(self, ms: int) -> None:
        self.now += ms
        self.shell.tick(self.now)

    def owned(self, partitions: Mapping[str, Iterable[int]]) -> tuple[TopicPartitions, ...]:
        return tuple(
            TopicPartitions(topic_id=topic_id(t), partitions=tuple(sorted(ps)))
            for t, ps in sorted(partitions.items())
            if ps
        )

    def heartbeat(self, **fields: Any) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("version", 1)
        fields.setdefault("group_id", "g")
        owned = fields.pop("owned", None)
        if owned is not None:
            fields["topic_partitions"] = self.owned(owned)
        req = ConsumerGroupHeartbeatRequest(correlation=next(self._corr), **fields)
        (resp,) = [r for r in self.shell.handle(req, self.now) if r.correlation == req.correlation]
        assert isinstance(resp, ConsumerGroupHeartbeatResponse)
        return resp

    def join(
        self, member_id: str, topics: Iterable[str] = ("orders",), **fields: Any
    ) -> ConsumerGroupHeartbeatResponse:
        fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
        fields.setdefault("subscribed_topic_names", tuple(topics))
        return self.heartbeat(member_id=member_id, member_epoch=0, topic_partitions=(), **fields)

    def names(self, resp: ConsumerGroupHeartbeatResponse) -> dict[str, set[int]] | None:
        """The response's assignment by topic name."""
        if resp.assignment is None:
            return None
        by_id = {topic_id(n): n for n in self.topics}
        return {by_id[tp.topic_id]: set(tp.partitions) for tp in resp.assignment}
