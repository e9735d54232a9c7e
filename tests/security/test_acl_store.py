"""The ACL store: a change is one durable transaction; a reopened store has it."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from groupcoord.coordinator.offsets import StoreError
from groupcoord.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from groupcoord.storage.acl_store import MemoryAclStore, SqliteAclStore

A = AclBinding(
    resource_type=ResourceType.GROUP,
    name="g",
    pattern_type=PatternType.PREFIXED,
    principal="User:alice",
    host="*",
    operation=AclOperation.READ,
    permission=AclPermissionType.ALLOW,
)
B = dataclasses.replace(A, name="h", permission=AclPermissionType.DENY)


def test_sqlite_store_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "groupcoord.db"
    with SqliteAclStore(path) as store:
        store.change([A, B], [])
        store.change([], [A])
        store.change([B], [])  # already there: no duplicate
    with SqliteAclStore(path) as store:
        assert store.load() == [B]


def test_sqlite_store_shares_the_file_with_the_other_stores(tmp_path: Path) -> None:
    from groupcoord.storage import SqliteLogStore, SqliteOffsetStore

    path = tmp_path / "groupcoord.db"
    with SqliteOffsetStore(path), SqliteLogStore(path), SqliteAclStore(path) as acls:
        acls.change([A], [])
        assert acls.load() == [A]


def test_a_corrupt_row_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "groupcoord.db"
    with SqliteAclStore(path) as store:
        store.change([A], [])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE acls SET operation = 99")
    conn.commit()
    conn.close()
    with SqliteAclStore(path) as store, pytest.raises(StoreError, match="corrupt ACL row"):
        store.load()


def test_memory_store() -> None:
    store = MemoryAclStore()
    store.change([A, B], [])
    store.change([], [B])
    assert store.load() == [A]
