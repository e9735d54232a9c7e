"""The interop scenarios of issue 5, written once and run by each client's test file.

Each scenario takes a running ``groupcoord serve`` (see conftest's ``serve_factory``), the
name of a consumer agent (``helpers.AGENT_SCRIPTS``) and, where records are needed, a
``Producer`` that writes keyed records with the same client library.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from helpers import (
    SESSION_TIMEOUT_MS,
    ConsumerGroup,
    ConsumerProcess,
    Server,
    committed_offsets,
    partitions,
    wait_owned_exactly_once,
    wait_until,
)

#: produce(bootstrap, topic, [(key, value), ...]); returns once every record is acknowledged
Producer = Callable[[str, str, Sequence[tuple[str, str]]], None]

TOPIC = "orders"
PARTITIONS = 12
ALL = partitions(TOPIC, PARTITIONS)
#: what a member reports when its group rebalances
REBALANCE_EVENTS = ("assigned", "revoked", "lost", "generation")
#: first-join timeout: clients bootstrap, find the coordinator, join, sync
JOIN_TIMEOUT_S = 40.0
#: one rebalance among members already in the group
REBALANCE_TIMEOUT_S = 30.0


def topic_flags(*extra: str) -> tuple[str, ...]:
    return ("--topic", f"{TOPIC}:{PARTITIONS}", *extra)


def keyed_records(start: int, stop: int) -> list[tuple[str, str]]:
    return [(f"k{i}", f"v{i}") for i in range(start, stop)]


def _assigned_count(member: ConsumerProcess, since: int) -> int:
    return len(member.events("assigned", since=since))


def group_lifecycle(
    bootstrap: str,
    client: str,
    assignor: str,
    log_dir: Path,
    *,
    cooperative: bool,
    sticky_on_leave: bool = True,
) -> None:
    """Three consumers share 12 partitions exactly once; one closes and its partitions move
    in one rebalance; one is SIGKILLed and the survivor owns everything once the session
    times out; two join, and a cooperative member revokes only the partitions that move
    (an eager one revokes everything).

    ``sticky_on_leave=False`` is for a cooperative assignor that may also move survivors'
    partitions when a member leaves (kafka-python 3.0.12's own cooperative-sticky does,
    now and then: its round one gave all of the leaver's partitions to one survivor), so
    the move takes a second round; then two rounds are allowed, each partition revoked by
    a survivor reaching the other only after the revocation."""
    with ConsumerGroup(
        client, bootstrap, f"life-{assignor}", [TOPIC], log_dir, assignor=assignor
    ) as group:
        a, b, c = group.spawn(), group.spawn(), group.spawn()
        wait_owned_exactly_once([a, b, c], ALL, [4, 4, 4], JOIN_TIMEOUT_S, "3 own 12")
        # a cooperative group may still be finishing its second round
        wait_until(lambda: quiet([a, b, c], 1.0), REBALANCE_TIMEOUT_S, "the group to settle")

        # -- a graceful close (LeaveGroup): c's partitions move in one rebalance
        marks = {m.name: m.mark() for m in (a, b)}
        gens = {m.name: m.generation() for m in (a, b)}
        c.close()
        wait_owned_exactly_once([a, b], ALL, [6, 6], REBALANCE_TIMEOUT_S, "a, b own 12")
        history = {m.name: m.events(since=marks[m.name]) for m in (a, b)}
        rounds = 1 if sticky_on_leave else 2
        for m in (a, b):
            assert 1 <= _assigned_count(m, marks[m.name]) <= rounds, history
            if gens[m.name] is not None:
                assert gens[m.name] < m.generation() <= gens[m.name] + rounds, history
        if cooperative and sticky_on_leave:
            # nothing had to be revoked: c's partitions were free
            for m in (a, b):
                assert not m.events("revoked", since=marks[m.name]), history
        elif cooperative:
            _revoked_before_reassigned([a, b], marks)

        # -- a crash (SIGKILL): a owns everything once b's session has timed out
        killed_at = time.monotonic()
        b.kill()
        wait_owned_exactly_once(
            [a],
            ALL,
            [12],
            SESSION_TIMEOUT_MS / 1000 + REBALANCE_TIMEOUT_S,
            "a owns 12 after b's session timeout",
        )
        took_over = a.events("assigned")[-1].t
        # It is b's session that ends (Kafka does not drop a member when its connection
        # drops): not before about a session timeout. The bound is half of one, since b's
        # last heartbeat may have come late on a busy machine.
        assert took_over - killed_at >= SESSION_TIMEOUT_MS / 2000, took_over - killed_at

        # -- two members join: watch what a revokes
        mark_a = a.mark()
        before = a.owned()
        d, e = group.spawn(), group.spawn()
        wait_owned_exactly_once([a, d, e], ALL, [4, 4, 4], JOIN_TIMEOUT_S, "a, d, e own 12")
        after = a.owned()
        revoked = [r.parts("removed") for r in a.events("revoked", since=mark_a)]
        if cooperative:
            # KIP-429: a gives up exactly what moves, each partition once (d and e may
            # arrive in separate rebalances), and keeps the rest throughout
            moved = before - after
            assert sum(len(r) for r in revoked) == len(moved), revoked
            assert frozenset().union(*revoked) == moved, (revoked, moved)
            # ... and nobody got a partition before a had revoked it
            revoked_at = {
                tp: event.t for event in a.events("revoked", since=mark_a)
                for tp in event.parts("removed")
            }  # fmt: skip
            for newcomer in (d, e):
                for event in newcomer.events("assigned"):
                    for tp in event.parts("added") & moved:
                        assert event.t >= revoked_at[tp], tp
        else:
            assert revoked and revoked[0] == before, (revoked, before)


def _revoked_before_reassigned(members: Sequence[ConsumerProcess], marks: dict[str, int]) -> None:
    """KIP-429 safety: a partition one member revoked reaches another only afterwards."""
    revoked_at: dict[tuple[str, int], float] = {}
    for m in members:
        for event in m.events("revoked", since=marks[m.name]):
            for tp in event.parts("removed"):
                revoked_at.setdefault(tp, event.t)
    for m in members:
        for event in m.events("assigned", since=marks[m.name]):
            for tp in event.parts("added"):
                if tp in revoked_at and not any(
                    tp in e.parts("removed") for e in m.events("revoked", since=marks[m.name])
                ):
                    assert event.t >= revoked_at[tp], (m.name, tp)


def static_member_restart(bootstrap: str, client: str, assignor: str, log_dir: Path) -> None:
    """KIP-345: a static member restarted within its session timeout gets its partitions
    back without a rebalance: the others see no callback, the generation stays."""
    # long enough for a new JVM to start and join on a loaded 2-core machine: with 6 s the
    # Java client's replacement sometimes joined after the old session had expired, a real
    # departure (the rebalance Kafka would run too), not the restart this test is about
    session_ms = 15_000
    with ConsumerGroup(
        client,
        bootstrap,
        f"static-{assignor}",
        [TOPIC],
        log_dir,
        assignor=assignor,
        session_timeout_ms=session_ms,
    ) as group:
        members = [group.spawn(instance_id=f"instance-{i}") for i in range(3)]
        wait_owned_exactly_once(members, ALL, [4, 4, 4], JOIN_TIMEOUT_S, "3 static own 12")
        # the group may settle in more than one round (cooperative); let it
        wait_until(lambda: quiet(members, 1.0), REBALANCE_TIMEOUT_S, "the group to settle")
        a, b, c = members
        marks = {m.name: m.mark() for m in (a, b)}
        gen = c.generation()
        c_owned = c.owned()

        c.kill()
        c2 = group.spawn(instance_id="instance-2")
        wait_until(
            lambda: c2.owned() == c_owned,
            REBALANCE_TIMEOUT_S,
            "the restarted member to get its partitions back",
        )
        if gen is not None:
            assert c2.generation() == gen
        # nothing happens to the others for longer than the session timeout: the old
        # incarnation's session must not expire into a rebalance either
        wait_until(
            lambda: quiet([a, b, c2], session_ms / 1000 + 1.0),
            session_ms / 1000 + 15,
            "a quiet period after the restart",
        )
        for m in (a, b):
            assert not m.events(*REBALANCE_EVENTS, since=marks[m.name]), m.events()
        assert len(c2.events("assigned")) == 1
        assert c2.owned() == c_owned


def quiet(members: Sequence[ConsumerProcess], seconds: float) -> bool:
    """No member has reported a partition movement or a new generation for ``seconds``."""
    moves = [e.t for m in members for e in m.events(*REBALANCE_EVENTS)]
    return not moves or time.monotonic() - max(moves) >= seconds


def records_across_rebalance(
    bootstrap: str, client: str, assignor: str, produce: Producer, log_dir: Path
) -> None:
    """10,000 keyed records consumed by a group that rebalances halfway, committing as it
    goes: every record is seen at least once, and the final commits cover everything."""
    group_id = f"records-{assignor}"
    produce(bootstrap, TOPIC, keyed_records(0, 5000))
    with ConsumerGroup(
        client,
        bootstrap,
        group_id,
        [TOPIC],
        log_dir,
        assignor=assignor,
        auto_commit=True,
        report_records=True,
    ) as group:
        a, b = group.spawn(), group.spawn()

        def seen() -> set[tuple[int, int]]:
            return {(p, o) for m in group.members for (_t, p, o, _k) in m.records()}

        wait_until(lambda: len(seen()) >= 5000, JOIN_TIMEOUT_S, "the first 5,000 records", group)
        # rebalance while the second half arrives: c joins, then a leaves
        c = group.spawn()
        produce(bootstrap, TOPIC, keyed_records(5000, 10_000))
        wait_owned_exactly_once([a, b, c], ALL, [4, 4, 4], JOIN_TIMEOUT_S, "a, b, c own 12")
        a.close()
        wait_owned_exactly_once([b, c], ALL, [6, 6], REBALANCE_TIMEOUT_S, "b, c own 12")
        wait_until(lambda: len(seen()) == 10_000, JOIN_TIMEOUT_S, "all 10,000 records", group)

        keys = {k for m in group.members for (_t, _p, _o, k) in m.records()}
        assert keys == {f"k{i}" for i in range(10_000)}
        ends: dict[int, int] = {}
        for p, o in seen():
            ends[p] = max(ends.get(p, 0), o + 1)
        # offsets are dense from 0 on every partition: nothing was skipped
        assert sum(ends.values()) == 10_000
        b.close()
        c.close()
    committed = committed_offsets(bootstrap, group_id)
    assert {p: o for (_t, p), o in committed.items() if o >= 0} == ends


def offsets_survive_restart(
    server: Server, client: str, assignor: str, produce: Producer, log_dir: Path
) -> None:
    """Offsets committed before a server restart (``--data-dir``) are where a consumer of
    the same group resumes after it; so are the records produced before it."""
    group_id = f"durable-{assignor}"
    produce(server.bootstrap, TOPIC, keyed_records(0, 120))
    with ConsumerGroup(
        client, server.bootstrap, group_id, [TOPIC], log_dir, assignor=assignor, report_records=True
    ) as group:
        first = group.spawn()
        wait_until(lambda: len(first.records()) >= 120, JOIN_TIMEOUT_S, "120 records", group)
        first.commit()
        first.close()
    before = committed_offsets(server.bootstrap, group_id)
    assert sum(o for o in before.values() if o >= 0) == 120

    server.restart()
    assert committed_offsets(server.bootstrap, group_id) == before
    produce(server.bootstrap, TOPIC, keyed_records(120, 150))
    with ConsumerGroup(
        client, server.bootstrap, group_id, [TOPIC], log_dir, assignor=assignor, report_records=True
    ) as group:
        second = group.spawn()
        wait_until(lambda: len(second.records()) >= 30, JOIN_TIMEOUT_S, "30 new records", group)
        records = second.records()
        assert sorted(k for (_t, _p, _o, k) in records) == sorted(
            k for k, _v in keyed_records(120, 150)
        )
        for topic, p, offset, _k in records:
            assert offset >= before[(topic, p)]


def adapter_in_live_group(bootstrap: str, client: str, assignor: str, log_dir: Path) -> None:
    """groupcoord's assignor, through the client's adapter, leads a live group: 12
    partitions exactly once among 3, then among 2 after a leave; sticky assignors keep
    what the survivors owned."""
    with ConsumerGroup(
        client, bootstrap, f"adapter-{assignor}", [TOPIC], log_dir, assignor=assignor
    ) as group:
        a, b, c = group.spawn(), group.spawn(), group.spawn()
        owned = wait_owned_exactly_once([a, b, c], ALL, [4, 4, 4], JOIN_TIMEOUT_S, "3 own 12")
        if "range" in assignor:
            # range hands out contiguous runs
            for parts in owned.values():
                numbers = sorted(p for _t, p in parts)
                assert numbers == list(range(numbers[0], numbers[0] + 4))
        c.close()
        after = wait_owned_exactly_once([a, b], ALL, [6, 6], REBALANCE_TIMEOUT_S, "a, b own 12")
        if "sticky" in assignor:
            for m in (a, b):
                assert owned[m.name] <= after[m.name]
