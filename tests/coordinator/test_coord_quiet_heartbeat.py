"""``GroupCoordinator.quiet_heartbeat`` does exactly what ``handle(HeartbeatRequest)`` does
whenever it accepts, and nothing when it declines.

Two coordinators are driven by the same hypothesis-drawn script (members joining, syncing,
heartbeating with right and wrong generations, ids and instance ids, leaving, and time
passing past session and rebalance deadlines): one handles every heartbeat, the other tries
``quiet_heartbeat`` first and handles the request only when it declines. After every step
both have released the same responses (an accepted quiet heartbeat counts as the no-error
answer ``handle`` gives), and hold the same groups and deadlines.
"""

from __future__ import annotations

from typing import Any

import twin_harness
from coord_harness import FakeMember, rebalance
from hypothesis import event, given, settings
from hypothesis import strategies as st
from twin_harness import GROUP, run_steps

from groupcoord.coordinator import HeartbeatRequest, HeartbeatResponse

CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}
STEP = st.one_of(
    st.tuples(st.just("join"), st.integers(0, 3)),
    st.tuples(st.just("sync"), st.integers(0, 3)),
    st.tuples(
        st.just("heartbeat"),
        st.integers(0, 3),
        st.sampled_from(["right", "right", "right", "old-generation", "unknown-id", "instance"]),
    ),
    st.tuples(st.just("leave"), st.integers(0, 3)),
    st.tuples(st.just("settle"), st.integers(1, 4)),
    st.tuples(st.just("advance"), st.sampled_from([1, 500, 2_000, 6_000, 12_000])),
)


class Twin(twin_harness.Twin):
    """Harness ``b`` takes heartbeats through quiet_heartbeat."""

    def __init__(self, config: dict[str, object] = CONFIG) -> None:
        super().__init__(config)

    def quiet_answer(self, request: Any) -> Any:
        if not isinstance(request, HeartbeatRequest):
            return None
        b = self.b
        if not b.coord.quiet_heartbeat(
            request.group_id,
            request.member_id,
            request.generation_id,
            request.group_instance_id,
            b.now,
        ):
            return None
        # the no-error answer handle() gives
        return HeartbeatResponse(version=request.version, correlation=request.correlation)


@settings(max_examples=150, deadline=None)
@given(
    static=st.lists(st.booleans(), min_size=4, max_size=4),
    steps=st.lists(STEP, min_size=1, max_size=60),
)
def test_quiet_heartbeat_is_handle_when_it_accepts(static: list[bool], steps: list[Any]) -> None:
    twin = Twin()
    members = twin.members(static)
    twin.wire()

    def act(step: Any) -> None:  # a heartbeat, right or with one field wrong
        m = members[step[1]]
        if step[2] == "old-generation":
            m.heartbeat(generation_id=m.generation - 1)
        elif step[2] == "unknown-id":
            m.heartbeat(member_id=m.member_id + "x")
        elif step[2] == "instance":
            m.heartbeat(group_instance_id="other")
        else:
            m.heartbeat()

    run_steps(twin, members, steps, act)
    event(f"quiet heartbeats: {min(twin.quiet, 3)}+" if twin.quiet >= 3 else f"quiet: {twin.quiet}")


def test_the_quiet_case_is_taken() -> None:
    """Not vacuous: a stable group's heartbeats go through quiet_heartbeat."""
    twin = Twin({**CONFIG, "group.initial.rebalance.delay.ms": 100})
    twin.wire()
    members = [FakeMember(twin.a, f"c{i}", group_id=GROUP) for i in range(2)]
    rebalance(twin.a, members)
    twin.check()
    for _ in range(5):
        twin.advance(1_000)
        for m in members:
            m.heartbeat()
        twin.check()
    assert twin.quiet == 10
    # a deadline due first: declined, and handle() acts on it
    twin.advance(20_000)
    members[0].heartbeat()
    twin.check()
    assert twin.quiet == 10
