"""Persistence of the topic log: topics, record batches, idempotent-producer state.

:class:`~groupcoord.broker.log.TopicLog` keeps the log in memory and writes through to a
:class:`LogStore`; every write method returns only once the write is durable, so a Produce
answered after :meth:`LogStore.append` returned is on disk.

:class:`SqliteLogStore` shares one database file with the offset store
(``<data-dir>/groupcoord.db``) on its own connection and its own ``log_`` tables (WAL,
``synchronous=FULL``)::

    log_meta(key PRIMARY KEY, value)              schema_version, next_producer_id
    log_topics(name PRIMARY KEY, topic_id, partitions)
    log_batches(topic, partition, base_offset, last_offset, max_timestamp, data BLOB,
                PRIMARY KEY (topic, partition, base_offset))
    log_producers(topic, partition, producer_id, producer_epoch, batches,
                  PRIMARY KEY (topic, partition, producer_id))

``log_producers.batches`` is JSON: the metadata of the producer's last five batches on the
partition, ``[[first_seq, last_seq, last_offset, offset_delta, max_timestamp], ...]``.
"""

from __future__ import annotations

import copy
import json
import sqlite3
import uuid
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from groupcoord.coordinator.offsets import StoreError
from groupcoord.storage.sqlite import SqliteDatabase, check_schema_version

__all__ = [
    "LOG_SCHEMA_VERSION",
    "BatchMetadata",
    "LoadedLog",
    "LogStore",
    "MemoryLogStore",
    "ProducerEntry",
    "SqliteLogStore",
    "StoreError",
    "StoredBatch",
    "TopicRecord",
]

LOG_SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredBatch:
    """One record batch as the log holds it (offsets already assigned)."""

    topic: str
    partition: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    data: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchMetadata:
    """What Kafka's ProducerStateManager keeps of a producer's recent batch (dedup key)."""

    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    max_timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerEntry:
    """A producer's state on one partition: its epoch and its last (up to 5) batches."""

    producer_id: int
    producer_epoch: int
    batches: tuple[BatchMetadata, ...]

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(slots=True)
class LoadedLog:
    """Everything a store holds, as a restarted TopicLog starts from."""

    topics: dict[str, TopicRecord] = field(default_factory=dict)
    #: (topic, partition) -> batches in offset order
    batches: dict[tuple[str, int], list[StoredBatch]] = field(default_factory=dict)
    #: (topic, partition) -> producer id -> entry
    producers: dict[tuple[str, int], dict[int, ProducerEntry]] = field(default_factory=dict)
    next_producer_id: int = 0


@runtime_checkable
class LogStore(Protocol):
    """Durable storage behind a TopicLog; every method is durable when it returns."""

    def load(self) -> LoadedLog: ...

    def create_topic(self, topic: TopicRecord) -> None: ...

    def add_partitions(self, name: str, partitions: int) -> None:
        """Raise the topic's partition count to ``partitions`` (the caller checked that it
        grows); the new partitions start empty."""

    def delete_topic(self, name: str) -> None:
        """Drop the topic, its batches and its producer state."""

    def append(self, batch: StoredBatch, producer: ProducerEntry | None) -> None:
        """Store ``batch`` and (in the same transaction) the producer's updated entry."""

    def allocate_producer_id(self) -> int:
        """A producer id never handed out before by this store."""

    def close(self) -> None: ...


