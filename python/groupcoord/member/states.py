"""The member's states and the transitions between them, as data (h11 style).

States follow Kafka's ``AbstractCoordinator.MemberState`` plus two terminal ones:

- UNJOINED: not in a group generation (initially, after an error reset, after a poll timeout).
- PREPARING_REBALANCE: our JoinGroup is in flight.
- COMPLETING_REBALANCE: JoinGroup answered, our SyncGroup is in flight.
- STABLE: we hold an assignment of the current generation and heartbeat.
- FATAL: a non-recoverable error (e.g. FENCED_INSTANCE_ID); only closing remains.
- CLOSED: ``close()`` was called; nothing but the final commits and LeaveGroup is sent.

The machine asks :func:`check_transition` before every change of state; a transition missing
from :data:`TRANSITIONS` is a bug in the machine and raises :class:`IllegalMemberTransition`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "HEARTBEAT_STATES",
    "TRANSITIONS",
    "IllegalMemberTransition",
    "MemberState",
    "check_transition",
]


class MemberState(enum.Enum):
    UNJOINED = "Unjoined"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    FATAL = "Fatal"
    CLOSED = "Closed"


_S = MemberState

#: source state -> states it may move to.
TRANSITIONS: Final[Mapping[MemberState, frozenset[MemberState]]] = {
    _S.UNJOINED: frozenset({_S.PREPARING_REBALANCE, _S.FATAL, _S.CLOSED}),
    _S.PREPARING_REBALANCE: frozenset({_S.COMPLETING_REBALANCE, _S.UNJOINED, _S.FATAL, _S.CLOSED}),
    _S.COMPLETING_REBALANCE: frozenset({_S.STABLE, _S.UNJOINED, _S.FATAL, _S.CLOSED}),
    _S.STABLE: frozenset({_S.PREPARING_REBALANCE, _S.UNJOINED, _S.FATAL, _S.CLOSED}),
    _S.FATAL: frozenset({_S.CLOSED}),
    _S.CLOSED: frozenset(),
}

#: states in which the member heartbeats (Kafka: joined, i.e. not UNJOINED and no JoinGroup
#: in flight; the JoinGroup itself keeps the session alive while it waits).
HEARTBEAT_STATES: Final = frozenset({_S.COMPLETING_REBALANCE, _S.STABLE})


class IllegalMemberTransition(RuntimeError):
    """The machine tried a transition the table does not allow (a bug in the machine)."""

    def __init__(self, source: MemberState, target: MemberState) -> None:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[source])) or "none"
        super().__init__(
            f"illegal member transition {source.value} -> {target.value} "
            f"(allowed from {source.value}: {allowed})"
        )
        self.source = source
        self.target = target


def check_transition(source: MemberState, target: MemberState) -> None:
    """Raise :class:`IllegalMemberTransition` unless ``source -> target`` is allowed."""
    if target is not source and target not in TRANSITIONS[source]:
        raise IllegalMemberTransition(source, target)
