"""Observers of a coordinator, on the shell's side.

The coordinator returns its events in every :class:`~groupcoord.coordinator.output.Output`;
a shell that wants callbacks keeps a :class:`Listeners` and hands it each output's events
after the coordinator call returned (never from inside it), so a listener may call back
into the coordinator.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.coordinator.events import (
    MemberListener,
    MemberRemoved,
    RebalanceCompleted,
    RebalanceListener,
)
from groupcoord.coordinator.output import CoordinatorEvent

__all__ = ["Listeners"]


class Listeners:
    """Rebalance and member listeners, called in registration order per event."""

    __slots__ = ("_member", "_rebalance")

    def __init__(self) -> None:
        self._rebalance: list[RebalanceListener] = []
        self._member: list[MemberListener] = []

    def add_rebalance_listener(self, listener: RebalanceListener) -> None:
        """Call ``listener(RebalanceCompleted)`` whenever a join phase ends with a new
        generation."""
        self._rebalance.append(listener)

    def add_member_listener(self, listener: MemberListener) -> None:
        """Call ``listener(MemberRemoved)`` whenever a member is removed from a group (session
        expiry, LeaveGroup, not rejoining or not syncing in time)."""
        self._member.append(listener)

    def notify(self, events: Iterable[CoordinatorEvent]) -> None:
        for event in events:
            if isinstance(event, RebalanceCompleted):
                for on_rebalance in self._rebalance:
                    on_rebalance(event)
            elif isinstance(event, MemberRemoved):
                for on_removed in self._member:
                    on_removed(event)
            else:
                raise TypeError(f"not a coordinator event: {type(event).__name__}")
