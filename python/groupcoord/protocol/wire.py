"""The Kafka wire codec: size-prefixed frames, request/response headers, kio payloads.

Sans-IO and symmetric: the server uses :func:`decode_request` / :func:`encode_response`,
a client (tests, the member runner) :func:`encode_request` / :func:`decode_response`.
Payloads are kio schema objects (``kio.schema.<api>.v<N>.request``); which request header
(v0-v2) and response header (v0-v1) goes with an (api, version) comes from the kio schema
class, except that ApiVersions responses always use header v0 (so that a client which
does not know the broker's versions yet can read them).

Frame layout (every Kafka message): ``int32 size`` then ``size`` bytes. Request header v0:
``int16 api_key, int16 api_version, int32 correlation_id``; v1 adds ``nullable string
client_id`` (always a legacy int16-length string, even in v2); v2 adds tagged fields.
Response header v0: ``int32 correlation_id``; v1 adds tagged fields.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import struct
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.static.constants import EntityType

from groupcoord.errors import InvalidRequestError, UnsupportedVersionError
from groupcoord.protocol.length_guard import check_lengths
from groupcoord.protocol.null_check import null_arrays

__all__ = [
    "API_VERSIONS_KEY",
    "DEFAULT_MAX_FRAME_BYTES",
    "FrameBuffer",
    "FrameSizeError",
    "MalformedFrameError",
    "RequestHeader",
    "UnsupportedApiError",
    "decode_request",
    "decode_request_header",
    "decode_request_payload",
    "decode_response",
    "encode_frame",
    "encode_request",
    "encode_request_header",
    "encode_response",
    "encode_response_header",
    "kio_version_range",
    "kio_versions_within",
    "parse_frame_size",
    "peek_correlation_id",
    "request_header_version",
    "response_header_version",
]

log = logging.getLogger("groupcoord.protocol")

#: What kio raises on bytes that are not a valid payload: its own errors, and plain
#: KeyError (an unknown tagged field), ValueError (an unknown enum value), OverflowError,
#: TypeError, IndexError from deeper in its decoder.
_DECODE_ERRORS: Final = (SerialError, KeyError, ValueError, TypeError, OverflowError, IndexError)

#: Kafka's ``socket.request.max.bytes`` default (100 MiB).
DEFAULT_MAX_FRAME_BYTES: Final = 104_857_600
API_VERSIONS_KEY: Final = 18

_SIZE = struct.Struct(">i")
_HEADER_V0 = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")


class FrameSizeError(InvalidRequestError):
    """A frame size prefix that is negative or above the frame limit. Kafka closes the
    connection on these (``InvalidReceiveException``): nothing after it can be trusted."""


class MalformedFrameError(InvalidRequestError):
    """A frame whose header or payload cannot be decoded (truncated, garbage, bad lengths)."""


class UnsupportedApiError(UnsupportedVersionError):
    """The header names an API key or version this side cannot decode. ``header`` is the
    parsed header, so that the caller can still answer with the right correlation id."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestHeader:
    """A parsed request header. ``header_version`` is the layout it was read with (0-2)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 2


# --------------------------------------------------------------------------------------
# frames
# --------------------------------------------------------------------------------------


def parse_frame_size(prefix: bytes, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> int:
    """The size in a 4-byte frame prefix; :class:`FrameSizeError` if negative or too big."""
    if len(prefix) != 4:
        raise MalformedFrameError(f"a frame size prefix is 4 bytes, got {len(prefix)}")
    (size,) = _SIZE.unpack(prefix)
    if size < 0:
        raise FrameSizeError(f"negative frame size {size}")
    if size > max_frame_bytes:
        raise FrameSizeError(f"frame of {size} bytes is over the limit of {max_frame_bytes}")
    return int(size)


def encode_frame(payload: bytes) -> bytes:
    """``payload`` with its int32 size prefix."""
    return _SIZE.pack(len(payload)) + payload


class FrameBuffer:
    """Splits a byte stream into frames (sans-IO): :meth:`feed` bytes as they arrive, get
    back every frame completed. A bad size prefix raises :class:`FrameSizeError`, and the
    buffer refuses further input (the stream cannot be resynchronised)."""

    __slots__ = ("_broken", "_buf", "_max")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if max_frame_bytes < 0:
            raise ValueError(f"max_frame_bytes must be >= 0, got {max_frame_bytes}")
        self._buf = bytearray()
        self._max = max_frame_bytes
        self._broken = False

    def feed(self, data: bytes) -> list[bytes]:
        if self._broken:
            raise FrameSizeError("the stream already had a bad frame size")
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        limit = self._max
        # one copy per frame (a bytearray slice would copy twice), sizes read in place
        with memoryview(buf) as view:
            while end - pos >= 4:
                (size,) = _SIZE.unpack_from(view, pos)
                if not 0 <= size <= limit:
                    self._broken = True
                    parse_frame_size(view[pos : pos + 4].tobytes(), limit)  # raises
                start = pos + 4
                if end - start < size:
                    break
                pos = start + size
                frames.append(view[start:pos].tobytes())
        del buf[:pos]
        return frames

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame held back."""
        return len(self._buf)


