"""OffsetDelete (API 47): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    OffsetDeleteRequest,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return OffsetDeleteRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        topics=tuple(
            OffsetDeleteRequestTopic(
                name=t.name, partitions=tuple(p.partition_index for p in t.partitions)
            )
            for t in r.topics
        ),
    )


def write_response(cls: type[Any], r: Any) -> Any:
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    return build(
        cls,
        error_code=r.error_code,
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
        topics=tuple(
            build(
                topic_cls,
                name=t.name,
                partitions=tuple(build(part_cls, partition_index=p) for p in t.partitions),
            )
            for t in r.topics
        ),
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return OffsetDeleteResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
        topics=tuple(
            OffsetDeleteResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetDeleteResponsePartition(
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
    # Kafka's OffsetDeleteRequest.getErrorResponse: the group-level error, no topics
    return OffsetDeleteResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=OffsetDeleteRequest,
    response=OffsetDeleteResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
