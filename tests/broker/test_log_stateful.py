"""TopicLog as a hypothesis state machine against a list-per-partition model.

Random plain appends, idempotent sends, producer retries (recent ones are deduplicated,
older ones are out of order), sequence gaps, epoch bumps and stale epochs, corrupt
batches, reads from any offset and restarts. After every step: offsets are dense and
monotonic, the log end equals the model; reads return exactly the model's records;
a restart (memory or SQLite store) changes nothing.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from groupcoord.broker.log import PRODUCER_BATCHES_RETAINED, TopicLog
from groupcoord.errors import (
    CorruptMessageError,
    InvalidProducerEpochError,
    OutOfOrderSequenceNumberError,
)
from groupcoord.storage.log_store import LogStore, MemoryLogStore, SqliteLogStore
from log_batches import build_batch, read_records

PARTITIONS = 2
values_st = st.lists(st.one_of(st.none(), st.binary(max_size=12)), min_size=1, max_size=4)


@dataclass
class Sent:
    epoch: int
    first_seq: int
    batch: bytes
    offset: int


@dataclass
class Producer:
    producer_id: int
    epoch: int = 0
    next_seq: dict[int, int] = field(default_factory=dict)
    #: partition -> batches sent in order
    sent: dict[int, list[Sent]] = field(default_factory=dict)
    #: partitions that have seen ``epoch`` (where an older epoch is now fenced)
    fenced_at: set[int] = field(default_factory=set)

    def current(self, partition: int) -> list[Sent]:
        return [s for s in self.sent.get(partition, []) if s.epoch == self.epoch]


class LogMachine(RuleBasedStateMachine):
    use_sqlite = False

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="logsm-"))
        self.memory = MemoryLogStore()
        self.log = TopicLog(self._store())
        self.log.create_topic("t", PARTITIONS)
        self.model: list[list[bytes | None]] = [[] for _ in range(PARTITIONS)]
        self.producers: list[Producer] = []

    def _store(self) -> LogStore:
        if self.use_sqlite:
            return SqliteLogStore(self.dir / "groupcoord.db")
        return self.memory

    def teardown(self) -> None:
        self._check_contents()
        if self.use_sqlite:
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    def _append_ok(self, partition: int, batch: bytes, values: list[bytes | None]) -> int:
        result = self.log.append("t", partition, batch)
        assert not result.duplicate
        assert result.base_offset == len(self.model[partition])
        self.model[partition].extend(values)
        return result.base_offset

    def _check_contents(self) -> None:
        for p in range(PARTITIONS):
            records = read_records(self.log.read("t", p, 0, 1 << 30).records)
            assert [r.offset for r in records] == list(range(len(self.model[p])))
            assert [r.value for r in records] == self.model[p]

    # ------------------------------------------------------------------ rules

    @initialize(n=st.integers(1, 3))
    def producers_start(self, n: int) -> None:
        for _ in range(n):
            pid, epoch = self.log.init_producer_id()
            assert epoch == 0
            assert pid not in {p.producer_id for p in self.producers}
            self.producers.append(Producer(producer_id=pid))

    @rule(partition=st.integers(0, PARTITIONS - 1), values=values_st)
    def plain_append(self, partition: int, values: list[bytes | None]) -> None:
        self._append_ok(partition, build_batch([(None, v) for v in values]), values)

    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), values=values_st)
    def idempotent_send(
        self, data: st.DataObject, partition: int, values: list[bytes | None]
    ) -> None:
        self._send(data.draw(st.sampled_from(self.producers)), partition, values)

    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), count=st.integers(2, 8))
    def idempotent_burst(self, data: st.DataObject, partition: int, count: int) -> None:
        """Several sends in a row, so retries reach past the five remembered batches."""
        producer = data.draw(st.sampled_from(self.producers))
        for i in range(count):
            self._send(producer, partition, [f"burst{i}".encode()])

    def _send(self, producer: Producer, partition: int, values: list[bytes | None]) -> None:
        seq = producer.next_seq.get(partition, 0)
        batch = build_batch(
            [(b"i", v) for v in values],
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            base_sequence=seq,
        )
        offset = self._append_ok(partition, batch, values)
        producer.sent.setdefault(partition, []).append(Sent(producer.epoch, seq, batch, offset))
        producer.next_seq[partition] = seq + len(values)
        producer.fenced_at.add(partition)

    @rule(data=st.data())
    def retry_recent(self, data: st.DataObject) -> None:
        candidates = [
            (p, partition, s)
            for p in self.producers
            for partition in range(PARTITIONS)
            for s in p.current(partition)[-PRODUCER_BATCHES_RETAINED:]
        ]
        if not candidates:
            return
        _, partition, sent = data.draw(st.sampled_from(candidates))
        result = self.log.append("t", partition, sent.batch)
        assert result.duplicate and result.base_offset == sent.offset

    @rule(data=st.data())
    def retry_forgotten(self, data: st.DataObject) -> None:
        candidates = [
            (partition, s)
            for p in self.producers
            for partition in range(PARTITIONS)
            for s in p.current(partition)[:-PRODUCER_BATCHES_RETAINED]
        ]
        if not candidates:
            return
        partition, sent = data.draw(st.sampled_from(candidates))
        try:
            self.log.append("t", partition, sent.batch)
        except OutOfOrderSequenceNumberError:
            return
        raise AssertionError("a batch older than the last five was appended again")

    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), skip=st.integers(1, 5))
    def sequence_gap(self, data: st.DataObject, partition: int, skip: int) -> None:
        producer = data.draw(st.sampled_from(self.producers))
        if partition not in producer.fenced_at:
            return  # a producer new to a partition (or epoch) may start anywhere
        batch = build_batch(
            [(None, b"gap")],
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch,
            base_sequence=producer.next_seq.get(partition, 0) + skip,
        )
        try:
            self.log.append("t", partition, batch)
        except OutOfOrderSequenceNumberError:
            return
        raise AssertionError("a sequence gap was accepted")

    @rule(data=st.data())
    def bump_epoch(self, data: st.DataObject) -> None:
        """What an idempotent Java/librdkafka producer does after an unresolved error."""
        producer = data.draw(st.sampled_from(self.producers))
        producer.epoch += 1
        producer.next_seq.clear()
        producer.fenced_at.clear()

    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1))
    def stale_epoch(self, data: st.DataObject, partition: int) -> None:
        producer = data.draw(st.sampled_from(self.producers))
        if producer.epoch == 0 or partition not in producer.fenced_at:
            return
        batch = build_batch(
            [(None, b"stale")],
            producer_id=producer.producer_id,
            producer_epoch=producer.epoch - 1,
            base_sequence=0,
        )
        try:
            self.log.append("t", partition, batch)
        except InvalidProducerEpochError:
            return
        raise AssertionError("a fenced epoch was accepted")

    @rule(partition=st.integers(0, PARTITIONS - 1), where=st.integers(21, 60))
    def corrupt_append(self, partition: int, where: int) -> None:
        good = bytearray(build_batch([(None, b"payload")]))
        good[where] ^= 0x40
        try:
            self.log.append("t", partition, bytes(good))
        except CorruptMessageError:
            return
        raise AssertionError("a batch with a bad CRC was accepted")

    @rule(data=st.data(), partition=st.integers(0, PARTITIONS - 1), max_bytes=st.integers(1, 400))
    def read_from(self, data: st.DataObject, partition: int, max_bytes: int) -> None:
        end = len(self.model[partition])
        offset = data.draw(st.integers(0, end))
        result = self.log.read("t", partition, offset, max_bytes)
        assert result.high_watermark == end and result.log_start_offset == 0
        records = read_records(result.records)
        if offset == end:
            assert records == []
            return
        first = records[0].offset
        assert first <= offset  # whole batches, starting with the one holding ``offset``
        assert [r.offset for r in records] == list(range(first, first + len(records)))
        assert [r.value for r in records] == self.model[partition][first : first + len(records)]
        assert records[-1].offset >= offset

    @rule()
    def restart(self) -> None:
        before = [self.log.read("t", p, 0, 1 << 30) for p in range(PARTITIONS)]
        if self.use_sqlite:
            self.log.close()
        self.log = TopicLog(self._store())
        assert [self.log.read("t", p, 0, 1 << 30) for p in range(PARTITIONS)] == before

    @precondition(lambda self: len(self.producers) < 4)
    @rule()
    def new_producer(self) -> None:
        pid, _ = self.log.init_producer_id()
        assert pid not in {p.producer_id for p in self.producers}
        self.producers.append(Producer(producer_id=pid))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def log_end_matches_model(self) -> None:
        for p in range(PARTITIONS):
            assert self.log.end_offset("t", p) == len(self.model[p])


class SqliteLogMachine(LogMachine):
    use_sqlite = True


_settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestTopicLogMemory = LogMachine.TestCase
TestTopicLogMemory.settings = _settings
TestTopicLogSqlite = SqliteLogMachine.TestCase
TestTopicLogSqlite.settings = settings(_settings, max_examples=25)
