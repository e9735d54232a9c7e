"""SCRAM credentials on disk (``groupcoord users``): salt, iterations, StoredKey and
ServerKey per user and hash, never the password (see :mod:`groupcoord.security.scram`).

On the same SQLite file as the other stores. The server reads a credential when a client
authenticates, so users added or removed while it runs take effect at the next login,
as Kafka applies SCRAM credential changes without a restart.
"""

from __future__ import annotations

import sqlite3

from groupcoord.security.scram import ScramCredential
from groupcoord.storage.sqlite import SqliteDatabase, check_schema_version

__all__ = ["CREDENTIAL_SCHEMA_VERSION", "MemoryCredentialStore", "SqliteCredentialStore"]

CREDENTIAL_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS credential_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS scram_credentials (
    user TEXT NOT NULL,
    hash TEXT NOT NULL,
    salt BLOB NOT NULL,
    iterations INTEGER NOT NULL,
    stored_key BLOB NOT NULL,
    server_key BLOB NOT NULL,
    PRIMARY KEY (user, hash)
)
"""


class MemoryCredentialStore:
    """Credentials in memory (tests, ``--memory``)."""

    __slots__ = ("_credentials",)

    def __init__(self) -> None:
        self._credentials: dict[tuple[str, str], ScramCredential] = {}

    def put(self, user: str, credential: ScramCredential) -> None:
        self._credentials[user, credential.hash_name] = credential

    def remove(self, user: str, hash_name: str | None = None) -> int:
        gone = [k for k in self._credentials if k[0] == user and hash_name in (None, k[1])]
        for k in gone:
            del self._credentials[k]
        return len(gone)

    def lookup(self, user: str, hash_name: str) -> ScramCredential | None:
        return self._credentials.get((user, hash_name))

    def users(self) -> list[tuple[str, str, int]]:
        return sorted((u, h, c.iterations) for (u, h), c in self._credentials.items())

    def close(self) -> None:
        pass


class SqliteCredentialStore(SqliteDatabase):
    """Credentials in the SQLite database file (WAL, ``synchronous=FULL``)."""

    __slots__ = ()

    KIND = "credential store"

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        check_schema_version(
            conn, "credential_meta", CREDENTIAL_SCHEMA_VERSION, f"{self.path!r} (credentials)"
        )

    def put(self, user: str, credential: ScramCredential) -> None:
        """Add or replace the user's credential for its hash (durable on return)."""

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO scram_credentials "
                "(user, hash, salt, iterations, stored_key, server_key) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    user,
                    credential.hash_name,
                    credential.salt,
                    credential.iterations,
                    credential.stored_key,
                    credential.server_key,
                ),
            )

        self._write(write)

    def remove(self, user: str, hash_name: str | None = None) -> int:
        """Remove the user's credentials (one hash, or all); how many were removed."""

        def write(conn: sqlite3.Connection) -> int:
            if hash_name is None:
                cursor = conn.execute("DELETE FROM scram_credentials WHERE user = ?", (user,))
            else:
                cursor = conn.execute(
                    "DELETE FROM scram_credentials WHERE user = ? AND hash = ?", (user, hash_name)
                )
            return cursor.rowcount

        return self._write(write)

    def lookup(self, user: str, hash_name: str) -> ScramCredential | None:
        def read(conn: sqlite3.Connection) -> ScramCredential | None:
            row = conn.execute(
                "SELECT salt, iterations, stored_key, server_key FROM scram_credentials "
                "WHERE user = ? AND hash = ?",
                (user, hash_name),
            ).fetchone()
            if row is None:
                return None
            salt, iterations, stored_key, server_key = row
            return ScramCredential(
                hash_name=hash_name,
                salt=bytes(salt),
                iterations=int(iterations),
                stored_key=bytes(stored_key),
                server_key=bytes(server_key),
            )

        return self._read(read)

    def users(self) -> list[tuple[str, str, int]]:
        """(user, hash, iterations) of every credential, sorted."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
            return [
                (str(u), str(h), int(i))
                for u, h, i in conn.execute(
                    "SELECT user, hash, iterations FROM scram_credentials ORDER BY user, hash"
                )
            ]

        return self._read(read)
