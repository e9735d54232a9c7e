"""DeleteGroups (API 42): the module every group API has (see :mod:`groupcoord.protocol.apis`)."""

from __future__ import annotations

from typing import Any, Final

from groupcoord.coordinator.messages import (
    AnyRequest,
    AnyResponse,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from groupcoord.errors import KafkaError
from groupcoord.protocol.apis.base import GroupApi
from groupcoord.protocol.apis.kio_mapping import ZERO, build, error_class, item

__all__ = ["API"]


def read_request(r: Any, v: int, corr: object, _c: str, _h: str) -> AnyRequest:
    return DeleteGroupsRequest(version=v, correlation=corr, groups_names=tuple(r.groups_names))


def write_response(cls: type[Any], r: Any) -> Any:
    result_cls = item(cls, "results")
    return build(
        cls,
        throttle_time=ZERO,
        results=tuple(
            build(result_cls, group_id=g.group_id, error_code=g.error_code) for g in r.results
        ),
    )


def write_request(cls: type[Any], r: Any) -> Any:
    return build(cls, groups_names=r.groups_names)


def read_response(r: Any, v: int, corr: object) -> AnyResponse:
    return DeleteGroupsResponse(
        version=v,
        correlation=corr,
        results=tuple(
            DeletableGroupResult(group_id=g.group_id, error=error_class(g.error_code))
            for g in r.results
        ),
    )


def error_response(
    version: int, request: Any, error: type[KafkaError], correlation: object = None
) -> AnyResponse:
    return DeleteGroupsResponse(
        version=version,
        correlation=correlation,
        results=tuple(DeletableGroupResult(group_id=g, error=error) for g in request.groups_names),
    )


API: Final = GroupApi(
    request=DeleteGroupsRequest,
    response=DeleteGroupsResponse,
    read_request=read_request,
    write_response=write_response,
    write_request=write_request,
    read_response=read_response,
    error_response=error_response,
)
