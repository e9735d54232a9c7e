"""pytest-benchmark: the GroupCoordinator alone (no sockets, no clients).

- ``test_bench_rebalance``: a Stable group of N members rebalances: every member sends
  JoinGroup (the leader first), then every member sends SyncGroup (the leader last, with an
  assignment computed beforehand). Time per full rebalance, request objects built outside
  the timed part.
- ``test_bench_heartbeats``: M members in G groups, all Stable, each sends one Heartbeat
  per round; heartbeats/s through ``GroupCoordinator.handle``. Run with the Rust
  ``MemberExpiry`` (what the coordinator uses) and, for the ratio, with the pure-Python
  reference table swapped in.

Sizes: full (N=1000; M=100 000 in G=10 000 groups) with ``--benchmark-only`` or
``GROUPCOORD_BENCH_SCALE=full`` (or ``all``); otherwise a smoke size (N=50; M=2 000 in
G=200 groups) so that ``--benchmark-disable`` runs stay fast.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest

import groupcoord.coordinator.rebalance as rebalance_module
from groupcoord import RangeAssignor, Subscription
from groupcoord._core import MemberExpiry as RustMemberExpiry
from groupcoord.coordinator import (
    GroupCoordinator,
    GroupState,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    SequentialMemberIds,
    SyncGroupRequest,
    SyncShell,
)
from groupcoord.protocol import encode_subscription
from groupcoord.reference.expiry import MemberExpiry as ReferenceMemberExpiry

SESSION_MS = 1_800_000
REBALANCE_MS = 300_000
CONFIG = {"group.initial.rebalance.delay.ms": 100}


def _full(config: pytest.Config) -> bool:
    scale = os.environ.get("GROUPCOORD_BENCH_SCALE", "").lower()
    if scale:
        return scale in ("full", "all")
    return bool(config.getoption("benchmark_only", default=False))


def _join(group: str, member_id: str, client: str, metadata: bytes, corr: int) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=7,
        correlation=corr,
        group_id=group,
        member_id=member_id,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocol_type="consumer",
        protocols=(("range", metadata),),
        client_id=client,
    )


def _sync(
    group: str, member_id: str, generation: int, assignments: tuple[tuple[str, bytes], ...]
) -> SyncGroupRequest:
    return SyncGroupRequest(
        version=5,
        correlation=member_id,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        protocol_type="consumer",
        protocol_name="range",
        assignments=assignments,
    )


def _form_groups(
    shell: SyncShell, groups: list[str], n: int, metadata: bytes, now: int
) -> tuple[dict[str, tuple[list[str], str, int]], int]:
    """Bring ``n`` members into each of ``groups``, all Stable, in one join phase; return
    {group: (member ids, leader, generation)} and the time it took (virtual)."""
    out: list[Any] = []
    group_of: dict[str, str] = {}
    for group in groups:
        for i in range(n):
            first = shell.handle(_join(group, "", f"c{i}", metadata, i), now)
            member_id = first[0].member_id  # MEMBER_ID_REQUIRED
            group_of[member_id] = group
            out += shell.handle(_join(group, member_id, f"c{i}", metadata, i), now)
    while any(
        shell.coordinator.snapshot(g).state is GroupState.PREPARING_REBALANCE  # type: ignore[union-attr]
        for g in groups
    ):
        now = shell.next_deadline() or now  # the initial delay ends (once extended)
        out += shell.tick(now)
    by_group: dict[str, list[JoinGroupResponse]] = {g: [] for g in groups}
    for r in out:
        if isinstance(r, JoinGroupResponse) and r.error is None:
            by_group[group_of[r.member_id]].append(r)
    formed: dict[str, tuple[list[str], str, int]] = {}
    for group, joins in by_group.items():
        assert len(joins) == n, (len(joins), n)
        leader, generation = joins[0].leader, joins[0].generation_id
        members = [r.member_id for r in joins]
        for member_id in members:
            if member_id != leader:
                shell.handle(_sync(group, member_id, generation, ()), now)
        shell.handle(_sync(group, leader, generation, tuple((m, b"") for m in members)), now)
        snap = shell.coordinator.snapshot(group)
        assert snap is not None and snap.state is GroupState.STABLE
        formed[group] = (members, leader, generation)
    return formed, now


# ---------------------------------------------------------------------------- rebalance


def test_bench_rebalance(benchmark: Any, request: pytest.FixtureRequest) -> None:
    n = 1000 if _full(request.config) else 50
    topics = [f"topic-{i}" for i in range(10)]
    metadata = encode_subscription(Subscription(topics))
    shell = SyncShell(None, CONFIG, member_id_factory=SequentialMemberIds())
    formed, now = _form_groups(shell, ["big"], n, metadata, 0)
    members, leader, generation = formed["big"]
    joins = [_join("big", leader, "leader", metadata, -1)] + [
        _join("big", m, m, metadata, i) for i, m in enumerate(members) if m != leader
    ]
    # The leader's assignment, computed once by the real assignor (the member ids do not
    # change between rounds).
    assignment = tuple(
        RangeAssignor()
        .assign_encoded({t: 64 for t in topics}, dict.fromkeys(members, metadata))
        .items()
    )
    state = {"generation": generation, "now": now}

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        gen = state["generation"] + 1
        syncs = [_sync("big", m, gen, ()) for m in members if m != leader]
        syncs.append(_sync("big", leader, gen, assignment))
        state["generation"] = gen
        state["now"] += 1
        return (syncs, state["now"]), {}

    def rebalance(syncs: list[SyncGroupRequest], now: int) -> int:
        released = 0
        for req in joins:
            released += len(shell.handle(req, now))
        for req in syncs:
            released += len(shell.handle(req, now))
        return released

    released = benchmark.pedantic(rebalance, setup=setup, rounds=5 if n > 100 else 2)
    assert released == 2 * n  # every JoinGroup and SyncGroup answered
    snap = shell.coordinator.snapshot("big")
    assert snap is not None and snap.state is GroupState.STABLE
    assert snap.generation_id == state["generation"]
    benchmark.extra_info["members"] = n


# ---------------------------------------------------------------------------- heartbeats


@pytest.fixture(params=["rust", "reference"])
def expiry_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    backend: str = request.param
    table = RustMemberExpiry if backend == "rust" else ReferenceMemberExpiry
    monkeypatch.setattr(rebalance_module, "MemberExpiry", table)
    return backend


def _heartbeat_cluster(
    groups: int, per_group: int
) -> tuple[GroupCoordinator, list[HeartbeatRequest], int]:
    metadata = encode_subscription(Subscription(["t"]))
    shell = SyncShell(None, CONFIG, member_id_factory=SequentialMemberIds())
    beats: list[HeartbeatRequest] = []
    formed, now = _form_groups(shell, [f"group-{g}" for g in range(groups)], per_group, metadata, 0)
    for group, (members, _, generation) in formed.items():
        beats += [
            HeartbeatRequest(
                version=4,
                correlation=i,
                group_id=group,
                generation_id=generation,
                member_id=m,
            )
            for i, m in enumerate(members)
        ]
    return shell.coordinator, beats, now


def _rounds(start: int) -> Iterator[int]:
    now = start
    while True:
        now += 1000
        yield now


def test_bench_heartbeats(
    benchmark: Any, request: pytest.FixtureRequest, expiry_backend: str
) -> None:
    groups, per_group = (10_000, 10) if _full(request.config) else (200, 10)
    t0 = time.perf_counter()
    coord, beats, now = _heartbeat_cluster(groups, per_group)
    setup_s = time.perf_counter() - t0
    clock = _rounds(now)

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        return (next(clock),), {}

    def round_of_heartbeats(now: int) -> int:
        handle = coord.handle
        errors = 0
        for req in beats:
            if handle(req, now).responses[0].error is not None:
                errors += 1
        return errors

    errors = benchmark.pedantic(round_of_heartbeats, setup=setup, rounds=5)
    assert errors == 0
    if getattr(benchmark, "stats", None) is not None:
        mean = benchmark.stats.stats.mean
        benchmark.extra_info["heartbeats_per_s"] = round(len(beats) / mean)
    benchmark.extra_info["members"] = len(beats)
    benchmark.extra_info["groups"] = groups
    benchmark.extra_info["backend"] = expiry_backend
    benchmark.extra_info["setup_s"] = round(setup_s, 2)
