"""The machinery every assignor shares: input checks, backend choice, result objects.

An assignor is a name, an algorithm (``kind``, the same string in Rust and in the
reference) and where it reads previous ownership from. ``backend="rust"`` runs the
algorithm in ``groupcoord._core``; ``backend="python"`` runs the pure-Python
reference in :mod:`groupcoord.reference.assign`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from typing import ClassVar, Literal

from groupcoord import _core
from groupcoord.assignors.input_checks import (
    PartitionRacks,
    check_assign_input,
    check_encoded_input,
    check_partition_racks,
)
from groupcoord.errors import InvalidPayload
from groupcoord.protocol import (
    decode_cooperative_user_data,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
)
from groupcoord.protocol.consumer import OwnershipSource
from groupcoord.reference import assign as reference
from groupcoord.types import Assignment, Subscription, TopicPartition

Backend = Literal["rust", "python"]

_log = logging.getLogger("groupcoord.assignors")

#: ConsumerProtocolAssignment versions we write (Java writes up to 3).
MAX_ASSIGNMENT_VERSION = 3


class RebalanceProtocol(Enum):
    """KIP-429: how members give up partitions during a rebalance."""

    #: every member revokes everything before rejoining
    EAGER = "EAGER"
    #: members keep what they own; only partitions that move are revoked
    COOPERATIVE = "COOPERATIVE"


class BackendChoice:
    """Which implementation runs: the Rust core (``"rust"``, the default) or its pure-Python
    twin in :mod:`groupcoord.reference` (``"python"``). Shared by every assignor kind."""

    def __init__(self, *, backend: Backend = "rust") -> None:
        if backend not in ("rust", "python"):
            raise ValueError(f"backend must be 'rust' or 'python', not {backend!r}")
        self.backend: Backend = backend

    def __repr__(self) -> str:
        return f"{type(self).__name__}(backend={self.backend!r})"


class Assignor(BackendChoice):
    """Base of the built-in assignors; see :mod:`groupcoord.assignors.builtin`."""

    #: the protocol name members announce in JoinGroup
    name: ClassVar[str]
    #: the algorithm key understood by ``_core`` and by the reference
    kind: ClassVar[str]
    ownership: ClassVar[OwnershipSource] = OwnershipSource.NONE
    #: rebalance protocols this assignor supports, preferred first (as Java's supportedProtocols)
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (RebalanceProtocol.EAGER,)

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, Assignment]:
        """Assign partitions to members; every member id of ``subscriptions`` is in the result.

        Topics a member subscribes to that are missing from ``partitions_per_topic``
        are skipped, as Kafka's assignors skip topics without metadata. Owned
        partitions of unknown topics or out of range are ignored. Input that cannot describe
        a group raises :class:`~groupcoord.errors.InvalidAssignorInput`, the same message
        from either backend (see :mod:`groupcoord.assignors.input_checks`).

        ``partition_racks`` (KIP-881): ``{TopicPartition: frozenset of the racks holding a
        replica}``. With it, range, sticky and cooperative-sticky prefer a member whose
        ``Subscription.rack_id`` holds a replica, never at the cost of balance; round-robin
        ignores racks, as Java's does. Partitions left out have no known racks.
        """
        check_assign_input(partitions_per_topic, subscriptions)
        check_partition_racks(partition_racks)
        if self.backend == "rust":
            return _core.assign(
                self.kind,
                partitions_per_topic,
                subscriptions,
                TopicPartition,
                Assignment,
                partition_racks,
            )
        members = [self._member_input(member_id, sub) for member_id, sub in subscriptions.items()]
        model = reference.build_model(
            partitions_per_topic, members, reference.read_partition_racks(partition_racks)
        )
        plan = _REFERENCE_ALGORITHMS[self.kind](model)
        return {
            model.member_ids[m]: Assignment(_to_topic_partitions(model, partitions))
            for m, partitions in enumerate(plan)
        }

    def assign_encoded(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, bytes],
        group_instance_ids: Mapping[str, str | None] | None = None,
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> dict[str, bytes]:
        """The leader's hot path: JoinGroup subscription bytes in, SyncGroup assignment bytes out.

        ``group_instance_ids`` (KIP-345) travel beside the subscription in JoinGroup,
        not inside it; pass them so range and round-robin order static members as
        Java does. Each assignment is written at ``min(3, that member's subscription version)``
        so members on old protocol versions can read what they get. Malformed bytes
        raise :class:`groupcoord.errors.InvalidPayload` naming the member. Members' racks
        come from their subscriptions (v3 ``rack_id``); ``partition_racks`` as in
        :meth:`assign`.
        """
        check_encoded_input(partitions_per_topic, subscriptions, group_instance_ids)
        check_partition_racks(partition_racks)
        if self.backend == "rust":
            return _core.assign_encoded(
                self.kind, partitions_per_topic, subscriptions, group_instance_ids, partition_racks
            )
        decoded: dict[str, Subscription] = {}
        versions: dict[str, int] = {}
        for member_id, data in subscriptions.items():
            raw = bytes(data)
            try:
                sub = decode_subscription(raw)
            except InvalidPayload as exc:
                raise InvalidPayload(f"subscription of member {member_id!r}: {exc}") from exc
            instance = (group_instance_ids or {}).get(member_id)
            decoded[member_id] = replace(sub, group_instance_id=instance) if instance else sub
            versions[member_id] = int.from_bytes(raw[:2], "big", signed=True)
        assignments = self.assign(partitions_per_topic, decoded, partition_racks=partition_racks)
        return {
            member_id: encode_assignment(
                assignment, min(MAX_ASSIGNMENT_VERSION, versions[member_id])
            )
            for member_id, assignment in assignments.items()
        }

    def _member_input(self, member_id: str, sub: Subscription) -> reference.MemberInput:
        # Claims are checked here, member by member in the caller's order, as the Rust core
        # reads them, whether or not this assignor uses them: both refuse the same input.
        for claim in sub.owned_partitions:
            reference.owned_claim(claim, member_id)
        owned: tuple[tuple[str, int], ...] = ()
        generation = -1
        # A leader cannot refuse to assign: user data it cannot read is ignored with a
        # warning, as Java's assignors do (rust/src/bindings/assign_input.rs does the same).
        if self.ownership is OwnershipSource.STICKY:
            if sub.owned_partitions:
                owned, generation = tuple(sub.owned_partitions), sub.generation_id
            elif sub.user_data:
                try:
                    partitions, user_generation = _decode_sticky_any(sub.user_data)
                except InvalidPayload as exc:
                    _log.warning(
                        "ignoring unreadable sticky user data of member %r: %s", member_id, exc
                    )
                else:
                    owned = tuple(partitions)
                    generation = -1 if user_generation is None else user_generation
        elif self.ownership is OwnershipSource.COOPERATIVE:
            owned, generation = tuple(sub.owned_partitions), sub.generation_id
            if generation == -1 and sub.user_data:
                try:
                    generation = decode_cooperative_user_data(sub.user_data)
                except InvalidPayload as exc:
                    _log.warning(
                        "ignoring unreadable cooperative user data of member %r: %s", member_id, exc
                    )
        return reference.MemberInput(
            member_id=member_id,
            topics=sub.topics,
            owned=owned,
            generation=generation,
            group_instance_id=sub.group_instance_id,
            rack=sub.rack_id,
        )


def _decode_sticky_any(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """Java's StickyAssignorUserData, or kafka-python 3.0.12's (behind an int16 version)."""
    try:
        return decode_sticky_user_data(data)
    except InvalidPayload:
        if data[:2] not in (b"\x00\x00", b"\x00\x01"):
            raise
        try:
            return decode_sticky_user_data(data[2:])
        except InvalidPayload:
            pass
        raise


def _to_topic_partitions(model: reference.GroupModel, dense: list[int]) -> list[TopicPartition]:
    out: list[TopicPartition] = []
    t = 0
    offsets, names = model.offsets, model.topic_names
    for p in dense:  # sorted, so the topic cursor only moves forward
        while offsets[t + 1] <= p:
            t += 1
        out.append(TopicPartition(names[t], p - offsets[t]))
    return out


_REFERENCE_ALGORITHMS = {
    "range": reference.assign_range,
    "roundrobin": reference.assign_roundrobin,
    "sticky": reference.assign_sticky,
    "cooperative-sticky": reference.assign_cooperative_sticky,
}
