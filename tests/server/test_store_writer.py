"""The server's StoreWriter: one writer thread, group commit, reports in order, a failed
group retried batch by batch."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from groupcoord.coordinator import (
    GroupTombstone,
    MemoryOffsetStore,
    OffsetAndMetadata,
    OffsetsRecord,
    StoreError,
    StoreRecord,
    WriteBatch,
)
from groupcoord.server.persistence import REPORT_CHUNK, StoreWriter
from groupcoord.types import TopicPartition


class GatedStore(MemoryOffsetStore):
    """Holds the first write until ``gate`` is set; refuses writes carrying ``poison``;
    records every transaction's size and thread."""

    __slots__ = ("gate", "poison", "threads", "transactions")

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.poison: str | None = None
        self.transactions: list[int] = []
        self.threads: set[str] = set()

    def write(self, records: Sequence[StoreRecord]) -> None:
        self.gate.wait(10)
        self.threads.add(threading.current_thread().name)
        if any(r.group_id == self.poison for r in records):
            raise StoreError(f"cannot write group {self.poison}")
        super().write(records)
        self.transactions.append(len(records))


def batch(batch_id: int, group: str) -> WriteBatch:
    offsets = {TopicPartition("t", 0): OffsetAndMetadata(batch_id)}
    return WriteBatch(batch_id, (OffsetsRecord(group, offsets),))


def test_batches_queued_during_a_write_go_into_one_transaction() -> None:
    async def main() -> tuple[GatedStore, list[tuple[int, bool]]]:
        store = GatedStore()
        reports: list[tuple[int, bool]] = []
        writer = StoreWriter(store, lambda b, ok: reports.append((b, ok)), threaded=True)
        assert writer.submit(batch(1, "a")) is None  # the thread holds it at the gate
        for i in range(2, 6):
            writer.submit(batch(i, "a"))
        assert writer.queued == 5
        store.gate.set()
        await writer.flush()
        assert writer.queued == 0
        assert (writer.transactions, writer.batches) == (2, 5)
        writer.close()
        return store, reports

    store, reports = asyncio.run(main())
    assert store.transactions == [1, 4]  # one fsync for the four that waited
    assert reports == [(i, True) for i in range(1, 6)]
    assert store.load().offsets["a"][TopicPartition("t", 0)].committed_offset == 5
    assert store.threads == {"groupcoord-store_0"}  # never the event loop's thread


def test_a_failed_group_is_retried_batch_by_batch() -> None:
    async def main() -> tuple[GatedStore, list[tuple[int, bool]]]:
        store = GatedStore()
        reports: list[tuple[int, bool]] = []
        writer = StoreWriter(store, lambda b, ok: reports.append((b, ok)), threaded=True)
        writer.submit(batch(1, "a"))
        writer.submit(batch(2, "a"))
        writer.submit(batch(3, "bad"))
        writer.submit(batch(4, "b"))
        store.poison = "bad"
        store.gate.set()
        await writer.flush()
        writer.close()
        return store, reports

    store, reports = asyncio.run(main())
    assert reports == [(1, True), (2, True), (3, False), (4, True)]
    assert set(store.load().offsets) == {"a", "b"}


def test_on_free_hands_the_next_transaction_what_waited_for_the_writer() -> None:
    """``on_free`` runs when a transaction ends, while the writer still counts as busy:
    what it submits goes into the next transaction together, before any report."""

    async def main() -> tuple[GatedStore, list[tuple[int, bool]], list[bool]]:
        store = GatedStore()
        reports: list[tuple[int, bool]] = []
        busy_in_hook: list[bool] = []
        waiting = [batch(2, "a"), batch(3, "b")]

        def on_free() -> None:
            busy_in_hook.append(writer.busy)
            if waiting:
                assert not reports  # the next transaction is formed before the reports
            while waiting:
                writer.submit(waiting.pop(0))

        writer = StoreWriter(
            store, lambda b, ok: reports.append((b, ok)), threaded=True, on_free=on_free
        )
        assert not writer.busy
        writer.submit(batch(1, "a"))
        assert writer.busy
        store.gate.set()
        while writer.transactions < 2 or writer.queued:
            await writer.flush()
        assert not writer.busy
        writer.close()
        return store, reports, busy_in_hook

    store, reports, busy_in_hook = asyncio.run(main())
    assert store.transactions == [1, 2]  # the two that waited went in together
    assert reports == [(1, True), (2, True), (3, True)]
    assert busy_in_hook == [True, True]  # once per transaction


def test_a_failing_on_free_does_not_stop_the_writer() -> None:
    async def main() -> list[tuple[int, bool]]:
        store = GatedStore()
        reports: list[tuple[int, bool]] = []

        def on_free() -> None:
            raise RuntimeError("a bug in the hook")

        writer = StoreWriter(
            store, lambda b, ok: reports.append((b, ok)), threaded=True, on_free=on_free
        )
        writer.submit(batch(1, "a"))
        writer.submit(batch(2, "a"))
        store.gate.set()
        await writer.flush()
        writer.submit(batch(3, "a"))
        await writer.flush()
        writer.close()
        return reports

    assert asyncio.run(main()) == [(1, True), (2, True), (3, True)]


def test_unthreaded_writes_at_once_and_returns_the_result() -> None:
    store = MemoryOffsetStore()
    writer = StoreWriter(store, lambda b, ok: None, threaded=False)
    assert writer.submit(batch(1, "a")) is True
    assert writer.submit(WriteBatch(2, (GroupTombstone("a"),))) is True
    store.fail_writes = True
    assert writer.submit(batch(3, "a")) is False
    assert store.load().offsets == {}


def test_many_batches_are_reported_in_order_a_chunk_per_loop_turn() -> None:
    async def main() -> list[tuple[int, int]]:
        store = GatedStore()
        reports: list[tuple[int, int]] = []  # (batch, loop turn it was reported in)
        turns = 0

        async def count_turns() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        counter = asyncio.ensure_future(count_turns())
        writer = StoreWriter(store, lambda b, ok: reports.append((b, turns)), threaded=True)
        for i in range(1, 3 * REPORT_CHUNK + 2):
            writer.submit(batch(i, "a"))
        store.gate.set()
        await writer.flush()
        counter.cancel()
        writer.close()
        return reports

    reports = asyncio.run(main())
    assert [b for b, _ in reports] == list(range(1, 3 * REPORT_CHUNK + 2))
    # batches 2.. were one transaction; their reports still spread over loop turns
    assert len({turn for b, turn in reports if b > 1}) >= 3
