"""kio group-API messages <-> :mod:`groupcoord.coordinator.messages`, both directions.

Server side: :func:`to_coordinator_request` (a decoded kio request -> our request) and
:func:`to_kio_response` (our response -> the kio response of the same version). Client
side: :func:`to_kio_request` and :func:`from_kio_response`.

kio has one class per (API, version) and a field exists only in the versions that have
it; our messages have every field with Kafka's default. So building a kio object passes
every field we have and keeps those the version's class declares (:func:`_build`), and
reading one takes a field's value or our default when the version lacks it. kio spells
durations as ``timedelta`` (``session_timeout``), our messages as milliseconds
(``session_timeout_ms``), and error codes as its ``ErrorCode`` enum, ours as error classes.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
from collections.abc import Callable, Mapping
from functools import cache
from types import UnionType
from typing import Any, Final

from kio.index import load_payload_module
from kio.schema.errors import ErrorCode
from kio.schema.index import PayloadEntityType
from kio.static.constants import EntityType

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ErrorClass,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    MemberIdentity,
    MemberResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.errors import InvalidPayload, KafkaError, UnsupportedVersionError
from groupcoord.protocol import wire
from groupcoord.protocol.consumer import decode_assignment, decode_subscription
from groupcoord.protocol.wire import kio_version_range
from groupcoord.types import Assignment, Subscription

__all__ = [
    "GROUP_API_KEYS",
    "GROUP_API_VERSIONS",
    "from_kio_response",
    "prepare",
    "to_coordinator_request",
    "to_kio_request",
    "to_kio_response",
]

_REQUEST_TYPES: Final[Mapping[int, type[AnyRequest]]] = {
    cls.API_KEY: cls
    for cls in (
        JoinGroupRequest,
        SyncGroupRequest,
        HeartbeatRequest,
        LeaveGroupRequest,
        OffsetCommitRequest,
        OffsetFetchRequest,
        DescribeGroupsRequest,
        ListGroupsRequest,
        DeleteGroupsRequest,
    )
}

_RESPONSE_KEYS: Final[Mapping[type[AnyResponse], int]] = {
    JoinGroupResponse: 11,
    SyncGroupResponse: 14,
    HeartbeatResponse: 12,
    LeaveGroupResponse: 13,
    OffsetCommitResponse: 8,
    OffsetFetchResponse: 9,
    DescribeGroupsResponse: 15,
    ListGroupsResponse: 16,
    DeleteGroupsResponse: 42,
}

#: The API keys the coordinator serves.
GROUP_API_KEYS: Final = frozenset(_REQUEST_TYPES)


def _intersect(api_key: int) -> tuple[int, int]:
    known = kio_version_range(api_key)
    assert known is not None, f"kio has no API {api_key}"
    ours = _REQUEST_TYPES[api_key]
    lo, hi = max(known[0], ours.MIN_VERSION), min(known[1], ours.MAX_VERSION)
    assert lo <= hi, f"no version of API {api_key} both kio and the coordinator have"
    return lo, hi


#: api_key -> (min, max): the versions both kio and the coordinator implement.
GROUP_API_VERSIONS: Final[Mapping[int, tuple[int, int]]] = {
    key: _intersect(key) for key in sorted(_REQUEST_TYPES)
}


def _check(api_key: int, version: int) -> None:
    lo, hi = GROUP_API_VERSIONS.get(api_key, (0, -1))
    if not lo <= version <= hi:
        raise UnsupportedVersionError(f"group API {api_key} v{version} is not mapped")


# --------------------------------------------------------------------------------------
# kio schema introspection
# --------------------------------------------------------------------------------------


@cache
def _payload_class(api_key: int, version: int, kind: PayloadEntityType) -> type[Any]:
    module = load_payload_module(api_key, version, kind)
    suffix = "Request" if kind is EntityType.request else "Response"
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and getattr(value, "__type__", None) is kind
            and value.__name__.endswith(suffix)
        ):
            return value
    raise LookupError(f"kio module {module.__name__} has no {suffix} class")


_HINTS: dict[type[Any], dict[str, Any]] = {}


def _hints(cls: type[Any]) -> dict[str, Any]:
    # resolving a kio class's annotations imports and evaluates them: once per class
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _optional_inner(hint: Any) -> tuple[Any, bool]:
    if typing.get_origin(hint) in (typing.Union, UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0], len(args) < len(typing.get_args(hint))
    return hint, False


def _item(cls: type[Any], name: str) -> type[Any]:
    """The entity class of the tuple field ``name`` of ``cls``."""
    hint, _ = _optional_inner(_hints(cls)[name])
    item = typing.get_args(hint)[0]
    assert isinstance(item, type)
    return item


def _resolve_entity_hints(cls: type[Any]) -> None:
    # every nested entity class the converters ask _item / _hints about
    for hint in _hints(cls).values():
        inner, _ = _optional_inner(hint)
        for candidate in (inner, *typing.get_args(inner)):
            if isinstance(candidate, type) and hasattr(candidate, "__type__"):
                _resolve_entity_hints(candidate)


def prepare(api_key: int, version: int) -> None:
    """Do now, for group API ``api_key`` at ``version``, the one-time work its first request
    and response would do: load kio's schema classes, build their readers and writers and
    resolve the type hints the converters read.

    A client calls it for the versions it will speak as soon as it knows them. Done lazily,
    this costs 2-15 ms per API on the first message (SyncGroup is the slowest), long enough
    for a new member's first SyncGroup to reach the coordinator after the leader has
    already rejoined in a cooperative rebalance, which costs the group another round.
    """
    _check(api_key, version)
    wire.prepare_codec(api_key, version)
    for kind in (EntityType.request, EntityType.response):
        _resolve_entity_hints(_payload_class(api_key, version, kind))


Converter = Callable[[Any], Any]


def _converter(hint: Any) -> Converter:
    """How a value of ours becomes the kio field typed ``hint``."""
    inner, optional = _optional_inner(hint)
    # a field that is nullable only in later versions: Kafka sends "" when absent
    none_as = None if optional or inner is not str else ""
    if inner is ErrorCode:
        return lambda value: none_as if value is None else ErrorCode(value)
    if isinstance(inner, type) and issubclass(inner, datetime.timedelta):
        return _timedelta_converter(inner, none_as)
    return lambda value: none_as if value is None else value


def _timedelta_converter(kind: Any, none_as: Any) -> Converter:
    parse = kind.parse  # kio's range check
    zero = parse(datetime.timedelta(0))  # almost every value is a throttle time of 0

    def convert(value: Any) -> Any:
        if value is None:
            return none_as
        if value == 0:
            return zero
        # microseconds=int is exact; milliseconds= goes through a float
        return parse(datetime.timedelta(microseconds=value * 1000))

    return convert


_PLANS: dict[type[Any], tuple[tuple[str, Converter], ...]] = {}


def _plan(cls: type[Any]) -> tuple[tuple[str, Converter], ...]:
    # per kio class, once: its fields and how to convert into each
    plan = _PLANS.get(cls)
    if plan is None:
        hints = _hints(cls)
        plan = _PLANS[cls] = tuple(
            (f.name, _converter(hints[f.name])) for f in dataclasses.fields(cls)
        )
    return plan


def _build(cls: type[Any], **values: Any) -> Any:
    """An instance of the kio class ``cls`` from the ``values`` its version has."""
    return cls(**{name: convert(values[name]) for name, convert in _plan(cls) if name in values})


def _ms(value: datetime.timedelta) -> int:
    return value // datetime.timedelta(milliseconds=1)


def _error(code: Any) -> ErrorClass:
    code = int(code.value if isinstance(code, ErrorCode) else code)
    return None if code == 0 else KafkaError.for_code(code)


_ZERO: Final = 0  # throttle_time: this server never throttles


# --------------------------------------------------------------------------------------
# server side: kio request -> our request
# --------------------------------------------------------------------------------------


def to_coordinator_request(
    api_key: int,
    version: int,
    request: Any,
    *,
    correlation: object = None,
    client_id: str = "",
    client_host: str = "",
) -> AnyRequest:
    """The coordinator request for a decoded kio group request.

    Our request validates itself: a value a broker rejects raises ``ValueError`` /
    ``TypeError`` / :class:`~groupcoord.errors.UnsupportedVersionError`.
    """
    _check(api_key, version)
    return _REQUEST_READERS[api_key](request, version, correlation, client_id, client_host)


def _join_request(r: Any, v: int, corr: object, client_id: str, host: str) -> AnyRequest:
    return JoinGroupRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        session_timeout_ms=_ms(r.session_timeout),
        rebalance_timeout_ms=_ms(r.rebalance_timeout) if v >= 1 else -1,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
        protocol_type=r.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in r.protocols),
        reason=getattr(r, "reason", None),
        client_id=client_id,
        client_host=host,
    )


def _sync_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return SyncGroupRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
        protocol_type=getattr(r, "protocol_type", None),
        protocol_name=getattr(r, "protocol_name", None),
        assignments=tuple((a.member_id, a.assignment) for a in r.assignments),
    )


def _heartbeat_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return HeartbeatRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
    )


def _leave_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    if v < 3:
        return LeaveGroupRequest(
            version=v, correlation=corr, group_id=r.group_id, member_id=r.member_id
        )
    return LeaveGroupRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        members=tuple(
            MemberIdentity(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=getattr(m, "reason", None),
            )
            for m in r.members
        ),
    )


def _commit_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    retention = getattr(r, "retention_time", None)
    return OffsetCommitRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        generation_id_or_member_epoch=r.generation_id_or_member_epoch,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
        retention_time_ms=-1 if retention is None else _ms(retention),
        topics=tuple(
            OffsetCommitRequestTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitRequestPartition(
                        partition_index=p.partition_index,
                        committed_offset=p.committed_offset,
                        committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
                        commit_timestamp=getattr(p, "commit_timestamp", -1),
                        committed_metadata=p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def _fetch_topics(topics: Any) -> tuple[OffsetFetchRequestTopic, ...] | None:
    if topics is None:
        return None
    return tuple(
        OffsetFetchRequestTopic(name=t.name, partition_indexes=tuple(t.partition_indexes))
        for t in topics
    )


def _fetch_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    stable = getattr(r, "require_stable", False)
    if v < 8:
        return OffsetFetchRequest(
            version=v,
            correlation=corr,
            group_id=r.group_id,
            topics=_fetch_topics(r.topics),
            require_stable=stable,
        )
    return OffsetFetchRequest(
        version=v,
        correlation=corr,
        groups=tuple(
            OffsetFetchRequestGroup(
                group_id=g.group_id,
                topics=_fetch_topics(g.topics),
                member_id=getattr(g, "member_id", None),
                member_epoch=getattr(g, "member_epoch", -1),
            )
            for g in r.groups
        ),
        require_stable=stable,
    )


def _describe_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return DescribeGroupsRequest(
        version=v,
        correlation=corr,
        groups=tuple(r.groups),
        include_authorized_operations=getattr(r, "include_authorized_operations", False),
    )


def _list_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return ListGroupsRequest(
        version=v,
        correlation=corr,
        states_filter=tuple(getattr(r, "states_filter", ())),
        types_filter=tuple(getattr(r, "types_filter", ())),
    )


def _delete_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return DeleteGroupsRequest(version=v, correlation=corr, groups_names=tuple(r.groups_names))


_REQUEST_READERS: Final[Mapping[int, Callable[[Any, int, object, str, str], AnyRequest]]] = {
    11: _join_request,
    14: _sync_request,
    12: _heartbeat_request,
    13: _leave_request,
    8: _commit_request,
    9: _fetch_request,
    15: _describe_request,
    16: _list_request,
    42: _delete_request,
}


# --------------------------------------------------------------------------------------
# server side: our response -> kio response
# --------------------------------------------------------------------------------------


def response_api_key(response: AnyResponse) -> int:
    """The API key of one of our responses."""
    return _RESPONSE_KEYS[type(response)]


def to_kio_response(response: AnyResponse) -> Any:
    """The kio response (of ``response.version``) for one of the coordinator's responses."""
    api_key = response_api_key(response)
    _check(api_key, response.version)
    cls = _payload_class(api_key, response.version, EntityType.response)
    return _RESPONSE_WRITERS[api_key](cls, response)


