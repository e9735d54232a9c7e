"""DescribeGroups (API 15): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item
from groupcoord.protocol.consumer import described_assignment, described_subscription

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return DescribeGroupsRequest(
        version=v,
        correlation=corr,
        groups=tuple(r.groups),
        include_authorized_operations=getattr(r, "include_authorized_operations", False),
    )


def write_response(cls: type[Any], r: Any) -> Any:
    group_cls = item(cls, "groups")
    member_cls = item(group_cls, "members")
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
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                authorized_operations=g.authorized_operations,
                members=tuple(
                    build(
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


def write_request(cls: type[Any], r: Any) -> Any:
    return build(
        cls, groups=r.groups, include_authorized_operations=r.include_authorized_operations
    )


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    groups = []
    for g in r.groups:
        consumer = g.protocol_type == "consumer"
        groups.append(
            DescribedGroup(
                error=error_class(g.error_code),
                group_id=g.group_id,
                group_state=g.group_state,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_data,
                authorized_operations=getattr(g, "authorized_operations", -(2**31)),
                error_message=getattr(g, "error_message", None),
                members=tuple(
                    DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=getattr(m, "group_instance_id", None),
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.member_metadata,
                        member_assignment=m.member_assignment,
                        subscription=described_subscription(m.member_metadata)
                        if consumer
                        else None,
                        assignment=described_assignment(m.member_assignment) if consumer else None,
                    )
                    for m in g.members
                ),
            )
        )
    return DescribeGroupsResponse(version=v, correlation=corr, groups=tuple(groups))


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return DescribeGroupsResponse(
        version=version,
        correlation=correlation,
        groups=tuple(
            DescribedGroup(
                group_id=g, error=error, group_state="", protocol_type="", protocol_data=""
            )
            for g in request.groups
        ),
    )


API: Final = GroupApi(
    request=DescribeGroupsRequest,
    response=DescribeGroupsResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
