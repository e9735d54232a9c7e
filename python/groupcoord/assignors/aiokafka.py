"""Use a groupcoord assignor as an aiokafka (0.14) partition assignment strategy.

::

    from aiokafka import AIOKafkaConsumer
    from groupcoord import StickyAssignor
    from groupcoord.assignors.aiokafka import adapt

    consumer = AIOKafkaConsumer(
        "orders", group_id="billing",
        partition_assignment_strategy=[adapt(StickyAssignor())],
    )

aiokafka rebalances eagerly only (every member revokes everything before rejoining), and
its leader decodes each member's subscription with the version-0 schema: topics and user
data, nothing else (owned partitions, generation, rack and group instance ids are dropped
before the assignor sees them). Within those limits the adapter behaves as the Java client:

* leader side, :meth:`AiokafkaAssignor.assign` re-encodes each member's topics and user
  data as a version-0 subscription, runs the assignor's ``assign_encoded`` hot path and
  returns :class:`EncodedMemberAssignment` objects that aiokafka sends in SyncGroup as the
  bytes the assignor wrote;
* member side, the sticky assignor sends its previous assignment as StickyAssignor user
  data V1, which survives aiokafka's decoding, so stickiness works. aiokafka does not pass
  the generation to assignors; it stays -1 ("unknown") unless the application calls
  :meth:`AiokafkaAssignor.on_generation_assignment` (the hook aiokafka's own sticky
  assignor offers).

Cooperative assignors are refused: an aiokafka leader cannot see which partitions the
other members still own, so it could hand a partition to a new owner while the old one
still consumes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.coordinator.assignors.abstract import (  # type: ignore[import-untyped]
    AbstractPartitionAssignor,
)
from aiokafka.coordinator.protocol import (  # type: ignore[import-untyped]
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.errors import InvalidPayload
from groupcoord.protocol import encode_sticky_user_data, encode_subscription
from groupcoord.protocol.consumer import OwnershipSource
from groupcoord.types import Subscription, TopicPartition

__all__ = ["AiokafkaAssignor", "EncodedMemberAssignment", "adapt"]


def adapt(assignor: Assignor) -> AiokafkaAssignor:
    """``assignor`` as an entry of ``AIOKafkaConsumer(partition_assignment_strategy=[...])``."""
    return AiokafkaAssignor(assignor)


class AiokafkaAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """aiokafka's ``AbstractPartitionAssignor`` interface around a groupcoord :class:`Assignor`.

    One instance belongs to one consumer: it keeps that member's assignment (and generation,
    when told).
    """

    def __init__(self, assignor: Assignor) -> None:
        if not isinstance(assignor, Assignor):
            raise TypeError(f"expected a groupcoord Assignor, got {type(assignor).__name__}")
        if assignor.supported_protocols[0] is not RebalanceProtocol.EAGER:
            raise ValueError(
                f"{assignor.name!r} is a cooperative (KIP-429) assignor, which aiokafka cannot"
                " run safely: aiokafka rebalances eagerly and its leader does not see the"
                " partitions other members own; use StickyAssignor instead"
            )
        self.assignor = assignor
        #: this member's partitions from the last assignment; None before the first
        self.assignment: list[TopicPartition] | None = None
        #: the generation of that assignment, -1 unless on_generation_assignment was called
        self.generation: int = -1

    @property
    def name(self) -> str:
        return self.assignor.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.assignor!r})"

    # ------------------------------------------------------------------ member side

    def metadata(self, topics: Iterable[str]) -> Any:
        """The subscription this member sends in JoinGroup (version 0: all aiokafka reads)."""
        return ConsumerProtocolMemberMetadata(0, sorted(topics), self._user_data())

    def _user_data(self) -> bytes | None:
        ownership = self.assignor.ownership
        if ownership is OwnershipSource.STICKY and self.assignment is not None:
            return encode_sticky_user_data(self.assignment, self.generation)
        return None

    def on_assignment(self, assignment: Any) -> None:
        """Remember this member's assignment (a ConsumerProtocolMemberAssignment)."""
        self.assignment = [TopicPartition(tp.topic, tp.partition) for tp in assignment.partitions()]

    def on_generation_assignment(self, generation: int) -> None:
        """Record the generation of the current assignment (aiokafka itself never calls this)."""
        self.generation = generation

    # ------------------------------------------------------------------ leader side

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, Any]:
        """``{member_id: ConsumerProtocolMemberAssignment}`` for the decoded JoinGroup members.

        ``cluster`` needs ``partitions_for_topic(topic)`` (aiokafka's ClusterMetadata); topics
        it has no metadata for are skipped.
        """
        partitions_per_topic: dict[str, int] = {}
        unknown: set[str] = set()
        subscriptions: dict[str, bytes] = {}
        for member_id, metadata in members.items():
            try:
                sub = Subscription(topics=metadata.subscription, user_data=metadata.user_data)
            except (TypeError, ValueError) as exc:
                raise InvalidPayload(f"subscription of member {member_id!r}: {exc}") from exc
            # Version 0: everything aiokafka decoded; the assignments are then written at
            # version 0 too, which every client reads.
            subscriptions[member_id] = encode_subscription(sub, 0)
            for topic in sub.topics:
                if topic in partitions_per_topic or topic in unknown:
                    continue
                partitions = cluster.partitions_for_topic(topic)
                if partitions is None:
                    unknown.add(topic)
                else:
                    partitions_per_topic[topic] = len(partitions)
        encoded = self.assignor.assign_encoded(partitions_per_topic, subscriptions)
        return {m: EncodedMemberAssignment(data) for m, data in encoded.items()}


class EncodedMemberAssignment(ConsumerProtocolMemberAssignment):  # type: ignore[misc]
    """A ConsumerProtocolMemberAssignment that keeps the bytes the assignor wrote.

    ``encode()`` returns those bytes as they are, so SyncGroup carries the assignor's output
    without a round trip through Python objects. The fields (``version``, ``assignment``,
    ``user_data``, ``partitions()``) are decoded by aiokafka's own decoder the first time
    one is read; from then on ``encode()`` encodes the fields, so changes are honoured.
    """

    def __init__(self, encoded: bytes) -> None:
        # aiokafka's Struct keeps fields in __dict__; leaving them out until first use is
        # what makes them lazy (__getattr__ only runs for names missing from __dict__).
        self.__dict__["_encoded"] = encoded

    def _decode(self) -> None:
        if "version" not in self.__dict__:
            decoded = ConsumerProtocolMemberAssignment.decode(self.__dict__["_encoded"])
            for field in self.SCHEMA.names:
                self.__dict__[field] = decoded.__dict__[field]

    def __getattr__(self, name: str) -> Any:
        if name in type(self).SCHEMA.names:
            self._decode()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def encode(self) -> bytes:
        if "version" not in self.__dict__:
            return bytes(self.__dict__["_encoded"])
        return bytes(super().encode())

    def get_item(self, name: str) -> Any:
        self._decode()
        return super().get_item(name)

    def __repr__(self) -> str:
        self._decode()
        return str(super().__repr__())

    def __eq__(self, other: object) -> bool:
        self._decode()
        if isinstance(other, EncodedMemberAssignment):
            other._decode()
        result = super().__eq__(other)
        return result if result is NotImplemented else bool(result)

    __hash__ = object.__hash__  # as aiokafka's Struct
