"""Record batch v2 (magic 2) headers: parse, validate a produced batch, rewrite for append.

The log stores batches exactly as producers sent them; the broker only rewrites fields the
CRC does not cover (base offset, partition leader epoch) and, like Kafka's ``LogValidator``,
sets the timestamp type of a CreateTime topic and the records' true max timestamp (both
under the CRC, so it is recomputed when the producer's values differ). Layout (big-endian)::

    0  base_offset i64          21 attributes i16         43 producer_id i64
    8  batch_length i32         23 last_offset_delta i32  51 producer_epoch i16
    12 partition_leader_epoch   27 base_timestamp i64     53 base_sequence i32
    16 magic i8                 35 max_timestamp i64      57 record_count i32
    17 crc u32 (CRC-32C over byte 21 to the end)          61 records...

Error classes follow what Kafka answers a Produce v3+ with: framing, magic and checksum
problems are CORRUPT_MESSAGE or INVALID_RECORD exactly where Kafka's ``ProduceRequest`` /
``LogValidator`` put them (see :func:`validate_produced_batch`).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from crc32c import crc32c

from groupcoord.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageSizeTooLargeError,
    UnsupportedCompressionTypeError,
)

__all__ = [
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "NO_PRODUCER_ID",
    "ZSTD",
    "BatchHeader",
    "iter_batches",
    "parse_header",
    "record_timestamps",
    "rewrite_for_append",
    "validate_produced_batch",
]

#: base_offset + batch_length: the bytes in front of what batch_length counts.
LOG_OVERHEAD = 12
#: A batch header up to (and including) the record count.
HEADER_SIZE = 61
NO_PRODUCER_ID = -1
_CRC_START = 21

_HEADER = struct.Struct(">qiibIhiqqqhii")
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_MAX_TIMESTAMP = struct.Struct(">q")

_COMPRESSION_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
#: Compression codec id of zstd (attributes bits 0-2).
ZSTD = 4
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchHeader:
    """The fixed header of one v2 record batch."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes of the whole batch on the wire."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & _COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & _TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def last_sequence(self) -> int:
        """Sequence of the batch's last record; sequences wrap from 2**31-1 to 0 (as Kafka's)."""
        return _add_sequence(self.base_sequence, self.last_offset_delta)


def _add_sequence(sequence: int, increment: int) -> int:
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


def parse_header(data: bytes | memoryview, pos: int = 0) -> BatchHeader:
    """The header of the batch at ``pos`` (no validation beyond there being enough bytes)."""
    if len(data) - pos < HEADER_SIZE:
        raise CorruptMessageError(f"record batch header needs {HEADER_SIZE} bytes")
    fields = _HEADER.unpack_from(data, pos)
    return BatchHeader(
        base_offset=fields[0],
        batch_length=fields[1],
        partition_leader_epoch=fields[2],
        magic=fields[3],
        crc=fields[4],
        attributes=fields[5],
        last_offset_delta=fields[6],
        base_timestamp=fields[7],
        max_timestamp=fields[8],
        producer_id=fields[9],
        producer_epoch=fields[10],
        base_sequence=fields[11],
        record_count=fields[12],
    )


