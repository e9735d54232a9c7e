"""A hand-written codec for the common ConsumerGroupHeartbeat (API 68, v0-v1) frames:
KIP-848's one member request, and its hot path.

A KIP-848 member heartbeats every ``group.consumer.heartbeat.interval.ms``; the generic
path (kio payload objects, the length guard, the mapping onto coordinator messages and
back) cost ~5x the coordinator's own work per heartbeat (48 µs of server CPU per heartbeat
over the wire at 5,000 members, against 9.45 µs in the coordinator). This module reads a
whole request frame body (header included) straight into the coordinator's
:class:`~groupcoord.coordinator.consumer_messages.ConsumerGroupHeartbeatRequest` and writes
a whole response frame from its response.

Only the common case is read here: strings and arrays shorter than 127 (one varint byte),
no tagged fields, no bytes after the body, valid UTF-8, topic ids that are not the null
UUID. :func:`decode_consumer_heartbeat_request` returns ``None`` for anything else and the
caller takes the generic path, so every unusual frame is answered (or refused) exactly as
before. What is read and written here is byte for byte what the generic path reads and
writes (differential tests: ``tests/protocol/test_consumer_heartbeat_codec.py``).

Layouts (both versions are flexible: request header v2, response header v1; strings and
arrays compact, i.e. uvarint length + 1 with 0 for null; every struct ends with tagged
fields):

- request header: ``int16 api_key, int16 api_version, int32 correlation_id, nullable
  string client_id`` (int16-length), tagged fields;
- request body: ``group_id, member_id, int32 member_epoch, nullable instance_id, nullable
  rack_id, int32 rebalance_timeout_ms, nullable [subscribed_topic_names]``, v1 ``nullable
  subscribed_topic_regex``, ``nullable server_assignor, nullable [topic_partitions: uuid
  topic_id, [int32 partitions]]``;
- response: ``int32 correlation_id``, tagged fields, ``int32 throttle_time_ms, int16
  error_code, nullable error_message, nullable member_id, int32 member_epoch, int32
  heartbeat_interval_ms``, ``assignment`` as a nullable struct (int8 -1 for null, 1 then
  ``[topic_partitions: uuid topic_id, [int32 partitions]]``), tagged fields.
"""

from __future__ import annotations

import struct
import uuid
from typing import Final

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.protocol.frame_reader import FrameReader
from groupcoord.protocol.frame_reader import Unusual as _Unusual

__all__ = [
    "CONSUMER_HEARTBEAT_API_KEY",
    "consumer_heartbeat_prefixes",
    "decode_consumer_heartbeat_request",
    "encode_consumer_heartbeat_response",
]

CONSUMER_HEARTBEAT_API_KEY: Final = 68
_MAX: Final = 1

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id length
_RESPONSE_HEAD = struct.Struct(">ibih")  # correlation id, tagged fields (0), throttle, error
_EPOCH_INTERVAL = struct.Struct(">ii")


def consumer_heartbeat_prefixes(min_version: int, max_version: int) -> dict[bytes, int]:
    """The first four bytes (api key, version) of the request frame bodies read here, of
    the versions from ``min_version`` to ``max_version``, mapped to the version."""
    lo, hi = max(min_version, 0), min(max_version, _MAX)
    return {struct.pack(">hh", CONSUMER_HEARTBEAT_API_KEY, v): v for v in range(lo, hi + 1)}


_new = object.__new__
_set = object.__setattr__


class _Reader(FrameReader):
    """ConsumerGroupHeartbeat is flexible in every version: compact lengths only."""

    __slots__ = ()

    def length(self) -> int:
        """A compact length or count (uvarint, under 128 here), minus one: -1 is null."""
        frame, pos = self.frame, self.pos
        if pos < len(frame) and frame[pos] < 0x80:
            self.pos = pos + 1
            return frame[pos] - 1
        raise _Unusual

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise _Unusual
        return value

    def nullable_string(self) -> str | None:
        n = self.length()
        if n < 0:
            return None
        start = self._take(n)
        return self.frame[start : self.pos].decode("utf-8")  # UnicodeDecodeError: unusual

    def no_tagged_fields(self) -> None:
        if self.length() != -1:  # one zero byte: no tagged fields
            raise _Unusual


