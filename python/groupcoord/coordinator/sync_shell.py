"""The shell that persists at once: for the simulator, tests, benchmarks and scripts.

:class:`SyncShell` drives a :class:`~groupcoord.coordinator.GroupCoordinator` and writes
every batch of records it hands out to the store before returning, reporting it with
``persisted`` at the same time, so one call returns every response it released, the held
ones included. With :class:`~groupcoord.coordinator.offsets.MemoryOffsetStore` nothing
touches a disk (the simulator's "acknowledge at once"); with a SQLite store each batch is
one transaction on the caller's thread. The asyncio server persists off its event loop
instead (:mod:`groupcoord.server.persistence`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from groupcoord.config import CoordinatorConfig
from groupcoord.coordinator.coordinator import GroupCoordinator
from groupcoord.coordinator.events import MemberListener, RebalanceListener
from groupcoord.coordinator.listeners import Listeners
from groupcoord.coordinator.messages import OffsetCommitRequest, OffsetCommitResponse
from groupcoord.coordinator.offsets import (
    MemoryOffsetStore,
    OffsetsRecord,
    OffsetStore,
    StoreError,
    StoreRecord,
)
from groupcoord.coordinator.output import CoordinatorRequest, CoordinatorResponse, Output
from groupcoord.coordinator.rebalance import MemberIdFactory
from groupcoord.coordinator.topics import TopicMetadata, TopicView
from groupcoord.types import TopicPartition

__all__ = ["SyncShell"]

log = logging.getLogger("groupcoord.coordinator")


class SyncShell:
    """A coordinator started from ``store`` (default: a new :class:`MemoryOffsetStore`)
    whose records are written to it synchronously. ``config``, ``member_id_factory``,
    ``now_ms`` and ``topics`` are the coordinator's. ``coordinator`` is there for snapshots
    and reads."""

    __slots__ = ("_listeners", "coordinator", "store")

    def __init__(
        self,
        store: OffsetStore | None = None,
        config: CoordinatorConfig | Mapping[str, object] | None = None,
        *,
        member_id_factory: MemberIdFactory | None = None,
        now_ms: int = 0,
        topics: TopicView | None = None,
    ) -> None:
        self.store: OffsetStore = MemoryOffsetStore() if store is None else store
        self.coordinator = GroupCoordinator(
            config,
            member_id_factory=member_id_factory,
            now_ms=now_ms,
            stored=self.store.load(),
            topics=topics,
        )
        self._listeners = Listeners()

    def handle(self, request: CoordinatorRequest, now_ms: int) -> list[CoordinatorResponse]:
        """:meth:`GroupCoordinator.handle`, its records persisted: every response released."""
        return self._settle(self.coordinator.handle(request, now_ms), now_ms)

    def quiet_offset_commit(
        self, request: OffsetCommitRequest, now_ms: int
    ) -> OffsetCommitResponse | None:
        """:meth:`GroupCoordinator.quiet_offset_commit` with this shell's store: the answer
        :meth:`handle` would release for an OffsetCommit in the common case (a current
        member of a Stable group), its record written, or ``None`` (nothing changed: call
        :meth:`handle`)."""
        return self.coordinator.quiet_offset_commit(request, now_ms, self._write)

    def quiet_commit_offsets(
        self, like: OffsetCommitRequest, offsets: dict[TopicPartition, int], now_ms: int
    ) -> bool | None:
        """:meth:`GroupCoordinator.quiet_commit_offsets` with this shell's store."""
        return self.coordinator.quiet_commit_offsets(like, offsets, now_ms, self._write)

    def store_taken_commits(self, group_id: str, records: Sequence[OffsetsRecord]) -> None:
        """:meth:`GroupCoordinator.store_taken_commits` with this shell's store."""
        self.coordinator.store_taken_commits(group_id, records, self._write)

    def tick(self, now_ms: int) -> list[CoordinatorResponse]:
        return self._settle(self.coordinator.tick(now_ms), now_ms)

    def update_topics(
        self, topics: Iterable[TopicMetadata], now_ms: int
    ) -> list[CoordinatorResponse]:
        """:meth:`GroupCoordinator.update_topics`, its records (new group epochs) persisted."""
        return self._settle(self.coordinator.update_topics(topics, now_ms), now_ms)

    def next_deadline(self) -> int | None:
        return self.coordinator.next_deadline()

    def add_rebalance_listener(self, listener: RebalanceListener) -> None:
        """Call ``listener(RebalanceCompleted)`` for every completed rebalance, after the
        coordinator call that completed it returned."""
        self._listeners.add_rebalance_listener(listener)

    def add_member_listener(self, listener: MemberListener) -> None:
        """Call ``listener(MemberRemoved)`` for every removed member, after the coordinator
        call that removed it returned."""
        self._listeners.add_member_listener(listener)

    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def _settle(self, output: Output, now_ms: int) -> list[CoordinatorResponse]:
        responses = output.responses
        while True:
            if output.events:
                self._listeners.notify(output.events)
            batch = output.writes
            if batch is None:
                return responses
            ok = self._write(batch.records)
            output = self.coordinator.persisted(batch.batch_id, ok, now_ms)
            responses += output.responses

    def _write(self, records: tuple[StoreRecord, ...]) -> bool:
        """Write ``records`` to the store: ``False`` if it failed."""
        try:
            self.store.write(records)
        except StoreError as e:
            log.warning("store write failed: %s", e)
            return False
        return True

    def __repr__(self) -> str:
        return f"SyncShell({self.coordinator!r}, store={self.store!r})"
