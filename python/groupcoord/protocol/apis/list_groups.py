"""ListGroups (API 16): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return ListGroupsRequest(
        version=v,
        correlation=corr,
        states_filter=tuple(getattr(r, "states_filter", ())),
        types_filter=tuple(getattr(r, "types_filter", ())),
    )


def write_response(cls: type[Any], r: Any) -> Any:
    group_cls = item(cls, "groups")
    return build(
        cls,
        throttle_time=ZERO,
        error_code=r.error_code,
        groups=tuple(
            build(
                group_cls,
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=g.group_state,
                group_type=g.group_type,
            )
            for g in r.groups
        ),
    )


def write_request(cls: type[Any], r: Any) -> Any:
    return build(cls, states_filter=r.states_filter, types_filter=r.types_filter)


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return ListGroupsResponse(
        version=v,
        correlation=corr,
        error=error_class(r.error_code),
        groups=tuple(
            ListedGroup(
                group_id=g.group_id,
                protocol_type=g.protocol_type,
                group_state=getattr(g, "group_state", ""),
                group_type=getattr(g, "group_type", "classic"),
            )
            for g in r.groups
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return ListGroupsResponse(version=version, correlation=correlation, error=error)


API: Final = GroupApi(
    request=ListGroupsRequest,
    response=ListGroupsResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
