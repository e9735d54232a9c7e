"""KIP-848 consumer groups (``group.protocol=consumer``) of real clients against
``groupcoord serve``: confluent-kafka 2.16 (librdkafka) and, marked ``kafka``, Kafka's own
Java ``KafkaConsumer`` 4.4.0, alone and in one mixed group.

The coordinator assigns (the server-side ``uniform`` assignor), members reconcile
incrementally: a partition reaches its new owner only after its old owner revoked it.
One scenario per client: two members split 12 partitions 6/6; records are consumed,
committed and read back with OffsetFetch; one member closes (leave heartbeat, epoch -1)
and the other gets all 12; a new member joins and the survivor revokes 6 before the
newcomer gets them; the newcomer is SIGKILLed and the survivor gets them back once its
session (``--group-consumer-session-timeout-ms``) expires. And static membership: a static
member that closes (an epoch -2 leave) and comes back under its instance id gets its own
partitions again, with no movement for anybody else.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import scenarios
from helpers import (
    FAST_GROUP_FLAGS,
    ConsumerGroup,
    ConsumerProcess,
    Server,
    committed_offsets,
    wait_owned_exactly_once,
    wait_until,
)
from scenarios import ALL, JOIN_TIMEOUT_S, REBALANCE_TIMEOUT_S, TOPIC, keyed_records
from test_confluent import produce

#: KIP-848 timings the coordinator hands its members (Kafka's minimums are 45 s / 5 s)
SESSION_MS = 12_000  # a replacement JVM must start and rejoin within it on a loaded 2-core machine
KIP848_FLAGS = (
    "--group-consumer-session-timeout-ms", str(SESSION_MS),
    "--group-consumer-heartbeat-interval-ms", "300",
)  # fmt: skip

CLIENTS = [
    pytest.param(("confluent", "confluent"), id="confluent"),
    pytest.param(("java", "java"), id="java", marks=pytest.mark.kafka),
    pytest.param(("confluent", "java"), id="mixed", marks=pytest.mark.kafka),
]


@pytest.fixture
def server(serve_factory: Callable[..., Server]) -> Server:
    return serve_factory(*scenarios.topic_flags(*FAST_GROUP_FLAGS, *KIP848_FLAGS))


def _revoked_before_assigned(
    giver: ConsumerProcess, taker: ConsumerProcess, since: dict[str, int]
) -> None:
    """Every partition ``taker`` got after the marks was revoked by ``giver`` first."""
    revoked = {
        p: e.t for e in giver.events("revoked", since=since[giver.name]) for p in e.parts("removed")
    }
    for e in taker.events("assigned", since=since[taker.name]):
        for p in e.parts("added"):
            assert p in revoked and revoked[p] <= e.t, (p, revoked)


def _consumed_to_the_end(
    members: list[ConsumerProcess], total: int
) -> dict[tuple[str, int], int] | None:
    """Each partition's end offset once all ``total`` records were seen and every member has
    read its own partitions to the end (a partition's records may have been read by an
    earlier owner too: the first member owned all 12 for a moment)."""
    records = [r for m in members for r in m.records()]
    if len({k for *_, k in records}) < total:
        return None
    ends: dict[tuple[str, int], int] = {}
    for topic, p, offset, _k in records:
        ends[(topic, p)] = max(ends.get((topic, p), 0), offset + 1)
    for m in members:
        read = {(t, p): o + 1 for t, p, o, _k in m.records()}
        if any(read.get(tp, 0) < ends.get(tp, 0) for tp in m.owned()):
            return None
    return ends


def _group(client: str, server: Server, group_id: str, log_dir: Path) -> ConsumerGroup:
    return ConsumerGroup(
        client,
        server.bootstrap,
        group_id,
        [TOPIC],
        log_dir,
        assignor="uniform",
        group_protocol="consumer",
        report_records=True,
    )


def _share_consume_commit(
    group: ConsumerGroup, server: Server, second: str, records: int
) -> tuple[ConsumerProcess, ConsumerProcess]:
    """Two members (the second of client ``second``) split the 12 partitions 6/6, read the
    ``records`` produced so far and commit where they are: the group's offsets are then
    the partitions' ends."""
    a = group.spawn()
    b = group.spawn(second)
    wait_owned_exactly_once([a, b], ALL, [6, 6], JOIN_TIMEOUT_S, "a, b own 6 each")
    ends = wait_until(
        lambda: _consumed_to_the_end([a, b], records),
        JOIN_TIMEOUT_S,
        f"{records} records",
        group.diagnostics,
    )
    a.commit()
    b.commit()
    assert committed_offsets(server.bootstrap, group.defaults.group) == ends
    return a, b


