"""Offset stores: restart semantics (memory and SQLite) and crash durability (SIGKILL)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from coord_harness import Harness, rebalance

from groupcoord.coordinator import (
    GroupRecord,
    GroupState,
    MemberRecord,
    MemoryOffsetStore,
    OffsetAndMetadata,
    OffsetStore,
    SqliteOffsetStore,
    StoreError,
)
from groupcoord.errors import FencedInstanceIdError, UnknownMemberIdError
from groupcoord.storage.offset_store import decode_protocols, encode_protocols
from groupcoord.types import TopicPartition

HERE = Path(__file__).parent


@pytest.fixture(params=["memory", "sqlite"])
def store_factory(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "memory":
        mem = MemoryOffsetStore()
        return lambda: mem
    return lambda: SqliteOffsetStore(tmp_path / "coord.db")


def _restart(h: Harness, store: OffsetStore, members=()) -> Harness:
    h2 = Harness(store=store, now=h.now + 1000)
    for m in members:
        m.h = h2
    return h2


def test_both_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(MemoryOffsetStore(), OffsetStore)
    with SqliteOffsetStore(tmp_path / "x.db") as s:
        assert isinstance(s, OffsetStore)


def test_restarted_coordinator_returns_committed_offsets(store_factory) -> None:
    h = Harness(store=store_factory())
    a = h.member("a")
    rebalance(h, [a])
    a.commit({("t", 0): 11, ("t", 3): 33})
    h.member("s", group_id="simple").commit(
        {("u", 1): 7}, generation_id_or_member_epoch=-1, member_id=""
    )
    h.shell.close()
    h2 = _restart(h, store_factory(), [a])
    fetched = a.fetch({"t": [0, 1, 3]})
    assert [p.committed_offset for p in fetched.topics[0].partitions] == [11, -1, 33]
    assert h2.coord.committed_offsets("simple") == {
        TopicPartition("u", 1): OffsetAndMetadata(7, -1, "", h.now, -1)
    }
    assert h2.snapshot("simple").state is GroupState.EMPTY


def test_restarted_coordinator_lets_static_members_rejoin_without_rebalance(
    store_factory,
) -> None:
    h = Harness(store=store_factory())
    a = h.member("a", instance_id="ia", join_version=9)
    b = h.member("b", instance_id="ib", join_version=9)
    rebalance(h, [a, b])
    generation, assignment_b = a.generation, b.assignment
    h.shell.close()
    h2 = _restart(h, store_factory(), [a, b])
    snap = h2.snapshot()
    assert snap.state is GroupState.STABLE and snap.generation_id == generation
    assert snap.leader_id == a.member_id
    # b restarts too: rejoins with its instance id and no member id
    b2 = h2.member("b", instance_id="ib", join_version=9)
    resp = b2.joined(b2.join())
    assert resp.error is None and resp.generation_id == generation
    assert h2.snapshot().state is GroupState.STABLE
    assert b2.synced(b2.sync()).assignment == assignment_b
    assert b.heartbeat().error is FencedInstanceIdError
    # a kept running through the coordinator restart: its member id is still valid
    assert a.heartbeat().error is None
    assert h2.snapshot().generation_id == generation


def test_restarted_coordinator_expires_members_that_do_not_come_back(store_factory) -> None:
    h = Harness(store=store_factory())
    a, b = h.member("a"), h.member("b")
    rebalance(h, [a, b])
    h.shell.close()
    h2 = _restart(h, store_factory(), [a, b])
    for _ in range(3):
        h2.advance(5000)
        a.heartbeat()
    assert [m.member_id for m in h2.snapshot().members] == [a.member_id]
    assert b.heartbeat().error is UnknownMemberIdError


def test_empty_group_generation_survives_restart(store_factory) -> None:
    h = Harness(store=store_factory())
    a = h.member("a")
    rebalance(h, [a])
    a.leave()
    assert h.snapshot().generation_id == 2
    h.shell.close()
    h2 = _restart(h, store_factory())
    snap = h2.snapshot()
    assert snap.state is GroupState.EMPTY and snap.generation_id == 2
    assert snap.protocol_type == "consumer"


def test_deleted_group_stays_deleted_after_restart(store_factory) -> None:
    from groupcoord.coordinator import DeleteGroupsRequest

    h = Harness(store=store_factory())
    s = h.member("s", group_id="simple")
    s.commit({("t", 0): 1}, generation_id_or_member_epoch=-1, member_id="")
    h.send(DeleteGroupsRequest(version=2, correlation=h.correlation(), groups_names=("simple",)))
    h.shell.close()
    h2 = _restart(h, store_factory())
    assert h2.coord.group_ids() == []


def test_sqlite_store_uses_wal_and_full_sync(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with SqliteOffsetStore(path) as s:
        conn = s._conn
        assert conn is not None
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert path.exists()


def test_sqlite_store_round_trips_records(tmp_path: Path) -> None:
    record = GroupRecord(
        group_id="g",
        state="Stable",
        generation_id=4,
        protocol_type="consumer",
        protocol_name="range",
        leader_id="m2",
        members=(
            MemberRecord("m2", None, "c", "h", 1, 2, (("range", b"\x00\x01"), ("rr", b"")), b"a"),
            MemberRecord("m1", "i", "c", "h", 3, 4, (("range", b""),), b""),
        ),
        state_timestamp_ms=99,
    )
    with SqliteOffsetStore(tmp_path / "r.db") as s:
        s.store_group(record)
        s.commit_offsets("g", {TopicPartition("t", 0): OffsetAndMetadata(5, 2, "m", 7, 8)})
    with SqliteOffsetStore(tmp_path / "r.db") as s:
        loaded = s.load()
    assert loaded.groups == {"g": record}
    assert loaded.offsets == {"g": {TopicPartition("t", 0): OffsetAndMetadata(5, 2, "m", 7, 8)}}
    protocols = (("ünïcode", b"\x00" * 70_000), ("", b""))
    assert decode_protocols(encode_protocols(protocols)) == protocols
    with pytest.raises(StoreError):
        decode_protocols(b"\x00\x05ab")


def test_sqlite_store_errors_are_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        SqliteOffsetStore(tmp_path / "missing-dir" / "x.db")
    s = SqliteOffsetStore(tmp_path / "y.db")
    s.close()
    with pytest.raises(StoreError, match="closed"):
        s.commit_offsets("g", {})
    bad = tmp_path / "old.db"
    conn = sqlite3.connect(bad)
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="schema version"):
        SqliteOffsetStore(bad)


def test_sqlite_store_failed_write_is_not_acknowledged(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    store = SqliteOffsetStore(path, busy_timeout_s=0.05)
    h = Harness(store=store)
    a = h.member("a")
    rebalance(h, [a])
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        resp = a.commit({("t", 0): 5})
        assert resp.topics[0].partitions[0].error_code == 15  # COORDINATOR_NOT_AVAILABLE
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert a.commit({("t", 0): 6}).topics[0].partitions[0].error is None
    assert h.coord.committed_offsets("g")[TopicPartition("t", 0)].committed_offset == 6


# ---------------------------------------------------------------------------- SIGKILL


def _run_child_and_kill(
    db: Path, seed: int, first: int, kill_after_lines: int, jitter_s: float
) -> list[str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "coord_commit_child.py"), str(db), str(seed), str(first)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(lines) < kill_after_lines and time.monotonic() < deadline:
            raw = proc.stdout.readline()
            if not raw:
                break
            lines.append(raw.decode())
        time.sleep(jitter_s)  # let it run on: the kill lands anywhere in a commit
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    # Everything printed before the kill was acknowledged; a torn last line was not.
    tail = rest.decode().split("\n")
    lines += [line + "\n" for line in tail[:-1]]
    assert len(lines) > 1, err.decode()
    return [line.rstrip("\n") for line in lines]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_every_acknowledged_commit_survives_sigkill(tmp_path: Path, seed: int) -> None:
    db = tmp_path / "durable.db"
    rng = random.Random(seed)
    acked: dict[tuple[str, str, int], int] = {}
    generation = None
    for run in range(2):  # kill, restart on the same file, kill again
        lines = _run_child_and_kill(
            db, seed * 10 + run, run * 10**7, rng.randrange(5, 400), rng.random() / 50
        )
        head = lines[0].split()
        assert head[0] == "member"
        if generation is None:
            generation = int(head[2])
        else:  # the static member rejoined the restored Stable group: no rebalance
            assert int(head[2]) == generation
        for line in lines[1:]:
            group, topic, partition, offset = line.split()
            key = (group, topic, int(partition))
            acked[key] = max(acked.get(key, -1), int(offset))
        with SqliteOffsetStore(db) as store:
            state = store.load()
        for (group, topic, partition), offset in acked.items():
            stored = state.offsets.get(group, {}).get(TopicPartition(topic, partition))
            assert stored is not None, (group, topic, partition)
            # later commits of the same partition have larger offsets; an unprinted one
            # may have been made durable just before the kill
            assert stored.committed_offset >= offset
        assert state.groups["members"].state == "Stable"
        assert state.groups["members"].members[0].group_instance_id == "static-1"
