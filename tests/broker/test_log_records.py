"""Record batch headers: properties against kafka-python's independent v2 codec.

Any batch kafka-python builds is accepted and parsed to the same header fields; any byte
flipped where the CRC or the structure would notice is refused with a Kafka error; no input
at all makes validation raise anything but a Kafka error.
"""

from __future__ import annotations

import contextlib

import hypothesis.strategies as st
from crc32c import crc32c
from hypothesis import given, settings
from kafka.record.default_records import DefaultRecordBatch

from groupcoord.broker.records import (
    HEADER_SIZE,
    iter_batches,
    parse_header,
    record_timestamps,
    rewrite_for_append,
    validate_produced_batch,
)
from groupcoord.errors import KafkaError
from log_batches import BASE_TS, build_batch, read_records

records_st = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=40))
    ),
    min_size=1,
    max_size=12,
)
producer_st = st.one_of(
    st.just((-1, -1, -1)),
    st.tuples(st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)),
)
headers_st = st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2)


@given(records=records_st, producer=producer_st, headers=headers_st, ts=st.integers(0, 2**41))
def test_kafka_python_batches_are_accepted_and_parsed_alike(records, producer, headers, ts) -> None:
    pid, epoch, seq = producer
    batch = build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        timestamp_ms=ts,
        headers=headers,
    )
    header = validate_produced_batch(batch, max_batch_bytes=1 << 20)
    theirs = DefaultRecordBatch(bytearray(batch))
    assert header.size == len(batch) == theirs.size_in_bytes
    assert header.record_count == len(records) == theirs.records_count
    assert header.last_offset_delta == theirs.last_offset_delta
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (pid, epoch, seq)
    assert header.max_timestamp == theirs.max_timestamp == ts + len(records) - 1
    assert header.crc == theirs.crc
    if pid >= 0:
        assert header.last_sequence == theirs.last_sequence
    assert record_timestamps(batch, header) == [(i, ts + i) for i in range(len(records))]


@given(records=records_st, base=st.integers(0, 2**62), epoch=st.integers(-1, 2**31 - 1))
def test_rewrite_changes_only_offsets_and_keeps_records(records, base, epoch) -> None:
    batch = build_batch(records)
    max_ts = parse_header(batch).max_timestamp
    stored = rewrite_for_append(
        batch, base_offset=base, partition_leader_epoch=epoch, max_timestamp=max_ts
    )
    header = parse_header(stored)
    assert (header.base_offset, header.partition_leader_epoch) == (base, epoch)
    assert stored[16:] == batch[16:]
    got = read_records(stored)
    assert [(r.offset, r.key, r.value) for r in got] == [
        (base + i, k, v) for i, (k, v) in enumerate(records)
    ]
    assert [h for h, _ in iter_batches(stored + stored)] == [header, header]


@given(records=records_st, data=st.data())
def test_flipped_bytes_under_the_crc_are_refused(records, data) -> None:
    batch = bytearray(build_batch(records))
    pos = data.draw(st.integers(8, len(batch) - 1).filter(lambda p: not 12 <= p < 16))
    batch[pos] ^= data.draw(st.integers(1, 255))
    try:
        validate_produced_batch(bytes(batch), max_batch_bytes=1 << 20)
    except KafkaError:
        return
    raise AssertionError(f"byte {pos} changed and the batch was still accepted")


@settings(max_examples=300)
@given(prefix=st.binary(max_size=HEADER_SIZE + 40), records=records_st, cut=st.integers(0, 400))
def test_validation_never_raises_anything_but_kafka_errors(prefix, records, cut) -> None:
    for candidate in (prefix, build_batch(records)[:cut], prefix + build_batch(records)):
        with contextlib.suppress(KafkaError):  # anything else fails the test
            validate_produced_batch(candidate, max_batch_bytes=1 << 20)


def test_base_timestamp_is_kept_for_record_timestamps() -> None:
    batch = build_batch([(None, b"a"), (None, b"b")], timestamps=[BASE_TS + 5, BASE_TS])
    header = validate_produced_batch(batch, max_batch_bytes=1 << 20)
    assert header.base_timestamp == BASE_TS + 5
    assert header.max_timestamp == BASE_TS + 5
    assert record_timestamps(batch, header) == [(0, BASE_TS + 5), (1, BASE_TS)]


@given(records=records_st, stamps=st.data())
def test_the_stored_max_timestamp_is_the_records_maximum(records, stamps) -> None:
    """Producers may put any max timestamp in the header; the broker stores the true one."""
    timestamps = stamps.draw(
        st.lists(st.integers(0, 2**40), min_size=len(records), max_size=len(records))
    )
    batch = bytearray(build_batch(records, timestamps=timestamps))
    lie = stamps.draw(st.integers(-1, 2**41))
    batch[35:43] = lie.to_bytes(8, "big", signed=True)
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    header = validate_produced_batch(bytes(batch), max_batch_bytes=1 << 20)
    assert header.max_timestamp == max(timestamps)
    stored = rewrite_for_append(
        bytes(batch), base_offset=0, partition_leader_epoch=-1, max_timestamp=header.max_timestamp
    )
    assert DefaultRecordBatch(bytearray(stored)).validate_crc()
    assert parse_header(stored).max_timestamp == max(timestamps)
    assert stored[43:] == bytes(batch[43:])
