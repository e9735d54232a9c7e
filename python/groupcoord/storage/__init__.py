"""SQLite persistence: one durable opener and transaction (:mod:`.sqlite`), the
coordinator's offset/group store (:mod:`.offset_store`) and the topic log's store
(:mod:`.log_store`), both on :class:`~groupcoord.storage.sqlite.SqliteDatabase`.

Both stores may share one database file: their tables are disjoint and each keeps its own
connection (WAL lets them).
"""

from groupcoord.storage.log_store import LogStore, MemoryLogStore, SqliteLogStore
from groupcoord.storage.offset_store import SqliteOffsetStore
from groupcoord.storage.sqlite import SqliteDatabase

__all__ = ["LogStore", "MemoryLogStore", "SqliteDatabase", "SqliteLogStore", "SqliteOffsetStore"]
