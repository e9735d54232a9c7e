"""Requests into and responses out of :class:`~groupcoord.coordinator.GroupCoordinator`.

Frozen, slotted, keyword-only dataclasses whose field names are Kafka's JSON message schema
names in snake case (``GenerationIdOrMemberEpoch`` -> ``generation_id_or_member_epoch``), so a
wire shell maps Kafka messages onto them one to one. Every request carries the ``version`` it
arrived with (semantics depend on it) and an opaque ``correlation`` token that the matching
response carries back.

Requests validate themselves on construction: a wrong type raises ``TypeError``, an
out-of-range value ``ValueError``, a version outside the API's range (or a field set in a
version that has no such field) :class:`~groupcoord.errors.UnsupportedVersionError`, which a
wire shell can answer with its Kafka code.

Responses carry ``error``: ``None`` for success or the :mod:`groupcoord.errors` class of the
Kafka error; ``error_code`` is its wire code (0 for none).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import ClassVar, Final, TypeAlias, TypeVar

from groupcoord.errors import KafkaError, UnsupportedVersionError
from groupcoord.types import Assignment, Subscription

__all__ = [
    "UNKNOWN_MEMBER_ID",
    "AnyRequest",
    "AnyResponse",
    "DeletableGroupResult",
    "DeleteGroupsRequest",
    "DeleteGroupsResponse",
    "DescribeGroupsRequest",
    "DescribeGroupsResponse",
    "DescribedGroup",
    "DescribedGroupMember",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JoinGroupRequest",
    "JoinGroupResponse",
    "JoinGroupResponseMember",
    "LeaveGroupRequest",
    "LeaveGroupResponse",
    "ListGroupsRequest",
    "ListGroupsResponse",
    "ListedGroup",
    "MemberIdentity",
    "MemberResponse",
    "OffsetCommitRequest",
    "OffsetCommitRequestPartition",
    "OffsetCommitRequestTopic",
    "OffsetCommitResponse",
    "OffsetCommitResponsePartition",
    "OffsetCommitResponseTopic",
    "OffsetDeleteRequest",
    "OffsetDeleteRequestTopic",
    "OffsetDeleteResponse",
    "OffsetDeleteResponsePartition",
    "OffsetDeleteResponseTopic",
    "OffsetFetchRequest",
    "OffsetFetchRequestGroup",
    "OffsetFetchRequestTopic",
    "OffsetFetchResponse",
    "OffsetFetchResponseGroup",
    "OffsetFetchResponsePartition",
    "OffsetFetchResponseTopic",
    "Request",
    "Response",
    "SyncGroupRequest",
    "SyncGroupResponse",
    "with_committed_offsets",
    "with_correlation",
]

#: The member id of a member that does not have one yet (Kafka's ``UNKNOWN_MEMBER_ID``).
UNKNOWN_MEMBER_ID: Final = ""

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

ErrorClass: TypeAlias = type[KafkaError] | None


# --------------------------------------------------------------------------------------
# validation helpers (module functions: super() does not work in slotted dataclasses)
# --------------------------------------------------------------------------------------


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def _int(value: object, name: str, bounds: tuple[int, int] = _INT32) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is out of range [{lo}, {hi}]")
    return value


def _str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value


def _opt_str(value: object, name: str) -> str | None:
    return None if value is None else _str(value, name)


def _bytes(value: object, name: str) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name} must be bytes, not {type(value).__name__}")


def _tuple(value: object, name: str) -> tuple[object, ...]:
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence, not {type(value).__name__}")
    return tuple(value)


_FIELDS_BUT_CORRELATION: dict[type, tuple[str, ...]] = {}

_R = TypeVar("_R", bound="Request")


def with_correlation(request: _R, correlation: object) -> _R:
    """A copy of ``request`` with another ``correlation``, not validated again.

    ``request`` was validated when it was made and ``correlation`` is never checked (it is
    the caller's opaque token), so the copy is as valid as the original. For senders that
    repeat one request many times (a member's heartbeats within a generation): building it
    anew costs about three times as much, mostly in checks that cannot fail.
    """
    cls = type(request)
    names = _FIELDS_BUT_CORRELATION.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls) if f.name != "correlation")
        _FIELDS_BUT_CORRELATION[cls] = names
    copy = object.__new__(cls)
    for name in names:
        object.__setattr__(copy, name, getattr(request, name))
    object.__setattr__(copy, "correlation", correlation)
    return copy


def with_committed_offsets(
    request: OffsetCommitRequest, correlation: object, offsets: Sequence[int]
) -> OffsetCommitRequest:
    """A copy of ``request`` with another ``correlation`` and other committed offsets, one
    per partition in the request's order (topic after topic); only the offsets are checked.

    Everything else was validated when ``request`` was made (a partition's other fields
    are copied as they are), so the copy is as valid as a request built anew. For senders
    that commit the same partitions again and again (a consumer's auto-commit).
    """
    if len(offsets) != sum(len(topic.partitions) for topic in request.topics):
        raise ValueError(f"{len(offsets)} offsets for the request's partitions")
    it = iter(offsets)
    topics = []
    for topic in request.topics:
        parts = []
        for p in topic.partitions:
            part = object.__new__(OffsetCommitRequestPartition)
            for name in _PARTITION_FIELDS:
                object.__setattr__(part, name, getattr(p, name))
            object.__setattr__(part, "committed_offset", _int(next(it), "committed_offset", _INT64))
            parts.append(part)
        t = object.__new__(OffsetCommitRequestTopic)
        object.__setattr__(t, "name", topic.name)
        object.__setattr__(t, "partitions", tuple(parts))
        topics.append(t)
    copy = with_correlation(request, correlation)
    object.__setattr__(copy, "topics", tuple(topics))
    return copy


def _check_version(req: Request) -> int:
    v = req.version
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"version must be an int, not {type(v).__name__}")
    if not req.MIN_VERSION <= v <= req.MAX_VERSION:
        raise UnsupportedVersionError(
            f"{type(req).__name__} version {v} is not supported "
            f"(supported: {req.MIN_VERSION}-{req.MAX_VERSION})"
        )
    return v


def _since(req: Request, first: int, name: str, is_set: bool) -> None:
    if is_set and req.version < first:
        raise UnsupportedVersionError(
            f"{type(req).__name__} version {req.version} has no {name} (needs v{first}+)"
        )


def _until(req: Request, last: int, name: str, is_set: bool) -> None:
    if is_set and req.version > last:
        raise UnsupportedVersionError(
            f"{type(req).__name__} version {req.version} has no {name} (v{last} and below)"
        )


# --------------------------------------------------------------------------------------
# bases
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Base of every request: the API version it arrived with and an opaque correlation."""

    API_KEY: ClassVar[int] = -1
    MIN_VERSION: ClassVar[int] = 0
    MAX_VERSION: ClassVar[int] = 0

    version: int
    correlation: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """Base of every response: the request's ``version`` and ``correlation``."""

    version: int
    correlation: object = None


def _error_code(error: ErrorClass) -> int:
    return 0 if error is None else error.code


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorResult:
    """A per-item result (a member, a partition, a group) with its own ``error``."""

    error: ErrorClass = None

    @property
    def error_code(self) -> int:
        return _error_code(self.error)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorResponse(Response):
    """A response with a top-level ``error`` (``None`` is Kafka's NONE)."""

    error: ErrorClass = None

    @property
    def error_code(self) -> int:
        return _error_code(self.error)


# --------------------------------------------------------------------------------------
# JoinGroup (API 11, v0-v9)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupRequest(Request):
    """JoinGroup. ``protocols`` is ``((name, metadata), ...)`` in preference order.

    ``rebalance_timeout_ms`` does not exist in v0: the session timeout is used
    (:attr:`effective_rebalance_timeout_ms`). ``client_id`` and ``client_host`` come from the
    request header and the connection.
    """

    API_KEY: ClassVar[int] = 11
    MAX_VERSION: ClassVar[int] = 9

    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int = -1
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""

    def __post_init__(self) -> None:
        v = _check_version(self)
        _str(self.group_id, "group_id")
        _int(self.session_timeout_ms, "session_timeout_ms")
        _int(self.rebalance_timeout_ms, "rebalance_timeout_ms")
        if v >= 1 and self.rebalance_timeout_ms < 0:
            raise ValueError(f"rebalance_timeout_ms must be >= 0, got {self.rebalance_timeout_ms}")
        _str(self.member_id, "member_id")
        _since(
            self,
            5,
            "group_instance_id",
            _opt_str(self.group_instance_id, "group_instance_id") is not None,
        )
        _str(self.protocol_type, "protocol_type")
        protocols: list[tuple[str, bytes]] = []
        seen: set[str] = set()
        for i, item in enumerate(_tuple(self.protocols, "protocols")):
            pair = _tuple(item, f"protocols[{i}]")
            if len(pair) != 2:
                raise ValueError(f"protocols[{i}] must be a (name, metadata) pair")
            name = _str(pair[0], f"protocols[{i}] name")
            if name in seen:
                raise ValueError(f"protocols lists {name!r} twice")
            seen.add(name)
            protocols.append((name, _bytes(pair[1], f"protocols[{i}] metadata")))
        _set(self, "protocols", tuple(protocols))
        _since(self, 8, "reason", _opt_str(self.reason, "reason") is not None)
        _str(self.client_id, "client_id")
        _str(self.client_host, "client_host")

    @property
    def effective_rebalance_timeout_ms(self) -> int:
        """The rebalance timeout the coordinator uses (v0: the session timeout, KIP-62)."""
        return self.session_timeout_ms if self.version == 0 else self.rebalance_timeout_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinGroupResponse(ErrorResponse):
    """JoinGroup result. Only the leader's has ``members``; ``protocol_name`` is ``None``
    on errors."""

    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinGroupResponseMember, ...] = ()


# --------------------------------------------------------------------------------------
# SyncGroup (API 14, v0-v5)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupRequest(Request):
    """SyncGroup. The leader's ``assignments`` is ``((member_id, assignment), ...)``."""

    API_KEY: ClassVar[int] = 14
    MAX_VERSION: ClassVar[int] = 5

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        _int(self.generation_id, "generation_id")
        _str(self.member_id, "member_id")
        _since(
            self,
            3,
            "group_instance_id",
            _opt_str(self.group_instance_id, "group_instance_id") is not None,
        )
        _since(self, 5, "protocol_type", _opt_str(self.protocol_type, "protocol_type") is not None)
        _since(self, 5, "protocol_name", _opt_str(self.protocol_name, "protocol_name") is not None)
        out: list[tuple[str, bytes]] = []
        for i, item in enumerate(_tuple(self.assignments, "assignments")):
            pair = _tuple(item, f"assignments[{i}]")
            if len(pair) != 2:
                raise ValueError(f"assignments[{i}] must be a (member_id, assignment) pair")
            out.append(
                (_str(pair[0], f"assignments[{i}] member_id"), _bytes(pair[1], "assignment"))
            )
        _set(self, "assignments", tuple(out))


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncGroupResponse(ErrorResponse):
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --------------------------------------------------------------------------------------
# Heartbeat (API 12, v0-v4)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest(Request):
    API_KEY: ClassVar[int] = 12
    MAX_VERSION: ClassVar[int] = 4

    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        _int(self.generation_id, "generation_id")
        _str(self.member_id, "member_id")
        _since(
            self,
            3,
            "group_instance_id",
            _opt_str(self.group_instance_id, "group_instance_id") is not None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatResponse(ErrorResponse):
    """Heartbeat result: only the error."""


# --------------------------------------------------------------------------------------
# LeaveGroup (API 13, v0-v5)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberIdentity:
    """One leaving member (v3+): by ``member_id``, or by ``group_instance_id`` alone."""

    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        _str(self.member_id, "member_id")
        _opt_str(self.group_instance_id, "group_instance_id")
        _opt_str(self.reason, "reason")


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupRequest(Request):
    """LeaveGroup: one ``member_id`` (v0-v2) or a batch of ``members`` (v3+)."""

    API_KEY: ClassVar[int] = 13
    MAX_VERSION: ClassVar[int] = 5

    group_id: str
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[MemberIdentity, ...] = ()

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        _str(self.member_id, "member_id")
        _until(self, 2, "member_id", self.member_id != UNKNOWN_MEMBER_ID)
        members = _tuple(self.members, "members")
        for i, m in enumerate(members):
            if not isinstance(m, MemberIdentity):
                raise TypeError(f"members[{i}] must be a MemberIdentity")
            _since(self, 5, "members[].reason", m.reason is not None)
        _since(self, 3, "members", bool(members))
        _set(self, "members", members)

    def identities(self) -> tuple[MemberIdentity, ...]:
        """The leaving members in the v3+ shape (v0-v2: the one ``member_id``)."""
        if self.version < 3:
            return (MemberIdentity(member_id=self.member_id),)
        return self.members


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberResponse(ErrorResult):
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveGroupResponse(ErrorResponse):
    """Top-level ``error`` and per-member results (v3+). v0-v2 have only the top-level
    error, which carries the one member's error (as Kafka's LeaveGroupResponse does)."""

    members: tuple[MemberResponse, ...] = ()


# --------------------------------------------------------------------------------------
# OffsetCommit (API 8, v0-v9)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    commit_timestamp: int = -1
    committed_metadata: str | None = None

    def __post_init__(self) -> None:
        _int(self.partition_index, "partition_index")
        _int(self.committed_offset, "committed_offset", _INT64)
        _int(self.committed_leader_epoch, "committed_leader_epoch")
        _int(self.commit_timestamp, "commit_timestamp", _INT64)
        _opt_str(self.committed_metadata, "committed_metadata")


# the fields with_committed_offsets copies as they are
_PARTITION_FIELDS = (
    "partition_index",
    "committed_leader_epoch",
    "commit_timestamp",
    "committed_metadata",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequestTopic:
    name: str
    partitions: tuple[OffsetCommitRequestPartition, ...]

    def __post_init__(self) -> None:
        _str(self.name, "name")
        parts = _tuple(self.partitions, "partitions")
        for p in parts:
            if not isinstance(p, OffsetCommitRequestPartition):
                raise TypeError("partitions must contain OffsetCommitRequestPartition")
        _set(self, "partitions", parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitRequest(Request):
    """OffsetCommit. v0 has no generation/member (a simple-consumer commit: -1 and "")."""

    API_KEY: ClassVar[int] = 8
    MAX_VERSION: ClassVar[int] = 9

    group_id: str
    generation_id_or_member_epoch: int = -1
    member_id: str = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None
    retention_time_ms: int = -1
    topics: tuple[OffsetCommitRequestTopic, ...]

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        gen = _int(self.generation_id_or_member_epoch, "generation_id_or_member_epoch")
        _since(self, 1, "generation_id_or_member_epoch", gen != -1)
        _since(self, 1, "member_id", _str(self.member_id, "member_id") != UNKNOWN_MEMBER_ID)
        _since(
            self,
            7,
            "group_instance_id",
            _opt_str(self.group_instance_id, "group_instance_id") is not None,
        )
        ret = _int(self.retention_time_ms, "retention_time_ms", _INT64)
        _since(self, 2, "retention_time_ms", ret != -1)
        _until(self, 4, "retention_time_ms", ret != -1)
        topics = _tuple(self.topics, "topics")
        for t in topics:
            if not isinstance(t, OffsetCommitRequestTopic):
                raise TypeError("topics must contain OffsetCommitRequestTopic")
            for p in t.partitions:
                _since(self, 6, "committed_leader_epoch", p.committed_leader_epoch != -1)
                ts = p.commit_timestamp != -1
                _since(self, 1, "commit_timestamp", ts)
                _until(self, 1, "commit_timestamp", ts)
        _set(self, "topics", topics)

    @property
    def generation_id(self) -> int:
        """Alias of ``generation_id_or_member_epoch`` (a generation for classic groups)."""
        return self.generation_id_or_member_epoch


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponsePartition(ErrorResult):
    partition_index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: tuple[OffsetCommitResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitResponse(Response):
    topics: tuple[OffsetCommitResponseTopic, ...] = ()


# --------------------------------------------------------------------------------------
# OffsetFetch (API 9, v0-v9)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: tuple[int, ...]

    def __post_init__(self) -> None:
        _str(self.name, "name")
        idx = _tuple(self.partition_indexes, "partition_indexes")
        for i in idx:
            _int(i, "partition_indexes[]")
        _set(self, "partition_indexes", idx)


def _fetch_topics(value: object, name: str) -> tuple[OffsetFetchRequestTopic, ...] | None:
    if value is None:
        return None
    topics = _tuple(value, name)
    for t in topics:
        if not isinstance(t, OffsetFetchRequestTopic):
            raise TypeError(f"{name} must contain OffsetFetchRequestTopic")
    return topics  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequestGroup:
    """One group of a v8+ fetch; ``topics=None`` fetches every committed offset."""

    group_id: str
    topics: tuple[OffsetFetchRequestTopic, ...] | None = None
    member_id: str | None = None
    member_epoch: int = -1

    def __post_init__(self) -> None:
        _str(self.group_id, "group_id")
        _set(self, "topics", _fetch_topics(self.topics, "topics"))
        _opt_str(self.member_id, "member_id")
        _int(self.member_epoch, "member_epoch")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchRequest(Request):
    """OffsetFetch: one ``group_id`` and ``topics`` (v0-v7; ``None`` = all, v2+), or
    ``groups`` (v8+)."""

    API_KEY: ClassVar[int] = 9
    MAX_VERSION: ClassVar[int] = 9

    group_id: str = ""
    topics: tuple[OffsetFetchRequestTopic, ...] | None = ()
    groups: tuple[OffsetFetchRequestGroup, ...] = ()
    require_stable: bool = False

    def __post_init__(self) -> None:
        v = _check_version(self)
        _str(self.group_id, "group_id")
        topics = _fetch_topics(self.topics, "topics")
        _set(self, "topics", topics)
        groups = _tuple(self.groups, "groups")
        for g in groups:
            if not isinstance(g, OffsetFetchRequestGroup):
                raise TypeError("groups must contain OffsetFetchRequestGroup")
            _since(
                self, 9, "member_id/member_epoch", g.member_id is not None or g.member_epoch != -1
            )
        _set(self, "groups", groups)
        if not isinstance(self.require_stable, bool):
            raise TypeError("require_stable must be a bool")
        _since(self, 7, "require_stable", self.require_stable)
        _since(self, 8, "groups", bool(groups))
        if v >= 8:
            _until(self, 7, "group_id", self.group_id != "")
            _until(self, 7, "topics", topics is None or bool(topics))
        elif topics is None:
            _since(self, 2, "topics=None (fetch all)", True)

    def requested_groups(self) -> tuple[OffsetFetchRequestGroup, ...]:
        """The groups asked for, in the v8+ shape."""
        if self.version >= 8:
            return self.groups
        return (OffsetFetchRequestGroup(group_id=self.group_id, topics=self.topics),)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponsePartition(ErrorResult):
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: tuple[OffsetFetchResponsePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponseGroup(ErrorResult):
    group_id: str
    topics: tuple[OffsetFetchResponseTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetFetchResponse(ErrorResponse):
    """v0-v7: ``error`` and ``topics`` of the one group; v8+: ``groups``."""

    topics: tuple[OffsetFetchResponseTopic, ...] = ()
    groups: tuple[OffsetFetchResponseGroup, ...] = ()


# --------------------------------------------------------------------------------------
# DescribeGroups (API 15, v0-v5), ListGroups (API 16, v0-v5), DeleteGroups (API 42, v0-v2)
# --------------------------------------------------------------------------------------


def _str_tuple(value: object, name: str) -> tuple[str, ...]:
    items = _tuple(value, name)
    for i in items:
        _str(i, f"{name}[]")
    return items  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsRequest(Request):
    """DescribeGroups; from v6 (KIP-1043) a group that is not a classic group is reported
    with GROUP_ID_NOT_FOUND and a message, as Kafka 4 does."""

    API_KEY: ClassVar[int] = 15
    MAX_VERSION: ClassVar[int] = 6

    groups: tuple[str, ...]
    include_authorized_operations: bool = False

    def __post_init__(self) -> None:
        _check_version(self)
        _set(self, "groups", _str_tuple(self.groups, "groups"))
        if not isinstance(self.include_authorized_operations, bool):
            raise TypeError("include_authorized_operations must be a bool")
        _since(self, 3, "include_authorized_operations", self.include_authorized_operations)


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroupMember:
    """One member as DescribeGroups reports it. ``member_metadata`` / ``member_assignment``
    are the raw bytes (empty unless the group is Stable); for ``consumer`` groups
    ``subscription`` and ``assignment`` are the same payloads decoded (``None`` when absent
    or not decodable)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes
    subscription: Subscription | None = None
    assignment: Assignment | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup(ErrorResult):
    """One group as DescribeGroups reports it; ``error_message`` is on the wire from v6."""

    group_id: str
    group_state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedGroupMember, ...] = ()
    authorized_operations: int = -(2**31)
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeGroupsResponse(Response):
    groups: tuple[DescribedGroup, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsRequest(Request):
    """ListGroups; ``states_filter`` (v4+) and ``types_filter`` (v5+) are case-insensitive."""

    API_KEY: ClassVar[int] = 16
    MAX_VERSION: ClassVar[int] = 5

    states_filter: tuple[str, ...] = ()
    types_filter: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_version(self)
        states = _str_tuple(self.states_filter, "states_filter")
        types = _str_tuple(self.types_filter, "types_filter")
        _since(self, 4, "states_filter", bool(states))
        _since(self, 5, "types_filter", bool(types))
        _set(self, "states_filter", states)
        _set(self, "types_filter", types)


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListGroupsResponse(ErrorResponse):
    groups: tuple[ListedGroup, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsRequest(Request):
    API_KEY: ClassVar[int] = 42
    MAX_VERSION: ClassVar[int] = 2

    groups_names: tuple[str, ...]

    def __post_init__(self) -> None:
        _check_version(self)
        _set(self, "groups_names", _str_tuple(self.groups_names, "groups_names"))


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletableGroupResult(ErrorResult):
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse(Response):
    results: tuple[DeletableGroupResult, ...] = ()


# --------------------------------------------------------------------------------------
# OffsetDelete (API 47, v0)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteRequestTopic:
    name: str
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        _str(self.name, "topics[].name")
        parts = _tuple(self.partitions, "topics[].partitions")
        for p in parts:
            _int(p, "topics[].partitions[]")
        _set(self, "partitions", parts)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteRequest(Request):
    """OffsetDelete: the committed offsets of these partitions go (what
    ``kafka-consumer-groups --delete-offsets`` and Java's
    ``Admin.deleteConsumerGroupOffsets`` send)."""

    API_KEY: ClassVar[int] = 47
    MAX_VERSION: ClassVar[int] = 0

    group_id: str
    topics: tuple[OffsetDeleteRequestTopic, ...] = ()

    def __post_init__(self) -> None:
        _check_version(self)
        _str(self.group_id, "group_id")
        topics = _tuple(self.topics, "topics")
        for t in topics:
            if not isinstance(t, OffsetDeleteRequestTopic):
                raise TypeError(
                    f"topics[] must be OffsetDeleteRequestTopic, not {type(t).__name__}"
                )
        _set(self, "topics", topics)


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponsePartition(ErrorResult):
    partition_index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponseTopic:
    name: str
    partitions: tuple[OffsetDeleteResponsePartition, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetDeleteResponse(ErrorResponse):
    """A group-level ``error`` (then no topics), or one result per partition."""

    topics: tuple[OffsetDeleteResponseTopic, ...] = ()


AnyRequest: TypeAlias = (
    JoinGroupRequest
    | SyncGroupRequest
    | HeartbeatRequest
    | LeaveGroupRequest
    | OffsetCommitRequest
    | OffsetFetchRequest
    | DescribeGroupsRequest
    | ListGroupsRequest
    | DeleteGroupsRequest
    | OffsetDeleteRequest
)

AnyResponse: TypeAlias = (
    JoinGroupResponse
    | SyncGroupResponse
    | HeartbeatResponse
    | LeaveGroupResponse
    | OffsetCommitResponse
    | OffsetFetchResponse
    | DescribeGroupsResponse
    | ListGroupsResponse
    | DeleteGroupsResponse
    | OffsetDeleteResponse
)
