"""The topic log: topics, partitions, appends, reads, offsets, idempotent producers (sans-IO).

No clock, no threads, no sockets: the caller passes everything in. The log keeps every
batch in memory (``groupcoord serve`` is a test broker; the log is never truncated) and
writes through to a :class:`~groupcoord.storage.log_store.LogStore` before it changes its own
state, so nothing is acknowledged that the store has not made durable.

Kafka semantics followed (single broker, one replica, CreateTime topics, no retention):

- offsets are assigned densely by the log; the log start offset is always 0 and the high
  watermark (= last stable offset, there are no transactions) is the log end offset;
- a produced batch is validated as Kafka's ``ProduceRequest`` and ``LogValidator`` do for
  Produce v3+ (:func:`~groupcoord.broker.records.validate_produced_batch`; a magic 0/1
  message set is INVALID_RECORD there, not UNSUPPORTED_FOR_MESSAGE_FORMAT), stored as sent
  apart from the base offset and partition leader epoch (-1, "unknown", as the Metadata
  answers say); with the caller's ``now_ms``, timestamps more than an hour ahead are
  INVALID_TIMESTAMP (Kafka 4's ``log.message.timestamp.after.max.ms``);
- idempotent producers as Kafka 3.x's ``ProducerStateManager``: per (producer, partition)
  the epoch and the last five batches; a retry of one of them is answered with the
  original offset and not appended again; a stale epoch is INVALID_PRODUCER_EPOCH; a
  sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER; a producer the partition has no state for
  may start at any sequence (Kafka stopped sending UNKNOWN_PRODUCER_ID for that in 2.5);
  a new epoch must start at sequence 0;
- transactions are not supported: a transactional batch is refused with INVALID_REQUEST
  (a broker that has no transaction coordinator cannot take part in one; the producer
  fails at once with that error instead of hanging on a retriable one).
"""

from __future__ import annotations

