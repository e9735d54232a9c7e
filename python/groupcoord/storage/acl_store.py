"""The ACL bindings on disk: one row per binding, written in one transaction per change.

On the same SQLite file as the offsets and the topic log (disjoint tables, its own
connection). A binding is stored as its seven fields with Kafka's numeric codes, so a
database stays readable whatever the Python enums become.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Protocol

from groupcoord.coordinator.offsets import StoreError
from groupcoord.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.storage.sqlite import SqliteDatabase, check_schema_version

__all__ = ["ACL_SCHEMA_VERSION", "AclStore", "MemoryAclStore", "SqliteAclStore"]

ACL_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS acl_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS acls (
    resource_type INTEGER NOT NULL,
    name TEXT NOT NULL,
    pattern_type INTEGER NOT NULL,
    principal TEXT NOT NULL,
    host TEXT NOT NULL,
    operation INTEGER NOT NULL,
    permission INTEGER NOT NULL,
    PRIMARY KEY (resource_type, name, pattern_type, principal, host, operation, permission)
)
"""

_COLUMNS = "resource_type, name, pattern_type, principal, host, operation, permission"


class AclStore(Protocol):
    """Where the server keeps its bindings."""

    def load(self) -> list[AclBinding]: ...

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        """Store ``add`` and delete ``remove`` in one durable write (or raise StoreError
        and change nothing)."""
        ...

    def close(self) -> None: ...


class MemoryAclStore:
    """Bindings in memory (``--memory``)."""

    __slots__ = ("_bindings",)

    def __init__(self) -> None:
        self._bindings: dict[AclBinding, None] = {}

    def load(self) -> list[AclBinding]:
        return list(self._bindings)

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        for b in remove:
            self._bindings.pop(b, None)
        for b in add:
            self._bindings[b] = None

    def close(self) -> None:
        pass


def _row(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (
        int(b.resource_type),
        b.name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission),
    )


def _change(conn: sqlite3.Connection, add: list[AclBinding], remove: list[AclBinding]) -> None:
    conn.executemany(
        "DELETE FROM acls WHERE (" + _COLUMNS + ") = (?, ?, ?, ?, ?, ?, ?)",
        [_row(b) for b in remove],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO acls (" + _COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?)",
        [_row(b) for b in add],
    )


def _load(conn: sqlite3.Connection) -> list[AclBinding]:
    out = []
    for rtype, name, ptype, principal, host, op, perm in conn.execute(
        "SELECT " + _COLUMNS + " FROM acls ORDER BY rowid"
    ):
        try:
            out.append(
                AclBinding(
                    resource_type=ResourceType(rtype),
                    name=name,
                    pattern_type=PatternType(ptype),
                    principal=principal,
                    host=host,
                    operation=AclOperation(op),
                    permission=AclPermissionType(perm),
                )
            )
        except ValueError as e:
            raise StoreError(f"corrupt ACL row {(rtype, name, ptype, principal)}: {e}") from e
    return out


class SqliteAclStore(SqliteDatabase):
    """The bindings in a SQLite database file (WAL, ``synchronous=FULL``)."""

    __slots__ = ()

    KIND = "ACL store"

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        check_schema_version(conn, "acl_meta", ACL_SCHEMA_VERSION, f"{self.path!r} (ACL tables)")

    def load(self) -> list[AclBinding]:
        return self._read(_load)

    def change(self, add: Iterable[AclBinding], remove: Iterable[AclBinding]) -> None:
        self._write(_change, list(add), list(remove))
