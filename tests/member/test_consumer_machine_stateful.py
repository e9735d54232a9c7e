"""Random lives of a KIP-848 group: members join, leave, crash, stall past
max.poll.interval.ms, lose the network and come back, topics grow. The harness checks one
owner per partition and revoke-before-assign at every step; at the end, with everyone
healthy again, the group must settle with every partition owned and loads within one."""

from __future__ import annotations

from consumer_member_harness import ConsumerCluster
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

OPS = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5)),
    st.tuples(st.just("close"), st.integers(0, 5)),
    st.tuples(st.just("crash"), st.integers(0, 5)),
    st.tuples(st.just("stall"), st.integers(0, 5), st.sampled_from([1_500, 4_000])),
    st.tuples(st.just("cut"), st.integers(0, 5)),
    st.tuples(st.just("heal"), st.integers(0, 5)),
    st.tuples(st.just("grow"), st.integers(1, 4)),
    st.tuples(st.just("wait"), st.integers(1, 4_000)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPS, max_size=25), static=st.booleans())
def test_random_lives_keep_one_owner_and_settle(
    ops: list[tuple[object, ...]], static: bool
) -> None:
    c = ConsumerCluster({"orders": 6, "audit": 2})
    born = 0

    def name(i: object) -> str | None:
        running = sorted(m.name for m in c.running())
        return running[int(i) % len(running)] if running else None  # type: ignore[call-overload]

    for op in ops:
        kind = op[0]
        if kind == "add" and len(c.running()) < 5:
            born += 1
            n = f"m{born}"
            c.add(n, max_poll_interval_ms=2_000, instance_id=f"i{born}" if static else None)
        elif kind in ("close", "crash", "stall", "cut", "heal"):
            n = name(op[1])
            if n is None:
                continue
            if kind == "close":
                c.close(n)
            elif kind == "crash":
                c.crash(n)
            elif kind == "stall":
                c.stall(n, int(op[2]))  # type: ignore[call-overload]
            elif kind == "cut":
                c.cut(n)
            else:
                c.heal(n)
        elif kind == "grow":
            c.set_topics({"orders": c.topics["orders"] + int(op[1]), "audit": 2})  # type: ignore[call-overload]
        elif kind == "wait":
            c.run_for(int(op[1]))  # type: ignore[call-overload]
        c.run_for(50)
    # everyone healthy again; if nobody is left, one more joins
    for m in c.running():
        c.heal(m.name)
    c.run_for(5_000)  # closes that waited for the network complete
    if not [m for m in c.running() if not m.machine.done]:
        c.add("last")
    c.run_for(30_000)
    assert c.settled(), {m.name: (m.machine.state, len(m.machine.assignment)) for m in c.running()}
    loads = [len(a) for m, a in c.assignments().items() if not c.members[m].machine.done]
    assert max(loads) - min(loads) <= 1, loads
