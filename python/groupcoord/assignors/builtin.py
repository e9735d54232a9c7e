"""The four assignors of the Java client, under the protocol names Java members announce."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import ClassVar

from groupcoord.assignors.base import MAX_ASSIGNMENT_VERSION, Assignor, Backend, RebalanceProtocol
from groupcoord.assignors.delayed_imbalance import DelayedImbalance
from groupcoord.assignors.input_checks import (
    PartitionRacks,
    check_assign_input,
    check_encoded_input,
    check_partition_racks,
)
from groupcoord.errors import InvalidAssignorInput, InvalidPayload
from groupcoord.protocol import decode_subscription, encode_assignment
from groupcoord.protocol.consumer import OwnershipSource
from groupcoord.types import Assignment, Subscription


class RangeAssignor(Assignor):
    """Per topic, contiguous ranges over its subscribers; the first ``P % M`` get one more.

    ``backend="rust"`` (default) runs the Rust core; ``backend="python"`` the pure-Python
    reference (:mod:`groupcoord.reference.assign`), same output.
    """

    name: ClassVar[str] = "range"
    kind: ClassVar[str] = "range"


class RoundRobinAssignor(Assignor):
    """All partitions in (topic, partition) order dealt in turn to the members subscribed.

    ``backend="rust"`` (default) runs the Rust core; ``backend="python"`` the pure-Python
    reference (:mod:`groupcoord.reference.assign`), same output.
    """

    name: ClassVar[str] = "roundrobin"
    kind: ClassVar[str] = "roundrobin"


class StickyAssignor(Assignor):
    """KIP-54: balanced, and moving as few previously owned partitions as possible (eager).

    ``backend="rust"`` (default) runs the Rust core; ``backend="python"`` the pure-Python
    reference (:mod:`groupcoord.reference.assign`), the same algorithm step for step.
    """

    name: ClassVar[str] = "sticky"
    kind: ClassVar[str] = "sticky"
    ownership: ClassVar[OwnershipSource] = OwnershipSource.STICKY


class CooperativeStickyAssignor(Assignor):
    """KIP-429: the sticky target, minus partitions that must be revoked first.

    ``backend="rust"`` (default) runs the Rust core; ``backend="python"`` the pure-Python
    reference (:mod:`groupcoord.reference.assign`), the same algorithm step for step.

    ``scheduled_rebalance_max_delay_ms`` > 0 turns on KIP-415 delayed imbalance resolution
    (:mod:`groupcoord.assignors.delayed_imbalance`): the partitions of a departed static
    member are held back for up to that long. Then the assignor keeps memory between runs
    (use one instance per group) and ``assign``/``assign_encoded`` need ``now_ms``.
    """

    name: ClassVar[str] = "cooperative-sticky"
    kind: ClassVar[str] = "cooperative-sticky"
    ownership: ClassVar[OwnershipSource] = OwnershipSource.COOPERATIVE
    supported_protocols: ClassVar[tuple[RebalanceProtocol, ...]] = (
        RebalanceProtocol.COOPERATIVE,
        RebalanceProtocol.EAGER,
    )

    def __init__(
        self, *, backend: Backend = "rust", scheduled_rebalance_max_delay_ms: int = 0
    ) -> None:
        super().__init__(backend=backend)
        self._delayed = DelayedImbalance(scheduled_rebalance_max_delay_ms)

    @property
    def scheduled_rebalance_max_delay_ms(self) -> int:
        return self._delayed.max_delay_ms

    @property
    def delayed_imbalance(self) -> DelayedImbalance:
        """The KIP-415 memory (departed static members still waited for)."""
        return self._delayed

    def __repr__(self) -> str:
        delay = self._delayed.max_delay_ms
        extra = f", scheduled_rebalance_max_delay_ms={delay}" if delay else ""
        return f"{type(self).__name__}(backend={self.backend!r}{extra})"

    def assign(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, Subscription],
        *,
        partition_racks: PartitionRacks | None = None,
        now_ms: int | None = None,
    ) -> dict[str, Assignment]:
        if self._delayed.max_delay_ms == 0:
            return super().assign(
                partitions_per_topic, subscriptions, partition_racks=partition_racks
            )
        check_assign_input(partitions_per_topic, subscriptions)  # before the KIP-415 memory
        check_partition_racks(partition_racks)
        now = _require_now(now_ms)
        adjusted, held = self._delayed.prepare(subscriptions, now)
        result = super().assign(partitions_per_topic, adjusted, partition_racks=partition_racks)
        return self._delayed.finish(result, subscriptions, held, now)

    def assign_encoded(
        self,
        partitions_per_topic: Mapping[str, int],
        subscriptions: Mapping[str, bytes],
        group_instance_ids: Mapping[str, str | None] | None = None,
        *,
        partition_racks: PartitionRacks | None = None,
        now_ms: int | None = None,
    ) -> dict[str, bytes]:
        if self._delayed.max_delay_ms == 0:
            return super().assign_encoded(
                partitions_per_topic,
                subscriptions,
                group_instance_ids,
                partition_racks=partition_racks,
            )
        check_encoded_input(partitions_per_topic, subscriptions, group_instance_ids)
        check_partition_racks(partition_racks)
        now = _require_now(now_ms)
        # The KIP-415 path needs the group.instance.ids and rewrites owned partitions, so it
        # goes through decoded subscriptions (the members' count, not the partitions', is small).
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
        result = self.assign(
            partitions_per_topic, decoded, partition_racks=partition_racks, now_ms=now
        )
        return {
            member_id: encode_assignment(a, min(MAX_ASSIGNMENT_VERSION, versions[member_id]))
            for member_id, a in result.items()
        }


def _require_now(now_ms: int | None) -> int:
    if now_ms is None:
        raise InvalidAssignorInput(
            "scheduled_rebalance_max_delay_ms > 0 needs now_ms (the leader's current time)"
        )
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        raise InvalidAssignorInput(f"now_ms must be an int, got {type(now_ms).__name__}")
    return now_ms