def _join_response(cls: type[Any], r: Any) -> Any:
    member_cls = _item(cls, "members")
    return _build(
        cls,
        throttle_time=_ZERO,
        error_code=r.error_code,
        generation_id=r.generation_id,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        leader=r.leader,
        skip_assignment=r.skip_assignment,
        member_id=r.member_id,
        members=tuple(
            _build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in r.members
        ),
    )


def _sync_response(cls: type[Any], r: Any) -> Any:
    return _build(
        cls,
        throttle_time=_ZERO,
        error_code=r.error_code,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )


#: (kio class, error code) -> response: a heartbeat answer is one of a few immutable values
_HEARTBEAT_RESPONSES: dict[tuple[type[Any], int], Any] = {}


def _heartbeat_response(cls: type[Any], r: Any) -> Any:
    key = (cls, r.error_code)
    response = _HEARTBEAT_RESPONSES.get(key)
    if response is None:
        response = _HEARTBEAT_RESPONSES[key] = _build(
            cls, throttle_time=_ZERO, error_code=r.error_code
        )
    return response


def _leave_response(cls: type[Any], r: Any) -> Any:
    values: dict[str, Any] = {"throttle_time": _ZERO, "error_code": r.error_code}
    if "members" in _hints(cls):
        member_cls = _item(cls, "members")
        values["members"] = tuple(
            _build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=m.error_code,
            )
            for m in r.members
        )
    return _build(cls, **values)


