"""Log stores: what is written comes back after a reopen, the SQLite file is shared with the
offset store, and every acknowledged append survives a SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from log_append_child import batch_for

from groupcoord.broker.log import TopicLog
from groupcoord.coordinator import OffsetAndMetadata, SqliteOffsetStore
from groupcoord.storage.log_store import (
    BatchMetadata,
    LogStore,
    MemoryLogStore,
    ProducerEntry,
    SqliteLogStore,
    StoredBatch,
    StoreError,
    TopicRecord,
)
from groupcoord.types import TopicPartition
from log_batches import build_batch, read_records

HERE = Path(__file__).parent


@pytest.fixture(params=["memory", "sqlite"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path):
    """``reopen()`` gives the store again as a restarted server would see it."""
    memory = MemoryLogStore()
    opened: list[SqliteLogStore] = []

    def factory() -> LogStore:
        if request.param == "memory":
            return memory
        for s in opened:
            s.close()
        opened.append(SqliteLogStore(tmp_path / "groupcoord.db"))
        return opened[-1]

    yield factory
    for s in opened:
        s.close()


def _batch(topic: str, partition: int, base: int, data: bytes) -> StoredBatch:
    return StoredBatch(
        topic=topic,
        partition=partition,
        base_offset=base,
        last_offset=base + 1,
        max_timestamp=base * 10,
        data=data,
    )


def test_everything_written_is_loaded_again(reopen) -> None:
    store = reopen()
    assert store.load().topics == {}
    tid = uuid.uuid4()
    store.create_topic(TopicRecord(name="t", topic_id=tid, partitions=2))
    store.create_topic(TopicRecord(name="gone", topic_id=uuid.uuid4(), partitions=1))
    entry = ProducerEntry(
        producer_id=3,
        producer_epoch=1,
        batches=(
            BatchMetadata(first_seq=0, last_seq=1, last_offset=1, offset_delta=1, max_timestamp=5),
        ),
    )
    store.append(_batch("t", 1, 0, b"\x00one"), entry)
    store.append(_batch("t", 1, 2, b"\x01two"), None)
    store.append(_batch("gone", 0, 0, b"x"), entry)
    store.delete_topic("gone")
    pids = [store.allocate_producer_id() for _ in range(3)]
    assert pids == sorted(set(pids))

    loaded = reopen().load()
    assert loaded.topics == {"t": TopicRecord(name="t", topic_id=tid, partitions=2)}
    assert loaded.batches[("t", 1)] == [
        _batch("t", 1, 0, b"\x00one"),
        _batch("t", 1, 2, b"\x01two"),
    ]
    assert loaded.batches[("t", 0)] == []
    assert ("gone", 0) not in loaded.batches
    assert loaded.producers[("t", 1)] == {3: entry}
    assert loaded.producers.get(("gone", 0), {}) == {}
    assert loaded.next_producer_id == pids[-1] + 1
    assert reopen().allocate_producer_id() == pids[-1] + 1


def test_topic_log_restart_restores_topics_offsets_and_producers(reopen) -> None:
    log = TopicLog(reopen())
    info = log.create_topic("t", 3)
    sent = [build_batch([(b"k", f"v{i}".encode())]) for i in range(4)]
    for i, batch in enumerate(sent):
        log.append("t", i % 3, batch)
    idem = build_batch([(None, b"i")], producer_id=9, producer_epoch=2, base_sequence=0)
    log.append("t", 2, idem)
    before = [log.read("t", p, 0, 1 << 20) for p in range(3)]

    again = TopicLog(reopen())
    assert again.topics() == {"t": info}
    assert [again.read("t", p, 0, 1 << 20) for p in range(3)] == before
    assert again.append("t", 2, idem).duplicate
    assert again.append("t", 0, sent[0]).base_offset == 2
    assert [r.value for r in read_records(again.read("t", 0, 0, 1 << 20).records)] == [
        b"v0",
        b"v3",
        b"v0",
    ]


def test_closed_stores_refuse_work(reopen) -> None:
    store = reopen()
    store.close()
    with pytest.raises(StoreError):
        store.load()
    with pytest.raises(StoreError):
        store.allocate_producer_id()


def test_memory_store_snapshot_is_a_copy() -> None:
    store = MemoryLogStore()
    store.create_topic(TopicRecord(name="t", topic_id=uuid.uuid4(), partitions=1))
    snap = store.snapshot()
    store.append(_batch("t", 0, 0, b"x"), None)
    assert snap.batches[("t", 0)] == [] and store.load().batches[("t", 0)] != []


def test_sqlite_log_shares_the_file_with_the_offset_store(tmp_path: Path) -> None:
    db = tmp_path / "groupcoord.db"
    offsets = SqliteOffsetStore(db)
    log_store = SqliteLogStore(db)
    log = TopicLog(log_store)
    log.create_topic("t", 1)
    log.append("t", 0, build_batch([(None, b"x")]))
    offsets.commit_offsets("g", {TopicPartition("t", 0): OffsetAndMetadata(committed_offset=1)})
    log.close()
    offsets.close()

    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"log_topics", "log_batches", "log_producers", "log_meta", "offsets"} <= tables

    offsets = SqliteOffsetStore(db)
    log = TopicLog(SqliteLogStore(db))
    try:
        assert offsets.load().offsets["g"][TopicPartition("t", 0)].committed_offset == 1
        assert [r.value for r in read_records(log.read("t", 0, 0, 100).records)] == [b"x"]
    finally:
        log.close()
        offsets.close()


def test_sqlite_store_refuses_a_newer_schema(tmp_path: Path) -> None:
    db = tmp_path / "groupcoord.db"
    SqliteLogStore(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE log_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 99"):
        SqliteLogStore(db)


def test_sqlite_store_reports_unopenable_paths(tmp_path: Path) -> None:
    with pytest.raises(StoreError):
        SqliteLogStore(tmp_path / "no" / "such" / "dir" / "g.db")


def test_a_failed_append_leaves_the_log_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "groupcoord.db"
    log = TopicLog(SqliteLogStore(db, busy_timeout_s=0.05))
    log.create_topic("t", 1)
    blocker = sqlite3.connect(db, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    try:
        with pytest.raises(StoreError):
            log.append("t", 0, build_batch([(None, b"x")]))
        assert log.end_offset("t", 0) == 0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert log.append("t", 0, build_batch([(None, b"y")])).base_offset == 0
    log.close()


# ---------------------------------------------------------------------------- SIGKILL


def _child_path() -> str:
    """The child's PYTHONPATH: ours, plus tests/ (log_batches.py lives one level up)."""
    inherited = os.environ.get("PYTHONPATH")
    return os.pathsep.join([str(HERE.parent), *([inherited] if inherited else [])])


