"""The member's join phase (``states.JoinPhase``): its transition table, and the machine
keeping to it under churn.

The table is checked as data (every pair of phases: allowed iff listed, one clear error
otherwise); the machine checks every move it makes against it, so churning members against
the real coordinator (the moves of test_member_stateful's machines) must never raise, and
the phase must agree with the member state at every step.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant
from member_harness import Cluster, member_config
from test_member_stateful import MemberChurn

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor
from groupcoord.member import MemberMachine, MemberState
from groupcoord.member.states import (
    JOINING_PHASES,
    PHASE_TRANSITIONS,
    IllegalPhaseTransition,
    JoinPhase,
    check_phase_transition,
)

PHASES = st.sampled_from(list(JoinPhase))


def test_every_phase_has_a_row() -> None:
    assert set(PHASE_TRANSITIONS) == set(JoinPhase)
    for source, targets in PHASE_TRANSITIONS.items():
        assert source not in targets  # staying is implicit, never listed


@given(source=PHASES, target=PHASES)
def test_a_move_is_allowed_iff_the_table_lists_it(source: JoinPhase, target: JoinPhase) -> None:
    allowed = target is source or target in PHASE_TRANSITIONS[source]
    if allowed:
        check_phase_transition(source, target)
        return
    with pytest.raises(IllegalPhaseTransition) as info:
        check_phase_transition(source, target)
    assert (info.value.source, info.value.target) == (source, target)
    message = str(info.value)
    assert f"{source.value} -> {target.value}" in message
    for listed in PHASE_TRANSITIONS[source]:
        assert listed.value in message


def test_every_phase_is_reachable_and_a_sequence_can_always_end() -> None:
    """From the first phase (WANTED) every phase is reachable, and from every phase IDLE is:
    no phase traps the member."""

    def reachable(start: JoinPhase) -> set[JoinPhase]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in PHASE_TRANSITIONS[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert reachable(JoinPhase.WANTED) == set(JoinPhase)
    for phase in JoinPhase:
        assert JoinPhase.IDLE in reachable(phase)


class PhaseChurn(MemberChurn):
    """MemberChurn's moves; at every step each member's phase agrees with its state."""

    @invariant()
    def phase_agrees_with_state(self) -> None:
        if not hasattr(self, "cluster"):
            return
        for m in self.cluster.members.values():
            machine = m.machine
            phase, state = machine.join_phase, machine.state
            assert machine.rejoin_needed == (phase is not JoinPhase.IDLE)
            if state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE):
                assert phase is JoinPhase.SENT, (m.name, state, phase)
            if state is MemberState.UNJOINED:
                assert phase is not JoinPhase.IDLE, (m.name, state, phase)
            if state in (MemberState.CLOSED, MemberState.FATAL):
                assert phase not in JOINING_PHASES, (m.name, state, phase)


_SETTINGS = settings(
    max_examples=25,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class CooperativePhaseChurn(PhaseChurn):
    assignor_choices = (lambda: [CooperativeStickyAssignor()],)


class EagerPhaseChurn(PhaseChurn):
    assignor_choices = (lambda: [RangeAssignor()],)


TestCooperativePhases = CooperativePhaseChurn.TestCase
TestCooperativePhases.settings = _SETTINGS
TestEagerPhases = EagerPhaseChurn.TestCase
TestEagerPhases.settings = _SETTINGS


def test_a_first_join_goes_wanted_started_sent_idle() -> None:
    cluster = Cluster({"t": 2})
    machine = MemberMachine(member_config(["t"], [CooperativeStickyAssignor()]))
    seen = [machine.join_phase]  # the first join is wanted from the start
    machine.coordinator_found(0)
    assert machine.next_requests(0) == []  # only poll() starts it
    machine.poll(0)
    seen.append(machine.join_phase)
    (join,) = machine.next_requests(0)
    seen.append(machine.join_phase)
    requests = [join]
    for now in range(1, 50):  # one member, no initial delay: a few round trips
        responses = [r for request in requests for r in cluster.shell.handle(request, now)]
        for response in responses + cluster.shell.tick(now):
            machine.receive(response, now)  # type: ignore[arg-type]  # (answers to ours)
        if machine.state is MemberState.STABLE:
            break
        requests = machine.next_requests(now)
    assert machine.state is MemberState.STABLE and not machine.rejoin_needed
    seen.append(machine.join_phase)
    assert seen == [JoinPhase.WANTED, JoinPhase.STARTED, JoinPhase.SENT, JoinPhase.IDLE]
