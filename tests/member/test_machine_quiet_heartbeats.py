"""``MemberMachine.quiet_heartbeat_answered``: telling a stable, idle machine of the last
heartbeat of a quiet stretch leaves it exactly as sending, receiving and polling every one
of them does (the simulator's heartbeat lane relies on it), and refuses a machine that is
not quiet."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from member_harness import Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor
from groupcoord.coordinator.messages import HeartbeatResponse
from groupcoord.member.machine import MemberMachine


def _stable_machine() -> tuple[MemberMachine, int]:
    """A member of a settled group, right after one of its heartbeats was answered."""
    cluster = Cluster({"t": 4})
    member = cluster.add("a", member_config(["t"], [CooperativeStickyAssignor()]))
    cluster.run_for(10_000)
    assert cluster.is_settled()
    machine = member.machine
    return machine, cluster.now


def _state(m: MemberMachine) -> tuple[object, ...]:
    return (
        m.state,
        m.generation,
        m.member_id,
        m.assignment,
        dataclasses.asdict(m._t),
        dataclasses.asdict(m._f),
        dict(m._inflight),
        m.next_deadline(),
    )


@settings(max_examples=60, deadline=None)
@given(
    beats=st.integers(1, 30),
    # each way, as a fraction of half the heartbeat interval (the answer comes before the
    # next heartbeat falls due: otherwise the next is sent on reading it, not quiet)
    latencies=st.lists(st.floats(0, 1), min_size=60, max_size=60),
)
def test_last_heartbeat_of_a_quiet_stretch_tells_it_all(beats: int, latencies: list[float]) -> None:
    machine, now = _stable_machine()
    reference, _ = _stable_machine()  # the same (the harness is deterministic)
    assert _state(reference) == _state(machine)
    interval = machine.config.heartbeat_interval_ms
    out: list[object] = []
    # the reference: every heartbeat sent, answered and followed by a poll, as a runner does
    sent = max(machine.heartbeat_due_ms, now + 1)
    times: list[tuple[int, int]] = []
    for k in range(beats):
        # at most interval - 1 after the send: the answer is read before the next is due
        half = (interval - 3) // 2
        answered = sent + 2 + int(latencies[2 * k] * half) + int(latencies[2 * k + 1] * half)
        assert reference.poll_idle(sent, out) is not None
        (request,) = out
        out.clear()
        reference.receive(
            HeartbeatResponse(version=request.version, correlation=request.correlation),
            answered,
        )
        assert reference.poll_idle(answered, out) == sent + interval
        assert not out
        times.append((sent, answered))
        sent += interval
    last_sent, last_answered = times[-1]
    assert machine.quiet_heartbeat_answered(last_sent, last_answered)
    got, want = _state(machine), _state(reference)
    # correlation ids differ (the reference consumed some): compare everything else
    assert got == want


def test_a_machine_that_is_not_quiet_is_refused() -> None:
    machine, now = _stable_machine()
    sent = max(machine.heartbeat_due_ms, now + 1)
    out: list[object] = []
    assert machine.poll_idle(sent, out) is not None and out  # a heartbeat in flight
    before = _state(machine)
    assert not machine.quiet_heartbeat_answered(sent + 3_000, sent + 3_010)
    assert _state(machine) == before
    machine2, now2 = _stable_machine()
    machine2.commit({next(iter(machine2.assignment)): 5}, now2)  # a commit queued
    before = _state(machine2)
    due = max(machine2.heartbeat_due_ms, now2 + 1)
    assert not machine2.quiet_heartbeat_answered(due, due + 2)
    assert _state(machine2) == before
    # answered no later than sent, or before the heartbeat was due: refused
    machine3, now3 = _stable_machine()
    due = max(machine3.heartbeat_due_ms, now3 + 1)
    assert not machine3.quiet_heartbeat_answered(due, due)
    assert not machine3.quiet_heartbeat_answered(machine3.heartbeat_due_ms - 1, due + 5)


@settings(max_examples=40, deadline=None)
@given(
    beats=st.integers(1, 10),
    # where the heartbeat thread meets each heartbeat: between polls (the poll sends it and
    # reads its answer) or inside a batch (no poll at the send, at the answer, or both)
    in_batch=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=10, max_size=10),
)
def test_the_last_poll_of_a_stretch_can_be_before_its_last_answer(
    beats: int, in_batch: list[tuple[bool, bool]]
) -> None:
    """The processing lane's heartbeats are sent and read by the heartbeat thread inside
    batches too: the machine told of the last one and of the last poll
    (``last_poll_ms``) is the machine that sent, read and polled as the lane did."""
    machine, now = _stable_machine()
    reference, _ = _stable_machine()
    interval = machine.config.heartbeat_interval_ms
    out: list[object] = []
    sent = max(machine.heartbeat_due_ms, now + 10)
    last_poll = reference.last_poll_ms
    for k in range(beats):
        answered = sent + 4
        send_in_batch, read_in_batch = in_batch[k]
        if send_in_batch:
            # the batch started with a poll 5 ms before the heartbeat fell due
            assert reference.poll_idle(sent - 5, out) is not None and not out
            (request,) = reference.next_requests(sent)
        else:
            assert reference.poll_idle(sent, out) is not None
            (request,) = out
            out.clear()
        reference.receive(
            HeartbeatResponse(version=request.version, correlation=request.correlation),
            answered,
        )
        if read_in_batch:
            assert reference.next_requests(answered) == []
        else:
            assert reference.poll_idle(answered, out) is not None and not out
        last_poll = reference.last_poll_ms
        sent += interval
    last_sent = sent - interval
    assert machine.quiet_heartbeat_answered(last_sent, last_sent + 4, last_poll_ms=last_poll)
    assert _state(machine) == _state(reference)
    # a last poll before the one the machine knows is refused
    again, _ = _stable_machine()
    assert not again.quiet_heartbeat_answered(
        last_sent, last_sent + 4, last_poll_ms=again.last_poll_ms - 1
    )


def test_a_quiet_commit_request_is_the_one_the_machine_sends() -> None:
    """``quiet_commit_request`` builds the OffsetCommit ``poll_idle_commit`` would send
    (but for the correlation), without sending or tracking it."""
    machine, now = _stable_machine()
    reference, _ = _stable_machine()
    offsets = {tp: 7 for tp in sorted(machine.assignment)}
    before = _state(machine)
    quiet = machine.quiet_commit_request(offsets, None)
    assert _state(machine) == before
    out: list[object] = []
    assert reference.poll_idle_commit(offsets, now + 1, out) is not None
    sent = out[0]
    assert dataclasses.replace(quiet, correlation=sent.correlation) == sent  # type: ignore[type-var]
    # a copy of the last one for new offsets
    again = machine.quiet_commit_request({tp: 9 for tp in offsets}, quiet)
    assert again == machine.quiet_commit_request({tp: 9 for tp in offsets}, None)
    assert machine.last_heartbeat_ack_ms == reference.last_heartbeat_ack_ms
