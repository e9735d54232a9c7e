"""SyncGroup (API 14): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
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


def write_response(cls: type[Any], r: Any) -> Any:
    return build(
        cls,
        throttle_time=ZERO,
        error_code=r.error_code,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignment=r.assignment,
    )


def write_request(cls: type[Any], r: Any) -> Any:
    assign_cls = item(cls, "assignments")
    return build(
        cls,
        group_id=r.group_id,
        generation_id=r.generation_id,
        member_id=r.member_id,
        group_instance_id=r.group_instance_id,
        protocol_type=r.protocol_type,
        protocol_name=r.protocol_name,
        assignments=tuple(build(assign_cls, member_id=m, assignment=a) for m, a in r.assignments),
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return SyncGroupResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
        protocol_type=getattr(r, "protocol_type", None),
        protocol_name=getattr(r, "protocol_name", None),
        assignment=r.assignment,
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return SyncGroupResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=SyncGroupRequest,
    response=SyncGroupResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
