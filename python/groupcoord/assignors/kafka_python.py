"""Use a groupcoord assignor as a kafka-python (3.x) partition assignment strategy.

::

    from kafka import KafkaConsumer
    from groupcoord import CooperativeStickyAssignor
    from groupcoord.assignors.kafka_python import adapt

    consumer = KafkaConsumer(
        "orders", group_id="billing",
        partition_assignment_strategy=[adapt(CooperativeStickyAssignor())],
    )

Leader side: kafka-python hands :meth:`KafkaPythonAssignor.assign` the JoinGroup members
with their subscriptions already decoded. The adapter turns each back into the bytes the
member sent, runs the assignor's ``assign_encoded`` hot path (bytes in, bytes out, no
Python object per partition) and returns :class:`EncodedConsumerProtocolAssignment`
objects, which kafka-python writes into SyncGroup as those same bytes.

Member side: the adapter remembers the member's assignment and generation from
``on_assignment`` and reports them in ``metadata`` the way the Java client does:

* cooperative assignors (KIP-429) send the partitions the member still owns in
  ``owned_partitions``, the generation in ``generation_id`` and, as Java's
  CooperativeStickyAssignor does, the generation again as user data;
* the sticky assignor (eager) sends its previous assignment and generation as
  StickyAssignor user data V1 (the member revoked everything, so ``owned_partitions``
  is empty, as with Java);
* range and round-robin send only the topics and the generation.

Subscriptions are written at version 3, the version the Java client writes.

Note: kafka-python's own ``StickyPartitionAssignor`` writes its user data with an
int16 version prefix that Java does not write; the adapter writes Java's layout, so
its previous assignment is not readable by kafka-python's own sticky assignor (which
then treats the member as new) — do not mix the two under the name "sticky".
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, Final

from kafka.coordinator.assignors.abstract import (  # type: ignore[import-untyped]
    AbstractPartitionAssignor,
)
from kafka.coordinator.assignors.abstract import (
    RebalanceProtocol as KafkaRebalanceProtocol,
)
from kafka.protocol.consumer.metadata import (  # type: ignore[import-untyped]
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from groupcoord.assignors.base import Assignor, RebalanceProtocol
from groupcoord.errors import InvalidPayload
from groupcoord.protocol import encode_cooperative_user_data, encode_sticky_user_data
from groupcoord.protocol.consumer import OwnershipSource
from groupcoord.types import TopicPartition

__all__ = ["EncodedConsumerProtocolAssignment", "KafkaPythonAssignor", "adapt"]

#: ConsumerProtocolSubscription version the adapter writes (Java's latest; kafka-python reads 0-3)
SUBSCRIPTION_VERSION: Final = 3

_PROTOCOLS: Final = {
    RebalanceProtocol.EAGER: KafkaRebalanceProtocol.EAGER,
    RebalanceProtocol.COOPERATIVE: KafkaRebalanceProtocol.COOPERATIVE,
}

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


def adapt(assignor: Assignor) -> KafkaPythonAssignor:
    """``assignor`` as an entry of ``KafkaConsumer(partition_assignment_strategy=[...])``."""
    return KafkaPythonAssignor(assignor)


class KafkaPythonAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """kafka-python's ``AbstractPartitionAssignor`` interface around a groupcoord :class:`Assignor`.

    One instance belongs to one consumer: it keeps that member's assignment and generation.
    """

    def __init__(self, assignor: Assignor) -> None:
        if not isinstance(assignor, Assignor):
            raise TypeError(f"expected a groupcoord Assignor, got {type(assignor).__name__}")
        self.assignor = assignor
        # Only the preferred protocol is announced. kafka-python picks the rebalance protocol
        # from all configured assignors but never tells an assignor which one it picked, and
        # what metadata() must report differs: under EAGER the member has revoked everything
        # (owned partitions must be empty), and kafka-python schedules no second round in
        # which partitions withheld by a cooperative assignor would land. Announcing
        # COOPERATIVE alone makes kafka-python reject a mix with eager assignors at
        # construction, as it does for its own CooperativeStickyAssignor.
        self.protocol: RebalanceProtocol = assignor.supported_protocols[0]
        #: this member's assignment as ``[(topic, [partition, ...]), ...]``; None before the first
        self.assignment: list[tuple[str, list[int]]] | None = None
        #: the generation of that assignment (-1: none yet)
        self.generation: int = -1

    @property
    def name(self) -> str:
        return self.assignor.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.assignor!r})"

    def supported_protocols(self) -> list[Any]:
        return [_PROTOCOLS[self.protocol]]

    # ------------------------------------------------------------------ member side

    def metadata(self, topics: Iterable[str]) -> Any:
        """The ConsumerProtocolSubscription this member sends in JoinGroup."""
        subscribed = sorted(topics)
        owned: list[Any] = []
        if self.protocol is RebalanceProtocol.COOPERATIVE and self.assignment:
            # kafka-python revokes partitions of topics dropped from the subscription before
            # rejoining; the rest is what the member still owns (Java sends the same).
            keep = set(subscribed)
            item = ConsumerProtocolSubscription.TopicPartition
            owned = [
                item(topic=topic, partitions=list(partitions))
                for topic, partitions in self.assignment
                if topic in keep
            ]
        return ConsumerProtocolSubscription(
            version=SUBSCRIPTION_VERSION,
            topics=subscribed,
            user_data=self._user_data(),
            owned_partitions=owned,
            generation_id=self.generation,
            rack_id=None,
        )

    def _user_data(self) -> bytes | None:
        ownership = self.assignor.ownership
        if ownership is OwnershipSource.COOPERATIVE:
            return encode_cooperative_user_data(self.generation)
        if ownership is OwnershipSource.STICKY and self.assignment is not None:
            previous = [
                TopicPartition(t, p) for t, partitions in self.assignment for p in partitions
            ]
            return encode_sticky_user_data(previous, self.generation)
        return None

    def on_assignment(self, assignment: Any, generation: int) -> None:
        """Remember this member's assignment (a ConsumerProtocolAssignment) and generation."""
        by_topic: dict[str, list[int]] = {}
        for tp in assignment.partitions():
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        self.assignment = list(by_topic.items())
        self.generation = generation

    # ------------------------------------------------------------------ leader side

    def assign(self, cluster: Any, members: Sequence[Any]) -> dict[str, Any]:
        """``{member_id: ConsumerProtocolAssignment}`` for JoinGroup ``members``.

        ``cluster`` needs ``partitions_for_topic(topic)`` (kafka-python's ClusterMetadata);
        topics it has no metadata for are skipped. Each member needs ``member_id``,
        ``metadata`` (a decoded ConsumerProtocolSubscription, or its bytes) and optionally
        ``group_instance_id``.
        """
        partitions_per_topic: dict[str, int] = {}
        unknown: set[str] = set()
        subscriptions: dict[str, bytes] = {}
        instance_ids: dict[str, str | None] = {}
        for member in members:
            member_id = member.member_id
            metadata = member.metadata
            if isinstance(metadata, (bytes, bytearray, memoryview)):
                metadata = ConsumerProtocolSubscription.decode(bytes(metadata))
            try:
                subscriptions[member_id] = encode_subscription(metadata)
            except (TypeError, ValueError, AttributeError, struct.error) as exc:
                raise InvalidPayload(f"subscription of member {member_id!r}: {exc}") from exc
            instance_ids[member_id] = getattr(member, "group_instance_id", None)
            for topic in metadata.topics:
                if topic in partitions_per_topic or topic in unknown:
                    continue
                partitions = cluster.partitions_for_topic(topic)
                if partitions is None:
                    unknown.add(topic)
                else:
                    partitions_per_topic[topic] = len(partitions)
        encoded = self.assignor.assign_encoded(partitions_per_topic, subscriptions, instance_ids)
        return {m: EncodedConsumerProtocolAssignment(data) for m, data in encoded.items()}


