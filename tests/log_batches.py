"""Record batches for the log tests, built and read with kafka-python's own v2 codec.

Not a test module: tests/broker/ and tests/server/test_server.py import it, so what the
log stores and returns is checked against an independent implementation of the format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

#: A fixed "now" for record timestamps (2023-11-14), far from the broker's future limit.
BASE_TS = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class ReadRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def build_batch(
    values: Sequence[tuple[bytes | None, bytes | None]],
    *,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_ms: int = BASE_TS,
    timestamps: Sequence[int] | None = None,
    compression: int = 0,
    transactional: bool = False,
    headers: Sequence[tuple[str, bytes]] = (),
) -> bytes:
    """One v2 batch of ``values`` (key, value) as kafka-python's producer would send it."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 30,
    )
    for i, (key, value) in enumerate(values):
        ts = timestamps[i] if timestamps is not None else timestamp_ms + i
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=list(headers))
    return bytes(builder.build())


def read_records(data: bytes) -> list[ReadRecord]:
    """Every record in ``data`` (concatenated batches), CRCs checked by kafka-python."""
    out: list[ReadRecord] = []
    records = MemoryRecords(data)
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        assert batch.validate_crc(), "stored batch has a bad CRC"
        for r in batch:
            out.append(ReadRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers or ())))
    return out