class MemoryLogStore:
    """A LogStore in process memory (``groupcoord serve --memory``, tests).

    A TopicLog built again on the same instance sees everything the earlier one wrote, which
    is how tests model a restart.
    """

    __slots__ = ("_closed", "_state")

    def __init__(self) -> None:
        self._state = LoadedLog()
        self._closed = False

    def _live(self) -> LoadedLog:
        if self._closed:
            raise StoreError("memory log store is closed")
        return self._state

    def load(self) -> LoadedLog:
        state = self._live()
        return LoadedLog(
            topics=dict(state.topics),
            batches={k: list(v) for k, v in state.batches.items()},
            producers={k: dict(v) for k, v in state.producers.items()},
            next_producer_id=state.next_producer_id,
        )

    def create_topic(self, topic: TopicRecord) -> None:
        state = self._live()
        state.topics[topic.name] = topic
        for p in range(topic.partitions):
            state.batches[(topic.name, p)] = []
            state.producers[(topic.name, p)] = {}

    def add_partitions(self, name: str, partitions: int) -> None:
        state = self._live()
        record = state.topics[name]
        for p in range(record.partitions, partitions):
            state.batches[(name, p)] = []
            state.producers[(name, p)] = {}
        state.topics[name] = TopicRecord(name=name, topic_id=record.topic_id, partitions=partitions)

    def delete_topic(self, name: str) -> None:
        state = self._live()
        record = state.topics.pop(name, None)
        if record is not None:
            for p in range(record.partitions):
                state.batches.pop((name, p), None)
                state.producers.pop((name, p), None)

    def append(self, batch: StoredBatch, producer: ProducerEntry | None) -> None:
        state = self._live()
        key = (batch.topic, batch.partition)
        state.batches.setdefault(key, []).append(batch)
        if producer is not None:
            state.producers.setdefault(key, {})[producer.producer_id] = producer

    def allocate_producer_id(self) -> int:
        state = self._live()
        pid = state.next_producer_id
        state.next_producer_id += 1
        return pid

    def close(self) -> None:
        self._closed = True

    def snapshot(self) -> LoadedLog:
        """A deep copy of the contents (for tests comparing before/after)."""
        return copy.deepcopy(self._state)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS log_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS log_topics (
    name TEXT PRIMARY KEY,
    topic_id TEXT NOT NULL UNIQUE,
    partitions INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS log_batches (
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    base_offset INTEGER NOT NULL,
    last_offset INTEGER NOT NULL,
    max_timestamp INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (topic, partition, base_offset)
);
CREATE TABLE IF NOT EXISTS log_producers (
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    producer_id INTEGER NOT NULL,
    producer_epoch INTEGER NOT NULL,
    batches TEXT NOT NULL,
    PRIMARY KEY (topic, partition, producer_id)
);
"""


def _encode_batches(batches: tuple[BatchMetadata, ...]) -> str:
    return json.dumps(
        [[b.first_seq, b.last_seq, b.last_offset, b.offset_delta, b.max_timestamp] for b in batches]
    )


def _decode_batches(text: str) -> tuple[BatchMetadata, ...]:
    try:
        rows = json.loads(text)
        return tuple(
            BatchMetadata(
                first_seq=int(r[0]),
                last_seq=int(r[1]),
                last_offset=int(r[2]),
                offset_delta=int(r[3]),
                max_timestamp=int(r[4]),
            )
            for r in rows
        )
    except (ValueError, TypeError, IndexError) as e:
        raise StoreError(f"corrupt producer state in the store: {e}") from e


class SqliteLogStore(SqliteDatabase):
    """The log in a SQLite database file (WAL, ``synchronous=FULL``); one connection.

    Safe to open on the same file as :class:`~groupcoord.coordinator.SqliteOffsetStore`: the
    tables are disjoint and SQLite serialises the two connections' writes.
    """

    __slots__ = ()

    KIND = "log store"

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        check_schema_version(conn, "log_meta", LOG_SCHEMA_VERSION, f"{self.path!r} (log tables)")

    def load(self) -> LoadedLog:
        return self._read(_load)

    def create_topic(self, topic: TopicRecord) -> None:
        self._write(_create_topic, topic)

    def add_partitions(self, name: str, partitions: int) -> None:
        self._write(_add_partitions, name, partitions)

    def delete_topic(self, name: str) -> None:
        self._write(_delete_topic, name)

    def append(self, batch: StoredBatch, producer: ProducerEntry | None) -> None:
        self._write(_append, batch, producer)

    def allocate_producer_id(self) -> int:
        return self._write(_allocate_producer_id)


def _load(conn: sqlite3.Connection) -> LoadedLog:
    out = LoadedLog()
    for name, topic_id, partitions in conn.execute(
        "SELECT name, topic_id, partitions FROM log_topics ORDER BY name"
    ):
        out.topics[name] = TopicRecord(
            name=name, topic_id=uuid.UUID(topic_id), partitions=partitions
        )
        for p in range(partitions):
            out.batches[(name, p)] = []
            out.producers[(name, p)] = {}
    for topic, partition, base, last, max_ts, data in conn.execute(
        "SELECT topic, partition, base_offset, last_offset, max_timestamp, data "
        "FROM log_batches ORDER BY topic, partition, base_offset"
    ):
        out.batches.setdefault((topic, partition), []).append(
            StoredBatch(
                topic=topic,
                partition=partition,
                base_offset=base,
                last_offset=last,
                max_timestamp=max_ts,
                data=bytes(data),
            )
        )
    for topic, partition, pid, epoch, batches in conn.execute(
        "SELECT topic, partition, producer_id, producer_epoch, batches FROM log_producers"
    ):
        out.producers.setdefault((topic, partition), {})[pid] = ProducerEntry(
            producer_id=pid, producer_epoch=epoch, batches=_decode_batches(batches)
        )
    row = conn.execute("SELECT value FROM log_meta WHERE key = 'next_producer_id'").fetchone()
    out.next_producer_id = int(row[0]) if row is not None else 0
    return out


def _create_topic(conn: sqlite3.Connection, topic: TopicRecord) -> None:
    conn.execute(
        "INSERT INTO log_topics (name, topic_id, partitions) VALUES (?, ?, ?)",
        (topic.name, str(topic.topic_id), topic.partitions),
    )


def _add_partitions(conn: sqlite3.Connection, name: str, partitions: int) -> None:
    # batches and producer state are keyed by partition: new partitions need no rows
    conn.execute("UPDATE log_topics SET partitions = ? WHERE name = ?", (partitions, name))


def _delete_topic(conn: sqlite3.Connection, name: str) -> None:
    conn.execute("DELETE FROM log_batches WHERE topic = ?", (name,))
    conn.execute("DELETE FROM log_producers WHERE topic = ?", (name,))
    conn.execute("DELETE FROM log_topics WHERE name = ?", (name,))


def _append(conn: sqlite3.Connection, batch: StoredBatch, producer: ProducerEntry | None) -> None:
    conn.execute(
        "INSERT INTO log_batches (topic, partition, base_offset, last_offset, max_timestamp, "
        "data) VALUES (?, ?, ?, ?, ?, ?)",
        (
            batch.topic,
            batch.partition,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
            batch.data,
        ),
    )
    if producer is not None:
        conn.execute(
            "INSERT INTO log_producers (topic, partition, producer_id, producer_epoch, batches) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (topic, partition, producer_id) DO UPDATE SET "
            "producer_epoch = excluded.producer_epoch, batches = excluded.batches",
            (
                batch.topic,
                batch.partition,
                producer.producer_id,
                producer.producer_epoch,
                _encode_batches(producer.batches),
            ),
        )


def _allocate_producer_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM log_meta WHERE key = 'next_producer_id'").fetchone()
    pid = int(row[0]) if row is not None else 0
    conn.execute(
        "INSERT INTO log_meta (key, value) VALUES ('next_producer_id', ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (str(pid + 1),),
    )
    return pid
