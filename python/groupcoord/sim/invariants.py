"""Safety properties a simulation can check as it runs (``run(..., check_invariants=True)``).

The same rules the member tests hold the machines to, over the simulator's processes:

- no partition is in the assignments of two processes that the coordinator counts as members
  of the group and that can act (not paused, not cut off from the coordinator, and, for a
  client without a heartbeat thread, not busy outside ``poll()``);
- a partition reaches a new owner's application only after every other application that
  held it was told to give it up (revoked, or lost because its member fell out of the group),
  unless the coordinator had already removed that other member or that process cannot act.

The exemptions are Kafka's own limits: a paused or cut-off process, or a pre-KIP-62 client
busy processing (it does no I/O outside ``poll()``), is a zombie until it can act again and
notice (its first step after the pause reports the partitions lost). The
coordinator completes a rebalance without a static member that did not rejoin within the
rebalance timeout, handing out what that member gained in its last assignment (its
subscription's owned partitions predate it); Kafka fences such a zombie's commits, it cannot
stop its processing.
- no process's generation goes down.

A violation raises :class:`InvariantViolation` at the virtual time it happens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from groupcoord.member.listener import CallbackKind
from groupcoord.types import TopicPartition

if TYPE_CHECKING:  # pragma: no cover
    from groupcoord.sim.engine import Process

__all__ = ["InvariantChecker", "InvariantViolation"]


class InvariantViolation(AssertionError):
    """A safety property of the group protocol did not hold in a simulation."""


class InvariantChecker:
    def __init__(self, *, heartbeat_thread: bool = True) -> None:
        self._generations: dict[int, int] = {}
        self._thread = heartbeat_thread

    def after_step(
        self, now_ms: int, processes: Iterable[Process], members: frozenset[str]
    ) -> None:
        """``members``: the member ids the coordinator has in the group now."""
        owners: dict[TopicPartition, str] = {}
        for process in processes:
            if not process.alive:
                continue
            machine = process.machine
            generation = machine.generation
            if generation != -1:
                last = self._generations.get(id(process), -1)
                if generation < last:
                    raise InvariantViolation(
                        f"t={now_ms}: {process.name}'s generation went from {last} to {generation}"
                    )
                self._generations[id(process)] = generation
            if machine.member_id not in members or not self._can_act(process):
                continue
            for tp in machine.assignment:
                other = owners.get(tp)
                if other is not None:
                    raise InvariantViolation(
                        f"t={now_ms}: {tp} is in the assignments of {other} and {process.name}"
                    )
                owners[tp] = process.name

    def before_assigned(
        self,
        now_ms: int,
        new_owner: Process,
        partitions: frozenset[TopicPartition],
        processes: Iterable[Process],
        members: frozenset[str],
    ) -> None:
        """``new_owner``'s application is about to be told it has ``partitions``."""
        for other in processes:
            if (
                other is new_owner
                or not other.alive
                or other.machine.member_id not in members
                or not self._can_act(other)
            ):
                continue
            held = partitions & other.owned.keys()
            if not held:
                continue
            pending = {
                tp
                for call in other.machine.peek_callbacks()
                if call.kind is CallbackKind.LOST
                for tp in call.partitions
            }
            if held - pending:
                raise InvariantViolation(
                    f"t={now_ms}: {sorted(held - pending)} assigned to {new_owner.name} while "
                    f"{other.name}'s application still holds them and was not told to give "
                    "them up"
                )

    def _can_act(self, process: Process) -> bool:
        if process.paused_until is not None or process.cut_until is not None:
            return False
        return self._thread or process.busy_until is None
