"""OffsetFetch (API 9): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, hints, item

__all__ = ["API"]


def _fetch_topics(topics: Any) -> tuple[OffsetFetchRequestTopic, ...] | None:
    if topics is None:
        return None
    return tuple(
        OffsetFetchRequestTopic(name=t.name, partition_indexes=tuple(t.partition_indexes))
        for t in topics
    )


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
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


def _fetch_response_topics(topic_cls: type[Any], topics: Any) -> tuple[Any, ...]:
    part_cls = item(topic_cls, "partitions")
    return tuple(
        build(
            topic_cls,
            name=t.name,
            partitions=tuple(
                build(
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


def write_response(cls: type[Any], r: Any) -> Any:
    if "groups" not in hints(cls):
        return build(
            cls,
            throttle_time=ZERO,
            topics=_fetch_response_topics(item(cls, "topics"), r.topics),
            error_code=r.error_code,
        )
    group_cls = item(cls, "groups")
    topic_cls = item(group_cls, "topics")
    return build(
        cls,
        throttle_time=ZERO,
        groups=tuple(
            build(
                group_cls,
                group_id=g.group_id,
                topics=_fetch_response_topics(topic_cls, g.topics),
                error_code=g.error_code,
            )
            for g in r.groups
        ),
    )


def _fetch_topics_kio(topic_cls: type[Any], topics: Any) -> tuple[Any, ...] | None:
    if topics is None:
        return None
    return tuple(
        build(topic_cls, name=t.name, partition_indexes=t.partition_indexes) for t in topics
    )


def write_request(cls: type[Any], r: Any) -> Any:
    if "groups" not in hints(cls):
        return build(
            cls,
            group_id=r.group_id,
            topics=_fetch_topics_kio(item(cls, "topics"), r.topics),
            require_stable=r.require_stable,
        )
    group_cls = item(cls, "groups")
    topic_cls = item(group_cls, "topics")
    return build(
        cls,
        groups=tuple(
            build(
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
                    error=error_class(p.error_code),
                )
                for p in t.partitions
            ),
        )
        for t in topics
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    if v < 8:
        return OffsetFetchResponse(
            version=v,
            correlation=corr,
            error=error_class(getattr(r, "error_code", 0)),
            topics=_fetch_topics_ours(r.topics),
        )
    return OffsetFetchResponse(
        version=v,
        correlation=corr,
        groups=tuple(
            OffsetFetchResponseGroup(
                group_id=g.group_id,
                topics=_fetch_topics_ours(g.topics),
                error=error_class(g.error_code),
            )
            for g in r.groups
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    if version >= 8:  # batched: the error goes on every group asked for
        return OffsetFetchResponse(
            version=version,
            correlation=correlation,
            groups=tuple(
                OffsetFetchResponseGroup(group_id=g.group_id, error=error) for g in request.groups
            ),
        )
    return OffsetFetchResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=OffsetFetchRequest,
    response=OffsetFetchResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
