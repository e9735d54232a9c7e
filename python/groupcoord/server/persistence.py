"""Where the server's coordinator records go: off the event loop, many in one transaction.

The coordinator hands out :class:`~groupcoord.coordinator.WriteBatch` es and holds back
the responses that depend on them. :class:`StoreWriter` writes them on one thread of its
own with **group commit**: while a transaction is being written and fsynced, new batches
queue up, and when the thread is free every batch queued by then goes into the next
transaction (one fsync for all of them; Kafka's coordinator batches its appends the same
way). Each batch is then reported to ``on_persisted(batch_id, ok)`` on the event loop, in
order and a chunk per loop turn, and the coordinator releases the responses. Heartbeats
and joins never wait behind a disk write, nor behind the answers to a thousand commits.

A transaction that fails fails every batch in it only if each fails on its own: the
writer retries them one by one, so one bad record (or one unlucky moment) does not refuse
everybody's commits. With ``threaded=False`` (the in-memory store of ``--memory``)
:meth:`StoreWriter.submit` writes at once and returns the result instead.

``on_free`` is called on the loop when a transaction ends, before the next one starts:
what it submits goes into that next transaction. The gateway hands it the commits native
shells took meanwhile, which it leaves with them while the writer is busy (they could not
be written sooner; taken then, they are one batch, not one per wake-up of the loop).
``on_start`` is called when a transaction starts: its end is sure to call ``on_free``, so
the gateway tells the shells not to wake the loop for commits until then.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from groupcoord.coordinator import OffsetStore, StoreError, StoreRecord, WriteBatch

__all__ = ["StoreWriter"]

log = logging.getLogger("groupcoord.server")

#: batches reported per turn of the event loop
REPORT_CHUNK = 64


class StoreWriter:
    """Writes record batches to ``store``; see the module docstring. Use from the event
    loop's thread only."""

    def __init__(
        self,
        store: OffsetStore,
        on_persisted: Callable[[int, bool], None],
        *,
        threaded: bool,
        on_free: Callable[[], None] | None = None,
        on_start: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self._on_persisted = on_persisted
        self._on_free = on_free
        self._on_start = on_start
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="groupcoord-store")
            if threaded
            else None
        )
        self._queue: list[WriteBatch] = []
        self._busy = False
        #: written, not yet reported (reported in chunks, in order)
        self._unreported: deque[tuple[WriteBatch, bool]] = deque()
        self._reporting = False
        self._submitted = 0
        self._reported = 0
        #: (batches submitted when flush() was called, its future)
        self._flushes: list[tuple[int, asyncio.Future[None]]] = []
        #: transactions written and batches in them, for benchmarks and logs
        self.transactions = 0
        self.batches = 0

    @property
    def busy(self) -> bool:
        """A transaction is being written (what is submitted now goes into the next)."""
        return self._busy

    @property
    def queued(self) -> int:
        """Batches submitted and not yet reported."""
        return self._submitted - self._reported

    def submit(self, batch: WriteBatch) -> bool | None:
        """Write ``batch``: off the loop (``None``; ``on_persisted`` reports it later), or,
        unthreaded, at once (whether it was persisted)."""
        if self._executor is None:
            return self._write_alone(batch)
        self._submitted += 1
        self._queue.append(batch)
        if not self._busy:
            self._start()
        return None

    async def flush(self) -> None:
        """Return once every batch submitted so far has been reported."""
        if self._reported >= self._submitted:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._flushes.append((self._submitted, future))
        await future

    def close(self) -> None:
        """Wait for the transaction under way (batches still queued are not written: none
        of them was acknowledged), then close the store."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._queue.clear()
        self._unreported.clear()
        for _, future in self._flushes:
            if not future.done():
                future.cancel()
        self._flushes.clear()
        self.store.close()

    # ------------------------------------------------------------------ plumbing

    def _write_alone(self, batch: WriteBatch) -> bool:
        try:
            self.store.write(batch.records)
        except StoreError as e:
            log.warning("storing batch %d failed: %s", batch.batch_id, e)
            return False
        self.transactions += 1
        self.batches += 1
        return True

    def _start(self) -> None:
        assert self._executor is not None
        batches, self._queue = self._queue, []
        self._busy = True
        written = asyncio.get_running_loop().run_in_executor(
            self._executor, self._write_together, batches
        )
        written.add_done_callback(lambda done: self._written(batches, done))
        if self._on_start is not None:
            self._on_start()  # _written calls on_free at this transaction's end

    def _write_together(self, batches: list[WriteBatch]) -> list[bool]:
        """On the writer thread: all batches in one transaction; if that fails, each alone."""
        records: list[StoreRecord] = []
        for batch in batches:
            records.extend(batch.records)
        try:
            self.store.write(records)
        except StoreError as e:
            if len(batches) == 1:
                log.warning("storing batch %d failed: %s", batches[0].batch_id, e)
                return [False]
            log.warning(
                "storing %d batches together failed (%s); trying each alone", len(batches), e
            )
            return [self._write_alone(batch) for batch in batches]
        self.transactions += 1
        self.batches += len(batches)
        return [True] * len(batches)

    def _written(self, batches: list[WriteBatch], done: asyncio.Future[list[bool]]) -> None:
        if done.cancelled():
            return  # the loop is shutting down
        exc = done.exception()
        if exc is not None:
            # not a StoreError (those are results): a bug; refuse rather than ack
            log.error("store writer failed", exc_info=exc)
            results = [False] * len(batches)
        else:
            results = done.result()
        # the next transaction starts before the reports: answering thousands of commits
        # takes the loop a while, and the disk need not wait for it (the next write begins
        # after this one committed, so the order on disk is the order handed out)
        if self._on_free is not None:
            try:
                self._on_free()  # still busy: what it submits queues for the next one
            except Exception:  # a bug there must not stop every later write
                log.exception("handing the store writer its next batches failed")
        self._busy = False
        if self._queue and self._executor is not None:
            self._start()
        self._unreported.extend(zip(batches, results, strict=True))
        if not self._reporting:
            self._reporting = True
            self._report()

    def _report(self) -> None:
        """Report up to :data:`REPORT_CHUNK` batches, then let the loop serve others (a
        heartbeat waits for one chunk, not for a thousand commits) and go on; in order."""
        unreported = self._unreported
        for _ in range(min(REPORT_CHUNK, len(unreported))):
            batch, ok = unreported.popleft()
            self._reported += 1
            self._on_persisted(batch.batch_id, ok)
        if unreported:
            asyncio.get_running_loop().call_soon(self._report)
        else:
            self._reporting = False
        if self._flushes:
            still = []
            for target, future in self._flushes:
                if self._reported >= target:
                    if not future.done():
                        future.set_result(None)
                else:
                    still.append((target, future))
            self._flushes = still
        if not self._busy and self._queue and self._executor is not None:
            self._start()  # batches the reports themselves handed out