@pytest.mark.parametrize("clients", CLIENTS)
def test_consumer_protocol_group(server: Server, tmp_path: Path, clients: tuple[str, str]) -> None:
    first, second = clients
    produce(server.bootstrap, TOPIC, keyed_records(0, 240))
    with _group(first, server, f"kip848-{first}-{second}", tmp_path) as group:
        a, b = _share_consume_commit(group, server, second, 240)

        # -- a leaves (epoch -1): b gets a's partitions, nobody else had them
        a.close()
        wait_owned_exactly_once([b], ALL, [12], REBALANCE_TIMEOUT_S, "b owns 12 after a left")

        # -- c joins: b revokes 6, and c gets each only after b let go of it
        marks = {b.name: b.mark()}
        c = group.spawn()
        marks[c.name] = 0
        wait_owned_exactly_once([b, c], ALL, [6, 6], REBALANCE_TIMEOUT_S, "b, c own 6 each")
        _revoked_before_assigned(b, c, marks)

        # -- c crashes: b gets them back once c's session has expired
        killed_at = time.monotonic()
        c.kill()
        wait_owned_exactly_once(
            [b], ALL, [12], SESSION_MS / 1000 + REBALANCE_TIMEOUT_S, "b owns 12 after c's session"
        )
        took_over = b.events("assigned")[-1].t
        assert took_over - killed_at >= SESSION_MS / 2000, took_over - killed_at


@pytest.mark.parametrize("clients", CLIENTS)
def test_static_member_restart(server: Server, tmp_path: Path, clients: tuple[str, str]) -> None:
    """KIP-848 static membership: a static member that closes leaves with epoch -2 (its
    partitions stay reserved for its instance id until the session expires); the same
    instance id back within the session gets exactly those partitions, and nobody else
    sees a revocation or an assignment."""
    first, second = clients
    with ConsumerGroup(
        first,
        server.bootstrap,
        f"kip848-static-{first}-{second}",
        [TOPIC],
        tmp_path,
        assignor="uniform",
        group_protocol="consumer",
    ) as group:
        members = [
            group.spawn(instance_id="instance-0"),
            group.spawn(second, instance_id="instance-1"),
            group.spawn(instance_id="instance-2"),
        ]
        wait_owned_exactly_once(members, ALL, [4, 4, 4], JOIN_TIMEOUT_S, "3 static own 12")
        wait_until(
            lambda: scenarios.quiet(members, 1.0), REBALANCE_TIMEOUT_S, "the group to settle"
        )
        a, b, c = members
        marks = {m.name: m.mark() for m in (a, b)}
        c_owned = c.owned()

        c.close()  # a static member's close is a -2 leave: it keeps its place
        c2 = group.spawn(instance_id="instance-2")
        wait_until(
            lambda: c2.owned() == c_owned,
            REBALANCE_TIMEOUT_S,
            "the restarted static member to get its partitions back",
            group.diagnostics,
        )
        # quiet for longer than the session: the closed incarnation does not expire into a
        # reassignment either
        wait_until(
            lambda: scenarios.quiet([a, b, c2], SESSION_MS / 1000 + 1.0),
            SESSION_MS / 1000 + 15,
            "a quiet period after the restart",
        )
        for m in (a, b):
            assert not m.events("assigned", "revoked", "lost", since=marks[m.name]), m.events()
        assert c2.owned() == c_owned


@pytest.mark.parametrize("clients", CLIENTS)
def test_group_survives_server_restart(
    serve_factory: Callable[..., Server], tmp_path: Path, clients: tuple[str, str]
) -> None:
    """A KIP-848 group on ``serve --data-dir`` outlives a restart of the server (shorter
    than the session): its members keep their partitions and epochs (no revocation, no
    assignment, no lost partitions, no fatal error such as GROUP_ID_NOT_FOUND), and the
    commits made before the restart, and after it with the members' epochs, stand."""
    first, second = clients
    server = serve_factory(
        *scenarios.topic_flags(*FAST_GROUP_FLAGS, *KIP848_FLAGS, "--data-dir", str(tmp_path / "d"))
    )
    group_id = f"kip848-restart-{first}-{second}"
    produce(server.bootstrap, TOPIC, keyed_records(0, 120))
    with _group(first, server, group_id, tmp_path) as group:
        a, b = _share_consume_commit(group, server, second, 120)
        ends = committed_offsets(server.bootstrap, group_id)
        marks = {m.name: m.mark() for m in (a, b)}
        owned = {m.name: m.owned() for m in (a, b)}

        server.restart()  # same port, same data directory
        assert committed_offsets(server.bootstrap, group_id) == ends
        produce(server.bootstrap, TOPIC, keyed_records(120, 180))
        ends = wait_until(
            lambda: _consumed_to_the_end([a, b], 180),
            JOIN_TIMEOUT_S,
            "60 more records",
            group.diagnostics,
        )
        a.commit()  # with the epoch the member had before the restart
        b.commit()
        assert committed_offsets(server.bootstrap, group_id) == ends
        # and for longer than a session nothing moves
        time.sleep(SESSION_MS / 1000 + 1.0)
        for m in (a, b):
            assert not m.events("assigned", "revoked", "lost", "error", since=marks[m.name]), (
                m.events()
            )
            assert m.owned() == owned[m.name]
