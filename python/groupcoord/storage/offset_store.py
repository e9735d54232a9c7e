"""A durable :class:`~groupcoord.coordinator.offsets.OffsetStore` in one SQLite file.

WAL journal, ``synchronous=FULL``: every :meth:`SqliteOffsetStore.write` is one
transaction, and when it returns the transaction is committed and the WAL fsynced, so it
survives a crash of the process (and of the machine, as far as the disk keeps its
promises). The coordinator's shell reports a batch of records persisted only after
``write`` returned, and the coordinator releases a response only then, so every
acknowledged commit is on disk. One ``write`` may carry many batches (group commit).

Schema (version 2; a version 1 database, which lacks the consumer-group tables, is
upgraded in place when opened)::

    meta(key PRIMARY KEY, value)
    groups(group_id PRIMARY KEY, state, generation_id, protocol_type, protocol_name,
           leader_id, state_timestamp_ms)
    members(group_id, member_id, position, group_instance_id, client_id, client_host,
            rebalance_timeout_ms, session_timeout_ms, protocols BLOB, assignment BLOB,
            PRIMARY KEY (group_id, member_id))
    offsets(group_id, topic, partition, committed_offset, leader_epoch, metadata,
            commit_timestamp_ms, expire_timestamp_ms, PRIMARY KEY (group_id, topic, partition))
    consumer_groups(group_id PRIMARY KEY, group_epoch, assignment_epoch,
                    subscription_metadata, resolved_regexes)
    consumer_members(group_id, member_id, instance_id, rack_id, client_id, client_host,
                     rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex,
                     server_assignor, member_epoch, previous_member_epoch, state, assigned,
                     pending_revocation, target, PRIMARY KEY (group_id, member_id))

The consumer-group columns that hold lists are JSON (``assigned``: ``[[topic,
[partition, ...]], ...]``); members load in the order they were first written (rowid:
an upsert keeps it). A group id has one type: writing a classic group's record drops its
consumer-group rows and a consumer group's record drops its classic rows.

``members.protocols`` is the member's ``((name, metadata), ...)`` list, each entry a
big-endian u16 name length, the UTF-8 name, a u32 metadata length and the metadata.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import struct
from collections.abc import Mapping, Sequence

from groupcoord.coordinator.offsets import (
    ConsumerGroupRecord,
    ConsumerMemberRecord,
    ConsumerMemberTombstone,
    GroupRecord,
    GroupTombstone,
    MemberRecord,
    OffsetAndMetadata,
    OffsetsRecord,
    OffsetTombstone,
    StoredAssignment,
    StoredConsumerGroup,
    StoredState,
    StoreError,
    StoreRecord,
)
from groupcoord.storage.sqlite import SqliteDatabase, check_schema_version
from groupcoord.types import TopicPartition

__all__ = ["SCHEMA_VERSION", "SqliteOffsetStore"]

SCHEMA_VERSION = 2
#: versions :meth:`SqliteOffsetStore._init_schema` upgrades: 1 only lacks tables that
#: ``CREATE TABLE IF NOT EXISTS`` adds
_UPGRADABLE = ("1",)

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
CREATE TABLE IF NOT EXISTS consumer_groups (
    group_id TEXT PRIMARY KEY,
    group_epoch INTEGER NOT NULL,
    assignment_epoch INTEGER NOT NULL,
    subscription_metadata TEXT NOT NULL,
    resolved_regexes TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_members (
    group_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    instance_id TEXT,
    rack_id TEXT,
    client_id TEXT NOT NULL,
    client_host TEXT NOT NULL,
    rebalance_timeout_ms INTEGER NOT NULL,
    subscribed_topic_names TEXT NOT NULL,
    subscribed_topic_regex TEXT,
    server_assignor TEXT,
    member_epoch INTEGER NOT NULL,
    previous_member_epoch INTEGER NOT NULL,
    state TEXT NOT NULL,
    assigned TEXT NOT NULL,
    pending_revocation TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (group_id, member_id)
);
"""

#: One statement upserts many offsets: the server writes on its own thread, and every
#: statement step hands the GIL back and forth with the event loop (a wait of up to the
#: switch interval when the loop is busy), so a transaction of a thousand commits must be
#: a handful of steps, not a thousand.
_UPSERT_OFFSETS = """
INSERT INTO offsets (group_id, topic, partition, committed_offset, leader_epoch, metadata,
                     commit_timestamp_ms, expire_timestamp_ms)
VALUES {rows}
ON CONFLICT (group_id, topic, partition) DO UPDATE SET
    committed_offset = excluded.committed_offset,
    leader_epoch = excluded.leader_epoch,
    metadata = excluded.metadata,
    commit_timestamp_ms = excluded.commit_timestamp_ms,
    expire_timestamp_ms = excluded.expire_timestamp_ms
"""
_OFFSET_COLUMNS = 8
#: rows per upsert statement (SQLite applies them in order: a later row of a key wins)
_ROWS_PER_STATEMENT = 1000


