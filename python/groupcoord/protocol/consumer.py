"""Consumer-protocol payloads: the bytes JoinGroup and SyncGroup carry for protocol type "consumer".

This is the pure-Python reference implementation; ``rust/src/consumer_protocol.rs`` is the
zero-copy twin used on the assignors' hot path. Both write exactly what the Java client writes.

Layouts (all integers big-endian; no flexible versions, no tagged fields):

``ConsumerProtocolSubscription`` (versions 0-3), after an int16 version::

    topics            array[string]            int32 count, then int16 length + UTF-8 each
    user_data         nullable bytes           int32 length, -1 = null
    owned_partitions  array[(topic string,     v1+
                             partitions array[int32])]
    generation_id     int32                    v2+ (-1 when absent)
    rack_id           nullable string          v3+ (int16 length, -1 = null)

``ConsumerProtocolAssignment`` (versions 0-3, the same fields in every version), after an
int16 version: ``assigned_partitions`` array[(topic, array[int32])], ``user_data``.

StickyAssignor user data (no version prefix): V0 is ``previous_assignment``
array[(topic, array[int32])]; V1 appends ``generation`` int32.
CooperativeStickyAssignor user data: one int32 generation.

Encoding
    Partitions are grouped by topic in order of first appearance, and within a topic kept in
    the order given; this is what the Java client does (Kafka 3.x ``ConsumerProtocol``), and
    it means a payload that was decoded re-encodes to the same bytes. Sort the partitions
    first if you want topic-sorted groups. Fields a version lacks are left out.

Decoding
    Strict: every length is checked against the bytes left before anything is allocated, a
    negative length is only accepted as the null marker (-1) of a nullable field, strings
    must be valid UTF-8, and a payload of a known version (0-3) must end where its last
    field ends. A newer version (4+) is read with the fields of version 3 and whatever
    follows them is ignored, as the Java client does. Owned and assigned partitions come
    back as flat tuples of :class:`TopicPartition`, in the order written. Any malformed
    input raises :class:`~groupcoord.errors.InvalidPayload`.

Where this is stricter than the Java client: Java treats any negative nullable length as
null, replaces invalid UTF-8 instead of failing, and ignores trailing bytes at every version.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from enum import Enum
from functools import partial
from itertools import repeat
from typing import Final

from groupcoord.errors import InvalidPayload
from groupcoord.types import Assignment, Subscription, TopicPartition

__all__ = [
    "ASSIGNMENT_MAX_VERSION",
    "SUBSCRIPTION_MAX_VERSION",
    "BytesLike",
    "OwnershipSource",
    "decode_assignment",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "decode_subscription",
    "described_assignment",
    "described_subscription",
    "encode_assignment",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "encode_subscription",
]


class OwnershipSource(Enum):
    """Where an assignor reads a member's previously owned partitions from, in its
    subscription."""

    #: range and round-robin ignore ownership.
    NONE = "none"
    #: sticky (KIP-54, eager): owned_partitions + generation_id (subscription v1/v2),
    #: else StickyAssignorUserData V1/V0 in user_data.
    STICKY = "sticky"
    #: cooperative-sticky (KIP-429): owned_partitions + generation_id, the generation
    #: falling back to CooperativeStickyAssignor user data (an int32).
    COOPERATIVE = "cooperative"


#: Highest ConsumerProtocolSubscription version this module writes and fully understands.
SUBSCRIPTION_MAX_VERSION: Final = 3
#: Highest ConsumerProtocolAssignment version this module writes and fully understands.
ASSIGNMENT_MAX_VERSION: Final = 3

_INT16_MAX: Final = 2**15 - 1
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1

#: What the decoders accept: any bytes-like object (a memoryview of any shape is read as its bytes).
BytesLike = bytes | bytearray | memoryview

_I16: Final = struct.Struct(">h")
# TopicPartition from a (topic, partition) tuple, skipping the NamedTuple's Python-level
# __new__ (and _make, also Python-level): about twice as fast on the decoders' hot path.
_make_tp: Final = partial(tuple.__new__, TopicPartition)
_I32: Final = struct.Struct(">i")


# --------------------------------------------------------------------------- encoding


def _check_version(version: object, highest: int) -> int:
    if isinstance(version, bool) or not isinstance(version, int):
        raise TypeError(f"version must be an int, not {type(version).__name__}")
    if not 0 <= version <= highest:
        raise ValueError(f"version must be between 0 and {highest}, got {version}")
    return version


def _check_int32(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{what} {value} does not fit an int32")
    return value


def _utf8(value: str, what: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"{what} {value!r} cannot be encoded as UTF-8: {exc.reason}") from None


def _put_string(out: bytearray, value: object, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")
    raw = _utf8(value, what)
    if len(raw) > _INT16_MAX:
        raise ValueError(f"{what} is {len(raw)} bytes in UTF-8, longer than {_INT16_MAX}")
    out += _I16.pack(len(raw))
    out += raw


def _put_nullable_string(out: bytearray, value: str | None, what: str) -> None:
    if value is None:
        out += _I16.pack(-1)
    else:
        _put_string(out, value, what)


def _put_nullable_bytes(out: bytearray, value: bytes | None, what: str) -> None:
    if value is None:
        out += _I32.pack(-1)
        return
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes or None, not {type(value).__name__}")
    if len(value) > _INT32_MAX:
        raise ValueError(f"{what} is longer than {_INT32_MAX} bytes")
    out += _I32.pack(len(value))
    out += value


def _group_by_topic(partitions: Iterable[TopicPartition], what: str) -> dict[str, list[int]]:
    """Partitions grouped by topic: topics in order of first appearance, partitions as given."""
    if isinstance(partitions, (str, bytes)):
        raise TypeError(f"{what} must be an iterable of TopicPartition")
    groups: dict[str, list[int]] = {}
    for tp in partitions:
        try:
            topic, partition = tp
        except (TypeError, ValueError):
            raise TypeError(f"{what} must contain (topic, partition) pairs, got {tp!r}") from None
        if not isinstance(topic, str):
            raise TypeError(f"topic in {what} must be a str, not {type(topic).__name__}")
        _check_int32(partition, f"partition of {topic!r} in {what}")
        group = groups.get(topic)
        if group is None:
            groups[topic] = group = []
        group.append(partition)
    return groups


def _put_topic_partitions(out: bytearray, groups: dict[str, list[int]], what: str) -> None:
    out += _I32.pack(len(groups))
    for topic, partitions in groups.items():
        _put_string(out, topic, f"topic in {what}")
        out += _I32.pack(len(partitions))
        out += struct.pack(f">{len(partitions)}i", *partitions)


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_MAX_VERSION) -> bytes:
    """ConsumerProtocolSubscription bytes of ``sub`` at ``version`` (0-3).

    Fields the version lacks are left out: owned partitions before v1, the generation
    before v2, the rack before v3. ``group_instance_id`` is not part of this payload.
    Raises TypeError/ValueError for arguments that cannot be encoded.
    """
    if not isinstance(sub, Subscription):
        raise TypeError(f"sub must be a Subscription, not {type(sub).__name__}")
    version = _check_version(version, SUBSCRIPTION_MAX_VERSION)
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(sub.topics))
    for topic in sub.topics:
        _put_string(out, topic, "topic")
    _put_nullable_bytes(out, sub.user_data, "user_data")
    if version >= 1:
        groups = _group_by_topic(sub.owned_partitions, "owned_partitions")
        _put_topic_partitions(out, groups, "owned_partitions")
    if version >= 2:
        out += _I32.pack(_check_int32(sub.generation_id, "generation_id"))
    if version >= 3:
        _put_nullable_string(out, sub.rack_id, "rack_id")
    return bytes(out)


def encode_assignment(a: Assignment, version: int = ASSIGNMENT_MAX_VERSION) -> bytes:
    """ConsumerProtocolAssignment bytes of ``a`` at ``version`` (0-3; the layout is the same).

    Partitions are grouped by topic in order of first appearance, in the order given within
    a topic (as the Java client does); decoding gives back the same multiset of partitions,
    and the same sequence when the input was already grouped by topic.
    """
    if not isinstance(a, Assignment):
        raise TypeError(f"a must be an Assignment, not {type(a).__name__}")
    version = _check_version(version, ASSIGNMENT_MAX_VERSION)
    out = bytearray(_I16.pack(version))
    _put_topic_partitions(out, _group_by_topic(a.partitions, "partitions"), "partitions")
    _put_nullable_bytes(out, a.user_data, "user_data")
    return bytes(out)


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int | None) -> bytes:
    """StickyAssignor user data: V1 (previous assignment + generation), or V0 when
    ``generation`` is None. No version prefix, as Java's StickyAssignor writes it."""
    out = bytearray()
    _put_topic_partitions(out, _group_by_topic(partitions, "partitions"), "partitions")
    if generation is not None:
        out += _I32.pack(_check_int32(generation, "generation"))
    return bytes(out)