# --------------------------------------------------------------------------------------
# schema lookup
# --------------------------------------------------------------------------------------


def kio_version_range(api_key: int) -> tuple[int, int] | None:
    """The (min, max) versions kio has schemas for, ``None`` for an API it does not know."""
    name = api_key_map.get(api_key)
    if name is None:
        return None
    versions = schema_name_map[name]
    return min(versions), max(versions)


def kio_versions_within(api_key: int, lo: int, hi: int) -> tuple[int, int]:
    """``(lo, hi)`` narrowed to the versions kio has schemas for (an API we serve must be
    one kio knows: ``AssertionError`` otherwise, at import)."""
    known = kio_version_range(api_key)
    assert known is not None, f"kio has no API {api_key}"
    return max(lo, known[0]), min(hi, known[1])


# Schema classes by (api_key, version). Only hits are kept: any peer can send any pair,
# and caching misses would let it grow the dictionary without bound.
_CLASSES: dict[tuple[int, int, EntityType], type[Any]] = {}


def _schema_class(api_key: int, version: int, kind: EntityType) -> type[Any] | None:
    cls = _CLASSES.get((api_key, version, kind))
    if cls is not None:
        return cls
    try:
        if kind is EntityType.request:
            cls = load_request_schema(api_key, version)
        else:
            cls = load_response_schema(api_key, version)
    except KioIndexError:
        return None
    _CLASSES[(api_key, version, kind)] = cls
    return cls


def _request_class(api_key: int, version: int) -> type[Any] | None:
    return _schema_class(api_key, version, EntityType.request)


def _response_class(api_key: int, version: int) -> type[Any] | None:
    return _schema_class(api_key, version, EntityType.response)


def request_header_version(api_key: int, version: int) -> int | None:
    """The request header version of (api, version) (``None``: kio has no such schema)."""
    cls = _request_class(api_key, version)
    if cls is None:
        return None
    return 2 if cls.__header_schema__.__flexible__ else 1


def response_header_version(api_key: int, version: int) -> int | None:
    """The response header version (ApiVersions: always 0; ``None``: unknown schema)."""
    if api_key == API_VERSIONS_KEY:
        return 0
    cls = _response_class(api_key, version)
    if cls is None:
        return None
    return 1 if cls.__header_schema__.__flexible__ else 0


_READERS: dict[type[Any], Callable[[bytes, int], tuple[Any, int]]] = {}
_WRITERS: dict[type[Any], Callable[[io.BytesIO, Any], None]] = {}


def _reader(cls: type[Any]) -> Callable[[bytes, int], tuple[Any, int]]:
    # building a kio reader walks the schema; do it once per class
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    return reader


def _writer(cls: type[Any]) -> Callable[[io.BytesIO, Any], None]:
    writer = _WRITERS.get(cls)
    if writer is None:
        writer = _WRITERS[cls] = entity_writer(cls)
    return writer


def prepare_codec(api_key: int, version: int) -> None:
    """Build now the request and response codecs of (api_key, version) that the first
    message would build (loading kio's schema modules and walking them takes milliseconds
    per API: see :func:`groupcoord.protocol.group_messages.prepare`). Unknown pairs are
    ignored, as the codecs would refuse them later."""
    for kind in (EntityType.request, EntityType.response):
        cls = _schema_class(api_key, version, kind)
        if cls is not None:
            _reader(cls)
            _writer(cls)


def _payload_class(obj: object, kind: EntityType) -> type[Any]:
    cls = type(obj)
    if getattr(cls, "__type__", None) is not kind or not hasattr(cls, "__api_key__"):
        raise TypeError(f"not a kio {kind.name} payload: {cls.__name__}")
    return cls


# --------------------------------------------------------------------------------------
# varints and tagged fields (headers only; kio handles them inside payloads)
# --------------------------------------------------------------------------------------


def _read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise MalformedFrameError("truncated varint in header tagged fields")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise MalformedFrameError("varint longer than 5 bytes in header tagged fields")


