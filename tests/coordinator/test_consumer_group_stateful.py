"""Hypothesis state machine: several KIP-848 members heartbeat a coordinator in random
orders and times, acknowledging revocations late or at once, leaving, crashing, rejoining.

Invariants after every step:

- safety: no partition is owned by two live members at once, as the members see it (what
  they consume: their last assignment, plus revoked partitions not yet given up);
- epochs: the group epoch never goes back, the target assignment epoch never passes it, a
  member's epoch never goes back while it stays a member;
- liveness (rule ``converge``): members that keep heartbeating and acknowledge reach the
  target assignment, every partition assigned, the group Stable.
"""

from __future__ import annotations

from consumer_harness import REBALANCE_MS, SESSION_MS, ConsumerHarness
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from groupcoord.coordinator.consumer_group import ConsumerGroupState
from groupcoord.errors import FencedMemberEpochError, UnknownMemberIdError

TOPICS = {"orders": 5, "payments": 3}
MEMBERS = ("m0", "m1", "m2", "m3")


class Member:
    def __init__(self) -> None:
        self.joined = False
        self.epoch = 0
        #: what it consumes now
        self.owned: dict[str, set[int]] = {}


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = ConsumerHarness(TOPICS)
        self.members = {m: Member() for m in MEMBERS}
        self.removed: list[str] = []
        self.h.shell.add_member_listener(lambda e: self.removed.append(e.member_id))
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.server_epochs: dict[str, int] = {}

    # ------------------------------------------------------------------ helpers

    def _forget_removed(self) -> None:
        """A member the coordinator removed (session or revocation timeout) is a zombie:
        it learns it on its next heartbeat; until then it is not a member."""
        for member_id in self.removed:
            m = self.members[member_id]
            m.joined, m.epoch, m.owned = False, 0, {}
            self.server_epochs.pop(member_id, None)
        self.removed.clear()

    def _apply(self, member_id: str, resp: object, ack: bool) -> None:
        m = self.members[member_id]
        error = resp.error  # type: ignore[attr-defined]
        if error in (FencedMemberEpochError, UnknownMemberIdError):
            m.joined, m.epoch, m.owned = False, 0, {}
            self.server_epochs.pop(member_id, None)
            return
        assert error is None, resp
        m.epoch = resp.member_epoch  # type: ignore[attr-defined]
        assigned = self.h.names(resp)  # type: ignore[arg-type]
        if assigned is None:
            if ack:  # give up whatever it was told to revoke earlier
                m.owned = {t: set(ps) for t, ps in m.latest.items()}  # type: ignore[attr-defined]
            return
        m.latest = assigned  # type: ignore[attr-defined]
        if ack:
            m.owned = {t: set(ps) for t, ps in assigned.items()}
        else:  # starts on new partitions, still holds revoked ones
            for t, ps in assigned.items():
                m.owned.setdefault(t, set()).update(ps)

    def _heartbeat(self, member_id: str, ack: bool) -> None:
        m = self.members[member_id]
        resp = self.h.heartbeat(member_id=member_id, member_epoch=m.epoch, owned=m.owned)
        self._apply(member_id, resp, ack)

    # ------------------------------------------------------------------ rules

    @rule(member_id=st.sampled_from(MEMBERS))
    def join(self, member_id: str) -> None:
        m = self.members[member_id]
        if m.joined:
            return
        topics = ("orders", "payments") if member_id != "m3" else ("orders",)
        resp = self.h.join(member_id, topics)
        assert resp.error is None, resp
        m.joined = True
        m.owned = {}
        m.latest = {}  # type: ignore[attr-defined]
        self._apply(member_id, resp, ack=True)

    @rule(member_id=st.sampled_from(MEMBERS), ack=st.booleans())
    def heartbeat(self, member_id: str, ack: bool) -> None:
        if self.members[member_id].joined:
            self._heartbeat(member_id, ack)

    @rule(member_id=st.sampled_from(MEMBERS))
    def leave(self, member_id: str) -> None:
        m = self.members[member_id]
        if not m.joined:
            return
        resp = self.h.heartbeat(member_id=member_id, member_epoch=-1)
        assert resp.error is None
        m.joined, m.epoch, m.owned = False, 0, {}
        self.server_epochs.pop(member_id, None)
        self.removed = [r for r in self.removed if r != member_id]  # its own leave event

    @rule(ms=st.integers(min_value=1, max_value=SESSION_MS + REBALANCE_MS))
    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        self._forget_removed()

    @precondition(lambda self: any(m.joined for m in self.members.values()))
    @rule()
    def converge(self) -> None:
        """Quiet group: everyone heartbeats and acknowledges, no time passes."""
        for _ in range(2 * len(MEMBERS) + 2):
            for member_id, m in self.members.items():
                if m.joined:
                    self._heartbeat(member_id, ack=True)
        snap = self.h.coord.consumer_group_snapshot("g")
        assert snap is not None and snap.state is ConsumerGroupState.STABLE, snap
        covered: dict[str, set[int]] = {}
        for sm in snap.members:
            m = self.members[sm.member_id]
            assert {t: set(ps) for t, ps in sm.target.items()} == {
                t: ps for t, ps in m.owned.items() if ps
            }
            assert sm.member_epoch == snap.assignment_epoch == m.epoch
            for t, ps in sm.target.items():
                covered.setdefault(t, set()).update(ps)
        subscribed = {t for sm in snap.members for t in sm.subscribed_topic_names}
        assert covered == {t: set(range(n)) for t, n in self.h.topics.items() if t in subscribed}

    # ------------------------------------------------------------------ invariants

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        self._forget_removed()
        seen: dict[tuple[str, int], str] = {}
        for member_id, m in self.members.items():
            if not m.joined:
                continue
            for t, ps in m.owned.items():
                for p in ps:
                    other = seen.setdefault((t, p), member_id)
                    assert other == member_id, f"{t}-{p} owned by {other} and {member_id}"

    @invariant()
    def epochs_never_go_back(self) -> None:
        snap = self.h.coord.consumer_group_snapshot("g")
        if snap is None:
            return
        assert snap.group_epoch >= self.group_epoch
        assert snap.assignment_epoch >= self.assignment_epoch
        assert snap.assignment_epoch <= snap.group_epoch
        self.group_epoch, self.assignment_epoch = snap.group_epoch, snap.assignment_epoch
        for sm in snap.members:
            before = self.server_epochs.get(sm.member_id)
            if before is not None:
                assert sm.member_epoch >= before, (sm.member_id, before, sm.member_epoch)
            self.server_epochs[sm.member_id] = sm.member_epoch


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