def encode_cooperative_user_data(generation: int) -> bytes:
    """CooperativeStickyAssignor user data: the member's generation as an int32."""
    return _I32.pack(_check_int32(generation, "generation"))


# --------------------------------------------------------------------------- decoding


def _as_view(data: object, what: str) -> memoryview:
    if isinstance(data, (bytes, bytearray)):
        return memoryview(data)
    if isinstance(data, memoryview):
        try:
            return data.cast("B") if data.c_contiguous else memoryview(data.tobytes())
        except (TypeError, ValueError) as exc:  # a released view
            raise InvalidPayload(f"{what}: unusable memoryview ({exc})") from None
    raise InvalidPayload(f"{what}: expected bytes, got {type(data).__name__}")


class _Reader:
    """Bounds-checked cursor over a payload; every failure is an InvalidPayload."""

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: memoryview, what: str) -> None:
        self.buf = buf
        self.pos = 0
        self.what = what

    def fail(self, message: str) -> InvalidPayload:
        return InvalidPayload(f"invalid {self.what} at byte {self.pos}: {message}")

    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def need(self, n: int, field: str) -> None:
        if n > len(self.buf) - self.pos:
            raise self.fail(f"truncated {field}: needs {n} bytes, {self.remaining()} left")

    def int16(self, field: str) -> int:
        self.need(2, field)
        (value,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(value)

    def int32(self, field: str) -> int:
        self.need(4, field)
        (value,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def count(self, field: str, min_item_size: int) -> int:
        """An array count, checked against the bytes left (each item takes >= min_item_size)."""
        n = self.int32(f"{field} count")
        if n < 0:
            raise self.fail(f"{field} count is {n} (the array is not nullable)")
        if n * min_item_size > self.remaining():
            raise self.fail(
                f"{field} count {n} needs at least {n * min_item_size} bytes,"
                f" {self.remaining()} left"
            )
        return n

    def _text(self, n: int, field: str) -> str:
        self.need(n, field)
        start = self.pos
        self.pos += n
        try:
            return str(self.buf[start : self.pos], "utf-8")
        except UnicodeDecodeError as exc:
            self.pos = start
            raise self.fail(f"{field} is not valid UTF-8 ({exc.reason})") from None

    def string(self, field: str) -> str:
        n = self.int16(f"{field} length")
        if n < 0:
            raise self.fail(f"{field} length is {n} (the string is not nullable)")
        return self._text(n, field)

    def nullable_string(self, field: str) -> str | None:
        n = self.int16(f"{field} length")
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"{field} length is {n}")
        return self._text(n, field)

    def nullable_bytes(self, field: str) -> bytes | None:
        n = self.int32(f"{field} length")
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"{field} length is {n}")
        self.need(n, field)
        start = self.pos
        self.pos += n
        return self.buf[start : self.pos].tobytes()

    def strings(self, field: str) -> tuple[str, ...]:
        """array[string]. A plain loop over locals; on any problem the checked reader
        re-reads the offending element to report it precisely."""
        n = self.count(field, 2)
        buf, pos, size = self.buf, self.pos, len(self.buf)
        out: list[str] = []
        append = out.append
        unpack = _I16.unpack_from
        for _ in range(n):
            if pos + 2 > size:
                break
            (length,) = unpack(buf, pos)
            stop = pos + 2 + length
            if length < 0 or stop > size:
                break
            try:
                append(str(buf[pos + 2 : stop], "utf-8"))
            except UnicodeDecodeError:
                break
            pos = stop
        self.pos = pos
        if len(out) < n:
            self.string(field)  # raises InvalidPayload for the element the loop stopped at
            raise self.fail(f"{field} could not be read")  # pragma: no cover - unreachable
        return tuple(out)

    def topic_partitions(self, field: str) -> list[TopicPartition]:
        """array[(topic, array[int32])] flattened to TopicPartitions, in the order written."""
        out: list[TopicPartition] = []
        topic_field, partitions_field = f"{field} topic", f"{field} partitions"
        for _ in range(self.count(field, 6)):
            topic = self.string(topic_field)
            n = self.count(partitions_field, 4)
            parts = struct.unpack_from(f">{n}i", self.buf, self.pos)
            self.pos += 4 * n
            out.extend(map(_make_tp, zip(repeat(topic, n), parts, strict=True)))
        return out

    def end(self, version: int, highest: int) -> None:
        """A known version must be consumed exactly; newer versions may carry more fields."""
        if version <= highest and self.pos != len(self.buf):
            raise self.fail(f"{self.remaining()} unexpected trailing bytes after a v{version} body")


