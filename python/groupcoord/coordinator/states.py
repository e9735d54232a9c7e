"""The classic group state machine, as data.

States and allowed transitions are Apache Kafka's (``GroupState.validPreviousStates``):

- Empty: no members (offsets may remain). A join starts a rebalance.
- PreparingRebalance: the join phase; members (re)join until all have or the rebalance
  timeout passes.
- CompletingRebalance: the sync phase; waiting for the leader's assignment.
- Stable: the assignment is out; heartbeats keep members alive.
- Dead: the group is being removed (DeleteGroups); nothing leaves this state.

The coordinator asks :func:`check_transition` before every change of state; an illegal one
is a bug in the coordinator and raises :class:`IllegalStateTransition`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final

__all__ = [
    "TRANSITIONS",
    "GroupState",
    "IllegalStateTransition",
    "can_rebalance",
    "check_transition",
]


class GroupState(enum.Enum):
    """A classic group's state; ``.value`` is Kafka's name for it (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


#: target state -> states it may be entered from (Kafka's validPreviousStates).
_PREVIOUS: Final[Mapping[GroupState, frozenset[GroupState]]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
            GroupState.DEAD,
        }
    ),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
}

#: source state -> states it may move to. The table the coordinator obeys.
TRANSITIONS: Final[Mapping[GroupState, frozenset[GroupState]]] = {
    source: frozenset(target for target, sources in _PREVIOUS.items() if source in sources)
    for source in GroupState
}


class IllegalStateTransition(RuntimeError):
    """The coordinator tried a transition Kafka's state machine does not allow (a bug)."""

    def __init__(self, group_id: str, source: GroupState, target: GroupState) -> None:
        allowed = ", ".join(sorted(s.value for s in TRANSITIONS[source])) or "none"
        super().__init__(
            f"group {group_id!r}: illegal transition {source.value} -> {target.value} "
            f"(allowed from {source.value}: {allowed})"
        )
        self.group_id = group_id
        self.source = source
        self.target = target


def check_transition(group_id: str, source: GroupState, target: GroupState) -> None:
    """Raise :class:`IllegalStateTransition` unless ``source -> target`` is allowed."""
    if target not in TRANSITIONS[source]:
        raise IllegalStateTransition(group_id, source, target)


def can_rebalance(state: GroupState) -> bool:
    """Whether a rebalance may start from ``state`` (Kafka's ``canRebalance``)."""
    return GroupState.PREPARING_REBALANCE in TRANSITIONS[state]
