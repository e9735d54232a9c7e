"""OffsetCommit (API 8): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item, ms

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    retention = getattr(r, "retention_time", None)
    return OffsetCommitRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        generation_id_or_member_epoch=r.generation_id_or_member_epoch,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
        retention_time_ms=-1 if retention is None else ms(retention),
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


def write_response(cls: type[Any], r: Any) -> Any:
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    return build(
        cls,
        throttle_time=ZERO,
        topics=tuple(
            build(
                topic_cls,
                name=t.name,
                partitions=tuple(
                    build(part_cls, partition_index=p.partition_index, error_code=p.error_code)
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def write_request(cls: type[Any], r: Any) -> Any:
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    return build(
        cls,
        group_id=r.group_id,
        generation_id_or_member_epoch=r.generation_id_or_member_epoch,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        retention_time=r.retention_time_ms,
        topics=tuple(
            build(
                topic_cls,
                name=t.name,
                partitions=tuple(
                    build(
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


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return OffsetCommitResponse(
        version=v,
        correlation=corr,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error=error_class(p.error_code)
                    )
                    for p in t.partitions
                ),
            )
            for t in r.topics
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return OffsetCommitResponse(
        version=version,
        correlation=correlation,
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=p.partition_index, error=error)
                    for p in t.partitions
                ),
            )
            for t in request.topics
        ),
    )


API: Final = GroupApi(
    request=OffsetCommitRequest,
    response=OffsetCommitResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