def _version(r: _Reader) -> int:
    version = r.int16("version")
    if version < 0:
        r.pos = 0
        raise r.fail(f"unsupported version {version}")
    return version


def decode_subscription(data: BytesLike) -> Subscription:
    """Decode ConsumerProtocolSubscription bytes (any version >= 0; see module docs).

    Fields absent from the payload's version take their defaults: no owned partitions,
    generation_id -1, rack_id None. ``group_instance_id`` is always None (it travels in
    JoinGroup, not here). Raises InvalidPayload for anything malformed.
    """
    r = _Reader(_as_view(data, "subscription"), "subscription")
    version = _version(r)
    topics = r.strings("topics")
    user_data = r.nullable_bytes("user_data")
    owned: list[TopicPartition] = []
    generation_id = -1
    rack_id = None
    if version >= 1:
        owned = r.topic_partitions("owned_partitions")
    if version >= 2:
        generation_id = r.int32("generation_id")
    if version >= 3:
        rack_id = r.nullable_string("rack_id")
    r.end(version, SUBSCRIPTION_MAX_VERSION)
    return Subscription(
        topics=topics,
        owned_partitions=owned,
        generation_id=generation_id,
        rack_id=rack_id,
        user_data=user_data,
    )


def decode_assignment(data: BytesLike) -> Assignment:
    """Decode ConsumerProtocolAssignment bytes (any version >= 0).

    ``partitions`` is a tuple of TopicPartition in the order written. Raises InvalidPayload
    for anything malformed.
    """
    r = _Reader(_as_view(data, "assignment"), "assignment")
    version = _version(r)
    partitions = r.topic_partitions("assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    r.end(version, ASSIGNMENT_MAX_VERSION)
    return Assignment(partitions=tuple(partitions), user_data=user_data)


def described_subscription(data: BytesLike) -> Subscription | None:
    """A consumer member's subscription as DescribeGroups shows it: ``None`` for empty or
    malformed bytes (one member's bad payload never fails the description of its group)."""
    if not data:
        return None
    try:
        return decode_subscription(data)
    except InvalidPayload:
        return None


def described_assignment(data: BytesLike) -> Assignment | None:
    """A consumer member's assignment as DescribeGroups shows it: ``None`` for empty or
    malformed bytes."""
    if not data:
        return None
    try:
        return decode_assignment(data)
    except InvalidPayload:
        return None


def decode_sticky_user_data(data: BytesLike) -> tuple[list[TopicPartition], int | None]:
    """Decode StickyAssignor user data: ``(previous_assignment, generation)``.

    V1 is a V0 body followed by exactly 4 bytes (the generation); V0 is the body alone and
    gives generation None. Anything else, including empty bytes, raises InvalidPayload.
    (Java's StickyAssignor treats null or empty user data as "no previous assignment";
    callers should do the same before calling this.)
    """
    r = _Reader(_as_view(data, "sticky user data"), "sticky user data")
    partitions = r.topic_partitions("previous_assignment")
    left = r.remaining()
    if left == 0:
        return partitions, None
    if left == 4:
        return partitions, r.int32("generation")
    raise r.fail(f"{left} bytes after the previous assignment (expected 0 or 4)")


def decode_cooperative_user_data(data: BytesLike) -> int:
    """Decode CooperativeStickyAssignor user data: exactly one int32, the generation."""
    r = _Reader(_as_view(data, "cooperative user data"), "cooperative user data")
    generation = r.int32("generation")
    if r.remaining():
        raise r.fail(f"{r.remaining()} unexpected trailing bytes")
    return generation
