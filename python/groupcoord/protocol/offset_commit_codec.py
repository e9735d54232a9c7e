"""A hand-written codec for the common OffsetCommit (API 8, v2-v9) frames: the durable
commit path of the server.

With group commit the disk is no longer what limits durable commits; the generic path
(kio payload objects, the length guard, the mapping onto coordinator messages and back)
is, at several times the coordinator's own work per commit. This module reads a whole
OffsetCommit request frame body (header included) straight into the coordinator's
:class:`~groupcoord.coordinator.OffsetCommitRequest` and writes a whole response frame
from the coordinator's :class:`~groupcoord.coordinator.OffsetCommitResponse`.

Only the common case is read here: no null but a null ``client_id``,
``group_instance_id`` or ``committed_metadata``, strings and arrays shorter than 127 (one
varint byte), no tagged fields, no bytes after the body, valid UTF-8, the default
retention time (-1) in v2-v4, values the coordinator's request accepts.
:func:`decode_offset_commit_request` returns ``None`` for anything else, and the caller
takes the generic path, so every unusual frame is answered (or refused) exactly as before.
What is read and written here is byte for byte what the generic path reads and writes
(differential tests: ``tests/protocol/test_offset_commit_codec.py``).

Layouts (request header v1 for v2-v7, v2 for v8+; response header v0 / v1 likewise):

- request header: ``int16 api_key, int16 api_version, int32 correlation_id, nullable
  string client_id`` (always int16-length), then tagged fields in v2;
- request body: ``group_id, int32 generation_id_or_member_epoch, member_id``, v7+
  ``nullable group_instance_id``, v2-v4 ``int64 retention_time_ms``, ``topics: [name,
  partitions: [int32 partition_index, int64 committed_offset, v6+ int32
  committed_leader_epoch, nullable committed_metadata]]``; v8+ strings and arrays are
  compact (uvarint length + 1) and every struct ends with tagged fields;
- response: ``int32 correlation_id`` (+ tagged fields in v8+), v3+ ``int32
  throttle_time_ms``, ``topics: [name, partitions: [int32 partition_index, int16
  error_code]]``, compact with tagged fields in v8+.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any, Final

from groupcoord.coordinator import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from groupcoord.protocol.frame_reader import FrameReader
from groupcoord.protocol.frame_reader import Unusual as _Unusual

__all__ = [
    "OFFSET_COMMIT_API_KEY",
    "decode_offset_commit_request",
    "encode_offset_commit_response",
    "offset_commit_prefixes",
]

OFFSET_COMMIT_API_KEY: Final = 8
#: the versions read here (v0 and v1 carry other fields; the generic path serves them)
_MIN: Final = 2
_MAX: Final = 9
#: the first flexible version (compact strings and arrays, tagged fields, header v2 / v1)
_FLEXIBLE: Final = 8

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id length
_PARTITION = struct.Struct(">iq")  # partition_index, committed_offset
_RESPONSE_PARTITION = struct.Struct(">ih")  # partition_index, error_code


def offset_commit_prefixes(min_version: int, max_version: int) -> dict[bytes, int]:
    """The first four bytes (api key, version) of the OffsetCommit request frame bodies
    read here, of the versions from ``min_version`` to ``max_version``, mapped to the
    version: one dictionary lookup tells a dispatcher to try this codec."""
    lo, hi = max(min_version, _MIN), min(max_version, _MAX)
    return {struct.pack(">hh", OFFSET_COMMIT_API_KEY, v): v for v in range(lo, hi + 1)}


class _Reader(FrameReader):
    """OffsetCommit's encodings: compact (``flexible``, v8+) or classic lengths."""

    __slots__ = ("flexible",)

    def __init__(self, frame: bytes, pos: int, flexible: bool) -> None:
        super().__init__(frame, pos)
        self.flexible = flexible

    def uvarint(self) -> int:
        frame, pos = self.frame, self.pos
        if pos < len(frame) and frame[pos] < 0x80:  # lengths and counts under 128
            self.pos = pos + 1
            return frame[pos]
        raise _Unusual

    def string(self, nullable: bool = False) -> str | None:
        if self.flexible:
            length = self.uvarint() - 1
        else:
            length = _INT16.unpack_from(self.frame, self._take(2))[0]
        if length < 0:
            if length == -1 and nullable:
                return None
            raise _Unusual
        start = self._take(length)
        try:
            return self.frame[start : self.pos].decode("utf-8")
        except UnicodeDecodeError:
            raise _Unusual from None

    def count(self) -> int:
        n = self.uvarint() - 1 if self.flexible else self.int32()
        if n < 0:
            raise _Unusual  # a null array
        return n

    def no_tagged_fields(self) -> None:
        if self.flexible and self.uvarint() != 0:
            raise _Unusual


_new = object.__new__
_set = object.__setattr__


def _partition(index: int, offset: int, epoch: int, metadata: str | None) -> Any:
    """An OffsetCommitRequestPartition without its ``__post_init__`` checks (as the
    Heartbeat codec builds its request): the reader guarantees what they check (an int32
    index and epoch, an int64 offset, a str or None), and the differential tests compare
    these objects with validated ones."""
    p = _new(OffsetCommitRequestPartition)
    _set(p, "partition_index", index)
    _set(p, "committed_offset", offset)
    _set(p, "committed_leader_epoch", epoch)
    _set(p, "commit_timestamp", -1)
    _set(p, "committed_metadata", metadata)
    return p