import bisect
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from groupcoord.broker.records import (
    parse_header,
    record_timestamps,
    rewrite_for_append,
    validate_produced_batch,
)
from groupcoord.errors import (
    InvalidPartitionsError,
    InvalidProducerEpochError,
    InvalidRequestError,
    InvalidTimestampError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from groupcoord.storage.log_store import (
    BatchMetadata,
    LogStore,
    ProducerEntry,
    StoredBatch,
    TopicRecord,
)

__all__ = [
    "DEFAULT_MAX_BATCH_BYTES",
    "EARLIEST_LOCAL_TIMESTAMP",
    "EARLIEST_TIMESTAMP",
    "LATEST_TIERED_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "MAX_PARTITIONS_PER_REQUEST",
    "MAX_TIMESTAMP",
    "PRODUCER_BATCHES_RETAINED",
    "STORED_LEADER_EPOCH",
    "TIMESTAMP_AFTER_MAX_MS",
    "AppendResult",
    "OffsetLookup",
    "ReadResult",
    "TopicInfo",
    "TopicLog",
    "validate_topic_name",
]

#: Kafka's default ``max.message.bytes`` (1 MiB + record batch overhead).
DEFAULT_MAX_BATCH_BYTES = 1_048_588
#: ListOffsets special timestamps (Kafka's ``ListOffsetsRequest`` constants).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
#: Partition leader epoch written into stored batches: "unknown", matching Metadata's -1.
STORED_LEADER_EPOCH = -1
#: Kafka 4's ``log.message.timestamp.after.max.ms`` default: how far ahead of the broker's
#: clock a record timestamp may be.
TIMESTAMP_AFTER_MAX_MS = 3_600_000
#: Kafka's controller refuses to create more partitions than this in one request
#: (``MAX_PARTITIONS_PER_BATCH``); the log applies it per topic, so that no request can make
#: it allocate without bound.
MAX_PARTITIONS_PER_REQUEST = 10_000
#: Kafka's ProducerStateManager keeps this many batches per producer for duplicate detection.
PRODUCER_BATCHES_RETAINED = 5

_MAX_TOPIC_NAME = 249
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_RESERVED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_INT32_MAX = 2**31 - 1


def validate_topic_name(name: str) -> None:
    """INVALID_TOPIC_EXCEPTION unless ``name`` is a legal Kafka topic name."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > _MAX_TOPIC_NAME:
        raise InvalidTopicError(f"topic name is longer than {_MAX_TOPIC_NAME} characters")
    if not _LEGAL_TOPIC.fullmatch(name):
        raise InvalidTopicError(f"topic name {name!r} has characters outside [a-zA-Z0-9._-]")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """Where a produced batch landed. ``duplicate``: a retry answered with its first offset."""

    base_offset: int
    log_start_offset: int
    duplicate: bool = False
    #: -1: every topic is CreateTime, so the broker sets no append time.
    log_append_time_ms: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    records: bytes
    high_watermark: int
    log_start_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetLookup:
    """A ListOffsets answer: -1/-1 when no record matches."""

    offset: int
    timestamp: int


class _Partition:
    __slots__ = ("base_offsets", "batches", "end_offset", "max_timestamps", "producers")

    def __init__(self, batches: list[StoredBatch], producers: dict[int, ProducerEntry]) -> None:
        self.batches = batches
        self.base_offsets = [b.base_offset for b in batches]
        self.max_timestamps = [b.max_timestamp for b in batches]
        self.end_offset = batches[-1].last_offset + 1 if batches else 0
        self.producers = producers


class TopicLog:
    """Topics and their partitions' record batches; see the module docstring for semantics."""

    __slots__ = (
        "_by_id",
        "_listeners",
        "_max_batch_bytes",
        "_new_topic_id",
        "_partitions",
        "_store",
        "_topic_listeners",
        "_topics",
    )

    def __init__(
        self,
        store: LogStore,
        *,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        new_topic_id: Callable[[], uuid.UUID] = uuid.uuid4,
    ) -> None:
        self._store = store
        self._max_batch_bytes = max_batch_bytes
        self._new_topic_id = new_topic_id
        self._listeners: list[Callable[[str, int], None]] = []
        self._topic_listeners: list[Callable[[], None]] = []
        loaded = store.load()
        self._topics: dict[str, TopicInfo] = {}
        self._by_id: dict[uuid.UUID, TopicInfo] = {}
        self._partitions: dict[tuple[str, int], _Partition] = {}
        for record in loaded.topics.values():
            self._add_topic(record)
            for p in range(record.partitions):
                self._partitions[(record.name, p)] = _Partition(
                    loaded.batches.get((record.name, p), []),
                    loaded.producers.get((record.name, p), {}),
                )

    # ------------------------------------------------------------------ topics

    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._topics)

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: uuid.UUID) -> TopicInfo | None:
        return self._by_id.get(topic_id)

    def partitions_per_topic(self) -> dict[str, int]:
        return {name: t.partitions for name, t in self._topics.items()}

    def partition_count(self, topic: str) -> int | None:
        """The coordinator's :class:`~groupcoord.coordinator.TopicView`: ``topic``'s
        partitions, ``None`` if it does not exist."""
        info = self._topics.get(topic)
        return None if info is None else info.partitions

    def check_new_topic(self, name: str, partitions: int) -> None:
        """Raise what creating this topic would raise, without creating it."""
        validate_topic_name(name)
        if name in _RESERVED_TOPICS:
            raise InvalidRequestError(f"creation of internal topic {name} is prohibited")
        if name in self._topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        # Kafka refuses names that differ only in '.' vs '_' (they collide in metric names).
        folded = name.replace(".", "_")
        for existing in self._topics:
            if existing.replace(".", "_") == folded:
                raise InvalidTopicError(f"topic {name!r} collides with existing topic {existing!r}")
        if partitions < 1:
            raise InvalidPartitionsError(f"number of partitions must be >= 1, not {partitions}")
        if partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError(
                f"excessively large number of partitions: {partitions} requested, "
                f"limit {MAX_PARTITIONS_PER_REQUEST}"
            )

    def create_topic(self, name: str, partitions: int) -> TopicInfo:
        self.check_new_topic(name, partitions)
        topic_id = self._new_topic_id()
        while topic_id in self._by_id or topic_id.int == 0:
            topic_id = self._new_topic_id()
        record = TopicRecord(name=name, topic_id=topic_id, partitions=partitions)
        self._store.create_topic(record)
        info = self._add_topic(record)
        for p in range(partitions):
            self._partitions[(name, p)] = _Partition([], {})
        self._topics_changed()
        return info

    def add_partitions(self, name: str, partitions: int) -> TopicInfo:
        """Grow topic ``name`` to ``partitions`` in all, as Kafka's CreatePartitions does:
        existing partitions keep their records, new ones start empty; a topic never shrinks."""
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        # Kafka's own messages (ZkAdminManager / ReplicationControlManager)
        if partitions == info.partitions:
            raise InvalidPartitionsError(f"topic {name!r} already has {partitions} partitions")
        if partitions < info.partitions:
            raise InvalidPartitionsError(
                f"topic {name!r} currently has {info.partitions} partitions, which is higher"
                f" than the requested {partitions}; partitions can be added, never removed"
            )
        if partitions - info.partitions > MAX_PARTITIONS_PER_REQUEST:
            raise PolicyViolationError(
                f"excessively large number of partitions: {partitions - info.partitions}"
                f" requested, limit {MAX_PARTITIONS_PER_REQUEST}"
            )
        self._store.add_partitions(name, partitions)
        for p in range(info.partitions, partitions):
            self._partitions[(name, p)] = _Partition([], {})
        grown = self._add_topic(
            TopicRecord(name=name, topic_id=info.topic_id, partitions=partitions)
        )
        self._topics_changed()
        return grown

    def delete_topic(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r} does not exist")
        self._store.delete_topic(name)
        del self._topics[name]
        del self._by_id[info.topic_id]
        for p in range(info.partitions):
            del self._partitions[(name, p)]
        self._topics_changed()
        return info

    def add_topics_listener(self, fn: Callable[[], None]) -> None:
        """``fn()`` after every topic created, grown or deleted (the coordinator's image
        of the topics follows the log through it)."""
        self._topic_listeners.append(fn)

    def _topics_changed(self) -> None:
        for fn in self._topic_listeners:
            fn()

    def _add_topic(self, record: TopicRecord) -> TopicInfo:
        info = TopicInfo(name=record.name, topic_id=record.topic_id, partitions=record.partitions)
        self._topics[info.name] = info
        self._by_id[info.topic_id] = info
        return info

    def _partition(self, topic: str, partition: int) -> _Partition:
        part = self._partitions.get((topic, partition))
        if part is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{partition} does not exist")
        return part

    # ------------------------------------------------------------------ appends

    def add_append_listener(self, fn: Callable[[str, int], None]) -> None:
        """``fn(topic, partition)`` after every append that added records (not after retries)."""
        self._listeners.append(fn)

    def append(
        self, topic: str, partition: int, records: bytes, *, now_ms: int | None = None
    ) -> AppendResult:
        """Append one produced v2 batch; raises the partition's Kafka error on refusal.

        With ``now_ms`` (the broker's clock), a batch whose max timestamp is more than
        :data:`TIMESTAMP_AFTER_MAX_MS` ahead is refused with INVALID_TIMESTAMP.
        """
        part = self._partition(topic, partition)
        header = validate_produced_batch(records, max_batch_bytes=self._max_batch_bytes)
        if now_ms is not None and header.max_timestamp > now_ms + TIMESTAMP_AFTER_MAX_MS:
            raise InvalidTimestampError(
                f"timestamp {header.max_timestamp} is more than {TIMESTAMP_AFTER_MAX_MS} ms "
                f"ahead of the broker's clock {now_ms}"
            )
        if header.is_transactional:
            raise InvalidRequestError("transactions are not supported by this broker")
        base_offset = part.end_offset
        entry: ProducerEntry | None = None
        if header.has_producer_id:
            current = part.producers.get(header.producer_id)
            if current is not None and current.producer_epoch == header.producer_epoch:
                for meta in current.batches:
                    if (meta.first_seq, meta.last_seq) == (
                        header.base_sequence,
                        header.last_sequence,
                    ):
                        return AppendResult(
                            base_offset=meta.first_offset, log_start_offset=0, duplicate=True
                        )
            kept = _check_producer(current, header.producer_epoch, header.base_sequence)
            meta = BatchMetadata(
                first_seq=header.base_sequence,
                last_seq=header.last_sequence,
                last_offset=base_offset + header.last_offset_delta,
                offset_delta=header.last_offset_delta,
                max_timestamp=header.max_timestamp,
            )
            entry = ProducerEntry(
                producer_id=header.producer_id,
                producer_epoch=header.producer_epoch,
                batches=(*kept, meta)[-PRODUCER_BATCHES_RETAINED:],
            )
        stored = StoredBatch(
            topic=topic,
            partition=partition,
            base_offset=base_offset,
            last_offset=base_offset + header.last_offset_delta,
            max_timestamp=header.max_timestamp,
            data=rewrite_for_append(
                records,
                base_offset=base_offset,
                partition_leader_epoch=STORED_LEADER_EPOCH,
                max_timestamp=header.max_timestamp,
            ),
        )
        self._store.append(stored, entry)
        part.batches.append(stored)
        part.base_offsets.append(stored.base_offset)
        part.max_timestamps.append(stored.max_timestamp)
        part.end_offset = stored.last_offset + 1
        if entry is not None:
            part.producers[entry.producer_id] = entry
        for fn in self._listeners:
            fn(topic, partition)
        return AppendResult(base_offset=base_offset, log_start_offset=0)

    def init_producer_id(self) -> tuple[int, int]:
        """A fresh (producer id, epoch 0), as Kafka answers a non-transactional InitProducerId."""
        return self._store.allocate_producer_id(), 0

    # ------------------------------------------------------------------ reads

    def end_offset(self, topic: str, partition: int) -> int:
        return self._partition(topic, partition).end_offset

    def start_offset(self, topic: str, partition: int) -> int:
        self._partition(topic, partition)
        return 0

    def read(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, min_one: bool = True
    ) -> ReadResult:
        """Whole batches from the one holding ``offset``, at most ``max_bytes`` in total,
        except that with ``min_one`` the first batch comes whole even if larger (KIP-74).

        OFFSET_OUT_OF_RANGE for an offset below the log start or above the log end; at the
        log end the records are empty.
        """
        part = self._partition(topic, partition)
        selected = _select(part, offset, max_bytes, min_one)
        return ReadResult(
            records=b"".join(b.data for b in selected),
            high_watermark=part.end_offset,
            log_start_offset=0,
        )

    def readable_bytes(
        self, topic: str, partition: int, offset: int, max_bytes: int, *, min_one: bool = True
    ) -> int:
        """``len(read(...).records)`` without building the bytes (Fetch long-poll checks)."""
        part = self._partition(topic, partition)
        return sum(len(b.data) for b in _select(part, offset, max_bytes, min_one))

    def offset_for_timestamp(self, topic: str, partition: int, timestamp: int) -> OffsetLookup:
        """ListOffsets: the special timestamps -1..-5, else the first record at or after."""
        part = self._partition(topic, partition)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetLookup(offset=part.end_offset, timestamp=-1)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetLookup(offset=0, timestamp=-1)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            # Nothing is tiered: Kafka answers "no offset" without remote storage.
            return OffsetLookup(offset=-1, timestamp=-1)
        if timestamp == MAX_TIMESTAMP:
            if not part.batches:
                return OffsetLookup(offset=-1, timestamp=-1)
            best = max(part.max_timestamps)
            index = part.max_timestamps.index(best)
            return _record_at_or_after(part.batches[index], best)
        for index, max_ts in enumerate(part.max_timestamps):
            if max_ts >= timestamp:
                return _record_at_or_after(part.batches[index], timestamp)
        return OffsetLookup(offset=-1, timestamp=-1)

    def close(self) -> None:
        self._store.close()


