"""KIP-848 members and the real sans-IO coordinator, back to back, in virtual time.

:class:`ConsumerCluster` owns one :class:`~groupcoord.coordinator.GroupCoordinator` (behind a
``SyncShell``, topics with fixed ids) and any number of :class:`Member`: a
:class:`~groupcoord.member.consumer_machine.ConsumerMemberMachine` plus a model of the
application that polls every ``poll_every_ms`` unless stalled and hears its listener calls
only inside a poll (held until it has run them, as ``GroupMember`` does). Requests reach the
coordinator the instant they are sent; time moves only in :meth:`ConsumerCluster.run_until`.

Checked as it goes:

- no partition is in two running members' machine assignments at any instant;
- an application is told a partition is assigned only when no other running application
  still believes it owns it (it was revoked there, or it is waiting as a lost call);
- revoked/lost calls are never empty; a member's epoch in the group never goes down.
"""

from __future__ import annotations

import dataclasses
import itertools
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from virtual_clock import InvariantViolation, VirtualClock

from groupcoord.coordinator import MemoryOffsetStore, SyncShell
from groupcoord.coordinator.topics import TopicMetadata
from groupcoord.errors import NetworkException
from groupcoord.member.config import ConsumerMemberConfig
from groupcoord.member.consumer_machine import ConsumerMemberMachine
from groupcoord.member.consumer_states import ConsumerMemberState
from groupcoord.member.listener import CallbackKind, ListenerCall
from groupcoord.types import TopicPartition

GROUP = "g"
SETTINGS: Mapping[str, object] = {
    "group.consumer.session.timeout.ms": 3_000,
    "group.consumer.min.session.timeout.ms": 1_000,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 100,
}


def topic_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


@dataclass
class Member:
    name: str
    machine: ConsumerMemberMachine
    poll_every_ms: int
    next_poll_ms: int = 0
    running: bool = True  # False: the process is gone (crashed or closed and done)
    stalled_until_ms: int = 0
    cut: bool = False  # requests fail as on a broken network
    #: was cut off, and may still hold partitions the coordinator gave away meanwhile:
    #: like Java's member, it learns so only from its next answer (FENCED / UNKNOWN)
    zombie: bool = False
    #: what the application believes it owns (from the listener calls it ran)
    believes: set[TopicPartition] = field(default_factory=set)
    calls: list[ListenerCall] = field(default_factory=list)
    last_epoch: int = 0


