"""pytest-benchmark: KIP-848 ConsumerGroupHeartbeat through the coordinator alone.

One consumer group of N members on one topic of N partitions, converged (every member
joined, reconciled and acknowledged its target: the group is stable at one epoch). The
timed part is one round of steady heartbeats: every member sends ConsumerGroupHeartbeat
with its current epoch and nothing changed (the fields a Java or librdkafka consumer
omits when unchanged are omitted), through ``SyncShell.handle``; requests are built
outside the timing. Reported as µs per heartbeat (``extra_info``). Beside it, the classic
Heartbeat of a Stable group of the same size through the same coordinator, for the ratio.

Sizes: N = 10,000 with ``--benchmark-only`` or ``GROUPCOORD_BENCH_SCALE=full`` (or
``all``); otherwise N = 200 so that ``--benchmark-disable`` runs stay fast.
"""

from __future__ import annotations

import itertools
import os
import uuid
from typing import Any

import pytest

from groupcoord.coordinator import (
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncShell,
)
from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.coordinator.topics import TopicMetadata

TOPIC = "orders"
TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_DNS, TOPIC)
CONFIG = {
    "group.consumer.session.timeout.ms": 45_000,
    "group.consumer.heartbeat.interval.ms": 5_000,
    "group.initial.rebalance.delay.ms": 0,
}


def _size(config: pytest.Config) -> int:
    scale = os.environ.get("GROUPCOORD_BENCH_SCALE", "").lower()
    full = scale in ("full", "all") if scale else config.getoption("benchmark_only", False)
    return 10_000 if full else 200


def _consumer_group(n: int) -> tuple[SyncShell, list[tuple[str, int]]]:
    """A converged group of ``n`` members: (member id, epoch) of each."""
    shell = SyncShell(None, CONFIG)
    shell.update_topics([TopicMetadata(name=TOPIC, topic_id=TOPIC_ID, partitions=n)], 0)
    corr = itertools.count(1)
    owned: dict[str, tuple[TopicPartitions, ...]] = {}
    epochs: dict[str, int] = {}

    def beat(member: str, **fields: Any) -> ConsumerGroupHeartbeatResponse:
        req = ConsumerGroupHeartbeatRequest(
            version=1, correlation=next(corr), group_id="g", member_id=member, **fields
        )
        (resp,) = shell.handle(req, 0)
        assert isinstance(resp, ConsumerGroupHeartbeatResponse) and resp.error is None, resp
        epochs[member] = resp.member_epoch
        if resp.assignment is not None:
            owned[member] = resp.assignment
        return resp

    members = [str(uuid.UUID(int=i + 1)) for i in range(n)]
    for m in members:
        beat(
            m,
            member_epoch=0,
            rebalance_timeout_ms=300_000,
            subscribed_topic_names=(TOPIC,),
            topic_partitions=(),
        )
    # reconcile: heartbeat with what each holds until nothing changes
    for _ in range(5):
        before = dict(epochs), dict(owned)
        for m in members:
            beat(m, member_epoch=epochs[m], topic_partitions=owned.get(m, ()))
        if (dict(epochs), dict(owned)) == before:
            break
    group_epochs = set(epochs.values())
    assert len(group_epochs) == 1, "the group did not converge"
    assert sum(len(tp.partitions) for a in owned.values() for tp in a) == n
    return shell, [(m, epochs[m]) for m in members]


def _classic_group(n: int) -> tuple[SyncShell, list[HeartbeatRequest]]:
    """A Stable classic group of ``n`` members and one heartbeat request per member."""
    # every member joins within the initial delay: one join phase for all of them
    shell = SyncShell(None, {"group.initial.rebalance.delay.ms": 3_000})
    corr = itertools.count(1)
    joins = []
    for i in range(n):
        joins.append(
            JoinGroupRequest(
                version=3,  # before KIP-394 (v4): no MEMBER_ID_REQUIRED round trip
                correlation=next(corr),
                group_id="c",
                member_id="",
                session_timeout_ms=45_000,
                rebalance_timeout_ms=300_000,
                protocol_type="consumer",
                protocols=(("range", b""),),
                client_id=f"c{i}",
            )
        )
    out = []
    for j in joins:
        out += shell.handle(j, 0)
    now = 0
    while not out:  # the join phase ends when the initial delay runs out
        deadline = shell.coordinator.next_deadline()
        assert deadline is not None
        now = deadline
        out += shell.tick(now)
    joined = [r for r in out if isinstance(r, JoinGroupResponse)]
    assert len(joined) == n and all(r.error is None for r in joined), joined[:1]
    generation, leader = joined[0].generation_id, joined[0].leader
    for r in sorted(joined, key=lambda r: r.member_id == leader):
        shell.handle(
            SyncGroupRequest(
                version=3,
                correlation=next(corr),
                group_id="c",
                generation_id=generation,
                member_id=r.member_id,
                assignments=tuple((x.member_id, b"") for x in joined)
                if r.member_id == leader
                else (),
            ),
            now,
        )
    assert shell.coordinator.group_state("c") is GroupState.STABLE
    return shell, [
        HeartbeatRequest(
            version=4,
            correlation=next(corr),
            group_id="c",
            generation_id=generation,
            member_id=r.member_id,
        )
        for r in joined
    ]


@pytest.fixture(scope="module")
def size(request: pytest.FixtureRequest) -> int:
    return _size(request.config)


def test_bench_consumer_group_heartbeats(benchmark: Any, size: int) -> None:
    shell, members = _consumer_group(size)
    requests = [
        ConsumerGroupHeartbeatRequest(
            version=1, correlation=i, group_id="g", member_id=m, member_epoch=e
        )
        for i, (m, e) in enumerate(members)
    ]
    clock = itertools.count(1_000, 1_000)

    def round_() -> None:
        now = next(clock)
        handle = shell.handle
        for r in requests:
            handle(r, now)

    benchmark.pedantic(round_, rounds=5, iterations=1, warmup_rounds=1)
    (last,) = shell.handle(requests[-1], next(clock))
    assert isinstance(last, ConsumerGroupHeartbeatResponse) and last.error is None
    assert last.assignment is None  # nothing changed: the steady state was measured
    _report(benchmark, size)


def test_bench_classic_heartbeats_same_size(benchmark: Any, size: int) -> None:
    shell, requests = _classic_group(size)
    clock = itertools.count(now_after_sync(shell) + 1_000, 1_000)

    def round_() -> None:
        now = next(clock)
        handle = shell.handle
        for r in requests:
            handle(r, now)

    benchmark.pedantic(round_, rounds=5, iterations=1, warmup_rounds=1)
    assert shell.coordinator.group_state("c") is GroupState.STABLE
    _report(benchmark, size)


def now_after_sync(shell: SyncShell) -> int:
    return shell.coordinator.now_ms


def _report(benchmark: Any, size: int) -> None:
    benchmark.extra_info["members"] = size
    if benchmark.stats is not None:  # (None with --benchmark-disable)
        us = benchmark.stats.stats.min * 1e6 / size
        benchmark.extra_info["us_per_heartbeat"] = us
        print(f"\n{benchmark.name}: {size:,} members, {us:.2f} µs per heartbeat (best round)")
