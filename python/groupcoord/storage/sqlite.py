"""The SQLite lifecycle every groupcoord store shares: open durably, write in one
transaction, read, close.

WAL lets the offset store and the topic log keep their own connections to one file;
``synchronous=FULL`` makes a committed transaction survive power loss, so a store may
acknowledge a write once its COMMIT returned. Failures become :class:`StoreError`.
A store subclasses :class:`SqliteDatabase` and supplies its schema (:meth:`_init_schema`)
and its queries; the connection handling lives here once.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, Self, TypeVar

from groupcoord.coordinator.offsets import StoreError

__all__ = [
    "SqliteDatabase",
    "check_schema_version",
    "connect_durable",
    "write_transaction",
]

_T = TypeVar("_T")


def connect_durable(path: str, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``synchronous=FULL`` and explicit
    transactions only (``isolation_level=None``); usable from one thread at a time, not
    necessarily the one that opened it (the server's writer thread uses it)."""
    try:
        conn = sqlite3.connect(
            path,
            timeout=busy_timeout_s,
            isolation_level=None,  # explicit BEGIN/COMMIT only
            check_same_thread=False,
        )
    except sqlite3.Error as e:
        raise StoreError(f"cannot open {path!r}: {e}") from e
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal" and path != ":memory:":
            raise StoreError(f"{path!r}: cannot use WAL journal mode (got {mode})")
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as e:
        conn.close()
        raise StoreError(f"cannot initialise {path!r}: {e}") from e
    except StoreError:
        conn.close()
        raise
    return conn


def write_transaction(
    conn: sqlite3.Connection, path: str, fn: Callable[..., _T], *args: object
) -> _T:
    """Run ``fn(conn, *args)`` in one IMMEDIATE transaction and return its result; on return
    the transaction is committed (and, with ``synchronous=FULL``, on disk). Any failure rolls
    it back; SQLite and encoding failures become :class:`StoreError`."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn, *args)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result
    except (sqlite3.Error, UnicodeError) as e:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise StoreError(f"write to {path!r} failed: {e}") from e


def check_schema_version(conn: sqlite3.Connection, table: str, version: int, what: str) -> None:
    """Record ``version`` in ``table`` (key ``schema_version``) on a new database; refuse a
    database written with another version (``what`` names the tables in the error)."""
    row = conn.execute(f"SELECT value FROM {table} WHERE key = 'schema_version'").fetchone()
    if row is None:
        conn.execute(
            f"INSERT INTO {table} (key, value) VALUES ('schema_version', ?)", (str(version),)
        )
    elif row[0] != str(version):
        raise StoreError(f"{what} has schema version {row[0]}, expected {version}")


class SqliteDatabase:
    """One durable connection to a SQLite file (see :func:`connect_durable`), opened with
    the subclass's schema in place. Used from one thread at a time; a context manager
    (closes on exit)."""

    __slots__ = ("_conn", "path")

    #: how errors name the store ("store", "log store")
    KIND: ClassVar[str] = "store"

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 30.0) -> None:
        self.path = os.fspath(path)
        conn = connect_durable(self.path, busy_timeout_s)
        self._conn: sqlite3.Connection | None = conn
        try:
            write_transaction(conn, self.path, self._init_schema)
        except StoreError as e:
            self.close()
            if isinstance(e.__cause__, sqlite3.Error):
                raise StoreError(f"cannot initialise {self.path!r}: {e.__cause__}") from e
            raise
        except BaseException:
            self.close()
            raise

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        """Create the tables (``IF NOT EXISTS``) and check the schema version; runs in
        the opening transaction."""
        raise NotImplementedError(f"{type(self).__name__} does not define its schema")

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"{self.KIND} {self.path!r} is closed")
        return self._conn

    def _write(self, fn: Callable[..., _T], *args: object) -> _T:
        """Run ``fn(conn, *args)`` in one IMMEDIATE transaction; committed (fsynced) on
        return."""
        return write_transaction(self._db(), self.path, fn, *args)

    def _read(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn(conn)``, with SQLite failures and undecodable rows as :class:`StoreError`."""
        conn = self._db()
        try:
            return fn(conn)
        except (sqlite3.Error, ValueError) as e:
            raise StoreError(f"cannot read {self.path!r}: {e}") from e

    @property
    def closed(self) -> bool:
        return self._conn is None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}{', closed' if self._conn is None else ''})"
