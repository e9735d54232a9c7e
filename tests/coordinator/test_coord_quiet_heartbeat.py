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

from coord_harness import FakeMember, Harness, rebalance
from hypothesis import event, given, settings
from hypothesis import strategies as st

from groupcoord.coordinator import HeartbeatRequest, HeartbeatResponse

CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}
GROUP = "g"

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


class Twin:
    """Harness ``a`` handles everything; ``b`` takes heartbeats through quiet_heartbeat."""

    def __init__(self, config: dict[str, object] = CONFIG) -> None:
        self.a = Harness(config)
        self.b = Harness(config)
        self.quiet = 0

    def send(self, request: Any) -> Any:
        response = Harness.send(self.a, request)
        if isinstance(request, HeartbeatRequest):
            b = self.b
            if b.coord.quiet_heartbeat(
                request.group_id,
                request.member_id,
                request.generation_id,
                request.group_instance_id,
                b.now,
            ):
                self.quiet += 1
                # handle() answered no error and released nothing else
                assert self.a.released[-1:] == [
                    HeartbeatResponse(version=request.version, correlation=request.correlation)
                ]
                assert len(self.a.released) == len(b.released) + 1
                b.requests[request.correlation] = request
                b._record([self.a.released[-1]])
                return response
        self.b.send(request)
        return response

    def advance(self, ms: int) -> list[Any]:
        self.b.advance(ms)
        return Harness.advance(self.a, ms)

    def wire(self) -> None:
        """Requests and time handed to harness ``a`` (by FakeMember, rebalance) reach both."""
        self.a.send = self.send  # type: ignore[method-assign]
        self.a.advance = self.advance  # type: ignore[method-assign]

    def check(self) -> None:
        a, b = self.a, self.b
        assert a.released == b.released
        assert a.now == b.now
        assert a.coord.snapshot(GROUP) == b.coord.snapshot(GROUP)
        assert a.coord.next_deadline() == b.coord.next_deadline()
        snapshot = a.coord.snapshot(GROUP)
        if snapshot is not None:
            ea, eb = a.coord._rb.expiry, b.coord._rb.expiry
            for m in snapshot.members:
                for kind in ("session", "join", "sync"):
                    assert ea.deadline(GROUP, m.member_id, kind) == eb.deadline(
                        GROUP, m.member_id, kind
                    )


@settings(max_examples=150, deadline=None)
@given(
    static=st.lists(st.booleans(), min_size=4, max_size=4),
    steps=st.lists(STEP, min_size=1, max_size=60),
)
def test_quiet_heartbeat_is_handle_when_it_accepts(static: list[bool], steps: list[Any]) -> None:
    twin = Twin()
    # the members build their requests with harness a's correlations; twin.send hands
    # each to both coordinators
    members = [
        FakeMember(
            twin.a,
            f"c{i}",
            group_id=GROUP,
            instance_id=f"i{i}" if static[i] else None,
            session_timeout_ms=5_000,
            rebalance_timeout_ms=8_000,
        )
        for i in range(4)
    ]
    twin.wire()
    waiting: list[tuple[FakeMember, int]] = []
    for step in steps:
        kind = step[0]
        if kind == "advance":
            twin.advance(step[1])
        elif kind == "settle":
            _settle(twin, members[: step[1]])
        else:
            m = members[step[1]]
            if kind == "join":
                waiting.append((m, m.join()))
            elif kind == "sync":
                if m.generation >= 0 and m.member_id:
                    waiting.append((m, m.sync()))
            elif kind == "heartbeat":
                if step[2] == "old-generation":
                    m.heartbeat(generation_id=m.generation - 1)
                elif step[2] == "unknown-id":
                    m.heartbeat(member_id=m.member_id + "x")
                elif step[2] == "instance":
                    m.heartbeat(group_instance_id="other")
                else:
                    m.heartbeat()
            else:
                m.leave()
        # members learn from answers released later (joins and syncs that waited)
        still = []
        for m, correlation in waiting:
            response = twin.a.response(correlation)
            if response is None:
                still.append((m, correlation))
            else:
                m.absorb(response)
        waiting = still
        twin.check()
    event(f"quiet heartbeats: {min(twin.quiet, 3)}+" if twin.quiet >= 3 else f"quiet: {twin.quiet}")


def _settle(twin: Twin, members: list[FakeMember]) -> None:
    """Members (re)join together, wait for the join phase, sync (leader last), as consumers
    do, and heartbeat a second later; errors are fine (the script may have left the group
    anywhere)."""
    joins = [(m, m.join()) for m in members]
    for _ in range(10):
        if all(twin.a.response(c) is not None for _, c in joins):
            break
        twin.advance(1_000)
    for m, c in joins:
        m.joined(c)
    order = [m for m in members if not m.is_leader] + [m for m in members if m.is_leader]
    syncs = [(m, m.sync()) for m in order if m.generation >= 0 and m.member_id]
    for m, c in syncs:
        m.synced(c)
    twin.advance(1_000)
    for m in members:
        if m.member_id:
            m.heartbeat()


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
