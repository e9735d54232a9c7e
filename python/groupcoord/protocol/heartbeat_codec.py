"""A hand-written codec for Heartbeat (API 12, v0-v4) frames: the server's hot path.

Heartbeats are most of a coordinator's traffic (every member sends one every few
seconds), and the generic path (kio payload objects mapped onto coordinator messages and
back) costs several times the coordinator's own work per heartbeat. This module reads a
whole Heartbeat request frame body (header included) straight into the coordinator's
:class:`~groupcoord.coordinator.HeartbeatRequest`, and writes a whole response frame from
the version, correlation id and error code. The group logic stays in the coordinator.

It reads exactly what the generic path (:func:`~groupcoord.protocol.wire.decode_request`
plus :func:`~groupcoord.protocol.group_messages.to_coordinator_request`) reads and writes
byte for byte what it writes, and bad bytes raise the same
:class:`~groupcoord.protocol.wire.MalformedFrameError`. Bytes after the body are ignored
(logged at DEBUG) on both paths, as Kafka ignores them. There is one deliberate difference:
unknown tagged fields in a v4 request body are skipped, as Kafka's generated readers do
(they keep them as ``unknownTaggedFields``), where kio rejects them. Heartbeat v4 defines
no tagged fields, so a client sending one is newer than us, not wrong.

Layouts (request header v1 for v0-v3, v2 for v4; response header v0 for v0-v3, v1 for v4):

- request header: ``int16 api_key, int16 api_version, int32 correlation_id, nullable
  string client_id`` (always int16-length), then tagged fields in v2;
- request body: ``group_id, int32 generation_id, member_id``, v3+ ``nullable
  group_instance_id``; v4 strings are compact (uvarint length + 1, 0 is null) and the
  body ends with tagged fields;
- response: ``int32 correlation_id`` (+ tagged fields in v4), v1+ ``int32
  throttle_time_ms``, ``int16 error_code``, v4 tagged fields.
"""

from __future__ import annotations

import logging
import struct
from typing import Final

from groupcoord.coordinator import HeartbeatRequest
from groupcoord.protocol.wire import MalformedFrameError

__all__ = [
    "HEARTBEAT_API_KEY",
    "HEARTBEAT_MAX_VERSION",
    "decode_heartbeat_request",
    "encode_heartbeat_response",
    "heartbeat_prefixes",
]

log = logging.getLogger("groupcoord.protocol")

HEARTBEAT_API_KEY: Final = 12
HEARTBEAT_MAX_VERSION: Final = 4
#: the first flexible version (compact strings, tagged fields, header v2 / v1)
_FLEXIBLE: Final = 4

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")  # api key, version, correlation id, client id length
_INT32_INT16 = struct.Struct(">ih")
_RESPONSE_PREFIX = struct.Struct(">ii")  # frame size, correlation id


def heartbeat_prefixes(min_version: int, max_version: int) -> dict[bytes, int]:
    """The first four bytes of a Heartbeat request frame body (api key, version) of
    every version from ``min_version`` to ``max_version``, mapped to the version: one
    dictionary lookup tells a dispatcher that a frame is a Heartbeat it serves."""
    lo = max(min_version, 0)
    hi = min(max_version, HEARTBEAT_MAX_VERSION)
    return {struct.pack(">hh", HEARTBEAT_API_KEY, v): v for v in range(lo, hi + 1)}


# --------------------------------------------------------------------------------------
# request
# --------------------------------------------------------------------------------------


