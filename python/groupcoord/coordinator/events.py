"""What the coordinator tells observers: completed rebalances (for logs and metrics).

Observers are plain callables registered with
:meth:`~groupcoord.coordinator.GroupCoordinator.add_rebalance_listener`; they run inside
the coordinator call that completed the rebalance, so they must not call back into it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["RebalanceCompleted", "RebalanceListener"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RebalanceCompleted:
    """A join phase that ended with a new generation (Kafka's "Stabilized group").

    ``reason`` is why the rebalance started (the first cause, with the client's KIP-800
    reason where a JoinGroup brought it); ``started_ms`` when the group left its stable
    (or empty) state, ``completed_ms`` when the generation was created.
    """

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[str, ...]
    reason: str
    started_ms: int
    completed_ms: int

    @property
    def duration_ms(self) -> int:
        return self.completed_ms - self.started_ms


RebalanceListener = Callable[[RebalanceCompleted], None]
