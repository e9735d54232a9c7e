"""ConsumerGroupDescribe (API 69, KIP-848): the module every group API has (see
:mod:`groupcoord.protocol.apis`). v1 adds each member's ``member_type``."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedTopicPartitions,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item, struct

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> ConsumerGroupDescribeRequest:
    return ConsumerGroupDescribeRequest(
        version=v,
        correlation=corr,
        group_ids=tuple(r.group_ids),
        include_authorized_operations=r.include_authorized_operations,
    )


def _write_assignment(cls: type[Any], topics: tuple[DescribedTopicPartitions, ...]) -> Any:
    topic_cls = item(cls, "topic_partitions")
    return build(
        cls,
        topic_partitions=tuple(
            build(topic_cls, topic_id=t.topic_id, topic_name=t.topic_name, partitions=t.partitions)
            for t in topics
        ),
    )


def write_response(cls: type[Any], r: ConsumerGroupDescribeResponse) -> Any:
    group_cls = item(cls, "groups")
    member_cls = item(group_cls, "members")
    assignment_cls = struct(member_cls, "assignment")
    return build(
        cls,
        throttle_time=ZERO,
        groups=tuple(
            build(
                group_cls,
                error_code=g.error_code,
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(
                    build(
                        member_cls,
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=m.subscribed_topic_names,
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=_write_assignment(assignment_cls, m.assignment),
                        target_assignment=_write_assignment(assignment_cls, m.target_assignment),
                        member_type=m.member_type,
                    )
                    for m in g.members
                ),
                authorized_operations=g.authorized_operations,
            )
            for g in r.groups
        ),
    )


def write_request(cls: type[Any], r: ConsumerGroupDescribeRequest) -> Any:
    return build(
        cls, group_ids=r.group_ids, include_authorized_operations=r.include_authorized_operations
    )


def _read_assignment(a: Any) -> tuple[DescribedTopicPartitions, ...]:
    return tuple(
        DescribedTopicPartitions(
            topic_id=t.topic_id, topic_name=t.topic_name, partitions=tuple(t.partitions)
        )
        for t in a.topic_partitions
    )


def read_response(r: Any, v: int, corr: object) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        version=v,
        correlation=corr,
        groups=tuple(
            DescribedConsumerGroup(
                error=error_class(g.error_code),
                error_message=g.error_message,
                group_id=g.group_id,
                group_state=g.group_state,
                group_epoch=g.group_epoch,
                assignment_epoch=g.assignment_epoch,
                assignor_name=g.assignor_name,
                members=tuple(
                    DescribedConsumerMember(
                        member_id=m.member_id,
                        instance_id=m.instance_id,
                        rack_id=m.rack_id,
                        member_epoch=m.member_epoch,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        subscribed_topic_names=tuple(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=_read_assignment(m.assignment),
                        target_assignment=_read_assignment(m.target_assignment),
                        member_type=getattr(m, "member_type", -1),
                    )
                    for m in g.members
                ),
                authorized_operations=g.authorized_operations,
            )
            for g in r.groups
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(
        version=version,
        correlation=correlation,
        groups=tuple(DescribedConsumerGroup(group_id=g, error=error) for g in request.group_ids),
    )


API: Final = GroupApi(
    request=ConsumerGroupDescribeRequest,
    response=ConsumerGroupDescribeResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