def _uvarint(frame: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (as kio and Kafka read them)."""
    value = 0
    shift = 0
    end = len(frame)
    while True:
        if pos >= end:
            raise MalformedFrameError("Heartbeat: truncated varint")
        byte = frame[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedFrameError("Heartbeat: varint longer than 5 bytes")


def _skip_tagged_fields(frame: bytes, pos: int) -> int:
    count, pos = _uvarint(frame, pos)
    for _ in range(count):
        _tag, pos = _uvarint(frame, pos)
        size, pos = _uvarint(frame, pos)
        pos += size
        if pos > len(frame):
            raise MalformedFrameError("Heartbeat: tagged field runs past the frame")
    return pos


def _text(frame: bytes, pos: int, end: int, name: str) -> str:
    if end > len(frame):
        raise MalformedFrameError(f"Heartbeat: {name} runs past the frame")
    try:
        return frame[pos:end].decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedFrameError(f"Heartbeat: {name} is not UTF-8: {e}") from None


def _legacy_string(frame: bytes, pos: int, name: str, nullable: bool) -> tuple[str | None, int]:
    if pos + 2 > len(frame):
        raise MalformedFrameError(f"Heartbeat: truncated {name} length")
    (length,) = _INT16.unpack_from(frame, pos)
    pos += 2
    if length < 0:
        if length == -1 and nullable:
            return None, pos
        raise MalformedFrameError(f"Heartbeat: {name} length {length} is invalid")
    end = pos + length
    return _text(frame, pos, end, name), end


def _compact_string(frame: bytes, pos: int, name: str, nullable: bool) -> tuple[str | None, int]:
    length, pos = _uvarint(frame, pos)
    if length == 0:
        if nullable:
            return None, pos
        raise MalformedFrameError(f"Heartbeat: {name} is null")
    end = pos + length - 1
    return _text(frame, pos, end, name), end


def _int32(frame: bytes, pos: int, name: str) -> tuple[int, int]:
    if pos + 4 > len(frame):
        raise MalformedFrameError(f"Heartbeat: truncated {name}")
    return _INT32.unpack_from(frame, pos)[0], pos + 4


class _Irregular(Exception):
    """Raised inside the common-case reader: let the careful reader decide."""


_new = object.__new__
_set = object.__setattr__


def _request(
    version: int,
    correlation: object,
    group_id: str,
    generation_id: int,
    member_id: str,
    instance_id: str | None,
) -> HeartbeatRequest:
    """A HeartbeatRequest without its ``__post_init__`` checks, which cost as much as the
    whole decoding: the readers here already guarantee what they check (str fields, an
    int32 generation, a version of 0-4, no instance id before v3), and the differential
    tests compare these requests with validated ones."""
    request = _new(HeartbeatRequest)
    _set(request, "version", version)
    _set(request, "correlation", correlation)
    _set(request, "group_id", group_id)
    _set(request, "generation_id", generation_id)
    _set(request, "member_id", member_id)
    _set(request, "group_instance_id", instance_id)
    return request


def decode_heartbeat_request(
    frame: bytes, correlation: object = None
) -> tuple[int, HeartbeatRequest]:
    """``(correlation_id, request)`` of a Heartbeat request frame body (without its size
    prefix, header included); ``correlation`` goes into the request. The frame's first
    four bytes must name Heartbeat v0-v4 (see :func:`heartbeat_prefixes`).

    The common case (strings under 128 bytes, no tagged fields, nothing after the body) is
    read in one pass with few calls; anything else, including every malformed frame, goes
    to the careful reader, which gives the precise error.
    """
    try:
        return _decode_common(frame, correlation)
    except (_Irregular, IndexError, UnicodeDecodeError, struct.error):
        return _decode_carefully(frame, correlation)


def _decode_common(frame: bytes, correlation: object) -> tuple[int, HeartbeatRequest]:
    size = len(frame)
    api_key, version, correlation_id, length = _HEADER.unpack_from(frame, 0)
    if api_key != HEARTBEAT_API_KEY or length < -1:
        raise _Irregular
    pos = _HEADER.size
    if length > 0:
        pos += length
        if pos > size:
            raise _Irregular
        frame[_HEADER.size : pos].decode("utf-8")  # checked, not used
    if version == _FLEXIBLE:
        if frame[pos]:  # header tagged fields
            raise _Irregular
        # compact strings: one length byte (length + 1) when under 127 bytes
        n = frame[pos + 1]
        pos += 2
        end = pos + n - 1
        if not 0 < n < 0x80 or end > size:
            raise _Irregular
        group_id = frame[pos:end].decode("utf-8")
        (generation_id,) = _INT32.unpack_from(frame, end)
        pos = end + 5
        n = frame[pos - 1]
        end = pos + n - 1
        if not 0 < n < 0x80 or end > size:
            raise _Irregular
        member_id = frame[pos:end].decode("utf-8")
        n = frame[end]
        if n == 0:
            instance_id = None
            pos = end + 1
        else:
            pos = end + 1
            end = pos + n - 1
            if n >= 0x80 or end > size:
                raise _Irregular
            instance_id = frame[pos:end].decode("utf-8")
            pos = end
        if pos != size - 1 or frame[pos]:  # body tagged fields, or trailing bytes
            raise _Irregular
        return correlation_id, _request(
            version, correlation, group_id, generation_id, member_id, instance_id
        )
    if not 0 <= version < _FLEXIBLE:
        raise _Irregular
    (n,) = _INT16.unpack_from(frame, pos)
    pos += 2
    end = pos + n
    if n < 0 or end > size:
        raise _Irregular
    group_id = frame[pos:end].decode("utf-8")
    generation_id, n = _INT32_INT16.unpack_from(frame, end)
    pos = end + 6
    end = pos + n
    if n < 0 or end > size:
        raise _Irregular
    member_id = frame[pos:end].decode("utf-8")
    instance_id = None
    if version >= 3:
        (n,) = _INT16.unpack_from(frame, end)
        pos = end + 2
        if n == -1:
            end = pos
        else:
            end = pos + n
            if n < 0 or end > size:
                raise _Irregular
            instance_id = frame[pos:end].decode("utf-8")
    if end != size:
        raise _Irregular
    return correlation_id, _request(
        version, correlation, group_id, generation_id, member_id, instance_id
    )


def _decode_carefully(frame: bytes, correlation: object) -> tuple[int, HeartbeatRequest]:
    """The general reader: any varint, tagged fields, and a precise error for bad bytes."""
    if len(frame) < _HEADER.size:
        raise MalformedFrameError(f"Heartbeat: header needs 10 bytes, frame has {len(frame)}")
    api_key, version, correlation_id, client_id_length = _HEADER.unpack_from(frame, 0)
    if api_key != HEARTBEAT_API_KEY or not 0 <= version <= HEARTBEAT_MAX_VERSION:
        raise ValueError(f"not a Heartbeat v0-v4 frame: API {api_key} v{version}")
    pos = _HEADER.size
    # The client id is not used for a heartbeat, but a frame whose client id the generic
    # path cannot read must be refused here too.
    client_id: str | None = None
    if client_id_length >= 0:
        end = pos + client_id_length
        client_id = _text(frame, pos, end, "client id")
        pos = end
    elif client_id_length != -1:
        raise MalformedFrameError(f"Heartbeat: client id length {client_id_length} is negative")
    if version >= _FLEXIBLE:
        # header tagged fields: almost always none (one zero byte)
        pos = pos + 1 if frame[pos : pos + 1] == b"\x00" else _skip_tagged_fields(frame, pos)
        group_id, pos = _compact_string(frame, pos, "group_id", False)
        generation_id, pos = _int32(frame, pos, "generation_id")
        member_id, pos = _compact_string(frame, pos, "member_id", False)
        instance_id, pos = _compact_string(frame, pos, "group_instance_id", True)
        pos = pos + 1 if frame[pos : pos + 1] == b"\x00" else _skip_tagged_fields(frame, pos)
    else:
        group_id, pos = _legacy_string(frame, pos, "group_id", False)
        generation_id, pos = _int32(frame, pos, "generation_id")
        member_id, pos = _legacy_string(frame, pos, "member_id", False)
        instance_id = None
        if version >= 3:
            instance_id, pos = _legacy_string(frame, pos, "group_instance_id", True)
    if pos != len(frame):  # ignored, as on the generic path (and in Kafka)
        log.debug(
            "API %d v%d request from client %r: ignoring %d trailing bytes after the body",
            HEARTBEAT_API_KEY,
            version,
            client_id,
            len(frame) - pos,
        )
    assert group_id is not None and member_id is not None  # non-nullable reads never return None
    return correlation_id, _request(
        version, correlation, group_id, generation_id, member_id, instance_id
    )


# --------------------------------------------------------------------------------------
# response
# --------------------------------------------------------------------------------------

#: (version, error_code) -> the response frame after its size and correlation id. Bounded:
#: five versions times the error codes a heartbeat can get.
_RESPONSE_TAILS: dict[tuple[int, int], bytes] = {}


def _response_tail(version: int, error_code: int) -> bytes:
    if not 0 <= version <= HEARTBEAT_MAX_VERSION:
        raise ValueError(f"Heartbeat has versions 0-{HEARTBEAT_MAX_VERSION}, not {version}")
    tail = _INT16.pack(error_code)  # struct.error for a code outside int16
    if version >= 1:
        tail = _INT32.pack(0) + tail  # throttle_time_ms: the coordinator never throttles
    if version >= _FLEXIBLE:
        tail = b"\x00" + tail + b"\x00"  # no tagged fields in the header, nor the body
    _RESPONSE_TAILS[(version, error_code)] = tail
    return tail


def encode_heartbeat_response(correlation_id: int, version: int, error_code: int) -> bytes:
    """A complete Heartbeat response frame (size prefix included)."""
    tail = _RESPONSE_TAILS.get((version, error_code))
    if tail is None:
        tail = _response_tail(version, error_code)
    return _RESPONSE_PREFIX.pack(4 + len(tail), correlation_id) + tail
