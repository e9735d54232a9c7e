"""Building the requests a member sends, at the highest version allowed.

Each builder writes only the fields its version has (the request dataclasses refuse the
others), so the machine can be capped to what a broker's ApiVersions answer allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import groupby

from groupcoord.coordinator.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    Request,
    SyncGroupRequest,
    with_committed_offsets,
)
from groupcoord.types import TopicPartition

__all__ = [
    "MEMBER_REQUEST_TYPES",
    "commit_request",
    "fetch_request",
    "heartbeat_request",
    "join_request",
    "leave_request",
    "sync_request",
    "version_for",
]

#: The request types a member sends.
MEMBER_REQUEST_TYPES: tuple[type[Request], ...] = (
    JoinGroupRequest,
    SyncGroupRequest,
    HeartbeatRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)

PROTOCOL_TYPE = "consumer"


def version_for(request_type: type[Request], caps: Mapping[int, int]) -> int:
    """The highest version of ``request_type`` we write, lowered to a cap if one is set."""
    return min(request_type.MAX_VERSION, caps.get(request_type.API_KEY, request_type.MAX_VERSION))


def join_request(
    *,
    version: int,
    correlation: object,
    group_id: str,
    member_id: str,
    group_instance_id: str | None,
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    protocols: tuple[tuple[str, bytes], ...],
    reason: str,
    client_id: str,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=version,
        correlation=correlation,
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms if version >= 1 else -1,
        member_id=member_id,
        group_instance_id=group_instance_id if version >= 5 else None,
        protocol_type=PROTOCOL_TYPE,
        protocols=protocols,
        reason=reason if version >= 8 else None,
        client_id=client_id,
    )


def sync_request(
    *,
    version: int,
    correlation: object,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    protocol_name: str | None,
    assignments: tuple[tuple[str, bytes], ...],
) -> SyncGroupRequest:
    return SyncGroupRequest(
        version=version,
        correlation=correlation,
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id if version >= 3 else None,
        protocol_type=PROTOCOL_TYPE if version >= 5 else None,
        protocol_name=protocol_name if version >= 5 else None,
        assignments=assignments,
    )


def heartbeat_request(
    *,
    version: int,
    correlation: object,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
) -> HeartbeatRequest:
    return HeartbeatRequest(
        version=version,
        correlation=correlation,
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=group_instance_id if version >= 3 else None,
    )


def leave_request(
    *, version: int, correlation: object, group_id: str, member_id: str, reason: str
) -> LeaveGroupRequest:
    if version < 3:
        return LeaveGroupRequest(
            version=version, correlation=correlation, group_id=group_id, member_id=member_id
        )
    identity = MemberIdentity(member_id=member_id, reason=reason if version >= 5 else None)
    return LeaveGroupRequest(
        version=version, correlation=correlation, group_id=group_id, members=(identity,)
    )


def _by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    ordered = sorted(partitions)
    if len(ordered) == 1:  # the usual commit of a consumer with one partition
        tp = ordered[0]
        return [(tp[0], [tp.partition])]
    return [(t, [tp.partition for tp in tps]) for t, tps in groupby(ordered, key=lambda tp: tp[0])]


def commit_request(
    *,
    version: int,
    correlation: object,
    group_id: str,
    generation_id: int,
    member_id: str,
    group_instance_id: str | None,
    offsets: Mapping[TopicPartition, int],
    like: OffsetCommitRequest | None = None,
) -> OffsetCommitRequest:
    """The OffsetCommit of ``offsets``; ``like``: a request built before by this function,
    copied (``with_committed_offsets``) when it has the same fields and partitions."""
    if (
        like is not None
        and like.version == version
        and like.generation_id_or_member_epoch == (generation_id if version >= 1 else -1)
        and like.member_id == (member_id if version >= 1 else "")
        and like.group_id == group_id
        and like.group_instance_id == (group_instance_id if version >= 7 else None)
    ):
        values: list[int] = []
        for topic in like.topics:
            name = topic.name
            for p in topic.partitions:
                value = offsets.get(TopicPartition(name, p.partition_index))
                if value is None:
                    break
                values.append(value)
            else:
                continue
            break
        else:
            if len(values) == len(offsets):
                return with_committed_offsets(like, correlation, values)
    topics = tuple(
        OffsetCommitRequestTopic(
            name=topic,
            partitions=tuple(
                OffsetCommitRequestPartition(
                    partition_index=p, committed_offset=offsets[TopicPartition(topic, p)]
                )
                for p in parts
            ),
        )
        for topic, parts in _by_topic(offsets)
    )
    return OffsetCommitRequest(
        version=version,
        correlation=correlation,
        group_id=group_id,
        generation_id_or_member_epoch=generation_id if version >= 1 else -1,
        member_id=member_id if version >= 1 else "",
        group_instance_id=group_instance_id if version >= 7 else None,
        topics=topics,
    )


def fetch_request(
    *, version: int, correlation: object, group_id: str, partitions: Iterable[TopicPartition]
) -> OffsetFetchRequest:
    topics = tuple(
        OffsetFetchRequestTopic(name=topic, partition_indexes=tuple(parts))
        for topic, parts in _by_topic(partitions)
    )
    if version >= 8:
        group = OffsetFetchRequestGroup(group_id=group_id, topics=topics)
        return OffsetFetchRequest(version=version, correlation=correlation, groups=(group,))
    return OffsetFetchRequest(
        version=version, correlation=correlation, group_id=group_id, topics=topics
    )
