"""KIP-415 delayed imbalance resolution for the cooperative-sticky assignor.

A static member (one with a ``group.instance.id``, KIP-345) that disappears often comes back
soon: a rolling restart, a redeploy. Moving its partitions to the others at once and back
again when it returns costs two rounds of revocation and state rebuilding. KIP-415 (written
for Kafka Connect's incremental cooperative protocol, where it is
``scheduled.rebalance.max.delay.ms``) holds them back instead:

- When a static member that owned partitions in the previous assignment is absent from a
  rebalance, its partitions stay *unassigned* for up to ``max_delay_ms`` from the rebalance
  that first noticed its absence.
- If a member with the same ``group.instance.id`` joins before the delay runs out, it gets
  exactly those partitions back (they are handed to the assignor as partitions it owns, with
  the newest generation, so the sticky algorithm keeps them in place).
- Once the delay has run out, the next rebalance assigns them as plain cooperative-sticky
  would. To make sure there is such a rebalance, every assignment carries the remaining delay
  (Connect's ``ScheduledRebalanceTimeout``) in its user data; members schedule a rejoin for
  when it elapses (:class:`groupcoord.member.MemberMachine` does).
- With no departed static member, the result is exactly plain cooperative-sticky's (the same
  partitions; no user data).

Time enters only through arguments: the leader passes ``now_ms`` to ``assign``.

The memory (the previous static owners and the pending departures) lives in the leader's
assignor instance, as Connect's leader keeps it: one instance serves one group. A new leader
starts without it, so a departure that coincides with a leader change is resolved at once
(plain cooperative-sticky behaviour); nothing is ever assigned twice because of it.

Assignment user data written here (Java's cooperative-sticky writes none, and Java members
ignore it): ``int16 version = 0`` then ``int32 scheduled_rebalance_timeout_ms``, big-endian.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from groupcoord.types import Assignment, Subscription, TopicPartition

__all__ = [
    "DelayedImbalance",
    "decode_scheduled_delay",
    "encode_scheduled_delay",
]

_log = logging.getLogger("groupcoord.assignors")

_USER_DATA: Final = struct.Struct(">hi")
_USER_DATA_VERSION: Final = 0


def encode_scheduled_delay(delay_ms: int) -> bytes:
    """Assignment user data carrying the remaining delay before the follow-up rebalance."""
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, int):
        raise TypeError("delay_ms must be an int")
    if not 0 <= delay_ms < 2**31:
        raise ValueError(f"delay_ms must be in [0, 2**31), got {delay_ms}")
    return _USER_DATA.pack(_USER_DATA_VERSION, delay_ms)


def decode_scheduled_delay(user_data: bytes | None) -> int | None:
    """The scheduled rebalance delay in ``user_data``; ``None`` when there is none (Java's
    cooperative-sticky sends no user data) or the bytes are not ours."""
    if not user_data:
        return None
    if len(user_data) != _USER_DATA.size:
        _log.debug("ignoring assignment user data of %d bytes", len(user_data))
        return None
    version, delay = _USER_DATA.unpack(user_data)
    if version != _USER_DATA_VERSION or delay < 0:
        return None
    return int(delay)


@dataclass(frozen=True, slots=True)
class _Departure:
    partitions: frozenset[TopicPartition]
    deadline_ms: int


class DelayedImbalance:
    """The leader's KIP-415 bookkeeping around one assignor run.

    :meth:`prepare` turns the subscriptions into the assignor's input (a returning static
    member is given back what it owned) and says which partitions to hold back;
    :meth:`finish` removes those from the result, remembers who owns what, and writes the
    remaining delay into every assignment.
    """

    __slots__ = ("_departed", "_previous", "max_delay_ms")

    def __init__(self, max_delay_ms: int) -> None:
        if isinstance(max_delay_ms, bool) or not isinstance(max_delay_ms, int):
            raise TypeError("scheduled_rebalance_max_delay_ms must be an int")
        if not 0 <= max_delay_ms < 2**31:
            raise ValueError(
                f"scheduled_rebalance_max_delay_ms must be in [0, 2**31), got {max_delay_ms}"
            )
        self.max_delay_ms = max_delay_ms
        #: group.instance.id -> partitions the last assignment gave it
        self._previous: dict[str, frozenset[TopicPartition]] = {}
        #: group.instance.id -> partitions held for it and until when
        self._departed: dict[str, _Departure] = {}

    def pending(self) -> dict[str, tuple[frozenset[TopicPartition], int]]:
        """Departed static members still waited for: instance id -> (partitions, deadline)."""
        return {k: (d.partitions, d.deadline_ms) for k, d in self._departed.items()}

    def prepare(
        self, subscriptions: Mapping[str, Subscription], now_ms: int
    ) -> tuple[dict[str, Subscription], frozenset[TopicPartition]]:
        """The subscriptions to assign with, and the partitions to hold back this round."""
        present = {
            sub.group_instance_id: member_id
            for member_id, sub in subscriptions.items()
            if sub.group_instance_id is not None
        }
        for instance, partitions in self._previous.items():
            if instance not in present and instance not in self._departed and partitions:
                self._departed[instance] = _Departure(partitions, now_ms + self.max_delay_ms)
        for instance, departure in list(self._departed.items()):
            if departure.deadline_ms <= now_ms:
                del self._departed[instance]
        adjusted = dict(subscriptions)
        newest = max((s.generation_id for s in subscriptions.values()), default=-1)
        for instance, departure in list(self._departed.items()):
            member_id = present.get(instance)
            if member_id is None:
                continue
            # Back within the delay: it claims what it had, with the newest generation, so
            # the sticky algorithm keeps those partitions with it.
            sub = subscriptions[member_id]
            owned = tuple(sorted(set(sub.owned_partitions) | departure.partitions))
            adjusted[member_id] = replace(
                sub, owned_partitions=owned, generation_id=max(newest, sub.generation_id, 0)
            )
            del self._departed[instance]
        held = frozenset(tp for d in self._departed.values() for tp in d.partitions)
        return adjusted, held

    def finish(
        self,
        result: Mapping[str, Assignment],
        subscriptions: Mapping[str, Subscription],
        held: frozenset[TopicPartition],
        now_ms: int,
    ) -> dict[str, Assignment]:
        """Strip ``held`` partitions, remember the static owners, attach the delay."""
        delay = self.remaining_delay_ms(now_ms)
        user_data = None if delay is None else encode_scheduled_delay(delay)
        out: dict[str, Assignment] = {}
        previous: dict[str, frozenset[TopicPartition]] = {}
        for member_id, assignment in result.items():
            partitions = assignment.partitions
            if held:
                partitions = tuple(tp for tp in partitions if tp not in held)
            out[member_id] = Assignment(partitions, user_data)
            instance = subscriptions[member_id].group_instance_id
            if instance is not None:
                previous[instance] = frozenset(partitions)
        self._previous = previous
        return out

    def remaining_delay_ms(self, now_ms: int) -> int | None:
        """Time until the earliest held-back partitions are released (``None``: none held)."""
        if not self._departed:
            return None
        return max(0, min(d.deadline_ms for d in self._departed.values()) - now_ms)
