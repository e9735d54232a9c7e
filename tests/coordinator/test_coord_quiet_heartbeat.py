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
from coord_harness import FakeMember, Harness, rebalance
from hypothesis import event, example, given, settings
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


@settings(max_examples=40, deadline=None)
@example(gaps=[(0, 100), (1, 100), (0, 2_000), (1, 1), (0, 0)])
@given(gaps=st.lists(st.tuples(st.integers(0, 1), st.integers(0, 3_000)), min_size=1, max_size=30))
def test_member_expiry_takes_a_known_members_heartbeats_as_quiet_heartbeat(
    gaps: list[tuple[int, int]],
) -> None:
    """``member_expiry``'s contract (the simulator's processing lane relies on it): once
    ``quiet_heartbeat`` took a member's heartbeat, and with no ``handle`` or ``tick`` since,
    a heartbeat by the member's handle in the table when no deadline is due leaves the
    deadlines as ``quiet_heartbeat`` of that heartbeat does."""
    config = {**CONFIG, "group.initial.rebalance.delay.ms": 100}
    quiet, by_handle = Harness(config), Harness(config)
    pairs = []
    for h in (quiet, by_handle):
        members = [FakeMember(h, f"c{i}", group_id=GROUP) for i in range(2)]
        rebalance(h, members)
        pairs.append(members)
    now = quiet.now
    assert by_handle.now == now
    known: dict[str, tuple[int, int]] = {}
    by_handles = 0
    for who, gap in gaps:
        now += gap
        expiry = by_handle.coord.member_expiry
        due = expiry.next_deadline()
        if due is not None and due <= now:
            break  # a deadline due: quiet_heartbeat declines and handle() acts on it
        a, b = pairs[0][who], pairs[1][who]
        assert a.member_id == b.member_id and a.generation == b.generation
        assert quiet.coord.quiet_heartbeat(GROUP, a.member_id, a.generation, None, now)
        if b.member_id in known:
            handle, session = known[b.member_id]
            expiry.heartbeat_handle(handle, now, session)
            by_handles += 1
        else:
            assert by_handle.coord.quiet_heartbeat(GROUP, b.member_id, b.generation, None, now)
            deadline = expiry.deadline(GROUP, b.member_id, "session")
            assert deadline is not None
            known[b.member_id] = (expiry.handle(GROUP, b.member_id), deadline - now)
        for m in pairs[0]:
            assert quiet.coord.member_expiry.deadline(
                GROUP, m.member_id, "session"
            ) == expiry.deadline(GROUP, m.member_id, "session")
        assert quiet.coord.next_deadline() == by_handle.coord.next_deadline()
    event(f"heartbeats by handle: {min(by_handles, 3)}{'+' if by_handles >= 3 else ''}")