class ConsumerCluster(VirtualClock):
    def __init__(
        self, topics: Mapping[str, int], settings: Mapping[str, object] | None = None
    ) -> None:
        self.now = 0
        self.shell = SyncShell(MemoryOffsetStore(), dict(settings or SETTINGS), now_ms=0)
        self.coordinator = self.shell.coordinator
        self.members: dict[str, Member] = {}
        self._routes: dict[tuple[int, object], Member] = {}
        self._incarnations = itertools.count(1)
        self.set_topics(topics)

    # ------------------------------------------------------------------ topics

    def set_topics(self, topics: Mapping[str, int]) -> None:
        self.topics = dict(topics)
        self.shell.update_topics(
            [TopicMetadata(name=n, topic_id=topic_id(n), partitions=p) for n, p in topics.items()],
            self.now,
        )
        for m in self.running():
            self._metadata(m)

    def _metadata(self, m: Member) -> None:
        m.machine.set_metadata(dict(self.topics), self.now, {n: topic_id(n) for n in self.topics})

    def all_partitions(self) -> frozenset[TopicPartition]:
        return frozenset(TopicPartition(t, p) for t, n in self.topics.items() for p in range(n))

    # ------------------------------------------------------------------ members

    def add(
        self,
        name: str,
        *,
        topics: tuple[str, ...] | None = None,
        poll_every_ms: int = 100,
        max_poll_interval_ms: int = 10_000,
        instance_id: str | None = None,
        member_id: str | None = None,
    ) -> Member:
        config = ConsumerMemberConfig(
            group_id=GROUP,
            topics=topics or tuple(self.topics),
            max_poll_interval_ms=max_poll_interval_ms,
            group_instance_id=instance_id,
        )
        machine = ConsumerMemberMachine(config, member_id=member_id or f"{name}-id")
        member = Member(name, machine, poll_every_ms, next_poll_ms=self.now)
        member.incarnation = next(self._incarnations)  # type: ignore[attr-defined]
        self.members[name] = member
        self._metadata(member)
        return member

    def crash(self, name: str) -> None:
        """The process dies: no leave, nothing more sent or heard."""
        m = self.members[name]
        m.running = False
        m.believes.clear()

    def close(self, name: str) -> None:
        m = self.members[name]
        m.machine.close(self.now)
        self._deliver(m)

    def cut(self, name: str) -> None:
        """The member's network fails (requests fail) until :meth:`heal`."""
        m = self.members[name]
        m.cut = m.zombie = True

    def heal(self, name: str) -> None:
        self.members[name].cut = False

    def checked(self) -> list[Member]:
        """The members whose ownership the invariants apply to (not cut-off zombies)."""
        return [m for m in self.running() if not m.zombie]

    def stall(self, name: str, ms: int) -> None:
        """The application stops polling for ``ms`` (heartbeats go on)."""
        self.members[name].stalled_until_ms = self.now + ms

    def running(self) -> list[Member]:
        return [m for m in self.members.values() if m.running]

    # ------------------------------------------------------------------ time

    def _next_deadline(self) -> int | None:
        candidates: list[int] = []
        d = self.shell.next_deadline()
        if d is not None:
            candidates.append(d)
        for m in self.running():
            candidates.append(max(m.next_poll_ms, m.stalled_until_ms))
            d = m.machine.next_deadline()
            if d is not None:
                candidates.append(d)
            if not m.machine.coordinator_known and not m.machine.done:
                candidates.append(self.now + 50)
        return min(candidates) if candidates else None

    def _settle(self) -> None:
        for _round in range(10_000):
            moved = self._route(self.shell.tick(self.now))
            for m in self.running():
                machine = m.machine
                if machine.coordinator_lookup_due(self.now) and not m.cut:
                    machine.coordinator_found(self.now)
                if self.now >= max(m.next_poll_ms, m.stalled_until_ms) and not machine.done:
                    machine.poll(self.now)
                    self._deliver(m)
                    m.next_poll_ms = self.now + m.poll_every_ms
                for request in machine.next_requests(self.now):
                    moved = True
                    if m.cut:
                        machine.request_failed(request, NetworkException, self.now)
                        continue
                    token = (m.incarnation, request.correlation)  # type: ignore[attr-defined]
                    self._routes[token] = m
                    wrapped = dataclasses.replace(request, correlation=token)  # type: ignore[type-var]
                    self._route(self.shell.handle(wrapped, self.now))
                self._check(m)
                if machine.done and machine.state is not ConsumerMemberState.FATAL:
                    m.running = False
            if not moved:
                return
        raise AssertionError(f"no quiescence at t={self.now}")

    def _route(self, responses: list[object]) -> bool:
        for response in responses:
            token = response.correlation  # type: ignore[attr-defined]
            member = self._routes.pop(token)
            if not member.running:
                continue
            unwrapped = dataclasses.replace(response, correlation=token[1])  # type: ignore[type-var]
            member.machine.receive(unwrapped, self.now)
            self._check(member)
        self._check_exclusive()
        return bool(responses)

    # ------------------------------------------------------------------ the application

    def _deliver(self, m: Member) -> None:
        calls = m.machine.take_callbacks(hold=True)
        for call in calls:
            m.calls.append(call)
            if call.kind is not CallbackKind.ASSIGNED and not call.partitions:
                raise InvariantViolation(f"{m.name}: empty {call.kind.value} call")
            if call.kind is CallbackKind.ASSIGNED:
                self._check_handover(m, call.partitions)
                m.believes |= call.partitions
            else:
                m.believes -= call.partitions
        if calls:
            m.machine.callbacks_done()

    def _check_handover(self, new_owner: Member, partitions: frozenset[TopicPartition]) -> None:
        for other in self.checked():
            if other is new_owner:
                continue
            clash = other.believes & partitions
            if not clash:
                continue
            # the other application has not heard yet: allowed only for a loss waiting for
            # its next poll (it fell out of the group), never for a revocation it owes
            lost: set[TopicPartition] = set()
            for call in other.machine.peek_callbacks():
                if call.kind is CallbackKind.LOST:
                    lost |= call.partitions
            if clash - lost:
                raise InvariantViolation(
                    f"t={self.now}: {new_owner.name} is assigned {sorted(clash)} while "
                    f"{other.name} still owns them"
                )

    def _check(self, m: Member) -> None:
        if m.zombie and not m.cut and not m.machine.assignment:
            m.zombie = False  # it heard, and let go
        epoch = m.machine.generation
        if epoch > 0 and epoch < m.last_epoch and m.machine.member_epoch > 0:
            raise InvariantViolation(f"{m.name}: epoch went down {m.last_epoch} -> {epoch}")
        if epoch > 0:
            m.last_epoch = epoch

    def _check_exclusive(self) -> None:
        seen: dict[TopicPartition, str] = {}
        for m in self.checked():
            for tp in m.machine.assignment:
                if tp in seen:
                    raise InvariantViolation(f"t={self.now}: {tp} owned by {seen[tp]} and {m.name}")
                seen[tp] = m.name

    # ------------------------------------------------------------------ reading

    def assignments(self) -> dict[str, frozenset[TopicPartition]]:
        return {m.name: m.machine.assignment for m in self.running()}

    def settled(self) -> bool:
        """Every running member stable, and together they own every partition."""
        running = [m for m in self.running() if not m.machine.done]
        if not running or not all(m.machine.settled for m in running):
            return False
        owned: set[TopicPartition] = set()
        for m in running:
            owned |= m.machine.assignment
        return owned == self.all_partitions()
