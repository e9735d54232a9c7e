"""Hypothesis state machines: members under churn against the real coordinator.

Random sequences of joins, closes, slow polls (beyond the session timeout but within
max.poll.interval.ms), too-slow polls (beyond max.poll.interval.ms), kills and static
restarts, in virtual time. The harness checks at every step that no partition has two live
owners, that a partition reaches a new owner only after the previous owner gave it up, that
no revoked/lost call is empty and that generations only grow; :meth:`settle` checks that once
churn stops the group converges to a full, balanced assignment.

Machines: cooperative-sticky, eager range, eager sticky, both mixed states of the two-bounce
eager -> cooperative upgrade, and cooperative-sticky with KIP-415 delayed imbalance.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from member_harness import Cluster, SimMember, member_config

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor, StickyAssignor
from groupcoord.assignors.base import Assignor
from groupcoord.member import MemberState

SESSION_MS = 1_000
MAX_POLL_MS = 3_000
DELAY_MS = 2_000  # KIP-415 delay of DelayedImbalanceChurn
NAMES = st.sampled_from([f"m{i}" for i in range(5)])


AssignorFactory = Callable[[], list[Assignor]]


class MemberChurn(RuleBasedStateMachine):
    #: what a joining member is configured with (one drawn per member; each gets fresh
    #: instances, as separate processes would: KIP-415 memory lives in the instance)
    assignor_choices: tuple[AssignorFactory, ...] = (lambda: [CooperativeStickyAssignor()],)

    @initialize(partitions=st.integers(1, 10))
    def start(self, partitions: int) -> None:
        self.cluster = Cluster({"t": partitions})
        self.static_names: set[str] = set()
        self.choice: dict[str, int] = {}
        self.instance_ids: dict[str, str] = {}
        self.incarnations = 0

    def _running(self, name: str) -> SimMember | None:
        m = self.cluster.members.get(name)
        if m is None or not m.alive or m.machine.state is MemberState.CLOSED:
            return None
        return m

    def _start(
        self,
        name: str,
        static: bool,
        poll_every_ms: int = 50,
        choice: int = 0,
        instance_id: str | None = None,
    ) -> None:
        factory = self.assignor_choices[choice % len(self.assignor_choices)]
        self.choice[name] = choice
        if static:
            self.incarnations += 1
            instance_id = instance_id or f"static-{name}-{self.incarnations}"
            self.instance_ids[name] = instance_id
        self.cluster.add(
            name,
            member_config(
                ["t"],
                factory(),
                session_timeout_ms=SESSION_MS,
                max_poll_interval_ms=MAX_POLL_MS,
                group_instance_id=instance_id if static else None,
            ),
            poll_every_ms=poll_every_ms,
        )
        if static:
            self.static_names.add(name)
        else:
            self.static_names.discard(name)

    @rule(
        name=NAMES,
        static=st.booleans(),
        poll_every_ms=st.integers(1, 500),
        after_ms=st.integers(0, 1_500),
        choice=st.integers(0, 3),
    )
    def join(self, name: str, static: bool, poll_every_ms: int, after_ms: int, choice: int) -> None:
        if self._running(name) is None:
            self._start(name, static, poll_every_ms, choice)
        self.cluster.run_for(after_ms)

    @rule(name=NAMES, after_ms=st.integers(0, 1_500))
    def close(self, name: str, after_ms: int) -> None:
        if self._running(name) is not None:
            self.cluster.close(name)
        self.cluster.run_for(after_ms)

    @rule(name=NAMES, busy_ms=st.integers(SESSION_MS + 100, MAX_POLL_MS - 200))
    def slow_poll(self, name: str, busy_ms: int) -> None:
        m = self._running(name)
        if m is not None:
            m.slow(self.cluster.now, busy_ms)
        self.cluster.run_for(busy_ms // 2)

    @rule(name=NAMES, busy_ms=st.integers(MAX_POLL_MS + 200, 2 * MAX_POLL_MS))
    def too_slow_poll(self, name: str, busy_ms: int) -> None:
        m = self._running(name)
        if m is not None:
            m.slow(self.cluster.now, busy_ms)
        self.cluster.run_for(busy_ms // 2)

    @rule(name=NAMES, after_ms=st.integers(0, 2_000))
    def kill(self, name: str, after_ms: int) -> None:
        if self._running(name) is not None:
            self.cluster.kill(name)
        self.cluster.run_for(after_ms)

    @rule(name=NAMES, down_ms=st.integers(0, 2 * SESSION_MS))
    def static_restart(self, name: str, down_ms: int) -> None:
        """A static member's process restarts with the same group.instance.id.

        Only in a settled group: a replacement during an unfinished cooperative rebalance
        can stall it, in Kafka as here (the replacement receives the stored first-round
        assignment without a rebalance, and the member that was to rejoin for the second
        round is gone); see the README's known limitations. A new process that joins
        through :meth:`join` gets a new instance id.
        """
        m = self._running(name)
        if m is None or name not in self.static_names or not self.cluster.is_settled():
            return
        self.cluster.kill(name)
        self.cluster.run_for(down_ms)
        self._start(
            name,
            static=True,
            choice=self.choice.get(name, 0),
            instance_id=self.instance_ids[name],
        )

    @rule(ms=st.integers(1, 3_000))
    def wait(self, ms: int) -> None:
        self.cluster.run_for(ms)

    @rule()
    def settle(self) -> None:
        """Churn stops: every live member polls normally again; the group must converge."""
        for m in self.cluster.live():
            m.next_poll_ms = min(m.next_poll_ms, self.cluster.now)
        self.cluster.run_for(4 * MAX_POLL_MS + DELAY_MS)
        assert self.cluster.is_settled(), self._describe()
        running = [m for m in self.cluster.live() if m.machine.state is MemberState.STABLE]
        if running:
            sizes = [len(m.machine.assignment) for m in running]
            assert max(sizes) - min(sizes) <= 1, self._describe()
            for m in running:
                assert m.view == m.machine.assignment, (m.name, m.view, m.machine.assignment)

    @invariant()
    def no_fatal_errors(self) -> None:
        if not hasattr(self, "cluster"):
            return
        for m in self.cluster.members.values():
            assert m.machine.fatal_error is None, (m.name, m.machine.fatal_error)

    def _describe(self) -> str:
        c = self.cluster
        lines = [f"t={c.now} coordinator generation={c.coordinator_generation()}"]
        for m in c.members.values():
            mm = m.machine
            lines.append(
                f"{m.name} alive={m.alive} state={mm.state.value} gen={mm.generation} "
                f"rejoin={mm.rejoin_needed} owns={sorted(tp.partition for tp in mm.assignment)}"
            )
        return "\n".join(lines)


_SETTINGS = settings(
    max_examples=30,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class CooperativeChurn(MemberChurn):
    assignor_choices = (lambda: [CooperativeStickyAssignor()],)


class EagerRangeChurn(MemberChurn):
    assignor_choices = (lambda: [RangeAssignor()],)


class EagerStickyChurn(MemberChurn):
    assignor_choices = (lambda: [StickyAssignor()],)


class FirstBounceChurn(MemberChurn):
    """Mid-upgrade, first bounce: eager range members and members already announcing
    cooperative-sticky first (still eager, since range is also listed)."""

    assignor_choices = (
        lambda: [RangeAssignor()],
        lambda: [CooperativeStickyAssignor(), RangeAssignor()],
    )


class SecondBounceChurn(MemberChurn):
    """Mid-upgrade, second bounce: eager members ([cooperative-sticky, range]) and
    cooperative ones ([cooperative-sticky]) in one cooperative-sticky group."""

    assignor_choices = (
        lambda: [CooperativeStickyAssignor(), RangeAssignor()],
        lambda: [CooperativeStickyAssignor()],
    )


class DelayedImbalanceChurn(MemberChurn):
    """Cooperative with KIP-415: a departed static member's partitions are held back."""

    assignor_choices = (
        lambda: [CooperativeStickyAssignor(scheduled_rebalance_max_delay_ms=DELAY_MS)],
    )


TestCooperativeChurn = CooperativeChurn.TestCase
TestCooperativeChurn.settings = _SETTINGS
TestEagerRangeChurn = EagerRangeChurn.TestCase
TestEagerRangeChurn.settings = _SETTINGS
TestEagerStickyChurn = EagerStickyChurn.TestCase
TestEagerStickyChurn.settings = _SETTINGS
TestFirstBounceChurn = FirstBounceChurn.TestCase
TestFirstBounceChurn.settings = _SETTINGS
TestSecondBounceChurn = SecondBounceChurn.TestCase
TestSecondBounceChurn.settings = _SETTINGS
TestDelayedImbalanceChurn = DelayedImbalanceChurn.TestCase
TestDelayedImbalanceChurn.settings = _SETTINGS
