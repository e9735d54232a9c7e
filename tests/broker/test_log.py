"""TopicLog: topics, appends, reads, offsets by timestamp, idempotent producers."""

from __future__ import annotations

import struct
import uuid
from pathlib import Path

import pytest
from crc32c import crc32c

from groupcoord.broker.log import (
    EARLIEST_TIMESTAMP,
    LATEST_TIERED_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_PARTITIONS_PER_REQUEST,
    MAX_TIMESTAMP,
    TIMESTAMP_AFTER_MAX_MS,
    TopicLog,
    validate_topic_name,
)
from groupcoord.broker.records import parse_header
from groupcoord.errors import (
    CorruptMessageError,
    InvalidPartitionsError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidRequestError,
    InvalidTimestampError,
    InvalidTopicError,
    MessageSizeTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    UnsupportedCompressionTypeError,
)
from groupcoord.storage.log_store import MemoryLogStore, SqliteLogStore
from log_batches import BASE_TS, build_batch, read_records


@pytest.fixture(params=["memory", "sqlite"])
def new_log(request: pytest.FixtureRequest, tmp_path: Path):
    """A factory of TopicLogs over one store; calling it again models a restart."""
    opened: list[TopicLog] = []
    memory = MemoryLogStore()

    def factory(**kwargs: object) -> TopicLog:
        if opened and request.param == "sqlite":
            opened[-1].close()
        store = memory if request.param == "memory" else SqliteLogStore(tmp_path / "g.db")
        log = TopicLog(store, **kwargs)  # type: ignore[arg-type]
        opened.append(log)
        return log

    yield factory
    if request.param == "sqlite" and opened:
        opened[-1].close()


def _values(n: int, tag: str = "v") -> list[tuple[bytes | None, bytes | None]]:
    return [(f"k{i}".encode(), f"{tag}{i}".encode()) for i in range(n)]


def _compressible(n: int) -> list[tuple[bytes | None, bytes | None]]:
    """Values gzip shrinks (kafka-python sends a batch uncompressed when it would not)."""
    return [(None, b"z" * 200 + str(i).encode()) for i in range(n)]


# ---------------------------------------------------------------------------- topics


def test_create_topic_assigns_distinct_ids_and_partitions(new_log) -> None:
    log = new_log()
    a = log.create_topic("a", 3)
    b = log.create_topic("b", 1)
    assert a.partitions == 3 and b.partitions == 1
    assert a.topic_id != b.topic_id and a.topic_id.int != 0 and b.topic_id.int != 0
    assert log.topic_by_id(a.topic_id) == a
    assert log.partitions_per_topic() == {"a": 3, "b": 1}
    with pytest.raises(TopicAlreadyExistsError):
        log.create_topic("a", 3)
    with pytest.raises(InvalidPartitionsError):
        log.create_topic("c", 0)
    with pytest.raises(PolicyViolationError):
        log.create_topic("c", MAX_PARTITIONS_PER_REQUEST + 1)
    assert log.topic("c") is None


