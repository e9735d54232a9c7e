"""Members and the real sans-IO coordinator, back to back, in virtual time.

:class:`Cluster` owns one :class:`~groupcoord.coordinator.GroupCoordinator` and any number
of :class:`SimMember` (a :class:`~groupcoord.member.machine.MemberMachine` plus a model of
the application: it calls ``poll()`` every ``poll_every_ms`` unless told to be slow, and is
told its listener calls only inside a poll, as a runner does). Requests go to the
coordinator the instant they are emitted; responses come back whenever the coordinator
releases them. Time only moves in :meth:`Cluster.run_until`, from deadline to deadline.

The harness checks, as it goes, the invariants every test wants:

- at every instant no partition is in two live members' assignments;
- a partition reaches a new owner only after its previous owner gave it up: the previous
  owner's machine no longer holds it, and a pending release is a ``lost`` (the member fell
  out of the group) rather than an undelivered ``revoked``;
- no empty revoked/lost calls; each member's generation never goes down;
- the applications commit in ``on_partitions_revoked`` (as real ones do), and such a commit
  is accepted before the partition's next owner has started on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from virtual_clock import InvariantViolation, VirtualClock

from groupcoord.assignors.base import Assignor
from groupcoord.coordinator import MemoryOffsetStore, SequentialMemberIds, SyncShell
from groupcoord.coordinator.messages import AnyRequest, AnyResponse
from groupcoord.errors import NetworkException
from groupcoord.member.config import MemberConfig
from groupcoord.member.handles import CommitHandle
from groupcoord.member.listener import CallbackKind, ListenerCall
from groupcoord.member.machine import MemberMachine
from groupcoord.member.states import MemberState
from groupcoord.types import TopicPartition

GROUP = "g"


@dataclass
class Delivered:
    """One listener call as the application received it."""

    at_ms: int
    member: str
    call: ListenerCall


@dataclass
class SimMember:
    name: str
    machine: MemberMachine
    poll_every_ms: int
    next_poll_ms: int = 0
    alive: bool = True
    #: partitions as the application believes it owns them (from delivered calls)
    view: set[TopicPartition] = field(default_factory=set)
    generations: list[int] = field(default_factory=list)
    fatal_seen: list[BaseException] = field(default_factory=list)

    def slow(self, now_ms: int, busy_ms: int) -> None:
        """The application spends ``busy_ms`` before its next poll."""
        self.next_poll_ms = now_ms + busy_ms


def member_config(
    topics: Sequence[str],
    assignors: Sequence[Assignor],
    *,
    session_timeout_ms: int = 1_000,
    heartbeat_interval_ms: int = 100,
    max_poll_interval_ms: int = 3_000,
    group_instance_id: str | None = None,
    client_id: str = "c",
    retry_backoff_ms: int = 50,
) -> MemberConfig:
    return MemberConfig(
        group_id=GROUP,
        topics=topics,
        assignors=assignors,
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=heartbeat_interval_ms,
        max_poll_interval_ms=max_poll_interval_ms,
        group_instance_id=group_instance_id,
        client_id=client_id,
        retry_backoff_ms=retry_backoff_ms,
    )


class Cluster(VirtualClock):
    """One coordinator, many members, a virtual clock (milliseconds from 0)."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int],
        *,
        coordinator_settings: Mapping[str, object] | None = None,
        exclusive: bool = True,
    ) -> None:
        """``exclusive=False`` skips the one-owner check, for scenarios that break it on
        purpose (two live processes with one group.instance.id: the zombie is fenced only at
        its next heartbeat)."""
        settings: dict[str, object] = {
            "group.initial.rebalance.delay.ms": 0,
            "group.min.session.timeout.ms": 10,
        }
        settings.update(coordinator_settings or {})
        self.now = 0
        self.partitions_per_topic = dict(partitions_per_topic)
        self.shell = SyncShell(
            MemoryOffsetStore(), settings, member_id_factory=SequentialMemberIds(), now_ms=0
        )
        self.coordinator = self.shell.coordinator
        self.members: dict[str, SimMember] = {}
        self.delivered: list[Delivered] = []
        self.sent: list[tuple[int, str, AnyRequest]] = []
        # (incarnation, correlation) -> the member process that sent it; a restarted
        # member is a new process, so answers meant for the old one never reach it
        self._routes: dict[tuple[int, object], SimMember] = {}
        self.drop_to: set[str] = set()
        #: commits the applications made in on_partitions_revoked, not yet answered
        self.revoke_commits: list[tuple[SimMember, CommitHandle]] = []
        self.commits_accepted = 0
        self.exclusive = exclusive

    # ------------------------------------------------------------------ membership

    def add(self, name: str, config: MemberConfig, *, poll_every_ms: int = 50) -> SimMember:
        running = self.members.get(name)
        if (
            running is not None
            and running.alive
            and running.machine.state is not MemberState.CLOSED
        ):
            raise ValueError(f"{name} is already running")
        machine = MemberMachine(config)
        machine.coordinator_found(self.now)
        machine.set_metadata(self.partitions_per_topic, self.now)
        member = SimMember(name, machine, poll_every_ms, next_poll_ms=self.now)
        self.members[name] = member
        return member

    def kill(self, name: str) -> None:
        """The process stops: it sends nothing more and hears nothing more."""
        member = self.members[name]
        member.alive = False
        member.view.clear()

    def close(self, name: str) -> None:
        """The application closes the member (LeaveGroup unless static)."""
        member = self.members[name]
        member.machine.close(self.now)
        self._deliver(member)
        self._settle()

    def live(self) -> list[SimMember]:
        return [m for m in self.members.values() if m.alive]

    # ------------------------------------------------------------------ time

    def _next_deadline(self) -> int | None:
        candidates: list[int] = []
        coordinator_deadline = self.coordinator.next_deadline()
        if coordinator_deadline is not None:
            candidates.append(coordinator_deadline)
        for m in self.live():
            if m.machine.state is not MemberState.CLOSED:
                candidates.append(m.next_poll_ms)
            d = m.machine.next_deadline()
            if d is not None:
                candidates.append(d)
            if not m.machine.coordinator_known:
                candidates.append(self.now + 1)
        return min(candidates) if candidates else None

    def _settle(self) -> None:
        for _round in range(10_000):
            moved = self._route(self.shell.tick(self.now))
            for m in self.live():
                machine = m.machine
                if machine.coordinator_lookup_due(self.now):
                    machine.coordinator_found(self.now)
                if self.now >= m.next_poll_ms and machine.state is not MemberState.CLOSED:
                    machine.poll(self.now)
                    self._deliver(m)
                    m.next_poll_ms = self.now + m.poll_every_ms
                for request in machine.next_requests(self.now):
                    moved = True
                    self.sent.append((self.now, m.name, request))
                    if m.name in self.drop_to:
                        # unreachable coordinator: the connection attempt fails
                        machine.request_failed(request, NetworkException, self.now)
                        continue
                    token = (id(m), request.correlation)
                    wrapped = dataclasses.replace(request, correlation=token)  # type: ignore[type-var]
                    self._routes[token] = m
                    self._route(self.shell.handle(wrapped, self.now))
                self._check(m)
            if not moved:
                return
        raise AssertionError(f"no quiescence at t={self.now}: livelock")

    def _route(self, responses: list[AnyResponse]) -> bool:
        for response in responses:
            token = response.correlation
            assert isinstance(token, tuple)
            member = self._routes.pop(token)
            if not member.alive:
                continue
            unwrapped = dataclasses.replace(response, correlation=token[1])  # type: ignore[type-var]
            member.machine.receive(unwrapped, self.now)
            self._check(member)
        self._check_exclusive()
        self._check_commits()
        return bool(responses)

    @staticmethod
    def _pending_lost(member: SimMember) -> set[TopicPartition]:
        return {
            tp
            for call in member.machine.peek_callbacks()
            if call.kind is CallbackKind.LOST
            for tp in call.partitions
        }

    def _check_commits(self) -> None:
        """A commit made on revocation must land before the partition's next owner starts on
        it (or that owner would start from an older offset)."""
        pending: list[tuple[SimMember, CommitHandle]] = []
        for member, handle in self.revoke_commits:
            if not handle.done:
                pending.append((member, handle))
                continue
            if handle.error is not None:
                continue
            self.commits_accepted += 1
            for other in self.live():
                if other is member:
                    continue
                # partitions whose loss the other member has not heard of yet are not its own
                started = (other.view - self._pending_lost(other)) & handle.offsets.keys()
                if started and self.exclusive:
                    raise InvariantViolation(
                        f"t={self.now}: {member.name}'s commit of {sorted(started)} landed after "
                        f"{other.name} had started on them"
                    )
        self.revoke_commits = pending

    # ------------------------------------------------------------------ invariants

    def _deliver(self, member: SimMember) -> None:
        for call in member.machine.take_callbacks():
            if call.kind is not CallbackKind.ASSIGNED and not call.partitions:
                raise InvariantViolation(f"{member.name}: empty {call.kind.value} call")
            self.delivered.append(Delivered(self.now, member.name, call))
            if call.kind is CallbackKind.ASSIGNED:
                self._check_handover(member, call.partitions)
                member.view |= call.partitions
            else:
                member.view -= call.partitions
            if call.kind is CallbackKind.REVOKED:
                # what a real application does in on_partitions_revoked: commit its progress
                offsets = {tp: self.now for tp in call.partitions}
                self.revoke_commits.append((member, member.machine.commit(offsets, self.now)))

    def _check_handover(self, new_owner: SimMember, partitions: frozenset[TopicPartition]) -> None:
        for other in self.live():
            if other is new_owner or not self.exclusive:
                continue
            held = other.view & partitions
            if not held:
                continue
            still = held & other.machine.assignment
            if still:
                raise InvariantViolation(
                    f"t={self.now}: {sorted(still)} assigned to {new_owner.name} while "
                    f"{other.name} still owns them"
                )
            pending_revoke = {
                tp
                for call in other.machine.peek_callbacks()
                if call.kind is CallbackKind.REVOKED
                for tp in call.partitions
            }
            if held & pending_revoke:
                raise InvariantViolation(
                    f"t={self.now}: {sorted(held & pending_revoke)} assigned to "
                    f"{new_owner.name} before {other.name} was told to revoke them"
                )

    def _check(self, member: SimMember) -> None:
        generation = member.machine.generation
        if generation != -1:
            if member.generations and generation < member.generations[-1]:
                raise InvariantViolation(
                    f"{member.name}: generation went from {member.generations[-1]} to {generation}"
                )
            if not member.generations or member.generations[-1] != generation:
                member.generations.append(generation)
        if member.machine.fatal_error is not None and not member.fatal_seen:
            member.fatal_seen.append(member.machine.fatal_error)

    def _check_exclusive(self) -> None:
        """No partition in two live machines' assignments; and none in a machine's assignment
        while another member's application still works on it (its delivered calls say it
        owns it) unless that member's release is a pending ``lost``."""
        if not self.exclusive:
            return
        seen: dict[TopicPartition, str] = {}
        for m in self.live():
            for tp in m.machine.assignment:
                if tp in seen:
                    raise InvariantViolation(f"t={self.now}: {tp} owned by {seen[tp]} and {m.name}")
                seen[tp] = m.name
        for m in self.live():
            for tp in m.view - self._pending_lost(m):
                owner = seen.get(tp)
                if owner is not None and owner != m.name:
                    raise InvariantViolation(
                        f"t={self.now}: {tp} is {owner}'s while {m.name}'s application "
                        "has not been told to give it up"
                    )

    # ------------------------------------------------------------------ questions

    def all_partitions(self) -> frozenset[TopicPartition]:
        return frozenset(
            TopicPartition(t, p) for t, n in self.partitions_per_topic.items() for p in range(n)
        )

    def coordinator_generation(self) -> int:
        snap = self.coordinator.snapshot(GROUP)
        return -1 if snap is None else snap.generation_id

    def is_settled(self) -> bool:
        """Every live member stable in the coordinator's current generation, owning together
        every partition, nothing left to rejoin for."""
        live = [m for m in self.live() if m.machine.state is not MemberState.CLOSED]
        if not live:
            return True
        generation = self.coordinator_generation()
        for m in live:
            mm = m.machine
            if mm.state is not MemberState.STABLE or mm.generation != generation:
                return False
            if mm.rejoin_needed or mm.peek_callbacks():
                return False
        owned = [tp for m in live for tp in m.machine.assignment]
        return len(owned) == len(set(owned)) and set(owned) == self.all_partitions()
