"""KIP-429's second round survives a static member's poll timeout (found by the
SecondBounceChurn state machine): the member that owed the second round times out, rejoins
statically and gets its stored first-round assignment back without a rebalance; it still
runs the second round, so the partitions withheld from their new owner are handed out."""

from __future__ import annotations

from member_harness import Cluster, member_config

from groupcoord.assignors import CooperativeStickyAssignor, RangeAssignor
from groupcoord.coordinator.messages import JoinGroupRequest


def test_a_static_member_that_timed_out_mid_rebalance_still_runs_the_second_round() -> None:
    c = Cluster({"t": 9})
    c.add(
        "m1",
        member_config(
            ["t"],
            [CooperativeStickyAssignor()],
            session_timeout_ms=1000,
            max_poll_interval_ms=3000,
            group_instance_id="static-m1",
        ),
        poll_every_ms=420,
    )
    c.run_for(136)
    # mid-upgrade (KIP-429's second bounce): eager, but cooperative-sticky first
    eager = [CooperativeStickyAssignor(), RangeAssignor()]
    c.add(
        "m0",
        member_config(["t"], eager, session_timeout_ms=1000, max_poll_interval_ms=3000),
        poll_every_ms=1,
    )
    c.run_for(386)
    m1, m0 = c.members["m1"], c.members["m0"]
    # generation 2: m1 keeps 0-4 and must give 5-8 up, then rejoin for m0 to get them;
    # but its application is stuck past max.poll.interval.ms before it hears so
    m1.slow(c.now, 5700)
    c.run_for(2850)
    m0.slow(c.now, 1100)
    c.run_for(550)
    for m in c.live():
        m.next_poll_ms = min(m.next_poll_ms, c.now)
    c.run_for(14_000)
    assert c.is_settled()
    assert len(m1.machine.assignment) + len(m0.machine.assignment) == 9
    assert {len(m1.machine.assignment), len(m0.machine.assignment)} == {4, 5}
    reasons = [
        r.reason for _t, name, r in c.sent if name == "m1" and isinstance(r, JoinGroupRequest)
    ]
    assert "completing a cooperative rebalance a rejoin interrupted" in reasons