def _skip_tagged_fields(data: bytes, pos: int) -> int:
    # Header tagged fields carry nothing we use; a known tag would be read here.
    count, pos = _read_uvarint(data, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(data, pos)
        size, pos = _read_uvarint(data, pos)
        pos += size
        if pos > len(data):
            raise MalformedFrameError("header tagged field runs past the frame")
    return pos


# --------------------------------------------------------------------------------------
# request side
# --------------------------------------------------------------------------------------


#: (api_key, version) -> request header version; the hot path's lookup
_HEADER_VERSIONS: dict[tuple[int, int], int] = {}


def decode_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """The request header of a frame body and the offset of its payload.

    The header version is chosen from the kio schema of (api_key, api_version). For an
    API or version kio does not know, the header is read as v1 (its client id is still
    readable) and :class:`UnsupportedApiError` carries it, so the caller can answer.
    """
    if len(frame) < _HEADER_V0.size:
        raise MalformedFrameError(f"request header needs 8 bytes, frame has {len(frame)}")
    api_key, api_version, correlation_id = _HEADER_V0.unpack_from(frame, 0)
    pos = _HEADER_V0.size
    header_version = _HEADER_VERSIONS.get((api_key, api_version))
    if header_version is None:
        header_version = request_header_version(api_key, api_version)
        if header_version is not None:  # bounded: only (api, version) pairs kio has
            _HEADER_VERSIONS[(api_key, api_version)] = header_version
    client_id: str | None = None
    if header_version is None or header_version >= 1:
        if len(frame) < pos + 2:
            raise MalformedFrameError("truncated client id length")
        (length,) = _INT16.unpack_from(frame, pos)
        pos += 2
        if length >= 0:
            if len(frame) < pos + length:
                raise MalformedFrameError("client id runs past the frame")
            try:
                client_id = frame[pos : pos + length].decode("utf-8")
            except UnicodeDecodeError as e:
                raise MalformedFrameError(f"client id is not UTF-8: {e}") from None
            pos += length
        elif length != -1:
            raise MalformedFrameError(f"client id length {length} is negative")
    if header_version == 2:
        # almost always no tagged fields: one zero byte
        pos = pos + 1 if frame[pos : pos + 1] == b"\x00" else _skip_tagged_fields(frame, pos)
    header = RequestHeader(
        api_key=api_key,
        api_version=api_version,
        correlation_id=correlation_id,
        client_id=client_id,
        header_version=1 if header_version is None else header_version,
    )
    if header_version is None:
        known = kio_version_range(api_key)
        what = (
            f"unknown API key {api_key}"
            if known is None
            else f"API {api_key} version {api_version} (known: {known[0]}-{known[1]})"
        )
        raise UnsupportedApiError(header, what)
    return header, pos


def decode_request_payload(header: RequestHeader, frame: bytes, offset: int) -> Any:
    """The kio request object of ``frame[offset:]`` for the header's (api, version).

    A truncated or malformed body, or a null where the schema has a non-nullable array,
    raises :class:`MalformedFrameError`. Bytes after the body are ignored (logged at
    DEBUG), as Kafka's request parsing ignores them: it reads the schema and nothing more.
    """
    cls = _request_class(header.api_key, header.api_version)
    if cls is None:
        raise UnsupportedApiError(
            header, f"no schema for API {header.api_key} v{header.api_version}"
        )
    try:
        check_lengths(cls, frame, offset)  # before kio: a huge count aborts its reader
        request, size = _reader(cls)(frame, offset)
    except _DECODE_ERRORS as e:
        raise MalformedFrameError(
            f"API {header.api_key} v{header.api_version} payload: {type(e).__name__}: {e}"
        ) from None
    if offset + size != len(frame):
        # Kafka's request parsing reads the schema and ignores what follows; librdkafka
        # 2.16 sends Metadata v9+ "all topics" with 3 stray bytes after the body
        log.debug(
            "API %d v%d request from client %r: ignoring %d trailing bytes after the body",
            header.api_key,
            header.api_version,
            header.client_id,
            len(frame) - offset - size,
        )
    nulls = null_arrays(request)
    if nulls:
        raise MalformedFrameError(
            f"API {header.api_key} v{header.api_version} payload: non-nullable array "
            f"{nulls[0]} is null"
        )
    return request


def decode_request(frame: bytes) -> tuple[RequestHeader, Any]:
    """Header and kio request of a frame body (without its size prefix)."""
    header, offset = decode_request_header(frame)
    return header, decode_request_payload(header, frame, offset)


def encode_request_header(header: RequestHeader) -> bytes:
    out = bytearray(_HEADER_V0.pack(header.api_key, header.api_version, header.correlation_id))
    if header.header_version >= 1:
        if header.client_id is None:
            out += _INT16.pack(-1)
        else:
            raw = header.client_id.encode("utf-8")
            out += _INT16.pack(len(raw)) + raw
    if header.header_version >= 2:
        out.append(0)  # no tagged fields
    return bytes(out)


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, request: object
) -> bytes:
    """A complete request frame (size prefix included) for a kio ``request``."""
    cls = _payload_class(request, EntityType.request)
    if (cls.__api_key__, cls.__version__) != (api_key, version):
        raise ValueError(
            f"{cls.__module__}.{cls.__name__} is API {cls.__api_key__} "
            f"v{cls.__version__}, not API {api_key} v{version}"
        )
    header = RequestHeader(
        api_key=api_key,
        api_version=version,
        correlation_id=correlation_id,
        client_id=client_id,
        header_version=2 if cls.__header_schema__.__flexible__ else 1,
    )
    buf = io.BytesIO()
    buf.write(encode_request_header(header))
    _writer(cls)(buf, request)
    return encode_frame(buf.getvalue())


