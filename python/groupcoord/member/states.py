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

Beside the state, :class:`JoinPhase` says where the member is in its (re)join sequence, which
runs across states (a cooperative member asks to rejoin while STABLE; a failed SyncGroup leaves
it UNJOINED with the sequence still running). Its moves are checked the same way, against
:data:`PHASE_TRANSITIONS`, by :func:`check_phase_transition`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "HEARTBEAT_STATES",
    "JOINING_PHASES",
    "PHASE_TRANSITIONS",
    "TRANSITIONS",
    "IllegalMemberTransition",
    "IllegalPhaseTransition",
    "JoinPhase",
    "MemberState",
    "check_phase_transition",
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


class JoinPhase(enum.Enum):
    """Where the member is in a (re)join sequence (Kafka: ``rejoinNeeded`` and whether
    ``joinGroupIfNeeded`` has begun).

    - IDLE: no rejoin wanted.
    - WANTED: a rejoin was asked for (an error, the coordinator, a revocation, metadata); the
      application's next ``poll()`` starts it, as Kafka joins only from ``poll()``.
    - STARTED: the sequence is running and its JoinGroup has not gone out yet: it goes out as
      soon as the gates allow (revocations delivered, no LeaveGroup pending, backoff over).
    - SENT: a JoinGroup of this sequence went out: it is in flight (PREPARING_REBALANCE), its
      SyncGroup is (COMPLETING_REBALANCE), or a failed round is being retried (UNJOINED).
      A successful SyncGroup ends the sequence (IDLE).
    """

    IDLE = "Idle"
    WANTED = "Wanted"
    STARTED = "Started"
    SENT = "Sent"


_P = JoinPhase

#: source phase -> phases it may move to (staying is always allowed).
PHASE_TRANSITIONS: Final[Mapping[JoinPhase, frozenset[JoinPhase]]] = {
    # a rejoin is asked for; or poll() finds the member out of the group (UNJOINED) with none
    _P.IDLE: frozenset({_P.WANTED, _P.STARTED}),
    # the application polled (or a cooperative revocation starts the next round at once)
    _P.WANTED: frozenset({_P.STARTED}),
    # the JoinGroup went out; or the sequence was stopped (close, fatal error, a timeout)
    # before it did, the wish to rejoin remaining
    _P.STARTED: frozenset({_P.SENT, _P.WANTED}),
    # the round completed, or the sequence was stopped (close, fatal error, a timeout);
    # a rejoin asked for while a round runs starts the next one at once
    _P.SENT: frozenset({_P.IDLE, _P.STARTED}),
}

#: phases in which a join sequence is running (JoinGroup due or sent)
JOINING_PHASES: Final = frozenset({_P.STARTED, _P.SENT})


class IllegalPhaseTransition(RuntimeError):
    """The machine tried a join-phase move the table does not allow (a bug in the machine)."""

    def __init__(self, source: JoinPhase, target: JoinPhase) -> None:
        allowed = ", ".join(sorted(p.value for p in PHASE_TRANSITIONS[source])) or "none"
        super().__init__(
            f"illegal join phase transition {source.value} -> {target.value} "
            f"(allowed from {source.value}: {allowed})"
        )
        self.source = source
        self.target = target


def check_phase_transition(source: JoinPhase, target: JoinPhase) -> None:
    """Raise :class:`IllegalPhaseTransition` unless ``source -> target`` is allowed."""
    if target is not source and target not in PHASE_TRANSITIONS[source]:
        raise IllegalPhaseTransition(source, target)
