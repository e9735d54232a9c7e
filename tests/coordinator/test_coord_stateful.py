"""Stateful property test: clients join, sync, heartbeat, leave, commit, pause past their
deadlines, crash and come back, while time jumps and the coordinator restarts.

Invariants checked after every step:

- at most one leader per group, and it is a member; at most one client believes it leads
  the current generation;
- every member of a Stable group holds the assignment the leader sent for the generation;
- no partition is assigned to two members of the same generation (the leader runs the real
  assignor on the members' subscriptions, as a Java leader would);
- no acknowledged commit is lost (coordinator and store agree with what was acknowledged);
- ``next_deadline`` is never later than the earliest deadline: ticking just before it
  changes nothing;
- every request is answered exactly once, and none stays unanswered forever (teardown).
"""

from __future__ import annotations

import copy
import itertools
import os
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
)

from groupcoord import CooperativeStickyAssignor, RangeAssignor, RoundRobinAssignor, Subscription
from groupcoord.coordinator import (
    DeleteGroupsRequest,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberIdentity,
    MemoryOffsetStore,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    SequentialMemberIds,
    SyncGroupRequest,
    SyncGroupResponse,
    SyncShell,
)
from groupcoord.errors import (
    FencedInstanceIdError,
    IllegalGenerationError,
    MemberIdRequiredError,
    UnknownMemberIdError,
)
from groupcoord.protocol import decode_assignment, encode_subscription
from groupcoord.types import TopicPartition

GROUPS = ("g", "h")
PARTITIONS = {"t": 4, "u": 3}
ASSIGNORS = {
    a.name: a for a in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor())
}
CONFIG = {
    "group.initial.rebalance.delay.ms": 500,
    "group.min.session.timeout.ms": 1000,
    "new_member_join_timeout_ms": 40_000,
}


@dataclass
class Client:
    name: str
    group: str
    instance_id: str | None
    join_version: int
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    protocol_name: str | None = None
    join_members: tuple[Any, ...] = ()
    skip_assignment: bool = False
    needs_sync: bool = False
    assignment: bytes | None = None
    assignment_generation: int = -1
    in_flight: object = None
    fenced: bool = False
    paused: bool = False
    rejoin_needed: bool = True
    history: list[str] = field(default_factory=list)


def _protocols(choice: int, topics: tuple[str, ...]) -> tuple[tuple[str, bytes], ...]:
    meta = encode_subscription(Subscription(topics))
    return [
        (("range", meta), ("roundrobin", meta)),
        (("roundrobin", meta), ("range", meta)),
        (("range", meta),),
        (("cooperative-sticky", meta), ("range", meta)),
    ][choice]


class CoordinatorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = MemoryOffsetStore()
        self.ids = SequentialMemberIds()
        self.now = 0
        self.shell = SyncShell(self.store, CONFIG, member_id_factory=self.ids, now_ms=0)
        self.coord = self.shell.coordinator
        self.corr = itertools.count(1)
        self.requests: dict[object, Any] = {}
        self.owner: dict[object, Client] = {}
        self.answered: set[object] = set()
        self.abandoned: set[object] = set()
        self.clients: list[Client] = []
        #: (group, topic, partition) -> last acknowledged offset
        self.acked: dict[tuple[str, str, int], int] = {}
        self.next_offset = 0
        #: (group, generation) -> the leader's assignment by member id and by instance id
        self.expected: dict[tuple[str, int], tuple[dict[str, bytes], dict[str, bytes]]] = {}

    # ------------------------------------------------------------------ plumbing

    def _absorb(self, out: list[Any]) -> None:
        for r in out:
            c = r.correlation
            assert c in self.requests, r
            assert c not in self.answered, f"answered twice: {r}"
            assert r.version == self.requests[c].version
            self.answered.add(c)
            client = self.owner.get(c)
            if client is None or client.in_flight != c:
                continue  # the client crashed or the coordinator restarted meanwhile
            client.in_flight = None
            self._client_sees(client, r)

    def _send(self, client: Client | None, req: Any) -> Any:
        self.requests[req.correlation] = req
        if client is not None:
            self.owner[req.correlation] = client
            client.in_flight = req.correlation
        self._absorb(self.shell.handle(req, self.now))
        return req.correlation

    def _client_sees(self, client: Client, r: Any) -> None:
        err = getattr(r, "error", None)
        event(f"{type(r).__name__} {err.name if err else 'OK'}")
        client.history.append(f"{type(r).__name__}:{err.name if err else 'OK'}")
        if isinstance(r, JoinGroupResponse):
            if err is None:
                client.member_id = r.member_id
                client.generation = r.generation_id
                client.leader = r.leader
                client.protocol_name = r.protocol_name
                client.join_members = r.members
                client.skip_assignment = r.skip_assignment
                client.needs_sync = True
                client.rejoin_needed = False
            elif err is MemberIdRequiredError:
                client.member_id = r.member_id
            elif err is UnknownMemberIdError:
                client.member_id, client.generation = "", -1
            elif err is FencedInstanceIdError:
                client.fenced = True
        elif isinstance(r, SyncGroupResponse):
            client.needs_sync = False
            if err is None:
                client.assignment = r.assignment
                client.assignment_generation = client.generation
            else:
                self._on_error(client, err)
        elif err is not None:
            self._on_error(client, err)

    def _on_error(self, client: Client, err: Any) -> None:
        client.rejoin_needed = True
        if err is UnknownMemberIdError:
            client.member_id, client.generation = "", -1
        elif err is IllegalGenerationError:
            client.generation = -1
        elif err is FencedInstanceIdError:
            client.fenced = True
        client.assignment = None
        client.assignment_generation = -1

    def _states(self) -> Any:
        return (
            tuple(self.coord.snapshot(g) for g in self.coord.group_ids()),
            tuple(
                sorted(
                    (g, tuple(sorted(self.coord.committed_offsets(g).items())))
                    for g in self.coord.group_ids()
                )
            ),
        )

    def _advance(self, target: int, *, on_time: bool) -> None:
        while True:
            d = self.coord.next_deadline()
            if d is not None and self.now < d - 1 and d - 1 <= target:
                # Nothing may happen before next_deadline.
                before = self._states()
                assert self.shell.tick(d - 1) == []
                self.now = d - 1
                assert self._states() == before
            if not on_time or d is None or d > target:
                break
            self.now = max(self.now, d)
            self._absorb(self.shell.tick(self.now))
        self.now = max(self.now, target)
        self._absorb(self.shell.tick(self.now))

    # ------------------------------------------------------------------ setup

    @initialize(
        specs=st.lists(
            st.tuples(
                st.sampled_from(GROUPS),
                st.booleans(),  # static
                st.sampled_from([3, 4, 5, 7, 9]),
                st.sampled_from([3000, 10_000]),
                st.sampled_from([5000, 20_000]),
                st.integers(0, 3),
                st.sampled_from([("t",), ("t", "u"), ("u",)]),
            ),
            min_size=1,
            max_size=5,
        )
    )
    def setup(self, specs: list[Any]) -> None:
        for i, (group, static, version, session, rebalance, proto, topics) in enumerate(specs):
            if static and version < 5:
                version = 5
            self.clients.append(
                Client(
                    name=f"c{i}",
                    group=group,
                    instance_id=f"i{i}" if static else None,
                    join_version=version,
                    session_timeout_ms=session,
                    rebalance_timeout_ms=rebalance,
                    protocols=_protocols(proto, topics),
                )
            )

    def _idle(self) -> list[Client]:
        return [c for c in self.clients if c.in_flight is None and not c.fenced]

    # ------------------------------------------------------------------ client actions

    @rule(data=st.data())
    def join(self, data: st.DataObject) -> None:
        idle = self._idle()
        if idle:
            self._join(data.draw(st.sampled_from(idle)))

    @rule(data=st.data())
    def sync(self, data: st.DataObject) -> None:
        ready = [c for c in self._idle() if c.needs_sync]
        if ready:
            self._sync(data.draw(st.sampled_from(ready)))

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        idle = [c for c in self._idle() if c.member_id]
        if idle:
            self._heartbeat(data.draw(st.sampled_from(idle)))

    @rule(ms=st.integers(0, 4000))
    def clients_follow_the_protocol(self, ms: int) -> None:
        """Every running client takes its next step as a Java consumer would; then time
        passes. Paused clients do nothing (a GC pause, a slow poll loop)."""
        for c in self.clients:
            if c.paused or c.fenced or c.in_flight is not None:
                continue
            if c.rejoin_needed or not c.member_id or c.generation < 0:
                self._join(c)
            elif c.needs_sync:
                self._sync(c)
            else:
                self._heartbeat(c)
        self._advance(self.now + ms, on_time=True)

    @rule(data=st.data())
    def pause_or_resume(self, data: st.DataObject) -> None:
        if self.clients:
            c = data.draw(st.sampled_from(self.clients))
            c.paused = not c.paused

    def _join(self, c: Client) -> None:
        req = JoinGroupRequest(
            version=c.join_version,
            correlation=next(self.corr),
            group_id=c.group,
            member_id=c.member_id,
            group_instance_id=c.instance_id,
            session_timeout_ms=c.session_timeout_ms,
            rebalance_timeout_ms=c.rebalance_timeout_ms if c.join_version else -1,
            protocol_type="consumer",
            protocols=c.protocols,
            client_id=c.name,
            reason="test" if c.join_version >= 8 else None,
        )
        self._send(c, req)

    def _sync(self, c: Client) -> None:
        assignments: tuple[tuple[str, bytes], ...] = ()
        if c.member_id == c.leader and not c.skip_assignment and c.protocol_name:
            subs = {m.member_id: m.metadata for m in c.join_members}
            result = ASSIGNORS[c.protocol_name].assign_encoded(PARTITIONS, subs)
            assignments = tuple(result.items())
        req = SyncGroupRequest(
            version=5,
            correlation=next(self.corr),
            group_id=c.group,
            generation_id=c.generation,
            member_id=c.member_id,
            group_instance_id=c.instance_id,
            protocol_type="consumer",
            protocol_name=c.protocol_name,
            assignments=assignments,
        )
        before = self.coord.snapshot(c.group)
        self._send(c, req)
        after = self.coord.snapshot(c.group)
        if (
            assignments
            and before is not None
            and before.state is GroupState.COMPLETING_REBALANCE
            and before.generation_id == c.generation
            and after is not None
            and after.state is GroupState.STABLE
        ):
            sent = dict(assignments)
            by_member = {m.member_id: sent.get(m.member_id, b"") for m in c.join_members}
            by_instance = {
                m.group_instance_id: by_member[m.member_id]
                for m in c.join_members
                if m.group_instance_id is not None
            }
            self.expected[(c.group, c.generation)] = (by_member, by_instance)
            event("leader assignment stored")

    def _heartbeat(self, c: Client) -> None:
        req = HeartbeatRequest(
            version=4,
            correlation=next(self.corr),
            group_id=c.group,
            generation_id=c.generation,
            member_id=c.member_id,
            group_instance_id=c.instance_id,
        )
        self._send(c, req)

    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        idle = [c for c in self._idle() if c.member_id]
        if not idle:
            return
        c = data.draw(st.sampled_from(idle))
        req = LeaveGroupRequest(
            version=5,
            correlation=next(self.corr),
            group_id=c.group,
            members=(MemberIdentity(member_id=c.member_id, group_instance_id=c.instance_id),),
        )
        self._send(c, req)
        c.member_id, c.generation, c.assignment, c.needs_sync = "", -1, None, False
        c.rejoin_needed = True

    @rule(data=st.data(), topic=st.sampled_from(sorted(PARTITIONS)), partition=st.integers(0, 3))
    def commit(self, data: st.DataObject, topic: str, partition: int) -> None:
        idle = self._idle()
        simple = data.draw(st.booleans())
        if not idle and not simple:
            return
        self.next_offset += 1
        offset = self.next_offset
        c = None if simple else data.draw(st.sampled_from(idle))
        group = "simple" if c is None else c.group
        req = OffsetCommitRequest(
            version=8,
            correlation=next(self.corr),
            group_id=group,
            generation_id_or_member_epoch=-1 if c is None else c.generation,
            member_id="" if c is None else c.member_id,
            group_instance_id=None if c is None else c.instance_id,
            topics=(
                OffsetCommitRequestTopic(
                    name=topic,
                    partitions=(
                        OffsetCommitRequestPartition(
                            partition_index=partition, committed_offset=offset
                        ),
                    ),
                ),
            ),
        )
        out = self.shell.handle(req, self.now)
        self.requests[req.correlation] = req
        mine = [r for r in out if r.correlation == req.correlation]
        self._absorb(out)
        assert len(mine) == 1  # an OffsetCommit is answered at once
        if mine[0].topics[0].partitions[0].error is None:
            self.acked[(group, topic, partition)] = offset

    @rule()
    def delete_simple_group(self) -> None:
        req = DeleteGroupsRequest(version=2, correlation=next(self.corr), groups_names=("simple",))
        self.requests[req.correlation] = req
        out = self.shell.handle(req, self.now)
        mine = next(r for r in out if r.correlation == req.correlation)
        self._absorb(out)
        if mine.results[0].error is None:
            self.acked = {k: v for k, v in self.acked.items() if k[0] != "simple"}

    @rule(data=st.data())
    def crash_client(self, data: st.DataObject) -> None:
        """The client process dies and restarts: a static one keeps its instance id."""
        if not self.clients:
            return
        c = data.draw(st.sampled_from(self.clients))
        c.in_flight = None
        c.fenced = False
        c.member_id, c.generation, c.assignment, c.needs_sync = "", -1, None, False
        c.rejoin_needed = True

    @rule(data=st.data())
    def static_client_restarts_leaving_a_zombie(self, data: st.DataObject) -> None:
        """A static member's process is replaced while the old one still runs (KIP-345
        fencing): the old incarnation keeps its member id and must be fenced."""
        candidates = [c for c in self.clients if c.instance_id and c.member_id]
        if not candidates or len(self.clients) >= 8:
            return
        c = data.draw(st.sampled_from(candidates))
        zombie = copy.copy(c)
        zombie.name = c.name + "-zombie"
        zombie.history = []
        self.clients.append(zombie)
        for corr, owner in self.owner.items():
            if owner is c and corr == c.in_flight:
                self.owner[corr] = zombie
        c.in_flight = None
        c.member_id, c.generation, c.assignment, c.needs_sync = "", -1, None, False
        c.rejoin_needed = True

    # ------------------------------------------------------------------ time and restarts

    @rule(ms=st.integers(1, 3000))
    def advance_a_little(self, ms: int) -> None:
        self._advance(self.now + ms, on_time=True)

    @rule(ms=st.integers(3000, 120_000))
    def advance_a_lot(self, ms: int) -> None:
        self._advance(self.now + ms, on_time=True)

    @rule(ms=st.integers(1, 60_000))
    def late_tick(self, ms: int) -> None:
        """The shell wakes up late: every passed deadline is handled in one tick."""
        self._advance(self.now + ms, on_time=False)

    @rule()
    def restart_coordinator(self) -> None:
        for c in self.requests:
            if c not in self.answered:
                self.abandoned.add(c)  # their connections are gone
        for client in self.clients:
            client.in_flight = None
        self.shell = SyncShell(self.store, CONFIG, member_id_factory=self.ids, now_ms=self.now)
        self.coord = self.shell.coordinator

    # ------------------------------------------------------------------ invariants

    @invariant()
    def at_most_one_leader(self) -> None:
        for g in self.coord.group_ids():
            snap = self.coord.snapshot(g)
            assert snap is not None
            ids = {m.member_id for m in snap.members}
            if snap.members:
                assert snap.leader_id in ids
            else:
                assert snap.leader_id is None
            believers = [
                c
                for c in self.clients
                if c.group == g
                and c.member_id
                and c.member_id == c.leader
                and c.generation == snap.generation_id
                and c.member_id in ids
            ]
            assert len(believers) <= 1, [c.name for c in believers]

    @invariant()
    def stable_members_hold_the_generation_assignment(self) -> None:
        for g in self.coord.group_ids():
            snap = self.coord.snapshot(g)
            assert snap is not None
            if snap.state is not GroupState.STABLE:
                continue
            expected = self.expected.get((g, snap.generation_id))
            if expected is None:
                continue  # restored from the store after a restart
            by_member, by_instance = expected
            for m in snap.members:
                if m.member_id in by_member:
                    assert m.assignment == by_member[m.member_id]
                else:  # a static member that rejoined with a new member id
                    assert m.group_instance_id in by_instance, (m, expected)
                    assert m.assignment == by_instance[m.group_instance_id]

    @invariant()
    def no_partition_owned_twice_in_a_generation(self) -> None:
        for by_member, _ in self.expected.values():
            owned: set[TopicPartition] = set()
            for data in by_member.values():
                parts = set(decode_assignment(data).partitions) if data else set()
                assert not (owned & parts), owned & parts
                owned |= parts
        by_gen: dict[tuple[str, int], set[TopicPartition]] = {}
        members = {
            (g, m.member_id)
            for g in self.coord.group_ids()
            for m in self.coord.snapshot(g).members  # type: ignore[union-attr]
        }
        for c in self.clients:
            # A client the coordinator has dropped or fenced may not know it yet.
            if (c.group, c.member_id) not in members:
                continue
            if c.assignment and c.assignment_generation >= 0:
                key = (c.group, c.assignment_generation)
                parts = set(decode_assignment(c.assignment).partitions)
                assert not (by_gen.get(key, set()) & parts), (c.name, key)
                by_gen.setdefault(key, set()).update(parts)

    @invariant()
    def no_acknowledged_commit_is_lost(self) -> None:
        stored = self.store.load().offsets
        for (g, topic, partition), offset in self.acked.items():
            tp = TopicPartition(topic, partition)
            assert self.coord.committed_offsets(g)[tp].committed_offset == offset
            assert stored[g][tp].committed_offset == offset

    @invariant()
    def every_answer_was_asked_once(self) -> None:
        assert self.answered <= set(self.requests)

    def teardown(self) -> None:
        # Given time, every request still parked is answered.
        if self.clients:
            for _ in range(3):
                self._advance(self.now + 400_000, on_time=True)
            unanswered = set(self.requests) - self.answered - self.abandoned
            assert not unanswered, [self.requests[c] for c in unanswered]


CoordinatorMachine.TestCase.settings = settings(
    # GROUPCOORD_STATEFUL_EXAMPLES=5000 for a long bug hunt
    max_examples=int(os.environ.get("GROUPCOORD_STATEFUL_EXAMPLES", "80")),
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_coordinator_state_machine = CoordinatorMachine.TestCase
