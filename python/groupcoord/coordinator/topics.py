"""What the coordinator knows of the cluster's topics, in two forms (to be unified: both
describe the same topics, one pulled, one pushed).

- :class:`TopicView` (pulled, read on every OffsetCommit, never copied): Kafka's broker
  refuses an OffsetCommit for a topic or partition that does not exist with
  UNKNOWN_TOPIC_OR_PARTITION, per partition, and commits the rest. The coordinator does the
  same when it is given a view (``groupcoord serve`` gives it the topic log), so every
  driver of the coordinator gets the answer the wire gets. Without one (the simulator,
  tests that have no topics) every partition is taken to exist.
- :class:`TopicImage` of :class:`TopicMetadata` (pushed, Kafka's metadata image as far as
  KIP-848 groups need it): the coordinator assigns partitions itself, resolves
  ``subscribed_topic_regex`` against topic names and speaks topic ids on the wire; the
  shell gives it the topics with :meth:`GroupCoordinator.update_topics
  <groupcoord.coordinator.GroupCoordinator.update_topics>` whenever they change.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["TopicImage", "TopicMetadata", "TopicView"]


class TopicView(Protocol):
    """Read-only: the partition count of ``topic``, ``None`` if it does not exist.
    Partitions ``0 .. count - 1`` exist; the coordinator never writes through it."""

    def partition_count(self, topic: str) -> int | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    """One topic: its name, id and partition count."""

    name: str
    topic_id: uuid.UUID
    partitions: int

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.topic_id, uuid.UUID):
            raise TypeError(f"topic_id must be a uuid.UUID, not {type(self.topic_id).__name__}")
        p = self.partitions
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p < 2**31:
            raise ValueError(f"partitions must be an int in [0, 2**31), got {p!r}")


class TopicImage:
    """Topics by name and by id (immutable; a change is a new image)."""

    __slots__ = ("_by_id", "_by_name")

    def __init__(self, topics: Iterable[TopicMetadata] = ()) -> None:
        self._by_name: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        for t in topics:
            if not isinstance(t, TopicMetadata):
                raise TypeError(f"topics must be TopicMetadata, not {type(t).__name__}")
            if t.name in self._by_name or t.topic_id in self._by_id:
                raise ValueError(f"topic {t.name!r} ({t.topic_id}) is listed twice")
            self._by_name[t.name] = t
            self._by_id[t.topic_id] = t

    def by_name(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def names(self) -> Iterator[str]:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)