def encode_subscription(metadata: Any) -> bytes:
    """The bytes of a kafka-python ConsumerProtocolSubscription, at its own version.

    Byte-identical to ``metadata.encode()`` (and to
    :func:`groupcoord.protocol.encode_subscription`) but with one ``struct.pack`` per owned
    topic instead of kafka-python's per-field encoder, which costs milliseconds per member
    once members own hundreds of partitions.
    """
    version = metadata.version if metadata.version is not None else 0
    out = bytearray(_I16.pack(version))
    topics = metadata.topics
    out += _I32.pack(len(topics))
    for topic in topics:
        _put_string(out, topic)
    user_data = metadata.user_data
    if user_data is None:
        out += _I32.pack(-1)
    else:
        out += _I32.pack(len(user_data))
        out += user_data
    if version >= 1:
        owned = metadata.owned_partitions or ()
        out += _I32.pack(len(owned))
        for item in owned:
            _put_string(out, item.topic)
            partitions = item.partitions
            out += _I32.pack(len(partitions))
            out += struct.pack(f">{len(partitions)}i", *partitions)
    if version >= 2:
        out += _I32.pack(metadata.generation_id)
    if version >= 3:
        rack = metadata.rack_id
        if rack is None:
            out += _I16.pack(-1)
        else:
            _put_string(out, rack)
    return bytes(out)


def _put_string(out: bytearray, value: str) -> None:
    raw = value.encode("utf-8")
    out += _I16.pack(len(raw))
    out += raw


# init=False: a subclass of kafka-python's schema class, not a new schema to load
class EncodedConsumerProtocolAssignment(ConsumerProtocolAssignment, init=False):  # type: ignore[misc,call-arg]
    """A ConsumerProtocolAssignment that keeps the bytes the assignor wrote.

    ``encode()`` returns those bytes as they are, so kafka-python's SyncGroup carries the
    assignor's output without a decode/re-encode round trip through Python objects. The
    fields (``assigned_partitions``, ``user_data``, ``partitions()``...) are decoded by
    kafka-python's own decoder the first time they are read; from then on ``encode()``
    encodes the fields, so changes made through them are honoured.
    """

    def __init__(self, encoded: bytes) -> None:
        if len(encoded) < 2:
            raise InvalidPayload("assignment is shorter than its version field")
        self._encoded = encoded
        self._decoded: Any = None
        self._version = _I16.unpack_from(encoded)[0]
        self.tags = None
        self.unknown_tags = None

    def _fields(self) -> Any:
        if self._decoded is None:
            self._decoded = ConsumerProtocolAssignment.decode(self._encoded)
        return self._decoded

    @property
    def assigned_partitions(self) -> Any:
        return self._fields().assigned_partitions

    @assigned_partitions.setter
    def assigned_partitions(self, value: Any) -> None:
        self._fields().assigned_partitions = value

    @property
    def user_data(self) -> Any:
        return self._fields().user_data

    @user_data.setter
    def user_data(self, value: Any) -> None:
        self._fields().user_data = value

    def encode(self, *args: Any, **kwargs: Any) -> Any:
        if self._decoded is None and not args and not kwargs:
            return self._encoded
        return super().encode(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        # kafka-python's equality requires the exact same class; compare the decoded fields
        if isinstance(other, EncodedConsumerProtocolAssignment):
            other = other._fields()
        return bool(self._fields() == other)

    __hash__ = None  # type: ignore[assignment]
