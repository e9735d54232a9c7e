"""Refuse frames whose array counts could not possibly fit in them, before kio reads them.

kio's native reader reserves room for an array's elements from the count the frame
declares before it reads any element. A count of billions (a 5-byte compact-array varint,
or an int32) in a frame of a few bytes then makes it ask for tens of gigabytes, and the
failed allocation aborts the whole process: one 26-byte frame from any client would take
the server down. Every element takes at least one byte, so a count larger than the bytes
left in the frame is malformed; :func:`check_lengths` walks the frame along its kio
schema (as kio's own writer lays it out) and raises :class:`LengthError` at the first
such count. Schemas without arrays are not walked at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

__all__ = ["LengthError", "check_lengths", "has_arrays"]

#: bytes taken by each fixed-size kafka type
_FIXED = {
    "int8": 1, "bool": 1, "uint8": 1, "int16": 2, "uint16": 2, "error_code": 2,
    "int32": 4, "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8,
    "float64": 8, "timedelta_i64": 8, "datetime_i64": 8, "uuid": 16,
}  # fmt: skip


class LengthError(ValueError):
    """A count or length that runs past the end of the frame."""


# A step reads one field at ``pos`` of ``data`` (ending at ``end``) and returns the
# position after it.
Step = Callable[[bytes, int, int], int]


def check_lengths(entity_type: Any, data: bytes, offset: int) -> None:
    """Raise :class:`LengthError` if a count or length in ``data[offset:]``, read as
    ``entity_type``, exceeds the bytes that follow it."""
    if has_arrays(entity_type):
        _entity_step(entity_type)(data, offset, len(data))


@cache
def has_arrays(entity_type: Any) -> bool:
    for f in dataclasses.fields(entity_type):
        kind = classify_field(f)
        if kind.is_array:
            return True
        if isinstance(kind, EntityField) and has_arrays(kind.type_):
            return True
    return False


def _need(end: int, pos: int, size: int) -> None:
    if size < 0 or pos + size > end:
        raise LengthError(f"{size} bytes needed at offset {pos}, {max(end - pos, 0)} left")


def _uvarint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise LengthError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 35:
            raise LengthError("varint longer than 5 bytes")


def _int(data: bytes, pos: int, end: int, size: int) -> tuple[int, int]:
    _need(end, pos, size)
    return int.from_bytes(data[pos : pos + size], "big", signed=True), pos + size


def _fixed(size: int) -> Step:
    def step(data: bytes, pos: int, end: int) -> int:
        _need(end, pos, size)
        return pos + size

    return step


def _compact_blob(data: bytes, pos: int, end: int) -> int:
    n, pos = _uvarint(data, pos, end)
    size = max(n - 1, 0)  # 0 is null
    _need(end, pos, size)
    return pos + size


def _legacy_string(data: bytes, pos: int, end: int) -> int:
    n, pos = _int(data, pos, end, 2)
    size = max(n, 0)  # -1 is null
    _need(end, pos, size)
    return pos + size


def _legacy_bytes(data: bytes, pos: int, end: int) -> int:
    n, pos = _int(data, pos, end, 4)
    size = max(n, 0)
    _need(end, pos, size)
    return pos + size


def _primitive_step(kafka_type: str, flexible: bool) -> Step:
    if kafka_type in _FIXED:
        return _fixed(_FIXED[kafka_type])
    if flexible:
        return _compact_blob  # string, bytes, records
    return _legacy_string if kafka_type == "string" else _legacy_bytes


def _array_step(element: Step, flexible: bool) -> Step:
    def step(data: bytes, pos: int, end: int) -> int:
        if flexible:
            n, pos = _uvarint(data, pos, end)
            count = n - 1  # 0 is null
        else:
            count, pos = _int(data, pos, end, 4)  # -1 is null
        if count > end - pos:
            raise LengthError(f"array of {count} elements in {end - pos} bytes")
        for _ in range(max(count, 0)):
            pos = element(data, pos, end)
        return pos

    return step


def _nullable_entity(entity: Step) -> Step:
    def step(data: bytes, pos: int, end: int) -> int:
        marker, pos = _int(data, pos, end, 1)
        return pos if marker < 0 else entity(data, pos, end)

    return step


def _field_step(f: dataclasses.Field[Any], flexible: bool, tagged: bool) -> Step:
    kind = classify_field(f)
    match kind:
        case PrimitiveField() | PrimitiveTupleField():
            element = _primitive_step(get_schema_field_type(f), flexible)
        case EntityField(type_) | EntityTupleField(type_):
            element = _entity_step(type_)
            if isinstance(kind, EntityField) and is_optional(f) and not tagged:
                element = _nullable_entity(element)
    return _array_step(element, flexible) if kind.is_array else element


@cache
def _entity_step(entity_type: Any) -> Step:
    flexible = bool(entity_type.__flexible__)
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for f in dataclasses.fields(entity_type):
        tag = get_field_tag(f)
        if tag is None:
            steps.append(_field_step(f, flexible, tagged=False))
        else:
            tagged[int(tag)] = _field_step(f, flexible, tagged=True)

    def step(data: bytes, pos: int, end: int) -> int:
        for field_step in steps:
            pos = field_step(data, pos, end)
        if not flexible:
            return pos
        count, pos = _uvarint(data, pos, end)
        if count > end - pos:
            raise LengthError(f"{count} tagged fields in {end - pos} bytes")
        for _ in range(count):
            tag, pos = _uvarint(data, pos, end)
            size, pos = _uvarint(data, pos, end)
            _need(end, pos, size)
            known = tagged.get(tag)
            if known is not None:
                known(data, pos, pos + size)
            pos += size
        return pos

    return step
