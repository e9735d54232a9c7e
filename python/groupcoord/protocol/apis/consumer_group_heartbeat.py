"""ConsumerGroupHeartbeat (API 68, KIP-848): the module every group API has (see
:mod:`groupcoord.protocol.apis`).

Both versions are flexible. v1 adds ``subscribed_topic_regex`` (and makes the member
generate its own id, KIP-1082: a rule of the coordinator, not of the encoding). kio spells
``RebalanceTimeoutMs`` and ``HeartbeatIntervalMs`` as durations; ours are milliseconds. A
response's ``assignment`` is a struct holding the topic list, ``None`` when absent.
"""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.consumer_messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item, ms, struct

__all__ = ["API"]


def _owned(topics: Any) -> tuple[TopicPartitions, ...] | None:
    if topics is None:
        return None
    return tuple(
        TopicPartitions(topic_id=t.topic_id, partitions=tuple(t.partitions)) for t in topics
    )


def read_request(
    r: Any, v: int, corr: object, client_id: str, host: str
) -> ConsumerGroupHeartbeatRequest:
    names = r.subscribed_topic_names
    return ConsumerGroupHeartbeatRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        instance_id=r.instance_id,
        rack_id=r.rack_id,
        rebalance_timeout_ms=ms(r.rebalance_timeout),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=getattr(r, "subscribed_topic_regex", None),
        server_assignor=r.server_assignor,
        topic_partitions=_owned(r.topic_partitions),
        client_id=client_id,
        client_host=host,
    )


def _topic_partitions(cls: type[Any], topics: tuple[TopicPartitions, ...]) -> tuple[Any, ...]:
    return tuple(build(cls, topic_id=t.topic_id, partitions=t.partitions) for t in topics)


def write_response(cls: type[Any], r: ConsumerGroupHeartbeatResponse) -> Any:
    assignment = None
    if r.assignment is not None:
        assignment_cls = struct(cls, "assignment")
        assignment = build(
            assignment_cls,
            topic_partitions=_topic_partitions(
                item(assignment_cls, "topic_partitions"), r.assignment
            ),
        )
    return build(
        cls,
        throttle_time=ZERO,
        error_code=r.error_code,
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval=r.heartbeat_interval_ms,
        assignment=assignment,
    )


def write_request(cls: type[Any], r: ConsumerGroupHeartbeatRequest) -> Any:
    owned = None
    if r.topic_partitions is not None:
        owned = _topic_partitions(item(cls, "topic_partitions"), r.topic_partitions)
    return build(
        cls,
        group_id=r.group_id,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        instance_id=r.instance_id,
        rack_id=r.rack_id,
        rebalance_timeout=r.rebalance_timeout_ms,
        subscribed_topic_names=r.subscribed_topic_names,
        subscribed_topic_regex=r.subscribed_topic_regex,
        server_assignor=r.server_assignor,
        topic_partitions=owned,
    )


def read_response(r: Any, v: int, corr: object) -> ConsumerGroupHeartbeatResponse:
    assignment = r.assignment
    return ConsumerGroupHeartbeatResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
        error_message=r.error_message,
        member_id=r.member_id,
        member_epoch=r.member_epoch,
        heartbeat_interval_ms=ms(r.heartbeat_interval),
        assignment=None if assignment is None else _owned(assignment.topic_partitions),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=ConsumerGroupHeartbeatRequest,
    response=ConsumerGroupHeartbeatResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