def iter_batches(data: bytes) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every whole v2 batch in ``data`` (a log read or a fetch response), with its bytes."""
    pos = 0
    while len(data) - pos >= HEADER_SIZE:
        header = parse_header(data, pos)
        end = pos + header.size
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(data):
            return
        yield header, data[pos:end]
        pos = end


def validate_produced_batch(data: bytes, *, max_batch_bytes: int) -> BatchHeader:
    """Check that ``data`` is exactly one well-formed v2 batch a client may produce; its header.

    For an uncompressed batch the returned ``max_timestamp`` is the records' actual maximum
    (what the stored batch must carry); a compressed batch's is the producer's.

    Raises what Kafka answers a Produce v3+ with:

    - no complete batch, more than one batch, magic 0/1, a control batch, a bad offset range
      or record count, malformed records: INVALID_RECORD (Kafka's ``ProduceRequest``
      validation and ``LogValidator``; v0/v1 message sets are refused there, before the
      UNSUPPORTED_FOR_MESSAGE_FORMAT check the older produce versions reach);
    - a batch length below the header size, an unknown magic, a CRC mismatch:
      CORRUPT_MESSAGE;
    - a batch larger than ``max_batch_bytes`` (Kafka's ``max.message.bytes``):
      MESSAGE_TOO_LARGE;
    - an unknown compression codec: UNSUPPORTED_COMPRESSION_TYPE.
    """
    if len(data) < LOG_OVERHEAD:
        raise InvalidRecordError("produce requests must have at least one record batch")
    (batch_length,) = struct.unpack_from(">i", data, 8)
    if batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptMessageError(
            f"record batch length {batch_length} is less than the minimum batch overhead"
        )
    size = batch_length + LOG_OVERHEAD
    if size > len(data):
        raise InvalidRecordError("produce requests must have at least one complete record batch")
    header = parse_header(data)
    if header.magic not in (0, 1, 2):
        raise CorruptMessageError(f"invalid magic {header.magic}")
    if header.magic != 2:
        raise InvalidRecordError("produce requests may only contain record batches of magic 2")
    if size < len(data):
        raise InvalidRecordError("produce requests may contain exactly one record batch")
    if size > max_batch_bytes:
        raise MessageSizeTooLargeError(
            f"record batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}"
        )
    if crc32c(memoryview(data)[_CRC_START:size]) != header.crc:
        raise CorruptMessageError("record batch CRC-32C mismatch")
    if header.compression > ZSTD:
        raise UnsupportedCompressionTypeError(f"unknown compression codec {header.compression}")
    if header.is_control:
        raise InvalidRecordError("clients are not allowed to write control records")
    if header.has_producer_id and header.base_sequence < 0:
        raise InvalidRecordError(f"invalid base sequence {header.base_sequence}")
    if header.last_offset_delta < 0:
        raise InvalidRecordError("record batch has an invalid offset range")
    if header.record_count <= 0:
        raise InvalidRecordError(f"invalid record count {header.record_count}")
    if header.last_offset_delta + 1 != header.record_count:
        raise InvalidRecordError(
            f"inconsistent batch offset range: last offset delta {header.last_offset_delta}, "
            f"{header.record_count} records"
        )
    if header.compression == 0:
        # Compressed record sets are stored unopened (the broker does not need their
        # contents); uncompressed ones are checked record by record so that a consumer never
        # receives offsets outside the batch's range, and their max timestamp is the records'
        # own maximum, which Kafka's LogValidator writes back into the batch.
        max_delta = max(ts_delta for _, ts_delta in _walk_records(data, header))
        return dataclasses.replace(header, max_timestamp=header.base_timestamp + max_delta)
    return header


def record_timestamps(data: bytes, header: BatchHeader) -> list[tuple[int, int]] | None:
    """``(offset, timestamp)`` of every record of an uncompressed stored batch, else ``None``."""
    if header.compression != 0:
        return None
    return [
        (header.base_offset + delta, header.base_timestamp + ts_delta)
        for delta, ts_delta in _walk_records(data, header)
    ]


def rewrite_for_append(
    data: bytes, *, base_offset: int, partition_leader_epoch: int, max_timestamp: int
) -> bytes:
    """The batch as the log stores it: server-assigned base offset and leader epoch, CreateTime
    and ``max_timestamp`` (what :func:`validate_produced_batch` found), as Kafka's
    ``LogValidator`` leaves a batch of a CreateTime topic (every groupcoord topic is one).

    Base offset and leader epoch are outside the CRC; the timestamp type and max timestamp
    are under it, so the CRC is recomputed only when the producer's values differ.
    """
    out = bytearray(data)
    _BASE_OFFSET.pack_into(out, 0, base_offset)
    _LEADER_EPOCH.pack_into(out, 12, partition_leader_epoch)
    (attributes,) = _ATTRIBUTES.unpack_from(out, _CRC_START)
    (sent_max_timestamp,) = _MAX_TIMESTAMP.unpack_from(out, 35)
    if attributes & _TIMESTAMP_TYPE_BIT or sent_max_timestamp != max_timestamp:
        _ATTRIBUTES.pack_into(out, _CRC_START, attributes & ~_TIMESTAMP_TYPE_BIT)
        _MAX_TIMESTAMP.pack_into(out, 35, max_timestamp)
        _CRC.pack_into(out, 17, crc32c(memoryview(out)[_CRC_START:]))
    return bytes(out)


# ---------------------------------------------------------------------------- records


def _walk_records(data: bytes, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """``(offset_delta, timestamp_delta)`` of each record; INVALID_RECORD if malformed."""
    end = header.size
    pos = HEADER_SIZE
    try:
        for expected_delta in range(header.record_count):
            length, pos = _varint(data, pos, end)
            if length < 0:
                raise InvalidRecordError(f"record {expected_delta} has negative length")
            record_end = pos + length
            if record_end > end:
                raise InvalidRecordError(f"record {expected_delta} overruns its batch")
            pos += 1  # attributes (unused in v2)
            ts_delta, pos = _varint(data, pos, record_end)
            offset_delta, pos = _varint(data, pos, record_end)
            if offset_delta != expected_delta:
                raise InvalidRecordError(f"record {expected_delta} has offset delta {offset_delta}")
            for _ in range(2):  # key, value
                pos = _skip_bytes(data, pos, record_end, nullable=True)
            header_count, pos = _varint(data, pos, record_end)
            if header_count < 0:
                raise InvalidRecordError(f"record {expected_delta} has {header_count} headers")
            for _ in range(header_count):
                pos = _skip_bytes(data, pos, record_end, nullable=False)
                pos = _skip_bytes(data, pos, record_end, nullable=True)
            if pos != record_end:
                raise InvalidRecordError(
                    f"record {expected_delta}: fields do not add up to its length"
                )
            yield offset_delta, ts_delta
    except IndexError:
        raise InvalidRecordError("record data ends inside a record") from None
    if pos != end:
        raise InvalidRecordError("record batch has bytes after its last record")


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """A zig-zag varint (or varlong) at ``pos``, and the position after it."""
    if pos < end and data[pos] < 0x80:  # one byte: most lengths and deltas
        byte = data[pos]
        return (byte >> 1) ^ -(byte & 1), pos + 1
    shift = 0
    raw = 0
    while True:
        if pos >= end or shift > 63:
            raise InvalidRecordError("malformed varint in record")
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7


def _skip_bytes(data: bytes, pos: int, end: int, *, nullable: bool) -> int:
    length, pos = _varint(data, pos, end)
    if length < -1 or (length == -1 and not nullable):
        raise InvalidRecordError(f"invalid field length {length} in record")
    pos += max(length, 0)
    if pos > end:
        raise InvalidRecordError("record field overruns its record")
    return pos
