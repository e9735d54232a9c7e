"""What one coordinator call hands its shell (Kafka's ``CoordinatorResult``).

Every :meth:`~groupcoord.coordinator.GroupCoordinator.handle`,
:meth:`~groupcoord.coordinator.GroupCoordinator.tick` and
:meth:`~groupcoord.coordinator.GroupCoordinator.persisted` returns an :class:`Output`:

- ``responses``: released now (for this request or earlier ones, by ``correlation``);
- ``writes``: records the shell must persist, as one :class:`WriteBatch`. Responses that
  depend on them (an OffsetCommit, a leader's SyncGroup, a DeleteGroups, a static member's
  rejoin) are held back until the shell calls ``persisted(batch_id, ok, now_ms)``; with
  ``ok=False`` they are answered with Kafka's error for a failed append;
- ``events``: what observers are told (completed rebalances, removed members), in order.

A shell writes batches in the order it got them and reports them in that order; it may
write many batches in one transaction (group commit) and then report each of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from groupcoord.coordinator.events import MemberRemoved, RebalanceCompleted
from groupcoord.coordinator.messages import AnyRequest, AnyResponse
from groupcoord.coordinator.offsets import StoreRecord

__all__ = [
    "CoordinatorEvent",
    "CoordinatorRequest",
    "CoordinatorResponse",
    "Output",
    "WriteBatch",
]

#: Every request the coordinator handles: the classic group APIs and KIP-848's.
CoordinatorRequest: TypeAlias = (
    AnyRequest | ConsumerGroupHeartbeatRequest | ConsumerGroupDescribeRequest
)
#: Every response it releases.
CoordinatorResponse: TypeAlias = (
    AnyResponse | ConsumerGroupHeartbeatResponse | ConsumerGroupDescribeResponse
)

#: What the coordinator tells observers.
CoordinatorEvent = RebalanceCompleted | MemberRemoved


@dataclass(frozen=True, slots=True)
class WriteBatch:
    """Records to persist, in order, all or none; report them with ``batch_id``."""

    batch_id: int
    records: tuple[StoreRecord, ...]


class Output(NamedTuple):
    """One call's result: ``responses, writes, events = coordinator.handle(...)``."""

    responses: list[CoordinatorResponse]
    writes: WriteBatch | None
    events: tuple[CoordinatorEvent, ...]
