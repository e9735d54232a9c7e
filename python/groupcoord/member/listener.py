"""What the application hears about rebalances: :class:`RebalanceListener` and the queued
:class:`ListenerCall` values the machine hands to its runner.

The machine never calls application code itself (it may run on a heartbeat thread); it
queues a :class:`ListenerCall` and the runner delivers it on the application's thread,
inside ``poll()``, as Kafka's consumer does.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from groupcoord.types import TopicPartition

__all__ = ["CallbackKind", "ListenerCall", "RebalanceListener"]


class RebalanceListener:
    """Base class of rebalance listeners; every hook is a no-op, override what you need.

    - ``on_partitions_revoked``: partitions given up in an orderly way (commit their offsets
      here). Eager members revoke everything before rejoining; cooperative members only what
      the new assignment takes away. Never called with an empty set.
    - ``on_partitions_assigned``: partitions newly received (eager: the whole assignment).
      Called after every completed rebalance, possibly with an empty set, so the application
      knows a rebalance finished (as Kafka does).
    - ``on_partitions_lost``: partitions that may already belong to someone else (the member
      fell out of the group); do not commit them. Never called with an empty set.
    """

    def on_partitions_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions given up before another member takes them."""

    def on_partitions_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions received in the rebalance that just completed."""

    def on_partitions_lost(self, partitions: frozenset[TopicPartition]) -> None:
        """Partitions that were taken away without an orderly revocation."""


class CallbackKind(enum.Enum):
    REVOKED = "revoked"
    ASSIGNED = "assigned"
    LOST = "lost"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerCall:
    """One listener invocation waiting to be delivered on the application's thread."""

    kind: CallbackKind
    partitions: frozenset[TopicPartition]
    #: the generation the call belongs to (-1 when the member had none)
    generation: int = -1

    def deliver(self, listener: RebalanceListener) -> None:
        """Call the matching hook of ``listener``."""
        if self.kind is CallbackKind.REVOKED:
            listener.on_partitions_revoked(self.partitions)
        elif self.kind is CallbackKind.ASSIGNED:
            listener.on_partitions_assigned(self.partitions)
        else:
            listener.on_partitions_lost(self.partitions)