def test_topic_ids_are_drawn_again_on_collision(new_log) -> None:
    ids = iter([uuid.UUID(int=0), uuid.UUID(int=7), uuid.UUID(int=7), uuid.UUID(int=9)])
    log = new_log(new_topic_id=lambda: next(ids))
    assert log.create_topic("a", 1).topic_id == uuid.UUID(int=7)
    assert log.create_topic("b", 1).topic_id == uuid.UUID(int=9)


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "has space", "slash/", "ü", "tab\t"])
def test_illegal_topic_names_are_invalid_topic(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


@pytest.mark.parametrize("name", ["a", "a" * 249, "A.b_c-9", "...", "__x"])
def test_legal_topic_names(name: str) -> None:
    validate_topic_name(name)


def test_names_colliding_on_dot_and_underscore_are_refused(new_log) -> None:
    log = new_log()
    log.create_topic("a.b", 1)
    with pytest.raises(InvalidTopicError, match="collides"):
        log.create_topic("a_b", 1)


def test_internal_topic_names_cannot_be_created(new_log) -> None:
    with pytest.raises(InvalidRequestError):
        new_log().create_topic("__consumer_offsets", 1)


def test_delete_topic_drops_its_data_and_a_recreated_topic_starts_empty(new_log) -> None:
    log = new_log()
    first = log.create_topic("t", 2)
    log.append("t", 0, build_batch(_values(3)))
    log.delete_topic("t")
    assert log.topic("t") is None and log.topic_by_id(first.topic_id) is None
    with pytest.raises(UnknownTopicOrPartitionError):
        log.delete_topic("t")
    with pytest.raises(UnknownTopicOrPartitionError):
        log.read("t", 0, 0, 1 << 20)
    again = log.create_topic("t", 1)
    assert again.topic_id != first.topic_id
    assert log.end_offset("t", 0) == 0
    log = new_log()
    assert log.topic("t") == again and log.end_offset("t", 0) == 0


def test_add_partitions_grows_a_topic_durably_and_never_shrinks_it(new_log) -> None:
    log = new_log()
    before = log.create_topic("t", 2)
    log.append("t", 1, build_batch(_values(3)))
    grown = log.add_partitions("t", 4)
    assert grown.partitions == 4 and grown.topic_id == before.topic_id
    assert log.topic_by_id(before.topic_id) == grown
    assert log.end_offset("t", 1) == 3 and log.end_offset("t", 3) == 0
    log.append("t", 3, build_batch(_values(1)))
    with pytest.raises(InvalidPartitionsError, match="already has 4 partitions"):
        log.add_partitions("t", 4)
    with pytest.raises(InvalidPartitionsError, match="higher than the requested 3"):
        log.add_partitions("t", 3)
    with pytest.raises(PolicyViolationError):
        log.add_partitions("t", 4 + MAX_PARTITIONS_PER_REQUEST + 1)
    with pytest.raises(UnknownTopicOrPartitionError):
        log.add_partitions("ghost", 2)
    log = new_log()  # restart: the count and the records survive
    assert log.topic("t") == grown
    assert (log.end_offset("t", 1), log.end_offset("t", 3), log.end_offset("t", 2)) == (3, 1, 0)


# ---------------------------------------------------------------------------- append/read


def test_offsets_are_dense_and_records_read_back_byte_exact(new_log) -> None:
    log = new_log()
    log.create_topic("t", 2)
    r1 = log.append("t", 1, build_batch(_values(3, "a"), headers=[("h", b"x")]))
    r2 = log.append("t", 1, build_batch(_values(2, "b"), timestamp_ms=BASE_TS + 100))
    assert (r1.base_offset, r2.base_offset) == (0, 3)
    assert r1.log_append_time_ms == -1 and r1.log_start_offset == 0
    result = log.read("t", 1, 0, 1 << 20)
    assert result.high_watermark == 5 and result.log_start_offset == 0
    got = read_records(result.records)
    assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    assert [r.value for r in got] == [b"a0", b"a1", b"a2", b"b0", b"b1"]
    assert [r.key for r in got] == [b"k0", b"k1", b"k2", b"k0", b"k1"]
    assert [r.timestamp for r in got] == [
        BASE_TS,
        BASE_TS + 1,
        BASE_TS + 2,
        BASE_TS + 100,
        BASE_TS + 101,
    ]
    assert got[0].headers == (("h", b"x"),)
    assert log.end_offset("t", 0) == 0


def test_stored_batch_differs_from_sent_only_in_base_offset_and_leader_epoch(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    log.append("t", 0, build_batch(_values(1)))
    sent = build_batch(_values(4), producer_id=-1)
    log.append("t", 0, sent)
    stored = log.read("t", 0, 1, 1 << 20).records
    assert stored[:8] == struct.pack(">q", 1)
    assert stored[12:16] == struct.pack(">i", -1)
    assert stored[16:] == sent[16:]
    assert stored[8:12] == sent[8:12]


def test_null_keys_and_values_survive(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    log.append("t", 0, build_batch([(None, b"v"), (b"k", None), (None, None)]))
    got = read_records(log.read("t", 0, 0, 1 << 20).records)
    assert [(r.key, r.value) for r in got] == [(None, b"v"), (b"k", None), (None, None)]


def test_read_starts_at_the_batch_holding_the_offset_and_respects_max_bytes(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    sizes = []
    for i in range(4):
        batch = build_batch(_values(3, f"b{i}-"))
        sizes.append(len(batch))
        log.append("t", 0, batch)
    mid = read_records(log.read("t", 0, 4, 1 << 20).records)
    assert [r.offset for r in mid] == list(range(3, 12))  # whole batch holding offset 4
    two = log.read("t", 0, 0, sizes[0] + sizes[1]).records
    assert len(two) == sizes[0] + sizes[1]
    short = log.read("t", 0, 0, sizes[0] + sizes[1] - 1).records
    assert len(short) == sizes[0]
    # KIP-74: the first batch comes whole even if larger than max_bytes ...
    assert len(log.read("t", 0, 0, 1).records) == sizes[0]
    assert log.readable_bytes("t", 0, 0, 1) == sizes[0]
    # ... unless the caller already has data from another partition.
    assert log.read("t", 0, 0, 1, min_one=False).records == b""


def test_read_at_log_end_is_empty_and_beyond_is_out_of_range(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    log.append("t", 0, build_batch(_values(2)))
    assert log.read("t", 0, 2, 100).records == b""
    with pytest.raises(OffsetOutOfRangeError):
        log.read("t", 0, 3, 100)
    with pytest.raises(OffsetOutOfRangeError):
        log.read("t", 0, -1, 100)
    with pytest.raises(UnknownTopicOrPartitionError):
        log.read("t", 1, 0, 100)
    with pytest.raises(UnknownTopicOrPartitionError):
        log.append("nope", 0, build_batch(_values(1)))


def test_append_listener_sees_every_append_but_not_retries(new_log) -> None:
    log = new_log()
    log.create_topic("t", 2)
    seen: list[tuple[str, int]] = []
    log.add_append_listener(lambda t, p: seen.append((t, p)))
    log.append("t", 1, build_batch(_values(1)))
    batch = build_batch(_values(1), producer_id=5, producer_epoch=0, base_sequence=0)
    log.append("t", 0, batch)
    log.append("t", 0, batch)
    with pytest.raises(InvalidRecordError):
        log.append("t", 0, b"")
    assert seen == [("t", 1), ("t", 0)]


def test_compressed_batches_are_stored_unopened(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    sent = build_batch(_compressible(5), compression=1)  # gzip
    assert parse_header(sent).compression == 1
    log.append("t", 0, sent)
    stored = log.read("t", 0, 0, 1 << 20).records
    assert stored[16:] == sent[16:]
    got = read_records(stored)
    assert [(r.offset, r.value) for r in got] == [
        (i, v) for i, (_, v) in enumerate(_compressible(5))
    ]
    assert log.end_offset("t", 0) == 5


# ---------------------------------------------------------------------------- validation


def _with(batch: bytes, pos: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    out = bytearray(batch)
    struct.pack_into(fmt, out, pos, value)
    if fix_crc:
        struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda b: b[:10], InvalidRecordError),  # no complete batch
        (lambda b: b[:-1], InvalidRecordError),  # truncated batch
        (lambda b: b + b, InvalidRecordError),  # two batches
        (lambda b: _with(b, 8, ">i", 20, fix_crc=False), CorruptMessageError),  # tiny length
        (lambda b: _with(b, 16, ">b", 1, fix_crc=False), InvalidRecordError),  # magic 1
        (lambda b: _with(b, 16, ">b", 0, fix_crc=False), InvalidRecordError),  # magic 0
        (lambda b: _with(b, 16, ">b", 7, fix_crc=False), CorruptMessageError),  # bad magic
        (lambda b: _with(b, 17, ">I", 12345, fix_crc=False), CorruptMessageError),  # CRC
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), CorruptMessageError),  # payload bit flip
        (lambda b: _with(b, 57, ">i", 4), InvalidRecordError),  # count vs last delta
        (lambda b: _with(b, 23, ">i", 3), InvalidRecordError),  # last delta vs count
        (lambda b: _with(b, 23, ">i", -1), InvalidRecordError),  # negative range
        (lambda b: _with(b, 21, ">h", 0x20), InvalidRecordError),  # control batch
        (lambda b: _with(b, 21, ">h", 0x10), InvalidRequestError),  # transactional
        (lambda b: _with(b, 21, ">h", 5), UnsupportedCompressionTypeError),
        (lambda b: _with(b, 61, ">b", 0x7F), InvalidRecordError),  # bad record length
    ],
)
def test_bad_batches_get_kafkas_error(new_log, mutate, error) -> None:
    log = new_log()
    log.create_topic("t", 1)
    good = build_batch(_values(3))
    with pytest.raises(error):
        log.append("t", 0, mutate(good))
    assert log.end_offset("t", 0) == 0
    assert log.append("t", 0, good).base_offset == 0


def test_record_offset_deltas_must_be_sequential(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    builder_batch = build_batch(_values(2))
    # The second record's offset delta sits after its length, attributes and timestamp delta.
    header = parse_header(builder_batch)
    first_len = builder_batch[61] >> 1
    second = 61 + 1 + first_len
    assert builder_batch[second + 3] == 2  # zig-zag(1)
    bad = _with(builder_batch, second + 3, ">b", 4)  # zig-zag(2)
    assert parse_header(bad).record_count == header.record_count
    with pytest.raises(InvalidRecordError, match="offset delta"):
        log.append("t", 0, bad)


def test_batches_above_max_message_bytes_are_too_large(new_log) -> None:
    log = new_log(max_batch_bytes=200)
    log.create_topic("t", 1)
    with pytest.raises(MessageSizeTooLargeError):
        log.append("t", 0, build_batch([(None, b"x" * 300)]))
    log.append("t", 0, build_batch([(None, b"x")]))


def test_log_append_time_flag_is_turned_into_create_time_with_a_valid_crc(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    sent = _with(build_batch(_values(2)), 21, ">h", 0x08)
    log.append("t", 0, sent)
    stored = log.read("t", 0, 0, 1 << 20).records
    assert parse_header(stored).attributes == 0
    assert [r.timestamp for r in read_records(stored)] == [BASE_TS, BASE_TS + 1]


def test_timestamps_too_far_ahead_of_the_broker_clock_are_refused(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    batch = build_batch(_values(1), timestamp_ms=BASE_TS)
    with pytest.raises(InvalidTimestampError):
        log.append("t", 0, batch, now_ms=BASE_TS - TIMESTAMP_AFTER_MAX_MS - 1)
    assert log.append("t", 0, batch, now_ms=BASE_TS - TIMESTAMP_AFTER_MAX_MS).base_offset == 0


# ---------------------------------------------------------------------------- timestamps


def test_offset_for_timestamp(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    assert log.offset_for_timestamp("t", 0, LATEST_TIMESTAMP).offset == 0
    assert log.offset_for_timestamp("t", 0, MAX_TIMESTAMP).offset == -1
    log.append("t", 0, build_batch(_values(3), timestamps=[100, 300, 200]))
    log.append("t", 0, build_batch(_values(2), timestamps=[250, 260]))
    log.append("t", 0, build_batch(_compressible(2), timestamps=[400, 500], compression=1))
    lookup = log.offset_for_timestamp
    assert (
        lookup("t", 0, LATEST_TIMESTAMP).offset,
        lookup("t", 0, LATEST_TIMESTAMP).timestamp,
    ) == (7, -1)
    assert lookup("t", 0, EARLIEST_TIMESTAMP).offset == 0
    assert lookup("t", 0, LATEST_TIERED_TIMESTAMP).offset == -1
    assert (lookup("t", 0, 0).offset, lookup("t", 0, 0).timestamp) == (0, 100)
    assert (lookup("t", 0, 150).offset, lookup("t", 0, 150).timestamp) == (1, 300)
    assert (lookup("t", 0, 300).offset, lookup("t", 0, 300).timestamp) == (1, 300)
    # The second batch's max is below 301: the search moves on to the compressed batch,
    # which answers with its base offset and max timestamp.
    assert (lookup("t", 0, 301).offset, lookup("t", 0, 301).timestamp) == (5, 500)
    assert (lookup("t", 0, 501).offset, lookup("t", 0, 501).timestamp) == (-1, -1)
    assert (lookup("t", 0, MAX_TIMESTAMP).offset, lookup("t", 0, MAX_TIMESTAMP).timestamp) == (
        5,
        500,
    )


def test_max_timestamp_finds_the_record_in_an_uncompressed_batch(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    log.append("t", 0, build_batch(_values(3), timestamps=[100, 900, 200]))
    found = log.offset_for_timestamp("t", 0, MAX_TIMESTAMP)
    assert (found.offset, found.timestamp) == (1, 900)


# ---------------------------------------------------------------------------- producers


def _pbatch(n: int, seq: int, *, pid: int = 7, epoch: int = 0, tag: str = "p") -> bytes:
    return build_batch(_values(n, tag), producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_init_producer_id_never_repeats_across_restarts(new_log) -> None:
    log = new_log()
    first = [log.init_producer_id() for _ in range(3)]
    log = new_log()
    second = [log.init_producer_id() for _ in range(3)]
    ids = [pid for pid, _ in first + second]
    assert len(set(ids)) == 6
    assert {epoch for _, epoch in first + second} == {0}


def test_retry_of_a_recent_batch_returns_its_offset_without_appending(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    log.append("t", 0, build_batch(_values(2)))
    b0 = _pbatch(3, 0)
    b1 = _pbatch(2, 3)
    assert log.append("t", 0, b0).base_offset == 2
    assert log.append("t", 0, b1).base_offset == 5
    again = log.append("t", 0, b0)
    assert (again.base_offset, again.duplicate) == (2, True)
    assert log.append("t", 0, b1).base_offset == 5
    assert log.end_offset("t", 0) == 7
    log = new_log()  # dedup state survives a restart
    assert log.append("t", 0, b1).duplicate
    assert log.end_offset("t", 0) == 7


def test_only_the_last_five_batches_are_remembered(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    batches = [_pbatch(1, seq) for seq in range(7)]
    for b in batches:
        log.append("t", 0, b)
    assert log.append("t", 0, batches[2]).duplicate
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append("t", 0, batches[1])


def test_sequence_gaps_and_epochs(new_log) -> None:
    log = new_log()
    log.create_topic("t", 2)
    log.append("t", 0, _pbatch(2, 0))
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append("t", 0, _pbatch(1, 3))  # expected 2
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append("t", 0, _pbatch(1, 1))  # overlaps, not a retry
    # A new epoch must start at 0; then the old epoch is fenced.
    with pytest.raises(OutOfOrderSequenceNumberError):
        log.append("t", 0, _pbatch(1, 5, epoch=1))
    assert log.append("t", 0, _pbatch(1, 0, epoch=1)).base_offset == 2
    with pytest.raises(InvalidProducerEpochError):
        log.append("t", 0, _pbatch(1, 2, epoch=0))
    # State is per partition, and a producer new to a partition may start anywhere.
    assert log.append("t", 1, _pbatch(1, 42)).base_offset == 0
    assert log.append("t", 1, _pbatch(1, 43)).base_offset == 1
    assert log.end_offset("t", 0) == 3


def test_sequences_wrap_at_int32_max(new_log) -> None:
    log = new_log()
    log.create_topic("t", 1)
    top = 2**31 - 1
    first = _pbatch(2, top - 1)  # sequences top-1, top
    log.append("t", 0, first)
    assert parse_header(first).last_sequence == top
    log.append("t", 0, _pbatch(3, 0))
    wrapping = _pbatch(3, top)  # would be top, 0, 1
    assert parse_header(wrapping).last_sequence == 1
    assert log.end_offset("t", 0) == 5