def decode_consumer_heartbeat_request(
    frame: bytes, correlation: object = None, client_host: str = ""
) -> tuple[int, ConsumerGroupHeartbeatRequest] | None:
    """``(correlation_id, request)`` of a common ConsumerGroupHeartbeat request frame body
    (without its size prefix), the request carrying ``correlation`` and ``client_host``;
    ``None`` if the frame is not the common case (see the module docstring)."""
    try:
        steady = _decode_steady(frame, correlation, client_host)
        return steady if steady is not None else _decode(frame, correlation, client_host)
    except (_Unusual, struct.error, ValueError, TypeError, IndexError):  # UnicodeDecodeError too
        return None


#: what follows the member epoch in a steady heartbeat (nothing changed, so every optional
#: field is null: instance id, rack id, rebalance timeout -1, topic names, v1's regex,
#: assignor, owned partitions, then no tagged fields), by version
_STEADY_TAIL: Final = {
    0: b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00",
    1: b"\x00\x00\xff\xff\xff\xff\x00\x00\x00\x00\x00",
}


def _decode_steady(
    frame: bytes, correlation: object, client_host: str
) -> tuple[int, ConsumerGroupHeartbeatRequest] | None:
    """The steady heartbeat (most of the traffic) in one pass; ``None`` for any other
    shape, which :func:`_decode` reads field by field."""
    api_key, version, correlation_id, length = _HEADER.unpack_from(frame)
    tail = _STEADY_TAIL.get(version)
    if api_key != CONSUMER_HEARTBEAT_API_KEY or tail is None or length < -1:
        return None
    pos = _HEADER.size + max(length, 0)
    client_id = frame[_HEADER.size : pos].decode("utf-8")
    if frame[pos]:  # header tagged fields
        return None
    n = frame[pos + 1]
    pos += 2
    end = pos + n - 1
    if not 0 < n < 0x80 or end > len(frame):
        return None
    group_id = frame[pos:end].decode("utf-8")
    n = frame[end]
    pos = end + 1
    end = pos + n - 1
    if not 0 < n < 0x80 or end + 4 > len(frame):
        return None
    member_id = frame[pos:end].decode("utf-8")
    if frame[end + 4 :] != tail:
        return None
    (member_epoch,) = _INT32.unpack_from(frame, end)
    return correlation_id, _request(
        version, correlation, group_id, member_id, member_epoch, client_id, client_host
    )


def _request(
    version: int,
    correlation: object,
    group_id: str,
    member_id: str,
    member_epoch: int,
    client_id: str,
    client_host: str,
    instance_id: str | None = None,
    rack_id: str | None = None,
    rebalance_timeout_ms: int = -1,
    names: tuple[str, ...] | None = None,
    regex: str | None = None,
    server_assignor: str | None = None,
    owned: tuple[TopicPartitions, ...] | None = None,
) -> ConsumerGroupHeartbeatRequest:
    """A request built without its ``__post_init__`` checks, which cost a third of the
    decoding: the readers guarantee what they check (str fields, int32 values, tuples of
    str and of TopicPartitions, a version of 0-1, no regex before v1), and the
    differential tests compare these requests with validated ones."""
    request = _new(ConsumerGroupHeartbeatRequest)
    _set(request, "version", version)
    _set(request, "correlation", correlation)
    _set(request, "group_id", group_id)
    _set(request, "member_id", member_id)
    _set(request, "member_epoch", member_epoch)
    _set(request, "instance_id", instance_id)
    _set(request, "rack_id", rack_id)
    _set(request, "rebalance_timeout_ms", rebalance_timeout_ms)
    _set(request, "subscribed_topic_names", names)
    _set(request, "subscribed_topic_regex", regex)
    _set(request, "server_assignor", server_assignor)
    _set(request, "topic_partitions", owned)
    _set(request, "client_id", client_id)
    _set(request, "client_host", client_host)
    return request


