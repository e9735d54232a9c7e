"""A durable :class:`~groupcoord.coordinator.offsets.OffsetStore` in one SQLite file.

WAL journal, ``synchronous=FULL``: every write is one transaction, and when a method
returns its transaction is committed and the WAL fsynced, so it survives a crash of the
process (and of the machine, as far as the disk keeps its promises). The coordinator
releases an OffsetCommit response only after :meth:`SqliteOffsetStore.commit_offsets`
returned, so every acknowledged commit is on disk.

Schema (version 1)::

    meta(key PRIMARY KEY, value)
    groups(group_id PRIMARY KEY, state, generation_id, protocol_type, protocol_name,
           leader_id, state_timestamp_ms)
    members(group_id, member_id, position, group_instance_id, client_id, client_host,
            rebalance_timeout_ms, session_timeout_ms, protocols BLOB, assignment BLOB,
            PRIMARY KEY (group_id, member_id))
    offsets(group_id, topic, partition, committed_offset, leader_epoch, metadata,
            commit_timestamp_ms, expire_timestamp_ms, PRIMARY KEY (group_id, topic, partition))

``members.protocols`` is the member's ``((name, metadata), ...)`` list, each entry a
big-endian u16 name length, the UTF-8 name, a u32 metadata length and the metadata.
"""

from __future__ import annotations

import os
import sqlite3
import struct
from collections.abc import Callable, Mapping
from types import TracebackType

from groupcoord.coordinator.offsets import (
    GroupRecord,
    MemberRecord,
    OffsetAndMetadata,
    StoredState,
    StoreError,
)
from groupcoord.coordinator.sqlite_connect import connect_durable, write_transaction
from groupcoord.types import TopicPartition