def _commit_response(cls: type[Any], r: Any) -> Any:
    topic_cls = _item(cls, "topics")
    part_cls = _item(topic_cls, "partitions")
    return _build(
        cls,
        throttle_time=_ZERO,
        topics=tuple(
            _build(
                topic_cls,
                name=t.name,
                partitions=tuple(
                    _build(part_cls, partition_index=p.partition_index, error_code=p.error_code)
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def _fetch_response_topics(topic_cls: type[Any], topics: Any) -> tuple[Any, ...]:
    part_cls = _item(topic_cls, "partitions")
    return tuple(
        _build(
            topic_cls,
            name=t.name,
            partitions=tuple(
                _build(
                    part_cls,
                    partition_index=p.partition_index,
                    committed_offset=p.committed_offset,
                    committed_leader_epoch=p.committed_leader_epoch,
                    metadata=p.metadata,
                    error_code=p.error_code,
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )


def _fetch_response(cls: type[Any], r: Any) -> Any:
    if "groups" not in _hints(cls):
        return _build(
            cls,
            throttle_time=_ZERO,
            topics=_fetch_response_topics(_item(cls, "topics"), r.topics),
            error_code=r.error_code,
        )
    group_cls = _item(cls, "groups")
    topic_cls = _item(group_cls, "topics")
    return _build(
        cls,
        throttle_time=_ZERO,
        groups=tuple(
            _build(
                group_cls,
                group_id=g.group_id,
                topics=_fetch_response_topics(topic_cls, g.topics),
                error_code=g.error_code,
            )
            for g in r.groups
        ),
    )


def _describe_response(cls: type[Any], r: Any) -> Any:
    group_cls = _item(cls, "groups")
    member_cls = _item(group_cls, "members")
    return _build(
        cls,
        throttle_time=_ZERO,
        groups=tuple(
            _build(
                group_cls,
                error_code=g.error_code,
                group_id=g.group_id,
                group_state=g.group_state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                authorized_operations=g.authorized_operations,
                members=tuple(
                    _build(
                        member_cls,
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                    )
                    for m in g.members
                ),
            )
            for g in r.groups
        ),
    )


def _list_response(cls: type[Any], r: Any) -> Any:
    group_cls = _item(cls, "groups")
    return _build(
        cls,
        throttle_time=_ZERO,
        error_code=r.error_code,
        groups=tuple(
            _build(
                group_cls,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in r.groups
        ),
    )


def _delete_response(cls: type[Any], r: Any) -> Any:
    result_cls = _item(cls, "results")
    return _build(
        cls,
        throttle_time=_ZERO,
        results=tuple(
            _build(result_cls, group_id=g.group_id, error_code=g.error_code) for g in r.results
        ),
    )


_RESPONSE_WRITERS: Final[Mapping[int, Callable[[type[Any], Any], Any]]] = {
    11: _join_response,
    14: _sync_response,
    12: _heartbeat_response,
    13: _leave_response,
    8: _commit_response,
    9: _fetch_response,
    15: _describe_response,
    16: _list_response,
    42: _delete_response,
}


# --------------------------------------------------------------------------------------
# client side: our request -> kio request
# --------------------------------------------------------------------------------------


def to_kio_request(request: AnyRequest) -> Any:
    """The kio request (of ``request.version``) for one of our requests."""
    api_key = request.API_KEY
    _check(api_key, request.version)
    cls = _payload_class(api_key, request.version, EntityType.request)
    return _REQUEST_WRITERS[api_key](cls, request)


def _join_kio(cls: type[Any], r: Any) -> Any:
    proto_cls = _item(cls, "protocols")
    return _build(
        cls,
        group_id=r.group_id,
        session_timeout=r.session_timeout_ms,
        rebalance_timeout=r.rebalance_timeout_ms,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        protocol_type=r.protocol_type,
        protocols=tuple(_build(proto_cls, name=n, metadata=m) for n, m in r.protocols),
        reason=r.reason,
    )


def _sync_kio(cls: type[Any], r: Any) -> Any:
    assign_cls = _item(cls, "assignments")
    return _build(
        cls,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignments=tuple(_build(assign_cls, member_id=m, assignment=a) for m, a in r.assignments),
    )


def _heartbeat_kio(cls: type[Any], r: Any) -> Any:
    return _build(
        cls,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
    )


def _leave_kio(cls: type[Any], r: Any) -> Any:
    if "members" not in _hints(cls):
        return _build(cls, group_id=r.group_id, member_id=r.member_id)
    member_cls = _item(cls, "members")
    return _build(
        cls,
        group_id=r.group_id,
        members=tuple(
            _build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=m.reason,
            )
            for m in r.members
        ),
    )


def _commit_kio(cls: type[Any], r: Any) -> Any:
    topic_cls = _item(cls, "topics")
    part_cls = _item(topic_cls, "partitions")
    return _build(
        cls,
        group_id=r.group_id,
        generation_id_or_member_epoch=r.generation_id_or_member_epoch,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        retention_time=r.retention_time_ms,
        topics=tuple(
            _build(
                topic_cls,
                name=t.name,
                partitions=tuple(
                    _build(
                        part_cls,
                        partition_index=p.partition_index,
                        committed_offset=p.committed_offset,
                        committed_leader_epoch=p.committed_leader_epoch,
                        commit_timestamp=p.commit_timestamp,
                        committed_metadata=p.committed_metadata,
                    )
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def _fetch_topics_kio(topic_cls: type[Any], topics: Any) -> tuple[Any, ...] | None:
    if topics is None:
        return None
    return tuple(
        _build(topic_cls, name=t.name, partition_indexes=t.partition_indexes) for t in topics
    )


def _fetch_kio(cls: type[Any], r: Any) -> Any:
    if "groups" not in _hints(cls):
        return _build(
            cls,
            group_id=r.group_id,
            topics=_fetch_topics_kio(_item(cls, "topics"), r.topics),
            require_stable=r.require_stable,
        )
    group_cls = _item(cls, "groups")
    topic_cls = _item(group_cls, "topics")
    return _build(
        cls,
        groups=tuple(
            _build(
                group_cls,
                group_id=g.group_id,
                member_id=g.member_id,
                member_epoch=g.member_epoch,
                topics=_fetch_topics_kio(topic_cls, g.topics),
            )
            for g in r.groups
        ),
        require_stable=r.require_stable,
    )


def _describe_kio(cls: type[Any], r: Any) -> Any:
    return _build(
        cls, groups=r.groups, include_authorized_operations=r.include_authorized_operations
    )


def _list_kio(cls: type[Any], r: Any) -> Any:
    return _build(cls, states_filter=r.states_filter, types_filter=r.types_filter)


def _delete_kio(cls: type[Any], r: Any) -> Any:
    return _build(cls, groups_names=r.groups_names)


_REQUEST_WRITERS: Final[Mapping[int, Callable[[type[Any], Any], Any]]] = {
    11: _join_kio,
    14: _sync_kio,
    12: _heartbeat_kio,
    13: _leave_kio,
    8: _commit_kio,
    9: _fetch_kio,
    15: _describe_kio,
    16: _list_kio,
    42: _delete_kio,
}


# --------------------------------------------------------------------------------------
# client side: kio response -> our response
# --------------------------------------------------------------------------------------


def from_kio_response(
    api_key: int, version: int, response: Any, *, correlation: object = None
) -> AnyResponse:
    """Our response for a decoded kio group response of (api_key, version)."""
    _check(api_key, version)
    return _RESPONSE_READERS[api_key](response, version, correlation)


def _join_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return JoinGroupResponse(
        version=v,
        correlation=corr,
        error=_error(r.error_code),
        generation_id=r.generation_id,
        protocol_type=getattr(r, "protocol_type", None),
        protocol_name=r.protocol_name if (v >= 7 or r.protocol_name) else None,
        leader=r.leader,
        skip_assignment=getattr(r, "skip_assignment", False),
        member_id=r.member_id,
        members=tuple(
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=getattr(m, "group_instance_id", None),
                metadata=m.metadata,
            )
            for m in r.members
        ),
    )


def _sync_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return SyncGroupResponse(
        version=v,
        correlation=corr,
        error=_error(r.error_code),
        protocol_type=getattr(r, "protocol_type", None),
        protocol_name=getattr(r, "protocol_name", None),
        assignment=r.assignment,
    )


def _heartbeat_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return HeartbeatResponse(version=v, correlation=corr, error=_error(r.error_code))


def _leave_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return LeaveGroupResponse(
        version=v,
        correlation=corr,
        error=_error(r.error_code),
        members=tuple(
            MemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error=_error(m.error_code),
            )
            for m in getattr(r, "members", ())
        ),
    )


def _commit_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return OffsetCommitResponse(
        version=v,
        correlation=corr,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error=_error(p.error_code)
                    )
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def _fetch_topics_ours(topics: Any) -> tuple[OffsetFetchResponseTopic, ...]:
    return tuple(
        OffsetFetchResponseTopic(
            name=t.name,
            partitions=tuple(
                OffsetFetchResponsePartition(
                    partition_index=p.partition_index,
                    committed_offset=p.committed_offset,
                    committed_leader_epoch=getattr(p, "committed_leader_epoch", -1),
                    metadata=p.metadata,
                    error=_error(p.error_code),
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )


def _fetch_ours(r: Any, v: int, corr: object) -> AnyResponse:
    if v < 8:
        return OffsetFetchResponse(
            version=v,
            correlation=corr,
            error=_error(getattr(r, "error_code", 0)),
            topics=_fetch_topics_ours(r.topics),
        )
    return OffsetFetchResponse(
        version=v,
        correlation=corr,
        groups=tuple(
            OffsetFetchResponseGroup(
                group_id=g.group_id,
                topics=_fetch_topics_ours(g.topics),
                error=_error(g.error_code),
            )
            for g in r.groups
        ),
    )


def _decoded_subscription(data: bytes) -> Subscription | None:
    if not data:
        return None
    try:
        return decode_subscription(data)
    except InvalidPayload:
        return None


def _decoded_assignment(data: bytes) -> Assignment | None:
    if not data:
        return None
    try:
        return decode_assignment(data)
    except InvalidPayload:
        return None


def _describe_ours(r: Any, v: int, corr: object) -> AnyResponse:
    groups = []
    for g in r.groups:
        consumer = g.protocol_type == "consumer"
        groups.append(
            DescribedGroup(
                error=_error(g.error_code),
                group_id=g.group_id,
                group_state=g.group_state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                authorized_operations=getattr(g, "authorized_operations", -(2**31)),
                members=tuple(
                    DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=getattr(m, "group_instance_id", None),
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                        subscription=_decoded_subscription(m.member_metadata) if consumer else None,
                        assignment=_decoded_assignment(m.member_assignment) if consumer else None,
                    )
                    for m in g.members
                ),
            )
        )
    return DescribeGroupsResponse(version=v, correlation=corr, groups=tuple(groups))


def _list_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return ListGroupsResponse(
        version=v,
        correlation=corr,
        error=_error(r.error_code),
        groups=tuple(
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=getattr(g, "group_state", ""),
                group_type=getattr(g, "group_type", "classic"),
            )
            for g in r.groups
        ),
    )


def _delete_ours(r: Any, v: int, corr: object) -> AnyResponse:
    return DeleteGroupsResponse(
        version=v,
        correlation=corr,
        results=tuple(
            DeletableGroupResult(group_id=g.group_id, error=_error(g.error_code)) for g in r.results
        ),
    )


_RESPONSE_READERS: Final[Mapping[int, Callable[[Any, int, object], AnyResponse]]] = {
    11: _join_ours,
    14: _sync_ours,
    12: _heartbeat_ours,
    13: _leave_ours,
    8: _commit_ours,
    9: _fetch_ours,
    15: _describe_ours,
    16: _list_ours,
    42: _delete_ours,
}
