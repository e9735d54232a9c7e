"""JoinGroup (API 11): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item, ms

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, client_id: str, host: str) -> AnyRequest:
    return JoinGroupRequest(
        version=v,
        correlation=corr,
        group_id=r.group_id,
        session_timeout_ms=ms(r.session_timeout),
        rebalance_timeout_ms=ms(r.rebalance_timeout) if v >= 1 else -1,
        member_id=r.member_id,
        group_instance_id=getattr(r, "group_instance_id", None),
        protocol_type=r.protocol_type,
        protocols=tuple((p.name, p.metadata) for p in r.protocols),
        reason=getattr(r, "reason", None),
        client_id=client_id,
        client_host=host,
    )


def write_response(cls: type[Any], r: Any) -> Any:
    member_cls = item(cls, "members")
    return build(
        cls,
        throttle_time=ZERO,
        error_code=r.error_code,
        generation_id=r.generation_id,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        leader=r.leader,
        skip_assignment=r.skip_assignment,
        member_id=r.member_id,
        members=tuple(
            build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in r.members
        ),
    )


def write_request(cls: type[Any], r: Any) -> Any:
    proto_cls = item(cls, "protocols")
    return build(
        cls,
        group_id=r.group_id,
        session_timeout=r.session_timeout_ms,
        rebalance_timeout=r.rebalance_timeout_ms,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        protocol_type=r.protocol_type,
        protocols=tuple(build(proto_cls, name=n, metadata=m) for n, m in r.protocols),
        reason=r.reason,
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return JoinGroupResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
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


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return JoinGroupResponse(
        version=version, correlation=correlation, error=error, member_id=request.member_id
    )


API: Final = GroupApi(
    request=JoinGroupRequest,
    response=JoinGroupResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