def _run_child_and_kill(db: Path, run: int, kill_after: int, jitter_s: float) -> list[str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "log_append_child.py"), str(db), str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=_child_path()),
        cwd=HERE,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        while len(lines) < kill_after and time.monotonic() < deadline:
            raw = proc.stdout.readline()
            if not raw:
                break
            lines.append(raw.decode())
        time.sleep(jitter_s)  # the kill lands anywhere in an append
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        rest, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err.decode()
    tail = rest.decode().split("\n")
    lines += [line + "\n" for line in tail[:-1]]  # a torn last line was not acknowledged
    assert len(lines) > 1, err.decode()
    return [line.rstrip("\n") for line in lines]


@pytest.mark.parametrize("seed", [1, 2])
def test_every_acknowledged_append_survives_sigkill(tmp_path: Path, seed: int) -> None:
    db = tmp_path / "groupcoord.db"
    rng = random.Random(seed)
    acked: dict[int, dict[int, str]] = {0: {}, 1: {}}
    producers = []
    last_idem: tuple[int, int, int, int] | None = None  # run, i, sequence, offset
    for run in range(2):  # kill, restart on the same file, kill again
        lines = _run_child_and_kill(db, run, rng.randrange(5, 200), rng.random() / 50)
        producers.append(int(lines[0].split()[1]))
        for i, line in enumerate(lines[1:]):
            partition, offset, value, seq = line.split()
            acked[int(partition)][int(offset)] = value
            if int(seq) >= 0:
                last_idem = (run, i, int(seq), int(offset))
    assert producers[1] > producers[0]  # the producer-id counter survived the kill

    log = TopicLog(SqliteLogStore(db))
    try:
        for partition, by_offset in acked.items():
            stored = {
                r.offset: r.value.decode()
                for r in read_records(log.read("t", partition, 0, 1 << 30).records)
                if r.value is not None
            }
            # Offsets stay dense across the crash, and every acknowledged record is there.
            assert sorted(stored) == list(range(log.end_offset("t", partition)))
            for offset, value in by_offset.items():
                assert stored[offset] == value
        # The retry of the last acknowledged idempotent batch is recognised: its producer
        # state was committed in the same transaction as the batch.
        assert last_idem is not None and last_idem[0] == 1
        run, i, seq, offset = last_idem
        _, batch = batch_for(run, i, seq, producers[run])
        again = log.append("t", 1, batch)
        assert (again.duplicate, again.base_offset) == (True, offset)
    finally:
        log.close()