#: The request is built without its ``__post_init__`` checks too (they cost as much as the
#: rest of the decoding), for the same reason: the reader reads each version's fields only
#: (an instance id from v7, an epoch from v6), refuses a retention other than -1 and
#: versions outside 2-9, so every check would pass. The fields it sets are these; a field
#: added to the message fails here, at import, instead of being left unset.
_REQUEST_FIELDS = (
    "version",
    "correlation",
    "group_id",
    "generation_id_or_member_epoch",
    "member_id",
    "group_instance_id",
    "retention_time_ms",
    "topics",
)
assert tuple(f.name for f in dataclasses.fields(OffsetCommitRequest)) == _REQUEST_FIELDS


def _topic(name: str, partitions: tuple[OffsetCommitRequestPartition, ...]) -> Any:
    t = _new(OffsetCommitRequestTopic)
    _set(t, "name", name)
    _set(t, "partitions", partitions)
    return t


def decode_offset_commit_request(
    frame: bytes, correlation: object = None
) -> tuple[int, OffsetCommitRequest] | None:
    """``(correlation_id, request)`` of a common OffsetCommit request frame body (without
    its size prefix), the request carrying ``correlation``; ``None`` if the frame is not
    the common case (see the module docstring)."""
    try:
        return _decode(frame, correlation)
    except (_Unusual, struct.error, ValueError, TypeError):  # UnicodeDecodeError included
        return None


def _decode(frame: bytes, correlation: object) -> tuple[int, OffsetCommitRequest]:
    if len(frame) < _HEADER.size:
        raise _Unusual
    api_key, version, correlation_id, client_id_length = _HEADER.unpack_from(frame)
    if api_key != OFFSET_COMMIT_API_KEY or not _MIN <= version <= _MAX:
        raise _Unusual
    flexible = version >= _FLEXIBLE
    pos = _HEADER.size + max(client_id_length, 0)
    if client_id_length < -1 or pos > len(frame):
        raise _Unusual
    frame[_HEADER.size : pos].decode("utf-8")  # the generic path refuses a bad client id
    r = _Reader(frame, pos, flexible)
    r.no_tagged_fields()  # the header's (v2)
    group_id = r.string()
    generation = r.int32()
    member_id = r.string()
    instance_id = r.string(nullable=True) if version >= 7 else None
    retention = r.int64() if version <= 4 else -1
    if retention != -1:
        raise _Unusual  # kio reads it as a timedelta, with its own range checks
    topics = []
    for _ in range(r.count()):
        name = r.string()
        partitions = []
        for _ in range(r.count()):
            index, offset = _PARTITION.unpack_from(frame, r._take(_PARTITION.size))
            epoch = r.int32() if version >= 6 else -1
            metadata = r.string(nullable=True)
            r.no_tagged_fields()
            partitions.append(_partition(index, offset, epoch, metadata))
        r.no_tagged_fields()
        assert name is not None
        topics.append(_topic(name, tuple(partitions)))
    r.no_tagged_fields()
    if r.pos != len(frame):
        raise _Unusual  # trailing bytes: the generic path logs and ignores them
    assert group_id is not None and member_id is not None
    request = _new(OffsetCommitRequest)
    _set(request, "version", version)
    _set(request, "correlation", correlation)
    _set(request, "group_id", group_id)
    _set(request, "generation_id_or_member_epoch", generation)
    _set(request, "member_id", member_id)
    _set(request, "group_instance_id", instance_id)
    _set(request, "retention_time_ms", retention)
    _set(request, "topics", tuple(topics))
    return correlation_id, request


def encode_offset_commit_response(correlation_id: int, response: OffsetCommitResponse) -> bytes:
    """A complete OffsetCommit response frame (size prefix included) of
    ``response.version`` (2-9)."""
    version = response.version
    if not _MIN <= version <= _MAX:
        raise ValueError(f"this codec writes OffsetCommit v{_MIN}-v{_MAX}, not v{version}")
    flexible = version >= _FLEXIBLE
    out = bytearray(_INT32.pack(correlation_id))
    if flexible:
        out += b"\x00"  # no tagged fields in the header
    if version >= 3:
        out += b"\x00\x00\x00\x00"  # throttle_time_ms: the coordinator never throttles
    _array_length(out, len(response.topics), flexible)
    for topic in response.topics:
        name = topic.name.encode("utf-8")
        if flexible:
            _uvarint(out, len(name) + 1)
        else:
            out += _INT16.pack(len(name))
        out += name
        _array_length(out, len(topic.partitions), flexible)
        for p in topic.partitions:
            out += _RESPONSE_PARTITION.pack(p.partition_index, p.error_code)
            if flexible:
                out += b"\x00"
        if flexible:
            out += b"\x00"
    if flexible:
        out += b"\x00"
    return _INT32.pack(len(out)) + bytes(out)


def _array_length(out: bytearray, n: int, flexible: bool) -> None:
    if flexible:
        _uvarint(out, n + 1)
    else:
        out += _INT32.pack(n)


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