@functools.cache
def _upsert_offsets(rows: int) -> str:
    return _UPSERT_OFFSETS.format(rows=", ".join(["(?, ?, ?, ?, ?, ?, ?, ?)"] * rows))


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


class SqliteOffsetStore(SqliteDatabase):
    """Offsets and group metadata in one SQLite database file (WAL, ``synchronous=FULL``).

    One connection, used from one thread at a time: the coordinator's shell (the caller's
    thread, or the server's writer thread). Usable as a context manager (closes on exit).
    """

    __slots__ = ()

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version' AND value IN "
            f"({', '.join('?' * len(_UPGRADABLE))})",
            (str(SCHEMA_VERSION), *_UPGRADABLE),
        )
        check_schema_version(conn, "meta", SCHEMA_VERSION, repr(self.path))

    # ------------------------------------------------------------------ OffsetStore

    def load(self) -> StoredState:
        return self._read(_load)

    def write(self, records: Sequence[StoreRecord]) -> None:
        self._write(_write_records, records)

    def commit_offsets(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self.write((OffsetsRecord(group_id, dict(offsets)),))

    def store_group(self, record: GroupRecord) -> None:
        self.write((record,))

    def delete_group(self, group_id: str) -> None:
        self.write((GroupTombstone(group_id),))


def _load(conn: sqlite3.Connection) -> StoredState:
    state = StoredState()
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
        state.offsets.setdefault(row[0], {})[TopicPartition(row[1], row[2])] = OffsetAndMetadata(
            committed_offset=row[3],
            leader_epoch=row[4],
            metadata=row[5],
            commit_timestamp_ms=row[6],
            expire_timestamp_ms=row[7],
        )
    _load_consumer_groups(conn, state)
    return state


def _load_consumer_groups(conn: sqlite3.Connection, state: StoredState) -> None:
    groups = state.consumer_groups
    for row in conn.execute(
        "SELECT group_id, group_epoch, assignment_epoch, subscription_metadata, "
        "resolved_regexes FROM consumer_groups ORDER BY group_id"
    ):
        groups[row[0]] = StoredConsumerGroup(
            ConsumerGroupRecord(
                group_id=row[0],
                group_epoch=row[1],
                assignment_epoch=row[2],
                subscription_metadata=tuple((t, n) for t, n in json.loads(row[3])),
                resolved_regexes=tuple((r, tuple(ts)) for r, ts in json.loads(row[4])),
            )
        )
    for row in conn.execute(
        "SELECT group_id, member_id, instance_id, rack_id, client_id, client_host, "
        "rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex, "
        "server_assignor, member_epoch, previous_member_epoch, state, assigned, "
        "pending_revocation, target FROM consumer_members ORDER BY group_id, rowid"
    ):
        stored = groups.get(row[0])
        if stored is None:
            stored = groups[row[0]] = StoredConsumerGroup()
        stored.members[row[1]] = ConsumerMemberRecord(
            group_id=row[0],
            member_id=row[1],
            instance_id=row[2],
            rack_id=row[3],
            client_id=row[4],
            client_host=row[5],
            rebalance_timeout_ms=row[6],
            subscribed_topic_names=tuple(json.loads(row[7])),
            subscribed_topic_regex=row[8],
            server_assignor=row[9],
            member_epoch=row[10],
            previous_member_epoch=row[11],
            state=row[12],
            assigned=_decode_assignment(row[13]),
            pending_revocation=_decode_assignment(row[14]),
            target=_decode_assignment(row[15]),
        )


def _encode_assignment(assignment: StoredAssignment) -> str:
    return json.dumps(assignment, separators=(",", ":"))


def _decode_assignment(text: str) -> StoredAssignment:
    return tuple((topic, tuple(partitions)) for topic, partitions in json.loads(text))


def _write_records(conn: sqlite3.Connection, records: Sequence[StoreRecord]) -> None:
    """Apply ``records`` in order (a later record of a partition or group wins, as it
    would in Kafka's compacted offsets topic); consecutive offset records go into as few
    statements as the variable limit allows."""
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // _OFFSET_COLUMNS
    per_statement = max(1, min(_ROWS_PER_STATEMENT, limit))
    values: list[object] = []
    for record in records:
        if isinstance(record, OffsetsRecord):
            group_id = record.group_id
            for tp, o in record.offsets.items():
                values += (
                    group_id,
                    tp.topic,
                    tp.partition,
                    o.committed_offset,
                    o.leader_epoch,
                    o.metadata,
                    o.commit_timestamp_ms,
                    o.expire_timestamp_ms,
                )
            continue
        _upsert(conn, values, per_statement)
        values = []
        if isinstance(record, GroupRecord):
            _store_group(conn, record)
        elif isinstance(record, ConsumerMemberRecord):
            _store_consumer_member(conn, record)
        elif isinstance(record, ConsumerGroupRecord):
            _store_consumer_group(conn, record)
        elif isinstance(record, ConsumerMemberTombstone):
            conn.execute(
                "DELETE FROM consumer_members WHERE group_id = ? AND member_id = ?",
                (record.group_id, record.member_id),
            )
        elif isinstance(record, GroupTombstone):
            _delete_group(conn, record.group_id)
        elif isinstance(record, OffsetTombstone):
            conn.executemany(
                "DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                [(record.group_id, tp.topic, tp.partition) for tp in record.partitions],
            )
        else:
            raise TypeError(f"not a store record: {type(record).__name__}")
    _upsert(conn, values, per_statement)


def _upsert(conn: sqlite3.Connection, values: list[object], per_statement: int) -> None:
    """Upsert the offset rows flattened in ``values``, in order."""
    step = per_statement * _OFFSET_COLUMNS
    for start in range(0, len(values), step):
        chunk = values[start : start + step]
        conn.execute(_upsert_offsets(len(chunk) // _OFFSET_COLUMNS), chunk)


def _store_group(conn: sqlite3.Connection, r: GroupRecord) -> None:
    _delete_consumer_group(conn, r.group_id)  # one type per group id
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


def _store_consumer_group(conn: sqlite3.Connection, r: ConsumerGroupRecord) -> None:
    # one type per group id: a consumer group replacing an empty classic one
    conn.execute("DELETE FROM members WHERE group_id = ?", (r.group_id,))
    conn.execute("DELETE FROM groups WHERE group_id = ?", (r.group_id,))
    conn.execute(
        "INSERT INTO consumer_groups (group_id, group_epoch, assignment_epoch, "
        "subscription_metadata, resolved_regexes) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (group_id) DO UPDATE SET group_epoch = excluded.group_epoch, "
        "assignment_epoch = excluded.assignment_epoch, "
        "subscription_metadata = excluded.subscription_metadata, "
        "resolved_regexes = excluded.resolved_regexes",
        (
            r.group_id,
            r.group_epoch,
            r.assignment_epoch,
            json.dumps(r.subscription_metadata, separators=(",", ":")),
            json.dumps(r.resolved_regexes, separators=(",", ":")),
        ),
    )


def _store_consumer_member(conn: sqlite3.Connection, r: ConsumerMemberRecord) -> None:
    conn.execute(
        "INSERT INTO consumer_members (group_id, member_id, instance_id, rack_id, client_id, "
        "client_host, rebalance_timeout_ms, subscribed_topic_names, subscribed_topic_regex, "
        "server_assignor, member_epoch, previous_member_epoch, state, assigned, "
        "pending_revocation, target) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (group_id, member_id) DO UPDATE SET instance_id = excluded.instance_id, "
        "rack_id = excluded.rack_id, client_id = excluded.client_id, "
        "client_host = excluded.client_host, "
        "rebalance_timeout_ms = excluded.rebalance_timeout_ms, "
        "subscribed_topic_names = excluded.subscribed_topic_names, "
        "subscribed_topic_regex = excluded.subscribed_topic_regex, "
        "server_assignor = excluded.server_assignor, member_epoch = excluded.member_epoch, "
        "previous_member_epoch = excluded.previous_member_epoch, state = excluded.state, "
        "assigned = excluded.assigned, pending_revocation = excluded.pending_revocation, "
        "target = excluded.target",
        (
            r.group_id,
            r.member_id,
            r.instance_id,
            r.rack_id,
            r.client_id,
            r.client_host,
            r.rebalance_timeout_ms,
            json.dumps(r.subscribed_topic_names),
            r.subscribed_topic_regex,
            r.server_assignor,
            r.member_epoch,
            r.previous_member_epoch,
            r.state,
            _encode_assignment(r.assigned),
            _encode_assignment(r.pending_revocation),
            _encode_assignment(r.target),
        ),
    )


def _delete_consumer_group(conn: sqlite3.Connection, group_id: str) -> None:
    conn.execute("DELETE FROM consumer_members WHERE group_id = ?", (group_id,))
    conn.execute("DELETE FROM consumer_groups WHERE group_id = ?", (group_id,))


def _delete_group(conn: sqlite3.Connection, group_id: str) -> None:
    conn.execute("DELETE FROM offsets WHERE group_id = ?", (group_id,))
    conn.execute("DELETE FROM members WHERE group_id = ?", (group_id,))
    conn.execute("DELETE FROM groups WHERE group_id = ?", (group_id,))
    _delete_consumer_group(conn, group_id)
