"""LeaveGroup (API 13): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    MemberResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, hints, item

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
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


def write_response(cls: type[Any], r: Any) -> Any:
    values: dict[str, Any] = {"throttle_time": ZERO, "error_code": r.error_code}
    if "members" in hints(cls):
        member_cls = item(cls, "members")
        values["members"] = tuple(
            build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=m.error_code,
            )
            for m in r.members
        )
    return build(cls, **values)


def write_request(cls: type[Any], r: Any) -> Any:
    if "members" not in hints(cls):
        return build(cls, group_id=r.group_id, member_id=r.member_id)
    member_cls = item(cls, "members")
    return build(
        cls,
        group_id=r.group_id,
        members=tuple(
            build(
                member_cls,
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=m.reason,
            )
            for m in r.members
        ),
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return LeaveGroupResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
        members=tuple(
            MemberResponse(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error=error_class(m.error_code),
            )
            for m in getattr(r, "members", ())
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return LeaveGroupResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=LeaveGroupRequest,
    response=LeaveGroupResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
