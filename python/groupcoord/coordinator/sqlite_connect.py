"""Opening a SQLite database the way every groupcoord store needs it: durable.

WAL lets the offset store and the topic log keep their own connections to one file;
``synchronous=FULL`` makes a committed transaction survive power loss, so a store may
acknowledge a write once its COMMIT returned. Failures become :class:`StoreError`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable

from groupcoord.coordinator.offsets import StoreError

__all__ = ["connect_durable", "write_transaction"]


def connect_durable(path: str, busy_timeout_s: float) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode with ``synchronous=FULL`` and explicit
    transactions only (``isolation_level=None``); usable from one thread at a time, not
    necessarily the one that opened it."""
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
    conn: sqlite3.Connection, path: str, fn: Callable[..., object], *args: object
) -> object:
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
