"""The length guard: hostile counts are refused before kio reads them; nothing kio writes
is ever refused."""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import types
import typing
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_writer
from kio.static.primitive import TZAware, i32Timedelta, i64Timedelta

from groupcoord.protocol.length_guard import LengthError, check_lengths, has_arrays
from groupcoord.protocol.wire import MalformedFrameError, decode_request

ALL_SCHEMAS = [
    (loader, key, version)
    for key, name in sorted(api_key_map.items())
    for version in sorted(schema_name_map[name])
    for loader in (load_request_schema, load_response_schema)
]


def _primitive(kafka_type: str, draw: st.DrawFn) -> Any:
    text = st.text(max_size=6)
    strategies: dict[str, st.SearchStrategy[Any]] = {
        "int8": st.integers(-128, 127),
        "int16": st.integers(-(2**15), 2**15 - 1),
        "int32": st.integers(-(2**31), 2**31 - 1),
        "int64": st.integers(-(2**63), 2**63 - 1),
        "uint16": st.integers(0, 2**16 - 1),
        "float64": st.floats(allow_nan=False, allow_infinity=False),
        "bool": st.booleans(),
        "string": text,
        "bytes": st.binary(max_size=8),
        "records": st.binary(max_size=8),
        "uuid": st.uuids(),
        "error_code": st.sampled_from(list(ErrorCode)),
        "timedelta_i32": st.integers(0, 10**6).map(
            lambda ms: i32Timedelta.parse(datetime.timedelta(milliseconds=ms))
        ),
        "timedelta_i64": st.integers(0, 10**9).map(
            lambda ms: i64Timedelta.parse(datetime.timedelta(milliseconds=ms))
        ),
        "datetime_i64": st.just(
            TZAware.truncate(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
        ),
    }
    return draw(strategies[kafka_type])


def _entity(cls: type[Any], draw: st.DrawFn, depth: int = 0) -> Any:
    """A random instance of a kio schema: arrays of 0-3 elements, optional fields
    sometimes left at their defaults (tagged fields then stay out of the frame)."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        hint = hints[f.name]
        nullable = typing.get_origin(hint) in (typing.Union, types.UnionType)
        if nullable:
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if f.default is not dataclasses.MISSING and draw(st.booleans()):
            continue
        if nullable and f.metadata.get("tag") is None and draw(st.integers(0, 4)) == 0:
            values[f.name] = None
            continue
        if typing.get_origin(hint) is tuple:
            inner = typing.get_args(hint)[0]
            n = draw(st.integers(0, 3 if depth < 2 else 1))
            values[f.name] = tuple(
                _primitive(kafka_type, draw) if kafka_type else _entity(inner, draw, depth + 1)
                for _ in range(n)
            )
        elif kafka_type is None:
            values[f.name] = _entity(hint, draw, depth + 1)
        else:
            values[f.name] = _primitive(kafka_type, draw)
    return cls(**values)


def _encode(cls: type[Any], entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(data=st.data(), schema=st.sampled_from(ALL_SCHEMAS))
def test_whatever_kio_writes_passes_the_guard(data: st.DataObject, schema: Any) -> None:
    loader, key, version = schema
    cls = loader(key, version)
    try:
        entity = _entity(cls, data.draw)
        encoded = _encode(cls, entity)
    except (ValueError, TypeError, OverflowError):
        return  # a combination kio itself refuses to write (e.g. a field out of range)
    prefix = b"\x07" * data.draw(st.integers(0, 3))
    check_lengths(cls, prefix + encoded, len(prefix))  # no LengthError


@pytest.mark.parametrize(("loader", "key", "version"), ALL_SCHEMAS[::7])
def test_has_arrays_matches_the_schema(loader: Any, key: int, version: int) -> None:
    cls = loader(key, version)

    def arrays(entity: type[Any]) -> bool:
        hints = typing.get_type_hints(entity)
        for f in dataclasses.fields(entity):
            hint = hints[f.name]
            if typing.get_origin(hint) in (typing.Union, types.UnionType):
                hint = next(a for a in typing.get_args(hint) if a is not type(None))
            if typing.get_origin(hint) is tuple:
                return True
            if dataclasses.is_dataclass(hint) and arrays(hint):  # type: ignore[arg-type]
                return True
        return False

    assert has_arrays(cls) == arrays(cls)


def _join_group_v6_up_to_protocols() -> bytes:
    """A JoinGroup v6 request header and payload, stopping where the protocols array
    count goes (compact strings: length + 1 as a varint)."""
    header = struct.pack(">hhih", 11, 6, 1, -1) + b"\x00"
    return header + b"\x02g" + struct.pack(">ii", 1000, 1000) + b"\x01\x00\x02c"


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@given(count=st.integers(min_value=1, max_value=2**35 - 2))
def test_a_compact_array_count_beyond_the_frame_is_refused(count: int) -> None:
    frame = _join_group_v6_up_to_protocols() + _uvarint(count + 1)
    with pytest.raises(MalformedFrameError, match="LengthError"):
        decode_request(frame)


@given(count=st.integers(min_value=1, max_value=2**31 - 1))
def test_a_legacy_array_count_beyond_the_frame_is_refused(count: int) -> None:
    # JoinGroup v0: group, session timeout, member id, protocol type, protocols[int32]
    frame = struct.pack(">hhih", 11, 0, 1, -1) + b"\x00\x01g" + struct.pack(">i", 1000)
    frame += b"\x00\x00" + b"\x00\x01c" + struct.pack(">i", count)
    with pytest.raises(MalformedFrameError, match="LengthError"):
        decode_request(frame)


def test_the_guard_names_the_count_it_refused() -> None:
    cls = load_request_schema(11, 6)
    body = _join_group_v6_up_to_protocols()[11:] + _uvarint(4_000_000_001)
    with pytest.raises(LengthError, match="array of 4000000000 elements in 0 bytes"):
        check_lengths(cls, body, 0)


def test_the_26_byte_frame_that_aborted_kio_is_a_malformed_frame() -> None:
    # DeleteTopics v5 whose topics count is a 5-byte varint (found by the fuzz test):
    # without the guard, kio's reader asks for 260 GB and the process aborts
    frame = bytes.fromhex("0014000500003361000466757a7a00fffffffe7a7a0000000000")
    with pytest.raises(MalformedFrameError, match="LengthError"):
        decode_request(frame)


def test_a_valid_request_decodes_with_the_guard_in_place() -> None:
    cls = load_request_schema(11, 6)
    entity = _entity_example(cls)
    header = struct.pack(">hhih", 11, 6, 1, -1) + b"\x00"
    _header, request = decode_request(header + _encode(cls, entity))
    assert request == entity


def _entity_example(cls: type[Any]) -> Any:
    from kio.schema.join_group.v6.request import JoinGroupRequestProtocol

    return cls(
        group_id="g",
        session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        member_id="",
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),) * 3,
    )