def _decode(
    frame: bytes, correlation: object, client_host: str
) -> tuple[int, ConsumerGroupHeartbeatRequest]:
    if len(frame) < _HEADER.size:
        raise _Unusual
    api_key, version, correlation_id, client_id_length = _HEADER.unpack_from(frame)
    if api_key != CONSUMER_HEARTBEAT_API_KEY or not 0 <= version <= _MAX:
        raise _Unusual
    pos = _HEADER.size + max(client_id_length, 0)
    if client_id_length < -1 or pos > len(frame):
        raise _Unusual
    client_id = frame[_HEADER.size : pos].decode("utf-8")
    r = _Reader(frame, pos)
    r.no_tagged_fields()  # the header's
    group_id = r.string()
    member_id = r.string()
    member_epoch = r.int32()
    instance_id = r.nullable_string()
    rack_id = r.nullable_string()
    rebalance_timeout_ms = r.int32()
    names: tuple[str, ...] | None = None
    count = r.length()
    if count >= 0:
        names = tuple(r.string() for _ in range(count))
    regex = r.nullable_string() if version >= 1 else None
    server_assignor = r.nullable_string()
    owned: tuple[TopicPartitions, ...] | None = None
    count = r.length()
    if count >= 0:
        topics = []
        for _ in range(count):
            raw = frame[r._take(16) : r.pos]
            if raw == bytes(16):
                raise _Unusual  # the null UUID: kio reads it as None, the generic path refuses it
            n = r.length()
            if n < 0:
                raise _Unusual
            start = r._take(4 * n)
            partitions = struct.unpack_from(f">{n}i", frame, start)
            r.no_tagged_fields()
            topics.append(TopicPartitions(topic_id=uuid.UUID(bytes=raw), partitions=partitions))
        owned = tuple(topics)
    r.no_tagged_fields()
    if r.pos != len(frame):
        raise _Unusual  # trailing bytes: the generic path logs and ignores them
    request = _request(
        version, correlation, group_id, member_id, member_epoch, client_id, client_host,
        instance_id, rack_id, rebalance_timeout_ms, names, regex, server_assignor, owned,
    )  # fmt: skip
    return correlation_id, request


def encode_consumer_heartbeat_response(
    correlation_id: int, response: ConsumerGroupHeartbeatResponse
) -> bytes:
    """A complete ConsumerGroupHeartbeat response frame (size prefix included)."""
    if not 0 <= response.version <= _MAX:
        raise ValueError(f"this codec writes ConsumerGroupHeartbeat v0-v{_MAX}")
    # the coordinator never throttles; no tagged fields in the header
    out = bytearray(_RESPONSE_HEAD.pack(correlation_id, 0, 0, response.error_code))
    _nullable_string(out, response.error_message)
    _nullable_string(out, response.member_id)
    out += _EPOCH_INTERVAL.pack(response.member_epoch, response.heartbeat_interval_ms)
    assignment = response.assignment
    if assignment is None:
        out += b"\xff"
    else:
        out += b"\x01"
        _uvarint(out, len(assignment) + 1)
        for topic in assignment:
            out += topic.topic_id.bytes
            _uvarint(out, len(topic.partitions) + 1)
            out += struct.pack(f">{len(topic.partitions)}i", *topic.partitions)
            out += b"\x00"
        out += b"\x00"  # the assignment struct's tagged fields
    out += b"\x00"
    return _INT32.pack(len(out)) + bytes(out)


def _nullable_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\x00"
        return
    data = value.encode("utf-8")
    _uvarint(out, len(data) + 1)
    out += data


def _uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