# --------------------------------------------------------------------------------------
# response side
# --------------------------------------------------------------------------------------


def encode_response_header(correlation_id: int, header_version: int) -> bytes:
    out = _SIZE.pack(correlation_id)
    return out + b"\x00" if header_version >= 1 else out


def encode_response(header: RequestHeader, response: object) -> bytes:
    """A complete response frame (size prefix included) answering ``header``.

    The response's own schema fixes its header version (ApiVersions: always v0), so an
    ApiVersions v0 fallback answer to a newer request is encoded correctly too.
    """
    cls = _payload_class(response, EntityType.response)
    header_version = response_header_version(cls.__api_key__, cls.__version__)
    assert header_version is not None  # the class exists, so kio knows it
    body = encode_response_header(header.correlation_id, header_version) + _payload(cls, response)
    return encode_frame(body)


#: Encoded payloads of responses without nested entities or arrays (Heartbeat, SyncGroup,
#: FindCoordinator v0-v3...): the few distinct ones recur, and kio's writer is Python.
_FLAT_PAYLOADS: dict[type[Any], dict[Any, bytes] | None] = {}
_FLAT_PAYLOADS_PER_CLASS: Final = 64


def _is_flat(cls: type[Any]) -> bool:
    return all(
        "kafka_type" in f.metadata and not isinstance(f.default, tuple)
        for f in dataclasses.fields(cls)
    ) and not any(typing.get_origin(h) is tuple for h in typing.get_type_hints(cls).values())


def _payload(cls: type[Any], response: Any) -> bytes:
    if cls not in _FLAT_PAYLOADS:
        _FLAT_PAYLOADS[cls] = {} if _is_flat(cls) else None
    cache = _FLAT_PAYLOADS[cls]
    if cache is not None:
        cached = cache.get(response)
        if cached is not None:
            return cached
    buf = io.BytesIO()
    _writer(cls)(buf, response)
    payload = buf.getvalue()
    if cache is not None and len(cache) < _FLAT_PAYLOADS_PER_CLASS:
        cache[response] = payload
    return payload


def peek_correlation_id(payload: bytes) -> int:
    """The correlation id of a response frame body (the first field of every header)."""
    if len(payload) < 4:
        raise MalformedFrameError(f"response header needs 4 bytes, frame has {len(payload)}")
    return int(_SIZE.unpack_from(payload, 0)[0])


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, Any]:
    """``(correlation_id, kio response)`` of a response frame body to (api, version).

    An ApiVersions response is read with header v0 whatever the version; if it cannot be
    read as the requested version but carries an error, it is read as the v0 fallback
    Kafka sends to a version it does not support. Bytes after the body are ignored
    (logged at DEBUG), as Kafka's clients ignore them (``NetworkClient.parseResponse``
    reads the schema and nothing more).
    """
    cls = _response_class(api_key, version)
    if cls is None:
        raise UnsupportedVersionError(f"no kio schema for API {api_key} v{version} responses")
    header_version = response_header_version(api_key, version)
    correlation_id = peek_correlation_id(payload)
    pos = 4 if header_version == 0 else _skip_tagged_fields(payload, 4)
    try:
        check_lengths(cls, payload, pos)
        response, size = _reader(cls)(payload, pos)
        nulls = null_arrays(response)
        if nulls:
            raise MalformedFrameError(f"non-nullable array {nulls[0]} is null")
    except (*_DECODE_ERRORS, MalformedFrameError) as e:
        fallback = _api_versions_fallback(api_key, version, payload, pos)
        if fallback is None:
            raise MalformedFrameError(
                f"API {api_key} v{version} response: {type(e).__name__}: {e}"
            ) from None
        response, size = fallback
    if pos + size != len(payload):
        log.debug(
            "API %d v%d response: ignoring %d trailing bytes after the body",
            api_key,
            version,
            len(payload) - pos - size,
        )
    return correlation_id, response


def _api_versions_fallback(
    api_key: int, version: int, payload: bytes, pos: int
) -> tuple[Any, int] | None:
    if api_key != API_VERSIONS_KEY or version == 0:
        return None
    v0 = _response_class(API_VERSIONS_KEY, 0)
    assert v0 is not None
    try:
        response, size = _reader(v0)(payload, pos)
    except _DECODE_ERRORS:
        return None
    if response.error_code == 0:
        return None
    return response, size