def _check_producer(
    current: ProducerEntry | None, epoch: int, first_seq: int
) -> tuple[BatchMetadata, ...]:
    """Kafka's ProducerAppendInfo epoch and sequence checks; the batch metadata to keep."""
    if current is None:
        return ()
    if epoch < current.producer_epoch:
        raise InvalidProducerEpochError(
            f"producer {current.producer_id} epoch {epoch} is older than {current.producer_epoch}"
        )
    if epoch != current.producer_epoch:
        if first_seq != 0:
            raise OutOfOrderSequenceNumberError(
                f"producer {current.producer_id}: new epoch {epoch} must start at sequence 0, "
                f"not {first_seq}"
            )
        return ()
    last_seq = current.last_seq
    in_sequence = first_seq == last_seq + 1 or (first_seq == 0 and last_seq == _INT32_MAX)
    if not in_sequence:
        raise OutOfOrderSequenceNumberError(
            f"producer {current.producer_id}: sequence {first_seq} after {last_seq}"
        )
    return current.batches


def _select(part: _Partition, offset: int, max_bytes: int, min_one: bool) -> list[StoredBatch]:
    if offset < 0 or offset > part.end_offset:
        raise OffsetOutOfRangeError(f"offset {offset} is outside [0, {part.end_offset}]")
    if offset == part.end_offset:
        return []
    index = bisect.bisect_right(part.base_offsets, offset) - 1
    selected: list[StoredBatch] = []
    total = 0
    for batch in part.batches[index:]:
        size = len(batch.data)
        if total + size > max_bytes and not (min_one and not selected):
            break
        selected.append(batch)
        total += size
    return selected


def _record_at_or_after(batch: StoredBatch, timestamp: int) -> OffsetLookup:
    """The first record of ``batch`` with a timestamp >= ``timestamp``.

    A compressed batch is not opened: its base offset and max timestamp answer (the consumer
    starts at the batch and skips nothing it asked for).
    """
    records = record_timestamps(batch.data, parse_header(batch.data))
    if records is not None:
        for offset, ts in records:
            if ts >= timestamp:
                return OffsetLookup(offset=offset, timestamp=ts)
    return OffsetLookup(offset=batch.base_offset, timestamp=batch.max_timestamp)
