"""What the coordinator tells observers: completed rebalances and removed members (for
logs and metrics).

The coordinator returns them in every :class:`~groupcoord.coordinator.output.Output`
(never calls anyone from inside a call); a shell hands them to plain callables registered
with its ``add_rebalance_listener`` / ``add_member_listener`` (see
:mod:`groupcoord.coordinator.listeners`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "MemberListener",
    "MemberRemoved",
    "RebalanceCompleted",
    "RebalanceListener",
    "RemovalCause",
]


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


class RemovalCause(enum.Enum):
    """Why the coordinator removed a member (the lines Kafka logs for each)."""

    #: no heartbeat within session.timeout.ms ("removing member ... on heartbeat expiration")
    SESSION_TIMEOUT = "session_timeout"
    #: the member sent LeaveGroup (its KIP-800 reason says why, e.g. the poll timeout)
    LEFT = "left"
    #: a dynamic member that did not rejoin within the rebalance timeout
    NOT_REJOINED = "not_rejoined"
    #: a member that did not send SyncGroup within the rebalance timeout
    NOT_SYNCED = "not_synced"
    #: a consumer-group (KIP-848) member that did not revoke partitions within its
    #: rebalance timeout
    NOT_REVOKED = "not_revoked"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberRemoved:
    """A member of a group was removed (not a pending member that never got in)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    cause: RemovalCause
    #: the coordinator's description; for LEFT it carries the client's KIP-800 reason
    reason: str
    at_ms: int


MemberListener = Callable[[MemberRemoved], None]