__all__ = ["SCHEMA_VERSION", "SqliteOffsetStore"]

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS groups (
    group_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    generation_id INTEGER NOT NULL,
    protocol_type TEXT,
    protocol_name TEXT,
    leader_id TEXT,
    state_timestamp_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS members (
    group_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    group_instance_id TEXT,
    client_id TEXT NOT NULL,
    client_host TEXT NOT NULL,
    rebalance_timeout_ms INTEGER NOT NULL,
    session_timeout_ms INTEGER NOT NULL,
    protocols BLOB NOT NULL,
    assignment BLOB NOT NULL,
    PRIMARY KEY (group_id, member_id)
);
CREATE TABLE IF NOT EXISTS offsets (
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch INTEGER NOT NULL,
    metadata TEXT NOT NULL,
    commit_timestamp_ms INTEGER NOT NULL,
    expire_timestamp_ms INTEGER NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
);
"""

_UPSERT_OFFSET = """
INSERT INTO offsets (group_id, topic, partition, committed_offset, leader_epoch, metadata,
                     commit_timestamp_ms, expire_timestamp_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
    committed_offset = excluded.committed_offset,
    leader_epoch = excluded.leader_epoch,
    metadata = excluded.metadata,
    commit_timestamp_ms = excluded.commit_timestamp_ms,
    expire_timestamp_ms = excluded.expire_timestamp_ms
"""

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")


def encode_protocols(protocols: tuple[tuple[str, bytes], ...]) -> bytes:
    out = bytearray()
    for name, metadata in protocols:
        raw = name.encode("utf-8", "surrogatepass")
        out += _U16.pack(len(raw))
        out += raw
        out += _U32.pack(len(metadata))
        out += metadata
    return bytes(out)


def decode_protocols(data: bytes) -> tuple[tuple[str, bytes], ...]:
    out: list[tuple[str, bytes]] = []
    pos = 0
    try:
        while pos < len(data):
            (n,) = _U16.unpack_from(data, pos)
            pos += 2
            name = data[pos : pos + n].decode("utf-8", "surrogatepass")
            pos += n
            (m,) = _U32.unpack_from(data, pos)
            pos += 4
            if pos + m > len(data):
                raise ValueError("truncated metadata")
            out.append((name, bytes(data[pos : pos + m])))
            pos += m
    except (struct.error, UnicodeDecodeError, ValueError) as e:
        raise StoreError(f"corrupt member protocols in the store: {e}") from e
    return tuple(out)


class SqliteOffsetStore:
    """Offsets and group metadata in one SQLite database file (WAL, ``synchronous=FULL``).

    One connection, used from one thread at a time (the coordinator is single-threaded).
    Usable as a context manager (closes on exit).
    """

    __slots__ = ("_conn", "path")

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        self.path = os.fspath(path)
        conn = connect_durable(self.path, busy_timeout_s)
        self._conn: sqlite3.Connection | None = conn
        try:
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            elif row[0] != str(SCHEMA_VERSION):
                raise StoreError(
                    f"{self.path!r} has schema version {row[0]}, expected {SCHEMA_VERSION}"
                )
        except sqlite3.Error as e:
            conn.close()
            self._conn = None
            raise StoreError(f"cannot initialise {self.path!r}: {e}") from e
        except StoreError:
            conn.close()
            self._conn = None
            raise

    # ------------------------------------------------------------------ helpers

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {self.path!r} is closed")
        return self._conn

    def _write(self, fn: Callable[..., None], *args: object) -> None:
        """Run ``fn(conn, *args)`` in one IMMEDIATE transaction; committed on return."""
        write_transaction(self._db(), self.path, fn, *args)

    # ------------------------------------------------------------------ OffsetStore

    def load(self) -> StoredState:
        conn = self._db()
        state = StoredState()
        try:
            members: dict[str, list[MemberRecord]] = {}
            for row in conn.execute(
                "SELECT group_id, member_id, group_instance_id, client_id, client_host, "
                "rebalance_timeout_ms, session_timeout_ms, protocols, assignment "
                "FROM members ORDER BY group_id, position"
            ):
                members.setdefault(row[0], []).append(
                    MemberRecord(
                        member_id=row[1],
                        group_instance_id=row[2],
                        client_id=row[3],
                        client_host=row[4],
                        rebalance_timeout_ms=row[5],
                        session_timeout_ms=row[6],
                        protocols=decode_protocols(row[7]),
                        assignment=bytes(row[8]),
                    )
                )
            for row in conn.execute(
                "SELECT group_id, state, generation_id, protocol_type, protocol_name, "
                "leader_id, state_timestamp_ms FROM groups ORDER BY group_id"
            ):
                state.groups[row[0]] = GroupRecord(
                    group_id=row[0],
                    state=row[1],
                    generation_id=row[2],
                    protocol_type=row[3],
                    protocol_name=row[4],
                    leader_id=row[5],
                    members=tuple(members.get(row[0], ())),
                    state_timestamp_ms=row[6],
                )
            for row in conn.execute(
                "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata, "
                "commit_timestamp_ms, expire_timestamp_ms FROM offsets "
                "ORDER BY group_id, topic, partition"
            ):
                state.offsets.setdefault(row[0], {})[TopicPartition(row[1], row[2])] = (
                    OffsetAndMetadata(
                        committed_offset=row[3],
                        leader_epoch=row[4],
                        metadata=row[5],
                        commit_timestamp_ms=row[6],
                        expire_timestamp_ms=row[7],
                    )
                )
        except sqlite3.Error as e:
            raise StoreError(f"cannot read {self.path!r}: {e}") from e
        return state

    def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        rows = [
            (
                group_id,
                tp.topic,
                tp.partition,
                o.committed_offset,
                o.leader_epoch,
                o.metadata,
                o.commit_timestamp_ms,
                o.expire_timestamp_ms,
            )
            for tp, o in offsets.items()
        ]
        self._write(_commit_offsets, rows)

    def store_group(self, record: GroupRecord) -> None:
        self._write(_store_group, record)

    def delete_group(self, group_id: str) -> None:
        self._write(_delete_group, group_id)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> SqliteOffsetStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteOffsetStore({self.path!r}{'' if self._conn else ', closed'})"


def _commit_offsets(conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
    conn.executemany(_UPSERT_OFFSET, rows)


def _store_group(conn: sqlite3.Connection, r: GroupRecord) -> None:
    conn.execute(
        "INSERT INTO groups (group_id, state, generation_id, protocol_type, protocol_name, "
        "leader_id, state_timestamp_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (group_id) DO UPDATE SET state = excluded.state, "
        "generation_id = excluded.generation_id, protocol_type = excluded.protocol_type, "
        "protocol_name = excluded.protocol_name, leader_id = excluded.leader_id, "
        "state_timestamp_ms = excluded.state_timestamp_ms",
        (
            r.group_id,
            r.state,
            r.generation_id,
            r.protocol_type,
            r.protocol_name,
            r.leader_id,
            r.state_timestamp_ms,
        ),
    )
    conn.execute("DELETE FROM members WHERE group_id = ?", (r.group_id,))
    conn.executemany(
        "INSERT INTO members (group_id, member_id, position, group_instance_id, client_id, "
        "client_host, rebalance_timeout_ms, session_timeout_ms, protocols, assignment) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.group_id,
                m.member_id,
                i,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                encode_protocols(m.protocols),
                m.assignment,
            )
            for i, m in enumerate(r.members)
        ],
    )


def _delete_group(conn: sqlite3.Connection, group_id: str) -> None:
    conn.execute("DELETE FROM offsets WHERE group_id = ?", (group_id,))
    conn.execute("DELETE FROM members WHERE group_id = ?", (group_id,))
    conn.execute("DELETE FROM groups WHERE group_id = ?", (group_id,))
