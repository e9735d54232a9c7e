"""States of a KIP-848 consumer-protocol member and the moves between them, as data.

The member's side of ``ConsumerGroupHeartbeat`` (Kafka: ``ConsumerMembershipManager``'s
``MemberState``), kept to what the machine acts on:

- UNSUBSCRIBED: not in the group: before the first ``poll()``, or after a leave completed.
- JOINING: the heartbeat with member epoch 0 is due or in flight.
- RECONCILING: the coordinator sent an assignment that differs from what the member owns;
  the listener calls applying it (revoked first, then assigned) wait for the application.
- ACKNOWLEDGING: the assignment is applied; the heartbeat reporting it is due or in flight.
- STABLE: the member owns what the coordinator last sent.
- FENCED: the coordinator no longer knows this member at its epoch (FENCED_MEMBER_EPOCH,
  UNKNOWN_MEMBER_ID): its partitions are lost, and it rejoins with epoch 0 once the
  application has heard so.
- LEAVING: the leave heartbeat (epoch -1, or -2 for a static member) is due or in flight.
- STALE: left because ``max.poll.interval.ms`` passed without a poll; the next poll rejoins.
- FATAL: the member cannot go on (an error a broker gives only to a misconfigured client).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "CONSUMER_TRANSITIONS",
    "ConsumerMemberState",
    "IllegalConsumerTransition",
    "check_consumer_transition",
]


class ConsumerMemberState(enum.Enum):
    UNSUBSCRIBED = "Unsubscribed"
    JOINING = "Joining"
    RECONCILING = "Reconciling"
    ACKNOWLEDGING = "Acknowledging"
    STABLE = "Stable"
    FENCED = "Fenced"
    LEAVING = "Leaving"
    STALE = "Stale"
    FATAL = "Fatal"


_S = ConsumerMemberState
# Every state but FATAL may fail, leave (close) or go stale (the poll timer); they are added
# below so that the table lists only the moves that make each state what it is.
_ANY: Final = frozenset({_S.FATAL, _S.LEAVING, _S.STALE})

#: source state -> states it may move to (staying is always allowed).
CONSUMER_TRANSITIONS: Final[Mapping[ConsumerMemberState, frozenset[ConsumerMemberState]]] = {
    # the first poll() joins; close() before it leaves nothing (LEAVING completes at once)
    _S.UNSUBSCRIBED: frozenset({_S.JOINING}) | _ANY,
    # the join's answer carries the first assignment (possibly empty)
    _S.JOINING: frozenset({_S.RECONCILING, _S.FENCED}) | _ANY,
    # the application ran the listener calls
    _S.RECONCILING: frozenset({_S.ACKNOWLEDGING, _S.FENCED}) | _ANY,
    # the coordinator took the report (STABLE) or already sent the next assignment
    _S.ACKNOWLEDGING: frozenset({_S.STABLE, _S.RECONCILING, _S.FENCED}) | _ANY,
    _S.STABLE: frozenset({_S.RECONCILING, _S.FENCED}) | _ANY,
    # the lost call ran: rejoin under the same member id
    _S.FENCED: frozenset({_S.JOINING}) | _ANY,
    # the leave was answered (or could not be sent): out of the group
    _S.LEAVING: frozenset({_S.UNSUBSCRIBED, _S.FATAL}),
    # the application polled again (rejoin), or closes
    _S.STALE: frozenset({_S.JOINING, _S.UNSUBSCRIBED, _S.FATAL, _S.LEAVING}),
    _S.FATAL: frozenset(),
}


class IllegalConsumerTransition(RuntimeError):
    """The machine tried a move the table does not allow (a bug in the machine)."""

    def __init__(self, source: ConsumerMemberState, target: ConsumerMemberState) -> None:
        allowed = ", ".join(sorted(s.value for s in CONSUMER_TRANSITIONS[source])) or "none"
        super().__init__(
            f"illegal consumer member transition {source.value} -> {target.value} "
            f"(allowed from {source.value}: {allowed})"
        )
        self.source = source
        self.target = target


def check_consumer_transition(source: ConsumerMemberState, target: ConsumerMemberState) -> None:
    """Raise :class:`IllegalConsumerTransition` unless ``source -> target`` is allowed."""
    if target is not source and target not in CONSUMER_TRANSITIONS[source]:
        raise IllegalConsumerTransition(source, target)
